// The reference engine's fused steps (engine/fusion.h) against the same graph run node by node: the
// outputs must be bit-identical, and the plans must actually fuse (so the comparison means something).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

#include "../common/test_data.h"
#include "../common/test_paths.h"
#include "base/cpu.h"
#include "engine/engine.h"
#include "kernels/expand_depthwise.h"
#include "kernels/registry.h"
#include "onnx/importer.h"
#include "placement/placement.h"
#include "quant/numerics.h"

using namespace dlakit;

namespace {

// Runs g fused and node by node (an observer forces one step per node); both outputs, by name.
std::pair<TensorMap, TensorMap> run_both(const Graph& g, const TensorMap& in) {
  ReferenceEngine fused(g), single(g);
  single.set_observer([](const Node&, const std::vector<Tensor>&) {});
  return {fused.run(in), single.run(in)};
}

void expect_bit_identical(const TensorMap& a, const TensorMap& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) {
    const Tensor& u = b.at(name);
    ASSERT_EQ(t.type(), u.type()) << name;
    ASSERT_EQ(std::memcmp(t.raw(), u.raw(), t.nbytes()), 0)
        << name << " differs between fused and single steps";
  }
}

size_t fused_nodes(const Graph& g) {
  size_t covered = 0;
  for (const EngineStep& s : plan_fused_steps(g))
    if (s.nodes.size() > 1) covered += s.nodes.size();
  return covered;
}

int add_node(Graph& g, OpKind op, std::vector<int> inputs, const char* name, int opset = 13) {
  Node n;
  n.op = op;
  n.name = name;
  n.opset = opset;
  n.inputs = std::move(inputs);
  auto types = op_impl(op).infer(InferContext(g, n));
  n.outputs = {g.add_value(std::string(name) + "_out", types[0])};
  g.nodes.push_back(n);
  return n.outputs[0];
}

Tensor random_f32(const Shape& shape, std::mt19937& gen) {
  Tensor t(DType::kF32, shape);
  test_data::fill_random(t, gen);
  return t;
}

}  // namespace

// Conv -> Add(residual first) -> Clip, then a chain with per-channel constants first in Sub and Div,
// HardSigmoid and a Mul back onto the chain's input; odd sizes.
TEST(Fusion, SyntheticChainsAreBitIdentical) {
  Graph g;
  const int x = g.add_value("x", {DType::kF32, {2, 5, 9, 13}});
  const int r = g.add_value("r", {DType::kF32, {2, 7, 9, 13}});
  g.inputs = {x, r};
  std::mt19937 gen(3);
  auto random = [&](const Shape& s) { return random_f32(s, gen); };
  const int w = g.add_constant("w", random({7, 5, 3, 3})), b = g.add_constant("b", random({7}));
  Node conv;
  conv.op = OpKind::Conv;
  conv.name = "conv";
  conv.opset = 13;
  conv.inputs = {x, w, b};
  conv.attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
  conv.outputs = {g.add_value("conv_out", op_impl(OpKind::Conv).infer(InferContext(g, conv))[0])};
  g.nodes.push_back(conv);
  const int sum = add_node(g, OpKind::Add, {r, conv.outputs[0]}, "add");
  const int lo = g.add_constant("lo", Tensor::scalar_f32(-0.5f)),
            hi = g.add_constant("hi", Tensor::scalar_f32(1.f));
  const int clip = add_node(g, OpKind::Clip, {sum, lo, hi}, "clip");
  const int per_channel = g.add_constant("pc", random({7, 1, 1}));
  const int sub = add_node(g, OpKind::Sub, {per_channel, clip}, "sub");
  const int div = add_node(g, OpKind::Div, {per_channel, sub}, "div");
  const int hs = add_node(g, OpKind::HardSigmoid, {div}, "hsig");
  const int y = add_node(g, OpKind::Mul, {clip, hs}, "mul");
  g.outputs = {y};
  g.relink();
  EXPECT_EQ(fused_nodes(g), 7u);  // conv+add+clip, and sub div hsig mul
  auto [fused, single] = run_both(g, test_data::random_inputs(g));
  expect_bit_identical(fused, single);
}

