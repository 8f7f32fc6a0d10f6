// Data-movement ops: Concat Split Slice Reshape Flatten Transpose Squeeze Unsqueeze Pad Identity Dropout
// Cast Gather Shape Constant ConstantOfShape. All dtypes; these also fold shape arithmetic at import.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/checked.h"
#include "kernels/ref/common.h"
#include "kernels/ref/slice_plan.h"

namespace dlakit::ref {
namespace {

// ---- a shared strided copy: out[i0..ik] = src[sum_d stride_d * index_d[i_d]], or `fill` where any index is
// -1.
struct DimMap {
  int64_t stride = 0;
  std::vector<int64_t> index;  // source index per output position; -1 = fill
};

void mapped_copy(const Tensor& src, Tensor& dst, const std::vector<DimMap>& maps, const void* fill) {
  const size_t es = dtype_size(src.dtype());
  const uint8_t* s = static_cast<const uint8_t*>(src.raw());
  uint8_t* d = static_cast<uint8_t*>(dst.raw());
  const Shape& out = dst.shape();
  const int64_t total = dst.numel();
  if (total == 0) return;
  const size_t rank = out.size();
  if (rank == 0) {
    std::memcpy(d, s, es);
    return;
  }
  std::vector<int64_t> idx(rank, 0);
  const DimMap& last = maps[rank - 1];
  for (int64_t i = 0; i < total; i += out[rank - 1]) {
    int64_t base = 0;
    bool filled = false;
    for (size_t k = 0; k + 1 < rank; ++k) {
      int64_t j = maps[k].index[size_t(idx[k])];
      if (j < 0) filled = true;
      base += j * maps[k].stride;
    }
    uint8_t* row = d + size_t(i) * es;
    for (int64_t w = 0; w < out[rank - 1]; ++w) {
      int64_t j = last.index[size_t(w)];
      const void* from = (filled || j < 0) ? fill : s + size_t(base + j * last.stride) * es;
      std::memcpy(row + size_t(w) * es, from, es);
    }
    for (size_t k = rank - 1; k-- > 0;) {
      if (++idx[k] < out[k]) break;
      idx[k] = 0;
    }
  }
}

std::vector<int64_t> iota(int64_t n, int64_t start = 0, int64_t step = 1) {
  std::vector<int64_t> v(size_t(std::max<int64_t>(n, 0)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + int64_t(i) * step;
  return v;
}

void copy_all(const KernelContext& c) { std::memcpy(c.out(0).raw(), c.in(0).raw(), c.in(0).nbytes()); }

// ---- Identity, Dropout
std::vector<TensorType> infer_identity(const InferContext& c) {
  c.require_inputs(1, c.node().op == OpKind::Dropout ? 3 : 1);
  std::vector<TensorType> out{c.type(0)};
  if (c.node().op == OpKind::Dropout) {
    if (c.has(2) && c.require_constant(2, "training_mode").at_i64(0) != 0)
      c.unsupported("training_mode=true");
    if (c.node().outputs.size() > 1) out.push_back({DType::kBool, c.shape(0)});
  }
  return out;
}

void run_identity(const KernelContext& c) {
  copy_all(c);
  if (c.has_out(1)) std::memset(c.out(1).raw(), 1, c.out(1).nbytes());  // Dropout mask: all kept
}

// ---- Reshape, Flatten, Squeeze, Unsqueeze: same data, new shape
std::vector<TensorType> infer_reshape(const InferContext& c) {
  c.require_inputs(c.node().opset >= 5 ? 2 : 1, 2);
  const Shape& in = c.shape(0);
  std::vector<int64_t> spec =
      c.node().opset >= 5 ? c.require_constant(1, "shape").to_i64() : c.node().attr_ints("shape");
  const bool allowzero = c.node().attr_int("allowzero", 0) != 0;
  Shape out(spec.size());
  int64_t infer_at = -1;
  for (size_t i = 0; i < spec.size(); ++i) {
    if (spec[i] == -1) {
      if (infer_at >= 0) c.invalid("shape ", shape_str(spec), " has more than one -1");
      infer_at = int64_t(i);
      continue;
    }
    if (spec[i] == 0 && !allowzero) {
      if (i >= in.size())
        c.invalid("shape ", shape_str(spec), " copies dim ", i, " but the input ", shape_str(in),
                  " has rank ", in.size());
      out[i] = in[i];
    } else if (spec[i] < 0) {
      c.invalid("shape ", shape_str(spec), " has a negative dimension ", spec[i]);
    } else {
      out[i] = spec[i];
    }
  }
  Shape known_dims = out;
  if (infer_at >= 0) known_dims[size_t(infer_at)] = 1;
  const int64_t known =
      checked_numel(known_dims, kMaxElements, cat(c.node().label(), ": shape ", shape_str(spec)));
  if (infer_at >= 0) {
    if (known == 0 || numel(in) % known) c.invalid("cannot reshape ", shape_str(in), " to ", shape_str(spec));
    out[size_t(infer_at)] = numel(in) / known;
  }
  if (numel(out) != numel(in))
    c.invalid("cannot reshape ", shape_str(in), " (", numel(in), " elements) to ", shape_str(out));
  return {{c.dtype(0), out}};
}

std::vector<TensorType> infer_flatten(const InferContext& c) {
  c.require_inputs(1, 1);
  const Shape& in = c.shape(0);
  const int64_t r = int64_t(in.size());
  int64_t axis = c.node().attr_int("axis", 1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r) c.invalid("axis ", c.node().attr_int("axis", 1), " out of range for rank ", r);
  int64_t a = 1, b = 1;
  for (int64_t i = 0; i < r; ++i) (i < axis ? a : b) *= in[size_t(i)];
  return {{c.dtype(0), {a, b}}};
}

std::vector<int64_t> axes_of(const InferContext& c, bool required) {
  if (c.node().opset >= 13) {
    if (!c.has(1)) {
      if (required) c.invalid("input 'axes' is required");
      return {};
    }
    return c.require_constant(1, "axes").to_i64();
  }
  return c.node().attr_ints("axes");
}

std::vector<TensorType> infer_squeeze(const InferContext& c) {
  c.require_inputs(1, 2);
  const Shape& in = c.shape(0);
  auto axes = axes_of(c, false);
  std::vector<char> drop(in.size(), 0);
  if (axes.empty()) {
    for (size_t i = 0; i < in.size(); ++i) drop[i] = in[i] == 1;
  } else {
    for (int64_t a : axes) {
      int64_t k = normalize_axis(c.node(), a, int64_t(in.size()));
      if (in[size_t(k)] != 1)
        c.invalid("cannot squeeze axis ", a, " of size ", in[size_t(k)], " in ", shape_str(in));
      drop[size_t(k)] = 1;
    }
  }
  Shape out;
  for (size_t i = 0; i < in.size(); ++i)
    if (!drop[i]) out.push_back(in[i]);
  return {{c.dtype(0), out}};
}

std::vector<TensorType> infer_unsqueeze(const InferContext& c) {
  c.require_inputs(1, 2);
  const Shape& in = c.shape(0);
  auto axes = axes_of(c, true);
  const int64_t r = int64_t(in.size() + axes.size());
  std::vector<char> is_new(size_t(r), 0);
  for (int64_t a : axes) {
    int64_t k = normalize_axis(c.node(), a, r);
    if (is_new[size_t(k)]) c.invalid("axis ", a, " appears twice");
    is_new[size_t(k)] = 1;
  }
  Shape out;
  size_t j = 0;
  for (int64_t i = 0; i < r; ++i) out.push_back(is_new[size_t(i)] ? 1 : in[j++]);
  return {{c.dtype(0), out}};
}

// ---- Transpose
std::vector<int64_t> perm_of(const Node& n, size_t rank) {
  std::vector<int64_t> dflt(rank);
  for (size_t i = 0; i < rank; ++i) dflt[i] = int64_t(rank - 1 - i);
  auto p = n.attr_ints("perm", dflt);
  std::vector<char> seen(rank, 0);
  if (p.size() != rank)
    fail(Status::kShapeError, n.label(), ": perm ", shape_str(p), " has ", p.size(), " entries for rank ",
         rank);
  for (auto& v : p) {
    v = normalize_axis(n, v, int64_t(rank), "perm entry");
    if (seen[size_t(v)]++)
      fail(Status::kShapeError, n.label(), ": perm ", shape_str(p), " is not a permutation");
  }
  return p;
}

std::vector<TensorType> infer_transpose(const InferContext& c) {
  c.require_inputs(1, 1);
  const Shape& in = c.shape(0);
  auto p = perm_of(c.node(), in.size());
  Shape out(in.size());
  for (size_t i = 0; i < in.size(); ++i) out[i] = in[size_t(p[i])];
  return {{c.dtype(0), out}};
}

void run_transpose(const KernelContext& c) {
  const Tensor& x = c.in(0);
  auto p = perm_of(c.node(), size_t(x.rank()));
  auto st = row_strides(x.shape());
  std::vector<DimMap> maps;
  for (size_t i = 0; i < p.size(); ++i) maps.push_back({st[size_t(p[i])], iota(x.dim(int(p[i])))});
  mapped_copy(x, c.out(0), maps, nullptr);
}

// ---- Concat, Split
std::vector<TensorType> infer_concat(const InferContext& c) {
  c.require_inputs(1, 1 << 20);
  const Shape& first = c.shape(0);
  const int64_t axis = normalize_axis(c.node(), c.node().attr_int("axis", 1), int64_t(first.size()));
  Shape out = first;
  out[size_t(axis)] = 0;
  for (int i = 0; i < c.num_inputs(); ++i) {
    const Shape& s = c.shape(i);
    if (c.dtype(i) != c.dtype(0))
      c.invalid("input #", i, " dtype ", dtype_name(c.dtype(i)), " differs from input #0");
    bool ok = s.size() == first.size();
    for (size_t d = 0; ok && d < s.size(); ++d) ok = d == size_t(axis) || s[d] == first[d];
    if (!ok)
      c.invalid("input #", i, " shape ", shape_str(s), " does not match ", shape_str(first), " outside axis ",
                axis);
    out[size_t(axis)] += s[size_t(axis)];
  }
  return {{c.dtype(0), out}};
}

void run_concat(const KernelContext& c) {
  Tensor& y = c.out(0);
  const int64_t axis = normalize_axis(c.node(), c.node().attr_int("axis", 1), y.rank());
  const AxisSplit ys = split_at(y.shape(), axis);
  const size_t es = dtype_size(y.dtype());
  uint8_t* d = static_cast<uint8_t*>(y.raw());
  int64_t at = 0;
  for (int i = 0; i < c.num_inputs(); ++i) {
    const Tensor& x = c.in(i);
    const int64_t len = x.dim(int(axis)) * ys.inner;
    const uint8_t* s = static_cast<const uint8_t*>(x.raw());
    for (int64_t o = 0; o < ys.outer; ++o)
      std::memcpy(d + size_t(o * ys.axis * ys.inner + at) * es, s + size_t(o * len) * es, size_t(len) * es);
    at += len;
  }
}

std::vector<int64_t> split_sizes(const Node& n, const Shape& in, int64_t axis, size_t outputs,
                                 const Tensor* split_input) {
  std::vector<int64_t> sizes = split_input ? split_input->to_i64() : n.attr_ints("split");
  const int64_t dim = in[size_t(axis)];
  if (sizes.empty()) {
    if (dim % int64_t(outputs))
      fail(Status::kShapeError, n.label(), ": axis of size ", dim, " cannot be split evenly into ", outputs,
           " outputs");
    sizes.assign(outputs, dim / int64_t(outputs));
  }
  int64_t sum = 0;
  for (int64_t s : sizes) sum += s;
  if (sizes.size() != outputs || sum != dim)
    fail(Status::kShapeError, n.label(), ": split ", shape_str(sizes), " does not divide axis of size ", dim,
         " into ", outputs, " outputs");
  return sizes;
}

std::vector<TensorType> infer_split(const InferContext& c) {
  c.require_inputs(1, 2);
  const Shape& in = c.shape(0);
  const int64_t axis = normalize_axis(c.node(), c.node().attr_int("axis", 0), int64_t(in.size()));
  const Tensor* sp = c.node().opset >= 13 && c.has(1) ? &c.require_constant(1, "split") : nullptr;
  auto sizes = split_sizes(c.node(), in, axis, c.node().outputs.size(), sp);
  std::vector<TensorType> out;
  for (int64_t s : sizes) {
    Shape o = in;
    o[size_t(axis)] = s;
    out.push_back({c.dtype(0), o});
  }
  return out;
}

void run_split(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const int64_t axis = normalize_axis(c.node(), c.node().attr_int("axis", 0), x.rank());
  const AxisSplit xs = split_at(x.shape(), axis);
  const size_t es = dtype_size(x.dtype());
  const uint8_t* s = static_cast<const uint8_t*>(x.raw());
  const Tensor* sp = c.node().opset >= 13 && c.has(1) ? &c.in(1) : nullptr;
  const auto sizes = split_sizes(c.node(), x.shape(), axis, size_t(c.num_outputs()), sp);
  int64_t at = 0;
  for (int i = 0; i < c.num_outputs(); ++i) {  // omitted outputs still advance the offset
    const int64_t len = sizes[size_t(i)] * xs.inner;
    if (c.has_out(i)) {
      uint8_t* d = static_cast<uint8_t*>(c.out(i).raw());
      for (int64_t o = 0; o < xs.outer; ++o)
        std::memcpy(d + size_t(o * len) * es, s + size_t(o * xs.axis * xs.inner + at) * es, size_t(len) * es);
    }
    at += len;
  }
}

// ---- Slice
SliceSpec slice_spec(const Node& n, const Shape& in, std::vector<int64_t> starts, std::vector<int64_t> ends,
                     std::vector<int64_t> axes, std::vector<int64_t> steps) {
  const size_t r = in.size();
  SliceSpec sp{std::vector<int64_t>(r, 0), std::vector<int64_t>(r, 1),
               std::vector<int64_t>(in.begin(), in.end())};
  if (axes.empty()) axes = iota(int64_t(starts.size()));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    fail(Status::kShapeError, n.label(), ": starts/ends/axes/steps have different lengths");
  std::vector<char> seen(r, 0);
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t a = normalize_axis(n, axes[i], int64_t(r));
    if (seen[size_t(a)]++) fail(Status::kShapeError, n.label(), ": axis ", axes[i], " repeats");
    const int64_t dim = in[size_t(a)], step = steps[i];
    if (step == 0) fail(Status::kShapeError, n.label(), ": step 0 on axis ", axes[i]);
    auto clampi = [](int64_t v, int64_t dim, int64_t lo, int64_t hi) {
      if (v < 0) v = v < -dim ? lo : v + dim;  // written to avoid overflow for INT64_MIN
      return std::clamp(v, lo, hi);
    };
    int64_t s, e;
    if (step > 0) {
      s = clampi(starts[i], dim, 0, dim);
      e = clampi(ends[i], dim, 0, dim);
    } else {
      s = clampi(starts[i], dim, 0, dim - 1);
      e = ends[i] < -dim ? -1 : clampi(ends[i], dim, -1, dim - 1);
    }
    int64_t cnt = step > 0 ? (e - s + step - 1) / step : (s - e + (-step) - 1) / (-step);
    sp.start[size_t(a)] = s;
    sp.step[size_t(a)] = step;
    sp.count[size_t(a)] = std::max<int64_t>(cnt, 0);
  }
  return sp;
}

}  // namespace

SliceSpec slice_of(const Node& n, const Shape& in, const Tensor* st, const Tensor* en, const Tensor* ax,
                   const Tensor* sp) {
  if (n.opset < 10)
    return slice_spec(n, in, n.attr_ints("starts"), n.attr_ints("ends"), n.attr_ints("axes"), {});
  if (!st || !en) fail(Status::kInvalidArgument, n.label(), ": starts and ends are required");
  return slice_spec(n, in, st->to_i64(), en->to_i64(), ax ? ax->to_i64() : std::vector<int64_t>{},
                    sp ? sp->to_i64() : std::vector<int64_t>{});
}

namespace {

std::vector<TensorType> infer_slice(const InferContext& c) {
  c.require_inputs(c.node().opset < 10 ? 1 : 3, c.node().opset < 10 ? 1 : 5);
  SliceSpec sp = c.node().opset < 10 ? slice_of(c.node(), c.shape(0), nullptr, nullptr, nullptr, nullptr)
                                     : slice_of(c.node(), c.shape(0), &c.require_constant(1, "starts"),
                                                &c.require_constant(2, "ends"),
                                                c.has(3) ? &c.require_constant(3, "axes") : nullptr,
                                                c.has(4) ? &c.require_constant(4, "steps") : nullptr);
  return {{c.dtype(0), sp.count}};
}

void run_slice(const KernelContext& c) {
  const Tensor& x = c.in(0);
  SliceSpec sp = slice_of(c.node(), x.shape(), c.has(1) ? &c.in(1) : nullptr, c.has(2) ? &c.in(2) : nullptr,
                          c.has(3) ? &c.in(3) : nullptr, c.has(4) ? &c.in(4) : nullptr);
  auto st = row_strides(x.shape());
  std::vector<DimMap> maps;
  for (size_t d = 0; d < size_t(x.rank()); ++d)
    maps.push_back({st[d], iota(sp.count[d], sp.start[d], sp.step[d])});
  mapped_copy(x, c.out(0), maps, nullptr);
}

// ---- Pad
struct PadSpec {
  std::vector<int64_t> pads;  // begin..., end...
  std::string mode;
  double value = 0;
};

PadSpec pad_of(const Node& n, size_t rank, const Tensor* pads, const Tensor* value) {
  PadSpec p;
  p.mode = n.attr_str("mode", "constant");
  if (n.opset < 11) {
    p.pads = n.attr_ints(n.opset < 2 ? "paddings" : "pads");
    p.value = n.attr_float("value", 0.f);
  } else {
    p.pads = pads->to_i64();
    p.value = value ? value->at_f64(0) : 0.0;
  }
  if (p.pads.size() != 2 * rank)
    fail(Status::kShapeError, n.label(), ": pads has ", p.pads.size(),
         " values, expected 2 x rank = ", 2 * rank);
  if (p.mode != "constant" && p.mode != "edge" && p.mode != "reflect")
    fail(Status::kUnsupported, n.label(), ": mode '", p.mode, "' (supported: constant, edge, reflect)");
  return p;
}

std::vector<TensorType> infer_pad(const InferContext& c) {
  c.require_inputs(c.node().opset < 11 ? 1 : 2, c.node().opset < 11 ? 1 : 3);
  if (c.node().opset >= 11 && c.num_inputs() > 3) c.unsupported("the 'axes' input (opset 18)");
  const Shape& in = c.shape(0);
  PadSpec p =
      pad_of(c.node(), in.size(), c.node().opset >= 11 ? &c.require_constant(1, "pads") : nullptr, nullptr);
  Shape out = in;
  for (size_t i = 0; i < in.size(); ++i) {
    out[i] = in[i] + p.pads[i] + p.pads[in.size() + i];
    if (out[i] < 0) c.invalid("pads make dim ", i, " negative");
    if (p.mode == "reflect" && (p.pads[i] >= in[i] || p.pads[in.size() + i] >= in[i]) &&
        (p.pads[i] > 0 || p.pads[in.size() + i] > 0))
      c.invalid("reflect padding ", p.pads[i], "/", p.pads[in.size() + i], " must be smaller than dim ", i,
                " of size ", in[i]);
  }
  return {{c.dtype(0), out}};
}

void run_pad(const KernelContext& c) {
  const Tensor& x = c.in(0);
  Tensor& y = c.out(0);
  const size_t r = size_t(x.rank());
  PadSpec p = pad_of(c.node(), r, c.has(1) ? &c.in(1) : nullptr, c.has(2) ? &c.in(2) : nullptr);
  auto st = row_strides(x.shape());
  std::vector<DimMap> maps;
  for (size_t d = 0; d < r; ++d) {
    DimMap m{st[d], {}};
    const int64_t n = x.dim(int(d));
    for (int64_t o = 0; o < y.dim(int(d)); ++o) {
      int64_t j = o - p.pads[d];
      if (j < 0 || j >= n) {
        if (p.mode == "constant")
          j = -1;
        else if (p.mode == "edge")
          j = std::clamp<int64_t>(j, 0, n - 1);
        else {  // reflect, excluding the edge value
          const int64_t period = 2 * (n - 1);
          j = n == 1 ? 0 : ((j % period) + period) % period;
          if (j >= n) j = period - j;
        }
      }
      m.index.push_back(j);
    }
    maps.push_back(std::move(m));
  }
  Tensor fill(x.dtype(), {});
  store_f64(fill, 0, p.value);
  mapped_copy(x, y, maps, fill.raw());
}

// ---- Cast
std::vector<TensorType> infer_cast(const InferContext& c) {
  c.require_inputs(1, 1);
  const int64_t to = c.node().attr_int("to", 0);
  auto dt = dtype_from_onnx(int32_t(to));
  if (!dt) c.unsupported("cast to ", onnx_dtype_name(int32_t(to)), " (", to, ")");
  return {{*dt, c.shape(0)}};
}

void run_cast(const KernelContext& c) {
  const Tensor& x = c.in(0);
  Tensor& y = c.out(0);
  if (x.dtype() == y.dtype()) return copy_all(c);
  if (x.dtype() == DType::kI64 && y.dtype() == DType::kI32) {
    for (int64_t i = 0; i < x.numel(); ++i)
      y.data<int32_t>()[i] = int32_t(x.data<int64_t>()[i]);  // wraps like C
    return;
  }
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = x.at_f64(i);
    if (!is_float(y.dtype()) && y.dtype() != DType::kBool) v = v < 0 ? std::ceil(v) : std::floor(v);
    store_f64(y, i, v);
  }
}

// ---- Gather
std::vector<TensorType> infer_gather(const InferContext& c) {
  c.require_inputs(2, 2);
  const Shape &d = c.shape(0), &ind = c.shape(1);
  if (c.dtype(1) != DType::kI64 && c.dtype(1) != DType::kI32) c.invalid("indices must be int32 or int64");
  const int64_t axis = normalize_axis(c.node(), c.node().attr_int("axis", 0), int64_t(d.size()));
  Shape out(d.begin(), d.begin() + axis);
  out.insert(out.end(), ind.begin(), ind.end());
  out.insert(out.end(), d.begin() + axis + 1, d.end());
  return {{c.dtype(0), out}};
}

void run_gather(const KernelContext& c) {
  const Tensor &x = c.in(0), &ind = c.in(1);
  const int64_t axis = normalize_axis(c.node(), c.node().attr_int("axis", 0), x.rank());
  const AxisSplit xs = split_at(x.shape(), axis);
  const size_t es = dtype_size(x.dtype());
  const uint8_t* s = static_cast<const uint8_t*>(x.raw());
  uint8_t* d = static_cast<uint8_t*>(c.out(0).raw());
  const int64_t k = ind.numel();
  for (int64_t j = 0; j < k; ++j) {
    int64_t i = ind.at_i64(j);
    if (i < -xs.axis || i >= xs.axis)
      fail(Status::kInvalidArgument, c.node().label(), ": index ", i, " is out of range for axis of size ",
           xs.axis);
    if (i < 0) i += xs.axis;
    for (int64_t o = 0; o < xs.outer; ++o)
      std::memcpy(d + size_t((o * k + j) * xs.inner) * es, s + size_t((o * xs.axis + i) * xs.inner) * es,
                  size_t(xs.inner) * es);
  }
}

// ---- Shape, Constant, ConstantOfShape
std::pair<int64_t, int64_t> shape_range(const Node& n, int64_t r) {
  auto fix = [r](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + r : v, 0, r); };
  int64_t s = fix(n.attr_int("start", 0)), e = fix(n.attr_int("end", r));
  return {s, std::max(s, e)};
}

std::vector<TensorType> infer_shape(const InferContext& c) {
  c.require_inputs(1, 1);
  auto [s, e] = shape_range(c.node(), int64_t(c.shape(0).size()));
  return {{DType::kI64, {e - s}}};
}

void run_shape(const KernelContext& c) {
  auto [s, e] = shape_range(c.node(), c.in(0).rank());
  for (int64_t i = s; i < e; ++i) c.out(0).data<int64_t>()[i - s] = c.in(0).dim(int(i));
}

Tensor constant_value(const Node& n) {
  if (const Tensor* t = n.attr_tensor("value")) return *t;
  if (n.has("value_float")) return Tensor::scalar_f32(n.attr_float("value_float", 0));
  if (n.has("value_floats")) {
    auto v = n.attr_floats("value_floats");
    return Tensor::from_f32({int64_t(v.size())}, v);
  }
  if (n.has("value_int")) return Tensor::from_i64({}, {n.attr_int("value_int", 0)});
  if (n.has("value_ints")) {
    auto v = n.attr_ints("value_ints");
    return Tensor::from_i64({int64_t(v.size())}, v);
  }
  fail(Status::kUnsupported, n.label(),
       ": no supported value attribute (value, value_float(s), value_int(s))");
}

std::vector<TensorType> infer_constant(const InferContext& c) { return {constant_value(c.node()).type()}; }
void run_constant(const KernelContext& c) {
  Tensor v = constant_value(c.node());
  std::memcpy(c.out(0).raw(), v.raw(), v.nbytes());
}

std::vector<TensorType> infer_constant_of_shape(const InferContext& c) {
  c.require_inputs(1, 1);
  auto dims = c.require_constant(0, "shape").to_i64();
  for (int64_t d : dims)
    if (d < 0) c.invalid("negative dimension ", d);
  const Tensor* v = c.node().attr_tensor("value");
  if (v && v->numel() != 1) c.invalid("value must hold exactly one element");
  return {{v ? v->dtype() : DType::kF32, dims}};
}

void run_constant_of_shape(const KernelContext& c) {
  Tensor& y = c.out(0);
  const Tensor* v = c.node().attr_tensor("value");
  if (!v) {
    std::memset(y.raw(), 0, y.nbytes());
    return;
  }
  const size_t es = dtype_size(y.dtype());
  for (int64_t i = 0; i < y.numel(); ++i)
    std::memcpy(static_cast<uint8_t*>(y.raw()) + size_t(i) * es, v->raw(), es);
}

}  // namespace
}  // namespace dlakit::ref

