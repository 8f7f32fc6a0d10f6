// One layer as CUDA launches (kernels.cu), shared by the emulated DLA on CUDA for programs
// (ProgramEngine) and for graphs (GpuEngine): the layer's numerics rules applied to its inputs, its
// computation, its output rule. Host code of the CUDA backend only (needs the CUDA runtime).
#pragma once
#include <cuda_runtime.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gpu/conv_half_mma.h"
#include "gpu/gpu.h"
#include "gpu/kernels.h"
#include "ir/graph.h"
#include "numerics/step.h"

namespace dlakit::gpu {

using Launch = std::function<void(cudaStream_t)>;

// Device memory owned by one engine: buffers that live as long as it does.
class DeviceArena {
 public:
  void* alloc(size_t bytes) {
    owned_.emplace_back(std::max<size_t>(bytes, 4));
    return owned_.back().data();
  }
  // upload and zeroed queue their copies and clears on CUDA's legacy stream, which the engines' non-blocking
  // queues do not wait for: call settle() once after the last of them, before anything is queued on them.
  const void* upload(const void* host, size_t bytes);
  void* zeroed(size_t bytes);  // `bytes` of zeros (once, when a layer is emitted)
  void settle();
  // Memory the engine's launches use only while they run, shared between layers: they run one after
  // another on the engine's queue. Slot `slot`'s buffer holds at least `bytes`; a larger request than the
  // slot has allocates a new one (a power of two), so pointers handed out before stay valid.
  void* scratch(size_t slot, size_t bytes);

 private:
  std::vector<DeviceBuffer> owned_;
  std::vector<std::pair<size_t, void*>> scratch_;  // per slot: size, buffer
};

struct LayerOperand {
  const float* dev = nullptr;        // device float32 values as the layer reads them (rules applied)
  Shape shape;                       // their shape
  const Tensor* constant = nullptr;  // the host value when the operand is a constant (its stored form)
};

struct LayerCall {
  const Node* node = nullptr;
  std::vector<LayerOperand> in;
  float* out = nullptr;  // device float32 result of the layer's shape
  Shape out_shape;
  bool int8 = false;                         // INT8 numerics: only launches exact to the CPU's last bit
  const numerics::Int8Conv* conv = nullptr;  // exact INT8 convolution (in[0].dev is then the raw input)
  float s_in = 0;                            // its input scale
  bool in0_half = false;       // in[0] holds fp16 values (its rule rounded them, or its producer stored them)
  bool in0_unrounded = false;  // a float Conv's in[0] is its raw input: the layer rounds it to fp16 itself
  int rounding = 0;            // 0 half away from zero (DLA), 1 half to even
  k::StoreRule store;          // applied to `out` by the layer's launches (store_rule)
  // A float Conv only: the residual Add (and ReLU) after it, run in its epilogue; `out` is then their result.
  // Only the FP16 implicit GEMM takes one: emit_layer gives up elsewhere (the caller emits the layers apart).
  std::optional<HalfResidual> residual;
  // An FP16 Conv on the implicit GEMM only (half_conv_implicit): input 0 as an fp16 chw16 surface (in[0].dev
  // is then null), and the result written as one instead of `out` (where its store rules leave fp16 values).
  const uint16_t* in0_atoms = nullptr;
  uint16_t* out_atoms = nullptr;
};

// Whether an FP16 Conv (input shape xs, weights w as its layer reads them, output shape ys) takes the
// implicit GEMM when its input is on the fp16 grid, so that it can read and write fp16 chw16 surfaces.
bool half_conv_implicit(const Node& node, const Shape& xs, const Tensor& w, const Shape& ys);

// Runs each group of launches on `s` between two events and waits for them: milliseconds per group
// (the engines' profiles: one group per layer or operation).
std::vector<double> time_launch_groups(const std::vector<std::vector<Launch>>& groups, cudaStream_t s);

// Appends the launches of one layer, its store rule included, or returns false with why (the caller then runs
// it on the host).
// A float Conv whose only input rule is the rounding of input 0 to fp16 (rounds_to_half_only) may be given
// that input raw (in0_unrounded): its fp16 GEMM rounds while it reads, and the plain kernel rounds a copy
// first.
bool emit_layer(const LayerCall& c, DeviceArena& arena, std::vector<Launch>& launches, std::string& why);

// The input rule on a device buffer of `count` floats: the buffer itself when the rule changes nothing,
// else a new buffer filled by launches appended to `launches`.
const float* apply_input_rule(const float* x, int64_t count, const numerics::InputRule& rule,
                              quant::Rounding rounding, DeviceArena& arena, std::vector<Launch>& launches);
// The activation the fuse-activation pass attached, as the kernels take it (the rule: ref::fused_epilogue).
k::ActParams fused_act(const Node& n);

// Whether input rule `r` only rounds to fp16 (then a float Conv may take its input raw: see emit_layer).
inline bool rounds_to_half_only(const numerics::InputRule& r) {
  return r.round_fp16 && !(r.quantize_scale > 0);
}
// LayerCall::in0_half and in0_unrounded for a layer of `op` with these rules: a float Conv whose input
// only needs rounding to fp16 reads it raw and rounds it itself, unless `stored_half` (its producer already
// stored fp16 values); otherwise in[0] holds fp16 values where its rule rounds them.
void set_input0(LayerCall& c, OpKind op, const numerics::StepRules& rules, bool stored_half);

// A 2-D convolution's geometry: input, weight and output shapes (4-D) and the node's attributes.
k::ConvGeom conv_geom(const Node& node, const Shape& xs, const Shape& ws, const Shape& ys);

// How a layer with these rules stores its first result (LayerCall::store), as numerics::run_step does:
// compute_fp16's rounding first, except after the exact INT8 convolution (run_step's exact path takes none).
k::StoreRule store_rule(const numerics::StepRules& rules);
// A rounding as the kernels take it: 0 half away from zero (the DLA), 1 half to even (the GPU).
int rounding_code(quant::Rounding r);

// An exact INT8 convolution's operands as the kernels take them: its weight levels (int8, KCRS) and its
// requantization uploaded to the device.
std::vector<int8_t> weight_levels(const numerics::Int8Conv& cv);
struct DeviceRequant {
  const float* mult = nullptr;
  const double* bias_q = nullptr;
  const float* bias = nullptr;  // null: none
};
DeviceRequant upload_requant(const numerics::Int8Conv& cv, DeviceArena& arena);

}  // namespace dlakit::gpu
