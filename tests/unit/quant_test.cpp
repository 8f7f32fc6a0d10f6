// INT8 arithmetic (rounding at every tie, saturation, per-channel scales), the TensorRT calibration cache,
// the calibrators on known distributions, and the INT8/FP16 emulation against hand-computed results.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "../common/test_data.h"
#include "../common/ties.h"
#include "base/cpu.h"
#include "base/fp16.h"
#include "engine/engine.h"
#include "kernels/registry.h"
#include "numerics/quantize.h"
#include "numerics/step.h"
#include "quant/calib_cache.h"
#include "quant/calibrator.h"
#include "quant/numerics.h"

using namespace dlakit;
using namespace dlakit::quant;

TEST(Quantize, EveryTieRoundsByTheDeviceRule) {
  for (int k = -129; k <= 128; ++k) {
    const float tie = float(k) + 0.5f;    // exactly representable, scale 1
    const int away = k >= 0 ? k + 1 : k;  // half away from zero: 0.5 -> 1, -0.5 -> -1
    const int even = (k % 2 == 0) ? k : k + 1;
    auto sat = [](int v) { return std::min(127, std::max(-128, v)); };
    EXPECT_EQ(quantize(tie, 1.f, Rounding::kHalfAwayFromZero), sat(away)) << tie;
    EXPECT_EQ(quantize(tie, 1.f, Rounding::kHalfToEven), sat(even)) << tie;
  }
  // Ties reached through a scale: 2.5 / 0.5 = 5 (exact), 1.25 / 0.5 = 2.5 (tie).
  EXPECT_EQ(quantize(1.25f, 0.5f, Rounding::kHalfAwayFromZero), 3);
  EXPECT_EQ(quantize(1.25f, 0.5f, Rounding::kHalfToEven), 2);
  EXPECT_EQ(quantize(-1.25f, 0.5f, Rounding::kHalfAwayFromZero), -3);
  EXPECT_EQ(quantize(-1.25f, 0.5f, Rounding::kHalfToEven), -2);
}

TEST(Quantize, SaturatesAndHandlesSpecialValues) {
  const float s = 1.f / 127;
  EXPECT_EQ(quantize(1000.f, s, Rounding::kHalfAwayFromZero), 127);
  EXPECT_EQ(quantize(-1000.f, s, Rounding::kHalfAwayFromZero), -128);
  EXPECT_EQ(quantize(-1.0f, s, Rounding::kHalfAwayFromZero), -127);  // amax maps to +-127
  EXPECT_EQ(quantize(INFINITY, s, Rounding::kHalfToEven), 127);
  EXPECT_EQ(quantize(-INFINITY, s, Rounding::kHalfToEven), -128);
  EXPECT_EQ(quantize(NAN, s, Rounding::kHalfToEven), 0);
  EXPECT_EQ(quantize(5.f, 0.f, Rounding::kHalfToEven), 0);  // zero range
  std::vector<float> v{0.3f, -2.f, 0.999f};
  fake_quantize(v.data(), 3, 0.5f, Rounding::kHalfAwayFromZero);
  EXPECT_FLOAT_EQ(v[0], 0.5f);
  EXPECT_FLOAT_EQ(v[1], -2.f);
  EXPECT_FLOAT_EQ(v[2], 1.f);
}

TEST(Quantize, VectorPathMatchesTheScalarDefinition) {
  // Random values, exact ties at every level, out-of-range values and specials, with a non-power-of-two
  // scale; the array is long enough for the threaded, vectorised path. In place and into another array.
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-3.f, 3.f);
  const float s = 0.0213f;
  std::vector<float> x(200003);
  for (size_t i = 0; i < x.size(); ++i) {
    if (i % 7 == 0)
      x[i] = (float(int(i % 300) - 150) + 0.5f) * 0.25f;  // ties at scale 0.25
    else
      x[i] = u(rng);
  }
  x[5] = NAN;
  x[6] = INFINITY;
  x[8] = -INFINITY;
  x[9] = 1e30f;
  for (Rounding r : {Rounding::kHalfAwayFromZero, Rounding::kHalfToEven})
    for (float scale : {s, 0.25f}) {
      std::vector<float> fq = x, lv(x.size()), copied(x.size());
      fake_quantize(fq.data(), int64_t(fq.size()), scale, r);
      fake_quantize_to(x.data(), copied.data(), int64_t(x.size()), scale, r);  // not in place
      quantize_to_levels(x.data(), lv.data(), int64_t(x.size()), scale, r);
      int bad = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        const float q = float(quantize(x[i], scale, r));
        bad += std::memcmp(&lv[i], &q, 4) != 0 && !(lv[i] == 0 && q == 0);
        const float d = q * scale;
        bad += std::memcmp(&fq[i], &d, 4) != 0 && !(fq[i] == 0 && d == 0);
        bad += std::memcmp(&copied[i], &fq[i], 4) != 0;
      }
      EXPECT_EQ(bad, 0) << rounding_name(r) << " scale " << scale;
    }
}

// The vector path takes a product by the inverse instead of the division where it is far from a tie
// (fast_level's shortcut): every tie k + 0.5 of the level range, as x = tie * scale rounds, with its
// neighbours, at random scales over the exponent range, in place (fake_quantize) and not, both roundings.
TEST(Quantize, VectorPathMatchesTheScalarDefinitionAtTiesOverManyScales) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> mantissa(1.f, 2.f), value(-200.f, 200.f);
  std::uniform_int_distribution<int> scale_exp(-110, 100);
  for (int i = 0; i < 300; ++i) {
    const float scale = std::ldexp(mantissa(rng), scale_exp(rng));
    std::vector<float> x = test_data::ties_and_neighbours(scale, -131, 130);
    for (int j = 0; j < 501; ++j) x.push_back(value(rng) * scale);  // 501: a partial last vector
    x[7] = NAN;
    for (Rounding r : {Rounding::kHalfAwayFromZero, Rounding::kHalfToEven}) {
      std::vector<float> fq = x, lv(x.size());
      std::vector<int8_t> bytes(x.size());
      fake_quantize(fq.data(), int64_t(fq.size()), scale, r);
      quantize_to_levels(x.data(), lv.data(), int64_t(x.size()), scale, r);
      quantize_to_int8(x.data(), bytes.data(), int64_t(x.size()), scale, r);
      for (size_t k = 0; k < x.size(); ++k) {
        const int8_t want = quantize(x[k], scale, r);
        ASSERT_EQ(lv[k], float(want)) << x[k] << " / " << scale << " (" << rounding_name(r) << ")";
        ASSERT_EQ(fq[k], float(want) * scale) << x[k] << " / " << scale;
        ASSERT_EQ(bytes[k], want) << x[k] << " / " << scale;
      }
    }
  }
}

TEST(Quantize, PerOutputChannelWeightScales) {
  // [2 out, 1 in, 1, 3]: channel 0 max 0.5, channel 1 max 2.54.
  Tensor w = Tensor::from_f32({2, 1, 1, 3}, {0.5f, -0.25f, 0.1f, -2.54f, 1.27f, 0.f});
  auto s = per_channel_scales(w, 0);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_FLOAT_EQ(s[0], 0.5f / 127);
  EXPECT_FLOAT_EQ(s[1], 2.54f / 127);
  Tensor q = quantize_weights(w, s, 0, Rounding::kHalfAwayFromZero);
  const float expect[] = {127, -64, 25, -127, 64, 0};  // -0.25/(0.5/127) = -63.5 -> -64 away from zero
  for (int i = 0; i < 6; ++i) EXPECT_EQ(q.data<float>()[i], expect[i]) << i;
  EXPECT_THROW(quantize_weights(w, {1.f}, 0, Rounding::kHalfToEven), Error);
  EXPECT_THROW(per_channel_scales(w, 4), Error);
}

