// Import hardening: every node checked against its op's ONNX definition before any kernel runs
// (counts, attribute types and ranges, opsets), duplicate definitions, cycles, and sizes that would wrap
// (ONNX tensors, graph inputs, .npy, loadable weights, Tensor itself).
#include <gtest/gtest.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include <cstring>

#include "base/checked.h"
#include "io/npy.h"
#include "onnx/importer.h"
#include "ir/op_schema.h"

using namespace dlakit;

namespace {

onnx::ModelProto parse(const char* text) {
  onnx::ModelProto m;
  auto status = onnx::OnnxParser::Parse(m, text);
  EXPECT_TRUE(status.IsOK()) << status.ErrorMessage();
  return m;
}

std::string error_of(const onnx::ModelProto& m, ImportOptions opt = {}) {
  const std::string bytes = m.SerializeAsString();
  try {
    import_onnx_bytes(bytes.data(), bytes.size(), opt, "test.onnx");
  } catch (const Error& e) {
    return cat(status_name(e.status()), ": ", e.what());
  }
  return "no error";
}

std::string error_of(const char* text) { return error_of(parse(text)); }

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

}  // namespace

// The crash of issue 18: a Conv whose inputs are all constant and which has no outputs. Folding used to
// run the kernel, which wrote to an output that did not exist (SIGSEGV).
TEST(Schema, ConvWithConstantInputsAndNoOutputsIsAnErrorNotACrash) {
  onnx::ModelProto m = parse(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,4,4] x) => (float[1,1,4,4] y) {
      w = Constant<value = float[1,1,1,1] {2}>()
      c = Conv(w, w)
      y = Relu(x)
    })");
  m.mutable_graph()->mutable_node(1)->clear_output();
  const std::string e = error_of(m);
  EXPECT_HAS(e, "ParseError");
  EXPECT_HAS(e, "Conv 'Conv_1' (opset 13): has 0 outputs, expected 1");
}

TEST(Schema, RequiredInputsAndOutputsMustBeNamed) {
  onnx::ModelProto m = parse(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,4,4] x, float[1,1,1,1] w) => (float[1,1,4,4] y) { y = Conv(x, w) })");
  m.mutable_graph()->mutable_node(0)->set_input(0, "");
  EXPECT_HAS(error_of(m), "input #0 is required but its name is empty");
  m = parse(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,4,4] x, float[1,1,1,1] w) => (float[1,1,4,4] y) { y = Conv(x, w) })");
  m.mutable_graph()->mutable_node(0)->add_input("b");
  m.mutable_graph()->mutable_node(0)->add_input("extra");
  EXPECT_HAS(error_of(m), "has 4 inputs, expected 2 to 3");
}

TEST(Schema, AttributeTypesRangesChoicesAndOpsetsAreChecked) {
  // Each node breaks one rule; all are reported in one error, each naming its node.
  const std::string e = error_of(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4,8,8] x, float[4,1,3,3] w) => (float[1,4,8,8] y) {
      a = Conv<group = 0>(x, w)
      b = Conv<strides = [1, 0]>(x, w)
      c = Conv<auto_pad = "SIDEWAYS">(x, w)
      d = Conv<group = 1.5>(x, w)
      e = Conv<colour = 3>(x, w)
      f = Squeeze<axes = [0]>(x)
      y = Relu(x)
    })");
  EXPECT_HAS(e, "6 violation(s)");
  EXPECT_HAS(e,
             "Conv 'Conv_0' (opset 13): attribute 'group' = 0 is out of range: must be in [1, 2147483648]");
  EXPECT_HAS(e, "Conv 'Conv_1' (opset 13): attribute 'strides' = 0 (element 1) is out of range");
  EXPECT_HAS(e, "attribute 'auto_pad' = 'SIDEWAYS' is not one of NOTSET|SAME_UPPER|SAME_LOWER|VALID");
  EXPECT_HAS(e, "Conv 'Conv_3' (opset 13): attribute 'group' must be int, found float");
  EXPECT_HAS(e,
             "unknown attribute 'colour' (Conv has auto_pad, dilations, group, kernel_shape, pads, strides, "
             "dlakit_activation, dlakit_activation_params)");
  EXPECT_HAS(e, "Squeeze 'Squeeze_5' (opset 13): attribute 'axes' belongs to opsets 1..12 of Squeeze");
}

