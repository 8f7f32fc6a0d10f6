// adjust-for-dla, rule by rule: each rewrite applies where it should (and the new layers pass the DLA
// rules), declines where it should with a reason, and computes what the original computes on random
// inputs on the reference engine (relative L2 <= 1e-6; bit for bit where only data moves or a max is taken).
#include <gtest/gtest.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <string>

#include "../common/test_data.h"
#include "engine/engine.h"
#include "onnx/importer.h"
#include "passes/passes.h"
#include "placement/placement.h"

using namespace dlakit;

namespace {

Graph import_text(const std::string& inputs, const std::string& body, int opset = 13) {
  const std::string text = "<ir_version: 8, opset_import: [\"\" : " + std::to_string(opset) + "]>\ng (" +
                           inputs + ") => (float y) {\n" + body + "\n}";
  onnx::ModelProto m;
  auto st = onnx::OnnxParser::Parse(m, text.c_str());
  EXPECT_TRUE(st.IsOK()) << st.ErrorMessage() << "\n" << text;
  const std::string b = m.SerializeAsString();
  return import_onnx_bytes(b.data(), b.size());
}

struct Adjusted {
  Graph before, after;
  std::vector<Remark> remarks;  // adjust-for-dla's only
  std::string ops;              // the rewritten graph's ops, "AveragePool AveragePool"
};

Adjusted adjust(const std::string& inputs, const std::string& body, const std::string& target = "orin") {
  Adjusted a{import_text(inputs, body), import_text(inputs, body), {}, ""};
  PassOptions o;
  o.target = target;
  passes::adjust_for_dla(a.after, o, a.remarks);
  a.after.verify();
  for (const Node& n : a.after.nodes) a.ops += (a.ops.empty() ? "" : " ") + std::string(op_name(n.op));
  return a;
}

int applied(const Adjusted& a) {
  int n = 0;
  for (auto& r : a.remarks) n += r.applied;
  return n;
}

std::string declined(const Adjusted& a) {
  std::string s;
  for (auto& r : a.remarks)
    if (!r.applied) s += r.message + "\n";
  return s;
}

// Runs both graphs on the same random inputs: the relative L2 of the rewritten output (and whether it is
// bit for bit the original).
double relative_l2(const Adjusted& a, bool* bit_equal = nullptr) {
  const TensorMap in = test_data::random_inputs(a.before);
  const Tensor want = ReferenceEngine(a.before).run(in).at("y");
  const Tensor got = ReferenceEngine(a.after).run(in).at("y");
  EXPECT_EQ(shape_str(want.shape()), shape_str(got.shape()));
  if (bit_equal)
    *bit_equal = want.nbytes() == got.nbytes() && !std::memcmp(want.raw(), got.raw(), want.nbytes());
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double d = got.at_f64(i) - want.at_f64(i);
    num += d * d;
    den += want.at_f64(i) * want.at_f64(i);
  }
  return std::sqrt(num / den);
}

void expect_bit_equal(const Adjusted& a) {
  bool same = false;
  relative_l2(a, &same);
  EXPECT_TRUE(same) << "outputs differ; rewritten graph: " << a.ops;
}

bool standalone(const Graph& g, const std::string& target = "orin") {
  PlacementOptions o;
  o.target = target;
  return place(g, o).standalone_possible;
}

// ---- pool-stages

TEST(PoolStages, GlobalAveragePool16x16BecomesTwoDocumentedPoolingStages) {
  const Adjusted a = adjust("float[1,24,16,16] x", "y = GlobalAveragePool(x)");
  EXPECT_EQ(a.ops, "AveragePool AveragePool");
  EXPECT_EQ(a.after.nodes[0].attr_ints("kernel_shape"), (std::vector<int64_t>{8, 8}));
  EXPECT_EQ(a.after.nodes[1].attr_ints("kernel_shape"), (std::vector<int64_t>{2, 2}));
  EXPECT_LE(relative_l2(a), 1e-6);
  EXPECT_FALSE(standalone(a.before));
  EXPECT_TRUE(standalone(a.after));
}

