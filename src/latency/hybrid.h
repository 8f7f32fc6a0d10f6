// Estimates around the DLA (labelled as estimates wherever they are shown): GPU work by a roofline on the
// published Orin GPU peaks and the shared DRAM bandwidth, GPU reformat kernels, and the hand-over cost
// of a DLA<->GPU transition. None of these is fitted: no published figure isolates them.
#pragma once
#include "latency/chip.h"
#include "latency/hw_op.h"
#include "latency/params.h"

namespace dlakit::latency {

struct GpuWork {
  double ops = 0;    // arithmetic operations (2 per MAC)
  double bytes = 0;  // DRAM bytes read and written
  OpPrecision precision = OpPrecision::kInt8;
};

// max(ops / peak, bytes / bandwidth) + one kernel launch: a lower bound for the board's GPU.
double gpu_time_us(const GpuWork& w, const PowerMode& mode, const ModelParams& params);

// A GPU kernel converting a tensor between layouts (reads `bytes_in`, writes `bytes_out`).
double reformat_us(double bytes_in, double bytes_out, const PowerMode& mode, const ModelParams& params);

}  // namespace dlakit::latency
