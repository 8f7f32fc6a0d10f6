// dlakit compare MODEL (--int8 --calib C | --fp16) --data D [--fix [--apply F]] [--html R] [--json]:
// the emulated DLA against the FP32 reference, per layer, and overrides for the layers that cost accuracy.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>

#include <unistd.h>

#include "cli.h"
#include "int8_flags.h"
#include "latency/predict.h"
#include "quant/compare.h"
#include "quant/fix_search.h"
#include "report/compare_html.h"
#include "workflow/compare.h"

namespace dlakit::cli {
namespace {

struct CompareFlags {
  ModelFlags model;
  PlacementFlags placement;
  DataFlags data;
  CalibFlags calib_flags;
  MetricFlags metric;
  TuneFlags tune;
  std::string calib, apply, html;
  bool fix = false, json = false, gpu_int8 = false, return_groups = false;
  int top = 15, fix_rounds = 3, candidates = 32;
  std::optional<double> target;
  double confidence = 0;  // --fix-confidence
};

std::string fmt(double v, const char* f = "%.3g") { return report::format_metric(v, f); }

void print_outputs(const quant::CompareResult& r, const char* label) {
  for (const auto& e : r.outputs)
    std::printf("  %-12s %-32s cosine %.6f  rel L2 %-9s max abs %-9s SQNR %s dB\n", label,
                e.tensor.substr(0, 32).c_str(), e.err.cosine, fmt(e.err.rel_l2).c_str(),
                fmt(e.err.max_abs).c_str(), fmt(e.err.sqnr_db, "%.1f").c_str());
}

void print_layers(const quant::CompareResult& r, int top) {
  std::vector<const quant::LayerError*> v;
  for (const auto& e : r.layers) v.push_back(&e);
  std::stable_sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->own.rel_l2 > b->own.rel_l2; });
  std::printf("\n  layers with the most error of their own (emulated alone on FP32 inputs; median %s):\n",
              fmt(r.median_own).c_str());
  std::printf("    %-36s %-14s %-5s %-10s %-10s %-9s %s\n", "layer", "op", "mode", "own relL2", "e2e relL2",
              "e2e cos", "");
  for (int i = 0; i < top && i < int(v.size()); ++i)
    std::printf("    %-36s %-14s %-5s %-10s %-10s %.6f %s\n", v[size_t(i)]->node.substr(0, 36).c_str(),
                v[size_t(i)]->op.substr(0, 14).c_str(), v[size_t(i)]->mode.c_str(),
                fmt(v[size_t(i)]->own.rel_l2).c_str(), fmt(v[size_t(i)]->err.rel_l2).c_str(),
                v[size_t(i)]->err.cosine, v[size_t(i)]->flagged ? "<- flagged" : "");
}

nlohmann::json search_json(const quant::SearchResult& r) {
  auto point = [](const quant::CurvePoint& c) {
    nlohmann::json j = {{"moves", c.moves},
                        {"int8_layers", c.int8_layers},
                        {"fp16_layers", c.fp16_layers},
                        {"int8_mac_share", c.int8_mac_share},
                        {"metric", c.score.metric},
                        {"metric_bound", c.score.bound},
                        {"output_cosine", c.score.cosine},
                        {"meets", c.meets},
                        {"returned_to_int8", c.returned}};
    if (!c.returned_layer.empty()) j["returned_layer"] = c.returned_layer;
    j["predicted_latency_ms"] =
        std::isnan(c.predicted_latency_ms) ? nlohmann::json(nullptr) : nlohmann::json(c.predicted_latency_ms);
    return j;
  };
  const bool fp16_measured = !r.curve.empty() && r.curve.back().moves < 0;
  nlohmann::json j = {
      {"all_int8", r.all_int8.metric},
      {"all_fp16", fp16_measured ? nlohmann::json(r.all_fp16.metric) : nlohmann::json(nullptr)},
      {"reachable", r.reachable},
      {"reached", r.reached},
      {"evaluations", r.evaluations},
      {"sensitivity_samples", r.sensitivity_samples},
      {"sensitivity_base_metric", r.sensitivity_base.metric}};
  j["curve"] = nlohmann::json::array();
  for (const auto& c : r.curve) j["curve"].push_back(point(c));
  j["chosen"] = r.chosen >= 0 ? point(r.curve[size_t(r.chosen)]) : nlohmann::json(nullptr);
  j["ranking"] = nlohmann::json::array();
  for (const auto& l : r.ranking) {
    nlohmann::json e = {{"layer", l.layer}, {"op", l.op}, {"own_rel_l2", l.own_rel_l2}};
    if (l.measured) e["alone_metric"] = l.alone.metric;
    j["ranking"].push_back(e);
  }
  return j;
}

