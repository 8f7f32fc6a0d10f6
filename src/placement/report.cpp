// Placement reports: a per-layer table, the segments, the summary (text), the same as JSON (schema in
// docs/inspect.md; "schema_version" changes only when fields change meaning), and --explain NODE.
#include <cstdio>
#include <sstream>

#include "placement/placement.h"

namespace dlakit {
namespace {

std::string pad(std::string s, size_t w) {
  if (s.size() > w) s = s.substr(0, w - 1) + "~";
  s.resize(w, ' ');
  return s;
}

std::string out_shape(const Graph& g, const Node& n) {
  return n.outputs.empty() || n.outputs[0] < 0 ? "" : shape_str(g.value(n.outputs[0]).type.shape);
}

std::string layer_name(const Node& n) {
  std::string op = op_name(n.op);
  if (n.has("dlakit_activation")) op += "+" + n.attr_str("dlakit_activation", "");
  return op;
}

bool assumed(dla::Rule r) { return dla::rule_info(r).confidence == dla::Confidence::kAssumed; }

// DLA layers let on by an assumed rule, and GPU layers kept off only by assumed rules.
std::pair<int, int> unconfirmed_counts(const Placement& p) {
  int dla = 0, gpu = 0;
  for (const LayerPlacement& L : p.layers) {
    if (L.device == Device::kDLA) dla += !L.cap.unconfirmed.empty();
    bool all_assumed = !L.cap.reasons.empty();
    for (auto& r : L.cap.reasons) all_assumed = all_assumed && assumed(r.rule);
    if (L.device == Device::kGPU) gpu += all_assumed;
  }
  return {dla, gpu};
}

}  // namespace

std::string placement_text(const Graph& g, const Placement& p) {
  std::ostringstream os;
  os << "target: " << p.target << " (DLA " << dla::limits_for(p.target).dla_version << "), mode: " << p.mode
     << ", default precision: " << dla::precision_name(p.options.precision) << ", DLA core "
     << p.options.dla_core << "\n\n";
  os << pad("#", 5) << pad("layer", 38) << pad("op", 16) << pad("output", 18) << pad("device", 7)
     << pad("prec", 6) << "why\n";
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    const LayerPlacement& L = p.layers[k];
    os << pad(std::to_string(k), 5) << pad(n.name, 38) << pad(layer_name(n), 16) << pad(out_shape(g, n), 18)
       << pad(device_name(L.device), 7)
       << pad(L.device == Device::kDLA ? dla::precision_name(L.precision) : "fp32", 6);
    if (L.device == Device::kDLA) {
      os << "-> " << L.cap.dla_layer;
      for (dla::Rule r : L.cap.unconfirmed) os << "; unconfirmed: " << dla::rule_info(r).id;
      for (auto& note : L.cap.notes) os << "; note: " << note;
      os << "\n";
      continue;
    }
    os << L.decision << "\n";
    for (auto& r : L.cap.reasons)
      os << pad("", 10) << "- " << dla::reason_code_name(r.code) << ": " << r.field << " = " << r.actual
         << " (limit " << r.limit << ")" << (assumed(r.rule) ? "  [unconfirmed: " : "")
         << (assumed(r.rule) ? std::string(dla::rule_info(r.rule).id) + "]" : "") << "\n"
         << pad("", 12) << "fix: " << r.fix << "\n";
  }
  os << "\nsegments:\n";
  for (const Segment& s : p.segments) {
    os << "  [" << s.id << "] " << device_name(s.device) << "  " << s.nodes.size() << " layer(s)";
    if (!s.nodes.empty())
      os << "  " << g.nodes[size_t(s.nodes.front())].name << " .. " << g.nodes[size_t(s.nodes.back())].name;
    char buf[64];
    std::snprintf(buf, sizeof buf, "  %.3f GMACs", double(s.macs) / 1e9);
    os << buf << "\n      ends because " << s.ends_because << "\n";
  }
  char buf[512];
  std::snprintf(
      buf, sizeof buf,
      "\nsummary: %d/%d layers on the DLA (%.1f%%), %.3f/%.3f GMACs on the DLA (%.1f%%), %d DLA loadable(s), "
      "%d DLA<->GPU transition(s)\nstandalone build possible: %s\nrecommendation: %s\n",
      p.dla_layers, p.total_layers, p.total_layers ? 100.0 * p.dla_layers / p.total_layers : 0.0,
      double(p.dla_macs) / 1e9, double(p.total_macs) / 1e9,
      p.total_macs ? 100.0 * double(p.dla_macs) / double(p.total_macs) : 0.0, p.dla_loadables, p.transitions,
      p.standalone_possible ? "yes" : "no", p.recommendation.c_str());
  os << buf;
  const auto [dla_assumed, gpu_assumed] = unconfirmed_counts(p);
  os << "unconfirmed rules: " << dla_assumed << " DLA layer(s) rest on an assumed rule, " << gpu_assumed
     << " GPU layer(s) fall back only by assumed rules (docs/inspect.md lists them)\n";
  return os.str();
}

