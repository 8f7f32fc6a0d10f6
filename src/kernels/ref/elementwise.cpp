// Binary and variadic element-wise ops with NumPy broadcasting: Add Sub Mul Div Pow Max Min Sum Equal.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "base/cpu.h"
#include "base/threadpool.h"
#include "kernels/ref/common.h"

namespace dlakit::ref {
namespace {

// Opset < 7 arithmetic broadcasts B onto A only with broadcast=1, aligning B at `axis` (default: suffix).
// Returns B's shape as NumPy broadcasting should see it.
Shape effective_shape(const Node& n, int input, const Shape& a, const Shape& b) {
  if (n.opset >= 7 || input == 0 || n.op == OpKind::Max || n.op == OpKind::Min || n.op == OpKind::Sum)
    return b;
  if (!n.attr_int("broadcast", 0)) {
    if (a != b)
      fail(Status::kShapeError, n.label(), ": shapes ", shape_str(a), " and ", shape_str(b),
           " differ and broadcast=0");
    return b;
  }
  if (!n.has("axis")) return b;
  const int64_t axis = normalize_axis(n, n.attr_int("axis", 0), int64_t(a.size()));
  Shape e = b;
  while (int64_t(e.size()) + axis < int64_t(a.size())) e.push_back(1);
  return e;
}

std::vector<TensorType> infer_broadcast(const InferContext& c) {
  bool variadic = c.node().op == OpKind::Max || c.node().op == OpKind::Min || c.node().op == OpKind::Sum;
  c.require_inputs(variadic ? 1 : 2, variadic ? 1 << 20 : 2);
  std::vector<Shape> shapes;
  for (int i = 0; i < c.num_inputs(); ++i)
    shapes.push_back(effective_shape(c.node(), i, c.shape(0), c.shape(i)));
  DType dt = c.dtype(0);
  if (c.node().op != OpKind::Pow)
    for (int i = 1; i < c.num_inputs(); ++i)
      if (c.dtype(i) != dt)
        c.invalid("input #", i, " has dtype ", dtype_name(c.dtype(i)), " but input #0 has ", dtype_name(dt));
  if (c.node().op == OpKind::Equal) dt = DType::kBool;
  return {{dt, broadcast_shapes(c.node(), shapes)}};
}

// How an operand broadcast onto `out` is walked: out splits into [outer..., inner block], the block being
// the longest suffix over which the operand is one repeated value (stride 0) or contiguous, so inner loops
// are plain vectorisable loops (or one fill / one memcpy).
struct BroadcastBlocks {
  Shape outer;
  std::vector<int64_t> outer_strides;
  int64_t block = 1;
  bool scalar_run = false;  // the operand is one value per block
};
BroadcastBlocks broadcast_blocks(const Shape& operand, const Shape& os) {
  const auto bst = broadcast_strides(operand, os);
  BroadcastBlocks r;
  size_t split = os.size();
  r.scalar_run = !os.empty() && bst.back() == 0;
  while (r.scalar_run && split > 0 && bst[split - 1] == 0) --split;
  if (!r.scalar_run) {  // the operand's contiguous suffix must match out's strides exactly within the block
    split = os.size();
    int64_t expect = 1;
    while (split > 0 && bst[split - 1] == expect) expect *= os[--split];
  }
  for (size_t d = split; d < os.size(); ++d) r.block *= os[d];
  r.outer.assign(os.begin(), os.begin() + long(split));
  r.outer_strides.assign(bst.begin(), bst.begin() + long(split));
  return r;
}

// o[i] = op(x[i], y[i]), or op(x[i], y[0]) with `y_scalar`, for i in [s, e); o may be x. Built for any
// x86-64 and again with AVX2 (more lanes per instruction); no FMA, so both builds give the same bits.
template <typename T, typename Op>
[[gnu::always_inline]] inline void binary_run(const T* x, const T* y, bool y_scalar, T* o, int64_t s,
                                              int64_t e, Op op) {
  if (y_scalar) {
    const T v = y[0];
    for (int64_t i = s; i < e; ++i) o[i] = op(x[i], v);
  } else {
    for (int64_t i = s; i < e; ++i) o[i] = op(x[i], y[i]);
  }
}
template <typename T, typename Op>
void binary_run_baseline(const T* x, const T* y, bool y_scalar, T* o, int64_t s, int64_t e, Op op) {
  binary_run(x, y, y_scalar, o, s, e, op);
}
#if defined(__x86_64__)
template <typename T, typename Op>
DLAKIT_TARGET_AVX2 void binary_run_avx2(const T* x, const T* y, bool y_scalar, T* o, int64_t s, int64_t e,
                                        Op op) {
  binary_run(x, y, y_scalar, o, s, e, op);
}
#endif
// binary_run on the widest build this CPU runs, chosen once per operation (the broadcast path calls it a
// row at a time).
template <typename T, typename Op>
using BinaryRun = void (*)(const T*, const T*, bool, T*, int64_t, int64_t, Op);
template <typename T, typename Op>
BinaryRun<T, Op> binary_run_best() {
#if defined(__x86_64__)
  if (cpu::avx2()) return binary_run_avx2<T, Op>;
#endif
  return binary_run_baseline<T, Op>;
}

// out = op(src, b), b broadcast to out's shape; src has out's shape (src == out: in place). Ints compute in
// T (wrapping like ONNX Runtime).
template <typename T, typename Op>
void apply_binary(Tensor& out, const T* src, const Tensor& b, Op op) {
  T* o = out.data<T>();
  const T* pb = b.data<T>();
  const int64_t n = out.numel();
  const BinaryRun<T, Op> run = binary_run_best<T, Op>();
  if (b.shape() == out.shape() || b.numel() == 1) {
    const bool scalar = b.shape() != out.shape();
    parallel_for(
        n, [&](int64_t s, int64_t e) { run(src, pb, scalar, o, s, e, op); }, 16384);
  } else {
    const BroadcastBlocks bb = broadcast_blocks(b.shape(), out.shape());
    const int64_t min_blocks = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, bb.block));
    parallel_for_each_broadcast(
        bb.outer, {bb.outer_strides}, min_blocks, [&](int64_t i, const std::vector<int64_t>& off) {
          run(src + i * bb.block, pb + off[0], bb.scalar_run, o + i * bb.block, 0, bb.block, op);
        });
  }
}

