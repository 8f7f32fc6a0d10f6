#include "latency/lower.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "ir/stats.h"
#include "latency/model.h"

namespace dlakit::latency {
namespace {

enum class Kind { kConv, kSdp, kLut, kPdp, kCdp, kRubik, kBdma, kAlias };

Kind kind_of(const Graph& g, const Node& n) {
  switch (n.op) {
    case OpKind::Conv:
    case OpKind::ConvTranspose:
    case OpKind::Gemm:
    case OpKind::MatMul:
      return Kind::kConv;
    case OpKind::Sigmoid:
    case OpKind::Tanh:
    case OpKind::Elu:
    case OpKind::Softplus:
    case OpKind::Exp:
    case OpKind::Log:
    case OpKind::Erf:
    case OpKind::Sqrt:
    case OpKind::Reciprocal:
    case OpKind::Pow:
    case OpKind::Softmax:
      return Kind::kLut;
    case OpKind::MaxPool:
    case OpKind::AveragePool:
    case OpKind::GlobalAveragePool:
    case OpKind::GlobalMaxPool:
    case OpKind::ReduceMean:
    case OpKind::ReduceMax:
    case OpKind::ReduceSum:
      return Kind::kPdp;
    case OpKind::LRN:
      return Kind::kCdp;
    case OpKind::Concat:
    case OpKind::Identity:
    case OpKind::Dropout:
      return Kind::kAlias;
    case OpKind::Reshape:
    case OpKind::Flatten:
    case OpKind::Squeeze:
    case OpKind::Unsqueeze: {
      // Free when the DLA layout does not change (same channels, same plane): [N,C,1,1] -> [N,C].
      const Dims a = dims_of(g.value(n.inputs[0]).type.shape), b = dims_of(g.value(n.outputs[0]).type.shape);
      return a.n == b.n && a.c == b.c && a.h * a.w == b.h * b.w ? Kind::kAlias : Kind::kRubik;
    }
    case OpKind::Transpose:
      return Kind::kRubik;
    case OpKind::Slice:
    case OpKind::Split:
    case OpKind::Pad:
    case OpKind::Resize:
    case OpKind::Upsample:
    case OpKind::Gather:
    case OpKind::Cast:
      return Kind::kBdma;
    default:
      return Kind::kSdp;  // element-wise, activations, BatchNormalization, unary
  }
}

Engine engine_of(Kind k) {
  switch (k) {
    case Kind::kConv:
      return Engine::kConv;
    case Kind::kPdp:
      return Engine::kPdp;
    case Kind::kCdp:
      return Engine::kCdp;
    case Kind::kRubik:
      return Engine::kRubik;
    case Kind::kBdma:
      return Engine::kBdma;
    default:
      return Engine::kSdp;
  }
}

OpPrecision precision_of(const LayerPlacement& l) {
  return l.precision == dla::Precision::kINT8 ? OpPrecision::kInt8 : OpPrecision::kFp16;
}

std::string layer_label(const Node& n) {
  std::string s = op_name(n.op);
  if (n.has("dlakit_activation")) s.append("+").append(n.attr_str("dlakit_activation", ""));
  return s;
}

// Bytes of an SDP operand stored for the DLA: Orin keeps non-conv weights as FP19 in 4-byte containers
// with channels padded to 16 (FP16) / 32 (INT8) (dla-constraints.md 1.2, DOC85). Scalars are registers.
int64_t operand_bytes(const Shape& s, const Dims& out, OpPrecision p) {
  const int64_t n = numel(s);
  if (n <= 1) return 0;
  const int64_t atom = p == OpPrecision::kInt8 ? 32 : 16;
  const int64_t padded_c = (out.c + atom - 1) / atom * atom;
  if (n == out.c) return padded_c * 4;  // per channel
  return n / std::max<int64_t>(out.c, 1) * padded_c * 4;
}

struct Lowering {
  const Graph& g;
  const Placement& p;
  int segment;
  const LowerOptions& opt;
  std::vector<std::vector<int>> readers;  // value -> reading nodes
  std::vector<int> alias;                 // value -> the value whose surface it shares (itself if none)
  std::set<int> graph_outputs;

  Lowering(const Graph& g_, const Placement& p_, int s, const LowerOptions& o)
      : g(g_), p(p_), segment(s), opt(o), readers(g_.values.size()), alias(g_.values.size()) {
    for (size_t k = 0; k < g.nodes.size(); ++k)
      for (int v : g.nodes[k].inputs)
        if (v >= 0) readers[size_t(v)].push_back(int(k));
    graph_outputs.insert(g.outputs.begin(), g.outputs.end());
    std::iota(alias.begin(), alias.end(), 0);
  }