// "all FP16", "27" (the 27 leading layers of the ranking moved), "27-3" (3 of them returned to INT8).
std::string moved_label(const quant::CurvePoint& c) {
  if (c.moves < 0) return "all FP16";
  return std::to_string(c.moves) + (c.returned > 0 ? "-" + std::to_string(c.returned) : "");
}

void print_search(const quant::SearchResult& r, const quant::MetricSpec& metric, double target) {
  std::printf("\n  --fix --fix-target %g (%s", target, quant::metric_name(metric.kind));
  if (metric.confidence > 0)
    std::printf(", judged on its %g %% bound over the samples drawn again", 100 * metric.confidence);
  std::printf("): all INT8 %s", quant::format_score(metric, r.all_int8).c_str());
  if (r.reached && r.chosen == 0) {
    std::printf(": meets the target, nothing to move\n");
    return;
  }
  std::printf(", all FP16 %s\n", quant::format_score(metric, r.all_fp16).c_str());
  if (!r.reachable) {
    std::printf(
        "  all FP16 on the DLA misses the target too: no FP16 set reaches it on this data (move layers "
        "to the GPU with --layerDeviceTypes, or relax the target)\n");
    return;
  }
  int measured = 0;
  for (const auto& l : r.ranking) measured += l.measured;
  if (measured > 0) {
    std::printf(
        "  sensitivity: %d of %zu INT8 layers measured alone in FP16 on the first %zu samples (all INT8 "
        "there: "
        "%s, output cosine %.8f); the first in the ranking:\n",
        measured, r.ranking.size(), r.sensitivity_samples,
        quant::format_metric_value(metric, r.sensitivity_base.metric).c_str(), r.sensitivity_base.cosine);
    std::printf("    %-4s %-36s %-14s %-10s %-28s %s\n", "rank", "layer", "op", "own relL2",
                "metric moved alone", "output cosine");
    for (size_t i = 0; i < r.ranking.size() && i < 10; ++i) {
      const auto& l = r.ranking[i];
      std::printf("    %-4zu %-36s %-14s %-10s %-28s %s\n", i + 1, l.layer.substr(0, 36).c_str(),
                  l.op.substr(0, 14).c_str(), fmt(l.own_rel_l2).c_str(),
                  l.measured ? quant::format_metric_value(metric, l.alone.metric).c_str() : "-",
                  l.measured ? fmt(l.alone.cosine, "%.8f").c_str() : "-");
    }
  }
  bool latency = false;
  for (const auto& c : r.curve) latency = latency || !std::isnan(c.predicted_latency_ms);
  std::printf(
      "  measured points (layers moved to FP16 in ranking order; K-R: R of the K returned to INT8, most "
      "MACs first):\n    %-9s %-12s %-12s %-10s %-28s "
      "%-14s%s\n",
      "moved", "FP16 layers", "INT8 layers", "INT8 MACs", metric.confidence > 0 ? "metric (bound)" : "metric",
      "output cosine", latency ? " predicted latency" : "");
  for (size_t i = 0; i < r.curve.size(); ++i) {
    const auto& c = r.curve[i];
    std::printf("    %-9s %-12d %-12d %-10s %-28s %-14.6f", moved_label(c).c_str(), c.fp16_layers,
                c.int8_layers, fmt(100 * c.int8_mac_share, "%.1f %%").c_str(),
                quant::format_score(metric, c.score).c_str(), c.score.cosine);
    if (latency) std::printf(" %s", fmt(c.predicted_latency_ms, "%.3f ms").c_str());
    std::printf("%s\n", int(i) == r.chosen ? "  <- chosen" : "");
  }
  if (!r.reached) std::printf("  moving every ranked layer still misses the target: nothing chosen\n");
}

