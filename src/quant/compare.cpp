#include "quant/compare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "passes/passes.h"

namespace dlakit::quant {

namespace {

struct Acc {
  double rr = 0, ee = 0, re = 0, dd = 0, max_abs = 0;
  void add(const float* r, const float* e, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      const double a = r[i], b = e[i], d = a - b;
      rr += a * a;
      ee += b * b;
      re += a * b;
      dd += d * d;
      max_abs = std::max(max_abs, std::fabs(d));
    }
  }
  TensorError metrics() const {
    TensorError t;
    t.cosine = rr > 0 && ee > 0 ? re / std::sqrt(rr * ee) : (dd == 0 ? 1.0 : 0.0);
    t.rel_l2 = rr > 0 ? std::sqrt(dd / rr) : (dd == 0 ? 0.0 : std::numeric_limits<double>::infinity());
    t.max_abs = max_abs;
    t.sqnr_db = dd > 0 ? 10 * std::log10(rr / dd) : std::numeric_limits<double>::infinity();
    return t;
  }
};

}  // namespace

CompareResult compare_numerics(const Graph& g, const NumericsPlan& plan,
                               const std::vector<TensorMap>& samples,
                               const std::function<void(int, int)>& progress, const MetricSpec& metric) {
  std::vector<Acc> acc(g.values.size()), own(g.values.size());
  std::map<int, Tensor> ref_out;
  // The reference pass also emulates each layer on the reference's own inputs (its own error).
  NumericsRunner alone(g, plan);
  ReferenceEngine ref(g);
  ref.set_node_runner([&](size_t n, const std::vector<const Tensor*>& in) {
    std::vector<Tensor> outs = run_node(g, g.nodes[n], in);
    if (plan.nodes[n].mode != Mode::kFP32) {
      const std::vector<Tensor> e = alone(n, in);
      for (size_t k = 0; k < outs.size(); ++k)
        if (is_float_activation(g, g.nodes[n].outputs[k]) && !outs[k].empty())
          own[size_t(g.nodes[n].outputs[k])].add(outs[k].data<float>(), e[k].data<float>(), outs[k].numel());
    }
    return outs;
  });
  ref.set_observer([&](const Node& n, const std::vector<Tensor>& outs) {
    for (size_t k = 0; k < outs.size(); ++k)
      if (is_float_activation(g, n.outputs[k]) && !outs[k].empty()) ref_out[n.outputs[k]] = outs[k];
  });
  EmulatedEngine emu(g, plan);
  emu.engine().set_observer([&](const Node& n, const std::vector<Tensor>& outs) {
    for (size_t k = 0; k < outs.size(); ++k) {
      auto it = ref_out.find(n.outputs[k]);
      if (it == ref_out.end() || outs[k].empty()) continue;
      acc[size_t(n.outputs[k])].add(it->second.data<float>(), outs[k].data<float>(), outs[k].numel());
      ref_out.erase(it);  // compared: free it
    }
  });
  CompareResult r;
  MetricAccumulator task(metric), cosine(MetricSpec{});
  for (size_t s = 0; s < samples.size(); ++s) {
    const TensorMap want = ref.run(samples[s]);
    const TensorMap got = emu.run(samples[s]);
    task.add(want, got);
    cosine.add(want, got);
    ref_out.clear();
    if (progress) progress(int(s) + 1, int(samples.size()));
  }
  r.samples = int(samples.size());
  r.score = {task.value(), cosine.value(), task.bound(metric.confidence)};
  std::vector<double> value_err(g.values.size(), 0.0);  // graph inputs carry no error
  std::vector<double> positive;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    int out = -1;
    for (int v : n.outputs)
      if (out < 0 && is_float_activation(g, v)) out = v;
    if (out < 0) continue;
    for (int v : n.outputs)
      if (is_float_activation(g, v)) value_err[size_t(v)] = acc[size_t(v)].metrics().rel_l2;
    LayerError e;
    e.node = n.name;
    e.op = op_name(n.op);
    if (n.has("dlakit_activation")) e.op += "+" + n.attr_str("dlakit_activation", "");
    e.tensor = g.value(out).name;
    for (int k : consumers(g, out)) e.readers.push_back(g.nodes[size_t(k)].name);
    std::vector<int> up(n.inputs.begin(), n.inputs.end());  // walk fused inputs back to the convolution
    while (!up.empty()) {
      const int v = up.back();
      up.pop_back();
      if (v < 0 || size_t(v) >= plan.fused.size() || !plan.fused[size_t(v)] || g.value(v).producer < 0)
        continue;
      const Node& p = g.nodes[size_t(g.value(v).producer)];
      e.fused_with.push_back(p.name);
      up.insert(up.end(), p.inputs.begin(), p.inputs.end());
    }
    e.mode = mode_name(plan.nodes[i].mode);
    e.note = plan.nodes[i].note;
    e.err = acc[size_t(out)].metrics();
    e.own = own[size_t(out)].metrics();
    double in_err = 0;
    for (int v : n.inputs)
      if (is_float_activation(g, v)) in_err = std::max(in_err, value_err[size_t(v)]);
    e.step = std::isfinite(e.err.rel_l2) ? e.err.rel_l2 - in_err : 0.0;
    if (e.step > 0) positive.push_back(e.step);
    r.layers.push_back(e);
  }
  auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  r.median_step = median(positive);
  std::vector<double> owns;
  for (const LayerError& e : r.layers)
    if (e.mode != "fp32" && std::isfinite(e.own.rel_l2)) owns.push_back(e.own.rel_l2);
  r.median_own = median(owns);
  // FP32 layers add no error of their own.
  for (LayerError& e : r.layers)
    e.flagged = e.mode != "fp32" && e.own.rel_l2 >= 10 * r.median_own && e.own.rel_l2 >= 0.01;
  for (int o : g.outputs)
    for (const LayerError& e : r.layers)
      if (e.tensor == g.value(o).name) r.outputs.push_back(e);
  return r;
}

