// The adjust-for-dla driver: runs each rewrite over the graph, splices a proposal in, and keeps it only
// when every node it adds can run on the target's DLA; otherwise restores the graph. Either way it leaves
// a remark (what, where, why, and the rule the rewrite satisfies or the reason it was not kept).
#include "passes/adjust_for_dla.h"

#include <algorithm>
#include <cstdio>

#include "kernels/registry.h"
#include "passes/graph_edit.h"

namespace dlakit::adjust {

int NodeBuilder::constant(const std::string& suffix, Tensor t) {
  return g_.add_constant(fresh_name(g_, base_ + "/" + suffix), std::move(t));
}

int NodeBuilder::i64s(const std::string& suffix, const std::vector<int64_t>& v) {
  return constant(suffix, Tensor::from_i64({int64_t(v.size())}, v));
}

int NodeBuilder::add(OpKind op, const std::string& suffix, std::vector<int> inputs,
                     std::map<std::string, Attribute> attrs, int output) {
  Node n;
  n.op = op;
  n.name = base_ + "/" + suffix;
  n.opset = opset_;
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  const std::vector<TensorType> types = op_impl(op).infer(InferContext(g_, n));
  if (output >= 0) {
    DLAKIT_CHECK(g_.value(output).type == types[0], Status::kInternal, "adjust-for-dla: ", n.label(),
                 " would give '", g_.value(output).name, "' type ", type_str(types[0]), " instead of ",
                 type_str(g_.value(output).type));
  } else {
    output = g_.add_value(fresh_name(g_, n.name + "_output"), types[0]);
  }
  n.outputs = {output};
  nodes_.push_back(std::move(n));
  return output;
}

const Tensor* constant_input(const Graph& g, const Node& n, size_t i) {
  if (i >= n.inputs.size() || n.inputs[i] < 0) return nullptr;
  const Value& v = g.value(n.inputs[i]);
  return v.constant ? &*v.constant : nullptr;
}

std::string window_str(int64_t h, int64_t w) { return std::to_string(h) + "x" + std::to_string(w); }

const std::vector<Rewrite>& rewrites() {
  static const std::vector<Rewrite> r = {
      {"noop-layers", "drop a Pad of zeros and a one-input Concat (no DLA layer takes them; both copy)",
       rewrite_noop_layer},
      {"reduce-as-pool", "ReduceMean/ReduceMax over H and/or W -> pooling (then pool-stages)",
       rewrite_reduce_as_pool},
      {"pool-stages",
       "global pools and pools with windows over 8 -> pooling stages whose windows factor the original, "
       "or a depthwise convolution with 1/N weights",
       rewrite_pool_stages},
      {"div-by-constant", "Div by a constant -> Mul by its reciprocal, on chips without a native Div",
       rewrite_div_by_constant},
      {"sqrt-as-pow", "Sqrt -> Pow(x, 0.5), on chips with a native ElementWise Pow", rewrite_sqrt_as_pow},
      {"square-as-mul", "Pow(x, 2) -> Mul(x, x), on chips without a native ElementWise Pow",
       rewrite_square_as_mul},
      {"broadcast-constant",
       "an element-wise constant the DLA cannot broadcast -> the same values as a scalar, [1,C,1,1] or "
       "the full shape",
       rewrite_broadcast_constant},
      {"transpose-before-reshape",
       "a rank-3 Transpose of a 4-D tensor reshaped to 3-D -> the 4-D Transpose, then the reshape",
       rewrite_transpose_before_reshape},
      {"last-axis-mean", "ReduceMean over the last axis of a rank-3 tensor -> MatMul by a 1/N column",
       rewrite_last_axis_mean},
      {"broadcast-by-fc",
       "Sub/Div/Mul/Add of a rank-3 tensor by its per-row [N,T,1] statistic -> the statistic expanded by a "
       "MatMul with a row of ones",
       rewrite_broadcast_by_fc},
  };
  return r;
}

namespace {

// The first reason a spliced node cannot run on the DLA, as one line; "" when they all can.
std::string first_refusal(const Graph& g, size_t begin, size_t count, const Context& c) {
  for (size_t k = begin; k < begin + count; ++k) {
    const Node& n = g.nodes[k];
    const dla::Capability cap = dla::check_node(g, n, c.limits, c.precision);
    if (cap.ok()) continue;
    const dla::Reason& r = cap.reasons[0];
    return "the new " + n.label() + " would not run on " + c.limits.chip + "'s DLA (" +
           dla::reason_code_name(r.code) + ": " + r.field + " = " + r.actual + ", limit " + r.limit + ")";
  }
  return "";
}

bool disabled(const PassOptions& o, const char* name) {
  return std::find(o.disabled.begin(), o.disabled.end(), name) != o.disabled.end();
}

}  // namespace

}  // namespace dlakit::adjust

namespace dlakit::passes {

void adjust_for_dla(Graph& g, const PassOptions& o, std::vector<Remark>& r) {
  const adjust::Context ctx{dla::limits_for(o.target), o.precision};
  for (const adjust::Rewrite& rw : adjust::rewrites()) {
    if (adjust::disabled(o, rw.name)) continue;
    const std::string pass = std::string("adjust-for-dla/") + rw.name;
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      const size_t values_before = g.values.size();
      const std::string site = g.nodes[k].name;
      adjust::Attempt a = rw.apply(g, g.nodes[k], ctx);
      if (!a.proposal) {
        g.values.resize(values_before);
        if (!a.declined.empty()) r.push_back({pass, site, false, a.declined});
        continue;
      }
      adjust::Proposal& p = *a.proposal;
      const std::vector<Node> saved_nodes = g.nodes;
      const std::vector<int> saved_outputs = g.outputs;
      const size_t added = p.nodes.size();
      if (added == 0) {
        replace_uses(g, g.nodes[k].outputs[0], p.forward_from);
        g.nodes.erase(g.nodes.begin() + long(k));
      } else {
        g.nodes.erase(g.nodes.begin() + long(k));
        g.nodes.insert(g.nodes.begin() + long(k), std::make_move_iterator(p.nodes.begin()),
                       std::make_move_iterator(p.nodes.end()));
      }
      g.relink();
      const std::string refusal = adjust::first_refusal(g, k, added, ctx);
      if (!refusal.empty()) {
        g.nodes = saved_nodes;
        g.outputs = saved_outputs;
        g.values.resize(values_before);
        g.relink();
        r.push_back({pass, site, false, "kept the original: " + refusal});
        continue;
      }
      r.push_back({pass, site, true, p.what + "; " + p.why});
      k = k + added - 1;  // continue after the new nodes (a removed node: at the same index)
    }
  }
}

}  // namespace dlakit::passes
