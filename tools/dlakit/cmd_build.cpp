// dlakit build --onnx=M --saveEngine=out.dla: a DLA loadable with trtexec's flag names and meanings.
#include <fstream>
#include <iostream>
#include <memory>

#include "cli.h"
#include "int8_flags.h"
#include "loadable/loadable.h"
#include "loadable/plan.h"
#include "runtime/plan_executor.h"
#include "targets/dla/limits.h"

namespace dlakit::cli {
namespace {

struct BuildFlags {
  ModelFlags model;
  PlacementFlags placement;
  DataFlags data;  // optional: calibrate on it (without --calib) and measure INT8 against FP32 on it
  CalibFlags calib_flags;
  MetricFlags metric;
  std::string save, input_formats, output_formats, calib, mem_pool;
};

// The INT8 scales: the Q/DQ model's, then the calibration cache's (fitted to the network), or a
// calibration on --data. With --data, INT8 is measured against FP32 on it and a collapse is a warning.
quant::ScaleTable build_scales(const BuildFlags& f, const PlacedModel& pm) {
  quant::ScaleTable scales = int8_scales(pm, f.calib);
  if (scales.scales.empty() && f.data.data.empty())
    fail(Status::kInvalidArgument,
         "--int8 needs ranges: --calib CACHE (from `dlakit calibrate` or TensorRT), --data to calibrate on, "
         "or a Q/DQ model");
  if (f.data.data.empty()) return scales;
  const std::vector<TensorMap> samples = f.data.load(pm.graph);
  const quant::MetricSpec metric = f.metric.spec(pm.graph, samples, false);
  const quant::Score* known = nullptr;
  Calibration c;
  if (scales.scales.empty()) {
    c = calibrate_samples(pm.graph, pm.placement, samples, f.calib_flags, metric);
    scales = c.table;
    known = &c.score;
    std::cout << "calibrated on " << c.samples << " samples of --data with " << c.chosen << "\n";
    print_candidates(c, metric.kind);
  }
  const quant::Int8Check check = quant::check_int8(
      pm.graph, quant::plan_numerics(pm.graph, pm.placement, &scales), samples, metric, known);
  std::cout << "  " << quant::describe(check) << "\n" << std::flush;
  warn_if_collapsed(check, fix_command(f.model, f.data, f.metric, metric, f.calib));
  return scales;
}

void build_plan(const BuildFlags& f) {
  const PlacedModel pm = load_and_place(f.model, f.placement);
  const Graph& g = pm.graph;
  const Placement& p = pm.placement;
  quant::ScaleTable scales;
  if (f.placement.int8) scales = build_scales(f, pm);
  int int8_layers = 0;
  const std::string bytes = write_plan(g, p, f.placement.int8 ? &scales : nullptr, &int8_layers);
  std::ofstream out(f.save, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) fail(Status::kIoError, "cannot write '", f.save, "'");
  rt::PlanExecutor check(reinterpret_cast<const uint8_t*>(bytes.data()),
                         bytes.size());  // verify what we wrote
  std::cout << "built hybrid plan " << f.save << ": " << bytes.size() << " bytes, " << check.dla_segments()
            << " DLA loadable(s) + " << check.gpu_segments() << " GPU segment(s), " << p.transitions
            << " DLA<->GPU transition(s)\n"
            << "  " << p.recommendation << "\n";
  if (f.placement.int8)
    std::cout << "  INT8: " << int8_layers
              << " DLA layer(s) in INT8 (the others FP16); GPU segments run FP32\n";
}

void run_build(BuildFlags& f) {
  if (f.placement.fallback && f.placement.standalone)
    fail(Status::kInvalidArgument,
         "--allowGPUFallback and --buildDLAStandalone contradict each other (trtexec forbids it too)");
  if (f.placement.fallback) return build_plan(f);
  f.placement.standalone = true;  // a loadable is one DLA graph: trtexec --buildDLAStandalone semantics
  const PlacedModel pm = load_and_place(f.model, f.placement);
  const Graph& g = pm.graph;
  const Placement& p = pm.placement;
  quant::ScaleTable scales;
  quant::NumericsPlan plan;
  if (f.placement.int8) {
    scales = build_scales(f, pm);
    plan = quant::plan_numerics(g, p, &scales);
  }
  LoadableOptions o;
  o.int8 = f.placement.int8;
  o.plan = f.placement.int8 ? &plan : nullptr;
  o.target = f.placement.target;
  o.dla_core = f.placement.dla_core;
  o.inputs = rt::parse_io_formats(f.input_formats, g.inputs.size(), true);
  o.outputs = rt::parse_io_formats(f.output_formats, g.outputs.size(), false);
  const std::string bytes = write_loadable(g, o);
  std::ofstream out(f.save, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) fail(Status::kIoError, "cannot write '", f.save, "'");
  const Loadable l = read_loadable(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                                   f.save);  // verify what we wrote
  std::cout << "built " << f.save << ": " << bytes.size() << " bytes, target " << l.target << " (DLA "
            << l.dla_version << "), " << (l.int8 ? "INT8" : "FP16") << ", " << l.layers << " layers, "
            << human(double(l.macs)) << " MACs, " << l.weight_bytes << " bytes of weights\n";
  if (l.int8)
    std::cout << "  INT8: " << plan.int8_nodes << " layers in INT8, " << plan.fp16_nodes << " in FP16, "
              << l.scales.scales.size() << " activation scales, " << l.scales.weight_scales.size()
              << " int8 weights with per-channel scales\n";
  for (const auto* list : {&l.inputs, &l.outputs})
    for (const auto& d : *list)
      std::cout << (list == &l.inputs ? "  input  " : "  output ") << d.name << "  "
                << rt::io_format_name(d.format) << "  n" << d.n << " c" << d.c << " h" << d.h << " w" << d.w
                << "  " << d.size << " bytes, line stride " << d.stride[1] << "\n";
}

}  // namespace

void register_build(CLI::App& app) {
  auto f = std::make_shared<BuildFlags>();
  CLI::App* sub = app.add_subcommand(
      "build",
      "Build an FP16 or INT8 (--int8 --calib C) DLA loadable (standalone, default) "
      "or a hybrid plan (--allowGPUFallback; INT8 DLA segments with --int8) from ONNX, with "
      "trtexec's flags");
  sub->add_option("--onnx", f->model.model, "ONNX model")->required()->check(CLI::ExistingFile);
  sub->add_option("--input-shape,--shapes", f->model.input_shape, "Pin input shapes: name:1x3x224x224[,...]");
  f->placement.add(*sub);
  sub->add_option("--saveEngine", f->save, "Where to write the loadable (.dla)")->required();
  sub->add_option(
      "--inputIOFormats", f->input_formats,
      "type:format per input, e.g. fp16:chw16 (default), fp16:dla_linear, fp16:dla_hwc4, "
      "int8:chw32, int8:dla_linear, int8:dla_hwc4 (int8 needs --int8; scale = the tensor's range)");
  sub->add_option("--outputIOFormats", f->output_formats,
                  "type:format per output, e.g. fp16:chw16 (default), fp16:dla_linear, int8:chw32, "
                  "int8:dla_linear");
  sub->add_option("--calib", f->calib,
                  "INT8 calibration cache (TensorRT format, from `dlakit calibrate` or trtexec); names that "
                  "dlakit's passes fold away are ignored, as TensorRT's fusions ignore them; a Q/DQ model "
                  "brings its own scales");
  f->data.add(*sub, false);
  f->calib_flags.add(*sub, false);
  f->metric.add(*sub);
  sub->add_option("--memPoolSize", f->mem_pool,
                  "e.g. dlaSRAM:1 (accepted for trtexec compatibility; the emulator has no pools)");
  sub->callback([f] { run_build(*f); });
}

}  // namespace dlakit::cli
