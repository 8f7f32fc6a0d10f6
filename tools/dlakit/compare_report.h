// The self-contained HTML report of `dlakit compare`: inline SVG of the error per layer (before and
// after a fix), the outputs, and every layer's metrics.
#pragma once
#include <string>

#include "quant/compare.h"

namespace dlakit::cli {
// A metric for people: printf-formatted, "inf" for infinities (identical tensors have infinite SQNR).
std::string format_metric(double v, const char* fmt = "%.3g");

std::string compare_html(const std::string& title, const quant::CompareResult& before,
                         const quant::CompareResult* after, const quant::Fix* fix);
}  // namespace dlakit::cli