TEST(CalibCache, KnownBitPatternsAndRoundTrip) {
  EXPECT_EQ(scale_to_hex(1.f / 127), "3c010204");
  EXPECT_EQ(scale_to_hex(0.f), "0");
  ScaleTable t = parse_calib_cache(
      "TRT-8602-EntropyCalibration2\n"
      "images: 3c010204\n"
      "(Unnamed Layer* 64) [Shuffle]_output: 3c00f9f4\n"
      "odd: name: 3d000000\r\n"
      "zero: 0\n");
  EXPECT_EQ(t.trt_version, 8602);
  EXPECT_EQ(t.algorithm, "EntropyCalibration2");
  ASSERT_EQ(t.scales.size(), 4u);
  EXPECT_NEAR(*t.find_scale("images") * 127, 1.0f, 1e-6);
  EXPECT_NEAR(*t.find_scale("(Unnamed Layer* 64) [Shuffle]_output") * 127, 0.9998f, 1e-4);
  EXPECT_EQ(*t.find_scale("odd: name"), 0.03125f);  // split at the last ": "
  EXPECT_EQ(*t.find_scale("zero"), 0.f);
  // Writing and reading back keeps every scale's bits and the order.
  ScaleTable back = parse_calib_cache(format_calib_cache(t));
  ASSERT_EQ(back.scales.size(), t.scales.size());
  for (size_t i = 0; i < t.scales.size(); ++i) {
    EXPECT_EQ(back.scales[i].first, t.scales[i].first);
    EXPECT_EQ(scale_to_hex(back.scales[i].second), scale_to_hex(t.scales[i].second));
  }
  EXPECT_EQ(format_calib_cache(back).substr(0, 29), "TRT-8602-EntropyCalibration2\n");
}

TEST(CalibCache, MalformedInputIsAClearError) {
  auto err = [](const std::string& text) {
    try {
      parse_calib_cache(text, "c");
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::kParseError);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(err("").find("empty"), std::string::npos);
  EXPECT_NE(err("hello\n").find("c:1: expected the header"), std::string::npos);
  EXPECT_NE(err("TRT-x1-EntropyCalibration2\n").find("digits"), std::string::npos);
  EXPECT_NE(err("TRT-8602-EntropyCalibration2\nnoscale\n").find("c:2:"), std::string::npos);
  EXPECT_NE(err("TRT-8602-EntropyCalibration2\na: xyz\n").find("hex digits"), std::string::npos);
  EXPECT_NE(err("TRT-8602-EntropyCalibration2\na: 123456789\n").find("hex digits"), std::string::npos);
  EXPECT_NE(err("TRT-8602-EntropyCalibration2\na: bf800000\n").find(">= 0"), std::string::npos);    // -1
  EXPECT_NE(err("TRT-8602-EntropyCalibration2\na: 7fc00000\n").find("finite"), std::string::npos);  // NaN
  EXPECT_NE(err("TRT-8602-EntropyCalibration2\na: 1\na: 2\n").find("twice"), std::string::npos);
}

namespace {
AbsHistogram histogram_of(const std::vector<float>& v, size_t batches = 4) {
  AbsHistogram h;
  const size_t step = v.size() / batches;
  for (size_t b = 0; b < batches; ++b)
    h.add(v.data() + b * step, int64_t(b + 1 == batches ? v.size() - b * step : step));
  return h;
}
float amax_of(const AbsHistogram& h, CalibAlgo a) {
  CalibOptions o;
  o.algo = a;
  return compute_amax(h, o);
}
}  // namespace

TEST(Calibrators, UniformDataWithOneOutlier) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(1 << 20);
  for (float& x : v) x = u(rng);
  v[v.size() - 5] = 100.f;  // one outlier in the last batch: minmax follows it, the others must not
  AbsHistogram h = histogram_of(v);
  EXPECT_EQ(amax_of(h, CalibAlgo::kMinMax), 100.f);
  EXPECT_NEAR(amax_of(h, CalibAlgo::kPercentile), 1.0f, 0.01f);  // 99.99th pct of |U(-1,1)| = 0.9999
  const float ent = amax_of(h, CalibAlgo::kEntropy2), mse = amax_of(h, CalibAlgo::kMse);
  EXPECT_GT(ent, 0.9f);
  EXPECT_LT(ent, 1.1f);
  // MSE weighs the outlier's squared error (99^2 at amax 1) against 1M samples' rounding noise
  // (n * step^2 / 12): the optimum is near 15, between the data's range and the outlier.
  EXPECT_GT(mse, 5.f);
  EXPECT_LT(mse, 25.f);
  // The outlier in the first batch fixes a coarse bin width (100/2048, the data in 21 bins): percentile
  // still clips; KL has no finite candidate below the outlier's bin (P holds mass where Q has none).
  std::swap(v[v.size() - 5], v[5]);
  AbsHistogram first = histogram_of(v);
  EXPECT_EQ(amax_of(first, CalibAlgo::kEntropy2), 100.f);
  EXPECT_NEAR(amax_of(first, CalibAlgo::kPercentile), 1.0f, 0.06f);
}

// amax_mse's AVX-512 search (eight candidates a lane each) against its plain loop, bit for bit: histograms of
// whole counts, dense and sparse, grown past 2048 bins (candidates strided), from every bin (ties of
// round half away from zero where the candidate is 127 bins) and from bin 128.
TEST(Calibrators, MseSearchEqualsItsPlainLoop) {
#if defined(__x86_64__)
  if (!cpu::avx512()) GTEST_SKIP() << "amax_mse is its plain loop on this CPU";
#else
  GTEST_SKIP() << "amax_mse is its plain loop on this CPU";
#endif
  std::mt19937 rng(13);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int n : {1, 5, 127, 128, 129, 333, 2048, 2049, 5000, 16384})
    for (double density : {1.0, 0.3, 0.02})
      for (int start : {1, 128}) {
        std::vector<double> bins(size_t(n), 0.0);
        for (int j = 0; j < n; ++j)  // a decaying body with scattered tail counts
          if (u(rng) < density) bins[size_t(j)] = std::floor(1 + 1000 * u(rng) * std::exp(-8.0 * j / n));
        const double width = 0.001 + u(rng) * 0.05;
        SCOPED_TRACE(std::to_string(n) + " bins, density " + std::to_string(density));
        EXPECT_EQ(amax_mse(bins, width, start), amax_mse_plain(bins, width, start)) << "start " << start;
      }
}

TEST(Calibrators, GaussianClipsTheTail) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> v(1 << 20);
  for (float& x : v) x = nd(rng);
  AbsHistogram h = histogram_of(v);
  const float mx = amax_of(h, CalibAlgo::kMinMax);
  EXPECT_GT(mx, 4.5f);  // the max of 1M normal samples is about 5 sigma
  const float ent = amax_of(h, CalibAlgo::kEntropy2), mse = amax_of(h, CalibAlgo::kMse);
  CalibOptions p999;
  p999.algo = CalibAlgo::kPercentile;
  p999.percentile = 99.9;
  EXPECT_NEAR(compute_amax(h, p999), 3.29f, 0.05f);  // P(|x| < 3.29) = 0.999
  // Clipping ranges for 8 bits on a Gaussian sit between 2.5 and 4.5 sigma (ACIQ: ~3.9 for MSE).
  EXPECT_GT(ent, 2.5f);
  EXPECT_LT(ent, mx);
  EXPECT_GT(mse, 2.5f);
  EXPECT_LT(mse, 4.6f);
  // Deterministic: the same data gives the same bits.
  EXPECT_EQ(amax_of(histogram_of(v), CalibAlgo::kEntropy2), ent);
}

