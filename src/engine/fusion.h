// How the reference engine runs a graph when no one watches single nodes (no observer, no node runner):
// steps that cover one node or several, with results bit-identical to running the nodes one by one.
//  - Conv -> [Add of a same-shape tensor] -> [Relu | Clip | LeakyRelu | HardSigmoid and a Mul of it with its
//    input (hard swish)]: the Add and the activation run in the convolution's store epilogue (a copy of the
//    Conv node with dlakit_residual / dlakit_activation).
//  - A pointwise Conv (1x1, stride 1, no padding, one group) [-> its activation] whose output only a
//    depthwise Conv [-> activation] reads: one step (MobileNet's expansion and depthwise layers), the
//    expanded tensor never written where the CPU has the fused kernel (kernels/expand_depthwise.h).
//  - Runs of element-wise nodes (Add Sub Mul Div Relu Clip LeakyRelu HardSigmoid HardSwish) on one shape,
//    whose other operands are constants (scalar or per channel): one pass over memory, block by block.
#pragma once
#include <cstddef>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace dlakit {

// One operation of a fused element-wise step, on blocks of one channel plane.
struct EwOp {
  OpKind op{};
  int a = -1, b = -1;                // operands: slot index (>= 0), or -1 for the constant
  const Tensor* constant = nullptr;  // scalar or per-channel (indexed by the plane's channel)
  bool constant_first = false;       // the constant is the op's first input (Sub, Div)
  float p0 = 0, p1 = 0;              // Clip bounds, LeakyRelu / HardSigmoid alpha and beta
};

// Slots: the step's external inputs first (full tensors of the output's shape), then one per op.
struct EwStep {
  std::vector<int> inputs;  // value ids read
  std::vector<EwOp> ops;    // op k writes slot inputs.size() + k; the last one is the step's output
  int output = -1;          // value id
};

struct EngineStep {
  std::vector<size_t> nodes;  // the graph nodes this step covers (it runs where the last one was)
  std::optional<Node> conv;   // a Conv with its epilogue attached, writing the last node's output
  std::optional<EwStep> elementwise;
  std::optional<Node> expand;  // with conv: the pointwise Conv (its epilogue attached) making conv's input
};

std::vector<EngineStep> plan_fused_steps(const Graph& g);

// Runs an expand step (EngineStep::expand): `in` holds the expansion's inputs, then the depthwise's
// after its first.
Tensor run_expand_depthwise_step(const Graph& g, const EngineStep& step,
                                 const std::vector<const Tensor*>& in);

// Runs a fused element-wise step; `in` holds its external inputs in order.
Tensor run_elementwise_step(const Graph& g, const EwStep& step, const std::vector<const Tensor*>& in);

}  // namespace dlakit
