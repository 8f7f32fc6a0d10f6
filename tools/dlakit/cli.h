// Shared pieces of the dlakit subcommands.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "base/file.h"
#include "engine/engine.h"
#include "onnx/importer.h"
#include "placement/placement.h"
#include "quant/calib_cache.h"
#include "workflow/placed_model.h"

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
  std::string target = "orin", layer_devices, layer_precisions, op_devices, op_precisions, overrides_file;
  bool standalone = false, fallback = false, int8 = false, fp16 = false, no_passes = false;
  bool no_adjust_for_dla = false, adjust_for_dla = false;
  int dla_core = 0;
  std::vector<std::string> disabled_passes;
  void add(CLI::App& app);
  PlacementOptions options() const;
  workflow::PassOptions passes() const;
};

// Imports the model, runs the passes and places it: what inspect, split, calibrate, compare and build
// start from (workflow::place_model, which the Python module calls too).
using workflow::PlacedModel;
PlacedModel load_and_place(const ModelFlags& m, const PlacementFlags& p);

// "0.485,0.456,0.406" -> 3 floats; "640x480" -> {640, 480}. Errors name the flag.
std::vector<float> floats(const std::string& s, const char* what);
// --std: floats(s, "--std"), each > 0 (the pixels are divided by them).
std::vector<float> std_devs(const std::string& s);
std::pair<int, int> parse_size(const std::string& s);

// Calibration / comparison data: image files or folders (preprocessed like `run --image`) and .npy files
// (a leading batch dimension larger than the model's is split into samples), for the model's first input.
struct DataFlags {
  std::vector<std::string> data;
  std::string size, mean = "0,0,0", std = "1,1,1";
  float scale = 1.0f / 255.0f;
  bool bgr = false, nhwc = false;
  int max_samples = 0;
  void add(CLI::App& app, bool required = true);
  // `sources`, when given, receives each sample's file (a batched .npy gives each of its samples its name).
  std::vector<TensorMap> load(const Graph& g, std::vector<std::string>* sources = nullptr) const;
  std::string as_flags() const;  // the same data on another command line: "--data D --mean ..."
};

// A progress bar on stderr when it is a terminal ("calibrating [#####.....] 12/64"); silent otherwise.
std::function<void(int, int)> progress_bar(const std::string& what);

inline int exit_code = 0;  // what main returns when a command succeeded but has a verdict (inspect)

std::string human(double v);  // 1.2 K, 3.4 M, 5.6 G

void register_info(CLI::App& app);
void register_run(CLI::App& app);
void register_inspect(CLI::App& app);
void register_split(CLI::App& app);
void register_build(CLI::App& app);
void register_bench(CLI::App& app);
void register_calibrate(CLI::App& app);
void register_compare(CLI::App& app);

}  // namespace dlakit::cli