TEST(Calibrators, HistogramGrowsWithTheSameBinWidth) {
  AbsHistogram h;
  std::vector<float> zeros(10, 0.f), a{0.5f, 1.f}, b{4.f, -3.f};
  h.add(zeros.data(), 10);  // no width yet: remembered
  h.add(a.data(), 2);
  EXPECT_EQ(h.counts().size(), 2048u);
  const double w = h.width();
  h.add(b.data(), 2);
  EXPECT_EQ(h.width(), w);
  EXPECT_EQ(h.counts().size(), 8192u);
  EXPECT_EQ(h.total(), 14.0);
  EXPECT_EQ(h.amax(), 4.f);
  EXPECT_EQ(h.counts()[0], 10.0);
  EXPECT_THROW(parse_calib_algo("kl"), Error);
}

// ---- entropy2 against values worked out from the published algorithm (GTC 2017 S7310, as
// pytorch-quantization's histogram calibrator implements it; tests/unit/entropy_reference.py re-derives
// every expected value independently of this code) ----

TEST(Entropy2, DecayingTailIsClippedWhereKlIsLeast) {
  // bins [0, 8, 4, 2, 1, 1, 1, 1], 2 levels, candidates i = 2..8. bins[0] takes bins[1]'s count:
  // [8, 8, 4, 2, 1, 1, 1, 1], 26 in all. At i = 4: P = [8, 8, 4, 2 + 4] / 26; bins 0,1 form level 0
  // (16 over 2 bins: 8, 8) and bins 2,3 level 1 (6 over 2: 3, 3), Q = [8, 8, 3, 3] / 22;
  // KL = 2 * 8/26 ln(22/26) + 4/26 ln(88/78) + 6/26 ln(132/78) = 0.037162, the least of
  // {0.075905, 0.090055, 0.037162, 0.084033, 0.067260, 0.117871, 0.103772}: amax = 4 bins.
  EXPECT_FLOAT_EQ(amax_entropy({0, 8, 4, 2, 1, 1, 1, 1}, 0.5, 2, 2), 2.0f);
  // [0, 8, 4, 2] -> [8, 8, 4, 2]: i = 3 keeps P = [8, 8, 6] against Q = [8, 8, 4] (KL 0.015271), i = 4
  // compares P = [8, 8, 4, 2] with Q = [8, 8, 3, 3] (KL 0.015445): even with no outlier, 3 bins win.
  EXPECT_FLOAT_EQ(amax_entropy({0, 8, 4, 2}, 1.0, 2, 2), 3.0f);
}

TEST(Entropy2, EmptyBinsStayEmptyInQ) {
  // [3, 3, 0, 3, 0, 0, 0, 2]: at i = 3, 5, 6, 7 the outliers land in an empty bin (P has mass where Q
  // has none: infinite KL); i = 2 scores 0.107195 and i = 4 (P = [3, 3, 0, 5], Q = [3, 3, 0, 3]) 0.031523.
  // At i = 8, level 0 (bins 0..3) spreads 9 over its 3 non-empty bins and leaves bin 2 empty, level 1
  // (bins 4..7) holds bin 7 alone: Q = P, KL = 0, nothing is clipped.
  EXPECT_FLOAT_EQ(amax_entropy({3, 3, 0, 3, 0, 0, 0, 2}, 1.0, 2, 2), 8.0f);
  // [3, 3, 0, 3, 0]: i = 4 and i = 5 both give Q = P (KL 0); of tied minima the last wins.
  EXPECT_FLOAT_EQ(amax_entropy({3, 3, 0, 3, 0}, 1.0, 2, 2), 5.0f);
}

TEST(Entropy2, AllMassInOneBinKeepsTheWholeRangeOnTies) {
  // 1000 counts in bin 300 of 2048 (128 levels): thresholds at or below bin 300 put them in an empty
  // last bin (infinite KL); every threshold above has Q = P (KL = 0). The last of the tied minima wins:
  // the whole histogram.
  std::vector<double> one(2048, 0.0);
  one[300] = 1000;
  EXPECT_FLOAT_EQ(amax_entropy(one, 0.25), 512.0f);
  // All of it at zero: bins[0] takes bins[1]'s count (0), nothing is left to compare, the range stays.
  std::vector<double> zero(2048, 0.0);
  zero[0] = 1000;
  EXPECT_FLOAT_EQ(amax_entropy(zero, 0.25), 512.0f);
}

TEST(Entropy2, SpikeAtZeroIsReplacedByItsNeighbour) {
  // A ReLU's zeros: bins[0] is set to bins[1] before anything else, so its count does not matter.
  const std::vector<double> a{1e6, 8, 4, 2, 1, 1, 1, 1}, b{0, 8, 4, 2, 1, 1, 1, 1};
  EXPECT_EQ(amax_entropy(a, 1.0, 2, 2), amax_entropy(b, 1.0, 2, 2));
}

TEST(Entropy2, LongSparseTailIsClipped) {
  // A body halving every 7 bins (empty from bin 119) and 3 counts every 97 bins up to bin 2037, 128
  // levels over 2048 bins: the least KL is at 292 bins (just past the spike at 291; 0.000327, infinite
  // at 290, 291, 293, 294 where the outliers land in empty bins), far below the data's 2038 bins.
  std::vector<double> bins(2048);
  for (int j = 0; j < 2048; ++j)
    bins[size_t(j)] = (j / 7 < 17 ? double(100000 >> (j / 7)) : 0.0) + (j % 97 == 0 ? 3 : 0);
  EXPECT_FLOAT_EQ(amax_entropy(bins, 1.0), 292.0f);
}

