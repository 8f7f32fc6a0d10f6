#include "quant/cache_fit.h"

#include <set>

#include "base/error.h"

namespace dlakit::quant {

std::string first_names(const std::vector<std::string>& names, size_t shown) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < shown; ++i) s += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > shown) s += " and " + std::to_string(names.size() - shown) + " more";
  return s;
}

namespace {

bool tensorrt_internal(const std::string& name) { return name.rfind("(Unnamed Layer* ", 0) == 0; }

// Names of the tensors a graph computes with: its inputs and what its nodes read and write (a pass leaves
// the values it removes in `values`, unreferenced).
std::set<std::string> live_names(const Graph& g) {
  std::set<std::string> s;
  for (int v : g.inputs) s.insert(g.value(v).name);
  for (const Node& n : g.nodes)
    for (const auto* ids : {&n.inputs, &n.outputs})
      for (int v : *ids)
        if (v >= 0) s.insert(g.value(v).name);
  return s;
}

// The kept tensor that `name` was an alias of in the imported model (through Identity / Dropout chains,
// either direction), or "" when there is none.
std::string alias_in(const Graph& imported, const std::set<std::string>& kept, const std::string& name) {
  const auto id = imported.find_value(name);
  if (!id) return "";
  std::vector<int> todo{*id};
  std::set<int> seen{*id};
  while (!todo.empty()) {
    const int v = todo.back();
    todo.pop_back();
    if (v != *id && kept.count(imported.value(v).name)) return imported.value(v).name;
    for (const Node& n : imported.nodes) {
      if (n.op != OpKind::Identity && n.op != OpKind::Dropout) continue;
      if (n.inputs.empty() || n.outputs.empty()) continue;
      const int in = n.inputs[0], out = n.outputs[0];
      for (auto [from, to] : {std::pair{in, out}, std::pair{out, in}})
        if (from == v && to >= 0 && seen.insert(to).second) todo.push_back(to);
    }
  }
  return "";
}

}  // namespace

CacheFit fit_cache(const ScaleTable& cache, const Graph& kept, const Graph& imported,
                   const std::string& source) {
  CacheFit f;
  f.scales.trt_version = cache.trt_version;
  f.scales.algorithm = cache.algorithm;
  f.scales.weight_scales = cache.weight_scales;
  const std::set<std::string> live = live_names(kept), was = live_names(imported);
  std::vector<std::pair<std::string, float>> aliases;
  for (const auto& [name, scale] : cache.scales) {
    if (live.count(name)) {
      f.kept.push_back(name);
      if (scale > 0)
        f.scales.set_scale(name, scale);
      else
        f.zero.push_back(name);
    } else if (tensorrt_internal(name)) {
      f.internal.push_back(name);
    } else if (was.count(name)) {
      aliases.emplace_back(name, scale);
    } else {
      f.unknown.push_back(name);
    }
  }
  for (const auto& [name, scale] : aliases) {
    const std::string to = alias_in(imported, live, name);
    if (!to.empty() && !cache.find_scale(to) && scale > 0 && !f.scales.find_scale(to)) {
      f.scales.set_scale(to, scale);
      f.mapped.emplace_back(name, to);
    } else {
      f.folded.push_back(name);
    }
  }
  const size_t relevant = cache.scales.size() - f.internal.size();
  if (relevant > 0 && f.kept.empty() && f.mapped.empty())
    fail(Status::kInvalidArgument, source, " does not fit this model: none of its ", relevant,
         " tensor names (", first_names(f.unknown),
         ") is a tensor of the model; was it made for another one?");
  if (10 * f.unknown.size() > 9 * relevant)
    fail(Status::kInvalidArgument, source, " does not fit this model: ", f.unknown.size(), " of its ",
         relevant, " tensor names are not tensors of the model (", first_names(f.unknown),
         "); was it made for another one?");
  if (!f.unknown.empty())
    f.warnings.push_back(std::to_string(f.unknown.size()) + " of the cache's " + std::to_string(relevant) +
                         " tensor names are not in this model and are ignored: " + first_names(f.unknown));
  std::vector<std::string> without;  // float activations of the network the cache gives no range
  size_t activations = 0;
  for (size_t v = 0; v < kept.values.size(); ++v) {
    const Value& val = kept.values[v];
    if (val.constant || val.type.dtype != DType::kF32 || !live.count(val.name)) continue;
    ++activations;
    if (!f.scales.find_scale(val.name)) without.push_back(val.name);
  }
  if (activations > 0 && 2 * without.size() > activations)
    f.warnings.push_back("the cache gives a range to only " + std::to_string(activations - without.size()) +
                         " of the network's " + std::to_string(activations) +
                         " activations; INT8 layers without one run FP16 (was it made for another export of "
                         "the model?): " +
                         first_names(without));
  if (!f.zero.empty())
    f.warnings.push_back(std::to_string(f.zero.size()) +
                         " tensor(s) have scale 0 in the cache (an empty range: INT8 would output zeros); "
                         "dlakit leaves them without a range, so the layers around them run FP16: " +
                         first_names(f.zero));
  if (f.scales.algorithm != "EntropyCalibration2")
    f.warnings.push_back(
        "the cache's header says " + f.scales.algorithm +
        "; TensorRT requires the EntropyCalibration2 calibrator for the DLA (dla-constraints.md "
        "4.3), so it may not read this cache for a DLA build; dlakit uses its scales "
        "(`dlakit calibrate` writes the DLA's header)");
  return f;
}

}  // namespace dlakit::quant