TEST(PoolStages, WindowsFactorTheOriginal) {
  // 96 = 8 x 6 x 2 along W, 3 along H in the first stage; 20 = 5 x 4.
  Adjusted a = adjust("float[1,8,3,96] x", "y = GlobalAveragePool(x)");
  ASSERT_EQ(a.ops, "AveragePool AveragePool AveragePool");
  EXPECT_EQ(a.after.nodes[0].attr_ints("kernel_shape"), (std::vector<int64_t>{3, 8}));
  EXPECT_EQ(a.after.nodes[1].attr_ints("kernel_shape"), (std::vector<int64_t>{1, 6}));
  EXPECT_EQ(a.after.nodes[2].attr_ints("kernel_shape"), (std::vector<int64_t>{1, 2}));
  EXPECT_LE(relative_l2(a), 1e-6);
  a = adjust("float[1,8,20,20] x", "y = GlobalAveragePool(x)");
  ASSERT_EQ(a.ops, "AveragePool AveragePool");
  EXPECT_EQ(a.after.nodes[0].attr_ints("kernel_shape"), (std::vector<int64_t>{5, 5}));
  EXPECT_EQ(a.after.nodes[1].attr_ints("kernel_shape"), (std::vector<int64_t>{4, 4}));
  EXPECT_LE(relative_l2(a), 1e-6);
}

TEST(PoolStages, APrimeWindowBecomesADepthwiseConvolutionAndAMixWhereItFactorsPartly) {
  Adjusted a = adjust("float[1,16,13,13] x", "y = GlobalAveragePool(x)");
  ASSERT_EQ(a.ops, "Conv");
  EXPECT_EQ(a.after.nodes[0].attr_int("group", 1), 16);
  EXPECT_LE(relative_l2(a), 1e-6);
  EXPECT_TRUE(standalone(a.after));
  a = adjust("float[1,16,33,33] x", "y = GlobalAveragePool(x)");  // 33 = 3 x 11
  ASSERT_EQ(a.ops, "AveragePool Conv");
  EXPECT_EQ(a.after.nodes[1].attr_ints("kernel_shape"), (std::vector<int64_t>{11, 11}));
  EXPECT_LE(relative_l2(a), 1e-6);
}

TEST(PoolStages, DeclinesWhenNoExactStagingFitsTheLimits) {
  const Adjusted a = adjust("float[1,4,37,37] x", "y = GlobalAveragePool(x)");  // 37 > 32, prime
  EXPECT_EQ(a.ops, "GlobalAveragePool");
  EXPECT_NE(declined(a).find("no exact staging"), std::string::npos) << declined(a);
}

TEST(PoolStages, KeepsTheOriginalWhenANewLayerWouldNotRunOnTheDla) {
  // 9000 channels exceed the DLA's dimension limit: the stages would not run on it either.
  const Adjusted a = adjust("float[1,9000,16,16] x", "y = GlobalAveragePool(x)");
  EXPECT_EQ(a.ops, "GlobalAveragePool");
  EXPECT_NE(declined(a).find("kept the original: the new AveragePool"), std::string::npos) << declined(a);
  EXPECT_NE(declined(a).find("ShapeOutOfRange"), std::string::npos) << declined(a);
}

TEST(PoolStages, GlobalMaxPoolStagesAreBitExactEvenWithPadding) {
  Adjusted a = adjust("float[1,8,16,24] x", "y = GlobalMaxPool(x)");
  EXPECT_EQ(a.ops, "MaxPool MaxPool");
  expect_bit_equal(a);
  a = adjust("float[1,8,13,13] x", "y = GlobalMaxPool(x)");  // 13: a window of 8 padded by 3, then 2
  ASSERT_EQ(a.ops, "MaxPool MaxPool");
  EXPECT_EQ(a.after.nodes[0].attr_ints("pads"), (std::vector<int64_t>{0, 0, 3, 3}));
  expect_bit_equal(a);
  EXPECT_TRUE(standalone(a.after));
}

