// Accuracy of the emulated DLA (INT8, FP16) against FP32 on real models and real or rendered data that
// the setup scripts produce (nothing hand-picked), judged by each task's metric (issue #13):
//   PP-OCRv4 rec on 240 rendered lines: character error rate (CER) against the labels
//   ppocr cls on the same lines upright and rotated 180 degrees: agreement with FP32
//   PP-OCRv4 det on opencv-doc scene-text photos and rendered pages: F1 of the p > 0.3 masks against FP32
//   every other model in .cache/models: FP16 output cosine against FP32
// Every INT8 configuration is what a dlakit command line produces, named in its row: the calibrators, the
// default path (`calibrate` with no flags: --calib-algo auto, --metric auto), auto with the task's metric,
// --bias-correction / --weight-rounding, and `compare --fix --metric M --fix-target T`. Everything they
// decide is decided on the calibration data (48 other rendered lines; other pages and non-text photos);
// the evaluation data is only measured. Results: $BUILD/accuracy.md (committed as docs/accuracy.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>

#include "../common/test_paths.h"
#include "engine/engine.h"
#include "io/image.h"
#include "onnx/importer.h"
#include "passes/passes.h"
#include "placement/placement.h"
#include "quant/auto_calib.h"
#include "quant/fix_search.h"
#include "quant/weight_tuning.h"

namespace fs = std::filesystem;
using namespace dlakit;
using namespace dlakit::quant;

