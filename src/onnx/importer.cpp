#include "onnx/importer.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>

#include "base/checked.h"
#include "base/file.h"
#include "engine/engine.h"
#include "kernels/registry.h"
#include "ir/op_schema.h"

namespace dlakit {
namespace {

// 7..17 is the supported range. Older opsets import too: legacy broadcast/axis attributes are honoured and
// consumed_inputs/is_test are ignored, which is what they mean for inference.
constexpr int kMinOpset = 1, kMaxOpset = 17;
// A model file is at most 2 GiB, so no tensor in it holds more than 2^31 bytes; 2^34 elements leaves room
// for headers that disagree with their data, which the length checks then name.
constexpr int64_t kMaxFileTensorElements = int64_t(1) << 34;

void parse_model(onnx::ModelProto& m, const void* data, size_t size, const std::string& origin) {
  if (size == 0) fail(Status::kParseError, origin, ": file is empty");
  if (size > (size_t(2) << 30))
    fail(Status::kUnsupported, origin, ": models over 2 GiB (external data) are not supported");
  if (!m.ParseFromArray(data, int(size)))
    fail(Status::kParseError, origin, ": not a valid ONNX model (protobuf parsing failed after reading ",
         size, " bytes; the file is truncated, corrupt, or not ONNX)");
  if (!m.has_graph()) fail(Status::kParseError, origin, ": the model has no graph");
}

int default_opset(const onnx::ModelProto& m, const std::string& origin) {
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return int(o.version());
  if (m.opset_import_size() == 0 && m.ir_version() > 0 && m.ir_version() < 3) return 1;
  fail(Status::kParseError, origin, ": no opset_import for the default ONNX domain");
}

// TensorProto -> Tensor with every length checked against the dims.
Tensor to_tensor(const onnx::TensorProto& t, const std::string& where) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL || t.external_data_size() > 0)
    fail(Status::kUnsupported, where, ": tensor '", t.name(), "' uses external data, which is not supported");
  auto dt = dtype_from_onnx(t.data_type());
  if (!dt)
    fail(Status::kUnsupported, where, ": tensor '", t.name(), "' has dtype ", onnx_dtype_name(t.data_type()));
  const Shape shape(t.dims().begin(), t.dims().end());
  const int64_t count = checked_numel(shape, kMaxFileTensorElements, cat(where, ": tensor '", t.name(), "'"),
                                      Status::kParseError);
  const size_t es = dtype_size(*dt);
  auto mismatch = [&](size_t got) {
    fail(Status::kParseError, where, ": tensor '", t.name(), "' of shape ", shape_str(shape), " holds ", got,
         " values, expected ", count);
  };
  // Lengths are compared before anything is allocated: a header cannot make dlakit reserve memory that
  // the file does not back.
  if (t.has_raw_data()) {
    if (t.raw_data().size() != size_t(count) * es) mismatch(t.raw_data().size() / es);
    Tensor out(*dt, shape);
    if (count) std::memcpy(out.raw(), t.raw_data().data(), t.raw_data().size());
    return out;
  }
  const int64_t held = *dt == DType::kF32   ? t.float_data_size()
                       : *dt == DType::kI64 ? t.int64_data_size()
                                            : t.int32_data_size();  // int32, int8, uint8, bool, float16 bits
  if (held != count) mismatch(size_t(held));
  Tensor out(*dt, shape);
  switch (*dt) {
    case DType::kF32:
      for (int64_t i = 0; i < count; ++i) out.data<float>()[i] = t.float_data(int(i));
      break;
    case DType::kI64:
      for (int64_t i = 0; i < count; ++i) out.data<int64_t>()[i] = t.int64_data(int(i));
      break;
    default:  // int32, int8, uint8, bool and float16 bits all travel in int32_data
      for (int64_t i = 0; i < count; ++i) {
        const int32_t v = t.int32_data(int(i));
        switch (*dt) {
          case DType::kI32:
            out.data<int32_t>()[i] = v;
            break;
          case DType::kI8:
            out.data<int8_t>()[i] = int8_t(v);
            break;
          case DType::kU8:
          case DType::kBool:
            out.data<uint8_t>()[i] = uint8_t(v);
            break;
          case DType::kF16:
            out.data<uint16_t>()[i] = uint16_t(v);
            break;
          default:
            break;
        }
      }
  }
  return out;
}