// Broadcast-copies `a` into `out` (same dtype), a block (one fill or one memcpy) at a time.
void expand_into(const Tensor& a, Tensor& out) {
  const size_t es = dtype_size(a.dtype());
  if (a.shape() == out.shape()) {
    std::memcpy(out.raw(), a.raw(), out.nbytes());
    return;
  }
  const uint8_t* src = static_cast<const uint8_t*>(a.raw());
  uint8_t* dst = static_cast<uint8_t*>(out.raw());
  const BroadcastBlocks bb = broadcast_blocks(a.shape(), out.shape());
  const size_t block_bytes = size_t(bb.block) * es;
  for_each_broadcast(bb.outer, {bb.outer_strides}, [&](int64_t i, const std::vector<int64_t>& off) {
    uint8_t* d = dst + size_t(i) * block_bytes;
    const uint8_t* from = src + size_t(off[0]) * es;
    if (!bb.scalar_run) return void(std::memcpy(d, from, block_bytes));
    // One value repeated: copy it once, then double the filled part.
    std::memcpy(d, from, es);
    for (size_t done = es; done < block_bytes;) {
      const size_t n = std::min(done, block_bytes - done);
      std::memcpy(d + done, d, n);
      done += n;
    }
  });
}

// Input k viewed with its effective (legacy-broadcast) shape.
Tensor operand(const KernelContext& c, int k) {
  return c.in(k).reshaped(effective_shape(c.node(), k, c.in(0).shape(), c.in(k).shape()));
}

// Integer + - * wrap around in two's complement (as ONNX Runtime's do); signed overflow is undefined in
// C++, so they are computed unsigned (an overflow found by fuzz_onnx_import when folding constants).
template <typename T, typename Op>
T wrapping(T x, T y, Op op) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    using U = std::make_unsigned_t<T>;
    return T(U(op(U(x), U(y))));
  } else {
    return T(op(x, y));
  }
}

template <typename T>
T int_div(T a, T b) {
  if (b == 0) return T(0);  // defined result instead of a trap; ONNX leaves it undefined
  if constexpr (std::is_signed_v<T>)
    if (b == T(-1)) return wrapping<T>(T(0), a, std::minus<>());  // avoids the INT_MIN / -1 overflow trap
  return T(a / b);
}

// Max/Min that propagate NaN like NumPy's maximum/minimum.
template <typename T>
T pick(T x, T y, bool max) {
  if constexpr (std::is_floating_point_v<T>)
    if (x != x || y != y) return std::numeric_limits<T>::quiet_NaN();
  return max ? (x > y ? x : y) : (x < y ? x : y);
}

template <typename T>
void run_typed(const KernelContext& c, Tensor& out) {
  const OpKind op = c.node().op;
  // x + y and x * y are y + x and y * x bit for bit (ints wrap either way), so a broadcast first operand
  // of a two-input Add or Mul becomes the second: no broadcast copy.
  const bool commutes = op == OpKind::Add || op == OpKind::Mul || op == OpKind::Sum;
  const bool swap = commutes && c.num_inputs() == 2 && c.in(0).shape() != out.shape() &&
                    operand(c, 1).shape() == out.shape();
  const Tensor first = swap ? operand(c, 1) : c.in(0);
  // The first operation reads the first operand where it has the output's shape (no copy); later ones
  // work in place.
  const bool first_in_place = first.shape() != out.shape() || c.num_inputs() == 1;
  if (first_in_place) expand_into(first, out);
  for (int k = 1; k < c.num_inputs(); ++k) {
    const Tensor b = swap ? c.in(0) : operand(c, k);
    const T* src = k == 1 && !first_in_place ? first.data<T>() : out.data<T>();
    auto apply = [&](const Tensor& operand_b, auto fn) { apply_binary<T>(out, src, operand_b, fn); };
    switch (op) {
      case OpKind::Add:
      case OpKind::Sum:
        apply(b, [](T x, T y) { return wrapping<T>(x, y, std::plus<>()); });
        break;
      case OpKind::Sub:
        apply(b, [](T x, T y) { return wrapping<T>(x, y, std::minus<>()); });
        break;
      case OpKind::Mul:
        apply(b, [](T x, T y) { return wrapping<T>(x, y, std::multiplies<>()); });
        break;
      case OpKind::Div:
        if constexpr (std::is_floating_point_v<T>)
          apply(b, [](T x, T y) { return T(x / y); });
        else
          apply(b, [](T x, T y) { return int_div(x, y); });
        break;
      case OpKind::Max:
        apply(b, [](T x, T y) { return pick<T>(x, y, true); });
        break;
      case OpKind::Min:
        apply(b, [](T x, T y) { return pick<T>(x, y, false); });
        break;
      default:
        fail(Status::kInternal, c.node().label(), ": not a typed binary op");
    }
  }
}