TEST(Schema, OpsBeforeTheirFirstOpsetAreRejected) {
  const std::string e = error_of(R"(
    <ir_version: 7, opset_import: ["" : 11]>
    g (float[2,3] x) => (float[2,3] y) { y = HardSwish(x) })");
  EXPECT_HAS(e, "HardSwish 'HardSwish_0' (opset 11): HardSwish exists from opset 14 on");
}

TEST(Schema, OpsetDependentCountsFollowTheOpset) {
  // Slice takes starts/ends as attributes before opset 10 and as inputs from 10.
  EXPECT_EQ(error_of(R"(
    <ir_version: 4, opset_import: ["" : 9]>
    g (float[4,4] x) => (float[2,4] y) { y = Slice<starts = [0], ends = [2], axes = [0]>(x) })"),
            "no error");
  EXPECT_HAS(error_of(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4,4] x) => (float[4,4] y) { y = Slice(x) })"),
             "Slice 'Slice_0' (opset 13): has 1 inputs, expected 3 to 5");
}

// Every op has a schema whose counts are ordered and whose first opset is within dlakit's range.
TEST(Schema, EveryOpHasAConsistentSchema) {
  for (int i = 0; i < kNumOps; ++i) {
    const OpSchema& s = op_schema(OpKind(i));
    ASSERT_FALSE(s.io.empty()) << op_name(OpKind(i));
    for (size_t k = 0; k < s.io.size(); ++k) {
      const IoRule& r = s.io[k];
      EXPECT_LE(r.in_min, r.in_max) << op_name(OpKind(i));
      EXPECT_LE(r.out_min, r.out_max) << op_name(OpKind(i));
      EXPECT_GE(r.out_min, 1) << op_name(OpKind(i));
      if (k) {
        EXPECT_LT(s.io[k - 1].since, r.since) << op_name(OpKind(i));
      }
    }
    for (const AttrRule& a : s.attrs) EXPECT_LE(a.since, a.until) << op_name(OpKind(i)) << "." << a.name;
  }
}

TEST(Graph, DuplicateDefinitionsNameBothDefiners) {
  const std::string e = error_of(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,3] y) {
      y = Relu(x)
      y = Neg(x)
    })");
  EXPECT_HAS(e, "value 'y' is defined twice: by Relu 'Relu_0' and by Neg 'Neg_1'");
  EXPECT_HAS(error_of(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,3] x2) { x = Relu(x) x2 = Neg(x) })"),
             "value 'x' is defined twice: by a graph input and by Relu 'Relu_0'");
}

TEST(Graph, OutputsNothingProducesAndCyclesAreNamed) {
  EXPECT_HAS(error_of(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,3] y, float[2,3] ghost) { y = Relu(x) })"),
             "graph output 'ghost' is produced by no node, initializer or graph input");
  const std::string e = error_of(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,3] y) {
      y = Relu(x)
      a = Add(x, c)
      b = Neg(a)
      c = Abs(b)
    })");
  EXPECT_HAS(e, "graph has a cycle: Add 'Add_1' <- Abs 'Abs_3' <- Neg 'Neg_2' <- Add 'Add_1'");
}

