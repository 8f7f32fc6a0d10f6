#include "ir/graph.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <sstream>
#include <unordered_map>

#include "base/error.h"

namespace dlakit {

namespace {
struct OpEntry {
  const char* name;
  const char* family;
};
constexpr OpEntry kOps[] = {
#define DLAKIT_OP(e, name, family) {name, #family},
#include "ir/ops.def"
#undef DLAKIT_OP
};
}  // namespace

const char* op_name(OpKind op) { return kOps[size_t(op)].name; }
const char* op_family(OpKind op) { return kOps[size_t(op)].family; }

std::optional<OpKind> op_from_name(const std::string& n) {
  static const std::unordered_map<std::string, OpKind> table = [] {
    std::unordered_map<std::string, OpKind> t;
    for (int i = 0; i < kNumOps; ++i) t[kOps[i].name] = OpKind(i);
    return t;
  }();
  auto it = table.find(n);
  if (it == table.end()) return std::nullopt;
  return it->second;
}

int64_t Node::attr_int(const std::string& a, int64_t dflt) const {
  auto it = attrs.find(a);
  if (it == attrs.end()) return dflt;
  if (auto* v = std::get_if<int64_t>(&it->second)) return *v;
  fail(Status::kParseError, label(), ": attribute '", a, "' must be an int");
}
float Node::attr_float(const std::string& a, float dflt) const {
  auto it = attrs.find(a);
  if (it == attrs.end()) return dflt;
  if (auto* v = std::get_if<float>(&it->second)) return *v;
  if (auto* v = std::get_if<int64_t>(&it->second)) return float(*v);
  fail(Status::kParseError, label(), ": attribute '", a, "' must be a float");
}
std::string Node::attr_str(const std::string& a, const std::string& dflt) const {
  auto it = attrs.find(a);
  if (it == attrs.end()) return dflt;
  if (auto* v = std::get_if<std::string>(&it->second)) return *v;
  fail(Status::kParseError, label(), ": attribute '", a, "' must be a string");
}
std::vector<int64_t> Node::attr_ints(const std::string& a, std::vector<int64_t> dflt) const {
  auto it = attrs.find(a);
  if (it == attrs.end()) return dflt;
  if (auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  if (auto* v = std::get_if<int64_t>(&it->second)) return {*v};
  fail(Status::kParseError, label(), ": attribute '", a, "' must be a list of ints");
}
std::vector<float> Node::attr_floats(const std::string& a, std::vector<float> dflt) const {
  auto it = attrs.find(a);
  if (it == attrs.end()) return dflt;
  if (auto* v = std::get_if<std::vector<float>>(&it->second)) return *v;
  if (auto* v = std::get_if<float>(&it->second)) return {*v};
  fail(Status::kParseError, label(), ": attribute '", a, "' must be a list of floats");
}
const Tensor* Node::attr_tensor(const std::string& a) const {
  auto it = attrs.find(a);
  if (it == attrs.end()) return nullptr;
  return std::get_if<Tensor>(&it->second);
}
std::string Node::label() const { return cat(op_name(op), " '", name, "'"); }

int Graph::add_value(std::string name, TensorType type) {
  values.push_back(Value{std::move(name), std::move(type), std::nullopt, -1});
  return int(values.size()) - 1;
}

int Graph::add_constant(std::string name, Tensor t) {
  TensorType ty = t.type();
  int id = add_value(std::move(name), ty);
  values.back().constant = std::move(t);
  return id;
}

std::optional<int> Graph::find_value(const std::string& name) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == name) return int(i);
  return std::nullopt;
}

void Graph::relink() {
  for (auto& v : values) v.producer = -1;
  for (size_t n = 0; n < nodes.size(); ++n)
    for (int o : nodes[n].outputs)
      if (o >= 0) values[size_t(o)].producer = int(n);
}

