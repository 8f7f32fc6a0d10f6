// One DLA hardware operation as the latency model sees it: a neutral description that any producer can
// fill (today: placed graph layers, src/latency/lower.h; later: the compiled program's operations). The
// model (model.h) reads only this, never the graph.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dlakit::latency {

// The DLA's engines (open NVDLA, dla-constraints.md §5.3): the convolution core (with its SDP behind it),
// the element-wise post-processor, pooling, cross-channel (LRN), reshape/transpose and DMA.
enum class Engine { kConv, kSdp, kPdp, kCdp, kRubik, kBdma };
const char* engine_name(Engine e);  // "conv", "sdp", ...

enum class OpPrecision { kInt8, kFp16 };
const char* precision_name(OpPrecision p);

struct Dims {
  int64_t n = 1, c = 1, h = 1, w = 1;
  int64_t elements() const { return n * c * h * w; }
};

struct HwOp {
  Engine engine = Engine::kSdp;
  OpPrecision precision = OpPrecision::kInt8;
  Dims input, output;  // the main input surface and the output surface
  int kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1, groups = 1;
  bool image_input = false;  // conv reading a kDLA_HWC4 image (image-input mode)
  int64_t macs = 0;          // useful multiply-accumulates (conv engine)
  int64_t weight_bytes = 0;  // kernels and SDP operands as stored, read from DRAM
  // Activation bytes the operation moves, by memory (the producer's memory plan decides where each
  // surface lives); weights are counted separately above.
  int64_t dram_read = 0, dram_written = 0, sram_read = 0, sram_written = 0;
  int element_passes = 1;           // element engines: passes over the data (a softmax needs several)
  bool lut = false;                 // SDP through its lookup table (sigmoid, tanh): the slower sub-unit
  std::string fused;                // what was fused into it, e.g. "Conv+Relu+Add" (for reports)
  std::vector<std::string> layers;  // source layer names; the first one carries the operation's time
};

// Checks what the model relies on (positive dims, kernel/stride >= 1, groups dividing the channels,
// non-negative byte counts); the error names the operation, the field, the value and the limit.
void validate(const HwOp& op);

}  // namespace dlakit::latency