// ---- emulation on small graphs ----
namespace {

// x [1, C, H, W] -> Conv(w [M, C, K, K], b, pad) -> y, optionally with a fused Relu.
Graph conv_graph(const Tensor& w, const Tensor& b, int64_t H, int64_t W, int64_t pad, bool relu,
                 int64_t groups = 1) {
  Graph g;
  const int64_t M = w.dim(0), C = w.dim(1) * groups, K = w.dim(2);
  const int x = g.add_value("x", {DType::kF32, {1, C, H, W}});
  const int wi = g.add_constant("w", w), bi = g.add_constant("b", b);
  const int y = g.add_value("y", {DType::kF32, {1, M, H + 2 * pad - K + 1, W + 2 * pad - K + 1}});
  Node n;
  n.op = OpKind::Conv;
  n.name = "conv";
  n.opset = 13;
  n.inputs = {x, wi, bi};
  n.outputs = {y};
  n.attrs["pads"] = std::vector<int64_t>{pad, pad, pad, pad};
  if (groups > 1) n.attrs["group"] = groups;
  if (relu) n.attrs["dlakit_activation"] = std::string("Relu");
  g.nodes.push_back(n);
  g.inputs = {x};
  g.outputs = {y};
  g.relink();
  return g;
}

Tensor random_tensor(const Shape& s, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 r(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  Tensor t(DType::kF32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(r);
  return t;
}

// The INT8 conv written out with integer loops: the oracle for the im2col/sgemm/chunked path.
std::vector<int> int8_conv_levels(const Tensor& x, const Tensor& w, const Tensor& b, int64_t pad,
                                  float amax_in, float amax_out, bool relu, Rounding r, int64_t groups = 1) {
  const int64_t C = w.dim(1), H = x.dim(2), W = x.dim(3), M = w.dim(0), K = w.dim(2);
  const int64_t per_group = M / groups;  // output channels per group; group g reads input channels g*C..
  const int64_t OH = H + 2 * pad - K + 1, OW = W + 2 * pad - K + 1;
  const float s_in = amax_in / 127, s_out = amax_out / 127;
  auto sw = per_channel_scales(w, 0);
  std::vector<int> out;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t acc = 0;
        for (int64_t c = 0; c < C; ++c)
          for (int64_t kh = 0; kh < K; ++kh)
            for (int64_t kw = 0; kw < K; ++kw) {
              const int64_t ih = oh - pad + kh, iw = ow - pad + kw;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              const int64_t xc = m / per_group * C + c;
              const int qx = quantize(x.data<float>()[(xc * H + ih) * W + iw], s_in, r);
              const int qw = quantize(w.data<float>()[((m * C + c) * K + kh) * K + kw], sw[size_t(m)], r);
              acc += int64_t(qx) * qw;
            }
        const float mult = s_in * sw[size_t(m)];
        const double bq = round_with(b.data<float>()[m] / mult, r);
        float real = float(double(acc) + bq) * mult;
        if (relu) real = real > 0 ? real : 0;
        out.push_back(quantize(real, s_out, r));
      }
  return out;
}

// The INT8 plan of a graph x -> ... -> y -> z: x's range amax_in, y's and z's amax_out, every node rounding
// with r.
NumericsPlan int8_plan_xyz(const Graph& g, float amax_in, float amax_out, Rounding r) {
  ScaleTable t;
  t.set_amax("x", amax_in);
  t.set_amax("y", amax_out);
  t.set_amax("z", amax_out);
  NumericsPlan plan = plan_uniform(g, Mode::kINT8, &t);
  for (auto& n : plan.nodes) n.rounding = r;
  return plan;
}

}  // namespace

TEST(Int8Emulation, HandComputedOneByOneConv) {
  // w = 0.5 -> scale 0.5/127, level 127; x = 0.25, -0.75 at input range 1 -> levels 32 (31.75), -95 (-95.25);
  // bias 0.1 -> round(0.1 / (1/127 * 0.5/127)) = round(3225.8) = 3226;
  // (32*127 + 3226) * m = 0.22599 -> 28.70 -> 29 at output range 1; (-95*127 + 3226) * m -> -34.80 -> -35.
  Graph g = conv_graph(Tensor::from_f32({1, 1, 1, 1}, {0.5f}), Tensor::from_f32({1}, {0.1f}), 1, 2, 0, false);
  ScaleTable t;
  t.set_amax("x", 1.f);
  t.set_amax("y", 1.f);
  // Make y an internal tensor so it is requantized to INT8 (graph outputs leave as fp16): an Identity
  // after it (a Relu would fuse into the convolution's pipeline and keep y in fp32).
  const int z = g.add_value("z", {DType::kF32, {1, 1, 1, 2}});
  Node relu;
  relu.op = OpKind::Identity;
  relu.name = "id";
  relu.opset = 13;
  relu.inputs = {g.outputs[0]};
  relu.outputs = {z};
  g.nodes.push_back(relu);
  g.outputs = {z};
  g.relink();
  t.set_amax("z", 1.f);
  NumericsPlan plan = plan_uniform(g, Mode::kINT8, &t);
  EXPECT_EQ(plan.int8_nodes, 2);
  std::vector<float> y_seen;
  EmulatedEngine e(g, plan);
  e.engine().set_observer([&](const Node& n, const std::vector<Tensor>& outs) {
    if (n.name == "conv") y_seen = outs[0].to_f32();
  });
  e.run({{"x", Tensor::from_f32({1, 1, 1, 2}, {0.25f, -0.75f})}});
  ASSERT_EQ(y_seen.size(), 2u);
  EXPECT_FLOAT_EQ(y_seen[0] * 127, 29.f);
  EXPECT_FLOAT_EQ(y_seen[1] * 127, -35.f);
}

TEST(Int8Emulation, ConvMatchesIntegerLoopsIncludingChunkedSums) {
  struct Case {
    int64_t C, M, K, H, pad;  // C: input channels per group
    bool relu;
    Rounding r;
    int64_t groups = 1;
  };
  // 256 channels x 3x3 taps of levels up to 127 overflow fp32's 2^24 exact range: the chunked path, also
  // for a grouped convolution (2 groups of 240 channels: each group chunked alike).
  const Case cases[] = {{3, 8, 3, 9, 1, true, Rounding::kHalfAwayFromZero},
                        {16, 4, 1, 6, 0, false, Rounding::kHalfToEven},
                        {256, 3, 3, 5, 1, false, Rounding::kHalfAwayFromZero},
                        {240, 4, 3, 5, 1, false, Rounding::kHalfAwayFromZero, 2}};
  uint32_t seed = 1;
  for (const Case& c : cases) {
    Tensor w = random_tensor({c.M, c.C, c.K, c.K}, seed++);
    Tensor b = random_tensor({c.M}, seed++);
    Tensor x = random_tensor({1, c.C * c.groups, c.H, c.H}, seed++, -2.f, 2.f);
    Graph g = conv_graph(w, b, c.H, c.H, c.pad, c.relu, c.groups);
    const float amax_in = 1.5f, amax_out = c.C > 100 ? 40.f : 3.f;  // inputs beyond 1.5 saturate
    // Keep y internal (a graph output would leave as fp16): observe it through an Identity.
    const Shape ys = g.value(g.outputs[0]).type.shape;
    const int z = g.add_value("z", {DType::kF32, ys});
    Node id;
    id.op = OpKind::Identity;
    id.name = "id";
    id.opset = 13;
    id.inputs = {g.outputs[0]};
    id.outputs = {z};
    g.nodes.push_back(id);
    g.outputs = {z};
    g.relink();
    const NumericsPlan plan = int8_plan_xyz(g, amax_in, amax_out, c.r);
    EmulatedEngine e(g, plan);
    std::vector<float> y;
    e.engine().set_observer([&](const Node& n, const std::vector<Tensor>& outs) {
      if (n.name == "conv") y = outs[0].to_f32();
    });
    e.run({{"x", x}});
    const auto expect = int8_conv_levels(x, w, b, c.pad, amax_in, amax_out, c.relu, c.r, c.groups);
    ASSERT_EQ(y.size(), expect.size());
    int mismatches = 0;
    for (size_t i = 0; i < y.size(); ++i) mismatches += std::lround(y[i] * 127 / amax_out) != expect[i];
    EXPECT_EQ(mismatches, 0) << "C=" << c.C << " groups=" << c.groups;
  }
}

// The worst-case bound behind the chunks: every chunk's sum of |w| * 128 stays below 2^24, so its fp32
// partial sums are exact; a grouped convolution is chunked the same way as a plain one (it was not).
TEST(Int8Emulation, GroupedConvolutionsAreChunkedLikePlainOnes) {
  for (const int64_t groups : {int64_t(1), int64_t(2)}) {
    const int64_t Cg = 240, M = 4, K = 3;
    Tensor w_levels(DType::kF32, {M, Cg, K, K});
    for (int64_t i = 0; i < w_levels.numel(); ++i) w_levels.data<float>()[i] = i % 2 ? 127.f : -127.f;
    Node conv;
    conv.op = OpKind::Conv;
    conv.name = "conv";
    conv.opset = 13;
    conv.attrs["group"] = groups;
    const numerics::Int8Conv c = numerics::prepare_int8_conv(
        conv, w_levels, std::vector<float>(size_t(M), 0.01f), {}, 0.01f, Rounding::kHalfAwayFromZero);
    ASSERT_GT(c.chunks.size(), 1u) << "groups=" << groups;
    for (auto [c0, c1] : c.chunks)
      EXPECT_LE(double(c1 - c0) * K * K * 127 * 128, double(1 << 24)) << "groups=" << groups;
    EXPECT_EQ(c.chunks.back().second, Cg);
  }
}

// A fully connected layer in INT8 is the DLA's 1x1 convolution (numerics::fc_as_conv): exact integer sums
// of the input's and the weight's levels, the bias quantized to int32, requantized per output channel, for
// Gemm with either weight layout and a [M] or [1, M] bias, and for MatMul. The Relu after it fuses into the
// layer's pipeline, so its output stays fp32 and is compared bit for bit with the formula (fake-quantized
// float sums would differ in the last bits). A Gemm the convolution cannot express (alpha != 1, a bias per
// element) keeps the float path.
TEST(Int8Emulation, FullyConnectedLayersSumIntegersLikeA1x1Conv) {
  struct Case {
    OpKind op;
    bool trans_b;
    Shape bias;  // empty: none
    Rounding r;
    float alpha = 1.f;
    bool exact = true;
  };
  const int64_t N = 3, K = 300, M = 7;
  const Case cases[] = {{OpKind::Gemm, true, {M}, Rounding::kHalfAwayFromZero},
                        {OpKind::Gemm, false, {1, M}, Rounding::kHalfToEven},
                        {OpKind::Gemm, true, {}, Rounding::kHalfAwayFromZero},
                        {OpKind::MatMul, false, {}, Rounding::kHalfAwayFromZero},
                        {OpKind::Gemm, true, {M}, Rounding::kHalfAwayFromZero, 0.5f, false},
                        {OpKind::Gemm, true, {N, M}, Rounding::kHalfAwayFromZero, 1.f, false}};
  uint32_t seed = 40;
  for (const Case& c : cases) {
    const Tensor w_mk = random_tensor({M, K}, seed++);
    Tensor w = w_mk;
    if (!c.trans_b) {  // [K, M]
      w = Tensor(DType::kF32, {K, M});
      for (int64_t m = 0; m < M; ++m)
        for (int64_t k = 0; k < K; ++k) w.data<float>()[k * M + m] = w_mk.data<float>()[m * K + k];
    }
    const Tensor b = c.bias.empty() ? Tensor() : random_tensor(c.bias, seed++);
    const Tensor x = random_tensor({N, K}, seed++, -2.f, 2.f);
    const Graph g =
        test_data::fc_graph(c.op, w, c.bias.empty() ? nullptr : &b, N, c.trans_b, OpKind::Relu, c.alpha);
    const float amax_in = 1.5f, s_in = amax_in / 127;
    const NumericsPlan plan = int8_plan_xyz(g, amax_in, 30.f, c.r);
    const std::string what = std::string(op_name(c.op)) + (c.trans_b ? " transB" : "") + " bias " +
                             shape_str(c.bias) + " alpha " + std::to_string(c.alpha);
    const numerics::StepRules rules = step_rules(g, plan, 0);
    ASSERT_EQ(rules.exact_int8_conv, c.exact) << what;
    if (!c.exact) continue;
    ASSERT_EQ(rules.outputs.at(0).store, numerics::Store::kFused) << what;
    EmulatedEngine e(g, plan);
    std::vector<float> got;
    e.engine().set_observer([&](const Node& n, const std::vector<Tensor>& outs) {
      if (n.name == "fc") got = outs[0].to_f32();
    });
    e.run({{"x", x}});
    const std::vector<float> sw = per_channel_scales(w_mk, 0);
    ASSERT_EQ(got.size(), size_t(N * M)) << what;
    int mismatches = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m) {
        int64_t acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += int64_t(quantize(x.data<float>()[n * K + k], s_in, c.r)) *
                 quantize(w_mk.data<float>()[m * K + k], sw[size_t(m)], c.r);
        const float mult = s_in * sw[size_t(m)];
        const double bq = c.bias.empty() ? 0.0 : round_with(b.data<float>()[m] / mult, c.r);
        mismatches += got[size_t(n * M + m)] != float(double(acc) + bq) * mult;
      }
    EXPECT_EQ(mismatches, 0) << what;
  }
}