nlohmann::json placement_json(const Graph& g, const Placement& p) {
  using nlohmann::json;
  json j;
  j["schema_version"] = 1;
  j["model"] = p.model;
  j["target"] = p.target;
  j["dla_version"] = dla::limits_for(p.target).dla_version;
  j["mode"] = p.mode;
  j["precision"] = dla::precision_name(p.options.precision);
  j["dla_core"] = p.options.dla_core;
  j["layers"] = json::array();
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    const LayerPlacement& L = p.layers[k];
    json l{{"index", k},
           {"name", n.name},
           {"op", op_name(n.op)},
           {"output_shape", out_shape(g, n)},
           {"device", device_name(L.device)},
           {"precision", L.device == Device::kDLA ? dla::precision_name(L.precision) : "fp32"},
           {"dla_layer", L.cap.dla_layer},
           {"decision", L.decision},
           {"segment", L.segment},
           {"macs", L.macs}};
    if (n.has("dlakit_activation")) l["fused_activation"] = n.attr_str("dlakit_activation", "");
    l["reasons"] = json::array();
    for (auto& r : L.cap.reasons)
      l["reasons"].push_back({{"code", dla::reason_code_name(r.code)},
                              {"field", r.field},
                              {"actual", r.actual},
                              {"limit", r.limit},
                              {"fix", r.fix},
                              {"rule", dla::rule_info(r.rule).id},
                              {"confidence", dla::confidence_name(dla::rule_info(r.rule).confidence)},
                              {"source", dla::rule_info(r.rule).source}});
    l["notes"] = L.cap.notes;
    l["unconfirmed"] = json::array();
    for (dla::Rule r : L.cap.unconfirmed) l["unconfirmed"].push_back(dla::rule_info(r).id);
    j["layers"].push_back(l);
  }
  j["segments"] = json::array();
  for (const Segment& s : p.segments) {
    json seg{
        {"id", s.id}, {"device", device_name(s.device)}, {"macs", s.macs}, {"ends_because", s.ends_because}};
    for (int k : s.nodes) seg["layers"].push_back(g.nodes[size_t(k)].name);
    for (int v : s.inputs) seg["inputs"].push_back(g.value(v).name);
    for (int v : s.outputs) seg["outputs"].push_back(g.value(v).name);
    j["segments"].push_back(seg);
  }
  j["summary"] = {{"dla_layers", p.dla_layers},
                  {"total_layers", p.total_layers},
                  {"dla_macs", p.dla_macs},
                  {"total_macs", p.total_macs},
                  {"dla_mac_share", p.total_macs ? double(p.dla_macs) / double(p.total_macs) : 0.0},
                  {"dla_loadables", p.dla_loadables},
                  {"transitions", p.transitions},
                  {"standalone_possible", p.standalone_possible},
                  {"recommendation", p.recommendation},
                  {"unconfirmed_dla_layers", unconfirmed_counts(p).first},
                  {"unconfirmed_gpu_layers", unconfirmed_counts(p).second}};
  j["remarks"] = json::array();
  for (auto& r : p.remarks)
    j["remarks"].push_back(
        {{"pass", r.pass}, {"node", r.node}, {"applied", r.applied}, {"message", r.message}});
  return j;
}

std::string explain_node(const Graph& g, const Placement& p, const std::string& name) {
  std::ostringstream os;
  bool found = false;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    if (n.name != name) continue;
    found = true;
    const LayerPlacement& L = p.layers[k];
    os << n.label() << "  (layer #" << k << ", opset " << n.opset << ")\n";
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] >= 0)
        os << "  input[" << i << "]  " << g.value(n.inputs[i]).name << "  "
           << type_str(g.value(n.inputs[i]).type) << (g.value(n.inputs[i]).constant ? "  (constant)" : "")
           << "\n";
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (n.outputs[i] >= 0)
        os << "  output[" << i << "] " << g.value(n.outputs[i]).name << "  "
           << type_str(g.value(n.outputs[i]).type) << "\n";
    os << "  DLA layer: " << (L.cap.dla_layer.empty() ? "(none)" : L.cap.dla_layer)
       << "\n  device: " << device_name(L.device) << " (" << L.decision << "), segment " << L.segment
       << ", precision " << (L.device == Device::kDLA ? dla::precision_name(L.precision) : "fp32") << ", "
       << L.macs << " MACs\n";
    if (L.cap.reasons.empty()) os << "  reasons: none, the " << p.target << " DLA can run it\n";
    for (auto& r : L.cap.reasons) {
      const dla::RuleInfo& ri = dla::rule_info(r.rule);
      os << "  reason " << dla::reason_code_name(r.code) << " (" << dla::reason_code_text(r.code)
         << ")\n    field:  " << r.field << "\n    actual: " << r.actual << "\n    limit:  " << r.limit
         << "\n    fix:    " << r.fix << "\n    rule:   " << ri.id << ", "
         << dla::confidence_name(ri.confidence) << (assumed(r.rule) ? " (unconfirmed)" : "") << ": "
         << ri.source << "\n";
    }
    for (dla::Rule r : L.cap.unconfirmed)
      os << "  unconfirmed: on the DLA by the assumed rule " << dla::rule_info(r).id << " ("
         << dla::rule_info(r).text << "; " << dla::rule_info(r).source << ")\n";
    for (auto& note : L.cap.notes) os << "  note: " << note << "\n";
  }
  for (auto& r : p.remarks)
    if (r.node == name)
      os << "  pass " << r.pass << ": " << (r.applied ? "" : "declined: ") << r.message << "\n";
  if (!found) {
    bool removed = false;
    for (auto& r : p.remarks) removed = removed || r.node == name;
    if (!removed)
      fail(Status::kInvalidArgument, "--explain: no layer named '", name,
           "' (see the names in dlakit inspect)");
    os.str(name + " is no longer a layer: a pass removed or merged it\n" + os.str());
  }
  return os.str();
}

}  // namespace dlakit
