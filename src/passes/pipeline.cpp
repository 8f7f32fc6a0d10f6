#include <algorithm>

#include "passes/passes.h"

namespace dlakit {

std::vector<int> consumers(const Graph& g, int value) {
  std::vector<int> r;
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (int i : g.nodes[n].inputs)
      if (i == value) {
        r.push_back(int(n));
        break;
      }
  return r;
}

bool is_graph_output(const Graph& g, int value) {
  return std::find(g.outputs.begin(), g.outputs.end(), value) != g.outputs.end();
}

const std::vector<PassInfo>& dla_pipeline() {
  static const std::vector<PassInfo> p = {
      {"remove-identity", "drop Identity and inference-mode Dropout", passes::remove_identity},
      {"fold-constants", "evaluate nodes whose inputs are all constant", passes::fold_constants},
      {"fold-batchnorm", "fold BatchNormalization into the preceding Conv/ConvTranspose",
       passes::fold_batchnorm},
      {"fold-pad", "fold a zero Pad into the next Conv's padding", passes::fold_pad},
      {"decompose", "HardSigmoid/HardSwish -> Mul/Add + clipped ReLU (DLA Scale + Activation)",
       passes::decompose},
      {"fuse-activation", "fuse Relu/Clip/LeakyRelu into the preceding Conv", passes::fuse_activation},
      {"dead-code", "remove nodes that reach no output", passes::eliminate_dead_code},
  };
  return p;
}

std::vector<Remark> run_passes(Graph& g, const std::vector<std::string>& disabled) {
  std::vector<Remark> remarks;
  for (const PassInfo& p : dla_pipeline()) {
    if (std::find(disabled.begin(), disabled.end(), p.name) != disabled.end()) continue;
    p.run(g, remarks);
    g.relink();
    g.verify();
  }
  return remarks;
}

}  // namespace dlakit