  bool in_segment(int node) const { return p.layers[size_t(node)].segment == segment; }
  bool activation(int v) const { return v >= 0 && !g.value(v).constant; }
  int root(int v) const {
    while (alias[size_t(v)] != v) v = alias[size_t(v)];
    return v;
  }
  Kind kind(int node) const { return kind_of(g, g.nodes[size_t(node)]); }

  // The storage precision of a value: its DLA producer's, else (segment input) its first reader's here.
  OpPrecision value_precision(int v) const {
    const int pr = g.value(v).producer;
    if (pr >= 0 && in_segment(pr)) {
      if (kind(pr) == Kind::kAlias && !g.nodes[size_t(pr)].inputs.empty())
        return value_precision(g.nodes[size_t(pr)].inputs[0]);
      return precision_of(p.layers[size_t(pr)]);
    }
    if (pr < 0) return opt.input_precision;
    for (int r : readers[size_t(v)])
      if (in_segment(r)) return precision_of(p.layers[size_t(r)]);
    return opt.input_precision;
  }
  bool is_image(int v) const {
    return opt.image_input && g.value(v).producer < 0 &&
           std::find(g.inputs.begin(), g.inputs.end(), v) != g.inputs.end() &&
           dims_of(g.value(v).type.shape).c <= 4;
  }
  int64_t bytes(int v) const {
    OpPrecision prec = value_precision(v);
    if (graph_outputs.count(v)) prec = opt.output_precision;
    return surface_bytes(dims_of(g.value(v).type.shape), prec, is_image(v));
  }

  // Concat inputs made here and read only by the concat become views of its output; identities alias.
  void build_aliases(const std::vector<int>& nodes) {
    for (int k : nodes) {
      const Node& n = g.nodes[size_t(k)];
      if (kind(k) != Kind::kAlias || n.outputs.empty() || n.outputs[0] < 0) continue;
      if (n.op == OpKind::Concat) {
        for (int v : n.inputs)
          if (activation(v) && g.value(v).producer >= 0 && in_segment(g.value(v).producer) &&
              readers[size_t(v)].size() == 1 && !graph_outputs.count(v))
            alias[size_t(v)] = n.outputs[0];
      } else if (activation(n.inputs[0])) {
        alias[size_t(n.outputs[0])] = n.inputs[0];
      }
    }
  }

  // Grows a group from `anchor`: element-wise layers into the SDP (at most three: the X1, X2 and Y
  // sub-units), then one pooling layer into the PDP; every value but the last stays inside the group.
  std::vector<int> grow(int anchor, const std::vector<int>& group_of) const {
    std::vector<int> group{anchor};
    const Kind ak = kind(anchor);
    if (ak != Kind::kConv && ak != Kind::kSdp && ak != Kind::kLut) return group;
    int sdp = ak == Kind::kConv ? 0 : 1, external = 0;
    bool pooled = false;
    std::set<int> made;  // values produced in the group
    auto add_outputs = [&](int k) {
      for (int o : g.nodes[size_t(k)].outputs)
        if (o >= 0) made.insert(o);
    };
    add_outputs(anchor);
    while (!pooled) {
      int best = -1, best_external = 0;
      for (int v : made)
        for (int r : readers[size_t(v)]) {
          if (group_of[size_t(r)] >= 0 || !in_segment(r) || (best >= 0 && r >= best) ||
              std::find(group.begin(), group.end(), r) != group.end())
            continue;
          const Kind rk = kind(r);
          const bool sdp_ok = (rk == Kind::kSdp || rk == Kind::kLut) && sdp < 3;
          if (!sdp_ok && rk != Kind::kPdp) continue;
          int ext = 0;
          for (int in : g.nodes[size_t(r)].inputs)
            if (activation(in) && !made.count(in)) ++ext;
          if (external + ext > 1 || (rk == Kind::kPdp && ext > 0)) continue;
          best = r, best_external = ext;
        }
      if (best < 0) break;
      group.push_back(best);
      external += best_external;
      if (kind(best) == Kind::kPdp)
        pooled = true;
      else
        ++sdp;
      add_outputs(best);
    }
    // Keep the longest prefix in which only the last layer's output leaves the group.
    for (size_t len = group.size(); len > 1; --len) {
      std::set<int> inside(group.begin(), group.begin() + long(len));
      bool ok = true;
      for (size_t i = 0; i + 1 < len && ok; ++i)
        for (int o : g.nodes[size_t(group[i])].outputs) {
          if (o < 0) continue;
          if (graph_outputs.count(o)) ok = false;
          for (int r : readers[size_t(o)]) ok = ok && inside.count(r);
        }
      if (ok) {
        group.resize(len);
        return group;
      }
    }
    group.resize(1);
    return group;
  }

