#include "placement/placement.h"

#include <fnmatch.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "ir/stats.h"

namespace dlakit {
namespace {

template <typename T>
const T* match(const std::vector<std::pair<std::string, T>>& rules, const std::string& name) {
  for (auto& [pattern, v] : rules)
    if (fnmatch(pattern.c_str(), name.c_str(), 0) == 0) return &v;
  return nullptr;
}

bool no_op(const Node& n) { return n.op == OpKind::Identity || n.op == OpKind::Dropout; }

// Groups nodes of one device into segments, in topological order. A node joins a segment of the same
// device that feeds it unless that would create a cycle (a path leaving the segment and coming back).
void build_segments(const Graph& g, Placement& p) {
  const size_t N = g.nodes.size();
  p.segments.clear();
  std::vector<std::set<int>> upstream(N);  // segments that reach this node (through any path)
  auto producer_of = [&](int v) { return v >= 0 ? g.value(v).producer : -1; };
  for (size_t k = 0; k < N; ++k) {
    LayerPlacement& L = p.layers[k];
    const Node& n = g.nodes[k];
    std::set<int> up;
    std::vector<int> candidates;
    for (int v : n.inputs) {
      const int pr = producer_of(v);
      if (pr < 0) continue;
      up.insert(upstream[size_t(pr)].begin(), upstream[size_t(pr)].end());
      const int s = p.layers[size_t(pr)].segment;
      up.insert(s);
      if (p.segments[size_t(s)].device == L.device &&
          std::find(candidates.begin(), candidates.end(), s) == candidates.end())
        candidates.push_back(s);
    }
    int chosen = -1;
    for (int s : candidates) {
      // Joining s is safe when no input arrives from outside s through a path that started in s.
      bool cycle = false;
      for (int v : n.inputs) {
        const int pr = producer_of(v);
        if (pr >= 0 && p.layers[size_t(pr)].segment != s && upstream[size_t(pr)].count(s)) cycle = true;
      }
      if (!cycle) {
        chosen = s;
        break;
      }
    }
    if (chosen < 0) {
      Segment seg;
      seg.id = int(p.segments.size());
      seg.device = L.device;
      p.segments.push_back(seg);
      chosen = seg.id;
    }
    L.segment = chosen;
    p.segments[size_t(chosen)].nodes.push_back(int(k));
    p.segments[size_t(chosen)].macs += L.macs;
    up.erase(chosen);
    upstream[k] = std::move(up);
  }
  // Boundary values and why each segment ends.
  std::vector<int> seg_of_value(g.values.size(), -1);
  for (size_t k = 0; k < N; ++k)
    for (int o : g.nodes[k].outputs)
      if (o >= 0) seg_of_value[size_t(o)] = p.layers[k].segment;
  for (Segment& s : p.segments) {
    std::set<int> ins, outs;
    for (int k : s.nodes)
      for (int v : g.nodes[size_t(k)].inputs)
        if (v >= 0 && !g.value(v).constant && seg_of_value[size_t(v)] != s.id) ins.insert(v);
    for (size_t k = 0; k < N; ++k)
      if (p.layers[k].segment != s.id)
        for (int v : g.nodes[k].inputs)
          if (v >= 0 && seg_of_value[size_t(v)] == s.id) outs.insert(v);
    for (int o : g.outputs)
      if (seg_of_value[size_t(o)] == s.id) outs.insert(o);
    s.inputs.assign(ins.begin(), ins.end());
    s.outputs.assign(outs.begin(), outs.end());
    // The first reader outside the segment tells why it stops there.
    s.ends_because = "it produces the network's outputs";
    for (size_t k = 0; k < N; ++k) {
      if (p.layers[k].segment == s.id) continue;
      bool reads = false;
      for (int v : g.nodes[k].inputs) reads = reads || (v >= 0 && seg_of_value[size_t(v)] == s.id);
      if (!reads) continue;
      const LayerPlacement& L = p.layers[k];
      if (L.device != s.device) {
        std::string why = g.nodes[k].label() + " runs on " + device_name(L.device);
        if (L.device == Device::kGPU && !L.cap.reasons.empty())
          why += " (" + std::string(dla::reason_code_name(L.cap.reasons[0].code)) + ": " +
                 L.cap.reasons[0].field + " = " + L.cap.reasons[0].actual + ", limit " +
                 L.cap.reasons[0].limit + ")";
        else if (L.device == Device::kGPU)
          why += " (" + L.decision + ")";
        s.ends_because = why;
      } else {
        s.ends_because = g.nodes[k].label() +
                         " could not join: it also reads a value computed outside this segment that "
                         "depends on it (merging would create a cycle)";
      }
      break;
    }
  }
}

int count_transitions(const Graph& g, const Placement& p) {
  std::set<std::pair<int, int>> hops;  // (value, reading segment)
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (int v : g.nodes[k].inputs) {
      if (v < 0 || g.value(v).producer < 0) continue;
      const LayerPlacement &a = p.layers[size_t(g.value(v).producer)], &b = p.layers[k];
      if (a.device != b.device) hops.insert({v, b.segment});
    }
  return int(hops.size());
}

}  // namespace

const char* device_name(Device d) { return d == Device::kDLA ? "DLA" : "GPU"; }

std::vector<std::pair<std::string, Device>> parse_device_overrides(const std::string& spec) {
  std::vector<std::pair<std::string, Device>> r;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const size_t c = item.rfind(':');
    const std::string dev = c == std::string::npos ? "" : item.substr(c + 1);
    if (c == std::string::npos || c == 0 || (dev != "GPU" && dev != "DLA" && dev != "gpu" && dev != "dla"))
      fail(Status::kInvalidArgument, "device override '", item,
           "' should be NAME:GPU or NAME:DLA (NAME may use * and ?)");
    r.push_back({item.substr(0, c), dev == "GPU" || dev == "gpu" ? Device::kGPU : Device::kDLA});
  }
  return r;
}