namespace {

// Moves `chosen` INT8 layers (with their fused producers and INT8 readers) to FP16 and flagged
// non-INT8 layers to the GPU.
Fix moves_for(const CompareResult& r, const std::vector<const LayerError*>& chosen, const char* why) {
  Fix f;
  std::map<std::string, const LayerError*> by_name;
  for (const LayerError& e : r.layers) by_name[e.node] = &e;
  std::set<std::string> to_fp16, to_gpu;
  auto add_fp16 = [&](const std::string& n) {
    if (to_fp16.insert(n).second) f.layer_precisions += (f.layer_precisions.empty() ? "" : ",") + n + ":fp16";
  };
  for (const LayerError* e : chosen) {
    char buf[220];
    if (e->mode == "int8") {
      add_fp16(e->node);
      for (const std::string& p : e->fused_with) add_fp16(p);
      int readers = 0;
      for (const std::string& rd : e->readers) {
        auto it = by_name.find(rd);
        if (it != by_name.end() && it->second->mode == "int8") {
          add_fp16(rd);
          ++readers;
        }
      }
      std::snprintf(buf, sizeof buf,
                    "has %.4f relative L2 of its own in INT8 (%s) -> FP16 on the DLA, with %d INT8 reader(s)",
                    e->own.rel_l2, why, readers);
    } else {
      if (to_gpu.insert(e->node).second)
        f.layer_devices += (f.layer_devices.empty() ? "" : ",") + e->node + ":GPU";
      std::snprintf(buf, sizeof buf, "has %.4f relative L2 of its own in %s (%s) -> FP32 on the GPU",
                    e->own.rel_l2, e->mode.c_str(), why);
    }
    f.lines.push_back(e->node + " (" + e->op + ") " + buf);
  }
  return f;
}

}  // namespace

Fix propose_fix(const CompareResult& r) {
  std::vector<const LayerError*> chosen;
  for (const LayerError& e : r.layers)
    if (e.flagged) chosen.push_back(&e);
  return moves_for(r, chosen, "flagged");
}

Fix propose_layers(const CompareResult& r, const std::vector<std::string>& layers, const char* why) {
  std::vector<const LayerError*> chosen;
  for (const std::string& name : layers)
    for (const LayerError& e : r.layers)
      if (e.node == name) chosen.push_back(&e);
  return moves_for(r, chosen, why);
}

PlacementOptions with_fix(const PlacementOptions& base, const Fix& f) {
  PlacementOptions o = base;
  const auto dev = parse_device_overrides(f.layer_devices);
  const auto pre = parse_precision_overrides(f.layer_precisions);
  o.layer_devices.insert(o.layer_devices.begin(), dev.begin(), dev.end());
  o.layer_precisions.insert(o.layer_precisions.begin(), pre.begin(), pre.end());
  return o;
}

AutoFix auto_fix(const Graph& g, const PlacementOptions& base, const ScaleTable* scales,
                 const NumericsOptions& no, const std::vector<TensorMap>& samples, int max_rounds,
                 const std::function<void(int, int)>& progress, const MetricSpec& metric) {
  AutoFix a;
  a.options = base;
  a.plan = plan_numerics(g, place(g, a.options), scales, no);
  a.before = a.after = compare_numerics(g, a.plan, samples, progress, metric);
  std::set<std::string> excluded;  // layers of undone rounds
  for (; a.rounds < max_rounds; ++a.rounds) {
    CompareResult candidates = a.after;
    for (LayerError& e : candidates.layers)
      if (excluded.count(e.node)) e.flagged = false;  // never proposed again
    const Fix f = propose_fix(candidates);
    if (f.empty()) break;
    PlacementOptions tried = with_fix(a.options, f);
    NumericsPlan plan = plan_numerics(g, place(g, tried), scales, no);
    CompareResult result = compare_numerics(g, plan, samples, progress, metric);
    if (better(metric.kind, a.after.score, result.score)) {
      for (const auto& o : parse_device_overrides(f.layer_devices)) excluded.insert(o.first);
      for (const auto& o : parse_precision_overrides(f.layer_precisions)) excluded.insert(o.first);
      a.undone.push_back("round " + std::to_string(a.rounds + 1) +
                         " undone: " + format_metric_value(metric, a.after.score.metric) + " -> " +
                         format_metric_value(metric, result.score.metric) + " (output cosine " +
                         std::to_string(a.after.score.cosine) + " -> " + std::to_string(result.score.cosine) +
                         ") with " + std::to_string(f.lines.size()) + " more move(s)");
      continue;
    }
    auto join = [](std::string& to, const std::string& more) {
      if (!more.empty()) to += (to.empty() ? "" : ",") + more;
    };
    join(a.applied.layer_precisions, f.layer_precisions);
    join(a.applied.layer_devices, f.layer_devices);
    a.applied.lines.insert(a.applied.lines.end(), f.lines.begin(), f.lines.end());
    a.options = std::move(tried);
    a.plan = std::move(plan);
    a.after = std::move(result);
  }
  return a;
}

}  // namespace dlakit::quant
