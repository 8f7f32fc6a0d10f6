// dlakit build --onnx=M --saveEngine=out.dla: a DLA loadable with trtexec's flag names and meanings.
#include <iostream>
#include <memory>

#include "cli.h"
#include "int8_flags.h"
#include "loadable/loadable.h"
#include "loadable/plan.h"
#include "loadable/plan_executor.h"
#include "program/format.h"
#include "program/print.h"
#include "targets/dla/limits.h"
#include "workflow/build.h"

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
  std::vector<std::string> sources;
  const std::vector<TensorMap> samples = f.data.load(pm.graph, &sources);
  const quant::MetricSpec metric = f.metric.spec(pm.graph, samples, false, sources);
  const quant::Score* known = nullptr;
  Calibration c;
  if (scales.scales.empty()) {
    c = calibrate_samples(pm.graph, pm.placement, samples, f.calib_flags, metric);
    scales = c.table;
    known = &c.score;
    std::cout << "calibrated on " << c.samples << " samples of --data with " << c.chosen << "\n";
    print_candidates(c, metric);
  }
  const quant::Int8Check check = quant::check_int8(
      pm.graph, quant::plan_numerics(pm.graph, pm.placement, &scales), samples, metric, known);
  std::cout << "  " << quant::describe(check) << "\n" << std::flush;
  warn_if_collapsed(check, fix_command(f.model, f.data, f.metric, metric, f.calib));
  return scales;
}

void run_build(BuildFlags& f) {
  if (f.placement.fallback && f.placement.standalone)
    fail(Status::kInvalidArgument,
         "--allowGPUFallback and --buildDLAStandalone contradict each other (trtexec forbids it too)");
  // Without --allowGPUFallback a loadable is one DLA graph: trtexec --buildDLAStandalone semantics.
  if (!f.placement.fallback) f.placement.standalone = true;
  const PlacedModel pm = load_and_place(f.model, f.placement);
  const Placement& p = pm.placement;
  quant::ScaleTable scales;  // --calib without --int8 is ignored
  if (f.placement.int8) scales = build_scales(f, pm);
  workflow::BuildOptions o;
  o.int8 = f.placement.int8;
  o.calib = f.placement.int8 ? &scales : nullptr;
  o.input_formats = f.input_formats;
  o.output_formats = f.output_formats;
  o.mem_pool_sizes = f.mem_pool;
  const workflow::BuiltEngine e = workflow::build_engine(pm, o);
  write_file(f.save, e.bytes);
  const auto* data = reinterpret_cast<const uint8_t*>(e.bytes.data());
  if (e.is_plan) {
    rt::PlanExecutor check(data, e.bytes.size());  // verify what we wrote
    std::cout << "built hybrid plan " << f.save << ": " << e.bytes.size() << " bytes, "
              << check.dla_segments() << " DLA loadable(s) + " << check.gpu_segments() << " GPU segment(s), "
              << p.transitions << " DLA<->GPU transition(s)\n"
              << "  " << p.recommendation << "\n";
    if (f.placement.int8)
      std::cout << "  INT8: " << e.int8_layers
                << " DLA layer(s) in INT8 (the others FP16); GPU segments run FP32\n";
    return;
  }
  const prog::Program l = prog::deserialize(data, e.bytes.size(), f.save);  // verify what we wrote
  std::cout << "built " << f.save << ": " << e.bytes.size() << " bytes\n  " << prog::summary(l);
  if (l.int8)
    std::cout << "  INT8: " << e.numerics.int8_nodes << " layers in INT8, " << e.numerics.fp16_nodes
              << " in FP16 (`dlakit info " << f.save << " --dump program` shows each layer's numerics)\n";
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
                  "INT8 calibration cache (TensorRT format, from `dlakit calibrate` or trtexec); a Q/DQ "
                  "model brings its own scales");
  f->data.add(*sub, false);
  f->calib_flags.add(*sub, false);
  f->metric.add(*sub);
  sub->add_option(
      "--memPoolSize", f->mem_pool,
      "DLA memory pool budgets, trtexec's meaning: dlaSRAM:N,dlaLocalDRAM:N,dlaGlobalDRAM:N in MiB "
      "(or with a K/M/G/B suffix; powers of two >= 4 KiB; defaults 1 MiB, 1024 MiB, 512 MiB). "
      "Intermediate tensors go to SRAM while it lasts, then to local DRAM; weights to global DRAM");
  sub->callback([f] { run_build(*f); });
}

}  // namespace dlakit::cli
