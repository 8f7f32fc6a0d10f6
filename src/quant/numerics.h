// DLA numerics emulation (dla-constraints.md §4, §5.3). Each node runs in one of three modes:
//   FP32  GPU-fallback layers: the reference kernels as they are.
//   FP16  DLA FP16: inputs and weights rounded to fp16, fp32 accumulation, every output rounded to fp16.
//   INT8  per-tensor activation scales (amax / 127), per-output-channel weight scales; Conv accumulates the
//         integer levels exactly (int32 semantics), adds the bias quantized to int32, applies its fused
//         activation on the rescaled value and requantizes to the output scale, rounding half away from
//         zero on the DLA (half to even for GPU INT8) and saturating to [-128, 127]. Other INT8 layers
//         compute on dequantized inputs and requantize; Sigmoid/Tanh compute in FP16 between INT8 I/O.
// The plan records, per node, the mode and why; NumericsRunner executes it inside the ReferenceEngine.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "placement/placement.h"
#include "quant/calib_cache.h"
#include "quant/quantize.h"

namespace dlakit::quant {

enum class Mode { kFP32, kFP16, kINT8 };
const char* mode_name(Mode m);  // "fp32" | "fp16" | "int8"

struct NodeNumerics {
  Mode mode = Mode::kFP32;
  Rounding rounding = Rounding::kHalfAwayFromZero;
  bool compute_fp16 = false;  // INT8 I/O, computed in FP16 (Sigmoid/Tanh on the DLA)
  std::string note;           // why this mode when it is not what was asked
};

struct NumericsPlan {
  std::vector<NodeNumerics> nodes;                          // parallel to graph.nodes
  std::map<int, float> scale;                               // value id -> scale after the equal-range rules
  std::map<std::string, std::vector<float>> weight_scales;  // weight name -> per-channel scales (Q/DQ)
  // Values inside a fused DLA pipeline (a Conv's output feeding its per-element post-processing): kept
  // in fp32 between the fused layers, neither quantized nor rounded.
  std::vector<char> fused;
  int fused_values = 0;
  // Network outputs that leave the DLA as int8 (an int8 output format): quantized to their scale like
  // inner tensors instead of rounded to fp16. Set by the runtime from the loadable's descriptors.
  std::set<int> int8_outputs;
  int int8_nodes = 0, fp16_nodes = 0, fp32_nodes = 0;
};

struct NumericsOptions {
  bool gpu_int8 = false;  // GPU layers run INT8 (half-to-even rounding) where scales exist, not FP32
};

// Decides every node's mode from its placement (device, precision) and the available scales. DLA INT8
// layers without a scale on an input or output stay FP16 (TensorRT: "missing scale => FP16"); Softmax,
// Slice and LRN run FP16 in INT8 builds. Pooling, concatenation, element-wise sums and data movement
// share one range across their tensors (the larger wins), as the DLA requires.
NumericsPlan plan_numerics(const Graph& g, const Placement& p, const ScaleTable* scales,
                           const NumericsOptions& o = {});
// The DLA runs a convolution and the per-element operations after it (bias, scale, batch norm, ReLU/
// clip/PReLU, LUT sigmoid/tanh: NVDLA's SDP) as one pass with one output conversion; TensorRT fuses them
// the same way. A stand-alone SDP pass (element-wise op, activation, arithmetic with a constant) takes
// the per-element ops after it the same way. A value is fused when its producer is a DLA Conv/Deconv/FC
// or SDP op (or a fused op) and its only reader is a per-element op with constant operands in the same
// precision, up to kMaxFusedOps after the first. Set by plan_numerics; dlakit's reading of NVDLA, [U]
// for Orin.
inline constexpr int kMaxFusedOps = 4;

// A float32 tensor computed at run time (not a constant): what gets scales, histograms and metrics.
bool is_float_activation(const Graph& g, int v);

// The output-channel axis of a layer's constant weight input (input 1): Conv 0, ConvTranspose 1,
// Gemm 0 or 1 (transB), MatMul 1; -1 when the layer has no constant weight.
int weight_axis(const Graph& g, const Node& n);

// The per-output-channel scales INT8 uses for a weight along `axis`: the plan's (from a Q/DQ model or a
// loadable; a single value is per-tensor) or the weight's own max|w| / 127.
std::vector<float> weight_scales_for(const NumericsPlan& plan, const Value& w, int axis);

// Every float node in `mode` on the DLA (FP16 everywhere, or INT8 where scales allow).
NumericsPlan plan_uniform(const Graph& g, Mode mode, const ScaleTable* scales);

// Runs nodes with the plan's numerics; install with engine.set_node_runner(std::ref(runner)).
class NumericsRunner {
 public:
  NumericsRunner(const Graph& g, NumericsPlan plan);
  std::vector<Tensor> operator()(size_t node, const std::vector<const Tensor*>& inputs);
  const NumericsPlan& plan() const { return plan_; }
  // Inputs come from the FP32 reference rather than from emulated producers: quantize / round every
  // input (per-layer "own error" analysis).
  void set_raw_inputs(bool on) { raw_inputs_ = on; }

