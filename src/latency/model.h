// The per-operation latency model (the open NVDLA performance method): an operation takes the larger of
// its compute time (MAC cycles with channels and kernels padded to the array's atoms, or element
// throughput for SDP/PDP/CDP/RUBIK/BDMA) and its memory time (DRAM and SRAM bytes, weights re-read when
// the convolution buffer cannot hold them), plus a fixed cost; a task adds a fixed cost per submission.
// Everything here is a prediction for the board, never a measurement.
#pragma once
#include <vector>

#include "latency/chip.h"
#include "latency/hw_op.h"
#include "latency/params.h"

namespace dlakit::latency {

enum class Bottleneck { kCompute, kMemory, kOverhead };
const char* bottleneck_name(Bottleneck b);

struct OpTime {
  double compute_us = 0, memory_us = 0, overhead_us = 0, total_us = 0;
  Bottleneck bottleneck = Bottleneck::kCompute;
  double mac_cycles = 0;  // conv engine: cycles of the MAC array (atoms padded)
  double dram_bytes = 0;  // activations + weights (re-reads included)
  double sram_bytes = 0;
  int weight_reads = 1;  // times the weights cross from DRAM (1 when the buffer holds them)
};

// Bytes per element of a surface and the channel padding of the DLA's native layouts (kCHW32 for INT8,
// kCHW16 for FP16; an image input has 4 channels per pixel).
int64_t surface_bytes(const Dims& d, OpPrecision p, bool image = false);

OpTime predict_op(const HwOp& op, const Chip& chip, const PowerMode& mode, const ModelParams& params);

struct TaskTime {
  std::vector<OpTime> ops;
  double ops_us = 0, overhead_us = 0, total_us = 0;
};
// One DLA task (a loadable's operations, run in order on one core).
TaskTime predict_task(const std::vector<HwOp>& ops, const Chip& chip, const PowerMode& mode,
                      const ModelParams& params);

}  // namespace dlakit::latency
