// For every DLA rule: a supported case, and an unsupported case that must report the exact reason code and
// field. Models are written in ONNX text syntax; weights come from ConstantOfShape so they fold to constants.
#include <gtest/gtest.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include "onnx/importer.h"
#include "placement/placement.h"
#include "quant/numerics.h"
#include "targets/dla/rules.h"

using namespace dlakit;
using dla::Precision;
using dla::ReasonCode;

namespace {

struct RuleCase {
  const char* name;
  const char* inputs;  // graph inputs, ONNX text
  const char* body;    // statements; the node under test writes `y`
  const char* expect;  // "" = supported; else the reason code name
  const char* field;   // substring of the reason's field
  const char* target = "orin";
  Precision precision = Precision::kFP16;
};

// Constant weights of a given shape, filled with 0.01.
#define W(name, dims, rank)                                          \
  name "_s = Constant<value = int64[" #rank "] {" dims "}>()\n" name \
       " = ConstantOfShape<value = float[1] {0.01}>(" name "_s)\n"

const RuleCase kCases[] = {
    // Convolution
    {"conv ok", "float[1,16,32,32] x", W("w", "16,16,3,3", 4) "y = Conv<pads=[1,1,1,1]>(x, w)", "", ""},
    {"conv kernel 33", "float[1,1,40,40] x", W("w", "1,1,33,33", 4) "y = Conv(x, w)", "AttrOutOfRange",
     "kernel_shape[0]"},
    {"conv stride 9", "float[1,1,40,40] x", W("w", "1,1,3,3", 4) "y = Conv<strides=[9,1]>(x, w)",
     "AttrOutOfRange", "strides[0]"},
    {"conv pad >= kernel", "float[1,4,8,8] x", W("w", "4,4,1,1", 4) "y = Conv<pads=[1,0,0,0]>(x, w)",
     "AttrOutOfRange", "pads[0] (top)"},
    {"conv dilation 33", "float[1,1,80,80] x", W("w", "1,1,2,2", 4) "y = Conv<dilations=[33,1]>(x, w)",
     "AttrOutOfRange", "dilations[0]"},
    {"conv out channels", "float[1,1,2,2] x", W("w", "8193,1,1,1", 4) "y = Conv(x, w)", "AttrOutOfRange",
     "output channels"},
    {"conv weights not constant", "float[1,4,8,8] x, float[4,4,3,3] w", "y = Conv(x, w)", "NotConstant",
     "input[1] (weights)"},
    {"conv CBUF", "float[1,512,8,200] x", W("w", "256,512,3,3", 4) "y = Conv<pads=[1,1,1,1]>(x, w)",
     "BufferExceeded", "CBUF"},
    {"conv int8 group channels", "float[1,6,8,8] x", W("w", "6,3,3,3", 4) "y = Conv<group=2>(x, w)",
     "ModeNotSupported", "channels per group", "orin", Precision::kINT8},
    {"conv fp16 group channels ok", "float[1,6,8,8] x", W("w", "6,3,3,3", 4) "y = Conv<group=2>(x, w)", "",
     ""},
    {"conv 3-D", "float[1,2,4,8,8] x", W("w", "2,2,3,3,3", 5) "y = Conv(x, w)", "ShapeOutOfRange",
     "input[0].rank"},
    // FullyConnected
    {"gemm ok", "float[1,64] x", W("w", "10,64", 2) "y = Gemm<transB=1>(x, w)", "", ""},
    {"gemm weights not constant", "float[1,64] x, float[64,10] w", "y = Gemm(x, w)", "NotConstant",
     "input[1] (weights)"},
    {"gemm transA", "float[64,1] x", W("w", "64,10", 2) "y = Gemm<transA=1>(x, w)", "ModeNotSupported",
     "transA"},
    // Deconvolution
    {"deconv ok", "float[1,8,8,8] x", W("w", "8,4,2,2", 4) "y = ConvTranspose<strides=[2,2]>(x, w)", "", ""},
    {"deconv pads", "float[1,8,8,8] x", W("w", "8,4,3,3", 4) "y = ConvTranspose<pads=[1,1,1,1]>(x, w)",
     "AttrOutOfRange", "pads"},
    {"deconv kernel 64x64", "float[1,1,4,4] x", W("w", "1,1,64,64", 4) "y = ConvTranspose(x, w)",
     "AttrOutOfRange", "kernel_shape"},
    {"deconv kernel 1x64 ok", "float[1,1,4,4] x", W("w", "1,1,1,64", 4) "y = ConvTranspose(x, w)", "", ""},
    {"deconv group", "float[1,8,8,8] x", W("w", "8,2,2,2", 4) "y = ConvTranspose<group=2>(x, w)",
     "AttrOutOfRange", "group"},
    // Pooling
    {"maxpool ok", "float[1,8,16,16] x", "y = MaxPool<kernel_shape=[3,3], strides=[2,2]>(x)", "", ""},
    {"maxpool window 9", "float[1,8,16,16] x", "y = MaxPool<kernel_shape=[9,3]>(x)", "AttrOutOfRange",
     "kernel_shape[0]"},
    {"maxpool stride 17", "float[1,8,40,40] x", "y = MaxPool<kernel_shape=[2,2], strides=[17,1]>(x)",
     "AttrOutOfRange", "strides[0]"},
    {"avgpool exclusive xavier", "float[1,8,16,16] x",
     "y = AveragePool<kernel_shape=[3,3], pads=[1,1,1,1]>(x)", "ModeNotSupported", "count_include_pad",
     "xavier"},
    {"avgpool exclusive orin ok", "float[1,8,16,16] x",
     "y = AveragePool<kernel_shape=[3,3], pads=[1,1,1,1]>(x)", "", ""},
    {"gap 7x7 ok", "float[1,8,7,7] x", "y = GlobalAveragePool(x)", "", ""},
    {"gap 9x9", "float[1,8,9,9] x", "y = GlobalAveragePool(x)", "AttrOutOfRange", "window (input H,W)[0]"},
    // Activation
    {"relu6 ok", "float[1,8,4,4] x",
     "lo = Constant<value = float {0}>()\nhi = Constant<value = float {6}>()\ny = Clip(x, lo, hi)", "", ""},
    {"clip min -1", "float[1,8,4,4] x",
     "lo = Constant<value = float {-1}>()\nhi = Constant<value = float {1}>()\ny = Clip(x, lo, hi)",
     "ModeNotSupported", "min"},
    {"clip max 200", "float[1,8,4,4] x",
     "lo = Constant<value = float {0}>()\nhi = Constant<value = float {200}>()\ny = Clip(x, lo, hi)",
     "AttrOutOfRange", "max"},
    {"leaky relu ok", "float[1,8,4,4] x", "y = LeakyRelu<alpha=0.1>(x)", "", ""},
    // Parametric ReLU
    {"prelu ok", "float[1,16,4,4] x", W("s", "1,16,1,1", 4) "y = PRelu(x, s)", "", ""},
    {"prelu slope rank", "float[1,16,4,4] x", W("s", "16,1,1", 3) "y = PRelu(x, s)", "ShapeOutOfRange",
     "slope rank"},
    // ElementWise / Scale
    {"add ok", "float[1,16,8,8] a, float[1,16,8,8] b", "y = Add(a, b)", "", ""},
    {"mul channel broadcast ok", "float[1,16,8,8] a, float[1,16,1,1] b", "y = Mul(a, b)", "", ""},
    {"add spatial broadcast", "float[1,16,8,8] a, float[1,1,8,8] b", "y = Add(a, b)", "BroadcastNotSupported",
     "operand shapes"},
    {"div on xavier", "float[1,16,8,8] a, float[1,16,8,8] b", "y = Div(a, b)", "ChipNotSupported", "op",
     "xavier"},
    {"div on orin ok", "float[1,16,8,8] a, float[1,16,8,8] b", "y = Div(a, b)", "", ""},
    {"scale per-channel constant ok", "float[1,16,8,8] a", W("c", "16,1,1", 3) "y = Mul(a, c)", "", ""},
    {"constant along W", "float[1,16,8,8] a", W("c", "8", 1) "y = Add(a, c)", "BroadcastNotSupported",
     "constant operand shape"},
    {"int64 tensors", "int64[1,16,8,8] a, int64[1,16,8,8] b", "y = Add(a, b)", "DTypeNotSupported",
     "input[0].dtype"},
    {"batch over 4096", "float[5000,1,1,1] a", "y = Relu(a)", "ShapeOutOfRange", "input[0].batch"},
    {"dim over 8192", "float[1,1,1,9000] a", "y = Relu(a)", "ShapeOutOfRange", "input[0].shape[3]"},
    // Scale (BatchNormalization that stays)
    {"batchnorm ok", "float[1,4,8,8] x",
     W("s", "4", 1) W("b", "4", 1) W("m", "4", 1) W("v", "4", 1) "y = BatchNormalization(x, s, b, m, v)", "",
     ""},
    {"batchnorm params at run time", "float[1,4,8,8] x, float[4] s",
     W("b", "4", 1) W("m", "4", 1) W("v", "4", 1) "y = BatchNormalization(x, s, b, m, v)", "NotConstant",
     "input[1]"},
    // Unary
    {"abs ok", "float[1,8,4,4] x", "y = Abs(x)", "", ""},
    {"abs on int64", "int64[1,8,4,4] x", "y = Abs(x)", "DTypeNotSupported", "input[0].dtype"},
    // LRN
    {"lrn ok", "float[1,8,4,4] x", "y = LRN<size=5>(x)", "", ""},
    {"lrn size 4", "float[1,8,4,4] x", "y = LRN<size=4>(x)", "AttrOutOfRange", "size"},
    // Concatenation
    {"concat channels ok", "float[1,4,8,8] a, float[1,6,8,8] b", "y = Concat<axis=1>(a, b)", "", ""},
    {"concat height", "float[1,4,8,8] a, float[1,4,2,8] b", "y = Concat<axis=2>(a, b)", "AxisNotSupported",
     "axis"},
    // Resize
    {"resize nearest x2 ok", "float[1,4,8,8] x",
     "s = Constant<value = float[4] {1,1,2,2}>()\ny = Resize<mode=\"nearest\", "
     "coordinate_transformation_mode=\"asymmetric\", nearest_mode=\"floor\">(x, , s)",
     "", ""},
    {"resize nearest half_pixel floor", "float[1,4,8,8] x",
     "s = Constant<value = float[4] {1,1,2,2}>()\ny = Resize<mode=\"nearest\", nearest_mode=\"floor\">(x, , "
     "s)",
     "ModeNotSupported", "coordinate_transformation_mode/nearest_mode"},
    {"resize linear align_corners", "float[1,4,8,8] x",
     "s = Constant<value = float[4] {1,1,2,2}>()\ny = Resize<mode=\"linear\", "
     "coordinate_transformation_mode=\"align_corners\">(x, , s)",
     "ModeNotSupported", "coordinate_transformation_mode"},
    {"resize downsample", "float[1,4,8,8] x",
     "s = Constant<value = float[4] {1,1,0.5,0.5}>()\ny = Resize<mode=\"linear\">(x, , s)", "AttrOutOfRange",
     "scale[2]"},
    {"resize linear x8", "float[1,4,8,8] x",
     "s = Constant<value = float[4] {1,1,8,8}>()\ny = Resize<mode=\"linear\">(x, , s)", "AttrOutOfRange",
     "scale[2]"},
    // Slice
    {"slice channels ok", "float[1,8,4,4] x",
     "st = Constant<value = int64[1] {2}>()\nen = Constant<value = int64[1] {6}>()\nax = Constant<value = "
     "int64[1] {1}>()\ny = Slice(x, st, en, ax)",
     "", ""},
    {"slice step 2", "float[1,8,4,4] x",
     "st = Constant<value = int64[1] {0}>()\nen = Constant<value = int64[1] {8}>()\nax = Constant<value = "
     "int64[1] {1}>()\nsp = Constant<value = int64[1] {2}>()\ny = Slice(x, st, en, ax, sp)",
     "AttrOutOfRange", "steps"},
    {"slice batch", "float[2,8,4,4] x",
     "st = Constant<value = int64[1] {0}>()\nen = Constant<value = int64[1] {1}>()\nax = Constant<value = "
     "int64[1] {0}>()\ny = Slice(x, st, en, ax)",
     "AxisNotSupported", "axes"},
    // SoftMax
    {"softmax ok", "float[1,1000,1,1] x", "y = Softmax<axis=1>(x)", "", ""},
    {"softmax xavier", "float[1,1000,1,1] x", "y = Softmax<axis=1>(x)", "ChipNotSupported", "op", "xavier"},
    {"softmax long approximate axis", "float[1,2000,4,1] x", "y = Softmax<axis=1>(x)", "ShapeOutOfRange",
     "axis length"},
    // Shuffle
    {"transpose ok", "float[1,8,4,6] x", "y = Transpose<perm=[0,2,3,1]>(x)", "", ""},
    {"transpose batch", "float[2,8,4,6] x", "y = Transpose<perm=[1,0,2,3]>(x)", "AxisNotSupported",
     "perm[0]"},
    {"reshape rank 3", "float[1,8,24] x", "s = Constant<value = int64[3] {1,24,8}>()\ny = Reshape(x, s)",
     "ShapeOutOfRange", "input[0].rank"},
    {"reshape after concat", "float[1,4,8,8] a, float[1,4,8,8] b",
     "c = Concat<axis=1>(a, b)\ns = Constant<value = int64[4] {1,8,4,16}>()\ny = Reshape(c, s)",
     "ModeNotSupported", "neighbours"},
    // Reduce
    {"reduce mean hw ok", "float[1,8,4,4] x", "y = ReduceMean<axes=[2,3]>(x)", "", ""},
    {"reduce over batch", "float[2,8,4,4] x", "y = ReduceMean<axes=[0]>(x)", "AxisNotSupported", "axes"},
    {"reduce keepdims 0", "float[1,8,4,4] x", "y = ReduceMean<axes=[2,3], keepdims=0>(x)", "ModeNotSupported",
     "keepdims"},
    // Comparison
    {"equal fp16", "float[1,8,4,4] a, float[1,8,4,4] b", "e = Equal(a, b)\ny = Cast<to=1>(e)",
     "PrecisionNotSupported", "precision"},
    // TensorRT runs Comparison + Cast on the DLA; dlakit has no DLA Cast, so the bool result would leave
    // the DLA program, which stores fp16/int8 only
    {"equal int8 then cast: the cast is not a DLA layer", "float[1,8,4,4] a, float[1,8,4,4] b",
     "e = Equal(a, b)\ny = Cast<to=1>(e)", "OpNotSupported", "consumers", "orin", Precision::kINT8},
    {"equal int8 as network output", "float[1,8,4,4] a, float[1,8,4,4] b", "y = Equal(a, b)",
     "ModeNotSupported", "consumers", "orin", Precision::kINT8},
    // No DLA layer
    {"exp", "float[1,8,4,4] x", "y = Exp(x)", "OpNotSupported", "op"},
    {"reflect pad", "float[1,8,4,4] x",
     "p = Constant<value = int64[8] {0,0,1,1,0,0,1,1}>()\ny = Pad<mode=\"reflect\">(x, p)", "OpNotSupported",
     "op"},
};

Graph import_text(const std::string& text) {
  onnx::ModelProto m;
  auto st = onnx::OnnxParser::Parse(m, text.c_str());
  EXPECT_TRUE(st.IsOK()) << st.ErrorMessage() << "\n" << text;
  const std::string b = m.SerializeAsString();
  return import_onnx_bytes(b.data(), b.size());
}

class DlaRule : public ::testing::TestWithParam<RuleCase> {};

TEST_P(DlaRule, ReportsTheExpectedReason) {
  const RuleCase& c = GetParam();
  const std::string out_type = std::string(c.body).find("Equal") != std::string::npos ? "float y" : "float y";
  const std::string text = std::string("<ir_version: 8, opset_import: [\"\" : 13]>\ng (") + c.inputs +
                           ") => (" + out_type + ") {\n" + c.body + "\n}";
  Graph g = import_text(text);
  const int y = *g.find_value("y");
  const Node* target = nullptr;
  for (const Node& n : g.nodes)
    for (int o : n.outputs)
      if (o == y) target = &n;
  if (std::string(c.body).find("Equal") != std::string::npos)  // the comparison, not the Cast after it
    for (const Node& n : g.nodes)
      if (n.op == OpKind::Equal) target = &n;
  ASSERT_NE(target, nullptr);
  const dla::Capability cap = dla::check_node(g, *target, dla::limits_for(c.target), c.precision);
  std::string got;
  for (auto& r : cap.reasons)
    got += std::string(dla::reason_code_name(r.code)) + "(" + r.field + " = " + r.actual + ", limit " +
           r.limit + ") ";
  if (std::string(c.expect).empty()) {
    EXPECT_TRUE(cap.ok()) << c.name << ": expected supported, got " << got;
    return;
  }
  bool found = false;
  for (auto& r : cap.reasons) {
    found = found || (std::string(dla::reason_code_name(r.code)) == c.expect &&
                      r.field.find(c.field) != std::string::npos);
    EXPECT_FALSE(r.fix.empty()) << c.name << ": every reason needs a fix";
    EXPECT_FALSE(r.limit.empty()) << c.name << ": every reason needs a limit";
  }
  EXPECT_TRUE(found) << c.name << ": expected " << c.expect << " on '" << c.field << "', got " << got;
}

INSTANTIATE_TEST_SUITE_P(AllRules, DlaRule, ::testing::ValuesIn(kCases), [](const auto& info) {
  std::string n = info.param.name;
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
});

TEST(DlaRule, ReportsEveryViolationNotOnlyTheFirst) {
  Graph g = import_text(
      std::string("<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,1,80,80] x) => (float y) {\n") +
      W("w", "1,1,33,33", 4) "y = Conv<strides=[9,9], dilations=[1,1]>(x, w)\n}");
  const dla::Capability cap = dla::check_node(g, g.nodes.back(), dla::orin_limits(), Precision::kFP16);
  int kernel = 0, stride = 0;
  for (auto& r : cap.reasons) {
    kernel += r.field.rfind("kernel_shape", 0) == 0;
    stride += r.field.rfind("strides", 0) == 0;
  }
  EXPECT_EQ(kernel, 2);
  EXPECT_EQ(stride, 2);
}

TEST(Placement, StandaloneFailureListsEveryOffender) {
  Graph g = import_text(
      "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,8,4,4] x) => (float y) {\n"
      "a = Exp(x)\nb = Relu(a)\nc = Relu(b)\nd = Relu(c)\ny = Log(d)\n}");
  PlacementOptions o;
  o.standalone = true;
  try {
    place(g, o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("2 layer(s)"), std::string::npos) << m;
    EXPECT_NE(m.find("Exp"), std::string::npos) << m;
    EXPECT_NE(m.find("Log"), std::string::npos) << m;
    EXPECT_NE(m.find("OpNotSupported"), std::string::npos) << m;
  }
  o.standalone = false;
  Placement p = place(g, o);
  EXPECT_FALSE(p.standalone_possible);
  EXPECT_EQ(p.dla_loadables, 1);
  EXPECT_EQ(p.transitions, 2);
}

TEST(Placement, OverridesGlobsAndTinyIslands) {
  // relu chain: GPU op, 1 DLA layer, GPU op, then 4 DLA layers. The lone Relu is a tiny island.
  Graph g = import_text(
      "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,8,4,4] x) => (float y) {\n"
      "a = Exp(x)\nb = Relu(a)\nc = Exp(b)\nd = Relu(c)\ne = Relu(d)\nf = Relu(e)\ny = Relu(f)\n}");
  Placement p = place(g, {});
  EXPECT_EQ(p.layers[1].device, Device::kGPU);
  EXPECT_NE(p.layers[1].decision.find("tiny DLA island"), std::string::npos) << p.layers[1].decision;
  EXPECT_EQ(p.dla_loadables, 1);
  PlacementOptions o;
  o.layer_devices = parse_device_overrides("Relu_6:GPU");  // the last Relu by glob-free name
  o.op_devices = parse_device_overrides("Exp:GPU");
  p = place(g, o);
  EXPECT_EQ(p.layers[6].device, Device::kGPU);
  EXPECT_EQ(dla::reason_code_name(p.layers[6].cap.reasons.back().code), std::string("UserOverride"));
  o.layer_devices = parse_device_overrides("Relu_[3-5]:GPU");
  p = place(g, o);
  for (int k : {3, 4, 5}) EXPECT_EQ(p.layers[size_t(k)].device, Device::kGPU) << k;
  EXPECT_THROW(parse_device_overrides("conv1:CPU"), Error);
  EXPECT_THROW(parse_precision_overrides("conv1:fp64"), Error);
}

}  // namespace

