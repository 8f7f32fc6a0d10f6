// Gemm (alpha, beta, transA, transB, broadcast C) and MatMul (NumPy semantics with batch broadcasting).
#include <cstring>

#include "kernels/gemm.h"
#include "kernels/ref/common.h"

namespace dlakit::ref {
namespace {

std::vector<TensorType> infer_gemm(const InferContext& c) {
  c.require_inputs(2, 3);
  for (int i = 0; i < c.num_inputs(); ++i)
    if (c.has(i) && c.dtype(i) != DType::kF32)
      c.unsupported("input #", i, " dtype ", dtype_name(c.dtype(i)), "; float32 only");
  const Shape &a = c.shape(0), &b = c.shape(1);
  if (a.size() != 2 || b.size() != 2) c.invalid("A ", shape_str(a), " and B ", shape_str(b), " must be 2-D");
  const bool ta = c.node().attr_int("transA", 0), tb = c.node().attr_int("transB", 0);
  const int64_t M = ta ? a[1] : a[0], K = ta ? a[0] : a[1], K2 = tb ? b[1] : b[0], N = tb ? b[0] : b[1];
  if (K != K2)
    c.invalid("inner dimensions differ: A ", shape_str(a), (ta ? "^T" : ""), " x B ", shape_str(b),
              (tb ? "^T" : ""));
  if (c.has(2)) {
    Shape bc = broadcast_shapes(c.node(), {c.shape(2), {M, N}});
    if (bc != Shape{M, N}) c.invalid("C ", shape_str(c.shape(2)), " does not broadcast to ", M, "x", N);
  }
  return {{DType::kF32, {M, N}}};
}

void run_gemm(const KernelContext& c) {
  const Tensor &A = c.in(0), &B = c.in(1);
  Tensor& Y = c.out(0);
  const bool ta = c.node().attr_int("transA", 0), tb = c.node().attr_int("transB", 0);
  const float alpha = c.node().attr_float("alpha", 1.f), beta = c.node().attr_float("beta", 1.f);
  const int64_t M = Y.dim(0), N = Y.dim(1), K = ta ? A.dim(0) : A.dim(1);
  const int64_t lda = A.dim(1), ldb = B.dim(1);
  sgemm({M, N, K, A.data<float>(), ta ? 1 : lda, ta ? lda : 1, B.data<float>(), tb ? 1 : ldb, tb ? ldb : 1,
         Y.data<float>(), N, false});
  float* y = Y.data<float>();
  if (alpha != 1.f)
    for (int64_t i = 0; i < M * N; ++i) y[i] *= alpha;
  if (c.has(2) && beta != 0.f) {
    const Tensor& C = c.in(2);
    for_each_broadcast(
        Y.shape(), {broadcast_strides(C.shape(), Y.shape())},
        [&](int64_t i, const std::vector<int64_t>& off) { y[i] += beta * C.data<float>()[off[0]]; });
  }
}

// MatMul shapes: 1-D operands are promoted (prepend / append 1) and the promoted dim removed after.
struct MatMulPlan {
  Shape batch;  // broadcast batch dims
  int64_t M, K, N;
  bool a_vec, b_vec;
};

MatMulPlan plan_matmul(const Node& n, Shape a, Shape b) {
  MatMulPlan p{};
  if (a.empty() || b.empty()) fail(Status::kShapeError, n.label(), ": MatMul operands must have rank >= 1");
  p.a_vec = a.size() == 1;
  p.b_vec = b.size() == 1;
  if (p.a_vec) a.insert(a.begin(), 1);
  if (p.b_vec) b.push_back(1);
  p.M = a[a.size() - 2];
  p.K = a.back();
  p.N = b.back();
  if (b[b.size() - 2] != p.K)
    fail(Status::kShapeError, n.label(), ": inner dimensions differ: ", shape_str(a), " x ", shape_str(b));
  p.batch = broadcast_shapes(n, {Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2)});
  return p;
}

Shape matmul_out(const MatMulPlan& p) {
  Shape out = p.batch;
  if (!p.a_vec) out.push_back(p.M);
  if (!p.b_vec) out.push_back(p.N);
  return out;
}

std::vector<TensorType> infer_matmul(const InferContext& c) {
  c.require_inputs(2, 2);
  for (int i = 0; i < 2; ++i)
    if (c.dtype(i) != DType::kF32)
      c.unsupported("input #", i, " dtype ", dtype_name(c.dtype(i)), "; float32 only");
  return {{DType::kF32, matmul_out(plan_matmul(c.node(), c.shape(0), c.shape(1)))}};
}

void run_matmul(const KernelContext& c) {
  const Tensor &A = c.in(0), &B = c.in(1);
  const MatMulPlan p = plan_matmul(c.node(), A.shape(), B.shape());
  Shape ab(A.shape().begin(), A.shape().end() - (p.a_vec ? 1 : 2));
  Shape bb(B.shape().begin(), B.shape().end() - (p.b_vec ? 1 : 2));
  float* y = c.out(0).data<float>();
  const int64_t mk = p.M * p.K, kn = p.K * p.N, mn = p.M * p.N;
  for_each_broadcast(p.batch, {broadcast_strides(ab, p.batch), broadcast_strides(bb, p.batch)},
                     [&](int64_t i, const std::vector<int64_t>& off) {
                       sgemm({p.M, p.N, p.K, A.data<float>() + off[0] * mk, p.K, 1,
                              B.data<float>() + off[1] * kn, p.N, 1, y + i * mn, p.N, false});
                     });
}

}  // namespace
}  // namespace dlakit::ref

namespace dlakit {
extern const OpImpl kImpl_Gemm{ref::infer_gemm, ref::run_gemm};
extern const OpImpl kImpl_MatMul{ref::infer_matmul, ref::run_matmul};
}  // namespace dlakit
