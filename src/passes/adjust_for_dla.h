// adjust-for-dla: exact rewrites that turn layers the DLA cannot run (or runs only by an unconfirmed rule)
// into equivalent layers it can, as TensorRT 10.16's opt-in --adjustForDLA parser flag does
// (../shared/specs/dla-constraints.md §3.1), here on by default and with a remark for each. A rewrite
// matches one node and proposes nodes that replace it; the driver (adjust_for_dla.cpp) keeps them only
// when every new node passes the DLA rules of the chosen target and precision.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "passes/passes.h"
#include "targets/dla/limits.h"

namespace dlakit::adjust {

struct Context {
  const dla::DlaLimits& limits;
  dla::Precision precision;
};

// What a rewrite proposes for one node.
struct Proposal {
  std::vector<Node> nodes;  // replace the node, in order; the last ones write the node's outputs
  int forward_from = -1;    // with no nodes: the node is a no-op, its readers read this value instead
  std::string what;         // "GlobalAveragePool over 16x16 -> AveragePool 8x8/8, AveragePool 2x2/2"
  std::string why;          // the DLA rule it satisfies, with its source
};

// A rewrite's answer: nothing (not a match), a proposal, or why a matching node is left alone.
struct Attempt {
  std::optional<Proposal> proposal;
  std::string declined;
  static Attempt none() { return {}; }
  static Attempt decline(std::string why) { return {std::nullopt, std::move(why)}; }
  static Attempt propose(Proposal p) { return {std::move(p), ""}; }
};

struct Rewrite {
  const char* name;  // accepted by --disable-pass
  const char* summary;
  // May add values and constants to g (dropped again when the proposal is not kept); never edits nodes.
  Attempt (*apply)(Graph& g, const Node& n, const Context& c);
};

// The rewrites, in the order they run.
const std::vector<Rewrite>& rewrites();

// Builds replacement nodes named after the node they replace; output types come from the ops' own shape
// inference, and a node that writes one of the original outputs must give it the original type.
class NodeBuilder {
 public:
  NodeBuilder(Graph& g, const Node& site) : g_(g), base_(site.name), opset_(site.opset) {}
  int constant(const std::string& suffix, Tensor t);
  int i64s(const std::string& suffix, const std::vector<int64_t>& v);  // a 1-D int64 constant
  // Adds a node; its output is `output` (an existing value) or a new one. Returns the output's id.
  int add(OpKind op, const std::string& suffix, std::vector<int> inputs,
          std::map<std::string, Attribute> attrs = {}, int output = -1);
  std::vector<Node> take() { return std::move(nodes_); }

 private:
  Graph& g_;
  std::string base_;
  int opset_;
  std::vector<Node> nodes_;
};

// Pieces the rewrites share.
const Tensor* constant_input(const Graph& g, const Node& n, size_t i);
std::string window_str(int64_t h, int64_t w);  // "8x8"
Attempt rewrite_pool_stages(Graph& g, const Node& n, const Context& c);
Attempt rewrite_reduce_as_pool(Graph& g, const Node& n, const Context& c);
Attempt rewrite_broadcast_constant(Graph& g, const Node& n, const Context& c);
Attempt rewrite_div_by_constant(Graph& g, const Node& n, const Context& c);
Attempt rewrite_sqrt_as_pow(Graph& g, const Node& n, const Context& c);
Attempt rewrite_square_as_mul(Graph& g, const Node& n, const Context& c);
Attempt rewrite_noop_layer(Graph& g, const Node& n, const Context& c);
Attempt rewrite_transpose_before_reshape(Graph& g, const Node& n, const Context& c);
Attempt rewrite_last_axis_mean(Graph& g, const Node& n, const Context& c);
Attempt rewrite_broadcast_by_fc(Graph& g, const Node& n, const Context& c);

}  // namespace dlakit::adjust
