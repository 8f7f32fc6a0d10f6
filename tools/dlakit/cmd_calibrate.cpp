// dlakit calibrate MODEL --data D --cache out.cache: TensorRT-compatible INT8 calibration.
// dlakit qdq-to-cache MODEL -o out.cache: the cache equivalent to a Q/DQ model's scales.
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli.h"
#include "numerics/quantize.h"
#include "onnx/exporter.h"
#include "quant/qdq.h"
#include "workflow/calibrate.h"

namespace dlakit::cli {
namespace {

struct CalibrateFlags {
  ModelFlags model;
  PlacementFlags placement;
  DataFlags data;
  std::string algo = "entropy2", cache;
  double percentile = 99.99;
  int trt_version = 100300;
  bool json = false;
};

void print_table(const quant::ScaleTable& t, const quant::ScaleTable& maxes, const std::string& path,
                 int samples, bool json) {
  if (json) {
    nlohmann::json j;
    j["cache"] = path;
    j["algorithm"] = t.algorithm;
    j["samples"] = samples;
    j["header"] = "TRT-" + std::to_string(t.trt_version) + "-EntropyCalibration2";
    for (size_t i = 0; i < t.scales.size(); ++i)
      j["tensors"].push_back({{"name", t.scales[i].first},
                              {"amax", t.scales[i].second * 127},
                              {"max_abs", maxes.scales[i].second * 127},
                              {"scale_hex", quant::scale_to_hex(t.scales[i].second)}});
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << "calibrated " << t.scales.size() << " tensors on " << samples << " samples with "
            << t.algorithm << " -> " << path << "\n";
  size_t clipped = 0;
  for (size_t i = 0; i < t.scales.size(); ++i) clipped += t.scales[i].second < maxes.scales[i].second;
  std::cout << "  " << clipped << " of " << t.scales.size()
            << " ranges clip below the largest value seen (outliers saturate at +-127)\n";
  std::printf("  %-44s %12s %12s %10s\n", "tensor (first 12)", "amax", "max |x|", "scale");
  for (size_t i = 0; i < t.scales.size() && i < 12; ++i)
    std::printf("  %-44s %12.5g %12.5g %10s\n", t.scales[i].first.substr(0, 44).c_str(),
                t.scales[i].second * 127, maxes.scales[i].second * 127,
                quant::scale_to_hex(t.scales[i].second).c_str());
}

void run_calibrate(const CalibrateFlags& f) {
  f.model.apply_threads();
  const PlacedModel pm = load_and_place(f.model, f.placement);
  workflow::require_calibratable(pm);  // before reading the data
  const std::vector<TensorMap> samples = f.data.load(pm.graph);
  workflow::CalibrateOptions o;
  o.algos = workflow::parse_calib_algos(f.algo);
  o.percentile = f.percentile;
  o.trt_version = f.trt_version;
  size_t next = 0;
  auto bar = progress_bar("calibrating");
  const workflow::Calibration c = workflow::calibrate(
      pm,
      [&](TensorMap& s) {
        if (next == samples.size()) return false;
        s = samples[next++];
        return true;
      },
      o,
      [&](int seen) {
        if (bar) bar(seen, int(samples.size()));
      });
  for (size_t i = 0; i < o.algos.size(); ++i) {
    std::string path = f.cache;
    if (o.algos.size() > 1) {
      const size_t dot = path.rfind('.');
      path = (dot == std::string::npos ? path : path.substr(0, dot)) + "." +
             quant::calib_algo_name(o.algos[i]) + (dot == std::string::npos ? "" : path.substr(dot));
    }
    quant::write_calib_cache(path, c.tables[i]);
    print_table(c.tables[i], c.maxes, path, c.samples, f.json);
  }
}

struct QdqFlags {
  ModelFlags model;
  std::string cache, save_onnx;
  int trt_version = 100300;
};

void run_qdq_to_cache(const QdqFlags& f) {
  Graph g = import_onnx_file(f.model.model, f.model.import_options());
  if (!quant::has_qdq(g))
    fail(Status::kInvalidArgument, f.model.model, " has no QuantizeLinear/DequantizeLinear nodes");
  quant::ScaleTable t = quant::fold_qdq(g);
  t.trt_version = f.trt_version;
  t.algorithm = "qdq";
  quant::write_calib_cache(f.cache, t);
  std::cout << "folded Q/DQ: " << t.scales.size() << " activation ranges, " << t.weight_scales.size()
            << " per-channel weight scales -> " << f.cache << "\n";
  if (!f.save_onnx.empty()) {
    std::vector<int> all(g.nodes.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = int(i);
    const std::string bytes = export_onnx(g, all, g.inputs, g.outputs, "dlakit_qdq_folded");
    std::ofstream out(f.save_onnx, std::ios::binary);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    if (!out) fail(Status::kIoError, "cannot write '", f.save_onnx, "'");
    std::cout << "wrote the model without Q/DQ nodes to " << f.save_onnx << " (build it with --int8 --calib "
              << f.cache << ")\n";
  }
}

}  // namespace

void register_calibrate(CLI::App& app) {
  auto f = std::make_shared<CalibrateFlags>();
  CLI::App* sub = app.add_subcommand(
      "calibrate",
      "INT8 calibration: run the FP32 model over --data, histogram every activation, write a TensorRT\n"
      "calibration cache (TRT-<ver>-EntropyCalibration2; usable with trtexec --calib and dlakit --calib)");
  f->model.add(*sub);
  f->placement.add(*sub);
  f->data.add(*sub);
  sub->add_option("--calib-algo", f->algo, "entropy2 (TensorRT's, default), minmax, percentile, mse, or all")
      ->check(CLI::IsMember({"entropy2", "minmax", "percentile", "mse", "all"}));
  sub->add_option("--percentile", f->percentile, "Percentile for --calib-algo percentile (default 99.99)");
  sub->add_option("--cache,--calib", f->cache, "Where to write the cache")->required();
  sub->add_option("--trt-version", f->trt_version,
                  "TensorRT version in the header: 100300 = 10.3 (JetPack 6.1, default), 8602 = 8.6.2");
  sub->add_flag("--json", f->json, "Print JSON");
  sub->callback([f] { run_calibrate(*f); });

  auto q = std::make_shared<QdqFlags>();
  CLI::App* qs = app.add_subcommand(
      "qdq-to-cache",
      "Fold a Q/DQ (QAT) model's QuantizeLinear/DequantizeLinear nodes into a TensorRT calibration cache,\n"
      "which the DLA needs (it takes implicit quantization only)");
  q->model.add(*qs);
  qs->add_option("-o,--cache", q->cache, "Where to write the cache")->required();
  qs->add_option("--save-onnx", q->save_onnx, "Also write the model with the Q/DQ nodes folded away");
  qs->add_option("--trt-version", q->trt_version, "TensorRT version in the header (default 100300)");
  qs->callback([q] { run_qdq_to_cache(*q); });
}

}  // namespace dlakit::cli
