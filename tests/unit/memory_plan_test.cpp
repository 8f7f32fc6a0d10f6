// The memory plan of a compiled program (compiler/memory_plan.cpp) on a residual block whose Add is its own
// SDP operation right after the convolution it takes: the pair runs as one pass on the DLA and in the CUDA
// executor, so nothing the Add writes may share bytes with what that convolution reads.
#include <gtest/gtest.h>

#include "../common/onnx_text.h"
#include "loadable/loadable.h"

using namespace dlakit;

namespace {

// c2's bytes are free after c3 reads them, so without the rule the Add's result (same size, born one
// operation later) could take them.
prog::Program residual_program() {
  const Graph g = test_data::passed_graph_of(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,64,28,28] x) => (float[1,64,28,28] y) {
      s4 = Constant<value = int64[4] {64, 64, 3, 3}>()
      s1 = Constant<value = int64[4] {64, 64, 1, 1}>()
      w1 = ConstantOfShape<value = float[1] {0.01}>(s4)
      w2 = ConstantOfShape<value = float[1] {0.02}>(s4)
      w3 = ConstantOfShape<value = float[1] {0.03}>(s1)
      w4 = ConstantOfShape<value = float[1] {0.04}>(s4)
      c1 = Conv<pads = [1, 1, 1, 1]>(x, w1)
      r1 = Relu(c1)
      c2 = Conv<pads = [1, 1, 1, 1]>(r1, w2)
      c3 = Conv(c2, w3)
      a = Add(c3, r1)
      y = Conv<pads = [1, 1, 1, 1]>(a, w4)
    })");
  LoadableOptions opt;  // fp16:chw16 in and out
  opt.inputs = opt.outputs = {rt::IoSpec{}};
  return compile_program(g, opt);
}

bool share_bytes(const prog::Surface& a, const prog::Surface& b) {
  const bool planned = a.pool == prog::Pool::kSram || a.pool == prog::Pool::kLocalDram;
  return planned && a.pool == b.pool && a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
}

}  // namespace

TEST(MemoryPlan, AnAddKeepsTheInputsOfTheConvolutionItTakesLive) {
  const prog::Program p = residual_program();
  int pairs = 0;
  for (size_t t = 0; t + 1 < p.ops.size(); ++t) {
    const prog::Op &conv = p.ops[t], &add = p.ops[t + 1];
    if (conv.engine != prog::Engine::kConv || add.steps.empty() || add.steps[0].op != OpKind::Add) continue;
    ++pairs;
    for (uint32_t w : add.writes)
      for (uint32_t r : conv.reads) {
        ASSERT_EQ(p.surfaces[w].parent, -1);  // no views in this program: offsets are absolute
        EXPECT_FALSE(share_bytes(p.surfaces[w], p.surfaces[r]))
            << "operation " << t + 1 << " writes surface " << w << " over surface " << r
            << ", which operation " << t << " reads";
      }
  }
  EXPECT_EQ(pairs, 1);
}