Attribute to_attribute(const onnx::AttributeProto& a, const std::string& where) {
  using A = onnx::AttributeProto;
  switch (a.type()) {
    case A::INT:
      return int64_t(a.i());
    case A::FLOAT:
      return a.f();
    case A::STRING:
      return a.s();
    case A::INTS:
      return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case A::FLOATS:
      return std::vector<float>(a.floats().begin(), a.floats().end());
    case A::STRINGS:
      return std::vector<std::string>(a.strings().begin(), a.strings().end());
    case A::TENSOR:
      return to_tensor(a.t(), where);
    default:
      fail(Status::kUnsupported, where, ": attribute '", a.name(), "' has type ", int(a.type()),
           " (graphs, sparse tensors and type protos are not supported)");
  }
}

std::string dim_text(const onnx::TensorShapeProto::Dimension& d) {
  if (d.has_dim_value()) return std::to_string(d.dim_value());
  if (d.has_dim_param() && !d.dim_param().empty()) return d.dim_param();
  return "?";
}

OnnxSignature::Io io_of(const onnx::ValueInfoProto& v) {
  OnnxSignature::Io io{v.name(), "?", {}};
  if (v.type().has_tensor_type()) {
    const auto& tt = v.type().tensor_type();
    auto dt = dtype_from_onnx(tt.elem_type());
    io.dtype = dt ? dtype_name(*dt) : onnx_dtype_name(tt.elem_type());
    if (tt.has_shape())
      for (const auto& d : tt.shape().dim()) io.dims.push_back(dim_text(d));
  }
  return io;
}

class Importer {
  static constexpr const char* kInitializer = "an initializer";
  static constexpr const char* kGraphInput = "a graph input";

 public:
  Importer(const onnx::ModelProto& m, const ImportOptions& opt, std::string origin)
      : m_(m), opt_(opt), origin_(std::move(origin)) {}

  Graph run() {
    g_.opset = default_opset(m_, origin_);
    g_.producer = m_.producer_name() + (m_.producer_version().empty() ? "" : " " + m_.producer_version());
    if (g_.opset < kMinOpset || g_.opset > kMaxOpset)
      fail(Status::kUnsupported, origin_, ": opset ", g_.opset, "; dlakit imports opsets ", kMinOpset, " to ",
           kMaxOpset, " (convert the model with onnx.version_converter)");
    const auto& gp = m_.graph();
    for (const auto& init : gp.initializer())
      define(init.name(), kInitializer, to_tensor(init, origin_ + " initializer"));
    add_inputs(gp);
    add_nodes(gp);
    for (const auto& o : gp.output()) {
      if (!defined_by_.count(o.name()))
        fail(Status::kParseError, origin_, ": graph output '", o.name(),
             "' is produced by no node, initializer or graph input");
      g_.outputs.push_back(ids_.at(o.name()));
    }
    check_references();
    g_.topological_sort();
    infer_and_fold();
    g_.remove_dead_nodes();
    g_.verify();
    return std::move(g_);
  }

 private:
  int id_of(const std::string& name) {
    auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    int id = g_.add_value(name, {});
    ids_[name] = id;
    return id;
  }

  // Records that `by` ("initializer", "graph input" or a node's label) defines `name`; a second
  // definition is an error naming both, except a repeated initializer (the last one wins, as in ONNX
  // Runtime).
  void define(const std::string& name, const std::string& by, std::optional<Tensor> constant = std::nullopt) {
    auto [it, first] = defined_by_.emplace(name, by);
    if (!first) {
      if (constant && by == kInitializer && it->second == kInitializer) {
        g_.value(ids_[name]).constant = std::move(constant);
        g_.value(ids_[name]).type = g_.value(ids_[name]).constant->type();
        return;
      }
      fail(Status::kParseError, origin_, ": value '", name, "' is defined twice: by ", it->second, " and by ",
           by);
    }
    int id = id_of(name);
    if (constant) {
      g_.value(id).type = constant->type();
      g_.value(id).constant = std::move(constant);
    }
  }

