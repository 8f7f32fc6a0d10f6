// ReduceMean, ReduceMax, ReduceSum over any set of axes, keepdims, noop_with_empty_axes.
#include <cmath>
#include <limits>

#include "kernels/ref/common.h"

namespace dlakit::ref {
namespace {

struct ReducePlan {
  std::vector<char> reduced;  // per input dim
  Shape out;
  bool noop = false;
};

ReducePlan plan_reduce(const Node& n, const Shape& in, const Tensor* axes_input) {
  const bool axes_as_input = n.op == OpKind::ReduceSum && n.opset >= 13;
  std::vector<int64_t> axes =
      axes_as_input ? (axes_input ? axes_input->to_i64() : std::vector<int64_t>{}) : n.attr_ints("axes");
  const bool keep = n.attr_int("keepdims", 1) != 0;
  ReducePlan p;
  p.reduced.assign(in.size(), axes.empty() ? 1 : 0);
  if (axes.empty() && n.attr_int("noop_with_empty_axes", 0)) {
    p.reduced.assign(in.size(), 0);
    p.noop = true;
  }
  for (int64_t a : axes) p.reduced[size_t(normalize_axis(n, a, int64_t(in.size())))] = 1;
  for (size_t i = 0; i < in.size(); ++i)
    if (!p.reduced[i])
      p.out.push_back(in[i]);
    else if (keep)
      p.out.push_back(1);
  return p;
}

std::vector<TensorType> infer_reduce(const InferContext& c) {
  c.require_inputs(1, 2);
  if (c.dtype(0) != DType::kF32 && c.dtype(0) != DType::kI64 && c.dtype(0) != DType::kI32)
    c.unsupported("dtype ", dtype_name(c.dtype(0)));
  const Tensor* axes = c.has(1) ? &c.require_constant(1, "axes") : nullptr;
  return {{c.dtype(0), plan_reduce(c.node(), c.shape(0), axes).out}};
}

void run_reduce(const KernelContext& c) {
  const Tensor& x = c.in(0);
  Tensor& y = c.out(0);
  const ReducePlan p = plan_reduce(c.node(), x.shape(), c.has(1) ? &c.in(1) : nullptr);
  const OpKind op = c.node().op;
  // Output strides over the input's dims: 0 on reduced dims.
  Shape kept_shape;
  for (size_t i = 0; i < x.shape().size(); ++i) kept_shape.push_back(p.reduced[i] ? 1 : x.dim(int(i)));
  auto ost = broadcast_strides(kept_shape, x.shape());
  const int64_t count = y.numel() ? x.numel() / y.numel() : 0;
  std::vector<double> acc(size_t(y.numel()), op == OpKind::ReduceMax ? -INFINITY : 0.0);
  for_each_broadcast(x.shape(), {ost}, [&](int64_t i, const std::vector<int64_t>& off) {
    const double v = x.at_f64(i);
    double& a = acc[size_t(off[0])];
    a = op == OpKind::ReduceMax ? (v > a || v != v ? v : a) : a + v;
  });
  for (int64_t i = 0; i < y.numel(); ++i)
    store_f64(y, i, op == OpKind::ReduceMean && !p.noop ? acc[size_t(i)] / double(count) : acc[size_t(i)]);
}

}  // namespace
}  // namespace dlakit::ref

namespace dlakit {
extern const OpImpl kImpl_ReduceMean{ref::infer_reduce, ref::run_reduce};
extern const OpImpl kImpl_ReduceMax{ref::infer_reduce, ref::run_reduce};
extern const OpImpl kImpl_ReduceSum{ref::infer_reduce, ref::run_reduce};
}  // namespace dlakit
