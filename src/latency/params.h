// The latency model's parameters, each with its origin: published, derived from published figures,
// fitted on the calibration rows (tools/latency_fit, docs/latency-model.md), or assumed.
#pragma once
#include <string>
#include <vector>

#include "latency/chip.h"

namespace dlakit::latency {

struct ModelParams {
  // INT8 MAC array: atom_c input channels x atom_k output kernels per cycle (atom_c * atom_k equals the
  // chip's INT8 MACs per cycle). FP16 halves atom_c (twice the bytes per channel) and keeps the chip's
  // FP16 MAC count.
  int atom_c = 64, atom_k = 128;
  long long cbuf_bytes = 512 * 1024;  // convolution buffer (data + weights)
  // Depthwise convolutions (one input and one output channel per group): true when each of the atom_c
  // input lanes works on its own channel (the atom_k side idles); false when they run as the same
  // convolution made dense with zero weights.
  bool depthwise_lanes = true;
  double dram_efficiency = 0.5;  // share of the DRAM bandwidth one core sustains while both run
  // How much of the shorter of compute and memory time hides under the longer: 1 is the open NVDLA
  // method's max(compute, memory); below 1, stripe and kernel-group boundaries expose part of it.
  double overlap = 1;
  double op_overhead_us = 0;         // fixed cost per hardware operation, in time ...
  double op_overhead_cycles = 0;     // ... and in DLA cycles (scales with the clock)
  double task_overhead_us = 0;       // per DLA task (one loadable submission)
  double sram_bytes_per_cycle = 64;  // SRAM port (assumed: open NVDLA's 512-bit interface)
  // Element engines, elements per cycle (assumed: open NVDLA nv_full's rates scaled by the MAC ratio).
  double sdp_per_cycle = 64, lut_per_cycle = 16, pdp_per_cycle = 64, cdp_per_cycle = 16;
  double dma_bytes_per_cycle = 64;  // RUBIK/BDMA copies
  // Hybrid estimates (not fitted; no published figure isolates them).
  double gpu_launch_us = 5;        // per GPU kernel
  double transition_sync_us = 30;  // per DLA<->GPU hand-over (task completion -> dependent work)

  int fp16_atom_c() const { return atom_c / 2; }
};

// The committed parameters for a chip (Orin: the fit's result; Xavier: Orin's fitted overheads on the
// open NVDLA geometry, unvalidated).
const ModelParams& fitted_params(const std::string& target);

// One row per parameter for docs and --json: name, value, origin and basis.
struct ParamInfo {
  std::string name, value, origin, basis;
};
std::vector<ParamInfo> describe(const ModelParams& p, const Chip& chip);

}  // namespace dlakit::latency
