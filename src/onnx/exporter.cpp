#include "onnx/exporter.h"

#include <onnx/onnx_pb.h>

#include <set>
#include <variant>

#include "base/error.h"

namespace dlakit {
namespace {

void fill_tensor(onnx::TensorProto* t, const std::string& name, const Tensor& v) {
  t->set_name(name);
  t->set_data_type(onnx_code(v.dtype()));
  for (int64_t d : v.shape()) t->add_dims(d);
  t->set_raw_data(std::string(static_cast<const char*>(v.raw()), v.nbytes()));
}

void fill_value_info(onnx::ValueInfoProto* vi, const Value& v) {
  vi->set_name(v.name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx_code(v.type.dtype));
  auto* sh = tt->mutable_shape();
  for (int64_t d : v.type.shape) sh->add_dim()->set_dim_value(d);
}

void add_attribute(onnx::NodeProto* np, const std::string& name, const Attribute& a) {
  auto* ap = np->add_attribute();
  ap->set_name(name);
  std::visit(
      [&](auto&& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          ap->set_type(onnx::AttributeProto::INT);
          ap->set_i(x);
        } else if constexpr (std::is_same_v<T, float>) {
          ap->set_type(onnx::AttributeProto::FLOAT);
          ap->set_f(x);
        } else if constexpr (std::is_same_v<T, std::string>) {
          ap->set_type(onnx::AttributeProto::STRING);
          ap->set_s(x);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          ap->set_type(onnx::AttributeProto::INTS);
          for (auto v : x) ap->add_ints(v);
        } else if constexpr (std::is_same_v<T, std::vector<float>>) {
          ap->set_type(onnx::AttributeProto::FLOATS);
          for (auto v : x) ap->add_floats(v);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          ap->set_type(onnx::AttributeProto::STRINGS);
          for (auto& v : x) ap->add_strings(v);
        } else {
          ap->set_type(onnx::AttributeProto::TENSOR);
          fill_tensor(ap->mutable_t(), "", x);
        }
      },
      a);
}

}  // namespace

std::string export_onnx(const Graph& g, const std::vector<int>& nodes, const std::vector<int>& inputs,
                        const std::vector<int>& outputs, const std::string& graph_name) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("dlakit");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(g.opset);
  auto* gp = m.mutable_graph();
  gp->set_name(graph_name);
  std::set<int> inits;
  for (int k : nodes) {
    const Node& n = g.nodes[size_t(k)];
    auto* np = gp->add_node();
    np->set_op_type(op_name(n.op));
    np->set_name(n.name);
    for (int i : n.inputs) {
      np->add_input(i < 0 ? "" : g.value(i).name);
      if (i >= 0 && g.value(i).constant) inits.insert(i);
    }
    const bool fused = n.has("dlakit_activation");
    for (size_t o = 0; o < n.outputs.size(); ++o)
      np->add_output(n.outputs[o] < 0 ? ""
                                      : (fused && o == 0 ? g.value(n.outputs[0]).name + "/preact"
                                                         : g.value(n.outputs[o]).name));
    for (auto& [name, a] : n.attrs)
      if (name.rfind("dlakit_", 0) != 0) add_attribute(np, name, a);
    if (fused) {  // the activation as its own node, reading the conv's pre-activation output
      const std::string act = n.attr_str("dlakit_activation", "");
      const auto params = n.attr_floats("dlakit_activation_params", {});
      auto* an = gp->add_node();
      an->set_op_type(act);
      an->set_name(n.name + "/" + act);
      an->add_input(g.value(n.outputs[0]).name + "/preact");
      an->add_output(g.value(n.outputs[0]).name);
      if (act == "LeakyRelu" && params.size() == 1) add_attribute(an, "alpha", params[0]);
      if (act == "Clip" && params.size() == 2) {
        if (g.opset < 11) {
          add_attribute(an, "min", params[0]);
          add_attribute(an, "max", params[1]);
        } else {
          for (int b = 0; b < 2; ++b) {
            const std::string cname = n.name + (b ? "/clip_max" : "/clip_min");
            fill_tensor(gp->add_initializer(), cname, Tensor::scalar_f32(params[size_t(b)]));
            an->add_input(cname);
          }
        }
      }
    }
  }
  for (int i : inits) fill_tensor(gp->add_initializer(), g.value(i).name, *g.value(i).constant);
  for (int i : inputs) fill_value_info(gp->add_input(), g.value(i));
  for (int o : outputs) {
    if (g.value(o).constant && !inits.count(o))
      fill_tensor(gp->add_initializer(), g.value(o).name, *g.value(o).constant);
    fill_value_info(gp->add_output(), g.value(o));
  }
  std::string bytes;
  if (!m.SerializeToString(&bytes))
    fail(Status::kInternal, "could not serialise ONNX graph '", graph_name, "'");
  return bytes;
}

}  // namespace dlakit
