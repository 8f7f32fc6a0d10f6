#include "compare_report.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace dlakit::cli {

std::string format_metric(double v, const char* fmt) {
  if (std::isinf(v)) return "inf";
  char b[32];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}

namespace {

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else if (c == '"')
      o += "&quot;";
    else
      o += c;
  }
  return o;
}

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

}  // namespace

std::string compare_html(const std::string& title, const quant::CompareResult& before,
                         const quant::CompareResult* after, const quant::Fix* fix) {
  std::ostringstream h;
  h << "<!doctype html><html><head><meta charset='utf-8'><title>" << esc(title) << "</title><style>"
    << "body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;font-size:12px}"
    << "td,th{border:1px solid #ccc;padding:2px "
       "6px;text-align:right}td:first-child,td:nth-child(2){text-align:"
    << "left}tr.flag{background:#fde2e0}</style></head><body><h1>" << esc(title) << "</h1>"
    << "<p>" << before.samples << " samples; median error step " << num(before.median_step)
    << "; median own error " << num(before.median_own)
    << ". A layer is flagged when its own error (emulated alone on the FP32 reference's inputs) is at "
    << "least 10x the median and 0.01.</p>"
    << "<h2>Error per layer</h2>" << error_chart(before, after)
    << "<h2>Outputs</h2><table><tr><th>output</th>"
    << "<th>run</th><th>cosine</th><th>rel L2</th><th>max abs</th><th>SQNR dB</th></tr>";
  auto out_rows = [&](const quant::CompareResult& r, const char* run) {
    for (const auto& e : r.outputs)
      h << "<tr><td>" << esc(e.tensor) << "</td><td>" << run << "</td><td>" << num(e.err.cosine, "%.6f")
        << "</td><td>" << num(e.err.rel_l2) << "</td><td>" << num(e.err.max_abs) << "</td><td>"
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
  for (const auto& e : before.layers)
    h << "<tr" << (e.flagged ? " class='flag'" : "") << "><td>" << esc(e.node) << "</td><td>" << esc(e.op)
      << "</td><td>" << e.mode << "</td><td>" << num(e.err.cosine, "%.6f") << "</td><td>" << num(e.err.rel_l2)
      << "</td><td>" << num(e.own.rel_l2) << "</td><td>" << num(e.step) << "</td><td>" << num(e.err.max_abs)
      << "</td><td>" << num(e.err.sqnr_db, "%.1f") << "</td><td>" << esc(e.note) << "</td></tr>";
  h << "</table></body></html>\n";
  return h.str();
}

}  // namespace dlakit::cli