// The convolution epilogues beyond Relu/Clip: a depthwise convolution's residual and Relu, and the hard
// swish (HardSigmoid, then Mul back onto its input, in either operand order, after a residual Add too) on a
// direct, a pointwise and a depthwise convolution. The plan must fuse all four; rows of 71 outputs take
// the depthwise store's whole vectors and its short runs.
TEST(Fusion, HardSwishAndDepthwiseEpiloguesAreBitIdentical) {
  Graph g;
  const int x = g.add_value("x", {DType::kF32, {1, 6, 11, 71}});
  const int r = g.add_value("r", {DType::kF32, {1, 6, 11, 71}});
  g.inputs = {x, r};
  std::mt19937 gen(5);
  auto random = [&](const Shape& s) { return random_f32(s, gen); };
  auto conv = [&](int in, int64_t group, int64_t k, const char* name) {
    Node n;
    n.op = OpKind::Conv;
    n.name = name;
    n.opset = 13;
    n.inputs = {in, g.add_constant(std::string(name) + "_w", random({6, 6 / group, k, k})),
                g.add_constant(std::string(name) + "_b", random({6}))};
    n.attrs["group"] = group;
    n.attrs["pads"] = std::vector<int64_t>{k / 2, k / 2, k / 2, k / 2};
    n.outputs = {g.add_value(std::string(name) + "_out", op_impl(OpKind::Conv).infer(InferContext(g, n))[0])};
    g.nodes.push_back(n);
    return n.outputs[0];
  };
  const int depthwise = add_node(g, OpKind::Add, {conv(x, 6, 3, "dw"), r}, "dw_add");
  const int a = add_node(g, OpKind::Relu, {depthwise}, "dw_relu");
  const int c2 = conv(a, 1, 3, "direct");
  const int y1 = add_node(g, OpKind::Mul, {add_node(g, OpKind::HardSigmoid, {c2}, "hsig1"), c2}, "mul1");
  const int sum = add_node(g, OpKind::Add, {conv(y1, 1, 1, "pointwise"), r}, "pw_add");
  const int h2 = add_node(g, OpKind::HardSigmoid, {sum}, "hsig2");
  g.nodes.back().attrs["alpha"] = 0.25f;
  g.nodes.back().attrs["beta"] = 0.4f;
  const int y2 = add_node(g, OpKind::Mul, {sum, h2}, "mul2");
  const int c4 = conv(y2, 6, 3, "dw2");
  const int y = add_node(g, OpKind::Mul, {c4, add_node(g, OpKind::HardSigmoid, {c4}, "hsig3")}, "mul3");
  g.outputs = {y};
  g.relink();
  EXPECT_EQ(fused_nodes(g), 13u);  // dw+add+relu, direct+hsig+mul, pointwise+add+hsig+mul, dw+hsig+mul
  auto [fused, single] = run_both(g, test_data::random_inputs(g));
  expect_bit_identical(fused, single);
}