// Weights with no output channel, input channel or tap (a program may carry such shapes) are a clear error,
// not a division by zero.
TEST(Int8Emulation, EmptyWeightsAreAClearError) {
  Node conv;
  conv.op = OpKind::Conv;
  conv.name = "conv";
  conv.opset = 13;
  for (const Shape& s : {Shape{0, 3, 1, 1}, Shape{4, 0, 3, 3}, Shape{4, 3, 0, 1}})
    EXPECT_THROW(
        numerics::prepare_int8_conv(conv, Tensor(DType::kF32, s), std::vector<float>(size_t(s[0]), 0.1f), {},
                                    0.01f, Rounding::kHalfAwayFromZero),
        Error)
        << shape_str(s);
}

TEST(Int8Emulation, MissingScaleKeepsTheLayerFp16AndEqualRangesUnify) {
  // x -> Concat(x, y_in) -> out, with y_in's range larger: both inputs and the output take the larger.
  Graph g;
  const int a = g.add_value("a", {DType::kF32, {1, 2, 2, 2}}),
            b = g.add_value("b", {DType::kF32, {1, 2, 2, 2}});
  const int c = g.add_value("c", {DType::kF32, {1, 4, 2, 2}}),
            d = g.add_value("d", {DType::kF32, {1, 4, 2, 2}});
  Node cat;
  cat.op = OpKind::Concat;
  cat.name = "cat";
  cat.opset = 13;
  cat.attrs["axis"] = int64_t(1);
  cat.inputs = {a, b};
  cat.outputs = {c};
  Node sig;
  sig.op = OpKind::Sigmoid;
  sig.name = "sig";
  sig.opset = 13;
  sig.inputs = {c};
  sig.outputs = {d};
  g.nodes = {cat, sig};
  g.inputs = {a, b};
  g.outputs = {d};
  g.relink();
  ScaleTable t;
  t.set_amax("a", 1.f);
  t.set_amax("b", 4.f);
  t.set_amax("c", 2.f);
  NumericsPlan plan = plan_uniform(g, Mode::kINT8, &t);
  EXPECT_EQ(plan.scale.at(a), 4.f / 127);
  EXPECT_EQ(plan.scale.at(c), 4.f / 127);
  EXPECT_EQ(plan.nodes[0].mode, Mode::kINT8);
  EXPECT_EQ(plan.nodes[1].mode, Mode::kINT8);  // d is a graph output: no range needed
  EXPECT_TRUE(plan.nodes[1].compute_fp16);
  ScaleTable partial;
  partial.set_amax("a", 1.f);
  NumericsPlan p2 = plan_uniform(g, Mode::kINT8, &partial);
  EXPECT_EQ(p2.nodes[0].mode, Mode::kINT8);  // b and c join a's group through the Concat rule
  ScaleTable none;
  NumericsPlan p3 = plan_uniform(g, Mode::kINT8, &none);
  EXPECT_EQ(p3.nodes[0].mode, Mode::kFP16);
  EXPECT_NE(p3.nodes[0].note.find("no dynamic range for tensor 'a'"), std::string::npos);
}

TEST(Fp16Emulation, RoundsInputsWeightsAndOutputs) {
  Tensor w = random_tensor({4, 3, 3, 3}, 5), b = random_tensor({4}, 6), x = random_tensor({1, 3, 6, 6}, 7);
  Graph g = conv_graph(w, b, 6, 6, 1, false);
  EmulatedEngine e(g, plan_uniform(g, Mode::kFP16, nullptr));
  Tensor y = e.run({{"x", x}}).at("y");
  // Oracle: the FP32 conv of the fp16-rounded input and weights, rounded to fp16.
  auto to_half = [](Tensor t) {
    Tensor c = t.clone();
    for (int64_t i = 0; i < c.numel(); ++i)
      c.data<float>()[i] = half_to_float(float_to_half(c.data<float>()[i]));
    return c;
  };
  Graph g2 = conv_graph(to_half(w), to_half(b), 6, 6, 1, false);
  ReferenceEngine ref(g2);
  Tensor yr = ref.run({{"x", to_half(x)}}).at("y");
  for (int64_t i = 0; i < y.numel(); ++i) {
    EXPECT_EQ(y.data<float>()[i], half_to_float(float_to_half(yr.data<float>()[i]))) << i;
  }
}

