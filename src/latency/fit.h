// The fit of the model's unknown parameters on the calibration rows (published.h) with the reconstructed
// networks, and the predictions for every row. Used by tools/latency_fit (which writes the report in
// docs/latency-model.md) and by the test that checks the committed parameters are the fit's result.
#pragma once
#include <string>
#include <vector>

#include "latency/chip.h"
#include "latency/hw_op.h"
#include "latency/params.h"
#include "latency/published.h"

namespace dlakit::latency {

struct PreparedRow {
  const PublishedRow* row = nullptr;
  PowerMode mode;
  std::vector<std::vector<HwOp>> tasks;  // DLA operations, one task per loadable
  double gmacs = 0;                      // of the reconstruction, per image
  int layers = 0, operations = 0;
};

// Imports NETS_DIR/<network>.onnx, runs dlakit's passes, places it on Orin in INT8 with the row's FP16
// layers, and lowers it as predict_latency does (kDLA_HWC4 input; int8:chw32 or fp16:chw16 outputs).
PreparedRow prepare_row(const PublishedRow& row, const std::string& nets_dir);
PowerMode row_mode(const PublishedRow& row);  // the Orin power mode, or the row's own clocks

double predict_ms(const PreparedRow& r, const Chip& chip, const ModelParams& params);

struct FitChoice {
  ModelParams params;
  double rms = 0, max_abs = 0;  // relative residuals (predicted / published - 1) on the calibration rows
};
struct FitResult {
  FitChoice best;
  std::vector<FitChoice> per_geometry;  // the best fit for every MAC geometry and buffer size tried
};

// The buffer sizes the fit may choose: at least 512 KiB, because TensorRT's admission check allots 16
// banks of 32 KiB to one convolution on Orin (dla-constraints.md 1.2).
std::vector<long long> admissible_buffers();

// Grid over the MAC geometry (atom C x atom K = the chip's INT8 MACs/cycle), the buffer size, the
// depthwise rule, the overlap and the DRAM efficiency; for each point the three fixed costs by
// non-negative least squares of the relative residuals. `start` supplies everything that is not fitted.
FitResult fit_params(const std::vector<PreparedRow>& calibration, const Chip& chip, const ModelParams& start,
                     const std::vector<long long>& buffers = admissible_buffers());

}  // namespace dlakit::latency