// ---- sizes that would wrap
TEST(CheckedSizes, RefusesProductsBeyondTheLimitBeforeTheyWrap) {
  const int64_t big = int64_t(1) << 34, huge = int64_t(1) << 30;
  EXPECT_EQ(checked_numel(std::vector<int64_t>{2, 3, 4}, 100, "t"), 24);
  EXPECT_EQ(checked_numel(std::vector<int64_t>{}, 1, "t"), 1);
  EXPECT_EQ(checked_numel(std::vector<int64_t>{24}, 24, "t"), 24);
  EXPECT_THROW(checked_numel(std::vector<int64_t>{25}, 24, "t"), Error);
  // 2^34 * 2^30 = 2^64 wraps to 0 in int64: refused.
  EXPECT_THROW(checked_numel(std::vector<int64_t>{big, huge}, kMaxElements, "t"), Error);
  EXPECT_THROW(checked_numel(std::vector<int64_t>{INT64_MAX, INT64_MAX}, kMaxElements, "t"), Error);
  // A zero dimension does not hide huge others.
  EXPECT_THROW(checked_numel(std::vector<int64_t>{0, big, huge}, kMaxElements, "t"), Error);
  try {
    checked_numel(std::vector<int64_t>{3, -1}, kMaxElements, "tensor 'w'", Status::kParseError);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kParseError);
    EXPECT_EQ(std::string(e.what()), "tensor 'w': dimension 1 of [3x-1] is negative (-1)");
  }
  EXPECT_EQ(checked_bytes(10, 4, 40, "t"), 40u);
  EXPECT_THROW(checked_bytes(11, 4, 40, "t"), Error);
  EXPECT_THROW(checked_bytes(INT64_MAX, 8, SIZE_MAX, "t"), Error);
  EXPECT_THROW(Tensor(DType::kF32, {big, huge}), Error);
  EXPECT_THROW(numel(Shape{big, huge}), Error);
}

TEST(CheckedSizes, OnnxTensorsWhoseDimsWrapAreRefused) {
  onnx::ModelProto m = parse(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,3] y) { y = Relu(x) })");
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(int64_t(1) << 34);
  t->add_dims(int64_t(1) << 30);  // 2^64 elements: 0 after wrapping, and no data
  EXPECT_HAS(error_of(m), "tensor 'w': shape [17179869184x1073741824] has more than");
  // A header that promises more values than the file holds is refused before anything is allocated.
  t->clear_dims();
  t->add_dims(int64_t(1) << 33);
  EXPECT_HAS(error_of(m), "tensor 'w' of shape 8589934592 holds 0 values, expected 8589934592");
}

TEST(CheckedSizes, GraphInputDimsAreBounded) {
  const std::string e = error_of(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[17179869184,1073741824] x) => (float[17179869184,1073741824] y) { y = Relu(x) })");
  EXPECT_HAS(e, "graph input 'x': shape [17179869184x1073741824] has more than");
  ImportOptions pinned;
  pinned.input_shapes["x"] = {1 << 30, 1 << 30, 1 << 30};
  EXPECT_HAS(error_of(parse(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,C,H] x) => (float[N,C,H] y) { y = Relu(x) })"),
                      pinned),
             "graph input 'x': shape [1073741824x1073741824x1073741824] has more than");
}

TEST(CheckedSizes, NpyShapesThatWrapAreRefused) {
  auto npy = [](const std::string& shape) {
    std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    h.append((64 - (10 + h.size() + 1) % 64) % 64, ' ');
    h += '\n';
    std::string b = "\x93NUMPY";
    b += char(1);
    b += char(0);
    b += char(h.size() & 0xff);
    b += char(h.size() >> 8);
    return b + h;
  };
  try {
    parse_npy(npy("(17179869184, 1073741824)"), "x.npy");  // 2^64 elements, 0 data bytes
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_HAS(std::string(e.what()), "x.npy: .npy array: shape [17179869184x1073741824] has more than");
  }
  EXPECT_THROW(parse_npy(npy("(0, 17179869184, 1073741824)"), "x.npy"), Error);
  EXPECT_EQ(parse_npy(npy("(0, 3)"), "x.npy").numel(), 0);
}