TEST(PoolStages, WindowedPoolsOverEight) {
  // disjoint windows (stride = window) stage, with the padding on the first stage
  Adjusted a = adjust(
      "float[1,8,34,32] x",
      "y = AveragePool<kernel_shape=[16,16], strides=[16,16], pads=[1,0,1,0], count_include_pad=1>(x)");
  EXPECT_EQ(a.ops, "AveragePool AveragePool");
  EXPECT_LE(relative_l2(a), 1e-6);
  a = adjust("float[1,8,32,32] x", "y = MaxPool<kernel_shape=[16,4], strides=[16,2]>(x)");
  EXPECT_EQ(a.ops, "MaxPool MaxPool");
  expect_bit_equal(a);
  // overlapping average windows: one depthwise convolution
  a = adjust("float[1,8,30,30] x",
             "y = AveragePool<kernel_shape=[12,12], strides=[4,4], pads=[2,2,2,2], count_include_pad=1>(x)");
  EXPECT_EQ(a.ops, "Conv");
  EXPECT_LE(relative_l2(a), 1e-6);
  // no exact form: overlapping max windows; padding counted out on a staged axis
  a = adjust("float[1,8,30,30] x", "y = MaxPool<kernel_shape=[12,12], strides=[4,4]>(x)");
  EXPECT_EQ(a.ops, "MaxPool");
  EXPECT_NE(declined(a).find("overlapping max windows"), std::string::npos) << declined(a);
  a = adjust("float[1,8,34,32] x",
             "y = AveragePool<kernel_shape=[16,16], strides=[16,16], pads=[1,0,1,0]>(x)");
  EXPECT_EQ(a.ops, "AveragePool");
  EXPECT_NE(declined(a).find("count_include_pad=0"), std::string::npos) << declined(a);
  // within the limit: not a match, no remark
  a = adjust("float[1,8,32,32] x", "y = AveragePool<kernel_shape=[3,3], strides=[2,2]>(x)");
  EXPECT_EQ(a.ops, "AveragePool");
  EXPECT_TRUE(a.remarks.empty());
}

// ---- reduce-as-pool

TEST(ReduceAsPool, ReduceOverHWBecomesPoolingAndKeepdims0AReshape) {
  Adjusted a = adjust("float[1,64,7,7] x", "y = ReduceMean<axes=[2,3], keepdims=0>(x)");
  EXPECT_EQ(a.ops, "AveragePool Reshape");
  EXPECT_LE(relative_l2(a), 1e-6);
  EXPECT_TRUE(standalone(a.after));
  EXPECT_FALSE(standalone(a.before));
  a = adjust("float[1,8,5,40] x", "y = ReduceMax<axes=[-1]>(x)");  // W only: 40 = 8 x 5
  EXPECT_EQ(a.ops, "MaxPool MaxPool");
  expect_bit_equal(a);
  a = adjust("float[1,8,5,40] x", "y = ReduceMean<axes=[1]>(x)");  // over C: pooling cannot
  EXPECT_EQ(a.ops, "ReduceMean");
  EXPECT_TRUE(a.remarks.empty());
}

// ---- broadcast-constant

TEST(BroadcastConstant, ConstantsTakeAShapeTheDlaBroadcasts) {
  // [6] against [1,4,5,6] broadcasts along W: the full shape, same values, bit for bit
  Adjusted a = adjust("float[1,4,5,6] x", "k = Constant<value = float[6] {1,2,3,4,5,6}>()\ny = Add(x, k)");
  EXPECT_EQ(applied(a), 1);
  EXPECT_EQ(a.after.value(a.after.nodes[0].inputs[1]).type.shape, (Shape{1, 4, 5, 6}));
  expect_bit_equal(a);
  EXPECT_TRUE(standalone(a.after));
  // [4,1,6] whose values change along C only: per-channel [1,4,1,1] (as Sub's first operand)
  a = adjust("float[1,4,5,6] x",
             "k = Constant<value = float[4,1,6] {1,1,1,1,1,1, 2,2,2,2,2,2, 3,3,3,3,3,3, 4,4,4,4,4,4}>()\n"
             "y = Sub(k, x)");
  EXPECT_EQ(applied(a), 1);
  EXPECT_EQ(a.after.value(a.after.nodes[0].inputs[0]).type.shape, (Shape{1, 4, 1, 1}));
  expect_bit_equal(a);
  // a rank-2 classifier bias [2] against [1,2]
  a = adjust("float[1,2] x", "k = Constant<value = float[2] {0.5, -1}>()\ny = Add(x, k)");
  EXPECT_EQ(applied(a), 1);
  expect_bit_equal(a);
}

