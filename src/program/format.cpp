#include "program/format.h"

#include <cctype>
#include <cmath>
#include <cstring>
#include <set>

#include "base/checked.h"
#include "program_generated.h"
#include "targets/dla/limits.h"

namespace dlakit::prog {
namespace {

namespace fb = dlakit::fb2;
using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

template <typename... A>
[[noreturn]] void bad(const std::string& origin, A&&... a) {
  fail(Status::kParseError, origin, ": ", std::forward<A>(a)...);
}

std::vector<int64_t> dims_of(const Shape& s) { return std::vector<int64_t>(s.begin(), s.end()); }

Offset<fb::TensorDesc> write_desc(FlatBufferBuilder& b, const rt::TensorDesc& d) {
  std::vector<uint32_t> stride(d.stride.begin(), d.stride.end());
  const std::vector<int64_t> shape = dims_of(d.network_shape);
  return fb::CreateTensorDescDirect(b, d.name.c_str(), d.size, d.n, d.c, d.h, d.w, d.data_format, d.data_type,
                                    d.data_category, d.pixel_format, d.pixel_mapping, &stride,
                                    uint8_t(d.format), &shape, d.scale);
}

Offset<fb::Attr> write_attr(FlatBufferBuilder& b, const std::string& name, const Attribute& a) {
  const auto n = b.CreateString(name);
  if (auto* i = std::get_if<int64_t>(&a)) return fb::CreateAttr(b, n, 0, *i);
  if (auto* f = std::get_if<float>(&a)) return fb::CreateAttr(b, n, 1, 0, *f);
  if (auto* s = std::get_if<std::string>(&a)) return fb::CreateAttr(b, n, 2, 0, 0, b.CreateString(*s));
  if (auto* v = std::get_if<std::vector<int64_t>>(&a))
    return fb::CreateAttr(b, n, 3, 0, 0, 0, b.CreateVector(*v));
  if (auto* v = std::get_if<std::vector<float>>(&a))
    return fb::CreateAttr(b, n, 4, 0, 0, 0, 0, b.CreateVector(*v));
  if (auto* v = std::get_if<std::vector<std::string>>(&a))
    return fb::CreateAttr(b, n, 5, 0, 0, 0, 0, 0, b.CreateVectorOfStrings(*v));
  fail(Status::kUnsupported, "attribute '", name, "': tensor attributes cannot go into a DLA program");
}

Offset<fb::Step> write_step(FlatBufferBuilder& b, const Step& s) {
  std::vector<Offset<fb::Attr>> attrs;
  for (const auto& [name, a] : s.attrs) attrs.push_back(write_attr(b, name, a));
  std::vector<fb::Ref> ins, outs;
  for (const Ref& r : s.inputs) ins.emplace_back(uint8_t(r.kind), r.index);
  for (const Ref& r : s.outputs) outs.emplace_back(uint8_t(r.kind), r.index);
  std::vector<Offset<fb::Type>> types;
  for (const TensorType& t : s.out_types) {
    const std::vector<int64_t> shape = dims_of(t.shape);
    types.push_back(fb::CreateTypeDirect(b, uint8_t(t.dtype), &shape));
  }
  std::vector<Offset<fb::InputRule>> in_rules;
  for (const numerics::InputRule& r : s.rules.inputs)
    in_rules.push_back(fb::CreateInputRule(b, r.quantize_scale, r.round_fp16));
  std::vector<Offset<fb::OutputRule>> out_rules;
  for (const numerics::OutputRule& r : s.rules.outputs)
    out_rules.push_back(fb::CreateOutputRule(b, uint8_t(r.store), r.scale));
  return fb::CreateStepDirect(b, s.layer.c_str(), uint16_t(s.op), op_name(s.op), s.opset, &attrs, &ins, &outs,
                              &types, uint8_t(s.rules.precision), uint8_t(s.rules.rounding),
                              s.rules.compute_fp16, s.rules.exact_int8_conv, &in_rules, &out_rules);
}

// ---- reading

std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

// The verifier checks a vector's length field, not its elements' alignment (a vector of int64 may sit at
// 4 bytes past an 8-byte boundary): int64 elements are read bytewise.
std::vector<int64_t> read_i64s(const flatbuffers::Vector<int64_t>* v) {
  std::vector<int64_t> out(v->size());
  if (!out.empty()) std::memcpy(out.data(), v->Data(), out.size() * sizeof(int64_t));
  return out;
}

// Element count of a shape read from a file: every dim in [0, 2^31], the product at most 2^36 (checked
// before each multiplication), so nothing downstream overflows.
int64_t checked_count(const std::string& origin, const std::string& what, const Shape& s) {
  for (int64_t d : s)
    if (d < 0 || d > (int64_t(1) << 31)) bad(origin, what, " has dimension ", d);
  return checked_numel(s, int64_t(1) << 36, origin + ": " + what, Status::kParseError);
}

Shape read_shape(const std::string& origin, const std::string& what, const flatbuffers::Vector<int64_t>* v) {
  if (!v) bad(origin, what, " has no shape");
  if (v->size() > 8) bad(origin, what, " has rank ", v->size());
  Shape s = read_i64s(v);
  checked_count(origin, what, s);
  return s;
}

rt::TensorDesc read_desc(const std::string& origin, const std::string& what, const fb::TensorDesc* d) {
  if (!d || !d->name() || !d->stride() || d->stride()->size() != 8 || !d->shape())
    bad(origin, what, " has an incomplete tensor descriptor");
  if (d->io_format() > uint8_t(rt::IoFormat::kDlaHwc4))
    bad(origin, what, " has layout code ", int(d->io_format()));
  if (d->data_type() != 2 && d->data_type() != 4)
    bad(origin, what, " has data type code ", int(d->data_type()));
  rt::TensorDesc out;
  out.name = d->name()->str();
  out.size = d->size();
  out.n = d->n(), out.c = d->c(), out.h = d->h(), out.w = d->w();
  out.data_format = d->data_format(), out.data_type = d->data_type(), out.data_category = d->data_category();
  out.pixel_format = d->pixel_format(), out.pixel_mapping = d->pixel_mapping();
  for (size_t k = 0; k < 8; ++k) out.stride[k] = d->stride()->Get(flatbuffers::uoffset_t(k));
  out.format = rt::IoFormat(d->io_format());
  out.dtype = d->data_type() == 4 ? DType::kI8 : DType::kF16;
  out.network_shape = read_shape(origin, what, d->shape());
  if (out.network_shape.empty() || out.network_shape.size() > 4)
    bad(origin, what, " has rank ", out.network_shape.size());
  out.scale = d->scale();
  return out;
}

Attribute read_attr(const std::string& origin, const std::string& what, const fb::Attr* a) {
  switch (a->kind()) {
    case 0:
      return a->i();
    case 1:
      return a->f();
    case 2:
      if (a->s()) return a->s()->str();
      break;
    case 3:
      if (a->ints()) return read_i64s(a->ints());
      break;
    case 4:
      if (a->floats()) return std::vector<float>(a->floats()->begin(), a->floats()->end());
      break;
    case 5:
      if (a->strings()) {
        std::vector<std::string> v;
        for (const flatbuffers::String* s : *a->strings()) v.push_back(str(s));
        return v;
      }
      break;
    default:
      break;
  }
  bad(origin, what, " attribute '", str(a->name()), "' has kind ", int(a->kind()), " without its value");
}

std::optional<OpKind> read_op(uint16_t id, const std::string& name) {
  if (id >= kNumOps || name != op_name(OpKind(id))) return std::nullopt;
  return OpKind(id);
}

bool finite_nonneg(float x) { return std::isfinite(x) && x >= 0; }

uint64_t atom_of(const rt::TensorDesc& d) {
  return d.format == rt::IoFormat::kChw16 ? 16 : d.format == rt::IoFormat::kChw32 ? 32 : 0;
}

}  // namespace

std::string serialize(const Program& p) {
  FlatBufferBuilder b(size_t(1) << 20);
  std::vector<Offset<fb::Surface>> surfaces;
  for (const Surface& s : p.surfaces)
    surfaces.push_back(fb::CreateSurface(b, write_desc(b, s.desc), uint8_t(s.pool), s.io_index, s.offset,
                                         s.bytes, s.parent));
  std::vector<Offset<fb::Constant>> constants;
  for (const Constant& c : p.constants) {
    const std::vector<int64_t> shape = dims_of(c.shape);
    constants.push_back(fb::CreateConstantDirect(b, c.name.c_str(), uint8_t(c.type), &shape, c.offset,
                                                 c.bytes, c.scales.empty() ? nullptr : &c.scales, c.axis));
  }
  std::vector<Offset<fb::Op>> ops;
  for (const Op& o : p.ops) {
    std::vector<Offset<fb::Step>> steps;
    for (const Step& s : o.steps) steps.push_back(write_step(b, s));
    ops.push_back(fb::CreateOpDirect(b, uint8_t(o.engine), &steps, &o.reads, &o.writes, o.macs,
                                     o.weight_bytes, o.read_bytes, o.write_bytes));
  }
  std::vector<Offset<fb::Alias>> aliases;
  for (const Alias& a : p.aliases)
    aliases.push_back(fb::CreateAliasDirect(b, a.layer.c_str(), uint16_t(a.op), a.surface));
  b.ForceVectorAlignment(p.blob.size(), 1, 64);
  const auto blob = b.CreateVector(p.blob);
  const auto producer = b.CreateString(p.producer), target = b.CreateString(p.target),
             dla_version = b.CreateString(p.dla_version);
  const auto inputs = b.CreateVector(p.inputs), outputs = b.CreateVector(p.outputs);
  const auto surf = b.CreateVector(surfaces);
  const auto cons = b.CreateVector(constants);
  const auto op_vec = b.CreateVector(ops);
  const auto alias_vec = b.CreateVector(aliases);
  const auto sram = fb::CreatePoolUse(b, p.sram.budget, p.sram.used),
             local = fb::CreatePoolUse(b, p.local_dram.budget, p.local_dram.used),
             global = fb::CreatePoolUse(b, p.global_dram.budget, p.global_dram.used);
  const auto root =
      fb::CreateProgram(b, kFormatVersion, producer, target, dla_version, p.int8, p.dla_core, inputs, outputs,
                        surf, cons, blob, op_vec, alias_vec, sram, local, global, p.layers, p.macs);
  fb::FinishProgramBuffer(b, root);
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

Program deserialize(const uint8_t* data, size_t size, const std::string& origin) {
  if (!data || size < 8) bad(origin, size, " bytes is too short to be a DLA loadable");
  // FlatBuffers reads 8-byte fields in place, so a loadable at an address that is not 8-byte aligned (a
  // plan's payload, a caller's buffer) is read from an aligned copy (misaligned loads found by fuzz_module).
  if (reinterpret_cast<uintptr_t>(data) % 8) {
    std::vector<uint64_t> aligned((size + 7) / 8);
    std::memcpy(aligned.data(), data, size);
    return deserialize(reinterpret_cast<const uint8_t*>(aligned.data()), size, origin);
  }
  if (!fb::ProgramBufferHasIdentifier(data)) {
    std::string id(reinterpret_cast<const char*>(data) + 4, 4);
    for (char& c : id)
      if (!std::isprint(static_cast<unsigned char>(c))) c = '.';
    bad(origin, "not a dlakit DLA loadable (file identifier '", id,
        "', expected 'DLAK'); TensorRT engines and NVIDIA loadables are not accepted");
  }
  {
    flatbuffers::Verifier header(data, size);
    if (!header.VerifyBuffer<fb::Header>("DLAK"))
      bad(origin, "the loadable is corrupt or truncated (", size, " bytes; its header failed verification)");
    const uint32_t version = flatbuffers::GetRoot<fb::Header>(data)->format_version();
    if (version != kFormatVersion)
      fail(Status::kUnsupported, origin, ": loadable format version ", version,
           "; this dlakit reads version ", kFormatVersion,
           version < kFormatVersion ? " (rebuild it with `dlakit build`)" : "");
  }
  flatbuffers::Verifier v(data, size);
  if (!fb::VerifyProgramBuffer(v))
    bad(origin, "the loadable is corrupt or truncated (", size, " bytes failed verification)");
  const fb::Program* f = fb::GetProgram(data);
  if (!f->surfaces() || !f->inputs() || !f->outputs() || !f->ops() || !f->constants() || !f->blob() ||
      !f->sram() || !f->local_dram() || !f->global_dram())
    bad(origin, "the program lacks its surfaces, I/O, operations, constants or pools");
  Program p;
  p.producer = str(f->producer());
  p.target = str(f->target());
  p.dla_version = str(f->dla_version());
  p.int8 = f->int8();
  p.dla_core = f->dla_core();
  p.inputs.assign(f->inputs()->begin(), f->inputs()->end());
  p.outputs.assign(f->outputs()->begin(), f->outputs()->end());
  for (flatbuffers::uoffset_t i = 0; i < f->surfaces()->size(); ++i) {
    const fb::Surface* s = f->surfaces()->Get(i);
    const std::string what = "surface " + std::to_string(i);
    Surface out;
    out.desc = read_desc(origin, what, s->desc());
    out.pool = Pool(s->pool());
    out.io_index = s->io_index();
    out.offset = s->offset();
    out.bytes = s->bytes();
    out.parent = s->parent();
    p.surfaces.push_back(std::move(out));
  }
  for (flatbuffers::uoffset_t i = 0; i < f->constants()->size(); ++i) {
    const fb::Constant* c = f->constants()->Get(i);
    Constant out;
    out.name = str(c->name());
    out.type = ConstType(c->type());
    out.shape = read_shape(origin, "constant '" + out.name + "'", c->shape());
    out.offset = c->offset();
    out.bytes = c->bytes();
    if (c->scales()) out.scales.assign(c->scales()->begin(), c->scales()->end());
    out.axis = c->axis();
    p.constants.push_back(std::move(out));
  }
  p.blob.assign(f->blob()->begin(), f->blob()->end());
  for (flatbuffers::uoffset_t i = 0; i < f->ops()->size(); ++i) {
    const fb::Op* o = f->ops()->Get(i);
    const std::string what = "operation " + std::to_string(i);
    if (!o->steps() || !o->reads() || !o->writes()) bad(origin, what, " is incomplete");
    Op out;
    out.engine = Engine(o->engine());
    out.reads.assign(o->reads()->begin(), o->reads()->end());
    out.writes.assign(o->writes()->begin(), o->writes()->end());
    out.macs = o->macs(), out.weight_bytes = o->weight_bytes();
    out.read_bytes = o->read_bytes(), out.write_bytes = o->write_bytes();
    for (const fb::Step* s : *o->steps()) {
      if (!s->inputs() || !s->outputs() || !s->out_types() || !s->input_rules() || !s->output_rules())
        bad(origin, what, " has an incomplete step");
      Step st;
      st.layer = str(s->layer());
      const std::string sw = what + " step '" + st.layer + "'";
      const auto op = read_op(s->op(), str(s->op_name()));
      if (!op)
        bad(origin, sw, " has op ", s->op(), " '", str(s->op_name()), "', which this dlakit does not know");
      st.op = *op;
      st.opset = s->opset();
      if (s->attrs())
        for (const fb::Attr* a : *s->attrs()) {
          if (!a->name()) bad(origin, sw, " has an unnamed attribute");
          st.attrs[a->name()->str()] = read_attr(origin, sw, a);
        }
      for (const fb::Ref* r : *s->inputs()) st.inputs.push_back({Ref::Kind(r->kind()), r->index()});
      for (const fb::Ref* r : *s->outputs()) st.outputs.push_back({Ref::Kind(r->kind()), r->index()});
      for (const fb::Type* t : *s->out_types()) {
        if (t->dtype() > uint8_t(DType::kBool))
          bad(origin, sw, " has an output of dtype code ", int(t->dtype()));
        st.out_types.push_back({DType(t->dtype()), read_shape(origin, sw, t->shape())});
      }
      st.rules.precision = numerics::Precision(s->precision());
      st.rules.rounding = quant::Rounding(s->rounding());
      st.rules.compute_fp16 = s->compute_fp16();
      st.rules.exact_int8_conv = s->exact_int8_conv();
      for (const fb::InputRule* r : *s->input_rules())
        st.rules.inputs.push_back({r->quantize_scale(), r->round_fp16()});
      for (const fb::OutputRule* r : *s->output_rules())
        st.rules.outputs.push_back({numerics::Store(r->store()), r->scale()});
      out.steps.push_back(std::move(st));
    }
    p.ops.push_back(std::move(out));
  }
  if (f->aliases())
    for (const fb::Alias* a : *f->aliases()) {
      const auto op = a->op() < kNumOps ? std::optional<OpKind>(OpKind(a->op())) : std::nullopt;
      if (!op) bad(origin, "alias '", str(a->layer()), "' has op ", a->op());
      p.aliases.push_back({str(a->layer()), *op, a->surface()});
    }
  p.sram = {f->sram()->budget(), f->sram()->used()};
  p.local_dram = {f->local_dram()->budget(), f->local_dram()->used()};
  p.global_dram = {f->global_dram()->budget(), f->global_dram()->used()};
  p.layers = f->layers();
  p.macs = f->macs();
  verify(p, origin);
  return p;
}

void verify(const Program& p, const std::string& origin) {
  const dla::DlaLimits* lim = nullptr;
  for (const dla::DlaLimits* l : {&dla::orin_limits(), &dla::xavier_limits()})
    if (l->chip == p.target) lim = l;
  if (!lim) bad(origin, "target '", p.target, "' is not a DLA this dlakit knows (orin, xavier)");
  const size_t ns = p.surfaces.size();
  // Pools and their budgets.
  for (const PoolUse* u : {&p.sram, &p.local_dram, &p.global_dram})
    if (u->used > u->budget) bad(origin, "a memory pool uses ", u->used, " bytes of its ", u->budget);
  if (p.blob.size() != p.global_dram.used)
    bad(origin, "the constants blob holds ", p.blob.size(), " bytes, the global DRAM pool ",
        p.global_dram.used);
  // Surfaces: layouts recomputed from shape and format, views inside their parents, pools inside budgets.
  for (size_t i = 0; i < ns; ++i) {
    const Surface& s = p.surfaces[i];
    const std::string what = "surface " + std::to_string(i) + " ('" + s.desc.name + "')";
    if (s.pool > Pool::kOutput) bad(origin, what, " is in pool code ", int(s.pool));
    const rt::IoSpec spec{s.desc.dtype, s.desc.format};
    if ((spec.format == rt::IoFormat::kChw16 && spec.dtype != DType::kF16) ||
        (spec.format == rt::IoFormat::kChw32 && spec.dtype != DType::kI8))
      bad(origin, what, " pairs ", rt::io_format_name(spec.format), " with the wrong element type");
    rt::TensorDesc want;
    try {
      want = rt::make_desc("t", s.desc.network_shape, spec, lim->line_stride_align_bytes);
    } catch (const Error& e) {
      bad(origin, what, ": ", e.what());
    }
    bool same = want.n == s.desc.n && want.c == s.desc.c && want.h == s.desc.h && want.w == s.desc.w &&
                want.data_format == s.desc.data_format && want.data_type == s.desc.data_type &&
                want.data_category == s.desc.data_category && want.pixel_format == s.desc.pixel_format &&
                want.pixel_mapping == s.desc.pixel_mapping && want.stride[0] == s.desc.stride[0] &&
                want.stride[1] == s.desc.stride[1] && want.stride[2] == s.desc.stride[2];
    for (size_t k = 4; k < 8; ++k) same = same && s.desc.stride[k] == 0;
    if (s.parent < 0)
      same = same && want.stride[3] == s.desc.stride[3] && want.size == s.desc.size && s.bytes == s.desc.size;
    if (!same) bad(origin, what, "'s layout disagrees with its shape and format");
    if (s.desc.dtype == DType::kI8 && !(std::isfinite(s.desc.scale) && s.desc.scale > 0))
      bad(origin, what, " is int8 with scale ", s.desc.scale);
    if (s.parent >= 0) {
      // A view: inside its parent's memory, stored the same way, and no cycle (parents come first or
      // form a chain that ends).
      std::set<size_t> seen{i};
      size_t at = i;
      while (p.surfaces[at].parent >= 0) {
        const size_t up = size_t(p.surfaces[at].parent);
        if (up >= ns || !seen.insert(up).second)
          bad(origin, what, " is a view in a cycle or of a missing surface");
        at = up;
      }
      const Surface& par = p.surfaces[size_t(s.parent)];
      if (par.desc.dtype != s.desc.dtype || par.desc.format != s.desc.format ||
          par.desc.scale != s.desc.scale || par.pool != s.pool || par.io_index != s.io_index ||
          s.desc.n != par.desc.n || s.desc.stride[3] != par.desc.stride[3])
        bad(origin, what, " is a view stored unlike its parent");
      if (s.offset < par.offset || s.bytes > par.bytes || s.offset - par.offset > par.bytes - s.bytes)
        bad(origin, what, " lies outside its parent's memory");
      const uint64_t atom = atom_of(s.desc);
      const uint64_t planes = atom ? (s.desc.c + atom - 1) / atom : s.desc.c;
      if (s.bytes != (s.desc.n - 1) * s.desc.stride[3] + planes * s.desc.stride[2])
        bad(origin, what, " spans ", s.bytes, " bytes, its layout ",
            (s.desc.n - 1) * s.desc.stride[3] + planes * s.desc.stride[2]);
    } else if (s.pool == Pool::kSram || s.pool == Pool::kLocalDram) {
      const PoolUse& u = s.pool == Pool::kSram ? p.sram : p.local_dram;
      if (s.offset > u.used || s.bytes > u.used - s.offset)
        bad(origin, what, " lies outside its pool (", s.offset, " + ", s.bytes, " > ", u.used, ")");
    } else if (s.pool == Pool::kGlobalDram) {
      bad(origin, what, " is in the global DRAM pool, which holds constants only");
    }
  }
  // The task's buffers: one surface per descriptor, exactly the descriptor its shape and format give.
  for (int pass = 0; pass < 2; ++pass) {
    const std::vector<uint32_t>& list = pass ? p.outputs : p.inputs;
    const Pool pool = pass ? Pool::kOutput : Pool::kInput;
    if (list.empty()) bad(origin, "the program has no ", pass ? "outputs" : "inputs");
    for (size_t i = 0; i < list.size(); ++i) {
      if (list[i] >= ns) bad(origin, pass ? "output " : "input ", i, " names surface ", list[i]);
      const Surface& s = p.surfaces[list[i]];
      if (s.pool != pool || s.io_index != i || s.parent >= 0 || s.offset != 0)
        bad(origin, pass ? "output " : "input ", i, " ('", s.desc.name, "') is not bound to task buffer ", i);
      if (s.desc.name.size() > 80 || s.desc.name.empty())
        bad(origin, "I/O tensor name '", s.desc.name.substr(0, 40), "' must be 1..80 characters (cuDLA)");
    }
  }
  for (size_t i = 0; i < ns; ++i) {
    const Surface& s = p.surfaces[i];
    if (s.parent >= 0 || (s.pool != Pool::kInput && s.pool != Pool::kOutput)) continue;
    const std::vector<uint32_t>& list = s.pool == Pool::kInput ? p.inputs : p.outputs;
    if (s.io_index >= list.size() || list[s.io_index] != i)
      bad(origin, "surface ", i, " claims task buffer ", s.io_index, " without being its descriptor");
  }
  // Constants: sizes agree with shapes and types, inside the blob.
  for (const Constant& c : p.constants) {
    const std::string what = "constant '" + c.name + "'";
    static const int kBytes[] = {2, 4, 1, 4, 8};
    if (c.type > ConstType::kI64) bad(origin, what, " has type code ", int(c.type));
    const int64_t count = checked_count(origin, what, c.shape);
    if (c.bytes != uint64_t(count) * uint64_t(kBytes[int(c.type)]))
      bad(origin, what, " holds ", c.bytes, " bytes, its shape needs ", count * kBytes[int(c.type)]);
    if (c.offset > p.blob.size() || c.bytes > p.blob.size() - c.offset)
      bad(origin, what, " lies outside the blob");
    if (c.type == ConstType::kI8) {
      if (c.axis < 0 || c.axis >= int(c.shape.size()) || int64_t(c.scales.size()) != c.shape[size_t(c.axis)])
        bad(origin, "int8 ", what, " needs one scale per channel along axis ", c.axis, ", has ",
            c.scales.size());
      for (float x : c.scales)
        if (!finite_nonneg(x)) bad(origin, "int8 ", what, " has scale ", x);
    }
  }
  // Operations: references in range, temps defined before use, rules of the right size, and data flow:
  // every surface read was written before or is (a view of) an input.
  std::vector<char> written(ns, 0);
  for (size_t i = 0; i < ns; ++i) {
    size_t at = i;
    while (p.surfaces[at].parent >= 0) at = size_t(p.surfaces[at].parent);
    if (p.surfaces[at].pool == Pool::kInput) written[i] = 1;
  }
  auto mark_written = [&](uint32_t s) {
    // the surface, what it lies inside (a Concat output written in parts), and its views (Slices of it)
    for (size_t at = s;; at = size_t(p.surfaces[at].parent)) {
      written[at] = 1;
      if (p.surfaces[at].parent < 0) break;
    }
    for (size_t i = 0; i < ns; ++i)
      for (size_t at = i; p.surfaces[at].parent >= 0; at = size_t(p.surfaces[at].parent))
        if (size_t(p.surfaces[at].parent) == s) written[i] = 1;
  };
  uint64_t macs = 0;
  size_t steps = 0;
  for (size_t oi = 0; oi < p.ops.size(); ++oi) {
    const Op& o = p.ops[oi];
    const std::string what = "operation " + std::to_string(oi);
    if (o.engine > Engine::kRubik) bad(origin, what, " runs on engine code ", int(o.engine));
    if (o.steps.empty()) bad(origin, what, " has no steps");
    uint32_t temps = 0;
    std::vector<uint32_t> reads, writes;
    std::vector<TensorType> temp_types;
    for (const Step& s : o.steps) {
      const std::string sw = what + " step '" + s.layer + "'";
      if (s.outputs.size() != s.out_types.size() || s.rules.inputs.size() != s.inputs.size() ||
          s.rules.outputs.size() != s.outputs.size())
        bad(origin, sw, " has ", s.inputs.size(), "/", s.outputs.size(), " operands but ",
            s.rules.inputs.size(), "/", s.rules.outputs.size(), " rules and ", s.out_types.size(),
            " result types");
      if (s.rules.rounding > quant::Rounding::kHalfToEven)
        bad(origin, sw, " has rounding code ", int(s.rules.rounding));
      if (s.rules.precision > numerics::Precision::kInt8 || s.rules.precision == numerics::Precision::kFp32)
        bad(origin, sw, " has precision code ", int(s.rules.precision), " (a DLA layer is fp16 or int8)");
      for (const numerics::InputRule& r : s.rules.inputs)
        if (!finite_nonneg(r.quantize_scale))
          bad(origin, sw, " quantizes an input with scale ", r.quantize_scale);
      for (size_t k = 0; k < s.inputs.size(); ++k) {
        const Ref& r = s.inputs[k];
        switch (r.kind) {
          case Ref::Kind::kNone:
            break;
          case Ref::Kind::kSurface:
            if (r.index >= ns) bad(origin, sw, " reads surface ", r.index, " of ", ns);
            if (!written[r.index])
              bad(origin, sw, " reads surface ", r.index, " ('", p.surfaces[r.index].desc.name,
                  "') before anything wrote it");
            if (std::find(reads.begin(), reads.end(), r.index) == reads.end()) reads.push_back(r.index);
            break;
          case Ref::Kind::kConstant:
            if (r.index >= p.constants.size())
              bad(origin, sw, " reads constant ", r.index, " of ", p.constants.size());
            break;
          case Ref::Kind::kTemp:
            if (r.index >= temps) bad(origin, sw, " reads a fused value before it is computed");
            break;
          default:
            bad(origin, sw, " has an operand of kind ", int(r.kind));
        }
      }
      for (size_t k = 0; k < s.outputs.size(); ++k) {
        const Ref& r = s.outputs[k];
        const numerics::OutputRule& rule = s.rules.outputs[k];
        const TensorType& t = s.out_types[k];
        if (rule.store > numerics::Store::kInt8 || !finite_nonneg(rule.scale) ||
            (rule.store == numerics::Store::kInt8 && !(rule.scale > 0)))
          bad(origin, sw, " stores output ", k, " with store code ", int(rule.store), " and scale ",
              rule.scale);
        if (r.kind == Ref::Kind::kTemp) {
          if (r.index != temps || rule.store != numerics::Store::kFused || t.dtype != DType::kF32)
            bad(origin, sw, " defines fused value ", r.index, " out of order or with a stored form");
          ++temps;
        } else if (r.kind == Ref::Kind::kSurface) {
          if (r.index >= ns) bad(origin, sw, " writes surface ", r.index, " of ", ns);
          const Surface& out = p.surfaces[r.index];
          if (out.pool == Pool::kInput) bad(origin, sw, " writes into an input buffer");
          const bool int8 = rule.store == numerics::Store::kInt8;
          if (t.dtype != DType::kF32 || t.shape != out.desc.network_shape ||
              rule.store == numerics::Store::kFused || int8 != (out.desc.dtype == DType::kI8) ||
              (int8 && rule.scale != out.desc.scale))
            bad(origin, sw, " writes ", type_str(t), " as ", int8 ? "int8" : "fp16", " into surface ",
                r.index, " ('", out.desc.name, "', ", shape_str(out.desc.network_shape), ")");
          mark_written(r.index);
          writes.push_back(r.index);
        } else if (r.kind != Ref::Kind::kNone) {
          bad(origin, sw, " has a result of kind ", int(r.kind));
        }
      }
      if (s.rules.exact_int8_conv) {
        const bool has_bias = s.inputs.size() > 2 && s.inputs[2].kind != Ref::Kind::kNone;
        bool ok = s.inputs.size() >= 2 && s.inputs[0].kind == Ref::Kind::kSurface &&
                  s.inputs[1].kind == Ref::Kind::kConstant &&
                  p.constants[s.inputs[1].index].type == ConstType::kI8 &&
                  s.rules.inputs[0].quantize_scale > 0 &&
                  (!has_bias || (s.inputs[2].kind == Ref::Kind::kConstant &&
                                 p.constants[s.inputs[2].index].type == ConstType::kF32)) &&
                  s.outputs.size() == 1;
        if (ok) {
          const Constant& w = p.constants[s.inputs[1].index];
          Node layer;
          layer.op = s.op;
          layer.attrs = s.attrs;
          const bool conv = s.op == OpKind::Conv, deconv = s.op == OpKind::ConvTranspose;
          ok = w.axis == (conv     ? 0
                          : deconv ? 1
                                   : numerics::fc_weight_axis(layer)) &&
               (conv || numerics::deconv_as_conv(layer) ||
                numerics::fc_as_conv(layer, p.surfaces[s.inputs[0].index].desc.network_shape, w.shape,
                                     has_bias ? &p.constants[s.inputs[2].index].shape : nullptr));
        }
        if (!ok)
          bad(origin, sw,
              " is an exact INT8 convolution or fully connected layer without int8 weights on their "
              "output-channel axis, an input scale, f32 bias or the shapes of one");
      }
      ++steps;
    }
    if (reads != o.reads || writes != o.writes) bad(origin, what, "'s surface lists disagree with its steps");
    macs += o.macs;
  }
  for (uint32_t s : p.outputs)
    if (!written[s]) bad(origin, "output '", p.surfaces[s].desc.name, "' is never written");
  for (const Alias& a : p.aliases)
    if (a.surface >= ns) bad(origin, "alias '", a.layer, "' names surface ", a.surface);
  if (macs != p.macs || steps + p.aliases.size() != p.layers)
    bad(origin, "the program's totals (", p.layers, " layers, ", p.macs,
        " MACs) disagree with its operations");
}

}  // namespace dlakit::prog
