// Predicted board latency of a placed model: every DLA segment lowered to hardware operations and timed
// by the model, GPU segments and DLA<->GPU transitions estimated (hybrid.h), per layer, per segment and
// in total, for one chip and power mode. The entry point for inspect, bench --predict, the INT8
// mixed-precision search and the HTML report: place the graph with the candidate precisions, then call
// predict_latency. All numbers are predictions, not measurements.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "latency/chip.h"
#include "latency/model.h"
#include "latency/params.h"
#include "placement/placement.h"

namespace dlakit::latency {

struct LatencyOptions {
  std::string power_mode = "MAXN";
  // The application hands and receives the DLA's native formats (kDLA_HWC4 / kCHW32 / kCHW16: what
  // dlakit build and NVIDIA's published runs use). False: FP32 linear tensors, as trtexec without
  // --inputIOFormats, so TensorRT puts GPU reformat kernels around the DLA.
  bool native_io = true;
  // INT8 builds read a <= 4-channel network input as a kDLA_HWC4 image (NVIDIA's published setup).
  bool image_input = true;
  // How the network outputs are stored (default: the build precision; fp16:chw16 outputs of an INT8
  // build make the last operations write FP16).
  std::optional<OpPrecision> output_precision;
  const ModelParams* params = nullptr;  // default: fitted_params(target)
  const PowerMode* mode = nullptr;      // default: the chip's power_mode (validation rows pass others)
};

struct LayerLatency {
  double latency_us = 0;   // the layer's operation (0 when fused into another layer's operation)
  std::string role;        // "operation", "fused", "free", "gpu"
  std::string bottleneck;  // compute | memory | overhead (DLA); "roofline" (GPU estimate)
  std::string fused_into;  // the layer whose operation carries this one's time
  int op = -1;             // index into LatencyReport::ops (DLA layers)
};

struct SegmentLatency {
  int id = 0;
  Device device = Device::kDLA;
  double latency_us = 0;
  int operations = 0;  // DLA hardware operations or GPU kernels
};

struct TransitionLatency {
  std::string tensor, direction;  // "DLA->GPU", "GPU->DLA", "input reformat", "output reformat"
  int64_t bytes = 0;
  double reformat_us = 0, sync_us = 0;
};

struct LatencyReport {
  std::string target, power_mode;
  int64_t batch = 1;
  double dla_ms = 0;          // the DLA tasks of one inference of the batch on one core
  double gpu_ms = 0;          // GPU fallback layers (estimate)
  double transitions_ms = 0;  // DLA<->GPU hand-overs and I/O reformats (estimate)
  double total_ms = 0;
  double images_per_s_2cores = 0;    // both DLA cores busy; the GPU part shared (see docs/latency-model.md)
  std::vector<LayerLatency> layers;  // parallel to graph.nodes
  std::vector<SegmentLatency> segments;
  std::vector<TransitionLatency> transitions;
  std::vector<HwOp> ops;  // the DLA operations, in order
  std::vector<OpTime> op_times;
  PowerMode mode;
  int cores = 2;
};

// The DLA segments of a placement lowered to hardware operations, one task (loadable) per segment, with
// the same options predict_latency uses (the fit reads these).
std::vector<std::vector<HwOp>> lower_dla_tasks(const Graph& g, const Placement& p, const LatencyOptions& opt);

LatencyReport predict_latency(const Graph& g, const Placement& p, const LatencyOptions& opt = {});

// The top-level "latency" object of `inspect --json` (schema in docs/latency-model.md).
nlohmann::json latency_json(const Graph& g, const LatencyReport& r);
// Per-layer, per-segment and per-transition text for `dlakit inspect --power-mode`.
std::string latency_text(const Graph& g, const Placement& p, const LatencyReport& r);
// One paragraph on power: the mode's budget and NVIDIA's published DLA-vs-GPU perf/W range.
std::string power_text(const PowerMode& m);

}  // namespace dlakit::latency
