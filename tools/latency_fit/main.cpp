// dlakit-latency-fit --nets DIR: fits the latency model's unknown parameters on the calibration rows of
// ../shared/specs/dla-performance.md with the reconstructed networks (scripts/export_latency_nets.py),
// then prints the report of docs/latency-model.md (parameters with their origin, every row's residual,
// the fit of every MAC geometry and buffer size) and the values to commit in src/latency/params.cpp.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>

#include "base/error.h"
#include "latency/fit.h"
#include "latency/params.h"
#include "latency/published.h"

using namespace dlakit;
using namespace dlakit::latency;

namespace {

std::string format(const char* fmt, double v) {
  char b[64];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}

std::string row_table(const std::vector<PreparedRow>& rows, const Chip& chip, const ModelParams& p,
                      int* within, double limit) {
  std::string s =
      "| network | mode | published | published ms (one DLA) | predicted ms | residual | GMACs/image: "
      "rebuilt (published) | layers | DLA ops |\n|---|---|---|---|---|---|---|---|---|\n";
  *within = 0;
  for (const PreparedRow& r : rows) {
    const double pred = predict_ms(r, chip, p), res = pred / r.row->published_ms - 1;
    *within += std::fabs(res) <= limit;
    s += "| " + r.row->label + " | " + r.mode.name + " | " + r.row->published + " | " +
         format("%.2f", r.row->published_ms) + " | " + format("%.2f", pred) + " | " +
         format("%+.1f%%", 100 * res) + " | " + format("%.2f", r.gmacs) +
         (r.row->published_gmacs > 0 ? " (" + format("%.2f", r.row->published_gmacs) + ")" : " (-)") + " | " +
         std::to_string(r.layers) + " | " + std::to_string(r.operations) + " |\n";
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Fit the DLA latency model on NVIDIA's published calibration rows (docs/latency-model.md)"};
  std::string nets;
  app.add_option("--nets", nets, "Folder of the reconstructed networks (scripts/export_latency_nets.py)")
      ->required()
      ->check(CLI::ExistingDirectory);
  std::vector<long long> buffers_kib;
  app.add_option(
      "--buffers", buffers_kib,
      "Buffer sizes to try, KiB (default 512 1024 2048: the sizes TensorRT's admission check allows)");
  CLI11_PARSE(app, argc, argv);
  try {
    const Chip& chip = chip_for("orin");
    std::vector<PreparedRow> calibration, validation;
    for (const PublishedRow& row : published_rows()) {
      std::fprintf(stderr, "prepare: %s, %s\n", row.label.c_str(),
                   row.mode.empty() ? "own clocks" : row.mode.c_str());
      (row.role == RowRole::kCalibration ? calibration : validation).push_back(prepare_row(row, nets));
    }
    std::vector<long long> buffers = admissible_buffers();
    if (!buffers_kib.empty()) {
      buffers.clear();
      for (long long kib : buffers_kib) buffers.push_back(kib * 1024);
    }
    const FitResult fit = fit_params(calibration, chip, fitted_params("orin"), buffers);
    const ModelParams& p = fit.best.params;
    std::cout << "## Parameters\n\n| parameter | value | origin | basis |\n|---|---|---|---|\n";
    for (const ParamInfo& i : describe(p, chip))
      std::cout << "| " << i.name << " | " << i.value << " | " << i.origin << " | " << i.basis << " |\n";
    int within = 0;
    std::cout << "\n## Calibration rows (fitted on these; target +-15 %)\n\n"
              << row_table(calibration, chip, p, &within, 0.15);
    std::cout << "\n"
              << within << " of " << calibration.size() << " calibration rows within +-15 %; rms "
              << format("%.1f%%", 100 * fit.best.rms) << ", worst "
              << format("%.1f%%", 100 * fit.best.max_abs) << ".\n";
    std::cout << "\n## Validation rows (not fitted on; aim +-25 %)\n\n"
              << row_table(validation, chip, p, &within, 0.25);
    std::cout << "\n" << within << " of " << validation.size() << " validation rows within +-25 %.\n";
    std::cout << "\n## Every MAC geometry and buffer size (best DRAM efficiency and overheads for each)\n\n"
              << "| depthwise | atom C x atom K | buffer | overlap | DRAM eff. | op us | op cycles | task us "
                 "| rms | worst |\n"
              << "|---|---|---|---|---|---|---|---|---|---|\n";
    for (const FitChoice& c : fit.per_geometry)
      std::cout << "| " << (c.params.depthwise_lanes ? "lanes" : "dense") << " | " << c.params.atom_c << " x "
                << c.params.atom_k << " | " << format("%.0f KiB", double(c.params.cbuf_bytes) / 1024) << " | "
                << format("%.2f", c.params.overlap) << " | " << format("%.2f", c.params.dram_efficiency)
                << " | " << format("%.2f", c.params.op_overhead_us) << " | "
                << format("%.0f", c.params.op_overhead_cycles) << " | "
                << format("%.1f", c.params.task_overhead_us) << " | " << format("%.1f%%", 100 * c.rms)
                << " | " << format("%.1f%%", 100 * c.max_abs) << " |\n";
    std::printf(
        "\n// src/latency/params.cpp, orin_fit():\n  p.atom_c = %d;\n  p.atom_k = %d;\n  p.cbuf_bytes = "
        "%lld;\n"
        "  p.depthwise_lanes = %s;\n  p.overlap = %g;\n  p.dram_efficiency = %.2f;\n  p.op_overhead_us = "
        "%.4f;\n"
        "  p.op_overhead_cycles = %.1f;\n  p.task_overhead_us = %.3f;\n",
        p.atom_c, p.atom_k, p.cbuf_bytes, p.depthwise_lanes ? "true" : "false", p.overlap, p.dram_efficiency,
        p.op_overhead_us, p.op_overhead_cycles, p.task_overhead_us);
  } catch (const Error& e) {
    std::fprintf(stderr, "error (%s): %s\n", status_name(e.status()), e.what());
    return 1;
  }
  return 0;
}
