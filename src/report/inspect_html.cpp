#include "report/inspect_html.h"

#include <cstdio>

#include "report/html_page.h"
#include "targets/dla/limits.h"

namespace dlakit::report {

std::string inspect_html(const Graph& g, const Placement& p, const std::vector<double>* latency_us) {
  nlohmann::json j = placement_json(g, p);
  if (latency_us)
    for (size_t k = 0; k < latency_us->size() && k < j["layers"].size(); ++k)
      j["layers"][k]["latency_us"] = (*latency_us)[k];
  const nlohmann::json& s = j["summary"];
  auto percent = [](double part, double whole) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f%%", whole > 0 ? 100.0 * part / whole : 0.0);
    return std::string(b);
  };
  char gmacs[32];
  std::snprintf(gmacs, sizeof gmacs, "%.3f G", double(p.total_macs) / 1e9);
  nlohmann::json page;
  page["title"] = "dlakit inspect: " + p.model;
  page["facts"] = nlohmann::json::array(
      {{"target", p.target + " (DLA " + dla::limits_for(p.target).dla_version + ")"},
       {"mode", p.mode},
       {"precision", j["precision"]},
       {"DLA layers", std::to_string(p.dla_layers) + " / " + std::to_string(p.total_layers) + " (" +
                          percent(p.dla_layers, p.total_layers) + ")"},
       {"DLA MACs", percent(double(p.dla_macs), double(p.total_macs)) + " of " + gmacs},
       {"DLA loadables", p.dla_loadables},
       {"DLA<->GPU transitions", p.transitions}});
  page["verdict"] = {{"good", p.standalone_possible},
                     {"text", p.standalone_possible ? "standalone build possible (one DLA graph, cuDLA)"
                                                    : "standalone build not possible"}};
  page["recommendation"] = s["recommendation"];
  page["layers"] = j["layers"];
  page["name_key"] = "name";
  page["group_key"] = "segment";
  page["device_key"] = "device";
  page["categorical"] = {"device", "precision", "op", "dla_layer", "decision"};
  page["colour_default"] = latency_us ? "latency_us" : "device";
  page["numeric_skip"] = {"index", "segment"};
  page["groups"] = j["segments"];
  page["remarks"] = j["remarks"];
  return html_page(page);
}

}  // namespace dlakit::report