std::vector<std::pair<std::string, dla::Precision>> parse_precision_overrides(const std::string& spec) {
  std::vector<std::pair<std::string, dla::Precision>> r;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const size_t c = item.rfind(':');
    const std::string pr = c == std::string::npos ? "" : item.substr(c + 1);
    if (c == std::string::npos || c == 0 || (pr != "fp16" && pr != "int8"))
      fail(Status::kInvalidArgument, "precision override '", item, "' should be NAME:fp16 or NAME:int8");
    r.push_back({item.substr(0, c), pr == "int8" ? dla::Precision::kINT8 : dla::Precision::kFP16});
  }
  return r;
}

Placement place(const Graph& g, const PlacementOptions& opt) {
  const dla::DlaLimits& lim = dla::limits_for(opt.target);
  Placement p;
  p.target = opt.target;
  p.mode = opt.standalone ? "standalone" : "fallback";
  p.options = opt;
  p.layers.resize(g.nodes.size());
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    LayerPlacement& L = p.layers[k];
    L.macs = node_macs(g, n);
    L.precision = opt.precision;
    if (auto* pr = match(opt.layer_precisions, n.name))
      L.precision = *pr;
    else if (auto* po = match(opt.op_precisions, std::string(op_name(n.op))))
      L.precision = *po;
    L.cap = dla::check_node(g, n, lim, L.precision);
    const Device* forced = match(opt.layer_devices, n.name);
    if (!forced) forced = match(opt.op_devices, std::string(op_name(n.op)));
    if (forced && *forced == Device::kGPU) {
      L.device = Device::kGPU;
      L.decision = "override: --layerDeviceTypes put it on the GPU";
      L.cap.add(dla::Rule::UserOverride, dla::ReasonCode::UserOverride, "device", "GPU", "-",
                "remove the override to let dlakit place it");
    } else if (L.cap.ok()) {
      L.device = Device::kDLA;
      L.decision = forced ? "override: DLA (and supported)" : "supported";
    } else {
      L.device = Device::kGPU;
      L.decision = forced ? "override asked for DLA, but the layer is not supported there"
                          : "not supported on the DLA";
    }
  }
  // Tiny islands (fallback mode only): re-partition until stable.
  build_segments(g, p);
  p.total_macs = graph_macs(g);
  if (!opt.standalone) {
    for (int round = 0; round < 4; ++round) {
      bool moved = false;
      int dla_segments = 0;
      for (auto& s : p.segments) dla_segments += s.device == Device::kDLA;
      for (const Segment& s : p.segments) {
        if (s.device != Device::kDLA || dla_segments <= 1 || int(s.nodes.size()) >= opt.min_island_layers)
          continue;
        const double share = p.total_macs ? double(s.macs) / double(p.total_macs) : 0.0;
        if (share >= opt.min_island_mac_share) continue;
        for (int k : s.nodes) {
          if (match(opt.layer_devices, g.nodes[size_t(k)].name)) continue;  // the user asked for it
          p.layers[size_t(k)].device = Device::kGPU;
          char buf[160];
          std::snprintf(
              buf, sizeof buf,
              "tiny DLA island (%zu layer(s), %.2f%% of MACs; dlakit's heuristic: < %d layers and < "
              "%.0f%%): a DLA round trip costs more than it saves",
              s.nodes.size(), 100.0 * share, opt.min_island_layers, 100.0 * opt.min_island_mac_share);
          p.layers[size_t(k)].decision = buf;
          moved = true;
        }
      }
      if (!moved) break;
      build_segments(g, p);
    }
    // At most 16 loadables per core: keep the segments with the most MACs on the DLA.
    std::vector<const Segment*> dla;
    for (auto& s : p.segments)
      if (s.device == Device::kDLA) dla.push_back(&s);
    if (long(dla.size()) > lim.max_loadables_per_core) {
      std::sort(dla.begin(), dla.end(), [](auto* a, auto* b) { return a->macs > b->macs; });
      for (size_t i = size_t(lim.max_loadables_per_core); i < dla.size(); ++i)
        for (int k : dla[i]->nodes) {
          p.layers[size_t(k)].device = Device::kGPU;
          p.layers[size_t(k)].decision = "over the limit of " + std::to_string(lim.max_loadables_per_core) +
                                         " DLA loadables per core (dla-constraints.md §1.1); dlakit's "
                                         "heuristic keeps the segments with the most MACs, this one has few";
        }
      build_segments(g, p);
    }
  }
  // Summary.
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (no_op(g.nodes[k])) continue;
    ++p.total_layers;
    if (p.layers[k].device == Device::kDLA) {
      ++p.dla_layers;
      p.dla_macs += p.layers[k].macs;
    }
  }
  for (auto& s : p.segments) p.dla_loadables += s.device == Device::kDLA;
  p.transitions = count_transitions(g, p);
  p.standalone_possible = p.dla_loadables == 1 && p.dla_layers == p.total_layers;
  const double share = p.total_macs ? double(p.dla_macs) / double(p.total_macs)
                                    : double(p.dla_layers) / std::max(p.total_layers, 1);
  char buf[400];
  if (p.standalone_possible)
    std::snprintf(buf, sizeof buf,
                  "standalone: the whole network is one DLA graph; build it with --buildDLAStandalone and "
                  "run it with cuDLA");
  else if (share >= 0.9 && p.transitions > 6) {
    // Most work fits, but the graph ping-pongs: name the op type that breaks it most often.
    std::map<std::string, int> breakers;
    for (size_t k = 0; k < g.nodes.size(); ++k)
      if (p.layers[k].device == Device::kGPU && !no_op(g.nodes[k])) ++breakers[op_name(g.nodes[k].op)];
    auto top = std::max_element(breakers.begin(), breakers.end(),
                                [](auto& a, auto& b) { return a.second < b.second; });
    std::snprintf(
        buf, sizeof buf,
        "fragmented hybrid: %.1f%% of the MACs fit the DLA, but %d DLA loadables and %d DLA<->GPU "
        "transitions will eat the "
        "gain; fix the %d GPU %s layer(s) first (see their reasons), then build with --allowGPUFallback",
        100 * share, p.dla_loadables, p.transitions, top == breakers.end() ? 0 : top->second,
        top == breakers.end() ? "" : top->first.c_str());
  } else if (share >= 0.9)
    std::snprintf(buf, sizeof buf,
                  "hybrid: %.1f%% of the MACs run on the DLA; build with --allowGPUFallback (%d DLA "
                  "loadable(s), %d DLA<->GPU transitions)",
                  100 * share, p.dla_loadables, p.transitions);
  else if (share >= 0.8)
    std::snprintf(buf, sizeof buf,
                  "borderline: %.1f%% of the MACs on the DLA; fix the GPU layers listed above to reach 90%%, "
                  "or measure both placements",
                  100 * share);
  else
    std::snprintf(buf, sizeof buf,
                  "GPU: only %.1f%% of the MACs can run on the DLA; keep this model on the GPU and give the "
                  "DLA another stream",
                  100 * share);
  p.recommendation = buf;
  if (!p.standalone_possible)
    p.recommendation += " [dlakit's thresholds: hybrid from 90% of the MACs on the DLA, borderline from 80%]";
  if (opt.standalone && !p.standalone_possible) {
    std::string list;
    int count = 0;
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      const LayerPlacement& L = p.layers[k];
      if (L.device == Device::kDLA || no_op(g.nodes[k])) continue;
      ++count;
      list += "\n  " + g.nodes[k].label();
      for (auto& r : L.cap.reasons)
        list += "\n    - " + std::string(dla::reason_code_name(r.code)) + ": " + r.field + " = " + r.actual +
                " (limit " + r.limit + "); fix: " + r.fix +
                (dla::rule_info(r.rule).confidence == dla::Confidence::kAssumed
                     ? " [unconfirmed: " + std::string(dla::rule_info(r.rule).id) + "]"
                     : "");
    }
    if (count == 0)
      list = "\n  every layer is supported, but they form " + std::to_string(p.dla_loadables) +
             " DLA graphs (a cycle through a no-op)";
    fail(Status::kUnsupported, "--buildDLAStandalone: the network cannot be one DLA graph on ", opt.target,
         "; ", count, " layer(s) cannot run on the DLA:", list);
  }
  return p;
}

}  // namespace dlakit
