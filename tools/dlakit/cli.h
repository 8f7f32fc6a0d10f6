// Shared pieces of the dlakit subcommands.
#pragma once
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "onnx/importer.h"

namespace dlakit::cli {

// Flags every model-reading command shares.
struct ModelFlags {
  std::string model;
  std::string input_shape;  // name:1x3x224x224[,...]
  int threads = 0;
  void add(CLI::App& app);
  ImportOptions import_options() const;
  void apply_threads() const;
};

std::string human(double v);  // 1.2 K, 3.4 M, 5.6 G

void register_info(CLI::App& app);
void register_run(CLI::App& app);

}  // namespace dlakit::cli