namespace {

const fs::path kSource = test_paths::source_dir();
const fs::path kModels = kSource / ".cache" / "models";
const fs::path kImages = kSource / ".cache" / "images";

std::ostringstream g_md;       // the report, section by section
std::ostringstream g_targets;  // issue #13's targets: measured, met or not
std::ostringstream g_fp16;     // FP16 cosine rows, collected from every test

std::string pct(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f %%", 100 * v);
  return b;
}
std::string fixed(double v, const char* f = "%.6f") {
  char b[32];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// A target row. `guard` describes the regression guard the test asserts instead when the target is not met.
void target_row(const std::string& what, const std::string& target, const std::string& measured, bool met,
                const std::string& guard = "") {
  g_targets << "| " << what << " | " << target << " | " << measured << " | "
            << (met ? "yes" : "**no**" + (guard.empty() ? "" : "; guard: " + guard)) << " |\n";
}

// The model as `dlakit build` sees it: imported, optimised, placed (INT8 or FP16 default precision).
struct Model {
  Graph g;
  Placement int8, fp16;
};
Model load(const std::string& name, const std::string& shapes) {
  ImportOptions o;
  o.input_shapes = parse_input_shapes(shapes);
  Model m{import_onnx_file((kModels / (name + ".onnx")).string(), o), {}, {}};
  run_passes(m.g);
  PlacementOptions p;
  p.precision = dla::Precision::kINT8;
  m.int8 = place(m.g, p);
  p.precision = dla::Precision::kFP16;
  m.fp16 = place(m.g, p);
  return m;
}

PlacementOptions int8_options() {
  PlacementOptions p;
  p.precision = dla::Precision::kINT8;
  return p;
}

// One INT8 (or FP16) configuration as a command line makes it.
struct Config {
  std::string label, calibrator;
  std::string key;  // configurations with the same key compute the same thing (measured once)
  Graph g;          // the model (tuned, for the weight edits)
  Placement placement;
  NumericsPlan plan;
  int dla_layers = 0;
  double mac_share = 0;
  int ranges_missing = 0;  // DLA layers left FP16 for want of a range
};

Config make_config(const std::string& label, const std::string& calibrator, const std::string& key,
                   const Graph& g, const Placement& p, const ScaleTable* t) {
  Config c{label, calibrator, key, g, p, plan_numerics(g, p, t)};
  for (size_t i = 0; i < p.layers.size(); ++i) {
    if (p.layers[i].device != Device::kDLA || c.plan.nodes[i].mode == Mode::kFP32) continue;
    ++c.dla_layers;
    c.ranges_missing += c.plan.nodes[i].note.rfind("no dynamic range", 0) == 0;
  }
  c.mac_share = int8_mac_share(p, c.plan);
  return c;
}

// What the INT8 commands decide on the calibration data for one model.
struct Prepared {
  std::vector<CalibCandidate> candidates;  // auto's candidates with their scores on the calibration data
  std::vector<Score> task_scores;          // the same runs scored with the task's metric
  MetricKind default_metric = MetricKind::kCosine;
  std::string default_why;
  size_t default_best = 0, task_best = 0;
  std::vector<Config> configs;
  std::vector<std::pair<std::string, Score>> tuned;  // the weight edits' scores on the calibration data
  SearchResult search;
  SearchResult grouped;      // the search with --fix-return-groups (when asked), at its own target
  MetricSpec search_metric;  // the task's metric, against the truth where the search reads it
  std::string search_label;
};

const Config& config(const Prepared& p, const std::string& key) {
  for (const Config& c : p.configs)
    if (c.key == key) return c;
  throw std::runtime_error("no configuration '" + key + "'");
}

// `search_metric` / `search_flags`: what `compare --fix --fix-target` reads (the task's metric, with --truth
// where the calibration data has its expected readings).
Prepared prepare(const Model& m, const std::vector<TensorMap>& calib, const MetricSpec& task,
                 const std::string& task_flags, const MetricSpec& search_metric,
                 const std::string& search_flags, double target,
                 std::optional<double> grouped_target = std::nullopt) {
  Prepared r;
  HistogramCollector hc(m.g);
  std::vector<TensorMap> reference;
  for (const auto& s : calib) reference.push_back(hc.add(s));
  r.default_metric = auto_metric(reference[0], &r.default_why);
  MetricSpec dflt;
  dflt.kind = r.default_metric;
  // `calibrate` (auto): every candidate's INT8 emulation against FP32 on the calibration data.
  for (const CalibOptions& o : auto_candidates(CalibOptions{}.percentile)) {
    CalibCandidate c;
    c.name = candidate_name(o);
    c.options = o;
    c.table = hc.compute(o);
    const NumericsPlan plan = plan_numerics(m.g, m.int8, &c.table);
    c.int8_layers = plan.int8_nodes;
    EmulatedEngine emu(m.g, plan);
    MetricAccumulator a(dflt), b(task), cos(MetricSpec{});
    emu.run_each(calib, [&](size_t s, const TensorMap& out) {
      a.add(reference[s], out);
      b.add(reference[s], out);
      cos.add(reference[s], out);
    });
    c.score = {a.value(), cos.value(), a.value()};
    r.task_scores.push_back({b.value(), cos.value(), b.value()});
    r.candidates.push_back(c);
    const size_t i = r.candidates.size() - 1;
    if (better(dflt.kind, c.score, r.candidates[r.default_best].score)) r.default_best = i;
    if (better(task.kind, r.task_scores[i], r.task_scores[r.task_best])) r.task_best = i;
  }
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const CalibCandidate& c = r.candidates[i];
    if (c.options.algo == CalibAlgo::kPercentile && c.options.percentile != CalibOptions{}.percentile)
      continue;
    r.configs.push_back(
        make_config("INT8, `calibrate --calib-algo " + std::string(calib_algo_name(c.options.algo)) + "`",
                    c.name, c.name, m.g, m.int8, &c.table));
  }
  const CalibCandidate& def = r.candidates[r.default_best];
  r.configs.push_back(make_config("INT8, **default path**: `calibrate` (auto; --metric auto = " +
                                      std::string(metric_name(r.default_metric)) + ")",
                                  def.name, def.name, m.g, m.int8, &def.table));
  const CalibCandidate& tb = r.candidates[r.task_best];
  r.configs.push_back(
      make_config("INT8, `calibrate " + task_flags + "` (auto)", tb.name, tb.name, m.g, m.int8, &tb.table));
  // --bias-correction / --weight-rounding on top of the default path.
  std::vector<TuneOptions> edits(3);
  for (int mode = 1; mode <= 3; ++mode) {
    edits[size_t(mode - 1)].bias_correction = mode & 1;
    edits[size_t(mode - 1)].weight_rounding = mode & 2;
  }
  // One pass over the calibration data for the three (each as `calibrate` with its flags makes it).
  const std::vector<Graph> tuned_graphs =
      tune_weights_each(m.g, plan_numerics(m.g, m.int8, &def.table), calib, edits);
  for (size_t e = 0; e < edits.size(); ++e) {
    const TuneOptions& to = edits[e];
    const Graph& tuned = tuned_graphs[e];
    const std::string flags = std::string(to.bias_correction ? " --bias-correction" : "") +
                              (to.weight_rounding ? " --weight-rounding" : "");
    r.tuned.emplace_back(flags,
                         score_plan(tuned, plan_numerics(tuned, m.int8, &def.table), calib, reference, dflt));
    r.configs.push_back(
        make_config("INT8, `calibrate" + flags + "`", def.name, def.name + flags, tuned, m.int8, &def.table));
  }
  // `compare --fix --metric M --fix-target T` on the default path's cache.
  SearchOptions so;
  so.metric = r.search_metric = search_metric;
  so.target = target;
  SearchMemo memo;  // the grouped search below measures none of the plans this one did again
  r.search = search_fix(m.g, int8_options(), &def.table, {}, calib, so, {}, &memo);
  const CurvePoint* chosen = r.search.reached ? &r.search.curve[size_t(r.search.chosen)] : nullptr;
  r.search_label = "INT8, default path + `compare --fix " + search_flags + " --fix-target " +
                   fixed(target, "%g") + "`: " +
                   (chosen ? std::to_string(chosen->moves - chosen->returned) + " layer(s) to FP16"
                           : std::string("target not reached on the calibration data"));
  if (r.search.reached)
    r.configs.push_back(
        make_config(r.search_label, def.name, "search", m.g, place(m.g, r.search.options), &def.table));
  if (!grouped_target) return r;
  so.return_groups = true;
  so.target = *grouped_target;
  r.grouped = search_fix(m.g, int8_options(), &def.table, {}, calib, so, {}, &memo);
  const CurvePoint* grouped = r.grouped.reached ? &r.grouped.curve[size_t(r.grouped.chosen)] : nullptr;
  const std::string label =
      "INT8, default path + `compare --fix " + search_flags + " --fix-target " +
      fixed(*grouped_target, "%g") + " --fix-return-groups`: " +
      (grouped ? std::to_string(grouped->moves - grouped->returned) + " layer(s) to FP16"
               : std::string("target not reached on the calibration data"));
  if (r.grouped.reached)
    r.configs.push_back(
        make_config(label, def.name, "search-groups", m.g, place(m.g, r.grouped.options), &def.table));
  return r;
}

// The auto calibrator's view of the calibration data, and the search's curve.
void report_calibration(const Prepared& p, const MetricSpec& task, const std::string& what) {
  const MetricSpec& searched = p.search_metric;
  g_md << "\n`calibrate` measures each calibrator's INT8 emulation against FP32 on the " << what
       << " (--metric auto resolves to " << p.default_why
       << "):\n\n| calibrator | INT8 layers | --metric auto (" << metric_name(p.default_metric)
       << ") | the task's metric (" << metric_name(task.kind) << ")"
       << " | output cosine |\n|---|---|---|---|---|\n";
  for (size_t i = 0; i < p.candidates.size(); ++i) {
    const CalibCandidate& c = p.candidates[i];
    g_md << "| " << c.name << (i == p.default_best ? " (default path's choice)" : "")
         << (i == p.task_best ? " (choice with the task's metric)" : "") << " | " << c.int8_layers << " | "
         << format_score(MetricSpec{p.default_metric}, c.score) << " | "
         << format_score(task, p.task_scores[i]) << " | " << fixed(c.score.cosine) << " |\n";
  }
  g_md << "\nThe weight edits on top of the default path's ranges, on the same calibration data: ";
  for (size_t i = 0; i < p.tuned.size(); ++i)
    g_md << (i ? "; " : "") << "`" << p.tuned[i].first.substr(1) << "` "
         << format_score(MetricSpec{p.default_metric}, p.tuned[i].second) << " (output cosine "
         << fixed(p.tuned[i].second.cosine) << ")";
  g_md << " (without: " << format_score(MetricSpec{p.default_metric}, p.candidates[p.default_best].score)
       << ").\n";
  const SearchResult& s = p.search;
  const bool fp16_measured =
      std::any_of(s.curve.begin(), s.curve.end(), [](const CurvePoint& c) { return c.moves < 0; });
  g_md << "\nThe `compare --fix` search on the calibration data (" << s.evaluations
       << " plans scored): all INT8 " << format_score(searched, s.all_int8) << ", all FP16 "
       << (fp16_measured ? format_score(searched, s.all_fp16) : "not measured (all INT8 meets the target)")
       << "; measured points (K leading layers of the ranking moved to FP16, then R of them returned to "
          "INT8, most MACs first, each kept in INT8 when the target still holds):\n\n"
       << "| layers moved to FP16 (K) | returned to INT8 (R) | FP16 layers | INT8 layers | INT8 share of DLA "
          "MACs | "
       << metric_name(searched.kind) << " " << metric_reference(searched)
       << " | meets |\n|---|---|---|---|---|---|---|\n";
  for (size_t i = 0; i < s.curve.size(); ++i) {
    const CurvePoint& c = s.curve[i];
    g_md << "| " << (c.moves < 0 ? "all (FP16 build)" : std::to_string(c.moves))
         << (int(i) == s.chosen ? " (chosen)" : "") << " | "
         << (c.returned > 0 ? std::to_string(c.returned) + " (last: " + c.returned_layer + ")" : "-") << " | "
         << c.fp16_layers << " | " << c.int8_layers << " | " << pct(c.int8_mac_share) << " | "
         << format_score(searched, c.score) << " | " << (c.meets ? "yes" : "no") << " |\n";
  }
}

// Streams samples through a plan, a few at a time; each output goes to `take` in order and is dropped (rec
// outputs are 1 MB each).
void run_plan(const Graph& g, const NumericsPlan& plan, const std::vector<TensorMap>& samples,
              const std::function<void(size_t, const TensorMap&)>& take) {
  EmulatedEngine(g, plan).run_each(samples, take);
}

// Cosine over every element of every sample of one output, accumulated.
struct Cosine {
  double ab = 0, aa = 0, bb = 0;
  void add(const Tensor& x, const Tensor& y) {
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double p = x.at_f64(i), q = y.at_f64(i);
      ab += p * q;
      aa += p * p;
      bb += q * q;
    }
  }
  double value() const { return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : (aa == bb ? 1.0 : 0.0); }
};

