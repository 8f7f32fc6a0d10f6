// The overrides file (`--overrides fix.json`) must be accepted or rejected with dlakit::Error, never
// crash; what it accepts is applied by placement to a small real graph (glob matching over its layer
// names) without crashing or hanging.
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "base/error.h"
#include "onnx/importer.h"
#include "placement/overrides.h"

namespace {
const dlakit::Graph& graph() {
  static const dlakit::Graph g = [] {
    onnx::ModelProto m;
    const auto status = onnx::OnnxParser::Parse(m, R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[1,3,8,8] x, float[4,3,3,3] w, float[4] b) => (float[1,4,1,1] y) {
        conv1 = Conv<pads = [1, 1, 1, 1]>(x, w, b)
        relu1 = Relu(conv1)
        pool = GlobalAveragePool(relu1)
        y = Sigmoid(pool)
      })");
    if (!status.IsOK()) std::abort();
    const std::string bytes = m.SerializeAsString();
    return dlakit::import_onnx_bytes(bytes.data(), bytes.size(), {}, "overrides graph");
  }();
  return g;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    dlakit::PlacementOptions o;
    dlakit::add_overrides_json(std::string(reinterpret_cast<const char*>(data), size), "fuzz", o);
    (void)dlakit::place(graph(), o);
    o.standalone = true;
    (void)dlakit::place(graph(), o);
  } catch (const dlakit::Error&) {
  }
  return 0;
}
