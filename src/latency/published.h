// NVIDIA's published DLA timings the model is fitted on (calibration) and checked against (validation),
// as data: ../shared/specs/dla-performance.md and dla-constraints.md 5.2. The reconstructed networks
// (scripts/export_latency_nets.py) are named by `network`.
#pragma once
#include <string>
#include <vector>

namespace dlakit::latency {

enum class RowRole { kCalibration, kValidation };

struct PublishedRow {
  std::string label;    // "ResNet-50 (224x224, bs 2)"
  std::string network;  // file stem of the reconstruction: NETS_DIR/<network>.onnx
  long long batch = 1;  // images per inference (pins a dynamic batch)
  std::string mode;     // Orin power mode; empty: the custom clocks below
  double dla_mhz = 0, dram_gb_per_s = 0;
  double published_ms = 0;   // one inference of the batch on one DLA core
  std::string published;     // as published ("2037 img/s, 2 DLAs"; "3.82 ms")
  bool fp16_output = false;  // output tensors in fp16:chw16 (else int8:chw32)
  std::string fp16_layers;   // --layerPrecisions-style globs of layers kept in FP16
  RowRole role = RowRole::kValidation;
  std::string source;
  double published_gmacs = 0;  // per image, where a source states it (0: not published)
  std::string macs_source;
};

const std::vector<PublishedRow>& published_rows();

}  // namespace dlakit::latency