Image rotate180(const Image& img) {
  Image r = img;
  const size_t px = size_t(img.width) * size_t(img.height);
  for (size_t i = 0; i < px; ++i)
    for (int c = 0; c < img.channels; ++c)
      r.pixels[i * size_t(img.channels) + size_t(c)] =
          img.pixels[(px - 1 - i) * size_t(img.channels) + size_t(c)];
  return r;
}

// PaddleOCR's rec/cls input: height 48, width by aspect ratio (at most max_w), (x/255 - 0.5) / 0.5, zero
// padding on the right to max_w.
Tensor ocr_line_input(const Image& img, int max_w) {
  const int w = std::min(max_w, int(std::ceil(48.0 * img.width / img.height)));
  Preprocess p;
  p.width = w;
  p.height = 48;
  p.mean = {0.5f, 0.5f, 0.5f};
  p.std = {0.5f, 0.5f, 0.5f};
  Tensor t = image_to_tensor(img, p);
  Tensor out(DType::kF32, {1, 3, 48, max_w});
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 48; ++y)
      std::copy_n(t.data<float>() + (c * 48 + y) * w, w, out.data<float>() + (c * 48 + y) * max_w);
  return out;
}

struct Line {
  Image img;
  std::u32string text;
};
std::vector<Line> read_lines(const fs::path& dir) {
  std::vector<Line> v;
  std::ifstream f(dir / "labels.tsv");
  std::string row;
  while (std::getline(f, row)) {
    const size_t tab = row.find('\t');
    v.push_back({load_image((dir / row.substr(0, tab)).string()), utf8_to_utf32(row.substr(tab + 1))});
  }
  return v;
}

}  // namespace