  void add_inputs(const onnx::GraphProto& gp) {
    std::vector<std::string> dynamic;
    std::set<std::string> seen_pins;
    for (const auto& in : gp.input()) {
      if (defined_by_.count(in.name()) && defined_by_[in.name()] == kInitializer)
        continue;  // an initializer listed as input (IR < 4)
      if (auto bound = opt_.constant_inputs.find(in.name()); bound != opt_.constant_inputs.end()) {
        define(in.name(), kGraphInput, bound->second);
        seen_pins.insert(in.name());
        continue;
      }
      if (!in.type().has_tensor_type())
        fail(Status::kUnsupported, origin_, ": input '", in.name(),
             "' is not a tensor (sequences and maps are not supported)");
      const auto& tt = in.type().tensor_type();
      auto dt = dtype_from_onnx(tt.elem_type());
      if (!dt)
        fail(Status::kUnsupported, origin_, ": input '", in.name(), "' has dtype ",
             onnx_dtype_name(tt.elem_type()));
      Shape shape;
      bool dyn = false;
      for (const auto& d : tt.shape().dim()) {
        dyn = dyn || !d.has_dim_value() || d.dim_value() < 0;
        shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
      }
      auto pin = opt_.input_shapes.find(in.name());
      if (pin != opt_.input_shapes.end()) {
        seen_pins.insert(in.name());
        if (pin->second.size() != shape.size())
          fail(Status::kInvalidArgument, "--input-shape ", in.name(), ":", shape_str(pin->second),
               " has rank ", pin->second.size(), " but the model's input has rank ", shape.size());
        for (size_t i = 0; i < shape.size(); ++i)
          if (shape[i] >= 0 && shape[i] != pin->second[i])
            fail(Status::kInvalidArgument, "--input-shape ", in.name(), ":", shape_str(pin->second),
                 " sets dim ", i, " to ", pin->second[i], " but the model fixes it to ", shape[i]);
        shape = pin->second;
        dyn = false;
      } else if (dyn) {
        std::string dims;
        for (const auto& d : tt.shape().dim()) dims += (dims.empty() ? "" : "x") + dim_text(d);
        dynamic.push_back(cat(in.name(), " [", dims, "]"));
      }
      if (!dyn)  // bounded before any shape formula multiplies the dims
        checked_numel(shape, kMaxElements, cat(origin_, ": graph input '", in.name(), "'"),
                      Status::kInvalidArgument);
      define(in.name(), kGraphInput);
      int id = ids_[in.name()];
      g_.value(id).type = {*dt, shape};
      g_.inputs.push_back(id);
    }
    for (auto& [name, t] : opt_.constant_inputs)
      if (!seen_pins.count(name))
        fail(Status::kInvalidArgument, "constant input '", name, "' is not a model input");
    for (auto& [name, s] : opt_.input_shapes)
      if (!seen_pins.count(name)) {
        std::string names;
        for (int id : g_.inputs) names += (names.empty() ? "" : ", ") + g_.value(id).name;
        fail(Status::kInvalidArgument, "--input-shape names '", name,
             "', which is not a model input (inputs: ", names, ")");
      }
    if (!dynamic.empty()) {
      std::string list, example;
      for (auto& d : dynamic) list += "\n  " + d;
      fail(Status::kInvalidArgument, origin_, ": ", dynamic.size(),
           " input(s) have dynamic dimensions:", list, "\nPin them with --input-shape, e.g. --input-shape ",
           dynamic[0].substr(0, dynamic[0].find(' ')), ":1x3x640x640");
    }
  }

  void add_nodes(const onnx::GraphProto& gp) {
    std::vector<std::string> unsupported, malformed;
    int index = 0;
    for (const auto& np : gp.node()) {
      const std::string name = np.name().empty() ? cat(np.op_type(), "_", index) : np.name();
      ++index;
      auto op = op_from_name(np.op_type());
      const bool std_domain = np.domain().empty() || np.domain() == "ai.onnx";
      if (!op || !std_domain) {
        unsupported.push_back(cat(name, " (", np.domain().empty() ? "" : np.domain() + ".", np.op_type(),
                                  ", opset ", g_.opset, "): op not in dlakit's op list"));
        continue;
      }
      Node n;
      n.op = *op;
      n.name = name;
      n.opset = g_.opset;
      const std::string where = cat(origin_, " node ", n.label());
      try {
        for (const auto& a : np.attribute()) n.attrs[a.name()] = to_attribute(a, where);
      } catch (const Error& e) {
        unsupported.push_back(cat(name, " (", np.op_type(), ", opset ", g_.opset, "): ", e.what()));
        continue;
      }
      for (const auto& i : np.input()) n.inputs.push_back(i.empty() ? -1 : id_of(i));
      for (const auto& o : np.output()) n.outputs.push_back(o.empty() ? -1 : id_of(o));
      // The op's definition is checked before anything reads the node (inference, folding, kernels).
      std::vector<std::string> violations = schema_violations(n);
      malformed.insert(malformed.end(), violations.begin(), violations.end());
      if (!violations.empty()) continue;
      for (int o : n.outputs)
        if (o >= 0) define(g_.value(o).name, n.label());
      g_.nodes.push_back(std::move(n));
    }
    if (!unsupported.empty()) {
      std::string list;
      for (auto& u : unsupported) list += "\n  " + u;
      fail(Status::kUnsupported, origin_, ": ", unsupported.size(), " unsupported node(s):", list);
    }
    if (!malformed.empty()) {
      std::string list;
      for (auto& m : malformed) list += "\n  " + m;
      fail(Status::kParseError, origin_, ": ", malformed.size(),
           " violation(s) of the ONNX operator definitions:", list);
    }
  }

