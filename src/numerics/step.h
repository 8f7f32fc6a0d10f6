// One layer's computation with the DLA's numerics (dla-constraints.md §4, §5.3; docs/int8.md). The rules
// are data: how the layer reads each input (rounded to fp16, fake-quantized to a scale), whether it
// computes in FP16 between INT8 tensors, and how it stores each output (fp16, int8 at a scale, or fp32
// inside a fused pipeline). They are decided once, at build time (quant::step_rules over a numerics plan),
// and stored in the compiled program. The graph emulation (quant::NumericsRunner), the program's CPU
// executor and its CUDA executor's host steps all run a layer through run_step, so they follow one rule
// set and agree bit for bit.
#pragma once
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "kernels/conv_int8.h"
#include "numerics/quantize.h"

namespace dlakit::numerics {

struct InputRule {
  float quantize_scale = 0;  // > 0: fake-quantized to this scale (an INT8 layer's input)
  bool round_fp16 = false;   // then rounded to fp16 (FP16 layers; INT8 layers computed in FP16)
};

enum class Store : uint8_t {
  kFused,  // stays fp32: the next layer of the same fused pipeline reads it
  kFp16,   // rounded to fp16
  kInt8,   // quantized to its scale (stored as int8 levels)
};
struct OutputRule {
  Store store = Store::kFp16;
  float scale = 0;  // kInt8
};

// The precision a layer computes in. INT8 layers must be reproduced bit for bit by every executor; FP16
// ones within float rounding (sums may run in another order).
enum class Precision : uint8_t { kFp32, kFp16, kInt8 };
const char* precision_name(Precision p);  // "fp32", "fp16", "int8"

struct StepRules {
  Precision precision = Precision::kFp16;
  quant::Rounding rounding = quant::Rounding::kHalfAwayFromZero;
  std::vector<InputRule> inputs;  // one per layer input; ignored for constants and omitted inputs
  bool compute_fp16 = false;      // results rounded to fp16 before the output rule (DLA Sigmoid/Tanh in INT8)
  std::vector<OutputRule> outputs;  // one per layer output
  // A Conv (or a fully connected layer, fc_as_conv; or a ConvTranspose without groups) whose input 0 becomes
  // integer levels at inputs[0].quantize_scale and whose weights are levels: exact integer sums, then
  // requantization (Int8Conv).
  bool exact_int8_conv = false;
};

// An INT8 convolution prepared for exact integer arithmetic on float hardware: integer levels summed in
// fp32 are exact while every partial sum stays below 2^24, so input channels are split into chunks whose
// sums cannot pass it (sum |w_q| * 128), and the chunks add in int64.
struct Int8Conv {
  Node node;                                        // the Conv without bias and fused activation (a 1x1
                                                    // Conv for a fully connected layer; a ConvTranspose)
  Tensor w_levels;                                  // all weight levels (KCRS, as float; ConvTranspose CKRS)
  std::vector<Tensor> w_q;                          // weight levels, one per chunk of input channels
  std::vector<std::pair<int64_t, int64_t>> chunks;  // input-channel ranges
  std::vector<float> bias;                          // f32 bias (empty: none)
  // Requantization per output channel: y = mult > 0 ? float(acc + bias_q) * mult : bias.
  std::vector<float> mult;
  std::vector<double> bias_q;
  // The same sums in int32 on the CPU's integer dot products, for the 2-D layers it supports (else null:
  // the chunked float path above runs).
  std::shared_ptr<const PackedInt8Conv> packed;
};
// A fully connected layer the DLA computes as a 1x1 convolution over [N, K, 1, 1] (dla-constraints.md
// §3: FC/MatMul/Gemm "mapped to conv", [C DLASW operators]), so in INT8 with the same exact integer sums:
// Gemm (transA 0, alpha 1, beta 1 or no bias) or MatMul, a 2-D input [N, K], a constant 2-D weight
// ([M, K] with transB, else [K, M]) and a bias of M values ([M] or [1, M]; null: none).
bool fc_as_conv(const Node& n, const Shape& input, const Shape& weight, const Shape* bias);
// The output-channel axis of a fully connected layer's 2-D weight: 0 for Gemm with transB ([M, K]), else 1.
int fc_weight_axis(const Node& n);
// A ConvTranspose the DLA computes as a deconvolution on its convolution pipeline, so in INT8 with the same
// exact integer sums: one without groups (its per-channel weight scales, along axis 1 of [C, M, k...], then
// name one output channel each).
bool deconv_as_conv(const Node& n);

// `w_levels`: the weight's integer levels (KCRS, as float; a fully connected layer's as its 2-D weight);
// `w_scale`: one per output channel; `s_in`: the input's scale.
Int8Conv prepare_int8_conv(const Node& conv, const Tensor& w_levels, const std::vector<float>& w_scale,
                           std::vector<float> bias, float s_in, quant::Rounding r);

// Runs one layer. `inputs` are the layer's inputs as it would get them from its producers (fp16 values,
// int8 levels times their scale, fused fp32 values); constants already in their stored form (fp16
// values, weights on their INT8 grid, f32). `constant` flags the constant inputs; `out_types` gives the
// outputs' types. `conv` is required when rules.exact_int8_conv.
// What a caller that reads and writes int8 surfaces (the program's CPU executor) knows about a step, so
// that passes which change nothing are skipped:
// - `levels`: input 0 already as int8 levels at the scale the exact INT8 convolution quantizes it to (an
//   int8 surface of that scale); the convolution reads them, and inputs[0] may be null. Levels times the
//   scale, divided by it, round back to the same levels.
// - `input_on_grid[i]`: input i was read from an int8 surface at its quantize scale, so fake-quantizing it
//   again gives the same values.
// - `output_quantized_by_caller[k]`: output k goes to an int8 surface at its store scale with ties away
//   from zero, which quantizes it anyway: quantizing the fake-quantized value gives the same levels.
// - `int8_output`: that surface, for an exact INT8 convolution to write its output 0 into directly (the
//   same levels); the returned output 0 is then empty.
struct InputLevels {
  Int8Input levels;  // where they are (an int8 chw32 surface, read in place)
  Shape shape;       // NCHW
};
struct StepShortcuts {
  const InputLevels* levels = nullptr;
  const Int8Output* int8_output = nullptr;
  std::vector<char> input_on_grid, output_quantized_by_caller;
};
std::vector<Tensor> run_step(const Node& layer, const StepRules& rules,
                             const std::vector<const Tensor*>& inputs, const std::vector<char>& constant,
                             const std::vector<TensorType>& out_types, const Int8Conv* conv = nullptr,
                             const StepShortcuts* shortcuts = nullptr);

}  // namespace dlakit::numerics
