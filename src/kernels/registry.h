// Every op of ops.def has one OpImpl: its shape/type inference and its reference kernel, defined next
// to each other in src/kernels/ref/<family>.cpp as `const OpImpl kImpl_<Enum>`. A missing one is a link
// error, so the op list and the implementations cannot drift apart.
#pragma once
#include <vector>

#include "base/error.h"
#include "ir/graph.h"

namespace dlakit {

class InferContext {
 public:
  InferContext(const Graph& g, const Node& n) : g_(g), n_(n) {}
  const Node& node() const { return n_; }
  int num_inputs() const { return int(n_.inputs.size()); }
  bool has(int i) const { return i < num_inputs() && n_.inputs[size_t(i)] >= 0; }
  const TensorType& type(int i) const;
  const Shape& shape(int i) const { return type(i).shape; }
  DType dtype(int i) const { return type(i).dtype; }
  const Tensor* constant(int i) const;  // nullptr when the input is not a compile-time constant
  // The input's value, which shape inference needs; a clear error when it is computed at run time.
  const Tensor& require_constant(int i, const char* what) const;
  // Collects the value ids require_constant found computed at run time (the importer binds given values).
  void collect_missing_constants(std::vector<int>* out) { missing_ = out; }
  void require_inputs(int min, int max) const;

  template <typename... A>
  [[noreturn]] void unsupported(A&&... a) const {
    fail(Status::kUnsupported, n_.label(), " (opset ", n_.opset, "): ", std::forward<A>(a)...);
  }
  template <typename... A>
  [[noreturn]] void invalid(A&&... a) const {
    fail(Status::kShapeError, n_.label(), ": ", std::forward<A>(a)...);
  }

 private:
  const Graph& g_;
  const Node& n_;
  std::vector<int>* missing_ = nullptr;
};

class KernelContext {
 public:
  KernelContext(const Node& n, std::vector<const Tensor*> in, std::vector<Tensor*> out,
                std::vector<char> constant = {})
      : n_(n), in_(std::move(in)), out_(std::move(out)), constant_(std::move(constant)) {}
  // True when input i is a graph constant (its data never changes), so derived data may be cached.
  bool is_constant(int i) const { return size_t(i) < constant_.size() && constant_[size_t(i)]; }
  const Node& node() const { return n_; }
  int num_inputs() const { return int(in_.size()); }
  bool has(int i) const { return i < num_inputs() && in_[size_t(i)] != nullptr; }
  const Tensor& in(int i) const { return *in_[size_t(i)]; }
  int num_outputs() const { return int(out_.size()); }
  bool has_out(int i) const { return i < num_outputs() && out_[size_t(i)] != nullptr; }
  Tensor& out(int i) const { return *out_[size_t(i)]; }

 private:
  const Node& n_;
  std::vector<const Tensor*> in_;
  std::vector<Tensor*> out_;  // preallocated from the inferred types; nullptr for omitted outputs
  std::vector<char> constant_;
};

using InferFn = std::vector<TensorType> (*)(const InferContext&);
using KernelFn = void (*)(const KernelContext&);

struct OpImpl {
  InferFn infer;
  KernelFn run;
};

const OpImpl& op_impl(OpKind op);

// Runs the node's reference kernel on given inputs (nullptr for omitted optional inputs); outputs are
// allocated from `out_types`, except those the node omits (node.outputs[i] < 0), which stay empty.
// `constant` flags inputs whose data never changes (kernels may cache what they derive from them).
std::vector<Tensor> run_kernel(const Node& node, const std::vector<const Tensor*>& inputs,
                               const std::vector<TensorType>& out_types, const std::vector<char>& constant);

}  // namespace dlakit
