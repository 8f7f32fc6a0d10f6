// Per-node cost figures for reports: multiply-accumulates of Conv/ConvTranspose/Gemm/MatMul.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "ir/graph.h"

namespace dlakit {

int64_t node_macs(const Graph& g, const Node& n);
int64_t graph_macs(const Graph& g);
std::map<std::string, int> op_histogram(const Graph& g);

}  // namespace dlakit
