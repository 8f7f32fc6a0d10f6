#include "quant/calibrator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "base/cpu.h"
#include "base/error.h"
#include "base/threadpool.h"

namespace dlakit::quant {

double AbsHistogram::total() const {
  double t = 0;
  for (double c : counts_) t += c;
  return t;
}

void AbsHistogram::grow_to(float max_abs) {
  if (counts_.empty()) {
    width_ = double(max_abs) / kInitialBins;
    counts_.assign(kInitialBins, 0.0);
    return;
  }
  const double need = std::ceil(double(max_abs) / width_);
  size_t bins = size_t(std::max<double>(need, double(counts_.size())));
  while (bins > size_t(kMaxBins)) {  // merge pairs: same data, half the resolution
    std::vector<double> merged((counts_.size() + 1) / 2, 0.0);
    for (size_t i = 0; i < counts_.size(); ++i) merged[i / 2] += counts_[i];
    counts_ = std::move(merged);
    width_ *= 2;
    bins = size_t(std::max<double>(std::ceil(double(max_abs) / width_), double(counts_.size())));
  }
  counts_.resize(bins, 0.0);
}

void AbsHistogram::add(const float* x, int64_t n) {
  // Both passes run on the threads, a run of values each: maxima and counts are the same in any order
  // (counts are whole numbers, summed exactly), so the histogram does not depend on the thread count.
  constexpr int64_t kRun = int64_t(1) << 15;
  const int64_t runs = (n + kRun - 1) / kRun;
  std::vector<float> run_max(size_t(runs), 0.f);
  parallel_for(runs, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float m = 0;
      for (int64_t i = r * kRun; i < std::min(n, (r + 1) * kRun); ++i) {
        const float a = std::fabs(x[i]);
        if (a > m && std::isfinite(a)) m = a;
      }
      run_max[size_t(r)] = m;
    }
  });
  const float m = runs ? *std::max_element(run_max.begin(), run_max.end()) : 0.f;
  amax_ = std::max(amax_, m);
  if (counts_.empty() && m == 0) {
    // All zeros so far: nothing fixes the width yet; remember the zeros.
    pending_zeros_ += double(n);
    return;
  }
  if (counts_.empty() || m > counts_.size() * width_) grow_to(m);
  if (pending_zeros_ > 0) {
    counts_[0] += pending_zeros_;
    pending_zeros_ = 0;
  }
  const double inv = 1.0 / width_;
  const int64_t last = int64_t(counts_.size()) - 1;
  auto count = [&](int64_t from, int64_t to, double* into) {
    for (int64_t i = from; i < to; ++i) {
      const float a = std::fabs(x[i]);
      if (std::isfinite(a)) into[std::min<int64_t>(int64_t(double(a) * inv), last)] += 1;
    }
  };
  if (runs <= 1) return count(0, n, counts_.data());
  std::mutex merge;
  parallel_for(runs, [&](int64_t r0, int64_t r1) {
    std::vector<double> local(counts_.size(), 0.0);
    count(r0 * kRun, std::min(n, r1 * kRun), local.data());
    std::lock_guard<std::mutex> lock(merge);
    for (size_t b = 0; b < local.size(); ++b) counts_[b] += local[b];
  });
}

CalibAlgo parse_calib_algo(const std::string& s) {
  if (s == "entropy2" || s == "entropy") return CalibAlgo::kEntropy2;
  if (s == "minmax") return CalibAlgo::kMinMax;
  if (s == "percentile") return CalibAlgo::kPercentile;
  if (s == "mse") return CalibAlgo::kMse;
  fail(Status::kInvalidArgument, "unknown calibrator '", s, "'; use entropy2, minmax, percentile or mse");
}

const char* calib_algo_name(CalibAlgo a) {
  switch (a) {
    case CalibAlgo::kEntropy2:
      return "entropy2";
    case CalibAlgo::kMinMax:
      return "minmax";
    case CalibAlgo::kPercentile:
      return "percentile";
    case CalibAlgo::kMse:
      return "mse";
  }
  return "?";
}

float compute_amax(const AbsHistogram& h, const CalibOptions& o) {
  if (h.counts().empty() || h.amax() == 0) return 0.f;
  switch (o.algo) {
    case CalibAlgo::kMinMax:
      return h.amax();
    case CalibAlgo::kPercentile:
      return amax_percentile(h.counts(), h.width(), o.percentile, h.amax());
    case CalibAlgo::kMse:
      return std::min(h.amax(), amax_mse(h.counts(), h.width()));
    case CalibAlgo::kEntropy2:
      // A 2048-bin histogram of a few hundred values (a squeeze-excitation vector over a small calibration
      // set) is mostly empty bins, and KL then picks the smallest candidate. Below kMinEntropyValues
      // observed values the range is the max (dlakit's guard; TensorRT's behaviour here is unknown).
      if (h.total() < kMinEntropyValues) return h.amax();
      return std::min(h.amax(), amax_entropy(h.counts(), h.width()));
  }
  return h.amax();
}

