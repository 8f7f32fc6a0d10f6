#include "quant/int8_check.h"

#include <algorithm>
#include <cmath>

namespace dlakit::quant {

Int8Check check_int8(const Graph& g, const NumericsPlan& plan, const std::vector<TensorMap>& samples,
                     const MetricSpec& metric, const Score* known) {
  Int8Check c;
  c.metric = metric;
  c.threshold = collapse_threshold(metric.kind);
  c.samples = int(samples.size());
  if (known) {
    c.score = *known;
    c.collapsed = !meets(c.metric.kind, c.score.metric, c.threshold);
    if (!c.collapsed) return c;
  }
  // Below the threshold (or not measured yet): one comparison gives the score and every layer's own error.
  const CompareResult r = compare_numerics(g, plan, samples, {}, metric);
  c.score = r.score;
  c.collapsed = !meets(c.metric.kind, c.score.metric, c.threshold);
  if (!c.collapsed) return c;
  for (const LayerError& e : r.layers)
    if (e.mode == "int8" && std::isfinite(e.own.rel_l2)) c.worst.push_back(e);
  std::stable_sort(c.worst.begin(), c.worst.end(),
                   [](const LayerError& a, const LayerError& b) { return a.own.rel_l2 > b.own.rel_l2; });
  if (c.worst.size() > 5) c.worst.resize(5);
  return c;
}

std::string describe(const Int8Check& c) {
  std::string s =
      "INT8 " + std::string(c.collapsed ? "falls below the warning threshold" : "holds") + " on " +
      std::to_string(c.samples) + " sample(s): " + format_metric_value(c.metric, c.score.metric) + " " +
      metric_reference(c.metric) + " (threshold " + format_metric_value(c.metric, c.threshold) + ")";
  if (c.worst.empty()) return s;
  s += "; the layers with the most error of their own:";
  for (const LayerError& e : c.worst) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " (%s, relative L2 %.3g)", e.op.c_str(), e.own.rel_l2);
    s += " " + e.node + buf;
  }
  return s;
}

}  // namespace dlakit::quant
