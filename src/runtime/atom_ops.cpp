#include "runtime/atom_ops.h"

#include "kernels/int8_atoms.h"
#include "kernels/ref/conv_geom.h"
#include "numerics/quantize.h"

namespace dlakit::rt {

using prog::Pool;
using prog::Ref;

bool overlap(const prog::Surface& a, const prog::Surface& b) {
  if (a.pool != b.pool) return false;
  if ((a.pool == Pool::kInput || a.pool == Pool::kOutput) && a.io_index != b.io_index) return false;
  return a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
}

namespace {

// The int8 chw32 surface a reference names, with a rank-4 shape; null otherwise.
const prog::Surface* atom_surface(const prog::Program& p, const Ref& r) {
  if (r.kind != Ref::Kind::kSurface) return nullptr;
  const prog::Surface& s = p.surfaces[r.index];
  const bool ok = s.desc.dtype == DType::kI8 && s.desc.format == IoFormat::kChw32 &&
                  s.desc.network_shape.size() == 4 && quant::levels_round_trip(s.desc.scale);
  return ok ? &s : nullptr;
}

// An INT8 step input read from an int8 surface at the scale its rule quantizes to (on the grid already).
bool on_grid(const prog::Program& p, const prog::Step& s, size_t i) {
  const prog::Surface* sf = atom_surface(p, s.inputs[i]);
  return sf && i < s.rules.inputs.size() && s.rules.inputs[i].quantize_scale == sf->desc.scale &&
         !s.rules.inputs[i].round_fp16;
}

// An INT8 step output stored into an int8 surface at the scale its rule quantizes to.
const prog::Surface* stored_on_grid(const prog::Program& p, const prog::Step& s) {
  if (s.outputs.size() != 1 || s.rules.outputs.size() != 1) return nullptr;
  const prog::Surface* sf = atom_surface(p, s.outputs[0]);
  const numerics::OutputRule& r = s.rules.outputs[0];
  return sf && r.store == numerics::Store::kInt8 && r.scale == sf->desc.scale ? sf : nullptr;
}

bool plain_int8(const prog::Step& s, const Node& n) {
  return s.rules.precision == numerics::Precision::kInt8 && !s.rules.compute_fp16 &&
         s.rules.rounding == quant::Rounding::kHalfAwayFromZero && !n.has("dlakit_activation");
}

// Add(a, b) [-> Relu] with a, b and the result in int8 surfaces of one shape, the sum kept in fp32 between.
std::optional<AtomOp> plan_add(const prog::Program& p, const prog::Op& op,
                               const std::vector<const Node*>& nodes) {
  if (op.steps.empty() || op.steps.size() > 2) return std::nullopt;
  const prog::Step& add = op.steps[0];
  if (add.op != OpKind::Add || !plain_int8(add, *nodes[0]) || add.inputs.size() != 2 || !on_grid(p, add, 0) ||
      !on_grid(p, add, 1))
    return std::nullopt;
  const prog::Step& last = op.steps.back();
  const bool relu = op.steps.size() == 2;
  if (relu) {
    const prog::Step& r = op.steps[1];
    const bool fused_between = add.outputs.size() == 1 && add.outputs[0].kind == Ref::Kind::kTemp &&
                               add.rules.outputs.size() == 1 &&
                               add.rules.outputs[0].store == numerics::Store::kFused;
    if (r.op != OpKind::Relu || !plain_int8(r, *nodes[1]) || !fused_between || r.inputs.size() != 1 ||
        r.inputs[0].kind != Ref::Kind::kTemp || r.inputs[0].index != add.outputs[0].index ||
        r.rules.inputs.empty() || r.rules.inputs[0].quantize_scale != 0 || r.rules.inputs[0].round_fp16)
      return std::nullopt;
  }
  const prog::Surface* y = stored_on_grid(p, last);
  if (!y) return std::nullopt;
  const prog::Surface &a = p.surfaces[add.inputs[0].index], &b = p.surfaces[add.inputs[1].index];
  const Shape& shape = y->desc.network_shape;
  if (a.desc.network_shape != shape || b.desc.network_shape != shape || overlap(*y, a) || overlap(*y, b))
    return std::nullopt;
  AtomOp o;
  o.kind = AtomOp::Kind::kAdd, o.x = &a, o.b = &b, o.y = y, o.relu = relu;
  return o;
}

// MaxPool 2-D (no dilation, floor rounding, every window holding an input position) between int8 surfaces.
std::optional<AtomOp> plan_max_pool(const prog::Program& p, const prog::Op& op,
                                    const std::vector<const Node*>& nodes) {
  if (op.steps.size() != 1) return std::nullopt;
  const prog::Step& s = op.steps[0];
  const Node& n = *nodes[0];
  if (s.op != OpKind::MaxPool || !plain_int8(s, n) || s.inputs.size() != 1 || !on_grid(p, s, 0))
    return std::nullopt;
  const prog::Surface* y = stored_on_grid(p, s);
  if (!y) return std::nullopt;
  const prog::Surface& x = p.surfaces[s.inputs[0].index];
  const Shape& xs = x.desc.network_shape;
  const std::vector<int64_t> kernel = n.attr_ints("kernel_shape");
  if (kernel.size() != 2 || n.attr_int("ceil_mode", 0) != 0 || n.attr_int("storage_order", 0) != 0 ||
      n.attr_ints("dilations", {1, 1}) != std::vector<int64_t>{1, 1} || overlap(*y, x))
    return std::nullopt;
  const ref::WindowGeom g = ref::window_geom(n, xs, kernel, false);
  if (y->desc.network_shape != g.out_shape(xs[1])) return std::nullopt;
  for (size_t d = 1; d < 3; ++d)
    if (g.pb[d] >= g.k[d] || g.pe[d] >= g.k[d]) return std::nullopt;  // a window entirely in the padding
  AtomOp o;
  o.kind = AtomOp::Kind::kMaxPool, o.x = &x, o.y = y;
  o.window = {g.k[1], g.k[2], g.s[1], g.s[2], g.pb[1], g.pb[2], g.out[1], g.out[2]};
  o.keep_levels = quant::same_levels(x.desc.scale, y->desc.scale);
  return o;
}

}  // namespace

std::optional<AtomOp> plan_int8_atoms(const prog::Program& p, size_t oi,
                                      const std::vector<const Node*>& nodes) {
  const prog::Op& op = p.ops[oi];
  if (nodes.size() != op.steps.size()) return std::nullopt;
  if (auto a = plan_add(p, op, nodes)) return a;
  return plan_max_pool(p, op, nodes);
}

Int8Atoms atoms_of(const prog::Surface& s, uint8_t* data) {
  return {reinterpret_cast<int8_t*>(data), int64_t(s.desc.stride[3]), int64_t(s.desc.stride[2]),
          int64_t(s.desc.stride[1]), s.desc.scale};
}

void run_int8_atoms(const AtomOp& a, const std::function<uint8_t*(const prog::Surface&)>& base) {
  const Shape& xs = a.x->desc.network_shape;
  if (a.kind == AtomOp::Kind::kAdd) {
    add_int8_atoms(xs[0], xs[1], xs[2], xs[3], atoms_of(*a.x, base(*a.x)), atoms_of(*a.b, base(*a.b)), a.relu,
                   atoms_of(*a.y, base(*a.y)));
  } else {
    max_pool_int8_atoms(xs[0], xs[1], xs[2], xs[3], a.window, atoms_of(*a.x, base(*a.x)), a.keep_levels,
                        atoms_of(*a.y, base(*a.y)));
  }
}

}  // namespace dlakit::rt
