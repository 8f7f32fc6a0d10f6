// Element-wise unary ops and activations: Relu LeakyRelu PRelu Sigmoid Tanh Clip HardSigmoid HardSwish Elu
// Softplus Sqrt Exp Log Neg Abs Reciprocal Erf Floor Ceil.
#include <algorithm>
#include <cmath>
#include <limits>

#include "base/cpu.h"
#include "base/threadpool.h"
#include "kernels/ref/common.h"
#include "kernels/ref/float_ops.h"

namespace dlakit::ref {
namespace {

// PRelu's slope as broadcasting sees it. Opset < 7 applies a 1-D slope of C values per channel.
Shape slope_shape(const Node& n, const Shape& x, const Shape& slope) {
  if (n.opset < 7 && slope.size() == 1 && x.size() >= 2 && slope[0] == x[1] && slope[0] != 1) {
    Shape s{slope[0]};
    s.resize(x.size() - 1, 1);
    return s;
  }
  return slope;
}

std::vector<TensorType> infer_same(const InferContext& c) {
  c.require_inputs(1, c.node().op == OpKind::Clip ? 3 : (c.node().op == OpKind::PRelu ? 2 : 1));
  if (c.node().op == OpKind::PRelu) {
    Shape b = broadcast_shapes(c.node(), {c.shape(0), slope_shape(c.node(), c.shape(0), c.shape(1))});
    if (b != c.shape(0))
      c.invalid("slope ", shape_str(c.shape(1)), " must broadcast to the input ", shape_str(c.shape(0)));
  }
  return {c.type(0)};
}

// The scalar function of a unary op, with its attributes read once.
struct Unary {
  OpKind op;
  float alpha = 0, beta = 0, lo = -INFINITY, hi = INFINITY;

  explicit Unary(const KernelContext& c) : op(c.node().op) {
    const Node& n = c.node();
    switch (op) {
      case OpKind::LeakyRelu:
        alpha = n.attr_float("alpha", 0.01f);
        break;
      case OpKind::HardSigmoid:
        alpha = n.attr_float("alpha", 0.2f);
        beta = n.attr_float("beta", 0.5f);
        break;
      case OpKind::Elu:
        alpha = n.attr_float("alpha", 1.0f);
        break;
      case OpKind::Clip:
        if (n.opset < 11) {
          lo = n.attr_float("min", -std::numeric_limits<float>::max());
          hi = n.attr_float("max", std::numeric_limits<float>::max());
        } else {
          if (c.has(1)) lo = float(c.in(1).at_f64(0));
          if (c.has(2)) hi = float(c.in(2).at_f64(0));
        }
        break;
      default:
        break;
    }
  }