TEST(Accuracy, RecognitionCharacterErrorRate) {
  const Model m = load("ppocr_rec", "x:1x3x48x320");
  const auto eval = read_lines(kImages / "ocr_eval"), calib = read_lines(kImages / "ocr_calib");
  ASSERT_GE(eval.size(), 200u);
  std::vector<TensorMap> ev, cal;
  for (auto& l : eval) ev.push_back({{"x", ocr_line_input(l.img, 320)}});
  for (auto& l : calib) cal.push_back({{"x", ocr_line_input(l.img, 320)}});
  MetricSpec cer;
  cer.kind = MetricKind::kCtcCer;
  cer.labels = read_labels((kModels / "ppocr_keys_v1.txt").string());
  // `--truth labels.tsv --fix-confidence 0.95 --fix-target 0.01`: the issue's own target (at most 1 point
  // over FP32's CER, both against the labels), met on the calibration lines at the 95 % bound of the CER
  // over the 48 lines drawn again, not on its value there: judged on the value, --fix-target 0.01 ended at
  // +0.49 points on them and +1.09 on the evaluation lines (2026-12-04, docs/int8.md).
  MetricSpec cer_truth = cer;
  for (const Line& l : calib) cer_truth.truth.push_back(l.text);
  cer_truth.confidence = 0.95;
  const double kTarget = 0.01;
  const Prepared p = prepare(
      m, cal, cer, "--metric ctc-cer --labels ppocr_keys_v1.txt", cer_truth,
      "--metric ctc-cer --labels ppocr_keys_v1.txt --truth labels.tsv --fix-confidence 0.95", kTarget);

  const std::vector<TensorMap> fp32 = ReferenceEngine(m.g).run_batch(ev);
  const std::string out = fp32[0].begin()->first;
  size_t chars = 0;
  for (auto& l : eval) chars += l.text.size();
  std::vector<std::u32string> read32;
  for (const auto& o : fp32) {
    const Tensor& t = o.at(out);
    read32.push_back(ctc_greedy(t.data<float>(), t.dim(1), t.dim(2), cer.labels));
  }
  struct Result {
    double cer = 0, cosine = 0;
    size_t same = 0;
  };
  auto measure = [&](const Graph& g, const NumericsPlan& plan) {
    size_t edits = 0;
    Result r;
    Cosine c;
    run_plan(g, plan, ev, [&](size_t i, const TensorMap& o) {
      const Tensor& t = o.at(out);
      const std::u32string s = ctc_greedy(t.data<float>(), t.dim(1), t.dim(2), cer.labels);
      edits += edit_distance(s, eval[i].text);
      r.same += s == read32[i];
      c.add(fp32[i].at(out), t);
    });
    r.cer = double(edits) / double(chars);
    r.cosine = c.value();
    return r;
  };
  size_t edits32 = 0;
  for (size_t i = 0; i < eval.size(); ++i) edits32 += edit_distance(read32[i], eval[i].text);
  const double cer32 = double(edits32) / double(chars);
  const Result r16 = measure(m.g, plan_numerics(m.g, m.fp16, nullptr));
  g_md << "\n## PP-OCRv4 rec: character error rate on " << eval.size() << " rendered lines (" << chars
       << " characters)\n\nCalibration: " << calib.size() << " other rendered lines. Input 1x3x48x320.\n\n"
       << "| configuration | calibrator | DLA layers in INT8 | INT8 share of DLA MACs | CER | CER - FP32 | "
          "lines "
          "read as FP32 reads them |\n|---|---|---|---|---|---|---|\n"
       << "| FP32 (reference) | - | - | - | " << pct(cer32) << " | - | - |\n"
       << "| FP16 | - | 0 | - | " << pct(r16.cer) << " | " << pct(r16.cer - cer32) << " | " << r16.same
       << " / " << eval.size() << " |\n";
  std::map<std::string, Result> done;
  for (const Config& c : p.configs) {
    if (!done.count(c.key)) done[c.key] = measure(c.g, c.plan);
    const Result& r = done[c.key];
    g_md << "| " << c.label << " | " << c.calibrator << " | " << c.plan.int8_nodes << " of " << c.dla_layers
         << " | " << pct(c.mac_share) << " | " << pct(r.cer) << " | " << pct(r.cer - cer32) << " | " << r.same
         << " / " << eval.size() << " |\n";
  }
  report_calibration(p, cer, "48 calibration lines");
  const Config& dflt = p.configs[4];  // the default path (after the four calibrators)
  const double d_default = done[dflt.key].cer - cer32;
  const bool all_int8 = dflt.ranges_missing == 0;
  target_row(
      "PP-OCRv4 rec, default path (`calibrate`, `build --int8`, `run`): CER - FP32, every DLA layer INT8",
      "<= 1.5 points",
      pct(d_default) + ", " + std::to_string(dflt.plan.int8_nodes) + " of " +
          std::to_string(dflt.dla_layers) + " DLA layers INT8",
      d_default <= 0.015 && all_int8);
  EXPECT_LE(d_default, 0.015);
  EXPECT_TRUE(all_int8) << dflt.ranges_missing << " DLA layers lack a range";
  const bool reached = p.search.reached;
  const double d_search = reached ? done["search"].cer - cer32 : 1.0;
  const double share = reached ? config(p, "search").mac_share : 0.0;
  target_row(
      "PP-OCRv4 rec, `compare --fix --metric ctc-cer --truth labels.tsv --fix-confidence 0.95 --fix-target "
      "0.01`: CER - FP32, with "
      ">= 80 % of the DLA's MACs INT8",
      "<= 1.0 point, >= 80 %",
      reached ? pct(d_search) + ", " + pct(share) + " of the MACs INT8" : "target not reached on calibration",
      reached && d_search <= 0.01 && share >= 0.8);
  EXPECT_TRUE(reached);
  EXPECT_LE(d_search, 0.01);
  EXPECT_GE(share, 0.8);
  target_row("PP-OCRv4 rec, FP16: CER within 0.1 point of FP32", "abs(CER - FP32) <= 0.1 point",
             pct(r16.cer - cer32), std::fabs(r16.cer - cer32) <= 0.001);
  EXPECT_LE(std::fabs(r16.cer - cer32), 0.001);
  g_fp16 << "| ppocr_rec | " << out << " | " << fixed(r16.cosine) << " |\n";
}

