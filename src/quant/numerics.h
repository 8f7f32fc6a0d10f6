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
#include "numerics/quantize.h"
#include "numerics/step.h"
#include "placement/placement.h"
#include "quant/calib_cache.h"

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
  bool operator==(const NumericsOptions&) const = default;
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

// How node `i` reads, computes and stores under the plan (FP16 and INT8 nodes; FP32 nodes have no rules):
// what the compiled program stores per layer and every executor runs (numerics::run_step).
numerics::StepRules step_rules(const Graph& g, const NumericsPlan& plan, size_t i);

// How a constant input is stored for its node's mode.
enum class ConstantForm {
  kAsIs,        // FP32 nodes; INT8 nodes' non-weight constants (bias, scale factors) stay f32
  kFp16,        // FP16 nodes: f32 constants rounded to fp16
  kInt8Weight,  // INT8 nodes' weight (input 1 of Conv/ConvTranspose/Gemm/MatMul): int8 levels per channel
};
ConstantForm constant_form(const Graph& g, const NumericsPlan& plan, size_t node, int input);

// Runs nodes with the plan's numerics (numerics::run_step with step_rules); install with
// engine.set_node_runner(std::ref(runner)).
class NumericsRunner {
 public:
  // `inputs_emulated`: every input a node gets is what this runner produced for it (EmulatedEngine), so
  // an input its producer already stored on the grid it quantizes to is not fake-quantized again. Off for
  // callers that feed other inputs (the FP32 reference's, for a layer's own error).
  NumericsRunner(const Graph& g, NumericsPlan plan, bool inputs_emulated = false);
  std::vector<Tensor> operator()(size_t node, const std::vector<const Tensor*>& inputs);
  const NumericsPlan& plan() const { return plan_; }
  // The input rules (rounding, quantization) apply to every input, so a node also runs right on inputs
  // from the FP32 reference ("own error" analysis): they are idempotent on emulated inputs.
  const numerics::StepRules& rules(size_t node) const { return rules_[node]; }
  // A network output that leaves the DLA as fp16 (every one, except those with an int8 output format).
  bool leaves_as_fp16(int v) const;
  // The stored form of a constant input (fp16-rounded values, or weights on their INT8 grid); null: as is.
  const Tensor* prepared_constant(size_t node, int input) const {
    auto it = const_cache_.find({node, input});
    return it == const_cache_.end() ? nullptr : &it->second;
  }
  // Whether input k of `node` is taken as its producer stored it (inputs_emulated only).
  bool input_on_grid(size_t node, size_t k) const {
    return node < shortcuts_.size() && k < shortcuts_[node].input_on_grid.size() &&
           shortcuts_[node].input_on_grid[k];
  }
  // An INT8 Conv's integer form; null when the node does not take the exact integer path.
  const numerics::Int8Conv* conv_int8(size_t node) const {
    auto it = conv_.find(node);
    return it == conv_.end() ? nullptr : &it->second;
  }

 private:
  const Graph& g_;
  NumericsPlan plan_;
  std::vector<numerics::StepRules> rules_;
  std::map<size_t, numerics::Int8Conv> conv_;
  std::map<std::pair<size_t, int>, Tensor> const_cache_;  // (node, input) -> fp16-rounded / on the INT8 grid
  std::vector<numerics::StepShortcuts> shortcuts_;        // per node, with inputs_emulated
};

// Convenience: a ReferenceEngine whose nodes run with the plan's numerics.
class EmulatedEngine {
 public:
  EmulatedEngine(const Graph& g, NumericsPlan plan);
  TensorMap run(const TensorMap& inputs) { return engine_.run(inputs); }
  void run_each(const std::vector<TensorMap>& samples,
                const std::function<void(size_t, const TensorMap&)>& take) {
    engine_.run_each(samples, take);
  }
  ReferenceEngine& engine() { return engine_; }
  const NumericsPlan& plan() const { return runner_.plan(); }

 private:
  NumericsRunner runner_;
  ReferenceEngine engine_;
};

}  // namespace dlakit::quant