  void check_references() {
    for (const Node& n : g_.nodes)
      for (int i : n.inputs)
        if (i >= 0 && !defined_by_.count(g_.value(i).name))
          fail(Status::kParseError, origin_, ": ", n.label(), " reads '", g_.value(i).name,
               "', which no node, initializer or input defines");
  }

  bool foldable(const Node& n) const {
    if (!opt_.fold_constants && n.op != OpKind::Constant) return false;
    if (n.op == OpKind::QuantizeLinear || n.op == OpKind::DequantizeLinear) return false;
    for (int i : n.inputs)
      if (i >= 0 && !g_.value(i).constant) return false;
    return true;
  }

  void infer_and_fold() {
    std::vector<std::string> errors;
    std::vector<char> unknown(g_.values.size(), 0);  // downstream of a failed node
    std::vector<char> folded(g_.nodes.size(), 0);
    for (size_t k = 0; k < g_.nodes.size(); ++k) {
      Node& n = g_.nodes[k];
      bool skip = false;
      for (int i : n.inputs) skip = skip || (i >= 0 && unknown[size_t(i)]);
      auto mark_unknown = [&] {
        for (int o : n.outputs)
          if (o >= 0) unknown[size_t(o)] = 1;
      };
      if (skip) {
        mark_unknown();
        continue;
      }
      std::vector<int> missing;  // inputs shape inference needed as constants
      try {
        InferContext ctx(g_, n);
        ctx.collect_missing_constants(&missing);
        std::vector<TensorType> types = op_impl(n.op).infer(ctx);
        if (types.size() < n.outputs.size())
          fail(Status::kParseError, n.label(), " has ", n.outputs.size(), " outputs; the op defines ",
               types.size());
        for (size_t o = 0; o < n.outputs.size(); ++o)
          if (n.outputs[o] >= 0) g_.value(n.outputs[o]).type = types[o];
        // Shape of a statically shaped tensor is a constant, whatever computes the tensor.
        if (n.op == OpKind::Shape && opt_.fold_constants) {
          Tensor t(DType::kI64, g_.value(n.outputs[0]).type.shape);
          const Shape& s = g_.value(n.inputs[0]).type.shape;
          const int64_t r = int64_t(s.size());
          auto fix = [r](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + r : v, 0, r); };
          const int64_t b = fix(n.attr_int("start", 0));
          for (int64_t i = 0; i < t.numel(); ++i) t.data<int64_t>()[i] = s[size_t(b + i)];
          g_.value(n.outputs[0]).constant = t;
          folded[k] = 1;
          continue;
        }
        if (foldable(n)) {
          std::vector<const Tensor*> ins;
          for (int i : n.inputs) ins.push_back(i >= 0 ? &*g_.value(i).constant : nullptr);
          std::vector<Tensor> outs = run_node(g_, n, ins);
          for (size_t o = 0; o < n.outputs.size(); ++o)
            if (n.outputs[o] >= 0) g_.value(n.outputs[o]).constant = std::move(outs[o]);
          folded[k] = 1;
        }
      } catch (const Error& e) {
        errors.push_back(e.what());
        mark_unknown();
        note_given_inputs_upstream(missing);
      }
    }
    if (!errors.empty()) {
      std::string list;
      for (auto& e : errors) list += "\n  " + e;
      fail(Status::kUnsupported, origin_, ": ", errors.size(), " node(s) could not be imported:", list);
    }
    std::vector<Node> kept;
    for (size_t k = 0; k < g_.nodes.size(); ++k)
      if (!folded[k]) kept.push_back(std::move(g_.nodes[k]));
    g_.nodes = std::move(kept);
    g_.relink();
  }

  // Records the graph inputs with a run-time value that the values shape inference needed as constants
  // depend on: binding them gives it those constants (import_onnx_bytes retries with them bound).
  void note_given_inputs_upstream(std::vector<int> todo) {
    std::set<int> seen;
    while (!todo.empty()) {
      const int v = todo.back();
      todo.pop_back();
      if (v < 0 || !seen.insert(v).second || g_.value(v).constant) continue;
      const int p = g_.value(v).producer;
      if (p >= 0)
        todo.insert(todo.end(), g_.nodes[size_t(p)].inputs.begin(), g_.nodes[size_t(p)].inputs.end());
      else if (opt_.runtime_values.count(g_.value(v).name))
        to_specialize_.insert(g_.value(v).name);
    }
  }

 public:
  const std::set<std::string>& inputs_to_specialize() const { return to_specialize_; }

 private:
  std::set<std::string> to_specialize_;
  const onnx::ModelProto& m_;
  const ImportOptions& opt_;
  std::string origin_;
  Graph g_;
  std::unordered_map<std::string, int> ids_;
  std::unordered_map<std::string, std::string> defined_by_;  // value name -> what defines it
};

}  // namespace