void run_compare(const CompareFlags& f) {
  f.model.apply_threads();
  if (f.placement.int8 == f.placement.fp16)
    fail(Status::kInvalidArgument, "choose what to compare against FP32: --int8 (with --calib) or --fp16");
  if (f.target && !f.fix)
    fail(Status::kInvalidArgument, "--fix-target searches for layers to move: add --fix");
  if (f.confidence != 0 && !f.target)
    fail(Status::kInvalidArgument, "--fix-confidence judges --fix-target's search: add --fix --fix-target");
  if (!(f.confidence >= 0 && f.confidence < 1))
    fail(Status::kInvalidArgument, "--fix-confidence ", f.confidence,
         ": a confidence between 0 and 1, e.g. 0.95 (0: judge the metric's value itself)");
  if (f.target && !f.placement.int8)
    fail(Status::kInvalidArgument,
         "--fix --fix-target searches INT8 layers to keep in FP16: use it with --int8");
  if (f.tune.any() && !f.placement.int8)
    fail(Status::kInvalidArgument,
         "--bias-correction and --weight-rounding tune INT8 layers: use them with --int8");
  PlacedModel pm = load_and_place(f.model, f.placement);
  std::vector<std::string> sources;
  const std::vector<TensorMap> samples = f.data.load(pm.graph, &sources);
  const quant::MetricSpec metric = f.metric.spec(pm.graph, samples, f.json, sources);
  quant::MetricSpec search_metric = metric;  // the search judges points on the bound, if asked
  search_metric.confidence = f.confidence;
  quant::ScaleTable scales = int8_scales(pm, f.calib);
  std::optional<Calibration> calibrated;
  if (f.placement.int8 && scales.scales.empty()) {  // calibrate on the data, as `dlakit calibrate` would
    calibrated = calibrate_samples(pm.graph, pm.placement, samples, f.calib_flags, metric);
    scales = calibrated->table;
  }
  apply_tuning(pm.graph, pm.placement, scales, samples, f.tune, f.json);
  quant::NumericsOptions no;
  no.gpu_int8 = f.gpu_int8;
  const std::string what = f.placement.int8 ? "INT8" : "FP16";
  std::optional<quant::SearchResult> search;
  std::optional<quant::AutoFix> rounds;
  if (f.target) {
    quant::SearchOptions so;
    so.metric = search_metric;
    so.target = *f.target;
    so.candidates = f.candidates;
    so.return_groups = f.return_groups;
    // The curve's latency column: the latency model's prediction for each candidate placement (MAXN).
    so.predict_latency = [&](const Placement& p, const quant::NumericsPlan&) {
      return latency::predict_latency(pm.graph, p, {}).total_ms;
    };
    const bool tty = isatty(2);
    search = quant::search_fix(pm.graph, f.placement.options(), &scales, no, samples, so,
                               [tty](const std::string& line) {
                                 if (tty) std::fprintf(stderr, "  [search] %s\n", line.c_str());
                               });
  } else {
    // --fix: compare, move flagged layers to FP16 / the GPU, re-place, re-measure (up to --fix-rounds).
    rounds = quant::auto_fix(pm.graph, f.placement.options(), &scales, no, samples, f.fix ? f.fix_rounds : 0,
                             progress_bar("comparing"), metric);
  }
  const quant::NumericsPlan& plan = search ? search->plan : rounds->plan;
  const quant::CompareResult& before = search ? search->before : rounds->before;
  const quant::Fix& fix = search ? search->applied : rounds->applied;
  std::optional<quant::CompareResult> after;
  if (!fix.empty())
    after = search ? quant::compare_numerics(pm.graph, plan, samples, {}, metric) : rounds->after;
  if (f.fix && !f.apply.empty()) {
    nlohmann::json j = {{"layerPrecisions", fix.layer_precisions}, {"layerDeviceTypes", fix.layer_devices}};
    write_file(f.apply, j.dump(2) + "\n");
  }
  if (!f.html.empty()) {
    write_file(f.html, report::compare_html("dlakit compare: " + f.model.model + " (" + what + " vs FP32)",
                                            before, after ? &*after : nullptr, f.fix ? &fix : nullptr));
  }
  if (f.json) {
    nlohmann::json j;
    j["model"] = f.model.model;
    j["precision"] = what;
    j["metric"] = quant::metric_name(metric.kind);
    if (calibrated) {
      j["calibrated_with"] = calibrated->chosen;
      j["calibrators"] = candidates_json(*calibrated);
    }
    if (rounds) {
      j["fix_rounds"] = rounds->rounds;
      j["fix_undone"] = rounds->undone;
    }
    if (search) {
      j["search"] = search_json(*search);
      j["search"]["confidence"] = f.confidence;
    }
    j["int8_layers"] = plan.int8_nodes;
    j["fp16_layers"] = plan.fp16_nodes;
    j["fp32_layers"] = plan.fp32_nodes;
    j["before"] = workflow::compare_result_json(before);
    j["before"]["metric"] = before.score.metric;
    if (f.fix)
      j["fix"] = {{"layerPrecisions", fix.layer_precisions}, {"layerDeviceTypes", fix.layer_devices}};
    if (after) {
      j["after"] = workflow::compare_result_json(*after);
      j["after"]["metric"] = after->score.metric;
    }
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << "dlakit compare: " << f.model.model << ", emulated DLA " << what << " vs FP32 reference, "
            << before.samples << " samples\n";
  if (calibrated) {
    std::cout << "  no --calib given: calibrated on these samples with " << calibrated->chosen << "\n";
    print_candidates(*calibrated, metric);
  }
  std::cout << "  layers" << (!fix.empty() ? " after --fix" : "") << ": " << plan.int8_nodes << " int8, "
            << plan.fp16_nodes << " fp16, " << plan.fp32_nodes << " fp32 (GPU or non-float)\n"
            << "  " << quant::format_metric_value(metric, before.score.metric) << " "
            << quant::metric_reference(metric) << "\n\n";
  print_outputs(before, "before");
  print_layers(before, f.top);
  if (search) print_search(*search, search_metric, *f.target);
  if (rounds && f.fix) {
    for (const std::string& u : rounds->undone) std::cout << "\n  --fix " << u;
    if (!rounds->undone.empty()) std::cout << "\n";
    if (fix.empty() && !rounds->undone.empty())
      std::cout << "\n  --fix: every proposed move made the metric worse on this data; nothing kept\n";
    else if (fix.empty())
      std::cout << "\n  --fix: no layer's own error stands out (>= 10x the median and >= 0.01); nothing to "
                   "change (--fix-target VALUE searches for the layers that reach an accuracy)\n";
  }
  if (f.fix && !fix.empty()) {
    std::cout << "\n  --fix moved:\n";
    for (auto& l : fix.lines) std::cout << "    " << l << "\n";
    std::cout << "  as trtexec flags:";
    if (!fix.layer_precisions.empty()) std::cout << " --layerPrecisions=" << fix.layer_precisions;
    if (!fix.layer_devices.empty()) std::cout << " --layerDeviceTypes=" << fix.layer_devices;
    std::cout << "\n\n  before and after the fix:\n";
    print_outputs(before, "before");
    print_outputs(*after, "after --fix");
    std::cout << "  " << quant::format_metric_value(metric, before.score.metric) << " -> "
              << quant::format_metric_value(metric, after->score.metric) << "\n";
  }
  if (f.fix && !f.apply.empty())
    std::cout << "  wrote " << f.apply << " (use it with --overrides " << f.apply
              << " on build/inspect/compare)\n";
  if (!f.html.empty()) std::cout << "  report: " << f.html << "\n";
}

}  // namespace

