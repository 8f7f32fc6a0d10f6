#include "latency/params.h"

#include <cstdio>

#include "base/error.h"

namespace dlakit::latency {
namespace {

// Written by tools/latency_fit (dlakit-latency-fit --nets DIR) from the calibration rows of
// ../shared/specs/dla-performance.md; its report is docs/latency-model.md.
ModelParams orin_fit() {
  ModelParams p;
  p.atom_c = 64;
  p.atom_k = 128;
  p.cbuf_bytes = 512 * 1024;
  p.depthwise_lanes = true;
  p.overlap = 1;
  p.dram_efficiency = 0.17;
  p.op_overhead_us = 0;
  p.op_overhead_cycles = 0;
  p.task_overhead_us = 0;
  return p;
}

std::string num(double v, const char* f = "%g") {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

}  // namespace

const ModelParams& fitted_params(const std::string& target) {
  static const ModelParams orin = orin_fit();
  static const ModelParams xavier = [] {
    ModelParams p = orin_fit();    // Orin's fitted efficiency and overheads (assumption)
    p.atom_c = 64, p.atom_k = 32;  // open NVDLA nv_full: atomic C 64, atomic K 32
    p.cbuf_bytes = 512 * 1024;     // nv_full: 16 banks x 32 KiB
    p.sdp_per_cycle = 16, p.lut_per_cycle = 4, p.pdp_per_cycle = 16, p.cdp_per_cycle = 4;
    return p;
  }();
  if (target == "orin") return orin;
  if (target == "xavier") return xavier;
  fail(Status::kInvalidArgument, "latency model: unknown target '", target, "' (orin or xavier)");
}

std::vector<ParamInfo> describe(const ModelParams& p, const Chip& chip) {
  const bool orin = chip.target == "orin";
  const char* fitted = orin ? "fitted" : "assumed";
  const char* fit_basis = orin ? "least squares on the 8 calibration rows (relative error)"
                               : "Orin's fitted value reused: no Xavier calibration rows";
  return {
      {"INT8 MACs per cycle", std::to_string(chip.int8_macs_per_cycle), orin ? "derived" : "published",
       chip.int8_macs_source},
      {"FP16 MACs per cycle", std::to_string(chip.fp16_macs_per_cycle), orin ? "derived" : "published",
       chip.fp16_macs_source},
      {"MAC geometry (atom C x atom K), INT8", std::to_string(p.atom_c) + " x " + std::to_string(p.atom_k),
       orin ? "fitted" : "published",
       orin ? "one of 32x256, 64x128, 128x64, 256x32 (products = 8192), best fit"
            : "open NVDLA nv_full (NVDLA-SW TargetConfig)"},
      {"MAC geometry, FP16",
       std::to_string(p.fp16_atom_c()) + " x " + std::to_string(chip.fp16_macs_per_cycle / p.fp16_atom_c()),
       "assumed", "half the INT8 atom C (two bytes per channel), FP16 MACs per cycle / that"},
      {"convolution buffer", num(double(p.cbuf_bytes) / 1024, "%.0f KiB"), orin ? "fitted" : "published",
       orin
           ? "one of 512 KiB, 1 MiB, 2 MiB, best fit (at least 512 KiB: TensorRT's admission check allots 16 "
             "banks of 32 KiB on Orin, dla-constraints.md 1.2)"
           : "open NVDLA nv_full 16 x 32 KiB"},
      {"depthwise convolution", p.depthwise_lanes ? "one channel per input lane" : "dense with zero weights",
       fitted, orin ? "one of the two, best fit" : fit_basis},
      {"compute/memory overlap", num(p.overlap, "%.2f"), fitted,
       orin ? "one of 1, 0.75, 0.5, 0.25, 0, best fit (1 = open NVDLA's max(compute, memory))" : fit_basis},
      {"DRAM efficiency (one core, both running)", num(p.dram_efficiency, "%.2f"), fitted, fit_basis},
      {"overhead per operation (time)", num(p.op_overhead_us, "%.2f us"), fitted, fit_basis},
      {"overhead per operation (DLA cycles)", num(p.op_overhead_cycles, "%.0f"), fitted, fit_basis},
      {"overhead per task", num(p.task_overhead_us, "%.1f us"), fitted, fit_basis},
      {"SRAM port", num(p.sram_bytes_per_cycle, "%.0f B/cycle"), "assumed",
       "open NVDLA's 512-bit SRAM interface"},
      {"SDP / LUT / PDP / CDP throughput",
       num(p.sdp_per_cycle, "%.0f") + " / " + num(p.lut_per_cycle, "%.0f") + " / " +
           num(p.pdp_per_cycle, "%.0f") + " / " + num(p.cdp_per_cycle, "%.0f") + " elements/cycle",
       "assumed",
       orin ? "open NVDLA nv_full (X1/X2 16, Y 4 elements/cycle) x 4, Orin's MAC ratio over nv_full"
            : "open NVDLA nv_full"},
      {"RUBIK / BDMA copy", num(p.dma_bytes_per_cycle, "%.0f B/cycle"), "assumed",
       "open NVDLA 512-bit DMA ports"},
      {"GPU kernel launch", num(p.gpu_launch_us, "%.0f us"), "assumed",
       "hybrid estimate; no published figure"},
      {"DLA<->GPU hand-over", num(p.transition_sync_us, "%.0f us"), "assumed",
       "hybrid estimate; no published figure"},
  };
}

}  // namespace dlakit::latency
