#include "passes/graph_edit.h"

#include <unordered_set>

namespace dlakit {

void replace_uses(Graph& g, int from, int to) {
  for (Node& n : g.nodes)
    for (int& i : n.inputs)
      if (i == from) i = to;
  for (int& o : g.outputs)
    if (o == from) o = to;
}

void remove_nodes(Graph& g, const std::set<int>& drop) {
  std::vector<Node> kept;
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (!drop.count(int(k))) kept.push_back(std::move(g.nodes[k]));
  g.nodes = std::move(kept);
  g.relink();
}

std::string fresh_name(const Graph& g, const std::string& base) {
  std::unordered_set<std::string> names;
  for (const Value& v : g.values) names.insert(v.name);
  if (!names.count(base)) return base;
  for (int i = 1;; ++i)
    if (!names.count(base + "_" + std::to_string(i))) return base + "_" + std::to_string(i);
}

}  // namespace dlakit