// Pow allows different base and exponent dtypes; it and f16 go through double.
void run_generic(const KernelContext& c, Tensor& out) {
  const OpKind op = c.node().op;
  const Tensor& a = c.in(0);
  std::vector<double> acc(size_t(out.numel()));
  for_each_broadcast(out.shape(), {broadcast_strides(a.shape(), out.shape())},
                     [&](int64_t i, const std::vector<int64_t>& off) { acc[size_t(i)] = a.at_f64(off[0]); });
  for (int k = 1; k < c.num_inputs(); ++k) {
    const Tensor b = operand(c, k);
    for_each_broadcast(out.shape(), {broadcast_strides(b.shape(), out.shape())},
                       [&](int64_t i, const std::vector<int64_t>& off) {
                         double x = acc[size_t(i)], y = b.at_f64(off[0]);
                         double r = 0;
                         switch (op) {
                           case OpKind::Add:
                           case OpKind::Sum:
                             r = x + y;
                             break;
                           case OpKind::Sub:
                             r = x - y;
                             break;
                           case OpKind::Mul:
                             r = x * y;
                             break;
                           case OpKind::Div:
                             r = x / y;
                             break;
                           case OpKind::Pow:
                             r = std::pow(x, y);
                             break;
                           case OpKind::Max:
                             r = std::fmax(x, y);
                             break;
                           case OpKind::Min:
                             r = std::fmin(x, y);
                             break;
                           default:
                             break;
                         }
                         // f16 rounds after every op, as fp16 hardware would.
                         acc[size_t(i)] = out.dtype() == DType::kF16 ? round_to_half(float(r)) : r;
                       });
  }
  for (int64_t i = 0; i < out.numel(); ++i) store_f64(out, i, acc[size_t(i)]);
}

void run_binary(const KernelContext& c) {
  Tensor& out = c.out(0);
  if (c.node().op == OpKind::Pow && out.dtype() == DType::kF32 && c.in(1).dtype() == DType::kF32) {
    // fast path for the common float Pow (LayerNorm's x^2)
    const bool same = c.in(0).shape() == out.shape();
    if (!same) expand_into(c.in(0), out);
    apply_binary<float>(out, same ? c.in(0).data<float>() : out.data<float>(), operand(c, 1),
                        [](float x, float y) { return y == 2.0f ? x * x : std::pow(x, y); });
    return;
  }
  if (c.node().op == OpKind::Pow || out.dtype() == DType::kF16) return run_generic(c, out);
  DLAKIT_DISPATCH_NUMERIC(out.dtype(), T, run_typed<T>(c, out));
}

void run_equal(const KernelContext& c) {
  const Tensor &a = c.in(0), &b = c.in(1);
  Tensor& out = c.out(0);
  uint8_t* o = out.data<uint8_t>();
  for_each_broadcast(out.shape(),
                     {broadcast_strides(a.shape(), out.shape()), broadcast_strides(b.shape(), out.shape())},
                     [&](int64_t i, const std::vector<int64_t>& off) {
                       o[i] = a.dtype() == DType::kI64 ? a.at_i64(off[0]) == b.at_i64(off[1])
                                                       : a.at_f64(off[0]) == b.at_f64(off[1]);
                     });
}

}  // namespace
}  // namespace dlakit::ref

namespace dlakit {
extern const OpImpl kImpl_Add{ref::infer_broadcast, ref::run_binary};
extern const OpImpl kImpl_Sub{ref::infer_broadcast, ref::run_binary};
extern const OpImpl kImpl_Mul{ref::infer_broadcast, ref::run_binary};
extern const OpImpl kImpl_Div{ref::infer_broadcast, ref::run_binary};
extern const OpImpl kImpl_Pow{ref::infer_broadcast, ref::run_binary};
extern const OpImpl kImpl_Max{ref::infer_broadcast, ref::run_binary};
extern const OpImpl kImpl_Min{ref::infer_broadcast, ref::run_binary};
extern const OpImpl kImpl_Sum{ref::infer_broadcast, ref::run_binary};
extern const OpImpl kImpl_Equal{ref::infer_broadcast, ref::run_equal};
}  // namespace dlakit