Graph import_onnx_bytes(const void* data, size_t size, const ImportOptions& opt, const std::string& origin) {
  onnx::ModelProto m;
  parse_model(m, data, size, origin);
  ImportOptions o = opt;
  for (;;) {  // each retry binds at least one more input, so this ends
    Importer importer(m, o, origin);
    try {
      return importer.run();
    } catch (const Error&) {
      bool bound = false;
      for (const std::string& name : importer.inputs_to_specialize())
        bound = o.constant_inputs.emplace(name, o.runtime_values.at(name)).second || bound;
      if (!bound) throw;
    }
  }
}

Graph import_onnx_file(const std::string& path, const ImportOptions& opt) {
  std::string bytes = read_file(path);
  return import_onnx_bytes(bytes.data(), bytes.size(), opt, path);
}

OnnxSignature read_onnx_signature(const std::string& path) {
  std::string bytes = read_file(path);
  onnx::ModelProto m;
  parse_model(m, bytes.data(), bytes.size(), path);
  OnnxSignature s;
  s.ir_version = m.ir_version();
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") s.opset = int(o.version());
  s.producer = m.producer_name() + (m.producer_version().empty() ? "" : " " + m.producer_version());
  std::set<std::string> inits;
  for (const auto& i : m.graph().initializer()) inits.insert(i.name());
  for (const auto& i : m.graph().input())
    if (!inits.count(i.name())) s.inputs.push_back(io_of(i));
  for (const auto& o : m.graph().output()) s.outputs.push_back(io_of(o));
  for (const auto& n : m.graph().node())
    ++s.op_histogram[(n.domain().empty() ? "" : n.domain() + ".") + n.op_type()];
  s.node_count = m.graph().node_size();
  return s;
}

std::map<std::string, Shape> parse_input_shapes(const std::string& spec) {
  std::map<std::string, Shape> out;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const size_t colon = item.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == item.size())
      fail(Status::kInvalidArgument, "--input-shape entry '", item, "' should look like name:1x3x224x224");
    Shape s;
    std::stringstream ds(item.substr(colon + 1));
    std::string d;
    while (std::getline(ds, d, 'x')) {
      char* end = nullptr;
      long long v = std::strtoll(d.c_str(), &end, 10);
      if (d.empty() || *end || v < 1 || v > (1LL << 31))
        fail(Status::kInvalidArgument, "--input-shape entry '", item, "': dimension '", d,
             "' is not a positive integer");
      s.push_back(v);
    }
    out[item.substr(0, colon)] = s;
  }
  return out;
}

}  // namespace dlakit

namespace dlakit {
Tensor load_tensor_pb(const std::string& path, std::string* name) {
  std::string bytes = read_file(path);
  onnx::TensorProto t;
  if (!t.ParseFromArray(bytes.data(), int(bytes.size())))
    fail(Status::kParseError, path, ": not a serialized onnx.TensorProto");
  if (name) *name = t.name();
  return to_tensor(t, path);
}
}  // namespace dlakit
