#include "loadable/loadable.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <map>

#include "base/checked.h"
#include "base/fp16.h"
#include "ir/stats.h"
#include "loadable_generated.h"
#include "onnx/exporter.h"
#include "onnx/importer.h"
#include "targets/dla/limits.h"

namespace dlakit {
namespace {

constexpr uint32_t kFormatVersion = 1;
constexpr uint8_t kWeightF16 = 1, kWeightI8 = 2, kWeightF32 = 3;

flatbuffers::Offset<fb::TensorDesc> write_desc(flatbuffers::FlatBufferBuilder& b, const rt::TensorDesc& d) {
  std::vector<uint32_t> strides(d.stride.begin(), d.stride.end());
  return fb::CreateTensorDescDirect(b, d.name.c_str(), d.size, d.n, d.c, d.h, d.w, d.data_format, d.data_type,
                                    d.data_category, d.pixel_format, d.pixel_mapping, &strides,
                                    rt::io_format_name(d.format));
}

}  // namespace

std::string write_loadable(const Graph& g, const LoadableOptions& opt) {
  const dla::DlaLimits& lim = dla::limits_for(opt.target);
  if (opt.int8 && (!opt.plan || opt.plan->nodes.size() != g.nodes.size()))
    fail(Status::kInvalidArgument,
         "an INT8 loadable needs the numerics plan of its graph (calibration scales)");
  // int8 I/O carries the tensor's quantization scale, so it needs an INT8 build with a range for it.
  for (const auto* list : {&opt.inputs, &opt.outputs})
    for (size_t i = 0; i < list->size(); ++i) {
      if ((*list)[i].dtype != DType::kI8) continue;
      const bool in = list == &opt.inputs;
      const std::vector<int>& ids = in ? g.inputs : g.outputs;
      const std::string name = i < ids.size() ? g.value(ids[i]).name : "?";
      if (!opt.int8)
        fail(Status::kInvalidArgument, "int8 ", in ? "input" : "output", " '", name,
             "' needs an INT8 build (--int8 --calib=CACHE): its scale comes from calibration");
      if (i < ids.size() && !opt.plan->scale.count(ids[i]))
        fail(Status::kInvalidArgument, "int8 ", in ? "input" : "output", " '", name,
             "' has no dynamic range in the calibration cache; use fp16 for it or calibrate it");
    }
  // INT8 layers' weights are stored as int8 with per-output-channel scales, their other constants
  // (bias, scale factors) as f32, so the runtime computes exactly what the emulation computed; FP16
  // layers' constants are fp16.
  std::map<std::string, std::pair<std::vector<float>, int>> int8_weights;
  std::map<std::string, bool> exact;
  if (opt.int8)
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& n = g.nodes[i];
      if (opt.plan->nodes[i].mode != quant::Mode::kINT8) continue;
      for (int v : n.inputs)
        if (v >= 0 && g.value(v).constant) exact[g.value(v).name] = true;
      const int axis = quant::weight_axis(g, n);
      if (axis < 0) continue;
      const Value& w = g.value(n.inputs[1]);
      int8_weights[w.name] = {quant::weight_scales_for(*opt.plan, w, axis), axis};
    }
  if (opt.inputs.size() != g.inputs.size() || opt.outputs.size() != g.outputs.size())
    fail(Status::kInvalidArgument, "I/O formats: ", opt.inputs.size(), "/", opt.outputs.size(), " given for ",
         g.inputs.size(), "/", g.outputs.size(), " inputs/outputs");
  std::vector<int> all(g.nodes.size());
  for (size_t k = 0; k < all.size(); ++k) all[k] = int(k);
  onnx::ModelProto m;
  const std::string onnx_bytes = export_onnx(g, all, g.inputs, g.outputs, "dla_graph");
  m.ParseFromString(onnx_bytes);
  flatbuffers::FlatBufferBuilder b(1 << 20);
  // Float initializers with more than one element are the weights: they move into the loadable as fp16
  // and become graph inputs of the embedded network, bound again at load.
  std::vector<flatbuffers::Offset<fb::Weight>> weights;
  auto* gp = m.mutable_graph();
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  for (const auto& t : gp->initializer()) {
    const std::optional<int> id = g.find_value(t.name());
    const Tensor* c = id && g.value(*id).constant ? &*g.value(*id).constant : nullptr;
    if (!c || c->dtype() != DType::kF32 || c->numel() < 2) {
      *kept.Add() = t;
      continue;
    }
    std::vector<int64_t> dims(c->shape().begin(), c->shape().end());
    auto i8 = int8_weights.find(t.name());
    if (i8 != int8_weights.end()) {
      const auto& [s, axis] = i8->second;
      const Tensor q = quant::quantize_weights(*c, s, axis, quant::Rounding::kHalfAwayFromZero);
      std::vector<uint8_t> bytes(size_t(c->numel()));
      for (int64_t i = 0; i < c->numel(); ++i) bytes[size_t(i)] = uint8_t(int8_t(q.data<float>()[i]));
      weights.push_back(fb::CreateWeightDirect(b, t.name().c_str(), kWeightI8, &dims, &bytes, &s, axis));
    } else if (exact.count(t.name())) {
      std::vector<uint8_t> bytes(c->nbytes());
      std::memcpy(bytes.data(), c->raw(), bytes.size());
      weights.push_back(fb::CreateWeightDirect(b, t.name().c_str(), kWeightF32, &dims, &bytes, nullptr));
    } else {
      std::vector<uint8_t> bits(size_t(c->numel()) * 2);
      for (int64_t i = 0; i < c->numel(); ++i) {
        const uint16_t h = float_to_half(c->data<float>()[i]);
        std::memcpy(&bits[size_t(i) * 2], &h, 2);
      }
      weights.push_back(fb::CreateWeightDirect(b, t.name().c_str(), kWeightF16, &dims, &bits, nullptr));
    }
    auto* in = gp->add_input();
    in->set_name(t.name());
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(1);
    for (int64_t d : c->shape()) tt->mutable_shape()->add_dim()->set_dim_value(d);
  }
  gp->mutable_initializer()->Swap(&kept);
  const std::string network = m.SerializeAsString();
  std::vector<flatbuffers::Offset<fb::TensorDesc>> ins, outs;
  for (size_t i = 0; i < g.inputs.size(); ++i)
    ins.push_back(write_desc(b, rt::make_desc(g.value(g.inputs[i]).name, g.value(g.inputs[i]).type.shape,
                                              opt.inputs[i], lim.line_stride_align_bytes)));
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    if (opt.outputs[i].format == rt::IoFormat::kDlaHwc4)
      fail(Status::kInvalidArgument, "dla_hwc4 is an input-only format");
    outs.push_back(write_desc(b, rt::make_desc(g.value(g.outputs[i]).name, g.value(g.outputs[i]).type.shape,
                                               opt.outputs[i], lim.line_stride_align_bytes)));
  }
  std::vector<uint8_t> net(network.begin(), network.end());
  std::vector<flatbuffers::Offset<fb::ActivationScale>> act_scales;
  std::vector<flatbuffers::Offset<flatbuffers::String>> fp16_layers;
  if (opt.int8) {
    for (auto& [v, s] : opt.plan->scale)
      act_scales.push_back(fb::CreateActivationScaleDirect(b, g.value(v).name.c_str(), s));
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (opt.plan->nodes[i].mode != quant::Mode::kINT8)
        fp16_layers.push_back(b.CreateString(g.nodes[i].name));
  }
  auto root =
      fb::CreateLoadableDirect(b, kFormatVersion, "dlakit 0.1", opt.target.c_str(), lim.dla_version.c_str(),
                               opt.int8 ? fb::Precision_INT8 : fb::Precision_FP16, opt.dla_core, &ins, &outs,
                               &net, &weights, uint32_t(g.nodes.size()), uint64_t(graph_macs(g)),
                               opt.int8 ? &act_scales : nullptr, opt.int8 ? &fp16_layers : nullptr);
  fb::FinishLoadableBuffer(b, root);
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