void register_compare(CLI::App& app) {
  auto f = std::make_shared<CompareFlags>();
  CLI::App* sub = app.add_subcommand(
      "compare",
      "Run the FP32 reference and the emulated DLA (--int8 --calib C, or --fp16) on the same --data;\n"
      "per-layer cosine / relative L2 / max abs / SQNR, the layers whose error jumps, and --fix overrides");
  f->model.add(*sub);
  f->placement.add(*sub);
  f->data.add(*sub);
  sub->add_option("--calib", f->calib,
                  "Calibration cache (TensorRT text format) for --int8; without one (and no Q/DQ), --int8 "
                  "calibrates on --data with --calib-algo");
  f->calib_flags.add(*sub, false);
  f->metric.add(*sub);
  f->tune.add(*sub);
  sub->add_flag("--fix", f->fix,
                "Propose overrides (FP16 or GPU) for flagged layers and re-measure; a round that makes the "
                "metric worse is undone. With --fix-target: search for the layers to keep in FP16");
  sub->add_option("--fix-rounds", f->fix_rounds, "Fix, re-place and re-measure at most N times (default 3)")
      ->check(CLI::Range(1, 100));
  sub->add_option("--fix-target", f->target,
                  "With --fix: find a small set of INT8 layers to keep in FP16 so that --metric on --data "
                  "reaches this (e.g. --metric ctc-cer --fix-target 0.01, --metric cosine --fix-target 0.99; "
                  "--target names the DLA chip): layers "
                  "ranked by measured sensitivity, the count bisected; prints the curve of FP16 layers "
                  "versus the metric");
  sub->add_option("--fix-confidence", f->confidence,
                  "With --fix-target: a point meets the target only when the metric's pessimistic bound at "
                  "this confidence does (e.g. 0.95: the 5th percentile of the metric, the 95th for ctc-cer, "
                  "over 2000 draws of the samples with replacement). A few dozen samples measure the metric "
                  "with noise other data does not share; the bound keeps a margin for it. Default 0: the "
                  "metric's value on the samples");
  sub->add_option("--fix-candidates", f->candidates,
                  "With --fix-target: how many layers are measured moved alone, half with the largest own "
                  "error, half nearest the outputs (default 32; 0: every INT8 layer)");
  sub->add_flag("--fix-return-groups", f->return_groups,
                "With --fix-target: after returning single layers to INT8, return fused groups too (a layer "
                "with the moved layers that pull it back to FP16), the longest prefix that still meets, most "
                "MACs first. Off by default: it fits the data given more closely, and on PP-OCRv4 det it "
                "met the target on the calibration images but not on others (docs/int8.md)");
  sub->add_option("--apply", f->apply, "With --fix: write the overrides as JSON for --overrides");
  sub->add_option("--html", f->html, "Write a self-contained HTML report with charts");
  sub->add_flag("--gpu-int8", f->gpu_int8, "GPU-fallback layers run INT8 (half-to-even) instead of FP32");
  sub->add_option("--top", f->top, "How many layers to list (default 15)")->check(CLI::Range(0, 1000 * 1000));
  sub->add_flag("--json", f->json, "Print JSON");
  sub->callback([f] { run_compare(*f); });
}

}  // namespace dlakit::cli