void Graph::topological_sort() {
  // Kahn's algorithm with a min-heap on the original index: stable for already-sorted graphs.
  std::unordered_map<int, int> producer;
  for (size_t n = 0; n < nodes.size(); ++n)
    for (int o : nodes[n].outputs)
      if (o >= 0) producer[o] = int(n);
  std::vector<int> indeg(nodes.size(), 0);
  std::vector<std::vector<int>> users(nodes.size());
  for (size_t n = 0; n < nodes.size(); ++n)
    for (int i : nodes[n].inputs) {
      auto it = producer.find(i);
      if (i >= 0 && it != producer.end()) {
        ++indeg[n];
        users[size_t(it->second)].push_back(int(n));
      }
    }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (size_t n = 0; n < nodes.size(); ++n)
    if (indeg[n] == 0) ready.push(int(n));
  std::vector<Node> sorted;
  sorted.reserve(nodes.size());
  while (!ready.empty()) {
    int n = ready.top();
    ready.pop();
    sorted.push_back(std::move(nodes[size_t(n)]));
    for (int u : users[size_t(n)])
      if (--indeg[size_t(u)] == 0) ready.push(u);
  }
  if (sorted.size() != nodes.size()) {
    // Every node left waits on an input whose producer is also left, so walking from one of them to such a
    // producer must come back to a node already seen: that loop is the cycle to name.
    size_t at = 0;
    while (indeg[at] == 0) ++at;
    std::vector<int> seen_at(nodes.size(), -1), path;
    while (seen_at[at] < 0) {
      seen_at[at] = int(path.size());
      path.push_back(int(at));
      for (int i : nodes[at].inputs)
        if (auto it = producer.find(i); i >= 0 && it != producer.end() && indeg[size_t(it->second)] > 0) {
          at = size_t(it->second);
          break;
        }
    }
    std::string cycle;
    for (size_t k = size_t(seen_at[at]); k < path.size(); ++k)
      cycle += cat(nodes[size_t(path[k])].label(), " <- ");
    fail(Status::kParseError, "graph has a cycle: ", cycle, nodes[at].label(),
         " (each node reads the output of the one after it)");
  }
  nodes = std::move(sorted);
  relink();
}

int Graph::remove_dead_nodes() {
  std::vector<char> live_value(values.size(), 0);
  for (int o : outputs) live_value[size_t(o)] = 1;
  std::vector<char> keep(nodes.size(), 0);
  for (size_t k = nodes.size(); k-- > 0;) {
    bool live = false;
    for (int o : nodes[k].outputs)
      if (o >= 0 && live_value[size_t(o)]) live = true;
    if (!live) continue;
    keep[k] = 1;
    for (int i : nodes[k].inputs)
      if (i >= 0) live_value[size_t(i)] = 1;
  }
  std::vector<Node> kept;
  for (size_t k = 0; k < nodes.size(); ++k)
    if (keep[k]) kept.push_back(std::move(nodes[k]));
  int removed = int(nodes.size() - kept.size());
  nodes = std::move(kept);
  relink();
  return removed;
}

void Graph::verify() const {
  std::vector<int> seen_producer(values.size(), -1);
  std::vector<char> available(values.size(), 0);
  for (size_t v = 0; v < values.size(); ++v)
    if (values[v].constant) {
      available[v] = 1;
      DLAKIT_CHECK(values[v].constant->type() == values[v].type, Status::kInternal, "constant '",
                   values[v].name, "' has type ", type_str(values[v].constant->type()),
                   " but its value says ", type_str(values[v].type));
    }
  for (int i : inputs) {
    DLAKIT_CHECK(i >= 0 && size_t(i) < values.size(), Status::kInternal, "graph input id ", i,
                 " out of range");
    available[size_t(i)] = 1;
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node& node = nodes[n];
    for (int i : node.inputs) {
      if (i < 0) continue;
      DLAKIT_CHECK(size_t(i) < values.size(), Status::kInternal, node.label(), ": input id ", i,
                   " out of range");
      DLAKIT_CHECK(available[size_t(i)], Status::kInternal, node.label(), ": input '", values[size_t(i)].name,
                   "' is used before it is produced");
    }
    for (int o : node.outputs) {
      if (o < 0) continue;
      DLAKIT_CHECK(size_t(o) < values.size(), Status::kInternal, node.label(), ": output id ", o,
                   " out of range");
      DLAKIT_CHECK(seen_producer[size_t(o)] < 0 && !values[size_t(o)].constant, Status::kInternal, "value '",
                   values[size_t(o)].name, "' has more than one producer");
      seen_producer[size_t(o)] = int(n);
      available[size_t(o)] = 1;
    }
  }
  for (int o : outputs)
    DLAKIT_CHECK(o >= 0 && size_t(o) < values.size() && available[size_t(o)], Status::kInternal,
                 "graph output id ", o, " is never produced");
}