  HwOp make_op(const std::vector<int>& group) const {
    const Node& a = g.nodes[size_t(group[0])];
    const Kind ak = kind(group[0]);
    HwOp op;
    op.engine = engine_of(ak);
    op.precision = precision_of(p.layers[size_t(group[0])]);
    int main_in = -1;
    for (int v : a.inputs)
      if (activation(v)) {
        main_in = v;
        break;
      }
    const Node& last = g.nodes[size_t(group.back())];
    const int out = last.outputs.empty() ? -1 : last.outputs[0];
    op.input = main_in >= 0 ? dims_of(g.value(main_in).type.shape) : Dims{};
    op.output = out >= 0 ? dims_of(g.value(out).type.shape) : op.input;
    for (int k : group) {
      const Node& n = g.nodes[size_t(k)];
      op.layers.push_back(n.name);
      if (!op.fused.empty()) op.fused += '+';
      op.fused += layer_label(n);
      op.macs += node_macs(g, n);
      op.lut = op.lut || kind(k) == Kind::kLut;
      if (n.op == OpKind::Softmax) op.element_passes = 3;  // max, exp-sum, scale (assumption)
      if (kind(k) == Kind::kConv) continue;
      for (int v : n.inputs)
        if (v >= 0 && g.value(v).constant)
          op.weight_bytes += operand_bytes(g.value(v).type.shape, op.output, op.precision);
    }
    if (ak == Kind::kConv) conv_shape(a, op);
    if (ak == Kind::kPdp) pool_shape(a, op);
    return op;
  }

  void conv_shape(const Node& n, HwOp& op) const {
    const int bpe = op.precision == OpPrecision::kInt8 ? 1 : 2;
    const Value& w = g.value(n.inputs[1]);
    const int64_t kernel_elems = numel(w.type.shape);
    op.weight_bytes += kernel_elems * bpe;
    const int atom = op.precision == OpPrecision::kInt8 ? 32 : 16;
    const int64_t bias_bytes = (op.output.c + atom - 1) / atom * atom * 4;
    if (n.inputs.size() > 2 && n.inputs[2] >= 0) op.weight_bytes += bias_bytes;
    if (op.precision == OpPrecision::kInt8) op.weight_bytes += bias_bytes;  // per-channel requantization
    if (n.op == OpKind::Gemm || n.op == OpKind::MatMul) return;             // a 1x1 convolution
    const auto kernel = n.attr_ints("kernel_shape", {w.type.shape.size() > 2 ? w.type.shape[2] : 1,
                                                     w.type.shape.size() > 3 ? w.type.shape[3] : 1});
    const auto strides = n.attr_ints("strides", {1, 1}), dilations = n.attr_ints("dilations", {1, 1});
    if (n.op == OpKind::ConvTranspose) {
      // The open NVDLA runs a deconvolution as a convolution to C_out x kh x kw channels at the input's
      // resolution, contracted by RUBIK on the way out.
      op.output = {op.input.n, w.type.shape[1] * kernel[0] * (kernel.size() > 1 ? kernel[1] : 1), op.input.h,
                   op.input.w};
      return;
    }
    op.kernel_h = int(kernel[0]), op.kernel_w = int(kernel.size() > 1 ? kernel[1] : 1);
    op.stride_h = int(strides[0]), op.stride_w = int(strides.size() > 1 ? strides[1] : 1);
    op.dilation_h = int(dilations[0]), op.dilation_w = int(dilations.size() > 1 ? dilations[1] : 1);
    op.groups = int(n.attr_int("group", 1));
    op.image_input = is_image(n.inputs[0]);
  }

  void pool_shape(const Node& n, HwOp& op) const {
    const auto kernel = n.attr_ints("kernel_shape", {op.input.h, op.input.w});
    const auto strides = n.attr_ints("strides", kernel);
    op.kernel_h = int(kernel[0]), op.kernel_w = int(kernel.size() > 1 ? kernel[1] : 1);
    op.stride_h = int(strides[0]), op.stride_w = int(strides.size() > 1 ? strides[1] : 1);
  }