#include <filesystem>
#include <fstream>
#include <sstream>

#include "../common/test_paths.h"
#include "targets/dla/matrix.h"

TEST(SupportMatrix, DocsAreGeneratedFromTheTables) {
  const std::filesystem::path doc =
      std::filesystem::path(test_paths::source_dir()) / "docs" / "dla-support-matrix.md";
  std::ifstream f(doc);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(), dlakit::dla::support_matrix_markdown())
      << "docs/dla-support-matrix.md is stale: regenerate it with `build/dlakit support-matrix > "
         "docs/dla-support-matrix.md`";
}

namespace {

std::string read_doc(const char* name) {
  std::ifstream f(std::filesystem::path(test_paths::source_dir()) / "docs" / name);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

TEST(RuleSources, EveryAssumedRuleIsListedInTheInspectDocs) {
  const std::string doc = read_doc("inspect.md");
  for (int i = 0; i < dlakit::dla::kNumRules; ++i) {
    const dlakit::dla::RuleInfo& r = dlakit::dla::rule_info(dlakit::dla::Rule(i));
    EXPECT_FALSE(std::string(r.source).empty()) << r.id;
    if (r.confidence == dlakit::dla::Confidence::kAssumed)
      EXPECT_NE(doc.find(std::string("`") + r.id + "`"), std::string::npos)
          << "assumed rule " << r.id << " is not listed in docs/inspect.md";
  }
}

TEST(RuleSources, TheGlobalPoolWindowRestsOnAnAssumptionEitherWay) {
  using namespace dlakit;
  Graph big = import_text(
      "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,8,16,16] x) => (float y) {\n"
      "y = GlobalAveragePool(x)\n}");
  dla::Capability cap = dla::check_node(big, big.nodes[0], dla::orin_limits(), Precision::kFP16);
  ASSERT_FALSE(cap.ok());
  for (auto& r : cap.reasons) EXPECT_STREQ(dla::rule_info(r.rule).id, "pool.global");
  EXPECT_TRUE(cap.unconfirmed.empty()) << "a refused layer rests on no admission";
  Graph small = import_text(
      "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,8,7,7] x) => (float y) {\n"
      "y = GlobalAveragePool(x)\n}");
  cap = dla::check_node(small, small.nodes[0], dla::orin_limits(), Precision::kFP16);
  ASSERT_TRUE(cap.ok());
  ASSERT_EQ(cap.unconfirmed.size(), 1u);
  EXPECT_STREQ(dla::rule_info(cap.unconfirmed[0]).id, "pool.global");
  Graph pool = import_text(
      "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,8,7,7] x) => (float y) {\n"
      "y = AveragePool<kernel_shape=[7,7], strides=[7,7]>(x)\n}");
  cap = dla::check_node(pool, pool.nodes[0], dla::orin_limits(), Precision::kFP16);
  EXPECT_TRUE(cap.ok() && cap.unconfirmed.empty()) << "a windowed pool is documented Pooling";
}

TEST(Int8Table, RulesAndTheNumericsPlannerReadTheSameList) {
  using namespace dlakit;
  // Split runs as Slice layers, FP16 in an INT8 build: the note, the matrix cell and the numerics agree.
  Graph g = import_text(
      "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,8,4,4] x) => (float y) {\n"
      "a, b = Split<axis=1>(x)\nc = Relu(b)\ny = Add(a, c)\n}");
  const dla::Capability cap = dla::check_node(g, g.nodes[0], dla::orin_limits(), Precision::kINT8);
  ASSERT_EQ(cap.notes.size(), 1u);
  EXPECT_NE(cap.notes[0].find("Split runs in FP16"), std::string::npos) << cap.notes[0];
  EXPECT_NE(dla::support_matrix_markdown().find("| Split | Slice | yes | FP16 | yes | FP16 |"),
            std::string::npos);
  PlacementOptions o;
  o.standalone = true;
  o.precision = Precision::kINT8;
  quant::ScaleTable scales;
  for (const Value& v : g.values) scales.set_scale(v.name, 0.05f);
  const quant::NumericsPlan plan = quant::plan_numerics(g, place(g, o), &scales);
  EXPECT_EQ(plan.nodes[0].mode, quant::Mode::kFP16) << "Split";
  EXPECT_EQ(plan.nodes[1].mode, quant::Mode::kINT8) << "Relu";
}