TEST(Accuracy, ClassifierAgreement) {
  const Model m = load("ppocr_cls", "x:1x3x48x192");
  const auto eval = read_lines(kImages / "ocr_eval"), calib = read_lines(kImages / "ocr_calib");
  std::vector<TensorMap> ev, cal;
  std::vector<int> truth;
  for (auto& l : eval) {
    ev.push_back({{"x", ocr_line_input(l.img, 192)}});
    truth.push_back(0);
    ev.push_back({{"x", ocr_line_input(rotate180(l.img), 192)}});
    truth.push_back(1);
  }
  for (auto& l : calib) {
    cal.push_back({{"x", ocr_line_input(l.img, 192)}});
    cal.push_back({{"x", ocr_line_input(rotate180(l.img), 192)}});
  }
  MetricSpec top1;
  top1.kind = MetricKind::kTop1;
  const Prepared p = prepare(m, cal, top1, "--metric top1", top1, "--metric top1", 0.99, 0.99);
  const std::vector<TensorMap> fp32 = ReferenceEngine(m.g).run_batch(ev);
  const std::string out = fp32[0].begin()->first;
  auto cls = [&](const TensorMap& o) {
    const float* q = o.at(out).data<float>();
    return q[1] > q[0] ? 1 : 0;
  };
  size_t right32 = 0;
  for (size_t i = 0; i < ev.size(); ++i) right32 += cls(fp32[i]) == truth[i];
  struct Result {
    double agree = 0, right = 0, cosine = 0;
  };
  auto measure = [&](const Graph& g, const NumericsPlan& plan) {
    Result r;
    Cosine c;
    run_plan(g, plan, ev, [&](size_t i, const TensorMap& o) {
      r.agree += cls(o) == cls(fp32[i]);
      r.right += cls(o) == truth[i];
      c.add(fp32[i].at(out), o.at(out));
    });
    r.agree /= double(ev.size());
    r.right /= double(ev.size());
    r.cosine = c.value();
    return r;
  };
  const Result r16 = measure(m.g, plan_numerics(m.g, m.fp16, nullptr));
  g_md << "\n## ppocr cls: upright vs 180-degree rotated, " << ev.size() << " crops (" << eval.size()
       << " lines x 2)\n\nCalibration: the 48 calibration lines, upright and rotated (96 crops).\n\n"
       << "| configuration | calibrator | DLA layers in INT8 | INT8 share of DLA MACs | agrees with FP32 | "
          "correct "
          "orientation |\n|---|---|---|---|---|---|\n"
       << "| FP32 (reference) | - | - | - | - | " << pct(double(right32) / double(ev.size())) << " |\n"
       << "| FP16 | - | 0 | - | " << pct(r16.agree) << " | " << pct(r16.right) << " |\n";
  std::map<std::string, Result> done;
  for (const Config& c : p.configs) {
    if (!done.count(c.key)) done[c.key] = measure(c.g, c.plan);
    const Result& r = done[c.key];
    g_md << "| " << c.label << " | " << c.calibrator << " | " << c.plan.int8_nodes << " of " << c.dla_layers
         << " | " << pct(c.mac_share) << " | " << pct(r.agree) << " | " << pct(r.right) << " |\n";
  }
  report_calibration(p, top1, "96 calibration crops");
  const double agree = done[p.configs[4].key].agree;
  target_row("ppocr cls, default path: INT8 agrees with FP32", ">= 99 %",
             pct(agree) + ", " + std::to_string(p.configs[4].plan.int8_nodes) + " of " +
                 std::to_string(p.configs[4].dla_layers) + " DLA layers INT8" +
                 (agree >= 0.99 ? "" : "; guard: >= 98.5 % asserted (98.96 % when it was set)"),
             agree >= 0.99);
  // A regression guard, not the target: after the DLA rewrites (#12) turned cls into one DLA graph with
  // more INT8 layers, the default path measured 98.96 % (475 of 480 crops, 2026-12-04), so the >= 99 %
  // target is reported as not met above; the guard keeps 0.46 points of headroom below that measurement.
  EXPECT_GE(agree, 0.985) << "guard (target 99 % not met since the rewrites)";
  // The issue's --fix bullet, on the default path's cache: the search, and the search with fused groups.
  for (const auto& [key, flags] :
       {std::pair<std::string, std::string>{"search", ""}, {"search-groups", " --fix-return-groups"}}) {
    const double searched = done.at(key).agree;  // measured above: both searches reach 0.99 here
    target_row("ppocr cls, default path + `compare --fix --metric top1 --fix-target 0.99" + flags +
                   "`: INT8 agrees with FP32",
               ">= 99 %", pct(searched) + ", " + pct(config(p, key).mac_share) + " of the MACs INT8",
               searched >= 0.99);
    EXPECT_GE(searched, 0.99) << key;
  }
  target_row("ppocr cls, FP16: agrees with FP32", ">= 99.9 %", pct(r16.agree), r16.agree >= 0.999);
  EXPECT_GE(r16.agree, 0.999);
  g_fp16 << "| ppocr_cls | " << out << " | " << fixed(r16.cosine) << " |\n";
}

