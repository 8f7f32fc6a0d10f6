// The graph IR: values (typed, optionally constant), nodes with typed attributes, graph I/O.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ir/tensor.h"
#include "ir/types.h"

namespace dlakit {

enum class OpKind : uint16_t {
#define DLAKIT_OP(e, name, family) e,
#include "ir/ops.def"
#undef DLAKIT_OP
};
inline constexpr int kNumOps = 0
#define DLAKIT_OP(e, name, family) +1
#include "ir/ops.def"
#undef DLAKIT_OP
    ;
const char* op_name(OpKind op);    // the ONNX op_type
const char* op_family(OpKind op);  // "conv", "pool", ...
std::optional<OpKind> op_from_name(const std::string& onnx_op_type);

using Attribute = std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>,
                               std::vector<std::string>, Tensor>;

struct Value {
  std::string name;
  TensorType type;
  std::optional<Tensor> constant;  // set for initializers and folded values
  int producer = -1;               // index of the producing node, -1 for graph inputs and constants
};

struct Node {
  OpKind op{};
  std::string name;
  int opset = 0;             // the opset of the ONNX domain this node was imported under
  std::vector<int> inputs;   // value ids; -1 marks an omitted optional input
  std::vector<int> outputs;  // value ids; -1 marks an omitted optional output
  std::map<std::string, Attribute> attrs;

  bool has(const std::string& a) const { return attrs.count(a) != 0; }
  int64_t attr_int(const std::string& a, int64_t dflt) const;
  float attr_float(const std::string& a, float dflt) const;
  std::string attr_str(const std::string& a, const std::string& dflt) const;
  std::vector<int64_t> attr_ints(const std::string& a, std::vector<int64_t> dflt = {}) const;
  std::vector<float> attr_floats(const std::string& a, std::vector<float> dflt = {}) const;
  const Tensor* attr_tensor(const std::string& a) const;
  std::string label() const;  // "Conv 'name'"
};

class Graph {
 public:
  std::vector<Value> values;
  std::vector<Node> nodes;   // kept in topological order by importer and passes
  std::vector<int> inputs;   // value ids of runtime inputs
  std::vector<int> outputs;  // value ids of graph outputs
  int opset = 0;
  std::string producer;

  int add_value(std::string name, TensorType type);
  int add_constant(std::string name, Tensor t);
  const Value& value(int id) const { return values.at(size_t(id)); }
  Value& value(int id) { return values.at(size_t(id)); }
  std::optional<int> find_value(const std::string& name) const;

  // Sorts nodes topologically (stable: keeps file order where the data allows); throws on cycles.
  void topological_sort();
  // Removes nodes whose outputs reach no graph output, and unused values stay but are unreferenced.
  int remove_dead_nodes();
  // Rebuilds Value::producer from nodes.
  void relink();
  // Checks ids, single producers, order, and that every non-constant input is produced first.
  void verify() const;
  // Human-readable dump (--dump=ir).
  std::string to_text() const;

  int64_t parameter_count() const;  // elements of constant float tensors consumed by nodes
};

// Clip's [min, max] whatever the opset (attributes before 11, constant inputs after; absent = +-inf).
// nullopt when a bound is computed at run time.
std::optional<std::pair<float, float>> clip_bounds(const Graph& g, const Node& clip);

}  // namespace dlakit
