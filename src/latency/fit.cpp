#include "latency/fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "base/error.h"
#include "ir/stats.h"
#include "latency/model.h"
#include "latency/predict.h"
#include "onnx/importer.h"
#include "passes/passes.h"
#include "placement/placement.h"

namespace dlakit::latency {
namespace {

// min sum_r w_r (base_r + x_r . a - y_r)^2 over a >= 0 (3 unknowns): the best of every active set.
std::array<double, 3> nnls3(const std::vector<std::array<double, 3>>& x, const std::vector<double>& rhs,
                            const std::vector<double>& w) {
  std::array<double, 3> best{0, 0, 0};
  double best_err = std::numeric_limits<double>::infinity();
  for (int mask = 0; mask < 8; ++mask) {
    std::vector<int> free;
    for (int i = 0; i < 3; ++i)
      if (mask & (1 << i)) free.push_back(i);
    const size_t k = free.size();
    std::array<double, 3> a{0, 0, 0};
    if (k > 0) {
      double m[3][4] = {};
      for (size_t r = 0; r < x.size(); ++r)
        for (size_t i = 0; i < k; ++i) {
          for (size_t j = 0; j < k; ++j) m[i][j] += w[r] * x[r][size_t(free[i])] * x[r][size_t(free[j])];
          m[i][k] += w[r] * x[r][size_t(free[i])] * rhs[r];
        }
      bool singular = false;
      for (size_t c = 0; c < k && !singular; ++c) {  // Gauss-Jordan with partial pivoting
        size_t piv = c;
        for (size_t r2 = c + 1; r2 < k; ++r2)
          if (std::fabs(m[r2][c]) > std::fabs(m[piv][c])) piv = r2;
        if (std::fabs(m[piv][c]) < 1e-300) singular = true;
        for (size_t j = 0; j <= k && !singular; ++j) std::swap(m[c][j], m[piv][j]);
        for (size_t r2 = 0; r2 < k && !singular; ++r2) {
          if (r2 == c) continue;
          const double f = m[r2][c] / m[c][c];
          for (size_t j = c; j <= k; ++j) m[r2][j] -= f * m[c][j];
        }
      }
      if (singular) continue;
      bool feasible = true;
      for (size_t i = 0; i < k; ++i) {
        a[size_t(free[i])] = m[i][k] / m[i][i];
        feasible = feasible && a[size_t(free[i])] >= 0;
      }
      if (!feasible) continue;
    }
    double err = 0;
    for (size_t r = 0; r < x.size(); ++r) {
      const double d = x[r][0] * a[0] + x[r][1] * a[1] + x[r][2] * a[2] - rhs[r];
      err += w[r] * d * d;
    }
    if (err < best_err) best_err = err, best = a;
  }
  return best;
}

FitChoice score(const std::vector<PreparedRow>& rows, const Chip& chip, const ModelParams& p) {
  FitChoice c;
  c.params = p;
  double sum = 0;
  for (const PreparedRow& r : rows) {
    const double e = predict_ms(r, chip, p) / r.row->published_ms - 1;
    sum += e * e;
    c.max_abs = std::max(c.max_abs, std::fabs(e));
  }
  c.rms = rows.empty() ? 0 : std::sqrt(sum / double(rows.size()));
  return c;
}

}  // namespace

PowerMode row_mode(const PublishedRow& row) {
  const Chip& orin = chip_for("orin");
  if (!row.mode.empty()) return power_mode(orin, row.mode);
  PowerMode m = orin.modes.front();
  m.name = std::to_string(int(row.dla_mhz)) + " MHz";
  m.dla_hz = row.dla_mhz * 1e6;
  m.dram_bytes_per_s = row.dram_gb_per_s * 1e9;
  return m;
}

PreparedRow prepare_row(const PublishedRow& row, const std::string& nets_dir) {
  const std::string path = nets_dir + "/" + row.network + ".onnx";
  ImportOptions io;
  const OnnxSignature sig = read_onnx_signature(path);
  for (const auto& in : sig.inputs) {  // pin a dynamic batch to the row's
    Shape s;
    for (size_t i = 0; i < in.dims.size(); ++i) {
      char* end = nullptr;
      const long long d = std::strtoll(in.dims[i].c_str(), &end, 10);
      s.push_back(i == 0 ? row.batch : (end && *end == 0 ? d : 1));
    }
    io.input_shapes[in.name] = s;
  }
  Graph g = import_onnx_file(path, io);
  run_passes(g);
  PlacementOptions po;
  po.target = "orin";
  po.precision = dla::Precision::kINT8;
  po.layer_precisions = parse_precision_overrides(row.fp16_layers);
  const Placement p = place(g, po);
  LatencyOptions lo;
  lo.output_precision = row.fp16_output ? OpPrecision::kFp16 : OpPrecision::kInt8;
  PreparedRow r;
  r.row = &row;
  r.mode = row_mode(row);
  r.tasks = lower_dla_tasks(g, p, lo);
  r.gmacs = double(graph_macs(g)) / 1e9 / double(row.batch);
  r.layers = p.total_layers;
  for (const auto& t : r.tasks) r.operations += int(t.size());
  if (p.dla_layers != p.total_layers)
    fail(Status::kInternal, row.label, ": ", p.total_layers - p.dla_layers,
         " layer(s) of the reconstruction fall back to the GPU; the published runs are all-DLA");
  return r;
}

double predict_ms(const PreparedRow& r, const Chip& chip, const ModelParams& params) {
  double us = 0;
  for (const auto& ops : r.tasks) us += predict_task(ops, chip, r.mode, params).total_us;
  return us / 1e3;
}

std::vector<long long> admissible_buffers() { return {512 << 10, 1 << 20, 2 << 20}; }

FitResult fit_params(const std::vector<PreparedRow>& rows, const Chip& chip, const ModelParams& start,
                     const std::vector<long long>& buffers) {
  if (rows.empty()) fail(Status::kInvalidArgument, "latency fit: no calibration rows");
  FitResult result;
  result.best.rms = std::numeric_limits<double>::infinity();
  for (bool lanes : {false, true})
    for (int atom_c = 32; atom_c <= 256; atom_c *= 2) {
      const int atom_k = chip.int8_macs_per_cycle / atom_c;
      for (long long buffer : buffers) {
        FitChoice best_here;
        best_here.rms = std::numeric_limits<double>::infinity();
        for (double overlap : {1.0, 0.75, 0.5, 0.25, 0.0})
          for (int e = 10; e <= 100; ++e) {
            ModelParams p = start;
            p.overlap = overlap;
            p.atom_c = atom_c, p.atom_k = atom_k, p.cbuf_bytes = buffer, p.dram_efficiency = e / 100.0;
            p.depthwise_lanes = lanes;
            p.op_overhead_us = p.op_overhead_cycles = p.task_overhead_us = 0;
            // Overheads enter linearly: predicted = busy + n_ops * us + n_ops / f * cycles + n_tasks * us.
            std::vector<std::array<double, 3>> x;
            std::vector<double> rhs, w;
            for (const PreparedRow& r : rows) {
              const double busy_ms = predict_ms(r, chip, p);
              x.push_back(
                  {r.operations / 1e3, r.operations / r.mode.dla_hz * 1e3, double(r.tasks.size()) / 1e3});
              rhs.push_back(r.row->published_ms - busy_ms);
              w.push_back(1.0 / (r.row->published_ms * r.row->published_ms));
            }
            const auto a = nnls3(x, rhs, w);
            p.op_overhead_us = a[0], p.op_overhead_cycles = a[1], p.task_overhead_us = a[2];
            const FitChoice c = score(rows, chip, p);
            if (c.rms < best_here.rms) best_here = c;
          }
        result.per_geometry.push_back(best_here);
        if (best_here.rms < result.best.rms) result.best = best_here;
      }
    }
  return result;
}

}  // namespace dlakit::latency