namespace dlakit {
using namespace ref;
extern const OpImpl kImpl_Identity{infer_identity, run_identity};
extern const OpImpl kImpl_Dropout{infer_identity, run_identity};
extern const OpImpl kImpl_Reshape{infer_reshape, copy_all};
extern const OpImpl kImpl_Flatten{infer_flatten, copy_all};
extern const OpImpl kImpl_Squeeze{infer_squeeze, copy_all};
extern const OpImpl kImpl_Unsqueeze{infer_unsqueeze, copy_all};
extern const OpImpl kImpl_Transpose{infer_transpose, run_transpose};
extern const OpImpl kImpl_Concat{infer_concat, run_concat};
extern const OpImpl kImpl_Split{infer_split, run_split};
extern const OpImpl kImpl_Slice{infer_slice, run_slice};
extern const OpImpl kImpl_Pad{infer_pad, run_pad};
extern const OpImpl kImpl_Cast{infer_cast, run_cast};
extern const OpImpl kImpl_Gather{infer_gather, run_gather};
extern const OpImpl kImpl_Shape{infer_shape, run_shape};
extern const OpImpl kImpl_Constant{infer_constant, run_constant};
extern const OpImpl kImpl_ConstantOfShape{infer_constant_of_shape, run_constant_of_shape};
}  // namespace dlakit