TEST(BroadcastConstant, DeclinesWhereTheActivationBroadcastsOrTheConstantIsTooLarge) {
  Adjusted a = adjust("float[1,4,5,1] x", "k = Constant<value = float[6] {1,2,3,4,5,6}>()\ny = Mul(x, k)");
  EXPECT_EQ(applied(a), 0);
  EXPECT_NE(declined(a).find("broadcast too"), std::string::npos) << declined(a);
  a = adjust(
      "float[1,1,1100,1000] x", "k = Constant<value = float[1000] {" + [] {
        std::string v;
        for (int i = 0; i < 1000; ++i) v += (i ? "," : "") + std::to_string(i % 7);
        return v;
      }() + "}>()\ny = Add(x, k)");
  EXPECT_EQ(applied(a), 0);
  EXPECT_NE(declined(a).find("dlakit's cap"), std::string::npos) << declined(a);
  a = adjust("float[1,4,5,6] x", "k = Constant<value = float[4,1,1] {1,2,3,4}>()\ny = Add(x, k)");
  EXPECT_TRUE(a.remarks.empty()) << "a per-channel constant needs no rewrite";
}

// ---- div-by-constant, sqrt-as-pow, square-as-mul: per chip

TEST(ChipArithmetic, DivByAConstantIsAMulOnXavierOnly) {
  const std::string body = "k = Constant<value = float[1] {6}>()\ny = Div(x, k)";
  Adjusted a = adjust("float[1,8,4,4] x", body, "xavier");
  EXPECT_EQ(a.ops, "Mul");
  EXPECT_LE(relative_l2(a), 1e-6);
  EXPECT_TRUE(standalone(a.after, "xavier"));
  EXPECT_FALSE(standalone(a.before, "xavier"));
  a = adjust("float[1,8,4,4] x", body, "orin");
  EXPECT_EQ(a.ops, "Div");
  EXPECT_TRUE(a.remarks.empty()) << "Orin divides natively";
}

TEST(ChipArithmetic, SqrtIsPowOnOrinAndStaysOnXavier) {
  const std::string body =
      "one = Constant<value = float[1] {1}>()\nsq = Mul(x, x)\ns = Add(sq, one)\ny = Sqrt(s)";
  Adjusted a = adjust("float[1,8,4,4] x", body, "orin");
  EXPECT_EQ(a.ops, "Mul Add Pow");
  EXPECT_LE(relative_l2(a), 1e-6);
  EXPECT_TRUE(standalone(a.after));
  a = adjust("float[1,8,4,4] x", body, "xavier");
  EXPECT_EQ(a.ops, "Mul Add Sqrt");
  EXPECT_NE(declined(a).find("has no Pow"), std::string::npos) << declined(a);
}

TEST(ChipArithmetic, SquareIsMulOnXavier) {
  const std::string body = "two = Constant<value = float[1] {2}>()\ny = Pow(x, two)";
  Adjusted a = adjust("float[1,8,4,4] x", body, "xavier");
  EXPECT_EQ(a.ops, "Mul");
  expect_bit_equal(a);
  EXPECT_TRUE(standalone(a.after, "xavier"));
  a = adjust("float[1,8,4,4] x", body, "orin");
  EXPECT_EQ(a.ops, "Pow");
}

// ---- noop-layers

TEST(NoopLayers, ZeroPadAndOneInputConcatAreDroppedUnlessTheyWriteAGraphOutput) {
  Adjusted a =
      adjust("float[1,8,6,6] x",
             "p = Constant<value = int64[8] {0,0,0,0,0,0,0,0}>()\nz = Pad(x, p)\nc = Concat<axis=1>(z)\n"
             "y = AveragePool<kernel_shape=[2,2], strides=[2,2]>(c)");
  EXPECT_EQ(a.ops, "AveragePool");
  EXPECT_EQ(applied(a), 2);
  expect_bit_equal(a);
  a = adjust("float[1,8,6,6] x", "r = Relu(x)\ny = Concat<axis=1>(r)");
  EXPECT_EQ(a.ops, "Relu Concat");
  EXPECT_NE(declined(a).find("graph output"), std::string::npos) << declined(a);
}