  struct ConvInt8 {                                   // prepared once per INT8 Conv
    Node node;                                        // the Conv without bias and fused activation
    Tensor w_levels;                                  // all integer weight levels (KCRS, as float)
    std::vector<Tensor> w_q;                          // the same, one per input-channel chunk
    std::vector<std::pair<int64_t, int64_t>> chunks;  // input-channel ranges (exact fp32 sums per chunk)
    std::vector<float> w_scale, bias;
    // Requantization per output channel: y = mult > 0 ? float(acc + bias_q) * mult : bias.
    std::vector<float> mult;
    std::vector<double> bias_q;
  };
  // What a run reads, for other executors of the same plan (the CUDA backend), so both stay one rule.
  bool value_on_grid(int v) const { return on_grid_[size_t(v)] != 0; }  // producer quantized it already
  bool value_is_fp16(int v) const { return is_fp16_[size_t(v)] != 0; }  // producer rounded it to fp16
  // A network output that leaves the DLA as fp16 (every one, except those with an int8 output format).
  bool leaves_as_fp16(int v) const;
  // The prepared form of a constant input (fp16-rounded or fake-quantized weights); null: use it as is.
  const Tensor* prepared_constant(size_t node, int input) const {
    auto it = const_cache_.find({node, input});
    return it == const_cache_.end() ? nullptr : &it->second;
  }
  // An INT8 Conv's integer form; null when the node does not take the exact integer path.
  const ConvInt8* conv_int8(size_t node) const {
    auto it = conv_.find(node);
    return it == conv_.end() ? nullptr : &it->second;
  }

 private:
  std::vector<Tensor> run_fp16(size_t n, const std::vector<const Tensor*>& in);
  std::vector<Tensor> run_int8(size_t n, const std::vector<const Tensor*>& in);
  Tensor run_conv_int8(size_t n, const Tensor& x);
  void finish_int8_outputs(size_t n, std::vector<Tensor>& outs);
  const ConvInt8& conv_prep(size_t n);

  const Graph& g_;
  NumericsPlan plan_;
  bool raw_inputs_ = false;
  std::vector<char> on_grid_;  // per value: its producer already quantized it to its range
  std::vector<char> is_fp16_;  // per value: its producer already rounded it to fp16
  std::map<size_t, ConvInt8> conv_;
  std::map<std::pair<size_t, int>, Tensor> const_cache_;  // (node, input) -> fp16-rounded / fake-quantized
};

// Convenience: a ReferenceEngine whose nodes run with the plan's numerics.
class EmulatedEngine {
 public:
  EmulatedEngine(const Graph& g, NumericsPlan plan);
  TensorMap run(const TensorMap& inputs, const std::function<void(size_t)>& before_node = {}) {
    return engine_.run(inputs, before_node);
  }
  ReferenceEngine& engine() { return engine_; }
  const NumericsPlan& plan() const { return runner_.plan(); }

 private:
  NumericsRunner runner_;
  ReferenceEngine engine_;
};

}  // namespace dlakit::quant
