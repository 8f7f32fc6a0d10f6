// Small models for tests, written in ONNX's text syntax (onnx/defs/parser.h): parsed, imported and run
// through dlakit's graph passes, as `dlakit build` would take them.
#pragma once
#include <gtest/gtest.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include <string>

#include "onnx/importer.h"
#include "passes/passes.h"

namespace dlakit::test_data {

inline Graph passed_graph_of(const std::string& onnx_text) {
  onnx::ModelProto m;
  const auto status = onnx::OnnxParser::Parse(m, onnx_text.c_str());
  EXPECT_TRUE(status.IsOK()) << status.ErrorMessage();
  const std::string bytes = m.SerializeAsString();
  Graph g = import_onnx_bytes(bytes.data(), bytes.size());
  run_passes(g);
  return g;
}

}  // namespace dlakit::test_data