// A pointwise expansion [-> activation] -> depthwise [-> activation] is one step (EngineStep::expand), bit
// for bit the two layers. Odd sizes: expansions of 37 and 70 channels (a pair of 16-channel groups cut short,
// an odd group), 5x5 and dilated windows, stride 2, two images, no expansion bias or activation; rows of up
// to 56 outputs take the fused kernel where the CPU has it (AVX-512), rows of 60 always the two layers.
TEST(Fusion, ExpansionAndDepthwiseAreOneStepAndBitIdentical) {
  struct Case {
    int64_t C, E, H, W, k, stride, dilation;
    bool expand_bias, expand_clip, depthwise_relu, fused_kernel;
  };
  const Case cases[] = {
      {13, 37, 11, 9, 3, 1, 1, true, true, true, true},   {5, 70, 14, 14, 3, 2, 1, true, true, false, true},
      {24, 50, 9, 23, 5, 1, 2, false, false, true, true}, {7, 16, 8, 56, 3, 1, 1, true, false, false, true},
      {6, 33, 12, 60, 3, 1, 1, true, true, true, false},
  };
  for (const Case& t : cases) {
    SCOPED_TRACE(testing::Message() << "C " << t.C << " E " << t.E << " " << t.H << "x" << t.W << " k " << t.k
                                    << " stride " << t.stride << " dilation " << t.dilation);
    Graph g;
    const int x = g.add_value("x", {DType::kF32, {2, t.C, t.H, t.W}});
    g.inputs = {x};
    std::mt19937 gen(uint32_t(t.E));
    auto random = [&](const Shape& s) { return random_f32(s, gen); };
    Node ex;
    ex.op = OpKind::Conv;
    ex.name = "expand";
    ex.opset = 13;
    ex.inputs = {x, g.add_constant("expand_w", random({t.E, t.C, 1, 1}))};
    if (t.expand_bias) ex.inputs.push_back(g.add_constant("expand_b", random({t.E})));
    ex.outputs = {g.add_value("expand_out", op_impl(OpKind::Conv).infer(InferContext(g, ex))[0])};
    g.nodes.push_back(ex);
    int v = ex.outputs[0];
    if (t.expand_clip) {
      v = add_node(
          g, OpKind::Clip,
          {v, g.add_constant("lo", Tensor::scalar_f32(0.f)), g.add_constant("hi", Tensor::scalar_f32(1.5f))},
          "clip");
    }
    Node dw;
    dw.op = OpKind::Conv;
    dw.name = "depthwise";
    dw.opset = 13;
    dw.inputs = {v, g.add_constant("dw_w", random({t.E, 1, t.k, t.k})),
                 g.add_constant("dw_b", random({t.E}))};
    const int64_t pad = t.k / 2 * t.dilation;
    dw.attrs["group"] = t.E;
    dw.attrs["pads"] = std::vector<int64_t>{pad, pad, pad, pad};
    dw.attrs["strides"] = std::vector<int64_t>{t.stride, t.stride};
    dw.attrs["dilations"] = std::vector<int64_t>{t.dilation, t.dilation};
    dw.outputs = {g.add_value("dw_out", op_impl(OpKind::Conv).infer(InferContext(g, dw))[0])};
    g.nodes.push_back(dw);
    g.outputs = {t.depthwise_relu ? add_node(g, OpKind::Relu, {dw.outputs[0]}, "relu") : dw.outputs[0]};
    g.relink();
    const std::vector<EngineStep> steps = plan_fused_steps(g);
    ASSERT_EQ(steps.size(), 1u);
    ASSERT_TRUE(steps[0].expand.has_value());
    const TensorMap in = test_data::random_inputs(g);
    auto [fused, single] = run_both(g, in);
    expect_bit_identical(fused, single);
    // Which path the step took: the fused kernel, or the two layers.
    Tensor y = Tensor::uninitialized(DType::kF32, g.value(dw.outputs[0]).type.shape);
    const Value& w = g.value(steps[0].expand->inputs[1]);
    const bool took = ref::run_expand_depthwise(
        *steps[0].expand, in.at("x"), *w.constant,
        t.expand_bias ? &*g.value(steps[0].expand->inputs[2]).constant : nullptr, *steps[0].conv,
        *g.value(steps[0].conv->inputs[1]).constant, &*g.value(steps[0].conv->inputs[2]).constant, y);
    EXPECT_EQ(took, t.fused_kernel && cpu::avx512());
  }
}

// MobileNetV2: every inverted residual block but the first (which has no expansion) is one expand step, and
// on AVX-512 each of them runs on the fused kernel (none falls back to the two layers).
TEST(Fusion, MobileNetV2ExpandsInPlace) {
  ImportOptions opt;
  opt.input_shapes["input"] = {1, 3, 224, 224};
  const Graph g =
      import_onnx_file(std::string(test_paths::source_dir()) + "/.cache/models/mobilenet_v2.onnx", opt);
  size_t expand_steps = 0, fused_kernel = 0;
  std::mt19937 gen(9);
  auto constant = [&](const Node& n, size_t k) {
    return k < n.inputs.size() && n.inputs[k] >= 0 ? &*g.value(n.inputs[k]).constant : nullptr;
  };
  for (const EngineStep& s : plan_fused_steps(g)) {
    if (!s.expand) continue;
    ++expand_steps;
    const Tensor x = random_f32(g.value(s.expand->inputs[0]).type.shape, gen);
    Tensor y = Tensor::uninitialized(DType::kF32, g.value(s.conv->outputs[0]).type.shape);
    fused_kernel += ref::run_expand_depthwise(*s.expand, x, *constant(*s.expand, 1), constant(*s.expand, 2),
                                              *s.conv, *constant(*s.conv, 1), constant(*s.conv, 2), y);
  }
  EXPECT_EQ(expand_steps, 16u);
  EXPECT_EQ(fused_kernel, cpu::avx512() ? 16u : 0u);
}