// Appends node `name` (opset 13) reading `ins`; returns its output value "<name>_out" of type `t`.
static int append_node(Graph& g, OpKind op, const std::string& name, std::vector<int> ins,
                       const TensorType& t) {
  const int o = g.add_value(name + "_out", t);
  Node n;
  n.op = op;
  n.name = name;
  n.opset = 13;
  n.inputs = std::move(ins);
  n.outputs = {o};
  g.nodes.push_back(n);
  return o;
}

TEST(Int8Emulation, ConvPostProcessingFusesWithoutRequantizing) {
  // Conv -> Mul(constant) -> Add(constant) -> Identity: the Conv and the Mul outputs stay fp32 inside
  // the DLA pipeline; only the Add's output is quantized.
  Tensor w = random_tensor({4, 3, 3, 3}, 21), b = random_tensor({4}, 22);
  Graph g = conv_graph(w, b, 6, 6, 1, false);
  const int y = g.outputs[0];
  auto add_node = [&](OpKind op, const std::string& name, std::vector<int> ins) {
    return append_node(g, op, name, std::move(ins), g.value(y).type);
  };
  const int m = add_node(OpKind::Mul, "scale", {y, g.add_constant("k", Tensor::scalar_f32(0.5f))});
  const int a = add_node(OpKind::Add, "bias", {m, g.add_constant("c", Tensor::scalar_f32(0.25f))});
  const int z = add_node(OpKind::Identity, "id", {a});
  g.outputs = {z};
  g.relink();
  ScaleTable t;
  for (const char* n : {"x", "y", "scale_out", "bias_out", "id_out"}) t.set_amax(n, 2.f);
  const NumericsPlan plan = plan_uniform(g, Mode::kINT8, &t);
  EXPECT_TRUE(plan.fused[size_t(y)]);
  EXPECT_TRUE(plan.fused[size_t(m)]);
  EXPECT_FALSE(plan.fused[size_t(a)]);
  EXPECT_EQ(plan.fused_values, 2);
  std::map<std::string, std::vector<float>> seen;
  EmulatedEngine e(g, plan);
  e.engine().set_observer(
      [&](const Node& n, const std::vector<Tensor>& outs) { seen[n.name] = outs[0].to_f32(); });
  e.run({{"x", random_tensor({1, 3, 6, 6}, 23)}});
  auto on_grid = [](const std::vector<float>& v) {
    int off = 0;
    for (float x : v) off += std::fabs(x * 127 / 2 - std::nearbyint(x * 127 / 2)) > 1e-3;
    return off == 0;
  };
  EXPECT_FALSE(on_grid(seen["conv"]));  // fp32 inside the pipeline
  ASSERT_EQ(seen["bias"].size(), seen["conv"].size());
  for (size_t i = 0; i < seen["bias"].size(); ++i) {  // quantized where it leaves the pipeline
    const float want =
        float(quantize(seen["conv"][i] * 0.5f + 0.25f, 2.f / 127, Rounding::kHalfAwayFromZero)) * (2.f / 127);
    EXPECT_EQ(seen["bias"][i], want) << i;
  }
}

TEST(Int8Emulation, ElementWisePostProcessingFusesLikeAfterAConv) {
  // Add(x1, x2) -> Mul(constant) -> Clip -> Identity: a stand-alone SDP pass (the element-wise Add) takes
  // the Mul and the Clip in its later stages, so only the Clip's output is quantized. A second reader of
  // the Add's output (the `tap` output) would store it, and ends the chain.
  for (const bool tapped : {false, true}) {
    SCOPED_TRACE(tapped ? "Add output also read elsewhere" : "Add output read once");
    Graph g;
    const TensorType t{DType::kF32, {1, 4, 6, 6}};
    const int x1 = g.add_value("x1", t), x2 = g.add_value("x2", t);
    auto add_node = [&](OpKind op, const std::string& name, std::vector<int> ins) {
      return append_node(g, op, name, std::move(ins), t);
    };
    const int s = add_node(OpKind::Add, "sum", {x1, x2});
    const int m = add_node(OpKind::Mul, "scale", {s, g.add_constant("k", Tensor::scalar_f32(0.75f))});
    const int c = add_node(
        OpKind::Clip, "clip",
        {m, g.add_constant("lo", Tensor::scalar_f32(0.f)), g.add_constant("hi", Tensor::scalar_f32(1.25f))});
    const int z = add_node(OpKind::Identity, "id", {c});
    g.inputs = {x1, x2};
    g.outputs = {z};
    if (tapped) g.outputs.push_back(add_node(OpKind::Identity, "tap", {s}));
    g.relink();
    ScaleTable st;
    for (const char* n : {"x1", "x2", "sum_out", "scale_out", "clip_out", "id_out", "tap_out"})
      st.set_amax(n, 2.f);
    const NumericsPlan plan = plan_uniform(g, Mode::kINT8, &st);
    EXPECT_EQ(bool(plan.fused[size_t(s)]), !tapped);
    EXPECT_TRUE(plan.fused[size_t(m)]);  // the chain starts at the Add, or (tapped) at the Mul
    EXPECT_FALSE(plan.fused[size_t(c)]);
    std::map<std::string, std::vector<float>> seen;
    EmulatedEngine e(g, plan);
    e.engine().set_observer(
        [&](const Node& n, const std::vector<Tensor>& outs) { seen[n.name] = outs[0].to_f32(); });
    const Tensor a = random_tensor(t.shape, 31, -2.f, 2.f), b = random_tensor(t.shape, 32, -2.f, 2.f);
    e.run({{"x1", a}, {"x2", b}});
    const float q = 2.f / 127;
    auto level = [&](float v) { return float(quantize(v, q, Rounding::kHalfAwayFromZero)) * q; };
    for (int64_t i = 0; i < a.numel(); ++i) {
      float v = level(a.data<float>()[i]) + level(b.data<float>()[i]);
      if (tapped) v = level(v);  // stored for its second reader
      const float want = level(std::clamp(v * 0.75f, 0.f, 1.25f));
      EXPECT_EQ(seen["clip"][size_t(i)], want) << i;
    }
  }
}

