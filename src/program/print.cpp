#include "program/print.h"

#include <cstdio>
#include <map>
#include <sstream>

namespace dlakit::prog {

const char* engine_name(Engine e) {
  switch (e) {
    case Engine::kBdma:
      return "BDMA";
    case Engine::kConv:
      return "CONV";
    case Engine::kSdp:
      return "SDP";
    case Engine::kPdp:
      return "PDP";
    case Engine::kCdp:
      return "CDP";
    case Engine::kRubik:
      return "RUBIK";
  }
  return "?";
}

const char* pool_name(Pool p) {
  switch (p) {
    case Pool::kGlobalDram:
      return "global_dram";
    case Pool::kLocalDram:
      return "local_dram";
    case Pool::kSram:
      return "sram";
    case Pool::kInput:
      return "input";
    case Pool::kOutput:
      return "output";
  }
  return "?";
}

namespace {

const char* const_type_name(ConstType t) {
  static const char* const kNames[] = {"f16", "f32", "i8", "i32", "i64"};
  return kNames[int(t)];
}

std::string bytes_text(uint64_t b) {
  char buf[32];
  if (b < 1024)
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  else if (b < (uint64_t(1) << 20))
    std::snprintf(buf, sizeof buf, "%.1f KiB", double(b) / 1024);
  else
    std::snprintf(buf, sizeof buf, "%.1f MiB", double(b) / double(1 << 20));
  return buf;
}

std::string count_text(double v) {
  char buf[32];
  if (v >= 1e9)
    std::snprintf(buf, sizeof buf, "%.2f G", v / 1e9);
  else if (v >= 1e6)
    std::snprintf(buf, sizeof buf, "%.2f M", v / 1e6);
  else if (v >= 1e3)
    std::snprintf(buf, sizeof buf, "%.2f K", v / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0f ", v);
  return buf;
}

std::string storage(const rt::TensorDesc& d) {
  std::ostringstream s;
  s << (d.dtype == DType::kI8 ? "int8 " : "fp16 ") << rt::io_format_name(d.format) << " "
    << shape_str(d.network_shape);
  if (d.dtype == DType::kI8) s << " scale " << d.scale;
  return s.str();
}

std::string where(const Surface& s) {
  std::ostringstream o;
  o << pool_name(s.pool);
  if (s.pool == Pool::kInput || s.pool == Pool::kOutput) o << "[" << s.io_index << "]";
  o << "+0x" << std::hex << s.offset;
  return o.str();
}

std::string attr_text(const Attribute& a) {
  std::ostringstream o;
  if (auto* i = std::get_if<int64_t>(&a)) o << *i;
  if (auto* f = std::get_if<float>(&a)) o << *f;
  if (auto* s = std::get_if<std::string>(&a)) o << *s;
  if (auto* v = std::get_if<std::vector<int64_t>>(&a)) {
    for (size_t k = 0; k < v->size(); ++k) o << (k ? "," : "") << (*v)[k];
  }
  if (auto* v = std::get_if<std::vector<float>>(&a)) {
    for (size_t k = 0; k < v->size(); ++k) o << (k ? "," : "") << (*v)[k];
  }
  if (auto* v = std::get_if<std::vector<std::string>>(&a)) {
    for (size_t k = 0; k < v->size(); ++k) o << (k ? "," : "") << (*v)[k];
  }
  return o.str();
}

std::string ref_text(const Ref& r) {
  switch (r.kind) {
    case Ref::Kind::kSurface:
      return "s" + std::to_string(r.index);
    case Ref::Kind::kConstant:
      return "c" + std::to_string(r.index);
    case Ref::Kind::kTemp:
      return "t" + std::to_string(r.index);
    case Ref::Kind::kNone:
      break;
  }
  return "-";
}

std::string input_rule_text(const numerics::InputRule& r) {
  std::string s;
  if (r.quantize_scale > 0) s += " quantize(" + std::to_string(r.quantize_scale) + ")";
  if (r.round_fp16) s += " fp16";
  return s;
}

std::string output_rule_text(const numerics::OutputRule& r) {
  switch (r.store) {
    case numerics::Store::kFused:
      return " fused fp32";
    case numerics::Store::kFp16:
      return " fp16";
    case numerics::Store::kInt8:
      return " int8(" + std::to_string(r.scale) + ")";
  }
  return "";
}

}  // namespace

std::string engine_counts(const Program& p) {
  std::map<Engine, int> count;
  for (const Op& o : p.ops) ++count[o.engine];
  std::string s;
  for (auto [e, n] : count)
    s += (s.empty() ? "" : ", ") + std::string(engine_name(e)) + " " + std::to_string(n);
  return s;
}

std::string summary(const Program& p) {
  std::ostringstream o;
  size_t views = 0;
  for (const Surface& s : p.surfaces) views += s.parent >= 0;
  o << "target " << p.target << " (DLA " << p.dla_version << "), " << (p.int8 ? "INT8" : "FP16") << ", core "
    << p.dla_core << ": " << p.layers << " layers -> " << p.ops.size() << " hardware operations ("
    << engine_counts(p) << ") + " << p.aliases.size() << " aliased, " << count_text(double(p.macs))
    << "MACs\n"
    << "  memory: SRAM " << bytes_text(p.sram.used) << " of " << bytes_text(p.sram.budget) << ", local DRAM "
    << bytes_text(p.local_dram.used) << " of " << bytes_text(p.local_dram.budget) << ", global DRAM "
    << bytes_text(p.global_dram.used) << " (weights and constants) of " << bytes_text(p.global_dram.budget)
    << "; " << p.surfaces.size() << " surfaces (" << views << " views)\n";
  for (int pass = 0; pass < 2; ++pass)
    for (uint32_t s : pass ? p.outputs : p.inputs) {
      const rt::TensorDesc& d = p.surfaces[s].desc;
      o << (pass ? "  output " : "  input  ") << d.name << "  " << (d.dtype == DType::kI8 ? "int8:" : "fp16:")
        << rt::io_format_name(d.format) << "  n" << d.n << " c" << d.c << " h" << d.h << " w" << d.w << "  "
        << d.size << " bytes, line stride " << d.stride[1] << "\n";
    }
  return o.str();
}

std::string to_text(const Program& p) {
  std::ostringstream o;
  o << "program (format " << kFormatVersion << ", " << p.producer << ")\n" << summary(p);
  o << "surfaces:\n";
  for (size_t i = 0; i < p.surfaces.size(); ++i) {
    const Surface& s = p.surfaces[i];
    o << "  s" << i << "  " << where(s) << "  " << bytes_text(s.bytes) << "  " << storage(s.desc) << "  '"
      << s.desc.name << "'";
    if (s.parent >= 0) o << "  view of s" << s.parent;
    o << "\n";
  }
  o << "constants:\n";
  for (size_t i = 0; i < p.constants.size(); ++i) {
    const Constant& c = p.constants[i];
    o << "  c" << i << "  " << const_type_name(c.type) << "[" << shape_str(c.shape) << "]  global_dram+0x"
      << std::hex << c.offset << std::dec << "  " << bytes_text(c.bytes);
    if (c.type == ConstType::kI8) o << "  " << c.scales.size() << " scales along axis " << c.axis;
    o << "  '" << c.name << "'\n";
  }
  o << "operations:\n";
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const Op& op = p.ops[i];
    o << "  op" << i << "  " << engine_name(op.engine) << "  reads";
    for (uint32_t s : op.reads) o << " s" << s;
    o << "  writes";
    for (uint32_t s : op.writes) o << " s" << s;
    if (op.macs) o << "  " << count_text(double(op.macs)) << "MACs";
    if (op.weight_bytes) o << "  weights " << bytes_text(op.weight_bytes);
    o << "\n";
    for (const Step& s : op.steps) {
      o << "      " << op_name(s.op) << " '" << s.layer << "'  "
        << numerics::precision_name(s.rules.precision) << (s.rules.exact_int8_conv ? " exact-integer" : "")
        << (s.rules.compute_fp16 ? " computed-in-fp16" : "") << "  (";
      for (size_t k = 0; k < s.inputs.size(); ++k)
        o << (k ? ", " : "") << ref_text(s.inputs[k]) << input_rule_text(s.rules.inputs[k]);
      o << ") -> (";
      for (size_t k = 0; k < s.outputs.size(); ++k)
        o << (k ? ", " : "") << ref_text(s.outputs[k]) << output_rule_text(s.rules.outputs[k]);
      o << ")";
      for (const auto& [name, a] : s.attrs) o << " " << name << "=" << attr_text(a);
      o << "\n";
    }
  }
  if (!p.aliases.empty()) o << "aliased (no operation; the output is a view):\n";
  for (const Alias& a : p.aliases)
    o << "  " << op_name(a.op) << " '" << a.layer << "' -> s" << a.surface << "\n";
  return o.str();
}

nlohmann::json to_json(const Program& p) {
  using nlohmann::json;
  json j;
  j["format_version"] = kFormatVersion;
  j["producer"] = p.producer;
  j["target"] = p.target;
  j["dla_version"] = p.dla_version;
  j["precision"] = p.int8 ? "int8" : "fp16";
  j["dla_core"] = p.dla_core;
  j["layers"] = p.layers;
  j["macs"] = p.macs;
  j["weight_bytes"] = p.global_dram.used;
  for (const auto& [name, u] :
       {std::pair{"sram", p.sram}, {"local_dram", p.local_dram}, {"global_dram", p.global_dram}})
    j["pools"][name] = {{"budget_bytes", u.budget}, {"peak_bytes", u.used}};
  std::map<std::string, int> per_engine;
  for (const Op& o : p.ops) ++per_engine[engine_name(o.engine)];
  j["operations_per_engine"] = per_engine;
  for (int pass = 0; pass < 2; ++pass)
    for (uint32_t s : pass ? p.outputs : p.inputs) {
      const rt::TensorDesc& d = p.surfaces[s].desc;
      json t = {{"name", d.name},
                {"type", d.dtype == DType::kI8 ? "int8" : "fp16"},
                {"format", rt::io_format_name(d.format)},
                {"n", d.n},
                {"c", d.c},
                {"h", d.h},
                {"w", d.w},
                {"size", d.size},
                {"strides", d.stride}};
      if (d.dtype == DType::kI8) t["scale"] = d.scale;
      j[pass ? "outputs" : "inputs"].push_back(t);
    }
  j["surfaces"] = json::array();
  for (const Surface& s : p.surfaces) {
    json t = {{"name", s.desc.name},
              {"pool", pool_name(s.pool)},
              {"offset", s.offset},
              {"bytes", s.bytes},
              {"type", s.desc.dtype == DType::kI8 ? "int8" : "fp16"},
              {"format", rt::io_format_name(s.desc.format)},
              {"shape", s.desc.network_shape}};
    if (s.pool == Pool::kInput || s.pool == Pool::kOutput) t["io_index"] = s.io_index;
    if (s.desc.dtype == DType::kI8) t["scale"] = s.desc.scale;
    if (s.parent >= 0) t["view_of"] = s.parent;
    j["surfaces"].push_back(t);
  }
  j["operations"] = json::array();
  for (const Op& op : p.ops) {
    json o = {{"engine", engine_name(op.engine)},
              {"reads", op.reads},
              {"writes", op.writes},
              {"macs", op.macs},
              {"weight_bytes", op.weight_bytes},
              {"read_bytes", op.read_bytes},
              {"write_bytes", op.write_bytes}};
    for (const Step& s : op.steps)
      o["layers"].push_back({{"name", s.layer},
                             {"op", op_name(s.op)},
                             {"precision", numerics::precision_name(s.rules.precision)},
                             {"exact_integer", s.rules.exact_int8_conv}});
    j["operations"].push_back(o);
  }
  j["aliases"] = json::array();
  for (const Alias& a : p.aliases)
    j["aliases"].push_back({{"layer", a.layer}, {"op", op_name(a.op)}, {"surface", a.surface}});
  return j;
}

}  // namespace dlakit::prog