// Real models: ResNet-18 (Conv + Add + Relu), MobileNetV2 (Conv + Clip), PP-OCRv4 det (HardSwish chains
// with per-channel scales), on random inputs.
TEST(Fusion, RealModelsAreBitIdentical) {
  const std::string models = std::string(test_paths::source_dir()) + "/.cache/models/";
  const std::pair<const char*, Shape> cases[] = {
      {"resnet18", {1, 3, 224, 224}},
      {"resnet50",
       {1, 3, 224, 224}},  // 1x1 layers whose fused residual moves them from channel tiles to the GEMM
      {"mobilenet_v2", {1, 3, 224, 224}},
      {"ppocr_det", {1, 3, 96, 160}}};
  for (const auto& [name, shape] : cases) {
    ImportOptions opt;
    opt.input_shapes[std::string(name) == "ppocr_det" ? "x" : "input"] = shape;
    const Graph g = import_onnx_file(models + name + ".onnx", opt);
    EXPECT_GT(fused_nodes(g), g.nodes.size() / 4) << name << ": the plan fuses too little to test";
    auto [fused, single] = run_both(g, test_data::random_inputs(g));
    expect_bit_identical(fused, single);
  }
}

// run_batch (samples on different threads, kernels single-threaded) against run() one sample at a time:
// the FP32 engine and the INT8 emulation, bit for bit.
TEST(Engine, BatchRunsMatchSingleRunsBitForBit) {
  ImportOptions opt;
  opt.input_shapes["x"] = {1, 3, 48, 96};
  const Graph g =
      import_onnx_file(std::string(test_paths::source_dir()) + "/.cache/models/ppocr_rec.onnx", opt);
  std::vector<TensorMap> samples;
  for (uint32_t seed = 1; seed <= 3; ++seed) samples.push_back(test_data::random_inputs(g, seed * 7));
  ReferenceEngine fp32(g);
  PlacementOptions po;
  po.precision = dla::Precision::kINT8;
  const quant::ScaleTable scales = test_data::random_calibration(g, 1);
  quant::EmulatedEngine int8(g, quant::plan_numerics(g, place(g, po), &scales));
  for (ReferenceEngine* e : {&fp32, &int8.engine()}) {
    const std::vector<TensorMap> batch = e->run_batch(samples);
    ASSERT_EQ(batch.size(), samples.size());
    for (size_t i = 0; i < samples.size(); ++i) expect_bit_identical(batch[i], e->run(samples[i]));
  }
}

// The INT8 emulation skips fake-quantizing inputs its own producers stored on the same grid
// (NumericsRunner with inputs_emulated): the outputs equal the runner that quantizes every input again,
// bit for bit, on PP-OCRv4 rec (equal-range groups share scales) and ResNet-18 (residual Adds), and the
// shortcut is actually taken.
TEST(Engine, SkippedRequantizationChangesNothing) {
  const std::pair<const char*, Shape> cases[] = {{"ppocr_rec", {1, 3, 48, 96}},
                                                 {"resnet18", {1, 3, 224, 224}}};
  for (const auto& [name, shape] : cases) {
    ImportOptions opt;
    opt.input_shapes[std::string(name) == "ppocr_rec" ? "x" : "input"] = shape;
    const Graph g =
        import_onnx_file(std::string(test_paths::source_dir()) + "/.cache/models/" + name + ".onnx", opt);
    PlacementOptions po;
    po.precision = dla::Precision::kINT8;
    const quant::ScaleTable scales = test_data::random_calibration(g, 1);
    const quant::NumericsPlan plan = quant::plan_numerics(g, place(g, po), &scales);
    quant::EmulatedEngine fast(g, plan);
    quant::NumericsRunner every_input(g, plan);
    ReferenceEngine slow(g);
    slow.set_node_runner(std::ref(every_input));
    int skipped = 0;
    quant::NumericsRunner counted(g, plan, true);
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (size_t k = 0; k < g.nodes[i].inputs.size(); ++k) skipped += counted.input_on_grid(i, k);
    EXPECT_GT(skipped, 10) << name;
    const TensorMap in = test_data::random_inputs(g, 5);
    expect_bit_identical(fast.run(in), slow.run(in));
  }
}