// An INT8 ConvTranspose is the DLA's deconvolution: exact integer sums of the input's and the weight's
// levels (per output channel along the weight's axis 1), the bias quantized to int32, requantized, like
// its convolution. The Relu after it fuses into the pipeline, so its fp32 output is compared bit for bit
// with that formula written as the ONNX definition's loops (float sums of fake-quantized values would
// differ in the last bits). Cases: disjoint taps (the detectors' 2x2 stride-2 upsampling), overlapping
// taps with pads, output_padding and dilation, and 300 input channels of large levels that pass fp32's
// exact 2^24 (the chunked sums). A grouped ConvTranspose keeps the float path.
TEST(Int8Emulation, ConvTransposeSumsIntegersLikeTheDlaDeconvolution) {
  struct Case {
    int64_t C, M, K, H, stride, pad, out_pad, dilation;
    bool bias;
    Rounding r;
    int64_t groups = 1;
  };
  const Case cases[] = {{5, 3, 2, 7, 2, 0, 0, 1, true, Rounding::kHalfAwayFromZero},
                        {7, 4, 3, 5, 2, 1, 1, 1, false, Rounding::kHalfToEven},
                        {6, 5, 3, 6, 3, 2, 0, 2, true, Rounding::kHalfAwayFromZero},
                        {300, 2, 3, 4, 2, 1, 0, 1, true, Rounding::kHalfAwayFromZero},
                        {4, 4, 2, 5, 2, 0, 0, 1, true, Rounding::kHalfAwayFromZero, 2}};
  uint32_t seed = 60;
  for (const Case& c : cases) {
    const std::string what = "C=" + std::to_string(c.C) + " K=" + std::to_string(c.K) +
                             " stride=" + std::to_string(c.stride) + " groups=" + std::to_string(c.groups);
    const int64_t Mg = c.M / c.groups, span = (c.K - 1) * c.dilation + 1;
    const int64_t OH = (c.H - 1) * c.stride + c.out_pad + span - 2 * c.pad;
    const Tensor w = random_tensor({c.C, Mg, c.K, c.K}, seed++);
    const Tensor b = random_tensor({c.M}, seed++);
    const Tensor x = random_tensor({1, c.C, c.H, c.H}, seed++, -2.f, 2.f);
    Graph g;
    const int xi = g.add_value("x", {DType::kF32, {1, c.C, c.H, c.H}});
    std::vector<int> ins{xi, g.add_constant("w", w)};
    if (c.bias) ins.push_back(g.add_constant("b", b));
    const TensorType yt{DType::kF32, {1, c.M, OH, OH}};
    const int y = append_node(g, OpKind::ConvTranspose, "deconv", ins, yt);
    Node& deconv = g.nodes.back();
    deconv.attrs["strides"] = std::vector<int64_t>{c.stride, c.stride};
    deconv.attrs["pads"] = std::vector<int64_t>{c.pad, c.pad, c.pad, c.pad};
    deconv.attrs["output_padding"] = std::vector<int64_t>{c.out_pad, c.out_pad};
    deconv.attrs["dilations"] = std::vector<int64_t>{c.dilation, c.dilation};
    if (c.groups > 1) deconv.attrs["group"] = c.groups;
    g.outputs = {append_node(g, OpKind::Relu, "relu", {y}, yt)};
    g.inputs = {xi};
    g.relink();
    const float amax_in = 1.5f, s_in = amax_in / 127;
    ScaleTable t;
    for (const char* n : {"x", "deconv_out", "relu_out"}) t.set_amax(n, n[0] == 'x' ? amax_in : 30.f);
    NumericsPlan plan = plan_uniform(g, Mode::kINT8, &t);
    for (auto& n : plan.nodes) n.rounding = c.r;
    const numerics::StepRules rules = step_rules(g, plan, 0);
    ASSERT_EQ(rules.exact_int8_conv, c.groups == 1) << what;
    if (c.groups > 1) continue;
    ASSERT_EQ(rules.outputs.at(0).store, numerics::Store::kFused) << what;
    EmulatedEngine e(g, plan);
    std::vector<float> got;
    e.engine().set_observer([&](const Node& n, const std::vector<Tensor>& outs) {
      if (n.name == "deconv") got = outs[0].to_f32();
    });
    e.run({{"x", x}});
    ASSERT_EQ(got.size(), size_t(c.M * OH * OH)) << what;
    const std::vector<float> sw = per_channel_scales(w, 1);
    if (c.C > 100) {  // the case is there for the chunked sums: check that they are chunked
      Tensor levels(DType::kF32, w.shape());
      for (int64_t i = 0; i < w.numel(); ++i)
        levels.data<float>()[i] = float(quantize(w.data<float>()[i], sw[size_t(i / (c.K * c.K) % c.M)], c.r));
      ASSERT_GT(numerics::prepare_int8_conv(g.nodes[0], levels, sw, {}, s_in, c.r).chunks.size(), 1u);
    }
    int mismatches = 0;
    for (int64_t m = 0; m < c.M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OH; ++ow) {
          int64_t acc = 0;  // y[oh] takes x[ih] * w[kh] where ih * stride - pad + kh * dilation = oh
          for (int64_t ch = 0; ch < c.C; ++ch)
            for (int64_t kh = 0; kh < c.K; ++kh)
              for (int64_t kw = 0; kw < c.K; ++kw) {
                const int64_t th = oh + c.pad - kh * c.dilation, tw = ow + c.pad - kw * c.dilation;
                if (th < 0 || tw < 0 || th % c.stride || tw % c.stride) continue;
                const int64_t ih = th / c.stride, iw = tw / c.stride;
                if (ih >= c.H || iw >= c.H) continue;
                acc += int64_t(quantize(x.data<float>()[(ch * c.H + ih) * c.H + iw], s_in, c.r)) *
                       quantize(w.data<float>()[((ch * c.M + m) * c.K + kh) * c.K + kw], sw[size_t(m)], c.r);
              }
          const float mult = s_in * sw[size_t(m)];
          const double bq = c.bias ? round_with(b.data<float>()[m] / mult, c.r) : 0.0;
          mismatches += got[size_t((m * OH + oh) * OH + ow)] != float(double(acc) + bq) * mult;
        }
    EXPECT_EQ(mismatches, 0) << what;
  }
}

// The chunks of a ConvTranspose's input channels (the rows of its [C, M, k, k] weight) keep every partial
// sum below 2^24, as a convolution's do: each row's levels have their own magnitude, so the chunk ends and
// each chunk's weights show whether rows (not a convolution's columns) were read.
TEST(Int8Emulation, ConvTransposeChunksItsInputChannels) {
  const int64_t C = 240, M = 4, K = 3, taps = K * K;
  Tensor w_levels(DType::kF32, {C, M, K, K});
  auto level = [&](int64_t ch, int64_t m, int64_t t) {
    return float((1 + (ch * 7 + m) % 127) * ((ch + t) % 2 ? 1 : -1));
  };
  for (int64_t ch = 0; ch < C; ++ch)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t t = 0; t < taps; ++t) w_levels.data<float>()[(ch * M + m) * taps + t] = level(ch, m, t);
  // The chunks by the bound's definition: channels join while 128 * (the running sum over channels of the
  // largest per-output-channel sum of |level|) stays within 2^24.
  std::vector<std::pair<int64_t, int64_t>> want;
  double run = 0;
  int64_t start = 0;
  for (int64_t ch = 0; ch < C; ++ch) {
    double widest = 0;
    for (int64_t m = 0; m < M; ++m) widest = std::max(widest, double(taps) * std::fabs(level(ch, m, 0)));
    if (ch > start && (run + widest) * 128 > double(1 << 24))
      want.push_back({start, ch}), start = ch, run = 0;
    run += widest;
  }
  want.push_back({start, C});
  Node deconv;
  deconv.op = OpKind::ConvTranspose;
  deconv.name = "deconv";
  deconv.opset = 13;
  const numerics::Int8Conv c = numerics::prepare_int8_conv(
      deconv, w_levels, std::vector<float>(size_t(M), 0.01f), {}, 0.01f, Rounding::kHalfAwayFromZero);
  ASSERT_GT(want.size(), 1u);
  ASSERT_EQ(c.chunks, want);
  ASSERT_EQ(c.w_q.size(), c.chunks.size());
  for (size_t k = 0; k < c.chunks.size(); ++k) {
    const auto [c0, c1] = c.chunks[k];
    ASSERT_EQ(c.w_q[k].shape(), (Shape{c1 - c0, M, K, K}));
    int differ = 0;
    for (int64_t i = 0; i < c.w_q[k].numel(); ++i)
      differ += c.w_q[k].data<float>()[i] != w_levels.data<float>()[c0 * M * taps + i];
    EXPECT_EQ(differ, 0) << "chunk " << k;
  }
  deconv.attrs["group"] = int64_t(2);
  EXPECT_THROW(numerics::prepare_int8_conv(deconv, w_levels, std::vector<float>(size_t(M), 0.01f), {}, 0.01f,
                                           Rounding::kHalfAwayFromZero),
               Error);
}