TEST(Accuracy, DetectorMaskF1) {
  const Model m = load("ppocr_det", "x:1x3x640x640");
  Preprocess pre;
  pre.width = pre.height = 640;
  pre.mean = {0.485f, 0.456f, 0.406f};
  pre.std = {0.229f, 0.224f, 0.225f};
  std::vector<TensorMap> ev, cal;
  std::vector<std::string> names;
  for (int i = 1; i <= 6; ++i) names.push_back("scenetext0" + std::to_string(i) + ".jpg");
  for (int i = 0; i < 3; ++i) names.push_back("pages_eval/page_" + std::to_string(i) + ".png");
  for (auto& n : names) ev.push_back({{"x", image_to_tensor(load_image((kImages / n).string()), pre)}});
  for (auto n : {"pages_calib/page_0.png", "pages_calib/page_1.png", "pages_calib/page_2.png", "baboon.jpg",
                 "fruits.jpg", "messi5.jpg", "butterfly.jpg", "squirrel_cls.jpg"})
    cal.push_back({{"x", image_to_tensor(load_image((kImages / n).string()), pre)}});
  MetricSpec f1;
  f1.kind = MetricKind::kMaskF1;
  f1.threshold = 0.3f;
  const Prepared p = prepare(m, cal, f1, "--metric mask-f1 --threshold 0.3", f1,
                             "--metric mask-f1 --threshold 0.3", 0.97, 0.97);
  const std::vector<TensorMap> fp32 = ReferenceEngine(m.g).run_batch(ev);
  const std::string out = fp32[0].begin()->first;
  struct Result {
    double f1 = 0, cosine = 0;
  };
  auto measure = [&](const Graph& g, const NumericsPlan& plan) {
    MetricAccumulator a(f1);
    Cosine c;
    run_plan(g, plan, ev, [&](size_t i, const TensorMap& o) {
      a.add(fp32[i], o);
      c.add(fp32[i].at(out), o.at(out));
    });
    return Result{a.value(), c.value()};
  };
  const Result r16 = measure(m.g, plan_numerics(m.g, m.fp16, nullptr));
  g_md << "\n## PP-OCRv4 det: F1 of the p > 0.3 text masks against FP32, " << ev.size()
       << " images (6 opencv-doc scene-text photos, 3 rendered pages)\n\nCalibration: 3 other rendered "
       << "pages and 5 opencv-doc photos without text. Input 1x3x640x640.\n\n"
       << "| configuration | calibrator | DLA layers in INT8 | INT8 share of DLA MACs | mask F1 vs FP32 | "
          "output "
          "cosine |\n|---|---|---|---|---|---|\n"
       << "| FP16 | - | 0 | - | " << fixed(r16.f1, "%.4f") << " | " << fixed(r16.cosine) << " |\n";
  std::map<std::string, Result> done;
  for (const Config& c : p.configs) {
    if (!done.count(c.key)) done[c.key] = measure(c.g, c.plan);
    const Result& r = done[c.key];
    g_md << "| " << c.label << " | " << c.calibrator << " | " << c.plan.int8_nodes << " of " << c.dla_layers
         << " | " << pct(c.mac_share) << " | " << fixed(r.f1, "%.4f") << " | " << fixed(r.cosine) << " |\n";
  }
  report_calibration(p, f1, "8 calibration images");
  const double searched = p.search.reached ? done["search"].f1 : 0.0;
  target_row(
      "PP-OCRv4 det, `compare --fix --metric mask-f1 --threshold 0.3 --fix-target 0.97`: mask F1 vs FP32",
      ">= 0.97",
      p.search.reached
          ? fixed(searched, "%.4f") + ", " + pct(config(p, "search").mac_share) + " of the MACs INT8"
          : "target not reached on calibration",
      searched >= 0.97);
  EXPECT_GE(searched, 0.97);
  // --fix-return-groups gives back the MACs of fused groups the default search keeps in FP16, at the issue's
  // target like the search above. It is not an issue target and not in the targets table: on these images it
  // fits the calibration images and misses on the evaluation images (0.9498 in a one-off run, 2026-12-05,
  // docs/int8.md), which is why it is off by default; its row is in det's table above. (Until 2026-12-08
  // this row searched at 0.99, a value chosen after 0.97 and 0.98 missed on the evaluation images.) The
  // assert checks the step itself: it returns MACs to INT8 (61.50 % at 0.99).
  ASSERT_TRUE(p.search.reached && p.grouped.reached);
  EXPECT_GT(config(p, "search-groups").mac_share, config(p, "search").mac_share);
  target_row("PP-OCRv4 det, FP16: mask F1 vs FP32", ">= 0.999", fixed(r16.f1, "%.4f"), r16.f1 >= 0.999);
  EXPECT_GE(r16.f1, 0.999);
  g_fp16 << "| ppocr_det | " << out << " | " << fixed(r16.cosine) << " |\n";
}

