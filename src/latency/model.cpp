#include "latency/model.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace dlakit::latency {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct Atoms {
  int64_t c, k;
};
Atoms atoms(OpPrecision p, const Chip& chip, const ModelParams& params) {
  if (p == OpPrecision::kInt8) return {params.atom_c, params.atom_k};
  const int64_t c = params.fp16_atom_c();
  return {c, std::max<int64_t>(1, chip.fp16_macs_per_cycle / c)};
}

// MAC-array cycles of a convolution: every output pixel x kernel tap x (input-channel atom, output-kernel
// atom) block is one cycle. A grouped convolution costs the cheaper of its groups one by one and the
// same convolution made dense with zero weights (how small groups can share an atom); a depthwise one,
// with depthwise_lanes, one channel per input lane. An image input
// packs each kernel row's pixels (4 channels each) into one input atom (open NVDLA's image-input mode).
double conv_cycles(const HwOp& op, Atoms a, bool depthwise_lanes) {
  const int64_t cg = op.input.c / op.groups, kg = op.output.c / op.groups;
  int64_t taps = int64_t(op.kernel_h) * op.kernel_w;
  int64_t in_channels = cg;
  if (op.image_input) {
    in_channels = 4 * int64_t(op.kernel_w);
    taps = op.kernel_h;
  }
  int64_t blocks = op.groups * ceil_div(in_channels, a.c) * ceil_div(kg, a.k);
  if (op.groups > 1) blocks = std::min(blocks, ceil_div(op.input.c, a.c) * ceil_div(op.output.c, a.k));
  if (depthwise_lanes && cg == 1 && kg == 1) blocks = ceil_div(op.groups, a.c);
  return double(op.output.n) * double(op.output.h) * double(op.output.w) * double(taps) * double(blocks);
}

// When the convolution buffer cannot hold the weights and the batch's input together, the compiler
// splits the convolution: weights resident with the data streamed through (weights fit in half the
// buffer); the input resident with the weights streamed by kernel groups (once when every image's input
// fits in half, else once per image); or else the cheaper of re-reading the weights for every data
// stripe and re-reading the data for every kernel group.
struct BufferTraffic {
  double weights = 0, data = 0;  // bytes from DRAM
  int weight_reads = 1;
};
BufferTraffic buffer_traffic(const HwOp& op, const ModelParams& params) {
  const double w = double(op.weight_bytes);
  const double d =
      double(surface_bytes({1, op.input.c, op.input.h, op.input.w}, op.precision, op.image_input));
  const double n = double(op.output.n), buf = double(params.cbuf_bytes), half = buf / 2;
  // Every image's input resident (a fully connected layer's batch): the weights stream through once.
  if (w + n * d <= buf || w <= half || n * d <= half) return {w, n * d, 1};
  if (d <= half) return {w * n, n * d, int(n)};
  const double stripes = std::ceil(d / half), groups = std::ceil(w / half);
  if (w * stripes <= d * groups) return {w * stripes * n, n * d, int(stripes * n)};
  return {w * n, n * d * groups, int(n)};
}

double element_cycles(const HwOp& op, const ModelParams& params) {
  const double elements = double(std::max(op.input.elements(), op.output.elements())) * op.element_passes;
  switch (op.engine) {
    case Engine::kSdp:
      return elements / (op.lut ? params.lut_per_cycle : params.sdp_per_cycle);
    case Engine::kPdp:
      return double(op.input.elements()) * op.element_passes / params.pdp_per_cycle;
    case Engine::kCdp:
      return elements / params.cdp_per_cycle;
    case Engine::kRubik:
    case Engine::kBdma: {
      const double bytes = double(std::max(op.dram_read + op.sram_read, op.dram_written + op.sram_written));
      return bytes / params.dma_bytes_per_cycle;
    }
    case Engine::kConv:
      break;
  }
  return 0;
}

}  // namespace

const char* bottleneck_name(Bottleneck b) {
  switch (b) {
    case Bottleneck::kCompute:
      return "compute";
    case Bottleneck::kMemory:
      return "memory";
    case Bottleneck::kOverhead:
      return "overhead";
  }
  return "?";
}

int64_t surface_bytes(const Dims& d, OpPrecision p, bool image) {
  if (image) return d.n * d.h * d.w * 4 * (p == OpPrecision::kInt8 ? 1 : 2);
  const int64_t atom = p == OpPrecision::kInt8 ? 32 : 16;
  return d.n * ceil_div(d.c, atom) * atom * d.h * d.w * (p == OpPrecision::kInt8 ? 1 : 2);
}

OpTime predict_op(const HwOp& op, const Chip& chip, const PowerMode& mode, const ModelParams& params) {
  validate(op);
  if (mode.dla_hz <= 0 || mode.dram_bytes_per_s <= 0 || params.dram_efficiency <= 0)
    fail(Status::kInvalidArgument, "latency model: power mode '", mode.name,
         "' has no DLA clock or bandwidth");
  OpTime t;
  const double hz = mode.dla_hz;
  double cycles = 0, extra_data = 0;  // extra_data: input bytes read again for every kernel group
  if (op.engine == Engine::kConv) {
    t.mac_cycles = conv_cycles(op, atoms(op.precision, chip, params), params.depthwise_lanes);
    const BufferTraffic traffic = buffer_traffic(op, params);
    t.weight_reads = traffic.weight_reads;
    extra_data =
        traffic.data - double(op.input.n) * double(surface_bytes({1, op.input.c, op.input.h, op.input.w},
                                                                 op.precision, op.image_input));
    cycles = t.mac_cycles;
  } else {
    cycles = element_cycles(op, params);
  }
  t.compute_us = cycles / hz * 1e6;
  t.dram_bytes = double(op.dram_read + op.dram_written) + double(op.weight_bytes) * t.weight_reads +
                 std::max(0.0, extra_data);
  t.sram_bytes = double(op.sram_read + op.sram_written);
  t.memory_us = t.dram_bytes / (mode.dram_bytes_per_s * params.dram_efficiency) * 1e6 +
                t.sram_bytes / (params.sram_bytes_per_cycle * hz) * 1e6;
  t.overhead_us = params.op_overhead_us + params.op_overhead_cycles / hz * 1e6;
  const double busy =
      std::max(t.compute_us, t.memory_us) + (1 - params.overlap) * std::min(t.compute_us, t.memory_us);
  t.total_us = busy + t.overhead_us;
  t.bottleneck = t.overhead_us > busy          ? Bottleneck::kOverhead
                 : t.compute_us >= t.memory_us ? Bottleneck::kCompute
                                               : Bottleneck::kMemory;
  return t;
}

TaskTime predict_task(const std::vector<HwOp>& ops, const Chip& chip, const PowerMode& mode,
                      const ModelParams& params) {
  TaskTime t;
  for (const HwOp& op : ops) {
    t.ops.push_back(predict_op(op, chip, mode, params));
    t.ops_us += t.ops.back().total_us;
  }
  t.overhead_us = params.task_overhead_us;
  t.total_us = t.ops_us + t.overhead_us;
  return t;
}

}  // namespace dlakit::latency