// ---- transpose-before-reshape

TEST(TransposeBeforeReshape, A3DTransposeOfA4DTensorBecomesA4DTransposeThenAReshape) {
  Adjusted a =
      adjust("float[1,6,1,5] x",
             "s = Constant<value = int64[3] {1,6,5}>()\nr = Reshape(x, s)\ny = Transpose<perm=[0,2,1]>(r)");
  bool found = false;
  for (const Node& n : a.after.nodes)
    if (n.op == OpKind::Transpose) {
      EXPECT_EQ(n.attr_ints("perm"), (std::vector<int64_t>{0, 3, 2, 1}));
      found = true;
    }
  EXPECT_TRUE(found) << a.ops;
  expect_bit_equal(a);
  Graph g = a.after;
  std::vector<Remark> dead;
  passes::eliminate_dead_code(g, dead);
  EXPECT_TRUE(standalone(g));
  EXPECT_FALSE(standalone(a.before));
  a = adjust("float[1,6,1,5] x",
             "s = Constant<value = int64[3] {1,6,5}>()\nr = Reshape(x, s)\ny = Transpose<perm=[1,0,2]>(r)");
  EXPECT_NE(declined(a).find("moves the batch axis"), std::string::npos) << declined(a);
}

// ---- last-axis-mean and broadcast-by-fc: LayerNorm over the last axis of [1,T,D]

TEST(RankThreeStatistics, LayerNormStatisticsBecomeFullyConnectedLayers) {
  const std::string body =
      "m = ReduceMean<axes=[-1]>(x)\nd = Sub(x, m)\ntwo = Constant<value = float[1] {2}>()\nsq = Pow(d, "
      "two)\n"
      "v = ReduceMean<axes=[-1]>(sq)\neps = Constant<value = float[1] {1e-5}>()\nve = Add(v, eps)\n"
      "s = Sqrt(ve)\ny = Div(d, s)";
  const Adjusted a = adjust("float[1,40,120] x", body, "orin");
  int matmuls = 0;
  for (const Node& n : a.after.nodes) matmuls += n.op == OpKind::MatMul;
  EXPECT_EQ(matmuls, 4) << a.ops;  // two means, two expansions
  const double rel = relative_l2(a);
  std::printf("LayerNorm statistics as FC layers: relative L2 %.3g\n", rel);
  EXPECT_LE(rel, 1e-6);
  EXPECT_TRUE(standalone(a.after));
  EXPECT_FALSE(standalone(a.before));
}

TEST(RankThreeStatistics, ExpansionByOnesIsBitExact) {
  const Adjusted a = adjust("float[1,40,120] x, float[1,40,1] m", "y = Sub(x, m)");
  EXPECT_EQ(a.ops, "MatMul Sub");
  expect_bit_equal(a);
}

// ---- the group switch

TEST(AdjustForDla, DisablingTheGroupOrOneRewriteKeepsTheLayers) {
  const std::string body = "p = GlobalAveragePool(x)\nk = Constant<value = float[1] {6}>()\ny = Div(p, k)";
  Graph g = import_text("float[1,8,16,16] x", body);
  PassOptions o;
  o.target = "xavier";
  o.disabled = {"adjust-for-dla"};
  run_passes(g, o);
  EXPECT_EQ(g.nodes[0].op, OpKind::GlobalAveragePool);
  g = import_text("float[1,8,16,16] x", body);
  o.disabled = {"pool-stages"};
  run_passes(g, o);
  EXPECT_EQ(g.nodes[0].op, OpKind::GlobalAveragePool);
  EXPECT_EQ(g.nodes[1].op, OpKind::Mul) << "div-by-constant still runs";
  o.disabled = {"pool-stage"};
  try {
    run_passes(g, o);
    FAIL() << "an unknown pass name must be an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pool-stages"), std::string::npos) << "lists the known names";
  }
}

}  // namespace