// M-LSD (NHWC RGBA input) normalizes inside its graph (x / 127.5 - 1): it takes pixels 0..255.
static bool raw_input_model(const Graph& g) {
  const Shape& s = g.value(g.inputs[0]).type.shape;
  return s.size() == 4 && s[3] == 4;
}

// FP16 on every other model in .cache/models, on real photos resized to the model's input. There is no
// task metric here; the output cosine is reported, with regression guards at the measured levels (the
// 0.9999-cosine target of issue #4 is retired: FP16 is judged by task metrics).
TEST(Accuracy, Fp16CosineEveryModel) {
  std::vector<fs::path> models;
  for (auto& e : fs::directory_iterator(kModels))
    if (e.path().extension() == ".onnx" && e.path().stem().string().rfind("ppocr_", 0) != 0)
      models.push_back(e.path());
  std::sort(models.begin(), models.end());
  ASSERT_GE(models.size(), 10u);
  const std::vector<Image> photos = {load_image((kImages / "messi5.jpg").string()),
                                     load_image((kImages / "fruits.jpg").string())};
  for (const fs::path& path : models) {
    SCOPED_TRACE(path.stem().string());
    const Model m = load(path.stem().string(), "");
    const Value& in = m.g.value(m.g.inputs[0]);
    const Shape& s = in.type.shape;
    const bool nhwc = s.size() == 4 && (s[3] == 3 || s[3] == 4) && s[1] != 3;
    std::vector<TensorMap> samples;
    for (const Image& img : photos) {
      Preprocess p;
      p.nhwc = nhwc;
      p.height = int(nhwc ? s[1] : s[2]);
      p.width = int(nhwc ? s[2] : s[3]);
      const bool raw_pixels = raw_input_model(m.g);
      if (raw_pixels) {
        p.scale = 1.f;
      } else {  // [-1, 1], what BlazeFace expects; the torchvision models carry random weights
        p.mean = {0.5f, 0.5f, 0.5f};
        p.std = {0.5f, 0.5f, 0.5f};
      }
      Tensor t = image_to_tensor(img, p);
      if (raw_pixels) {  // RGBA input (M-LSD): alpha = 1, as M-LSD's own pred_lines feeds it
        Tensor rgba(DType::kF32, s);
        for (int64_t i = 0; i < t.numel() / 3; ++i) {
          std::copy_n(t.data<float>() + i * 3, 3, rgba.data<float>() + i * 4);
          rgba.data<float>()[i * 4 + 3] = 1.f;
        }
        t = rgba;
      }
      samples.push_back({{in.name, t}});
    }
    ReferenceEngine ref(m.g);
    EmulatedEngine e16(m.g, plan_numerics(m.g, m.fp16, nullptr));
    std::vector<TensorMap> a, b;
    for (auto& x : samples) {
      a.push_back(ref.run(x));
      b.push_back(e16.run(x));
    }
    for (auto& [name, t] : a[0]) {
      if (t.dtype() != DType::kF32) continue;
      Cosine c;
      for (size_t i = 0; i < a.size(); ++i) c.add(a[i].at(name), b[i].at(name));
      const std::string model = path.stem().string();
      g_fp16 << "| " << model << " | " << name << " | " << fixed(c.value()) << " |\n";
      // Regression guards at the measured levels: M-LSD's offsets come through depthwise convolutions whose
      // folded weights (up to 56) cancel (0.99970 measured), its scores keep the center map's peaks
      // (0.99785 on the photos as Pillow decodes them; 0.99952 on stb's slightly different decoding);
      // every other output measures 0.99995 or more.
      const double guard = model != "mlsd_tiny_320" ? 0.9999 : name == "scores" ? 0.997 : 0.999;
      EXPECT_GE(c.value(), guard) << name;
    }
  }
}

