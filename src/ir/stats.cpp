#include "ir/stats.h"

namespace dlakit {

int64_t node_macs(const Graph& g, const Node& n) {
  auto shape = [&](int i) -> const Shape& { return g.value(n.inputs[size_t(i)]).type.shape; };
  const Shape& out = g.value(n.outputs[0]).type.shape;
  switch (n.op) {
    case OpKind::Conv: {  // out elements x (C/G x kernel volume)
      const Shape& w = shape(1);
      return numel(out) * numel(Shape(w.begin() + 1, w.end()));
    }
    case OpKind::ConvTranspose: {  // input elements x (M/G x kernel volume)
      const Shape& w = shape(1);
      return numel(shape(0)) * numel(Shape(w.begin() + 1, w.end()));
    }
    case OpKind::Gemm: {
      const Shape& a = shape(0);
      const int64_t k = n.attr_int("transA", 0) ? a[0] : a[1];
      return numel(out) * k;
    }
    case OpKind::MatMul:
      return numel(out) * shape(0).back();
    default:
      return 0;
  }
}

int64_t graph_macs(const Graph& g) {
  int64_t total = 0;
  for (const Node& n : g.nodes) total += node_macs(g, n);
  return total;
}

std::map<std::string, int> op_histogram(const Graph& g) {
  std::map<std::string, int> h;
  for (const Node& n : g.nodes) ++h[op_name(n.op)];
  return h;
}

}  // namespace dlakit
