// The self-contained HTML report of `dlakit compare` (html_page.h): the layers coloured by their own
// error (or any metric), flagged ones marked, details per layer; an inline SVG of the error per layer
// (before and after a fix), the outputs, the fix, and every layer's metrics (a row selects the layer).
#pragma once
#include <string>

#include "quant/compare.h"

namespace dlakit::report {
// A metric for people: printf-formatted, "inf" for infinities (identical tensors have infinite SQNR).
std::string format_metric(double v, const char* fmt = "%.3g");

std::string compare_html(const std::string& title, const quant::CompareResult& before,
                         const quant::CompareResult* after, const quant::Fix* fix);
}  // namespace dlakit::report