class WriteReport : public ::testing::Environment {
 public:
  void TearDown() override {
    std::ofstream f(fs::path(test_paths::binary_dir()) / "accuracy.md");
    f << "# Accuracy of the emulated DLA: INT8 and FP16 against FP32\n\n"
      << "Generated by `tests/accuracy/accuracy_test.cpp`, run by `make test`. INT8 is dlakit's emulation of "
      << "the DLA's INT8 (docs/int8.md): layers the DLA runs in INT8 per the Orin placement, GPU-fallback "
      << "layers in FP32. Each row is exactly the configuration it names, as the dlakit command line in it "
      << "produces it. Everything those commands decide (the calibrator, the weight edits, the layers "
         "`compare "
      << "--fix` keeps in FP16) is decided on the calibration data; the evaluation data is only measured. A "
         "target "
      << "marked yes is asserted; one marked no is reported with the regression guard the test asserts "
         "instead, "
      << "and explained in docs/int8.md.\n"
      << "\n## Issue #13's targets\n\n| check | target | measured | met |\n|---|---|---|---|\n"
      << g_targets.str() << g_md.str() << "\n## FP16: output cosine against FP32\n\n"
      << "Real photos (messi5, fruits from opencv-doc) resized to each model's input; OCR models on their "
      << "evaluation sets above. torchvision models carry random (seeded) weights. No target (FP16 is judged "
         "by "
      << "task metrics above); the test guards each at 0.9999 (M-LSD tiny: offsets 0.999, scores 0.997, "
         "measured on the photos as libjpeg-turbo and Pillow decode them).\n\n"
      << "| model | output | cosine |\n|---|---|---|\n"
      << g_fp16.str();
  }
};
const auto* const kReport = ::testing::AddGlobalTestEnvironment(new WriteReport);
