// dlakit build --onnx=M --saveEngine=out.dla: a DLA loadable with trtexec's flag names and meanings.
#include <fstream>
#include <iostream>
#include <memory>

#include "cli.h"
#include "loadable/loadable.h"
#include "loadable/plan.h"
#include "program/format.h"
#include "program/print.h"
#include "loadable/plan_executor.h"
#include "targets/dla/limits.h"

namespace dlakit::cli {
namespace {

struct BuildFlags {
  ModelFlags model;
  PlacementFlags placement;
  std::string save, input_formats, output_formats, calib, mem_pool;
};

// The INT8 scales: the Q/DQ model's, then the calibration cache's (which wins).
quant::ScaleTable int8_scales(const BuildFlags& f, const quant::ScaleTable& qdq_scales) {
  quant::ScaleTable scales = qdq_scales;
  if (!f.calib.empty())
    for (auto& [n, s] : quant::read_calib_cache(f.calib).scales) scales.set_scale(n, s);
  if (scales.scales.empty())
    fail(Status::kInvalidArgument,
         "--int8 needs --calib CACHE (from `dlakit calibrate` or TensorRT) or a "
         "Q/DQ model");
  return scales;
}

void build_plan(const BuildFlags& f) {
  const auto [g, p, qdq_scales, is_qdq] = load_and_place(f.model, f.placement);
  quant::ScaleTable scales;
  if (f.placement.int8) scales = int8_scales(f, qdq_scales);
  int int8_layers = 0;
  const std::string bytes = write_plan(g, p, f.placement.int8 ? &scales : nullptr, &int8_layers,
                                       compiler::parse_mem_pool_sizes(f.mem_pool));
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
  const auto [g, p, qdq_scales, is_qdq] = load_and_place(f.model, f.placement);
  quant::ScaleTable scales;
  quant::NumericsPlan plan;
  if (f.placement.int8) {
    scales = int8_scales(f, qdq_scales);
    plan = quant::plan_numerics(g, p, &scales);
  }
  LoadableOptions o;
  o.int8 = f.placement.int8;
  o.plan = f.placement.int8 ? &plan : nullptr;
  o.target = f.placement.target;
  o.dla_core = f.placement.dla_core;
  o.inputs = rt::parse_io_formats(f.input_formats, g.inputs.size(), true);
  o.outputs = rt::parse_io_formats(f.output_formats, g.outputs.size(), false);
  o.pools = compiler::parse_mem_pool_sizes(f.mem_pool);
  const std::string bytes = write_loadable(g, o);
  std::ofstream out(f.save, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) fail(Status::kIoError, "cannot write '", f.save, "'");
  const prog::Program l = prog::deserialize(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                                            f.save);  // verify what we wrote
  std::cout << "built " << f.save << ": " << bytes.size() << " bytes\n  " << prog::summary(l);
  if (l.int8)
    std::cout << "  INT8: " << plan.int8_nodes << " layers in INT8, " << plan.fp16_nodes
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
  sub->add_option(
      "--memPoolSize", f->mem_pool,
      "DLA memory pool budgets, trtexec's meaning: dlaSRAM:N,dlaLocalDRAM:N,dlaGlobalDRAM:N in MiB "
      "(or with a K/M/G/B suffix; powers of two >= 4 KiB; defaults 1 MiB, 1024 MiB, 512 MiB). "
      "Intermediate tensors go to SRAM while it lasts, then to local DRAM; weights to global DRAM");
  sub->callback([f] { run_build(*f); });
}

}  // namespace dlakit::cli