  LoweredSegment run() {
    const Segment& seg = p.segments.at(size_t(segment));
    LoweredSegment r;
    r.op_of_node.assign(g.nodes.size(), -1);
    build_aliases(seg.nodes);
    std::vector<int> group_of(g.nodes.size(), -1);
    std::vector<std::vector<int>> groups;
    for (int k : seg.nodes) {
      if (group_of[size_t(k)] >= 0 || kind(k) == Kind::kAlias) continue;
      std::vector<int> grp = grow(k, group_of);
      for (int m : grp) group_of[size_t(m)] = int(groups.size());
      groups.push_back(grp);
    }
    // Memory plan: where each surface (alias root) lives, and until which operation it is read.
    std::map<int, int> last_read;  // root -> last group reading it
    std::set<int> pinned_dram;     // roots that must be in DRAM: network or segment I/O
    for (size_t gi = 0; gi < groups.size(); ++gi)
      for (int k : groups[gi])
        for (int v : g.nodes[size_t(k)].inputs)
          if (activation(v)) last_read[root(v)] = int(gi);
    for (size_t v = 0; v < g.values.size(); ++v) {
      if (!activation(int(v))) continue;
      const int pr = g.value(int(v)).producer;
      bool leaves = graph_outputs.count(int(v)) > 0 || pr < 0 || !in_segment(pr);
      for (int rd : readers[v]) leaves = leaves || !in_segment(rd);
      if (leaves) pinned_dram.insert(root(int(v)));
    }
    std::map<int, bool> in_sram;  // root -> placed in SRAM
    std::map<int, int64_t> live;  // SRAM roots -> bytes
    int64_t live_bytes = 0;
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      const std::vector<int>& grp = groups[gi];
      HwOp op = make_op(grp);
      std::set<int> inside(grp.begin(), grp.end()), made;
      for (int k : grp)
        for (int o : g.nodes[size_t(k)].outputs)
          if (o >= 0) made.insert(o);
      std::set<int> reads;
      for (int k : grp)
        for (int v : g.nodes[size_t(k)].inputs)
          if (activation(v) && !made.count(v)) reads.insert(v);
      for (int v : reads)
        (in_sram.count(root(v)) && in_sram[root(v)] ? op.sram_read : op.dram_read) += bytes(v);
      for (int v : made) {
        bool escapes = graph_outputs.count(v) > 0;
        for (int rd : readers[size_t(v)]) escapes = escapes || !inside.count(rd);
        if (!escapes) continue;
        const int rt = root(v);
        if (!in_sram.count(rt)) {
          const int64_t size = bytes(rt);
          const bool fits = !pinned_dram.count(rt) && live_bytes + size <= opt.sram_bytes;
          in_sram[rt] = fits;
          if (fits) live[rt] = size, live_bytes += size;
        }
        (in_sram[rt] ? op.sram_written : op.dram_written) += bytes(v);
      }
      for (int k : grp) r.op_of_node[size_t(k)] = int(r.ops.size());
      r.ops.push_back(std::move(op));
      for (auto it = live.begin(); it != live.end();)  // free what no later operation reads
        if (last_read.count(it->first) == 0 || last_read[it->first] <= int(gi)) {
          live_bytes -= it->second;
          it = live.erase(it);
        } else {
          ++it;
        }
    }
    return r;
  }
};

}  // namespace

Dims dims_of(const Shape& s) {
  const size_t r = s.size();
  if (r == 0) return {};
  if (r == 1) return {1, s[0], 1, 1};
  if (r == 2) return {s[0], s[1], 1, 1};
  Dims d;
  d.w = s[r - 1], d.h = s[r - 2], d.c = s[r - 3];
  d.n = 1;
  for (size_t i = 0; i + 3 < r; ++i) d.n *= s[i];
  return d;
}

LoweredSegment lower_dla_segment(const Graph& g, const Placement& p, int segment, const LowerOptions& opt) {
  if (segment < 0 || size_t(segment) >= p.segments.size() ||
      p.segments[size_t(segment)].device != Device::kDLA)
    fail(Status::kInvalidArgument, "latency model: segment ", segment,
         " is not a DLA segment of the placement");
  return Lowering(g, p, segment, opt).run();
}

}  // namespace dlakit::latency
