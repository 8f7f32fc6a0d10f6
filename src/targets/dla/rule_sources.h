// Where each DLA rule comes from and how sure dlakit is of it: one row per rule, the data the rules cite in
// every Reason, the reports mark ("unconfirmed") and the support matrix lists. Sources are sections of
// ../shared/specs/dla-constraints.md (whose short keys name the NVIDIA document or header), or the issue
// thread a behaviour was observed in; an assumed rule is dlakit's own reading where no source settles it.
#pragma once

namespace dlakit::dla {

enum class Confidence { kDocumented, kObserved, kAssumed };
const char* confidence_name(Confidence c);  // "documented" | "observed" | "assumed"

// X(enum name, id, confidence, source, what the rule says)
#define DLAKIT_DLA_RULES(X)                                                                                  \
  X(TensorDtype, "tensor.dtype", kDocumented, "dla-constraints.md §1.1 (DOC85)",                             \
    "DLA layers compute in FP16 or INT8")                                                                    \
  X(TensorRank, "tensor.rank", kAssumed,                                                                     \
    "dlakit's rule; §1.1 counts every dim before the last three as batch",                                   \
    "tensors are at most 4-D (N,C,H,W)")                                                                     \
  X(TensorBatch, "tensor.batch", kDocumented, "dla-constraints.md §1.1 (DOC-LATEST)",                        \
    "batch (the product of all dims but the last three) <= 4096")                                            \
  X(TensorDim, "tensor.dim", kDocumented, "dla-constraints.md §1.1 (DOC-LATEST, HDR10)",                     \
    "every non-batch dim <= 8192")                                                                           \
  X(OpLayer, "op.layer", kDocumented, "dla-constraints.md §1.2 layer list (TensorRT >= 8.6 docs)",           \
    "the op maps to one of the DLA's layers")                                                                \
  X(Spatial2d, "layer.2d", kDocumented,                                                                      \
    "dla-constraints.md §1.2 (Convolution, Deconvolution, Pooling, Scale, "                                 \
    "Resize; HDR10, DOC85)",                                                                                 \
    "the layer has exactly 2 spatial dims (a 4-D input)")                                                    \
  X(ConvWeights, "conv.weights", kDocumented,                                                                \
    "dla-constraints.md §1.2 Convolution / FC (HDR10, DLASW operators)", "weights are build-time constants") \
  X(ConvKernel, "conv.kernel", kDocumented, "dla-constraints.md §1.2 Convolution (HDR10, DOC85)",            \
    "kernel H,W 1..32")                                                                                      \
  X(ConvStride, "conv.stride", kDocumented, "dla-constraints.md §1.2 Convolution (HDR10, DOC85)",            \
    "stride H,W 1..8")                                                                                       \
  X(ConvDilation, "conv.dilation", kDocumented, "dla-constraints.md §1.2 Convolution (HDR10, DOC85)",        \
    "dilation H,W 1..32")                                                                                    \
  X(ConvPad, "conv.pad", kDocumented, "dla-constraints.md §1.2 Convolution (HDR10, DOC85, DOC-LATEST)",      \
    "padding 0..31 and smaller than the kernel in that dim")                                                 \
  X(ConvOutChannels, "conv.out_channels", kDocumented, "dla-constraints.md §1.2 Convolution (HDR10)",        \
    "output channels 1..8192")                                                                               \
  X(ConvGroups, "conv.groups", kDocumented, "dla-constraints.md §1.2 Convolution (HDR10, DOC85)",            \
    "groups 1..8192")                                                                                        \
  X(ConvInt8Groups, "conv.int8_group_channels", kDocumented,                                                 \
    "dla-constraints.md §1.2 Convolution (HDR10; a TensorRT rule, not DLA-specific)",                        \
    "INT8 grouped convolutions have multiples of 4 channels per group")                                      \
  X(ConvBuffer, "conv.cbuf", kDocumented,                                                                    \
    "dla-constraints.md §1.2 CBUF admission check (DOC85, DOC84, DLASW FAQ)",                                \
    "weight banks for one kernel + data banks for one slice <= 16")                                          \
  X(FcWeights, "fc.weights", kDocumented, "dla-constraints.md §1.2 FC / MatMul / Gemm (DLASW operators)",    \
    "the second operand is a build-time constant")                                                           \
  X(FcTransA, "fc.trans_a", kAssumed, "dlakit's rule",                                                       \
    "the activation operand is not transposed (transA = 0)")                                                 \
  X(FcOutChannels, "fc.out_channels", kDocumented, "dla-constraints.md §1.2 FC (HDR86 IFullyConnected)",     \
    "output channels 1..8192")                                                                               \
  X(DeconvLimits, "deconv.limits", kDocumented, "dla-constraints.md §1.2 Deconvolution (HDR10, DOC85)",      \
    "kernel and stride 1..32 or 1x{64,96,128}; pads 0; group 1; dilation 1; channels 1..8192")               \
  X(DeconvOutputPadding, "deconv.output_padding", kAssumed,                                                  \
    "dlakit's rule (TensorRT has no output padding)", "output_padding 0")                                    \
  X(PoolWindow, "pool.window", kDocumented, "dla-constraints.md §1.2 Pooling (HDR10, DOC85)",                \
    "window H,W 1..8")                                                                                       \
  X(PoolStride, "pool.stride", kDocumented, "dla-constraints.md §1.2 Pooling (HDR10, DOC85)",                \
    "stride 1..16")                                                                                          \
  X(PoolPad, "pool.pad", kDocumented, "dla-constraints.md §1.2 Pooling (HDR10, DOC85)", "padding 0..7")      \
  X(PoolOnnxOnly, "pool.onnx_only", kAssumed, "dlakit's rule (TensorRT's Pooling layer has neither)",        \
    "no dilation and no Indices output")                                                                     \
  X(PoolXavierPadding, "pool.xavier_padding", kDocumented, "dla-constraints.md §1.3 (HDR86, DOC85)",         \
    "average pooling on Xavier counts the padding (count_include_pad=1)")                                    \
  X(PoolGlobal, "pool.global", kAssumed,                                                                     \
    "dlakit's rule; TensorRT's ONNX parser imports GlobalAveragePool as a Reduce(AVG) layer "                \
    "(onnx-tensorrt), "                                                                                      \
    "whose DLA support is unconfirmed (dla-constraints.md §1.2 Reduce [U])",                                 \
    "a global pool is a Pooling layer with the whole H x W as its window (so H,W <= 8)")                     \
  X(ActivationClip, "activation.clip", kDocumented,                                                          \
    "dla-constraints.md §1.2 Activation (HDR10 kCLIP, DOC85)",                                               \
    "Clip is a clipped ReLU: constant bounds, min 0, max 1..127")                                            \
  X(PreluSlope, "prelu.slope", kDocumented, "dla-constraints.md §1.2 Parametric ReLU (HDR10, DOC85)",        \
    "a build-time constant slope of the input's rank")                                                       \
  X(EltwiseOps, "eltwise.ops", kDocumented,                                                                  \
    "dla-constraints.md §1.2 ElementWise (HDR10; Div, Pow from the latest docs table) and §1.3",             \
    "Sum, Sub, Prod, Max, Min on both chips; Div and Pow on Orin")                                           \
  X(EltwiseInputs, "eltwise.inputs", kDocumented, "dla-constraints.md §1.2 ElementWise (HDR10)",             \
    "two operands")                                                                                          \
  X(EltwiseBroadcast, "eltwise.broadcast", kAssumed,                                                         \
    "dlakit's rule; the DLA's broadcast rules are unconfirmed "                                              \
    "(dla-constraints.md §1.2 ElementWise [U])",                                                             \
    "operands of the same shape, or one of shape [N,C,1,1]; a constant operand may be a scalar, "            \
    "per-channel or "                                                                                        \
    "full-shape")                                                                                            \
  X(ScaleConstant, "scale.constant", kDocumented, "dla-constraints.md §1.2 Scale (DOC85)",                   \
    "scale and shift are build-time constants")                                                              \
  X(LrnWindow, "lrn.window", kDocumented, "dla-constraints.md §1.2 LRN (HDR10, DOC85)",                      \
    "window 3, 5, 7 or 9")                                                                                   \
  X(ConcatChannels, "concat.channels", kDocumented, "dla-constraints.md §1.2 Concatenation (HDR10, DOC85)",  \
    "the channel axis only, >= 2 inputs")                                                                    \
  X(ResizeLimits, "resize.limits", kDocumented, "dla-constraints.md §1.2 Resize (HDR10, DOC85)",             \
    "scales 1 on N and C; integer H,W scales (nearest 1..32, bilinear 1..4); the listed coordinate modes")   \
  X(SliceLimits, "slice.limits", kDocumented, "dla-constraints.md §1.2 Slice (HDR10, DOC85)",                \
    "4-D input; not the batch dim; constant bounds; step 1")                                                 \
  X(SoftmaxChip, "softmax.chip", kDocumented, "dla-constraints.md §1.2 SoftMax, §1.3 (HDR10, DOC85)",        \
    "SoftMax exists on Orin (DLA 2.0) only")                                                                 \
  X(SoftmaxAxis, "softmax.axis", kDocumented, "dla-constraints.md §1.2 SoftMax (HDR10, DOC85, DOC84)",       \
    "one axis, C or spatial; length <= 8192 (accurate) or <= 1024 (approximate)")                            \
  X(ShuffleLimits, "shuffle.limits", kDocumented, "dla-constraints.md §1.2 Shuffle (DOC85)",                 \
    "4-D input; the batch dim takes no part in a reshape or transpose")                                      \
  X(ShuffleNeighbours, "shuffle.neighbours", kObserved,                                                      \
    "observed in ultralytics/ultralytics#18012 (TensorRT's error text), dla-constraints.md §1.2 Shuffle",    \
    "a Reshape is not directly connected to a Slice or Concat")                                              \
  X(ReduceLimits, "reduce.limits", kAssumed,                                                                 \
    "dlakit's rule; Reduce's DLA limits are unconfirmed "                                                    \
    "(dla-constraints.md §1.2 Reduce [U])",                                                                  \
    "ReduceMean/Max/Sum over C, H, W of a 4-D tensor with keepdims=1")                                       \
  X(ComparisonInt8, "comparison.int8", kDocumented,                                                          \
    "dla-constraints.md §1.2 Comparison (DOC85, DLASW, DOC-LATEST)",                                         \
    "INT8 only, consumed only by a Cast right after it, not a network output")                               \
  X(ComparisonCast, "comparison.cast", kAssumed,                                                             \
    "dlakit's rule: a compiled program stores fp16/int8 feature data only and dlakit has no DLA Cast",      \
    "a comparison's bool result cannot leave a dlakit DLA program")                                          \
  X(UserOverride, "user.override", kDocumented, "the command line (--layerDeviceTypes / --opDeviceTypes)",   \
    "the user placed the layer")

enum class Rule {
#define X(e, id, conf, source, text) e,
  DLAKIT_DLA_RULES(X)
#undef X
};
inline constexpr int kNumRules = 0
#define X(e, id, conf, source, text) +1
    DLAKIT_DLA_RULES(X)
#undef X
    ;

struct RuleInfo {
  const char* id;
  Confidence confidence;
  const char* source;
  const char* text;
};
const RuleInfo& rule_info(Rule r);

}  // namespace dlakit::dla
