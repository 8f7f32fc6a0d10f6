// remove-identity, fold-constants, dead-code.
#include "engine/engine.h"
#include "passes/graph_edit.h"
#include "passes/passes.h"

namespace dlakit::passes {

void remove_identity(Graph& g, std::vector<Remark>& r) {
  std::set<int> drop;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    Node& n = g.nodes[k];
    if (n.op != OpKind::Identity && n.op != OpKind::Dropout) continue;
    if (n.outputs.size() > 1 && n.outputs[1] >= 0 && !consumers(g, n.outputs[1]).empty()) {
      r.push_back({"remove-identity", n.name, false, "Dropout's mask output is used"});
      continue;
    }
    const int in = n.inputs[0], out = n.outputs[0];
    if (is_graph_output(g, out) && (is_graph_output(g, in) || g.value(in).producer < 0)) {
      r.push_back({"remove-identity", n.name, false, "it copies a graph input or output to a graph output"});
      continue;
    }
    if (is_graph_output(g, out)) {
      // Let the producer write the graph output directly, unless another reader needs the old name.
      Node& p = g.nodes[size_t(g.value(in).producer)];
      if (consumers(g, in).size() > 1 || is_graph_output(g, in)) {
        r.push_back({"remove-identity", n.name, false,
                     "its input has other readers and its output is a graph output"});
        continue;
      }
      for (int& o : p.outputs)
        if (o == in) o = out;
    } else {
      replace_uses(g, out, in);
    }
    drop.insert(int(k));
    r.push_back({"remove-identity", n.name, true, std::string("removed ") + op_name(n.op)});
  }
  remove_nodes(g, drop);
}

void fold_constants(Graph& g, std::vector<Remark>& r) {
  std::set<int> drop;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if (n.op == OpKind::QuantizeLinear || n.op == OpKind::DequantizeLinear) continue;
    bool all_const = true;
    std::vector<const Tensor*> ins;
    for (int i : n.inputs) {
      all_const = all_const && (i < 0 || g.value(i).constant);
      ins.push_back(i >= 0 && g.value(i).constant ? &*g.value(i).constant : nullptr);
    }
    if (!all_const) continue;
    std::vector<Tensor> outs = run_node(g, n, ins);
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o] >= 0) g.value(n.outputs[o]).constant = std::move(outs[o]);
    drop.insert(int(k));
    r.push_back({"fold-constants", n.name, true, "evaluated at build time"});
  }
  remove_nodes(g, drop);
}

void eliminate_dead_code(Graph& g, std::vector<Remark>& r) {
  const size_t before = g.nodes.size();
  std::set<std::string> names;
  for (auto& n : g.nodes) names.insert(n.name);
  g.remove_dead_nodes();
  for (auto& n : g.nodes) names.erase(n.name);
  for (auto& name : names) r.push_back({"dead-code", name, true, "removed: reaches no output"});
  (void)before;
}

}  // namespace dlakit::passes