std::string Graph::to_text() const {
  std::ostringstream os;
  auto vname = [&](int id) { return id < 0 ? std::string("<none>") : "%" + values[size_t(id)].name; };
  os << "graph opset=" << opset << " producer=\"" << producer << "\" nodes=" << nodes.size() << "\n";
  for (int i : inputs) os << "  input  " << vname(i) << " : " << type_str(values[size_t(i)].type) << "\n";
  int consts = 0;
  for (auto& v : values) consts += v.constant ? 1 : 0;
  os << "  constants: " << consts << " (" << parameter_count() << " parameters)\n";
  for (const Node& n : nodes) {
    os << "  ";
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      os << (k ? ", " : "") << vname(n.outputs[k]);
      if (n.outputs[k] >= 0) os << ":" << type_str(values[size_t(n.outputs[k])].type);
    }
    os << " = " << op_name(n.op) << "(";
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      os << (k ? ", " : "") << vname(n.inputs[k]);
      if (n.inputs[k] >= 0 && values[size_t(n.inputs[k])].constant) os << "=const";
    }
    os << ")";
    if (!n.attrs.empty()) {
      os << " {";
      bool first = true;
      for (auto& [k, a] : n.attrs) {
        os << (first ? "" : ", ") << k << "=";
        first = false;
        std::visit(
            [&](auto&& x) {
              using T = std::decay_t<decltype(x)>;
              if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, float>)
                os << x;
              else if constexpr (std::is_same_v<T, std::string>)
                os << '"' << x << '"';
              else if constexpr (std::is_same_v<T, Tensor>)
                os << "tensor " << type_str(x.type());
              else {
                os << "[";
                for (size_t i = 0; i < x.size(); ++i) os << (i ? "," : "") << x[i];
                os << "]";
              }
            },
            a);
      }
      os << "}";
    }
    os << "  # " << n.name << "\n";
  }
  for (int o : outputs) os << "  output " << vname(o) << " : " << type_str(values[size_t(o)].type) << "\n";
  return os.str();
}

int64_t Graph::parameter_count() const {
  std::vector<char> used(values.size(), 0);
  for (auto& n : nodes)
    for (int i : n.inputs)
      if (i >= 0) used[size_t(i)] = 1;
  int64_t count = 0;
  for (size_t v = 0; v < values.size(); ++v)
    if (used[v] && values[v].constant && is_float(values[v].type.dtype)) count += values[v].constant->numel();
  return count;
}

std::optional<std::pair<float, float>> clip_bounds(const Graph& g, const Node& n) {
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  if (n.opset < 11) return std::make_pair(n.attr_float("min", lo), n.attr_float("max", hi));
  for (size_t i = 1; i < 3 && i < n.inputs.size(); ++i) {
    if (n.inputs[i] < 0) continue;
    const Value& v = g.value(n.inputs[i]);
    if (!v.constant) return std::nullopt;
    (i == 1 ? lo : hi) = float(v.constant->at_f64(0));
  }
  return std::make_pair(lo, hi);
}

}  // namespace dlakit
