// A verified program made ready to execute, shared by the CPU and CUDA executors: every constant expanded
// to the tensor its step reads (fp16 values, weights on their INT8 grid, integer levels for the exact INT8
// convolutions), one kernel node per step, and every step's result types inferred again from its operands
// and compared with the program's, so no kernel ever sees a shape it did not compute.
#pragma once
#include <memory>
#include <vector>

#include "numerics/step.h"
#include "program/program.h"
#include "runtime/atom_ops.h"

namespace dlakit::rt {

struct PreparedStep {
  Node node;                                 // op, attributes, operand slots (for the reference kernels)
  std::vector<const Tensor*> constants;      // per input: the prepared constant, or null
  std::vector<char> is_constant;             // per input
  std::unique_ptr<numerics::Int8Conv> conv;  // exact INT8 convolutions
};

class PreparedProgram {
 public:
  // Throws Error when a step's operands do not give its recorded result types.
  explicit PreparedProgram(prog::Program p);
  const prog::Program& program() const { return p_; }
  const PreparedStep& step(size_t op, size_t k) const { return steps_[op][k]; }
  // The constant as values (float32, or its integer type for shape arguments); empty when only exact INT8
  // convolutions read it (they read step(...).constants[1], its integer levels).
  const Tensor& constant(size_t i) const { return constants_[i]; }
  // Operation `op` as an in-place INT8 surface operation (runtime/atom_ops.h), when it is one.
  const std::optional<AtomOp>& atom_op(size_t op) const { return atom_ops_[op]; }

 private:
  prog::Program p_;
  std::vector<Tensor> constants_;  // as values (empty when only exact INT8 convolutions read it)
  std::vector<Tensor> levels_;     // int8 weights as integer levels, for the exact INT8 convolutions
  std::vector<std::vector<PreparedStep>> steps_;
  std::vector<std::optional<AtomOp>> atom_ops_;
};

}  // namespace dlakit::rt