// KL(P || Q) for candidate thresholds of i bins (i = start_bin .. n): P is bins[0..i) with every
// outlier added to its last bin; Q squeezes bins[0..i) (without the outliers) into `levels` levels (bin j
// goes to level j * levels / i) and spreads each level's count evenly over that level's non-empty bins;
// empty bins stay empty. P and Q are each normalised. bins[0] takes bins[1]'s count so a spike at 0
// (ReLU) does not dominate. The last minimum wins; amax is the threshold's bin edge, i * width. This is
// the public description of TensorRT's algorithm (GTC 2017 S7310) as pytorch-quantization implements it;
// TensorRT's own code is closed. A grown histogram is searched every n/2048 bins to bound the cost.
float amax_entropy(std::vector<double> bins, double width, int levels, int start_bin) {
  const int n = int(bins.size());
  if (n <= levels || n < 2) return float(n * width);
  bins[0] = bins[1];
  std::vector<double> suffix(size_t(n) + 1, 0.0);  // suffix[i] = sum bins[i..n)
  for (int i = n - 1; i >= 0; --i) suffix[size_t(i)] = suffix[size_t(i) + 1] + bins[size_t(i)];
  const double p_total = suffix[0];
  if (p_total <= 0) return float(n * width);
  const int stride = std::max(1, n / 2048);
  double best = std::numeric_limits<double>::infinity();
  int best_i = n;
  // What does not depend on the candidate is computed once, and bin j's level j * levels / i is stepped
  // (levels < i: it grows by at most one a bin): the same values, in the same order, as the formulas above,
  // without a division per bin and candidate.
  std::vector<double> p_normal(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j) p_normal[size_t(j)] = bins[size_t(j)] / p_total;
  std::vector<double> level_sum(static_cast<size_t>(levels)), level_nonzero(static_cast<size_t>(levels)),
      q_normal(static_cast<size_t>(levels));
  std::vector<int> level_of(static_cast<size_t>(n));
  for (int i = std::max(start_bin, levels); i <= n; i += stride) {
    std::fill(level_sum.begin(), level_sum.end(), 0.0);
    std::fill(level_nonzero.begin(), level_nonzero.end(), 0.0);
    int level = 0;
    int64_t next_level_at = i;  // (level + 1) * i, against j * levels
    for (int j = 0; j < i; ++j) {
      if (int64_t(j) * levels >= next_level_at) ++level, next_level_at += i;
      level_of[size_t(j)] = level;
      if (bins[size_t(j)] == 0) continue;
      level_sum[size_t(level)] += bins[size_t(j)];
      level_nonzero[size_t(level)] += 1;
    }
    const double q_total = p_total - suffix[size_t(i)];
    if (q_total <= 0) continue;
    for (int l = 0; l < levels; ++l)
      if (level_nonzero[size_t(l)] > 0)
        q_normal[size_t(l)] = level_sum[size_t(l)] / level_nonzero[size_t(l)] / q_total;
    double kl = 0;
    for (int j = 0; j < i; ++j) {
      const bool last = j == i - 1;
      if (bins[size_t(j)] == 0) {
        if (last && suffix[size_t(i)] != 0)
          kl = std::numeric_limits<double>::infinity();  // P has the outliers where Q has nothing
        if (last) break;
        continue;
      }
      const double pn = last ? (bins[size_t(j)] + suffix[size_t(i)]) / p_total : p_normal[size_t(j)];
      const double qn = q_normal[size_t(level_of[size_t(j)])];
      kl += pn * std::log(pn / qn);
    }
    if (kl <= best) {
      best = kl;
      best_i = i;
    }
  }
  return float(best_i * width);
}

float amax_percentile(const std::vector<double>& bins, double width, double percentile, float max_abs) {
  if (!(percentile > 0 && percentile <= 100))
    fail(Status::kInvalidArgument, "percentile ", percentile, " must be in (0, 100]");
  double total = 0;
  for (double b : bins) total += b;
  const double target = total * percentile / 100.0;
  double cum = 0;
  for (size_t i = 0; i < bins.size(); ++i) {
    cum += bins[i];
    if (cum >= target) return std::min(max_abs, float(double(i + 1) * width));
  }
  return max_abs;
}

