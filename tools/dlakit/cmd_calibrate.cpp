// dlakit calibrate MODEL --data D --cache out.cache: TensorRT-compatible INT8 calibration.
// dlakit qdq-to-cache MODEL -o out.cache: the cache equivalent to a Q/DQ model's scales.
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli.h"
#include "int8_flags.h"
#include "onnx/exporter.h"
#include "quant/qdq.h"
#include "workflow/calibrate.h"

namespace dlakit::cli {
namespace {

struct CalibrateFlags {
  ModelFlags model;
  PlacementFlags placement;
  DataFlags data;
  CalibFlags calib;
  MetricFlags metric;
  TuneFlags tune;
  CacheVersionFlags version;
  std::string cache, save_onnx;
  bool json = false;
};

nlohmann::json table_json(const quant::ScaleTable& t, const quant::ScaleTable& maxes,
                          const std::string& path) {
  nlohmann::json j;
  j["cache"] = path;
  j["header"] = "TRT-" + std::to_string(t.trt_version) + "-EntropyCalibration2";
  j["tensors"] = nlohmann::json::array();
  for (size_t i = 0; i < t.scales.size(); ++i)
    j["tensors"].push_back({{"name", t.scales[i].first},
                            {"amax", t.scales[i].second * 127},
                            {"max_abs", maxes.scales[i].second * 127},
                            {"scale_hex", quant::scale_to_hex(t.scales[i].second)}});
  return j;
}

void print_table(const quant::ScaleTable& t, const quant::ScaleTable& maxes, const std::string& path,
                 const std::string& calibrator, int samples) {
  std::cout << "calibrated " << t.scales.size() << " tensors on " << samples << " samples with " << calibrator
            << " -> " << path << " (TRT-" << t.trt_version << "-EntropyCalibration2)\n";
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

// "out.cache" -> "out.mse.cache" (--calib-algo all writes one cache per calibrator).
std::string suffixed(const std::string& path, const char* algo) {
  const size_t dot = path.rfind('.');
  return (dot == std::string::npos ? path : path.substr(0, dot)) + "." + algo +
         (dot == std::string::npos ? "" : path.substr(dot));
}

void run_calibrate(const CalibrateFlags& f) {
  f.model.apply_threads();
  if (f.tune.any() && f.save_onnx.empty())
    fail(Status::kInvalidArgument,
         "--bias-correction and --weight-rounding edit the model's weights: give --save-onnx FILE for the "
         "tuned "
         "model (build that one with the cache)");
  PlacedModel pm = load_and_place(f.model, f.placement);
  if (pm.has_qdq)
    fail(Status::kInvalidArgument, f.model.model,
         " is a Q/DQ model: its scales come from the model; use `dlakit qdq-to-cache` instead");
  std::vector<std::string> sources;
  const std::vector<TensorMap> samples = f.data.load(pm.graph, &sources);
  const quant::MetricSpec metric = f.metric.spec(pm.graph, samples, f.json, sources);
  PlacementOptions int8 = f.placement.options();  // scored as `build --int8` would place it
  int8.precision = dla::Precision::kINT8;
  const Placement placement = place(pm.graph, int8);
  const Calibration c = calibrate_samples(pm.graph, placement, samples, f.calib, metric);
  nlohmann::json j;
  j["algorithm"] = f.calib.algo;
  j["metric"] = quant::metric_name(metric.kind);
  j["samples"] = c.samples;
  if (c.automatic.candidates.size() > 1) j["candidates"] = candidates_json(c);
  if (f.calib.algo == "all") {
    if (!f.json) print_candidates(c, metric);
    for (const quant::CalibCandidate& x : c.automatic.candidates) {
      quant::ScaleTable t = x.table;
      t.trt_version = f.version.version();
      const std::string path = suffixed(f.cache, quant::calib_algo_name(x.options.algo));
      quant::write_calib_cache(path, t);
      if (f.json)
        j["caches"].push_back(table_json(t, c.maxes, path));
      else
        print_table(t, c.maxes, path, x.name, c.samples);
    }
    if (f.json) std::cout << j.dump(2) << "\n";
    return;
  }
  quant::ScaleTable t = c.table;
  t.trt_version = f.version.version();
  quant::write_calib_cache(f.cache, t);
  apply_tuning(pm.graph, placement, t, samples, f.tune, f.json);
  if (!f.save_onnx.empty()) save_onnx(pm.graph, f.save_onnx, "dlakit_calibrated");
  const quant::Int8Check check = quant::check_int8(pm.graph, quant::plan_numerics(pm.graph, placement, &t),
                                                   samples, metric, f.tune.any() ? nullptr : &c.score);
  const std::string command = fix_command(f.model, f.data, f.metric, metric, f.cache);
  if (f.json) {
    j["chosen"] = c.chosen;
    j["check"] = check_json(check, command);
    j.update(table_json(t, c.maxes, f.cache));
    std::cout << j.dump(2) << "\n";
  } else {
    print_candidates(c, metric);
    print_table(t, c.maxes, f.cache, c.chosen, c.samples);
    if (!f.save_onnx.empty())
      std::cout << "wrote the model (after dlakit's passes" << (f.tune.any() ? ", tuned" : "") << ") to "
                << f.save_onnx << "; build it with --calib " << f.cache << "\n";
    if (!check.collapsed) std::cout << "  " << quant::describe(check) << "\n";
  }
  std::cout << std::flush;
  warn_if_collapsed(check, command);
}

struct QdqFlags {
  ModelFlags model;
  std::string cache, save_onnx;
  CacheVersionFlags version;
};

void run_qdq_to_cache(const QdqFlags& f) {
  Graph g = import_onnx_file(f.model.model, f.model.import_options());
  if (!quant::has_qdq(g))
    fail(Status::kInvalidArgument, f.model.model, " has no QuantizeLinear/DequantizeLinear nodes");
  quant::ScaleTable t = quant::fold_qdq(g);
  t.trt_version = f.version.version();
  t.algorithm = "qdq";
  quant::write_calib_cache(f.cache, t);
  std::cout << "folded Q/DQ: " << t.scales.size()
            << " activation ranges (with those copied across range-keeping "
            << "ops, as NVIDIA's qdq-translator does), " << t.weight_scales.size()
            << " per-channel weight scales -> " << f.cache << " (TRT-" << t.trt_version
            << "-EntropyCalibration2)\n";
  if (!f.save_onnx.empty()) {
    save_onnx(g, f.save_onnx, "dlakit_qdq_folded");
    std::cout << "wrote the model without Q/DQ nodes to " << f.save_onnx << " (build it with --int8 --calib "
              << f.cache << ")\n";
  }
}

}  // namespace

void register_calibrate(CLI::App& app) {
  auto f = std::make_shared<CalibrateFlags>();
  CLI::App* sub = app.add_subcommand(
      "calibrate",
      "INT8 calibration: run the FP32 model over --data, histogram every activation, pick the calibrator\n"
      "whose INT8 emulation is closest to FP32 on that data (--calib-algo auto, the default; --metric says\n"
      "how to judge), warn when INT8 collapses, and write a TensorRT calibration cache\n"
      "(TRT-<ver>-EntropyCalibration2; usable with trtexec --calib and dlakit --calib)");
  f->model.add(*sub);
  f->placement.add(*sub);
  f->data.add(*sub);
  f->calib.add(*sub, true);
  f->metric.add(*sub);
  f->tune.add(*sub);
  sub->add_option("--cache,--calib", f->cache, "Where to write the cache")->required();
  sub->add_option("--save-onnx", f->save_onnx,
                  "Also write the model after dlakit's passes (and --bias-correction / --weight-rounding), "
                  "which the cache's names refer to");
  f->version.add(*sub);
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
  q->version.add(*qs);
  qs->callback([q] { run_qdq_to_cache(*q); });
}

}  // namespace dlakit::cli