  double operator()(double x) const {
    switch (op) {
      case OpKind::Relu:
        return x > 0 ? x : 0;
      case OpKind::LeakyRelu:
        return x >= 0 ? x : x * double(alpha);
      case OpKind::Sigmoid:
        return 1.0 / (1.0 + std::exp(-x));
      case OpKind::Tanh:
        return std::tanh(x);
      case OpKind::Clip:
        return x != x ? x : std::min(std::max(x, double(lo)), double(hi));
      case OpKind::HardSigmoid:
        return std::max(0.0, std::min(1.0, double(alpha) * x + double(beta)));
      case OpKind::HardSwish:
        return x * std::max(0.0, std::min(1.0, x / 6.0 + 0.5));
      case OpKind::Elu:
        return x >= 0 ? x : double(alpha) * (std::exp(x) - 1.0);
      case OpKind::Softplus:
        return x > 30 ? x : std::log1p(std::exp(x));
      case OpKind::Sqrt:
        return std::sqrt(x);
      case OpKind::Exp:
        return std::exp(x);
      case OpKind::Log:
        return std::log(x);
      case OpKind::Neg:
        return -x;
      case OpKind::Abs:
        return std::fabs(x);
      case OpKind::Reciprocal:
        return 1.0 / x;
      case OpKind::Erf:
        return std::erf(x);
      case OpKind::Floor:
        return std::floor(x);
      case OpKind::Ceil:
        return std::ceil(x);
      default:
        return x;
    }
  }
};

// Float version evaluated in float where that is exact enough and much faster.
inline float eval_f32(const Unary& u, float x) {
  switch (u.op) {
    case OpKind::Relu:
      return x > 0 ? x : 0;
    case OpKind::LeakyRelu:
      return x >= 0 ? x : x * u.alpha;
    case OpKind::Sigmoid:
      return 1.0f / (1.0f + std::exp(-x));
    case OpKind::Clip:
      return x != x ? x : std::min(std::max(x, u.lo), u.hi);
    case OpKind::HardSigmoid:
      return std::max(0.0f, std::min(1.0f, u.alpha * x + u.beta));
    case OpKind::HardSwish:
      return x * std::max(0.0f, std::min(1.0f, x / 6.0f + 0.5f));
    case OpKind::Neg:
      return -x;
    case OpKind::Abs:
      return std::fabs(x);
    default:
      return float(u(double(x)));
  }
}

// py[i] = f(px[i]) for i in [s, e). Built for any x86-64 and again with AVX2 (more lanes per instruction); no
// FMA, so both builds give the same bits.
template <typename F>
[[gnu::always_inline]] inline void unary_run(const float* px, float* py, int64_t s, int64_t e, F f) {
  for (int64_t i = s; i < e; ++i) py[i] = f(px[i]);
}
template <typename F>
void unary_run_baseline(const float* px, float* py, int64_t s, int64_t e, F f) {
  unary_run(px, py, s, e, f);
}
#if defined(__x86_64__)
template <typename F>
DLAKIT_TARGET_AVX2 void unary_run_avx2(const float* px, float* py, int64_t s, int64_t e, F f) {
  unary_run(px, py, s, e, f);
}
#endif

void run_unary(const KernelContext& c) {
  const Unary u(c);
  const Tensor& x = c.in(0);
  Tensor& y = c.out(0);
  const int64_t n = x.numel();
  if (x.dtype() == DType::kF32) {
    const float* px = x.data<float>();
    float* py = y.data<float>();
    // One loop per op so the compiler sees a branch-free, vectorisable body.
    auto loop = [&](auto f) {
      parallel_for(
          n,
          [&](int64_t s, int64_t e) {
#if defined(__x86_64__)
            if (cpu::avx2()) return unary_run_avx2(px, py, s, e, f);
#endif
            unary_run_baseline(px, py, s, e, f);
          },
          8192);
    };
    const float lo = u.lo, hi = u.hi, a = u.alpha, b = u.beta;
    switch (u.op) {
      case OpKind::Relu:
        loop([](float v) { return f32::relu(v); });
        break;
      case OpKind::Clip:
        loop([=](float v) { return f32::clip(v, lo, hi); });
        break;
      case OpKind::LeakyRelu:
        loop([=](float v) { return f32::leaky_relu(v, a); });
        break;
      case OpKind::HardSigmoid:
        loop([=](float v) { return f32::hard_sigmoid(v, a, b); });
        break;
      case OpKind::HardSwish:
        loop([](float v) { return f32::hard_swish(v); });
        break;
      default:
        loop([&](float v) { return eval_f32(u, v); });
    }
  } else if (x.dtype() == DType::kI64 && (u.op == OpKind::Neg || u.op == OpKind::Abs)) {
    const int64_t* px = x.data<int64_t>();
    int64_t* py = y.data<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      uint64_t m = uint64_t(px[i]);  // two's complement negation without signed overflow
      bool neg = u.op == OpKind::Neg || px[i] < 0;
      py[i] = int64_t(neg ? uint64_t(0) - m : m);
    }
  } else if (x.dtype() == DType::kF16) {
    for (int64_t i = 0; i < n; ++i) store_f64(y, i, eval_f32(u, float(x.at_f64(i))));
  } else {
    for (int64_t i = 0; i < n; ++i) store_f64(y, i, u(x.at_f64(i)));
  }
}

void run_prelu(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const Tensor slope = c.in(1).reshaped(slope_shape(c.node(), x.shape(), c.in(1).shape()));
  Tensor& y = c.out(0);
  for_each_broadcast(y.shape(),
                     {broadcast_strides(x.shape(), y.shape()), broadcast_strides(slope.shape(), y.shape())},
                     [&](int64_t i, const std::vector<int64_t>& off) {
                       double v = x.at_f64(off[0]);
                       store_f64(y, i, v < 0 ? v * slope.at_f64(off[1]) : v);
                     });
}

}  // namespace
}  // namespace dlakit::ref

namespace dlakit {
extern const OpImpl kImpl_Relu{ref::infer_same, ref::run_unary};
extern const OpImpl kImpl_LeakyRelu{ref::infer_same, ref::run_unary};
extern const OpImpl kImpl_PRelu{ref::infer_same, ref::run_prelu};
extern const OpImpl kImpl_Sigmoid{ref::infer_same, ref::run_unary};
extern const OpImpl kImpl_Tanh{ref::infer_same, ref::run_unary};
extern const OpImpl kImpl_Clip{ref::infer_same, ref::run_unary};
extern const OpImpl kImpl_HardSigmoid{ref::infer_same, ref::run_unary};
extern const OpImpl kImpl_HardSwish{ref::infer_same, ref::run_unary};
extern const OpImpl kImpl_Elu{ref::infer_same, ref::run_unary};
extern const OpImpl kImpl_Softplus{ref::infer_same, ref::run_unary};
extern const OpImpl kImpl_Sqrt{ref::infer_same, ref::run_unary};
extern const OpImpl kImpl_Exp{ref::infer_same, ref::run_unary};
extern const OpImpl kImpl_Log{ref::infer_same, ref::run_unary};
extern const OpImpl kImpl_Neg{ref::infer_same, ref::run_unary};
extern const OpImpl kImpl_Abs{ref::infer_same, ref::run_unary};
extern const OpImpl kImpl_Reciprocal{ref::infer_same, ref::run_unary};
extern const OpImpl kImpl_Erf{ref::infer_same, ref::run_unary};
extern const OpImpl kImpl_Floor{ref::infer_same, ref::run_unary};
extern const OpImpl kImpl_Ceil{ref::infer_same, ref::run_unary};
}  // namespace dlakit