namespace {

// The non-empty bins (centres and counts, in bin order) and the candidate bin counts of amax_mse's search.
struct MseSearch {
  std::vector<double> centre, count;
  std::vector<int> candidates;
};

MseSearch mse_search(const std::vector<double>& bins, double width, int start_bin) {
  MseSearch m;
  const int n = int(bins.size());
  for (int j = 0; j < n; ++j) {
    if (bins[size_t(j)] == 0) continue;  // adds nothing to any candidate's error
    m.centre.push_back((j + 0.5) * width);
    m.count.push_back(bins[size_t(j)]);
  }
  // Candidates every `stride` bins keep the O(n^2) search bounded when the histogram has grown.
  const int stride = std::max(1, n / 2048);
  for (int i = std::min(start_bin, n); i <= n; i += stride) m.candidates.push_back(i);
  return m;
}

// The quantize-dequantize squared error of clipping at i bins, summed over the non-empty bins in order.
double mse_error(const MseSearch& m, int i, double width) {
  const double amax = i * width, scale = amax / 127.0;
  double err = 0;
  for (size_t k = 0; k < m.centre.size(); ++k) {
    const double c = m.centre[k];
    const double q = std::min(std::round(c / scale), 127.0) * scale;
    err += m.count[k] * (c - q) * (c - q);
  }
  return err;
}

// The first candidate with the least error.
float mse_pick(const MseSearch& m, const std::vector<double>& err, double width, int n) {
  double best = std::numeric_limits<double>::infinity();
  int best_i = n;
  for (size_t c = 0; c < m.candidates.size(); ++c)
    if (err[c] < best) {
      best = err[c];
      best_i = m.candidates[c];
    }
  return float(best_i * width);
}

#if defined(__x86_64__)
// mse_error for eight candidates at once, one per lane: the same operations in the same order per lane
// (round half away from zero of a non-negative x as trunc(x) plus one where x - trunc(x), exact, is at
// least 0.5), so the same errors bit for bit.
DLAKIT_TARGET_AVX512 void mse_errors_avx512(const MseSearch& m, double width, std::vector<double>& err) {
  const size_t count = m.candidates.size();
  const __m512d vwidth = _mm512_set1_pd(width), levels = _mm512_set1_pd(127.0), half = _mm512_set1_pd(0.5),
                one = _mm512_set1_pd(1.0);
  for (size_t c0 = 0; c0 < count; c0 += 8) {
    alignas(32) int lanes[8];
    for (size_t l = 0; l < 8; ++l) lanes[l] = m.candidates[std::min(c0 + l, count - 1)];
    const __m512d amax = _mm512_mul_pd(
        _mm512_maskz_cvtepi32_pd(0xff, _mm256_load_si256(reinterpret_cast<const __m256i*>(lanes))), vwidth);
    const __m512d scale = _mm512_div_pd(amax, levels);
    __m512d sum = _mm512_setzero_pd();
    for (size_t k = 0; k < m.centre.size(); ++k) {
      const __m512d c = _mm512_set1_pd(m.centre[k]);
      const __m512d x = _mm512_div_pd(c, scale);
      const __m512d t = _mm512_maskz_roundscale_pd(0xff, x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
      const __mmask8 up = _mm512_cmp_pd_mask(_mm512_sub_pd(x, t), half, _CMP_GE_OQ);
      const __m512d level =
          _mm512_maskz_min_pd(0xff, levels, _mm512_mask_add_pd(t, up, t, one));  // std::min(r, 127)
      const __m512d d = _mm512_sub_pd(c, _mm512_mul_pd(level, scale));
      sum = _mm512_add_pd(sum, _mm512_mul_pd(_mm512_mul_pd(_mm512_set1_pd(m.count[k]), d), d));
    }
    alignas(64) double out[8];
    _mm512_store_pd(out, sum);
    for (size_t l = 0; l < 8 && c0 + l < count; ++l) err[c0 + l] = out[l];
  }
}
#endif

}  // namespace

float amax_mse(const std::vector<double>& bins, double width, int start_bin) {
#if defined(__x86_64__)
  if (cpu::avx512()) {
    const MseSearch m = mse_search(bins, width, start_bin);
    std::vector<double> err(m.candidates.size());
    mse_errors_avx512(m, width, err);
    return mse_pick(m, err, width, int(bins.size()));
  }
#endif
  return amax_mse_plain(bins, width, start_bin);
}

float amax_mse_plain(const std::vector<double>& bins, double width, int start_bin) {
  const MseSearch m = mse_search(bins, width, start_bin);
  std::vector<double> err(m.candidates.size());
  for (size_t c = 0; c < err.size(); ++c) err[c] = mse_error(m, m.candidates[c], width);
  return mse_pick(m, err, width, int(bins.size()));
}

}  // namespace dlakit::quant