Loadable read_loadable(const uint8_t* data, size_t size, const std::string& origin) {
  if (!data || size < 8)
    fail(Status::kParseError, origin, ": ", size, " bytes is too short to be a DLA loadable");
  // FlatBuffers reads 8-byte fields in place, so a loadable at an address that is not 8-byte aligned (a
  // plan's payload, a caller's buffer) is read from an aligned copy (misaligned loads found by fuzz_module).
  if (reinterpret_cast<uintptr_t>(data) % 8) {
    std::vector<uint64_t> aligned((size + 7) / 8);
    std::memcpy(aligned.data(), data, size);
    return read_loadable(reinterpret_cast<const uint8_t*>(aligned.data()), size, origin);
  }
  if (!fb::LoadableBufferHasIdentifier(data)) {
    std::string id(reinterpret_cast<const char*>(data) + 4, 4);
    for (char& c : id)
      if (!std::isprint(static_cast<unsigned char>(c))) c = '.';
    fail(Status::kParseError, origin, ": not a dlakit DLA loadable (file identifier '", id,
         "', expected 'DLAK'); TensorRT engines and NVIDIA loadables are not accepted");
  }
  flatbuffers::Verifier v(data, size);
  if (!fb::VerifyLoadableBuffer(v))
    fail(Status::kParseError, origin, ": the loadable is corrupt or truncated (", size,
         " bytes failed verification)");
  const fb::Loadable* l = fb::GetLoadable(data);
  if (l->format_version() != kFormatVersion)
    fail(Status::kParseError, origin, ": loadable format version ", l->format_version(),
         "; this dlakit reads version ", kFormatVersion);
  auto str = [](const flatbuffers::String* s) { return s ? s->str() : std::string(); };
  Loadable out;
  out.target = str(l->target());
  out.dla_version = str(l->dla_version());
  out.producer = str(l->producer());
  out.int8 = l->precision() == fb::Precision_INT8;
  out.dla_core = l->dla_core();
  out.layers = l->layers();
  out.macs = l->macs();
  const dla::DlaLimits& lim = dla::limits_for(out.target.empty() ? "?" : out.target);
  if (out.int8 && (!l->activation_scales() || !l->fp16_layers()))
    fail(Status::kParseError, origin, ": an INT8 loadable without activation scales or FP16 layer list");
  if (!l->network() || !l->inputs() || !l->outputs())
    fail(Status::kParseError, origin, ": the loadable has no network or no I/O descriptors");
  ImportOptions io;
  if (l->weights())
    for (const fb::Weight* w : *l->weights()) {
      if (!w->name() || !w->dims() || !w->data())
        fail(Status::kParseError, origin, ": a weight entry is incomplete");
      if (w->dtype() != kWeightF16 && w->dtype() != kWeightI8 && w->dtype() != kWeightF32)
        fail(Status::kUnsupported, origin, ": weight '", w->name()->str(), "' has dtype code ",
             int(w->dtype()));
      const bool i8 = w->dtype() == kWeightI8, f32 = w->dtype() == kWeightF32;
      // The verifier checks a vector's length field, not its elements' alignment: read them bytewise.
      Shape dims(w->dims()->size());
      for (size_t k = 0; k < dims.size(); ++k)
        std::memcpy(&dims[k], w->dims()->Data() + k * sizeof(int64_t), sizeof(int64_t));
      const int64_t count = checked_numel(
          dims, int64_t(1) << 32, cat(origin, ": weight '", w->name()->str(), "'"), Status::kParseError);
      const int64_t bpe = i8 ? 1 : f32 ? 4 : 2;
      if (uint64_t(w->data()->size()) != uint64_t(count) * uint64_t(bpe))
        fail(Status::kParseError, origin, ": weight '", w->name()->str(), "' holds ", w->data()->size(),
             " bytes, its shape needs ", count * bpe);
      Tensor t(DType::kF32, dims);
      if (i8) {  // int8 levels * per-output-channel scale: the weight on its INT8 grid
        const int axis = w->axis();
        const int64_t len = axis >= 0 && axis < int(dims.size()) ? dims[size_t(axis)] : -1;
        if (len <= 0 || !w->scales() || int64_t(w->scales()->size()) != len)
          fail(Status::kParseError, origin, ": int8 weight '", w->name()->str(),
               "' needs one scale per output "
               "channel along axis ",
               axis, ", has ", w->scales() ? w->scales()->size() : 0);
        std::vector<float> s(w->scales()->begin(), w->scales()->end());
        for (float x : s)
          if (!(x >= 0) || !std::isfinite(x))
            fail(Status::kParseError, origin, ": int8 weight '", w->name()->str(), "' has scale ", x);
        int64_t inner = 1;
        for (size_t d = size_t(axis) + 1; d < dims.size(); ++d) inner *= dims[d];
        for (int64_t i = 0; i < count; ++i)
          t.data<float>()[i] =
              float(int8_t(w->data()->Get(flatbuffers::uoffset_t(i)))) * s[size_t((i / inner) % len)];
        out.scales.weight_scales[w->name()->str()] = std::move(s);
      } else if (f32) {
        std::memcpy(t.data<float>(), w->data()->data(), size_t(count) * 4);
      } else {
        for (int64_t i = 0; i < count; ++i) {
          uint16_t h;
          std::memcpy(&h, w->data()->data() + i * 2, 2);
          t.data<float>()[i] = half_to_float(h);
        }
      }
      out.weight_bytes += size_t(count * bpe);
      io.constant_inputs[w->name()->str()] = std::move(t);
    }
  out.graph = import_onnx_bytes(l->network()->data(), l->network()->size(), io, origin + " (network)");
  auto read_descs = [&](const flatbuffers::Vector<flatbuffers::Offset<fb::TensorDesc>>* v,
                        const std::vector<int>& ids, bool inputs) {
    std::vector<rt::TensorDesc> r;
    if (v->size() != ids.size())
      fail(Status::kParseError, origin, ": ", v->size(), " ", inputs ? "input" : "output",
           " descriptors for a network with ", ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      const fb::TensorDesc* d = v->Get(flatbuffers::uoffset_t(i));
      const Value& val = out.graph.value(ids[i]);
      if (!d->name() || d->name()->str() != val.name || !d->io_format() || !d->stride() ||
          d->stride()->size() != 8)
        fail(Status::kParseError, origin, ": descriptor ", i, " does not describe network tensor '", val.name,
             "'");
      rt::IoSpec spec;
      spec.dtype = d->data_type() == 4 ? DType::kI8 : DType::kF16;
      spec.format =
          rt::parse_io_formats(
              std::string(spec.dtype == DType::kI8 ? "int8:" : "fp16:") + d->io_format()->str(), 1, inputs)[0]
              .format;
      // The descriptor must be exactly what this network tensor and format give: recompute and compare.
      rt::TensorDesc want = rt::make_desc(val.name, val.type.shape, spec, lim.line_stride_align_bytes);
      bool same = want.size == d->size() && want.n == d->n() && want.c == d->c() && want.h == d->h() &&
                  want.w == d->w() && want.data_format == d->data_format() &&
                  want.data_type == d->data_type() && want.data_category == d->data_category() &&
                  want.pixel_format == d->pixel_format() && want.pixel_mapping == d->pixel_mapping();
      for (size_t k = 0; k < 8; ++k)
        same = same && want.stride[k] == d->stride()->Get(flatbuffers::uoffset_t(k));
      if (!same)
        fail(Status::kParseError, origin, ": descriptor of '", val.name, "' disagrees with its tensor (size ",
             d->size(), ", expected ", want.size, ")");
      r.push_back(want);
    }
    return r;
  };
  if (out.int8) {
    for (const fb::ActivationScale* a : *l->activation_scales()) {
      if (!a->name() || !(a->scale() >= 0) || !std::isfinite(a->scale()))
        fail(Status::kParseError, origin,
             ": an activation scale entry is incomplete or not a finite scale >= 0");
      if (!out.graph.find_value(a->name()->str()))
        fail(Status::kParseError, origin, ": activation scale for '", a->name()->str(),
             "', which the network lacks");
      out.scales.set_scale(a->name()->str(), a->scale());
    }
    for (const flatbuffers::String* n : *l->fp16_layers()) out.fp16_layers.push_back(n->str());
  }
  out.inputs = read_descs(l->inputs(), out.graph.inputs, true);
  out.outputs = read_descs(l->outputs(), out.graph.outputs, false);
  for (auto* list : {&out.inputs, &out.outputs})
    for (rt::TensorDesc& d : *list) {
      if (d.dtype != DType::kI8) continue;
      const float* s = out.int8 ? out.scales.find_scale(d.name) : nullptr;
      if (!s || !(*s > 0))
        fail(Status::kParseError, origin, ": int8 tensor '", d.name,
             "' has no activation scale > 0 (int8 I/O needs an INT8 loadable with its range)");
      d.scale = *s;
    }
  return out;
}

}  // namespace dlakit
