#include "int8_flags.h"

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "base/file.h"
#include "onnx/exporter.h"

namespace dlakit::cli {

void MetricFlags::add(CLI::App& app) {
  app.add_option("--metric", metric,
                 "How INT8 is judged against FP32: auto (default: ctc-cer when the first output is a "
                 "sequence of softmaxes, top1 when it is one softmax, else cosine), cosine (mean output "
                 "cosine), top1 (argmax over the last "
                 "axis agrees), ctc-cer (greedy CTC decoding, needs --labels), mask-f1 (F1 of the "
                 "p > --threshold masks)")
      ->check(CLI::IsMember({"auto", "cosine", "top1", "ctc-cer", "mask-f1"}));
  app.add_option("--labels", labels,
                 "For --metric ctc-cer: the model's character list, one per line (class 0 is the blank; "
                 "a last extra class is a space, as PaddleOCR's use_space_char); without it each class is "
                 "one symbol");
  app.add_option("--truth", truth,
                 "For --metric ctc-cer: the expected reading of each sample, one a line in --data's order "
                 "(folders sorted by file name), as text or as PaddleOCR's label file (image<TAB>text; the "
                 "image's file name must be the sample's). The metric becomes the CER INT8 adds over "
                 "FP32's CER against these readings, so --fix-target 0.01 means at most 1 point more "
                 "than FP32");
  app.add_option("--threshold", threshold,
                 "For --metric mask-f1: a pixel is set when p > this (default 0.5)");
  app.add_option("--metric-output", output, "The output the metric reads (default: the first)");
}

namespace {

// --truth: one reading a line; "name<TAB>text" (PaddleOCR's label files) names the sample it belongs to.
std::vector<std::u32string> read_truth(const std::string& path, const std::vector<std::string>& sources) {
  namespace fs = std::filesystem;
  std::vector<std::u32string> truth;
  for (std::string line : split_lines(read_file(path))) {
    const size_t tab = line.find('\t');
    if (tab != std::string::npos) {
      const size_t i = truth.size();
      const std::string name = fs::path(line.substr(0, tab)).filename().string();
      if (i < sources.size() && fs::path(sources[i]).filename().string() != name)
        fail(Status::kInvalidArgument, "--truth '", path, "' line ", i + 1, " is for '", name,
             "' but sample ", i + 1, " of --data is '", sources[i],
             "' (folders are read in file-name order; the label file must list the samples in that order)");
      line = line.substr(tab + 1);
    }
    truth.push_back(quant::utf8_to_utf32(line));
  }
  if (truth.size() < sources.size())
    fail(Status::kInvalidArgument, "--truth '", path, "' has ", truth.size(), " reading(s) for ",
         sources.size(), " samples of --data");
  return truth;
}

}  // namespace

quant::MetricSpec MetricFlags::spec(const Graph& g, const std::vector<TensorMap>& samples, bool quiet,
                                    const std::vector<std::string>& sources) const {
  quant::MetricSpec s;
  if (metric == "auto") {
    std::string why;
    ReferenceEngine ref(g);
    s.kind = quant::auto_metric(samples.empty() ? TensorMap{} : ref.run(samples[0]), &why);
    if (!quiet) std::cerr << "--metric auto: " << why << "\n";
  } else {
    s.kind = quant::parse_metric(metric);
  }
  s.output = output;
  s.threshold = threshold;
  if (!labels.empty()) s.labels = quant::read_labels(labels);
  if (!truth.empty()) {
    if (s.kind != quant::MetricKind::kCtcCer)
      fail(Status::kInvalidArgument,
           "--truth gives the expected readings for --metric ctc-cer; the metric is ",
           quant::metric_name(s.kind));
    s.truth = read_truth(truth, sources);
  }
  return s;
}

std::string MetricFlags::as_flags(const quant::MetricSpec& resolved) const {
  std::string s = std::string("--metric ") + quant::metric_name(resolved.kind);
  if (!labels.empty()) s += " --labels " + labels;
  if (!truth.empty()) s += " --truth " + truth;
  if (resolved.kind == quant::MetricKind::kMaskF1) s += " --threshold " + std::to_string(threshold);
  if (!output.empty()) s += " --metric-output " + output;
  return s;
}

void CalibFlags::add(CLI::App& app, bool with_all) {
  std::vector<std::string> algos = {"auto", "entropy2", "minmax", "percentile", "mse"};
  if (with_all) algos.push_back("all");
  app.add_option("--calib-algo", algo,
                 std::string("Calibrator: auto (default: every calibrator's ranges are measured by INT8 "
                             "emulation against FP32 on the data with --metric; the best is kept), entropy2 "
                             "(TensorRT's default, IInt8EntropyCalibrator2), minmax, percentile, mse") +
                     (with_all ? ", or all (one cache per calibrator)" : ""))
      ->check(CLI::IsMember(algos));
  app.add_option("--percentile", percentile, "Percentile for the percentile calibrator (default 99.99)");
}

void TuneFlags::add(CLI::App& app) {
  app.add_flag("--bias-correction", bias_correction,
               "Shift each INT8 convolution channel's bias by the mean error quantization adds, measured on "
               "--data (edits the model's constants; off by default)");
  app.add_flag("--weight-rounding", weight_rounding,
               "Round each INT8 convolution weight up or down (not to nearest) to minimise the layer's "
               "output error on --data, as level * scale so the DLA's rounding keeps it (edits the model's "
               "constants; off by default)");
}

void apply_tuning(Graph& g, const Placement& int8_placement, const quant::ScaleTable& scales,
                  const std::vector<TensorMap>& samples, const TuneFlags& t, bool quiet) {
  if (!t.any()) return;
  quant::TuneOptions o;
  o.bias_correction = t.bias_correction;
  o.weight_rounding = t.weight_rounding;
  const quant::TuneReport r =
      quant::tune_weights(g, quant::plan_numerics(g, int8_placement, &scales), samples, o);
  if (quiet) return;
  int64_t flipped = 0;
  for (const quant::TunedLayer& l : r.layers) flipped += l.flipped;
  std::cout << "tuned " << r.tuned << " INT8 convolution(s) on " << samples.size() << " samples:"
            << (t.weight_rounding ? " weight rounding (" + std::to_string(flipped) + " weights off nearest)"
                                  : "")
            << (t.bias_correction ? " bias correction" : "") << "\n";
}

void save_onnx(const Graph& g, const std::string& path, const std::string& name) {
  std::vector<int> all(g.nodes.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = int(i);
  write_file(path, export_onnx(g, all, g.inputs, g.outputs, name));
}

void CacheVersionFlags::add(CLI::App& app) {
  app.add_option(
      "--trt-version", trt_version,
      "TensorRT version in the cache header: 100300 = 10.3 (JetPack 6.1/6.2, default), 8602 = 8.6.2 "
      "(JetPack 6.0), 8502 = 8.5.2 (JetPack 5.1); NVIDIA's qdq-translator writes 8600");
  app.add_option("--jetpack", jetpack, "Set --trt-version from a JetPack release: 5.1, 6.0, 6.1 or 6.2")
      ->check(CLI::IsMember({"5.1", "6.0", "6.1", "6.2"}));
}

int CacheVersionFlags::version() const {
  // TensorRT in each JetPack release for Orin (NVIDIA's JetPack release notes; dlakit's table).
  if (jetpack == "5.1") return 8502;
  if (jetpack == "6.0") return 8602;
  if (jetpack == "6.1" || jetpack == "6.2") return 100300;
  return trt_version;
}

Calibration calibrate_samples(const Graph& g, const Placement& int8_placement,
                              const std::vector<TensorMap>& samples, const CalibFlags& c,
                              const quant::MetricSpec& metric) {
  Calibration r;
  r.samples = int(samples.size());
  quant::HistogramCollector h(g);
  auto bar = progress_bar("calibrating");
  for (size_t i = 0; i < samples.size(); ++i) {
    r.reference.push_back(h.add(samples[i]));
    if (bar) bar(int(i) + 1, int(samples.size()));
  }
  quant::CalibOptions minmax;
  minmax.algo = quant::CalibAlgo::kMinMax;
  r.maxes = h.compute(minmax);
  std::vector<quant::CalibOptions> candidates = quant::auto_candidates(c.percentile);
  if (c.algo != "auto") {  // one calibrator, or (all) each of the four once
    candidates.clear();
    for (const char* a : {"entropy2", "minmax", "percentile", "mse"})
      if (c.algo == a || c.algo == "all") {
        quant::CalibOptions o;
        o.algo = quant::parse_calib_algo(a);
        o.percentile = c.percentile;
        candidates.push_back(o);
      }
  }
  r.automatic = quant::choose_calibration(g, int8_placement, h, candidates, samples, r.reference, metric, {},
                                          progress_bar("measuring each calibrator"));
  const quant::CalibCandidate& best = r.automatic.candidates[r.automatic.best];
  r.table = best.table;
  r.chosen = best.name;
  r.score = best.score;
  return r;
}

void print_candidates(const Calibration& c, const quant::MetricSpec& metric) {
  if (c.automatic.candidates.size() < 2) return;
  std::printf("  every calibrator's INT8 emulation %s on these %d samples (%s):\n",
              quant::metric_reference(metric), c.samples, quant::metric_name(metric.kind));
  std::printf("    %-18s %-12s %-28s %s\n", "calibrator", "INT8 layers", "metric", "output cosine");
  for (size_t i = 0; i < c.automatic.candidates.size(); ++i) {
    const quant::CalibCandidate& x = c.automatic.candidates[i];
    std::printf("    %-18s %-12d %-28s %.6f%s\n", x.name.c_str(), x.int8_layers,
                quant::format_metric_value(metric, x.score.metric).c_str(), x.score.cosine,
                i == c.automatic.best ? "  <- best" : "");
  }
}

nlohmann::json candidates_json(const Calibration& c) {
  nlohmann::json j = nlohmann::json::array();
  for (size_t i = 0; i < c.automatic.candidates.size(); ++i) {
    const quant::CalibCandidate& x = c.automatic.candidates[i];
    j.push_back({{"calibrator", x.name},
                 {"int8_layers", x.int8_layers},
                 {"metric", x.score.metric},
                 {"output_cosine", x.score.cosine},
                 {"best", i == c.automatic.best}});
  }
  return j;
}

quant::ScaleTable int8_scales(const PlacedModel& pm, const std::string& calib) {
  quant::ScaleTable scales = pm.qdq;
  if (calib.empty()) return scales;
  const quant::CacheFit fit = quant::fit_cache(quant::read_calib_cache(calib), pm.graph, pm.imported, calib);
  for (const std::string& w : fit.warnings) std::cerr << "warning: " << calib << ": " << w << "\n";
  for (auto& [n, s] : fit.scales.scales) scales.set_scale(n, s);
  return scales;
}

std::string fix_command(const ModelFlags& m, const DataFlags& d, const MetricFlags& mf,
                        const quant::MetricSpec& metric, const std::string& calib) {
  char target[32];
  std::snprintf(target, sizeof target, "%g", quant::collapse_threshold(metric.kind));
  std::string s = "dlakit compare " + m.model;
  if (!m.input_shape.empty()) s += " --input-shape " + m.input_shape;
  s += " --int8";
  if (!calib.empty()) s += " --calib " + calib;
  return s + " " + d.as_flags() + " " + mf.as_flags(metric) + " --fix --fix-target " + target +
         " --apply fix.json";
}

void warn_if_collapsed(const quant::Int8Check& c, const std::string& command) {
  if (!c.collapsed) return;
  std::cerr << "warning: " << quant::describe(c) << ".\n  Find the layers to keep in FP16 with:\n    "
            << command << "\n  then build with --overrides fix.json.\n";
}

nlohmann::json check_json(const quant::Int8Check& c, const std::string& command) {
  nlohmann::json j = {{"metric", quant::metric_name(c.metric.kind)},
                      {"value", c.score.metric},
                      {"measured", quant::metric_reference(c.metric)},
                      {"output_cosine", c.score.cosine},
                      {"threshold", c.threshold},
                      {"samples", c.samples},
                      {"collapsed", c.collapsed}};
  if (!c.collapsed) return j;
  j["worst_layers"] = nlohmann::json::array();
  for (const quant::LayerError& e : c.worst)
    j["worst_layers"].push_back({{"layer", e.node}, {"op", e.op}, {"own_rel_l2", e.own.rel_l2}});
  j["fix_command"] = command;
  return j;
}

}  // namespace dlakit::cli
