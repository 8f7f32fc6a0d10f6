// Shared pieces of the dlakit subcommands.
#pragma once
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "base/file.h"
#include "onnx/importer.h"
#include "placement/placement.h"

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

// Flags every placement-aware command shares (inspect, split, build).
struct PlacementFlags {
  PlacementFlags();
  std::string target = "orin", layer_devices, layer_precisions, op_devices, op_precisions;
  bool standalone = false, fallback = false, int8 = false, fp16 = false, no_passes = false;
  int dla_core = 0;
  std::vector<std::string> disabled_passes;
  void add(CLI::App& app);
  PlacementOptions options() const;
  std::vector<Remark> optimize(Graph& g) const;
};

// Imports the model, runs the passes and places it: what inspect and split (and later build) start from.
struct PlacedModel {
  Graph graph;
  Placement placement;
};
PlacedModel load_and_place(const ModelFlags& m, const PlacementFlags& p);

inline int exit_code = 0;  // what main returns when a command succeeded but has a verdict (inspect)

std::string human(double v);  // 1.2 K, 3.4 M, 5.6 G

void register_info(CLI::App& app);
void register_run(CLI::App& app);
void register_inspect(CLI::App& app);
void register_split(CLI::App& app);
void register_build(CLI::App& app);
void register_bench(CLI::App& app);

}  // namespace dlakit::cli
