// A loaded program's steps are checked against their op's definition (ir/op_schema), as imported nodes
// are: a loadable is a file from anywhere, and the runtime's shape formulas assume the attribute ranges.
#include <gtest/gtest.h>

#include "../common/onnx_text.h"
#include "loadable/loadable.h"
#include "program/format.h"
#include "runtime/runtime.h"

using namespace dlakit;

namespace {

// A one-model FP16 program (chw16 I/O) from ONNX text, after dlakit's graph passes.
prog::Program program_of(const char* onnx_text) {
  const Graph g = test_data::passed_graph_of(onnx_text);
  LoadableOptions opt;
  opt.inputs = {{DType::kF16, rt::IoFormat::kChw16}};
  opt.outputs = {{DType::kF16, rt::IoFormat::kChw16}};
  return compile_program(g, opt);
}

prog::Program max_pool_program() {
  return program_of(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3,9,9] x) => (float[1,3,5,5] y) { y = MaxPool<kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]>(x) })");
}

std::string load_error(const prog::Program& p) {
  const std::string bytes = prog::serialize(p);
  try {
    rt::Module module(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  } catch (const rt::RuntimeError& e) {
    return e.what();
  }
  return "loaded";
}

prog::Step& max_pool_step(prog::Program& p) {
  for (prog::Op& op : p.ops)
    for (prog::Step& s : op.steps)
      if (s.op == OpKind::MaxPool) return s;
  ADD_FAILURE() << "no MaxPool step";
  return p.ops.at(0).steps.at(0);
}

}  // namespace

TEST(ProgramSchema, TheUnchangedProgramLoads) { EXPECT_EQ(load_error(max_pool_program()), "loaded"); }

// Found by fuzz_module: pads near 2^62 overflowed the window arithmetic (input + pads) while the module was
// prepared. The step is refused by name with the rule it breaks.
TEST(ProgramSchema, PadsBeyondTheSchemaRangeAreRefusedBeforeAnyShapeFormula) {
  prog::Program p = max_pool_program();
  max_pool_step(p).attrs["pads"] = std::vector<int64_t>{int64_t(1) << 62, 0, int64_t(1) << 62, 0};
  const std::string e = load_error(p);
  EXPECT_NE(e.find("MaxPool"), std::string::npos) << e;
  EXPECT_NE(e.find("attribute 'pads'"), std::string::npos) << e;
  EXPECT_NE(e.find("out of range"), std::string::npos) << e;
}

TEST(ProgramSchema, AttributesOfTheWrongTypeOrUnknownAreRefused) {
  prog::Program wrong_type = max_pool_program();
  max_pool_step(wrong_type).attrs["strides"] = 2.5f;
  EXPECT_NE(load_error(wrong_type).find("attribute 'strides' must be ints, found float"), std::string::npos)
      << load_error(wrong_type);
  prog::Program unknown = max_pool_program();
  max_pool_step(unknown).attrs["group"] = int64_t(2);
  EXPECT_NE(load_error(unknown).find("unknown attribute 'group'"), std::string::npos) << load_error(unknown);
}

// A Conv step's fused activation is one the epilogue knows (ir/op_schema: dlakit_activation).
TEST(ProgramSchema, AFusedActivationTheEpilogueDoesNotKnowIsRefused) {
  prog::Program p = program_of(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3,8,8] x) => (float[1,4,8,8] y) {
      w = Constant<value = float[4,3,1,1] {1,2,3,4,5,6,7,8,9,10,11,12}>()
      c = Conv(x, w)
      y = Relu(c)
    })");
  prog::Step* conv = nullptr;
  for (prog::Op& op : p.ops)
    for (prog::Step& s : op.steps)
      if (s.op == OpKind::Conv) conv = &s;
  ASSERT_NE(conv, nullptr);
  ASSERT_EQ(std::get<std::string>(conv->attrs.at("dlakit_activation")), "Relu");
  EXPECT_EQ(load_error(p), "loaded");
  conv->attrs["dlakit_activation"] = std::string("Clip");  // Clip needs its two bounds
  conv->attrs["dlakit_activation_params"] = std::vector<float>{0.f};
  EXPECT_NE(load_error(p).find("fused activation 'Clip' with 1 parameter(s)"), std::string::npos)
      << load_error(p);
  conv->attrs["dlakit_activation"] = std::string("Sigmoid");
  EXPECT_NE(load_error(p).find("attribute 'dlakit_activation' = 'Sigmoid' is not one of Relu|LeakyRelu|Clip"),
            std::string::npos)
      << load_error(p);
}
