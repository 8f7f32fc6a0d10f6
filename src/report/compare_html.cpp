#include "report/compare_html.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "report/html_page.h"
#include "workflow/compare.h"

namespace dlakit::report {

std::string format_metric(double v, const char* fmt) {
  if (std::isinf(v)) return "inf";
  char b[32];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}

namespace {

std::string esc(const std::string& s) { return escape_html(s); }

std::string num(double v, const char* fmt = "%.3g") { return format_metric(v, fmt); }

// Relative L2 per layer on a log axis (1e-6 .. 10), one polyline per run; flagged layers circled.
std::string error_chart(const quant::CompareResult& before, const quant::CompareResult* after) {
  const int W = 960, H = 300, L = 60, R = 10, T = 10, B = 30;
  const size_t n = std::max<size_t>(before.layers.size(), 2);
  auto x = [&](size_t i) { return L + double(W - L - R) * double(i) / double(n - 1); };
  auto y = [&](double e) {
    const double v = std::log10(std::clamp(e, 1e-6, 10.0));
    return T + double(H - T - B) * (1.0 - (v + 6) / 7);
  };
  std::ostringstream s;
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H << "' font-size='11'>";
  for (int d = -6; d <= 1; ++d) {
    const double yy = y(std::pow(10.0, d));
    s << "<line x1='" << L << "' x2='" << W - R << "' y1='" << yy << "' y2='" << yy << "' stroke='#ddd'/>"
      << "<text x='4' y='" << yy + 4 << "'>1e" << d << "</text>";
  }
  s << "<text x='" << L << "' y='" << H - 8
    << "'>layer (graph order) -> ; y: relative L2 vs FP32, end to end (solid) and the layer's own "
       "(dashed)</text>";
  // The layers' own error (each alone on FP32 inputs), dashed, under the end-to-end lines.
  s << "<polyline fill='none' stroke='#7f8c8d' stroke-dasharray='3,3' stroke-width='1' points='";
  for (size_t i = 0; i < before.layers.size(); ++i) s << x(i) << "," << y(before.layers[i].own.rel_l2) << " ";
  s << "'/><text x='" << W - 330 << "' y='20' fill='#7f8c8d'>own error (dashed)</text>";
  auto line = [&](const quant::CompareResult& r, const char* color) {
    s << "<polyline fill='none' stroke='" << color << "' stroke-width='1.5' points='";
    for (size_t i = 0; i < r.layers.size(); ++i) s << x(i) << "," << y(r.layers[i].err.rel_l2) << " ";
    s << "'/>";
    for (size_t i = 0; i < r.layers.size(); ++i)
      if (r.layers[i].flagged)
        s << "<circle cx='" << x(i) << "' cy='" << y(r.layers[i].err.rel_l2) << "' r='4' fill='none' stroke='"
          << color << "'><title>" << esc(r.layers[i].node) << "</title></circle>";
  };
  line(before, "#c0392b");
  if (after) line(*after, "#27ae60");
  s << "<text x='" << W - 200 << "' y='20' fill='#c0392b'>before</text>";
  if (after) s << "<text x='" << W - 140 << "' y='20' fill='#27ae60'>after --fix</text>";
  s << "</svg>";
  return s.str();
}

// The chart and the tables under the network picture.
std::string compare_sections(const quant::CompareResult& before, const quant::CompareResult* after,
                             const quant::Fix* fix) {
  std::ostringstream h;
  h << "<p>" << before.samples << " samples; median error step " << num(before.median_step)
    << "; median own error " << num(before.median_own)
    << ". A layer is flagged when its own error (emulated alone on the FP32 reference's inputs) is at "
    << "least 10x the median and 0.01.</p>"
    << "<h2>Error per layer</h2>" << error_chart(before, after)
    << "<h2>Outputs</h2><table><tr><th>output</th>"
    << "<th>run</th><th>cosine</th><th>rel L2</th><th>max abs</th><th>SQNR dB</th></tr>";
  auto out_rows = [&](const quant::CompareResult& r, const char* run) {
    for (const auto& e : r.outputs)
      h << "<tr><td>" << esc(e.tensor) << "</td><td>" << run << "</td><td class='num'>"
        << num(e.err.cosine, "%.6f") << "</td><td class='num'>" << num(e.err.rel_l2)
        << "</td><td class='num'>" << num(e.err.max_abs) << "</td><td class='num'>"
        << num(e.err.sqnr_db, "%.1f") << "</td></tr>";
  };
  out_rows(before, "before");
  if (after) out_rows(*after, "after --fix");
  h << "</table>";
  if (fix && !fix->empty()) {
    h << "<h2>Fix</h2><ul>";
    for (const auto& l : fix->lines) h << "<li>" << esc(l) << "</li>";
    h << "</ul><pre>";
    if (!fix->layer_precisions.empty()) h << "--layerPrecisions=" << esc(fix->layer_precisions) << "\n";
    if (!fix->layer_devices.empty()) h << "--layerDeviceTypes=" << esc(fix->layer_devices) << "\n";
    h << "</pre>";
  }
  h << "<h2>Layers</h2><table><tr><th>layer</th><th>op</th><th>mode</th><th>cosine</th><th>rel L2</th>"
    << "<th>own rel L2</th><th>step</th><th>max abs</th><th>SQNR dB</th><th>note</th></tr>";
  for (size_t i = 0; i < before.layers.size(); ++i) {
    const quant::LayerError& e = before.layers[i];
    h << "<tr class='click" << (e.flagged ? " flag" : "")
      << "' onclick=\"location.hash='layer='+encodeURIComponent("
      << esc(nlohmann::json(e.node).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
      << ")\"><td>" << esc(e.node) << "</td><td>" << esc(e.op) << "</td><td>" << e.mode
      << "</td><td class='num'>" << num(e.err.cosine, "%.6f") << "</td><td class='num'>" << num(e.err.rel_l2)
      << "</td><td class='num'>" << num(e.own.rel_l2) << "</td><td class='num'>" << num(e.step)
      << "</td><td class='num'>" << num(e.err.max_abs) << "</td><td class='num'>"
      << num(e.err.sqnr_db, "%.1f") << "</td><td>" << esc(e.note) << "</td></tr>";
  }
  h << "</table>";
  return h.str();
}

}  // namespace

std::string compare_html(const std::string& title, const quant::CompareResult& before,
                         const quant::CompareResult* after, const quant::Fix* fix) {
  nlohmann::json layers = workflow::compare_result_json(before)["layers"];
  if (after && after->layers.size() == before.layers.size()) {
    const nlohmann::json fixed = workflow::compare_result_json(*after)["layers"];
    for (size_t i = 0; i < layers.size(); ++i) {
      layers[i]["after_fix_rel_l2"] = fixed[i]["rel_l2"];
      layers[i]["after_fix_mode"] = fixed[i]["mode"];
    }
  }
  int flagged = 0;
  for (const auto& e : before.layers) flagged += e.flagged;
  double cosine = 0;
  for (const auto& e : before.outputs) cosine += e.err.cosine / double(before.outputs.size());
  nlohmann::json page;
  page["title"] = title;
  page["facts"] = nlohmann::json::array({{"samples", before.samples},
                                         {"layers", before.layers.size()},
                                         {"mean output cosine", num(cosine, "%.6f")},
                                         {"median own rel L2", num(before.median_own)},
                                         {"flagged", flagged}});
  if (after) {
    double after_cosine = 0;
    for (const auto& e : after->outputs) after_cosine += e.err.cosine / double(after->outputs.size());
    page["facts"].push_back({"after --fix: mean output cosine", num(after_cosine, "%.6f")});
  }
  page["verdict"] = {
      {"good", flagged == 0},
      {"text", flagged == 0 ? "no layer's own error stands out"
                            : std::to_string(flagged) + " layer(s) flagged: their own error stands out"}};
  if (fix && !fix->empty())
    page["recommendation"] =
        "fix: " + (fix->layer_precisions.empty() ? "" : "--layerPrecisions=" + fix->layer_precisions + " ") +
        (fix->layer_devices.empty() ? "" : "--layerDeviceTypes=" + fix->layer_devices);
  page["layers"] = layers;
  page["name_key"] = "layer";
  page["categorical"] = {"mode", "op", "after_fix_mode"};
  page["colour_default"] = "own_rel_l2";
  page["numeric_skip"] = nlohmann::json::array();
  return html_page(page, compare_sections(before, after, fix));
}

}  // namespace dlakit::report
