// ONNX -> Graph. Reports every unsupported node at once, sorts nodes itself (some exporters write them
// out of order), infers every shape, and folds constant subgraphs (shape arithmetic included) so that
// exports with dynamic reshape logic become static graphs.
#pragma once
#include <map>
#include <string>

#include "ir/graph.h"

namespace dlakit {

struct ImportOptions {
  std::map<std::string, Shape> input_shapes;      // pins dynamic input dims: name -> full shape
  bool fold_constants = true;                     // Q/DQ nodes are never folded (their scales matter)
  std::map<std::string, Tensor> constant_inputs;  // graph inputs bound to values at import (become constants)
  // Values given for graph inputs at run time (`dlakit run --input`). An input that shape inference needs
  // as a constant (Reshape's shape, Resize's scales/sizes, Pad's pads, Slice's starts/ends/steps,
  // Squeeze/Unsqueeze axes...) is bound to its value, so the graph is specialized on it as trtexec does
  // with shape tensors given by --shapes; the other inputs stay runtime inputs.
  std::map<std::string, Tensor> runtime_values;
};

// What the file declares, before import: for `dlakit info` and clear errors about dynamic inputs.
struct OnnxSignature {
  int64_t ir_version = 0;
  int opset = 0;
  std::string producer;
  struct Io {
    std::string name;
    std::string dtype;
    std::vector<std::string> dims;  // "1", "N", "?"
  };
  std::vector<Io> inputs, outputs;
  std::map<std::string, int> op_histogram;  // as written in the file, Constant nodes included
  int node_count = 0;
};

Graph import_onnx_file(const std::string& path, const ImportOptions& opt = {});
Graph import_onnx_bytes(const void* data, size_t size, const ImportOptions& opt = {},
                        const std::string& origin = "<memory>");
OnnxSignature read_onnx_signature(const std::string& path);

// Parses "x:1x3x224x224[,y:1x10]" into the map; an error names the bad entry.
std::map<std::string, Shape> parse_input_shapes(const std::string& spec);

}  // namespace dlakit

namespace dlakit {
// Reads one serialized onnx.TensorProto (the backend tests' input_K.pb / output_K.pb files).
Tensor load_tensor_pb(const std::string& path, std::string* name = nullptr);
}  // namespace dlakit
