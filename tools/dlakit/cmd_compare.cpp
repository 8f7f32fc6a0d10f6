// dlakit compare MODEL (--int8 --calib C | --fp16) --data D [--fix [--apply F]] [--html R] [--json]:
// the emulated DLA against the FP32 reference, per layer, and overrides for the layers that cost accuracy.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "cli.h"
#include "quant/compare.h"
#include "report/compare_html.h"
#include "workflow/compare.h"

namespace dlakit::cli {
namespace {

struct CompareFlags {
  ModelFlags model;
  PlacementFlags placement;
  DataFlags data;
  std::string calib, apply, html;
  bool fix = false, json = false, gpu_int8 = false;
  int top = 15, fix_rounds = 3;
  double fix_target = 0;
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

void run_compare(const CompareFlags& f) {
  f.model.apply_threads();
  if (f.placement.int8 == f.placement.fp16)
    fail(Status::kInvalidArgument, "choose what to compare against FP32: --int8 (with --calib) or --fp16");
  const PlacedModel pm = load_and_place(f.model, f.placement);
  quant::ScaleTable calib;
  if (!f.calib.empty()) calib = quant::read_calib_cache(f.calib);
  workflow::CompareOptions o;
  o.int8 = f.placement.int8;
  o.calib = f.calib.empty() ? nullptr : &calib;
  o.gpu_int8 = f.gpu_int8;
  o.fix = f.fix;
  o.fix_rounds = f.fix_rounds;
  o.fix_target = f.fix_target;
  workflow::compare_scales(pm, o);  // fails before the data is read when INT8 has no ranges
  const std::vector<TensorMap> samples = f.data.load(pm.graph);
  const std::string what = f.placement.int8 ? "INT8" : "FP16";
  const quant::AutoFix a = workflow::compare(pm, samples, o, progress_bar("comparing"));
  const quant::NumericsPlan& plan = a.plan;
  const quant::CompareResult& before = a.before;
  const quant::Fix& fix = a.applied;
  std::optional<quant::CompareResult> after;
  if (!fix.empty()) after = a.after;
  if (f.fix && !f.apply.empty()) {
    nlohmann::json j = {{"layerPrecisions", fix.layer_precisions}, {"layerDeviceTypes", fix.layer_devices}};
    std::ofstream out(f.apply);
    out << j.dump(2) << "\n";
    if (!out) fail(Status::kIoError, "cannot write '", f.apply, "'");
  }
  if (!f.html.empty()) {
    std::ofstream out(f.html);
    out << report::compare_html("dlakit compare: " + f.model.model + " (" + what + " vs FP32)", before,
                                after ? &*after : nullptr, f.fix ? &fix : nullptr);
    if (!out) fail(Status::kIoError, "cannot write '", f.html, "'");
  }
  if (f.json) {
    std::cout << workflow::compare_json(f.model.model, o, a).dump(2) << "\n";
    return;
  }
  std::cout << "dlakit compare: " << f.model.model << ", emulated DLA " << what << " vs FP32 reference, "
            << before.samples << " samples\n  layers" << (!fix.empty() ? " after --fix" : "") << ": "
            << plan.int8_nodes << " int8, " << plan.fp16_nodes << " fp16, " << plan.fp32_nodes
            << " fp32 (GPU or non-float)\n\n";
  print_outputs(before, "before");
  print_layers(before, f.top);
  if (f.fix) {
    for (const std::string& u : a.undone) std::cout << "\n  --fix " << u;
    if (!a.undone.empty()) std::cout << "\n";
    if (fix.empty() && !a.undone.empty()) {
      std::cout << "\n  --fix: every proposed move lowered the output cosine on this data; nothing kept\n";
    } else if (fix.empty()) {
      std::cout << "\n  --fix: no layer's own error stands out (>= 10x the median and >= 0.01); nothing to "
                   "change\n";
    } else {
      std::cout << "\n  --fix (" << a.rounds << " round(s)) moved:\n";
      for (auto& l : fix.lines) std::cout << "    " << l << "\n";
      std::cout << "  as trtexec flags:";
      if (!fix.layer_precisions.empty()) std::cout << " --layerPrecisions=" << fix.layer_precisions;
      if (!fix.layer_devices.empty()) std::cout << " --layerDeviceTypes=" << fix.layer_devices;
      std::cout << "\n\n  before and after the fix:\n";
      print_outputs(before, "before");
      print_outputs(*after, "after --fix");
    }
    if (!f.apply.empty())
      std::cout << "  wrote " << f.apply << " (use it with --overrides " << f.apply
                << " on build/inspect/compare)\n";
  }
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
  sub->add_option("--calib", f->calib, "Calibration cache (TensorRT text format) for --int8");
  sub->add_flag("--fix", f->fix,
                "Propose overrides (FP16 or GPU) for flagged layers and re-measure; a round that lowers the "
                "output cosine is undone");
  sub->add_option("--fix-rounds", f->fix_rounds, "Fix, re-place and re-measure at most N times (default 3)");
  sub->add_option("--fix-target", f->fix_target,
                  "With --fix: keep moving the INT8 layers with the largest own error (5% per round) "
                  "until the mean output cosine reaches this, e.g. 0.99");
  sub->add_option("--apply", f->apply, "With --fix: write the overrides as JSON for --overrides");
  sub->add_option("--html", f->html, "Write a self-contained HTML report with charts");
  sub->add_flag("--gpu-int8", f->gpu_int8, "GPU-fallback layers run INT8 (half-to-even) instead of FP32");
  sub->add_option("--top", f->top, "How many layers to list (default 15)");
  sub->add_flag("--json", f->json, "Print JSON");
  sub->callback([f] { run_compare(*f); });
}

}  // namespace dlakit::cli
