// What calibrate, build and compare share about INT8: the calibrator choice (auto by default), the task
// metric, calibration on the samples at hand, and the warning when INT8 collapses.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "cli.h"
#include "quant/auto_calib.h"
#include "quant/cache_fit.h"
#include "quant/int8_check.h"
#include "quant/weight_tuning.h"

namespace dlakit::cli {

struct MetricFlags {
  std::string metric = "auto", labels, output, truth;
  float threshold = 0.5f;
  void add(CLI::App& app);
  // `auto` is resolved on the model's FP32 output for the first sample (quant::auto_metric); the choice
  // is printed on stderr unless quiet. `sources`: each sample's file (DataFlags::load), which the names in
  // a --truth file are checked against.
  quant::MetricSpec spec(const Graph& g, const std::vector<TensorMap>& samples, bool quiet,
                         const std::vector<std::string>& sources) const;
  std::string as_flags(const quant::MetricSpec& resolved) const;  // for a suggested command line
};

struct CalibFlags {
  std::string algo = "auto";
  double percentile = 99.99;
  void add(CLI::App& app, bool with_all);
};

// --bias-correction, --weight-rounding: edits of the model's INT8 convolution constants (weight_tuning.h).
struct TuneFlags {
  bool bias_correction = false, weight_rounding = false;
  void add(CLI::App& app);
  bool any() const { return bias_correction || weight_rounding; }
};
// Tunes g in place for the INT8 placement and scales, measured on the samples; prints one line.
void apply_tuning(Graph& g, const Placement& int8_placement, const quant::ScaleTable& scales,
                  const std::vector<TensorMap>& samples, const TuneFlags& t, bool quiet);
// Writes the graph (after dlakit's passes and any tuning) as ONNX.
void save_onnx(const Graph& g, const std::string& path, const std::string& name);

// --jetpack 5.1|6.0|6.1|6.2 -> the TensorRT version of that release for a cache header; 0 when unset.
struct CacheVersionFlags {
  int trt_version = 100300;
  std::string jetpack;
  void add(CLI::App& app);
  int version() const;
};

struct Calibration {
  quant::ScaleTable table;           // the chosen ranges
  quant::ScaleTable maxes;           // max |x| of every tensor (minmax), for reports
  std::string chosen;                // the calibrator that produced them
  quant::AutoCalibration automatic;  // auto and all: every candidate and its score
  std::vector<TensorMap> reference;  // FP32 outputs of the samples
  quant::Score score;                // the chosen ranges' INT8 score on the samples
  int samples = 0;
};

// Histograms in one FP32 pass over the samples; then the chosen calibrator, or (auto, all) every
// candidate scored by INT8 emulation against FP32 with the metric. `int8_placement`: what a build uses.
Calibration calibrate_samples(const Graph& g, const Placement& int8_placement,
                              const std::vector<TensorMap>& samples, const CalibFlags& c,
                              const quant::MetricSpec& metric);

void print_candidates(const Calibration& c, const quant::MetricSpec& metric);
nlohmann::json candidates_json(const Calibration& c);

// The INT8 scales of a model: a Q/DQ model's own, then the cache's (which win) fitted to the network
// (quant::fit_cache: folded and TensorRT-internal names ignored, aliases mapped); its warnings go to stderr.
quant::ScaleTable int8_scales(const PlacedModel& pm, const std::string& calib);

// `dlakit compare ... --fix --metric M --fix-target T --apply fix.json`: what to run when INT8 collapses.
std::string fix_command(const ModelFlags& m, const DataFlags& d, const MetricFlags& mf,
                        const quant::MetricSpec& metric, const std::string& calib);
// The warning on stderr when the check collapsed; nothing otherwise.
void warn_if_collapsed(const quant::Int8Check& c, const std::string& command);
nlohmann::json check_json(const quant::Int8Check& c, const std::string& command);

}  // namespace dlakit::cli