// An INT8 Sigmoid is computed in FP16 on the DLA: it reads its input as fp16 whether that input was stored
// as int8 levels or arrives as the fp32 value of the pipeline it is fused into (after a convolution here),
// and rounds its result to fp16 (the network's output here, so no int8 store hides the difference).
TEST(Int8Emulation, Fp16ComputedLayerReadsItsFusedInputAsFp16) {
  Tensor w = random_tensor({4, 3, 3, 3}, 71, -2.f, 2.f), b = random_tensor({4}, 72);
  Graph g = conv_graph(w, b, 6, 6, 1, false);
  const int y = g.outputs[0];
  g.outputs = {append_node(g, OpKind::Sigmoid, "sig", {y}, g.value(y).type)};  // leaves as fp16
  g.relink();
  ScaleTable t;
  for (const char* n : {"x", "y"}) t.set_amax(n, 2.f);
  const NumericsPlan plan = plan_uniform(g, Mode::kINT8, &t);
  ASSERT_TRUE(plan.fused[size_t(y)]);
  const numerics::StepRules rules = step_rules(g, plan, 1);
  ASSERT_TRUE(rules.compute_fp16);
  EXPECT_TRUE(rules.inputs.at(0).round_fp16);
  EXPECT_EQ(rules.inputs.at(0).quantize_scale, 0.f);
  std::map<std::string, std::vector<float>> seen;
  EmulatedEngine e(g, plan);
  e.engine().set_observer(
      [&](const Node& n, const std::vector<Tensor>& outs) { seen[n.name] = outs[0].to_f32(); });
  e.run({{"x", random_tensor({1, 3, 6, 6}, 73, -2.f, 2.f)}});
  const std::vector<float>& conv = seen["conv"];
  auto half = [](float v) { return half_to_float(float_to_half(v)); };
  int off_half_grid = 0, mismatches = 0;
  for (size_t i = 0; i < conv.size(); ++i) {
    off_half_grid += half(conv[i]) != conv[i];
    mismatches += seen["sig"][i] != half(1.0f / (1.0f + std::exp(-half(conv[i]))));
  }
  EXPECT_GT(off_half_grid, 0);  // the pipeline's value is fp32: the rounding is the layer's
  EXPECT_EQ(mismatches, 0);
}

#include "quant/qdq.h"

namespace {
// x -> Q -> DQ -> Conv(DQ(int8 weights, per-channel)) -> y
Graph qdq_graph(float zero_point, bool q_feeds_conv) {
  Graph g;
  const int x = g.add_value("x", {DType::kF32, {1, 2, 4, 4}});
  const int xs = g.add_constant("x_scale", Tensor::scalar_f32(0.02f));
  Tensor zp(DType::kI8, {});
  zp.data<int8_t>()[0] = int8_t(zero_point);
  const int xz = g.add_constant("x_zp", zp);
  const int xq = g.add_value("x_q", {DType::kI8, {1, 2, 4, 4}});
  const int xd = g.add_value("x_dq", {DType::kF32, {1, 2, 4, 4}});
  Tensor wq(DType::kI8, {3, 2, 1, 1});
  for (int i = 0; i < 6; ++i) wq.data<int8_t>()[i] = int8_t(i * 40 - 127);
  const int wi = g.add_constant("w_int8", wq);
  const int ws = g.add_constant("w_scale", Tensor::from_f32({3}, {0.1f, 0.2f, 0.3f}));
  Tensor wz(DType::kI8, {3});
  const int wzi = g.add_constant("w_zp", wz);
  const int wd = g.add_value("w", {DType::kF32, {3, 2, 1, 1}});
  const int y = g.add_value("y", {DType::kF32, {1, 3, 4, 4}});
  Node q, dq, wdq, conv;
  q.op = OpKind::QuantizeLinear;
  q.name = "q";
  q.inputs = {x, xs, xz};
  q.outputs = {xq};
  dq.op = OpKind::DequantizeLinear;
  dq.name = "dq";
  dq.inputs = {xq, xs, xz};
  dq.outputs = {xd};
  wdq.op = OpKind::DequantizeLinear;
  wdq.name = "wdq";
  wdq.inputs = {wi, ws, wzi};
  wdq.outputs = {wd};
  wdq.attrs["axis"] = int64_t(0);
  conv.op = OpKind::Conv;
  conv.name = "conv";
  conv.inputs = {q_feeds_conv ? xq : xd, wd};
  conv.outputs = {y};
  for (Node* n : {&q, &dq, &wdq, &conv}) n->opset = 13;
  g.nodes = {q, dq, wdq, conv};
  g.inputs = {x};
  g.outputs = {y};
  g.relink();
  return g;
}
}  // namespace

TEST(QDQ, FoldsPairsIntoRangesAndWeightsOntoTheGrid) {
  Graph g = qdq_graph(0, false);
  ScaleTable t = fold_qdq(g);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op, OpKind::Conv);
  EXPECT_EQ(g.value(g.nodes[0].inputs[0]).name, "x");  // the Conv reads x directly
  ASSERT_NE(t.find_scale("x"), nullptr);
  EXPECT_EQ(*t.find_scale("x"), 0.02f);
  ASSERT_EQ(t.weight_scales.count("w"), 1u);
  EXPECT_EQ(t.weight_scales["w"], (std::vector<float>{0.1f, 0.2f, 0.3f}));
  const Tensor& w = *g.value(g.nodes[0].inputs[1]).constant;
  for (int i = 0; i < 6; ++i)
    EXPECT_FLOAT_EQ(w.data<float>()[i], float(i * 40 - 127) * (0.1f * float(1 + i / 2)));
  // The cache it writes: x's scale bits.
  EXPECT_NE(format_calib_cache(t).find("x: " + scale_to_hex(0.02f)), std::string::npos);
}

TEST(QDQ, RejectsWhatTheDlaCannotTake) {
  Graph asym = qdq_graph(3, false);
  try {
    fold_qdq(asym);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("zero point 3"), std::string::npos) << e.what();
  }
  Graph direct = qdq_graph(0, true);
  EXPECT_THROW(fold_qdq(direct), Error);
}

// A Resize in FP16 keeps its scales as they are: they say where it samples, and 0.29998 in fp16 (0.30005)
// would give 3 rows of 10 where the graph has 2 (the emulation then wrote past its output).
TEST(Numerics, Fp16ResizeKeepsItsScales) {
  Graph g;
  const int x = g.add_value("x", {DType::kF32, {1, 2, 10, 3}});
  Tensor scales(DType::kF32, {4});
  const float values[] = {1.f, 1.f, 0.29998f, 1.f};
  std::memcpy(scales.raw(), values, sizeof(values));
  Node n;
  n.op = OpKind::Resize;
  n.name = "resize";
  n.opset = 13;
  n.attrs["mode"] = std::string("nearest");
  n.inputs = {x, -1, g.add_constant("scales", scales)};
  n.outputs = {g.add_value("y", op_impl(OpKind::Resize).infer(InferContext(g, n))[0])};
  g.nodes = {n};
  g.inputs = {x};
  g.outputs = {n.outputs[0]};
  g.relink();
  ASSERT_EQ(g.value(n.outputs[0]).type.shape, (Shape{1, 2, 2, 3}));
  EXPECT_EQ(constant_form(g, plan_uniform(g, Mode::kFP16, nullptr), 0, 2), ConstantForm::kAsIs);
  Tensor in(DType::kF32, {1, 2, 10, 3});
  for (int64_t i = 0; i < in.numel(); ++i) in.data<float>()[i] = float(i) * 0.25f;  // fp16 values
  const Tensor got = EmulatedEngine(g, plan_uniform(g, Mode::kFP16, nullptr)).run({{"x", in}}).at("y");
  const Tensor want = ReferenceEngine(g).run({{"x", in}}).at("y");
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0);
}
