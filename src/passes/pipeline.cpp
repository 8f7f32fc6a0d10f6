#include <algorithm>

#include "passes/adjust_for_dla.h"
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
  // The passes that need no options take none; the lambdas adapt them to the one signature.
  static const std::vector<PassInfo> p = {
      {"remove-identity", "drop Identity and inference-mode Dropout",
       [](Graph& g, const PassOptions&, std::vector<Remark>& r) { passes::remove_identity(g, r); }},
      {"fold-constants", "evaluate nodes whose inputs are all constant",
       [](Graph& g, const PassOptions&, std::vector<Remark>& r) { passes::fold_constants(g, r); }},
      {"fold-batchnorm", "fold BatchNormalization into the preceding Conv/ConvTranspose",
       [](Graph& g, const PassOptions&, std::vector<Remark>& r) { passes::fold_batchnorm(g, r); }},
      {"fold-pad", "fold a zero Pad into the next Conv's padding",
       [](Graph& g, const PassOptions&, std::vector<Remark>& r) { passes::fold_pad(g, r); }},
      {"decompose", "HardSigmoid/HardSwish -> Mul/Add + clipped ReLU (DLA Scale + Activation)",
       [](Graph& g, const PassOptions&, std::vector<Remark>& r) { passes::decompose(g, r); }},
      {"adjust-for-dla",
       "exact rewrites into layers the target's DLA runs (trtexec's --adjustForDLA, on by default)",
       passes::adjust_for_dla},
      {"fuse-activation", "fuse Relu/Clip/LeakyRelu into the preceding Conv",
       [](Graph& g, const PassOptions&, std::vector<Remark>& r) { passes::fuse_activation(g, r); }},
      {"dead-code", "remove nodes that reach no output",
       [](Graph& g, const PassOptions&, std::vector<Remark>& r) { passes::eliminate_dead_code(g, r); }},
  };
  return p;
}

std::vector<std::string> pass_names() {
  std::vector<std::string> names;
  for (const PassInfo& p : dla_pipeline()) names.push_back(p.name);
  for (const adjust::Rewrite& r : adjust::rewrites()) names.push_back(r.name);
  return names;
}

std::vector<Remark> run_passes(Graph& g, const PassOptions& o) {
  const std::vector<std::string> known = pass_names();
  for (const std::string& d : o.disabled)
    if (std::find(known.begin(), known.end(), d) == known.end()) {
      std::string list;
      for (auto& k : known) list += (list.empty() ? "" : ", ") + k;
      fail(Status::kInvalidArgument, "--disable-pass: no pass or rewrite named '", d, "' (known: ", list,
           ")");
    }
  std::vector<Remark> remarks;
  for (const PassInfo& p : dla_pipeline()) {
    if (std::find(o.disabled.begin(), o.disabled.end(), p.name) != o.disabled.end()) continue;
    p.run(g, o, remarks);
    g.relink();
    g.verify();
  }
  return remarks;
}

}  // namespace dlakit
