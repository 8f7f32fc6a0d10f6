// ONNX import: unsorted graphs, folding of shape arithmetic, all unsupported ops reported at once,
// malformed and truncated files, dynamic inputs.
#include <gtest/gtest.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include "engine/engine.h"
#include "onnx/importer.h"

using namespace dlakit;

namespace {

std::string model_bytes(const char* text) {
  onnx::ModelProto m;
  auto status = onnx::OnnxParser::Parse(m, text);
  EXPECT_TRUE(status.IsOK()) << status.ErrorMessage();
  return m.SerializeAsString();
}

std::string error_of(const std::string& bytes, ImportOptions opt = {}) {
  try {
    import_onnx_bytes(bytes.data(), bytes.size(), opt, "test.onnx");
  } catch (const Error& e) {
    return cat(status_name(e.status()), ": ", e.what());
  }
  return "no error";
}

}  // namespace

TEST(Importer, SortsNodesWrittenOutOfOrder) {
  const std::string b = model_bytes(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,3] z) {
      z = Relu(y)
      y = Neg(x)
    })");
  Graph g = import_onnx_bytes(b.data(), b.size());
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op, OpKind::Neg);
  Tensor x = Tensor::from_f32({2, 3}, {1, -2, 3, -4, 5, -6});
  Tensor z = ReferenceEngine(g).run({{"x", x}}).at("z");
  EXPECT_EQ(z.to_f32(), (std::vector<float>{0, 2, 0, 4, 0, 6}));
}

TEST(Importer, FoldsShapeArithmeticIntoAStaticGraph) {
  // The PyTorch pattern: reshape to [N, -1] where N comes from Shape/Gather/Unsqueeze/Concat.
  const std::string b = model_bytes(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,2,3] x) => (float[N,6] y) {
      s = Shape(x)
      zero = Constant<value = int64 {0}>()
      n = Gather<axis = 0>(s, zero)
      ax = Constant<value = int64[1] {0}>()
      n1 = Unsqueeze(n, ax)
      m1 = Constant<value = int64[1] {-1}>()
      shp = Concat<axis = 0>(n1, m1)
      y = Reshape(x, shp)
    })");
  ImportOptions opt;
  opt.input_shapes["x"] = {4, 2, 3};
  Graph g = import_onnx_bytes(b.data(), b.size(), opt);
  ASSERT_EQ(g.nodes.size(), 1u) << g.to_text();
  EXPECT_EQ(g.nodes[0].op, OpKind::Reshape);
  EXPECT_EQ(g.value(g.outputs[0]).type.shape, (Shape{4, 6}));
}

TEST(Importer, ReportsEveryUnsupportedNodeAtOnce) {
  const std::string b = model_bytes(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,3] z) {
      a = Relu(x)
      b = Selu(a)
      z = Hardmax(b)
    })");
  const std::string e = error_of(b);
  EXPECT_NE(e.find("Unsupported"), std::string::npos) << e;
  EXPECT_NE(e.find("2 unsupported node(s)"), std::string::npos) << e;
  EXPECT_NE(e.find("Selu"), std::string::npos) << e;
  EXPECT_NE(e.find("Hardmax"), std::string::npos) << e;
  EXPECT_NE(e.find("opset 13"), std::string::npos) << e;
}

TEST(Importer, UnsupportedAttributeValuesNameTheNode) {
  const std::string b = model_bytes(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,4,4] x) => (float[1,1,8,8] y) {
      sc = Constant<value = float[4] {1, 1, 2, 2}>()
      y = Resize<mode = "cubic">(x, , sc)
    })");
  const std::string e = error_of(b);
  EXPECT_NE(e.find("Resize"), std::string::npos) << e;
  EXPECT_NE(e.find("cubic"), std::string::npos) << e;
}

TEST(Importer, MalformedAndTruncatedFilesAreErrorsNotCrashes) {
  EXPECT_NE(error_of("").find("empty"), std::string::npos);
  EXPECT_NE(error_of("this is not a model").find("ParseError"), std::string::npos);
  const std::string b = model_bytes(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,3] y) { y = Relu(x) })");
  for (size_t cut : {b.size() / 3, b.size() / 2, b.size() - 1}) {
    const std::string e = error_of(b.substr(0, cut));
    EXPECT_NE(e, "no error") << "cut at " << cut;
  }
}

TEST(Importer, DynamicInputsNeedPinningAndSayHow) {
  const std::string b = model_bytes(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,3,H,W] x) => (float[N,3,H,W] y) { y = Relu(x) })");
  const std::string e = error_of(b);
  EXPECT_NE(e.find("dynamic"), std::string::npos) << e;
  EXPECT_NE(e.find("--input-shape x:"), std::string::npos) << e;
  ImportOptions wrong;
  wrong.input_shapes["x"] = {1, 3, 8};
  EXPECT_NE(error_of(b, wrong).find("rank"), std::string::npos);
  ImportOptions bad_name;
  bad_name.input_shapes["nope"] = {1, 3, 8, 8};
  EXPECT_NE(error_of(b, bad_name).find("not a model input"), std::string::npos);
}

TEST(Importer, ParsesInputShapeFlags) {
  auto m = parse_input_shapes("x:1x3x640x640,y:2");
  EXPECT_EQ(m["x"], (Shape{1, 3, 640, 640}));
  EXPECT_EQ(m["y"], (Shape{2}));
  EXPECT_THROW(parse_input_shapes("x:1xAx3"), Error);
  EXPECT_THROW(parse_input_shapes("x"), Error);
}

TEST(Engine, WrongInputsAreClearErrors) {
  const std::string b = model_bytes(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,3] y) { y = Relu(x) })");
  Graph g = import_onnx_bytes(b.data(), b.size());
  ReferenceEngine e(g);
  try {
    e.run({{"x", Tensor(DType::kF32, {3, 2})}});
    FAIL() << "expected an error";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("f32[3x2] but the model expects f32[2x3]"), std::string::npos)
        << err.what();
  }
  EXPECT_THROW(e.run({}), Error);
  EXPECT_THROW(e.run({{"x", Tensor(DType::kF32, {2, 3})}, {"extra", Tensor()}}), Error);
  EXPECT_NO_THROW(e.run({{"x", Tensor(DType::kF32, {2, 3})}}));  // still works after the errors
}

TEST(Importer, RuntimeValuesOfShapeInputsSpecializeTheGraph) {
  const std::string b = model_bytes(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,6] x, int64[2] shape, float[1] scale) => (float y) {
      r = Reshape(x, shape)
      y = Mul(r, scale)
    })");
  EXPECT_NE(error_of(b).find("computed at run time"), std::string::npos) << error_of(b);
  ImportOptions o;
  o.runtime_values = {{"x", Tensor(DType::kF32, {2, 6})},
                      {"shape", Tensor::from_i64({2}, {3, 4})},
                      {"scale", Tensor::from_f32({1}, {2.f})}};
  const Graph g = import_onnx_bytes(b.data(), b.size(), o);
  // Only the input a shape argument needs is bound; the data inputs stay runtime inputs.
  ASSERT_EQ(g.inputs.size(), 2u);
  EXPECT_EQ(g.value(g.inputs[0]).name, "x");
  EXPECT_EQ(g.value(g.inputs[1]).name, "scale");
  EXPECT_EQ(shape_str(g.value(g.outputs[0]).type.shape), "3x4");
  o.runtime_values.erase("shape");  // the value it needs is missing: the same error as without values
  EXPECT_NE(error_of(b, o).find("computed at run time"), std::string::npos) << error_of(b, o);
}
