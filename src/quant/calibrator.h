// Calibrators: from a histogram of |x| collected over the calibration data to one dynamic range (amax).
//   entropy2   TensorRT-like KL divergence (2048 bins, 128 quantized levels; dla-constraints.md §4.4)
//   minmax     amax = max |x|
//   percentile amax = the p-th percentile of |x| (default 99.99)
//   mse        the amax minimising the quantize-dequantize mean squared error over the histogram
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dlakit::quant {

// Histogram of |x| over [0, bins * width). The first data fixes width = max|x| / 2048; later data with a
// larger max adds bins of the same width (one pass, deterministic); past kMaxBins, pairs merge.
class AbsHistogram {
 public:
  static constexpr int kInitialBins = 2048;
  static constexpr int kMaxBins = 2048 * 8;
  void add(const float* x, int64_t n);
  const std::vector<double>& counts() const { return counts_; }
  double width() const { return width_; }
  float amax() const { return amax_; }  // exact max |x| seen (NaN ignored)
  double total() const;

 private:
  void grow_to(float max_abs);
  std::vector<double> counts_;
  double width_ = 0;
  float amax_ = 0;
  double pending_zeros_ = 0;  // zeros seen before any non-zero value fixed the width
};

enum class CalibAlgo { kEntropy2, kMinMax, kPercentile, kMse };
CalibAlgo parse_calib_algo(const std::string& s);  // "entropy2" | "minmax" | "percentile" | "mse"
const char* calib_algo_name(CalibAlgo a);

struct CalibOptions {
  CalibAlgo algo = CalibAlgo::kEntropy2;
  double percentile = 99.99;
};

inline constexpr double kMinEntropyValues = 16384;  // 8 values per bin of the initial histogram

float compute_amax(const AbsHistogram& h, const CalibOptions& o);

// The individual algorithms on raw bins (bin i covers [i*width, (i+1)*width)).
float amax_entropy(std::vector<double> bins, double width, int levels = 128, int start_bin = 128);
float amax_percentile(const std::vector<double>& bins, double width, double percentile, float max_abs);
float amax_mse(const std::vector<double>& bins, double width, int start_bin = 128);
// amax_mse with its plain loop on any CPU (amax_mse runs eight candidates at a time where the CPU has
// AVX-512, with the same operations per candidate: the same result bit for bit).
float amax_mse_plain(const std::vector<double>& bins, double width, int start_bin = 128);

}  // namespace dlakit::quant
