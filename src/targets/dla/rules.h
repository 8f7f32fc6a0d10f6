// Per-node DLA capability: which DLA layer an ONNX node maps to, and every reason it cannot run there.
#pragma once
#include "ir/graph.h"
#include "targets/dla/limits.h"
#include "targets/dla/reason.h"

namespace dlakit::dla {

enum class Precision { kFP16, kINT8 };
const char* precision_name(Precision p);

// The DLA layer an op maps to ("Convolution", "Pooling", ...), or "" when there is none.
const char* dla_layer_of(OpKind op);

// Checks one node of an imported (and usually pass-optimised) graph against a chip's limits.
Capability check_node(const Graph& g, const Node& n, const DlaLimits& lim, Precision p);

}  // namespace dlakit::dla
