// `dlakit inspect --html`: the placement as a page (see html_page.h): every layer of placement_json with
// all its fields, coloured by device; runs of one segment with DLA<->GPU transitions marked; reasons and
// fixes per layer; the segments; what the graph passes rewrote; the verdict and recommendation on top.
#pragma once
#include <string>
#include <vector>

#include "placement/placement.h"

namespace dlakit::report {

// `latency_us` (inspect --power-mode): each layer's predicted time, a field the page colours by first.
std::string inspect_html(const Graph& g, const Placement& p, const std::vector<double>* latency_us = nullptr);

}  // namespace dlakit::report
