// IR -> ONNX, for `dlakit split`: a set of nodes becomes a standalone, valid ONNX model. Fused
// activations (a pass's "dlakit_activation") are written back as separate standard nodes.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"

namespace dlakit {

// Serialised ModelProto of `nodes` (indices into g.nodes, topological), reading `inputs` and producing
// `outputs` (value ids). Constants the nodes read become initializers.
std::string export_onnx(const Graph& g, const std::vector<int>& nodes, const std::vector<int>& inputs,
                        const std::vector<int>& outputs, const std::string& graph_name);

}  // namespace dlakit
