// The INT8 tools around the emulation (issue #13): task metrics, a cache against its network, the
// qdq-translator's scale propagation, bias correction and weight rounding, and the mixed-precision search,
// on small graphs with values worked out by hand or checked through the emulation itself.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "kernels/registry.h"
#include "passes/passes.h"
#include "quant/cache_fit.h"
#include "quant/calibrate.h"
#include "quant/fix_search.h"
#include "quant/metric.h"
#include "quant/qdq.h"
#include "quant/weight_tuning.h"

using namespace dlakit;
using namespace dlakit::quant;

namespace {

Tensor values(Shape s, std::vector<float> v) { return Tensor::from_f32(std::move(s), std::move(v)); }

// [1, T, C] scores whose argmax per step is `classes`.
Tensor one_hot(const std::vector<int>& classes, int64_t C) {
  Tensor t(DType::kF32, {1, int64_t(classes.size()), C});
  for (size_t i = 0; i < classes.size(); ++i) t.data<float>()[int64_t(i) * C + classes[i]] = 1.f;
  return t;
}

}  // namespace

TEST(Metrics, CtcCerDecodesWithTheLabelsAndTheBlank) {
  MetricSpec m;
  m.kind = MetricKind::kCtcCer;
  m.labels = {U"a", U"b"};  // classes: 0 blank, 1 'a', 2 'b', 3 a space (C = N + 2)
  MetricAccumulator acc(m);
  // FP32 reads [a a _ b ' '] -> "ab "; the emulation [a _ a b _] -> "aab": 2 edits over 3 characters.
  acc.add({{"y", one_hot({1, 1, 0, 2, 3}, 4)}}, {{"y", one_hot({1, 0, 1, 2, 0}, 4)}});
  EXPECT_DOUBLE_EQ(acc.value(), 2.0 / 3.0);
  EXPECT_EQ(ctc_greedy(one_hot({1, 1, 0, 2, 3}, 4).data<float>(), 5, 4, m.labels), U"ab ");
  EXPECT_TRUE(meets(MetricKind::kCtcCer, 0.01, 0.02));  // lower is better
  EXPECT_FALSE(meets(MetricKind::kCtcCer, 0.03, 0.02));
  EXPECT_TRUE(better(MetricKind::kCtcCer, 0.01, 0.02));
  MetricAccumulator wrong(m);  // 6 classes cannot be 2 labels + blank (+ space)
  EXPECT_THROW(wrong.add({{"y", one_hot({1}, 6)}}, {{"y", one_hot({1}, 6)}}), Error);
  MetricSpec ids;  // no character list: each class is one symbol; 6 classes are fine
  ids.kind = MetricKind::kCtcCer;
  MetricAccumulator by_class(ids);
  by_class.add({{"y", one_hot({5, 0, 5, 4}, 6)}}, {{"y", one_hot({5, 5, 5, 4}, 6)}});  // "5 5 4" vs "5 4"
  EXPECT_DOUBLE_EQ(by_class.value(), 1.0 / 3.0);
}

TEST(Metrics, CtcCerAgainstTheTruthIsTheErrorInt8AddsOverFp32) {
  MetricSpec m;
  m.kind = MetricKind::kCtcCer;
  m.labels = {U"a", U"b", U"c"};
  m.truth = {U"abc", U"cab"};  // 6 characters
  MetricAccumulator acc(m);
  // Line 1: FP32 reads "abc" (0 edits), the emulation "ab" (1). Line 2, a [1, T, C] output of its own:
  // FP32 reads "ca" (1 edit), the emulation "bb" (2). (1 + 2 - 0 - 1) / 6.
  acc.add({{"y", one_hot({1, 2, 3}, 4)}}, {{"y", one_hot({1, 2, 0}, 4)}});
  acc.add({{"y", one_hot({3, 0, 1}, 4)}}, {{"y", one_hot({2, 0, 2}, 4)}});
  EXPECT_DOUBLE_EQ(acc.value(), 2.0 / 6.0);
  EXPECT_EQ(format_metric_value(m, 2.0 / 6.0), "CER +33.33 points over FP32");
  EXPECT_STREQ(metric_reference(m), "against the truth");
  MetricAccumulator better_than_fp32(m);  // INT8 reading a line FP32 misreads: negative
  better_than_fp32.add({{"y", one_hot({1, 2, 0}, 4)}}, {{"y", one_hot({1, 2, 3}, 4)}});
  EXPECT_DOUBLE_EQ(better_than_fp32.value(), -1.0 / 3.0);  // over the 3 characters of the lines seen
  MetricAccumulator short_truth(m);                        // a third line has no expected reading
  short_truth.add({{"y", one_hot({1}, 4)}}, {{"y", one_hot({1}, 4)}});
  short_truth.add({{"y", one_hot({1}, 4)}}, {{"y", one_hot({1}, 4)}});
  EXPECT_THROW(short_truth.add({{"y", one_hot({1}, 4)}}, {{"y", one_hot({1}, 4)}}), Error);
}

TEST(Metrics, Top1MaskF1AndCosineByHand) {
  MetricSpec t1;
  t1.kind = MetricKind::kTop1;
  MetricAccumulator top1(t1);
  // Three rows: argmax 1 vs 1, 0 vs 2, 2 vs 2.
  top1.add({{"p", values({3, 3}, {0, 1, 0, 1, 0, 0, 0, 0, 1})}},
           {{"p", values({3, 3}, {0, 1, 0, 0, 0, 1, 0, 0, 1})}});
  EXPECT_DOUBLE_EQ(top1.value(), 2.0 / 3.0);
  MetricSpec f;
  f.kind = MetricKind::kMaskF1;
  f.threshold = 0.3f;
  MetricAccumulator f1(f);
  // reference set at {0, 1, 2}, test at {1, 2, 3}: tp 2, fp 1, fn 1 -> 4 / 6.
  f1.add({{"m", values({5}, {0.9f, 0.5f, 0.31f, 0.1f, 0.3f})}},
         {{"m", values({5}, {0.2f, 0.4f, 0.8f, 0.7f, 0.0f})}});
  EXPECT_DOUBLE_EQ(f1.value(), 4.0 / 6.0);
  MetricAccumulator cos(MetricSpec{});
  // Two outputs: identical (1) and orthogonal (0): the mean is 0.5.
  cos.add({{"a", values({2}, {1, 2})}, {"b", values({2}, {1, 0})}},
          {{"a", values({2}, {1, 2})}, {"b", values({2}, {0, 1})}});
  EXPECT_DOUBLE_EQ(cos.value(), 0.5);
}

// The bound is a percentile of the metric over the samples drawn again with replacement. Worked out from the
// binomial distribution: 20 samples, 18 agreeing (top1 0.9); a draw's agreements are Binomial(20, 0.9), with
// P(X <= 15) = 0.043 and P(X <= 16) = 0.133, so its 10th percentile is 16 of 20 (the 90th, the upper tail,
// would be 20 of 20). For ctc-cer (lower is better) the upper tail: 2 of 20 one-character lines misread,
// P(X <= 3) = 0.867 and P(X <= 4) = 0.957 for Binomial(20, 0.1), so the 90th percentile is 4 of 20.
TEST(Metrics, TheBoundIsThePessimisticPercentileOfTheSamplesDrawnAgain) {
  MetricSpec t1;
  t1.kind = MetricKind::kTop1;
  MetricAccumulator top1(t1), unanimous(t1);
  for (int i = 0; i < 20; ++i) {
    const Tensor p = values({1, 2}, {0.9f, 0.1f}), q = values({1, 2}, {0.1f, 0.9f});
    top1.add({{"p", p}}, {{"p", i < 18 ? p : q}});
    unanimous.add({{"p", p}}, {{"p", p}});
  }
  EXPECT_DOUBLE_EQ(top1.value(), 0.9);
  EXPECT_DOUBLE_EQ(top1.bound(0.9), 16.0 / 20.0);
  EXPECT_DOUBLE_EQ(top1.bound(0.9), top1.bound(0.9));  // a fixed seed: the same samples, the same bound
  EXPECT_DOUBLE_EQ(top1.bound(0), 0.9);                // no confidence: the value
  EXPECT_DOUBLE_EQ(unanimous.bound(0.9), 1.0);         // every draw agrees everywhere
  MetricSpec cer;
  cer.kind = MetricKind::kCtcCer;
  cer.labels = {U"a", U"b"};
  MetricAccumulator lines(cer);
  for (int i = 0; i < 20; ++i) lines.add({{"y", one_hot({1}, 3)}}, {{"y", one_hot({i < 2 ? 2 : 1}, 3)}});
  EXPECT_DOUBLE_EQ(lines.value(), 0.1);
  EXPECT_DOUBLE_EQ(lines.bound(0.9), 4.0 / 20.0);
  Score s{0.9, 1.0, 0.8};  // a point is judged on its bound
  EXPECT_FALSE(meets(MetricKind::kTop1, s, 0.85));
  EXPECT_TRUE(meets(MetricKind::kTop1, s, 0.8));
  EXPECT_EQ(format_score(t1, s), "top1 agreement 90.00 %");  // no confidence: the value alone
  MetricSpec judged = t1;
  judged.confidence = 0.9;
  EXPECT_EQ(format_score(judged, s), "top1 agreement 90.00 % (90 % bound: top1 agreement 80.00 %)");
}

TEST(Metrics, AutoReadsSoftmaxSequencesAsCtcAndSoftmaxesAsClasses) {
  std::string why;
  EXPECT_EQ(auto_metric({{"p", values({2, 3}, {0.2f, 0.5f, 0.3f, 1, 0, 0})}}, &why), MetricKind::kTop1);
  EXPECT_NE(why.find("3 classes"), std::string::npos) << why;
  EXPECT_EQ(auto_metric({{"p", values({1, 2, 3}, {0.2f, 0.5f, 0.3f, 1, 0, 0})}}, &why), MetricKind::kCtcCer);
  EXPECT_NE(why.find("2 steps"), std::string::npos) << why;
  EXPECT_EQ(auto_metric({{"p", values({1, 1, 3}, {0.2f, 0.5f, 0.3f})}}), MetricKind::kTop1);  // one step
  // A sigmoid map: values in [0, 1], rows not summing to 1.
  EXPECT_EQ(auto_metric({{"m", values({1, 1, 2, 2}, {0.9f, 0.8f, 0.1f, 0.2f})}}), MetricKind::kCosine);
  // Logits: out of [0, 1].
  EXPECT_EQ(auto_metric({{"l", values({1, 2}, {3.f, -1.f})}}), MetricKind::kCosine);
}

// ---- a cache against its network ----
namespace {

// x -> Identity -> x2 -> Conv -> c -> Relu -> y (as imported); the passes drop the Identity (the Conv
// reads x) and fuse the Relu (the Conv writes y).
Graph identity_conv_relu() {
  Graph g;
  const int x = g.add_value("x", {DType::kF32, {1, 2, 3, 3}});
  const int x2 = g.add_value("x2", {DType::kF32, {1, 2, 3, 3}});
  const int w = g.add_constant("w", values({2, 2, 1, 1}, {1, 0.5f, -0.5f, 1}));
  const int c = g.add_value("c", {DType::kF32, {1, 2, 3, 3}});
  const int y = g.add_value("y", {DType::kF32, {1, 2, 3, 3}});
  Node id{OpKind::Identity, "id", 13, {x}, {x2}, {}};
  Node conv{OpKind::Conv, "conv", 13, {x2, w}, {c}, {}};
  Node relu{OpKind::Relu, "relu", 13, {c}, {y}, {}};
  g.nodes = {id, conv, relu};
  g.inputs = {x};
  g.outputs = {y};
  g.opset = 13;
  g.relink();
  return g;
}

ScaleTable cache_of(std::vector<std::pair<std::string, float>> entries,
                    const std::string& algo = "EntropyCalibration2") {
  ScaleTable t;
  t.algorithm = algo;
  t.scales = std::move(entries);
  return t;
}

}  // namespace

TEST(CacheFit, FoldedInternalAliasUnknownAndZeroEntries) {
  const Graph imported = identity_conv_relu();
  Graph kept = imported;
  run_passes(kept);
  const CacheFit f = fit_cache(cache_of({{"x2", 0.01f},
                                         {"c", 0.02f},
                                         {"y", 0.03f},
                                         {"(Unnamed Layer* 3) [Shuffle]_output", 0.5f},
                                         {"elsewhere", 0.04f}}),
                               kept, imported);
  EXPECT_EQ(f.kept, std::vector<std::string>{"y"});
  EXPECT_EQ(f.folded, std::vector<std::string>{"c"});  // the Conv output before its fused Relu
  ASSERT_EQ(f.mapped.size(), 1u);  // x2 was an Identity of x, which has no scale of its own
  EXPECT_EQ(f.mapped[0], (std::pair<std::string, std::string>{"x2", "x"}));
  EXPECT_EQ(*f.scales.find_scale("x"), 0.01f);
  EXPECT_EQ(f.internal.size(), 1u);
  EXPECT_EQ(f.unknown, std::vector<std::string>{"elsewhere"});
  EXPECT_EQ(f.scales.find_scale("c"), nullptr);  // never handed to the network
  ASSERT_EQ(f.warnings.size(), 1u);
  EXPECT_NE(f.warnings[0].find("'elsewhere'"), std::string::npos) << f.warnings[0];
  // A scale of 0 is left out, with a warning naming the tensor; another algorithm's header is a warning.
  const CacheFit z = fit_cache(cache_of({{"x", 0.01f}, {"y", 0.f}}, "MinMaxCalibration"), kept, imported);
  EXPECT_EQ(z.zero, std::vector<std::string>{"y"});
  EXPECT_EQ(z.scales.find_scale("y"), nullptr);
  std::string all;
  for (auto& w : z.warnings) all += w + "\n";
  EXPECT_NE(all.find("scale 0"), std::string::npos) << all;
  EXPECT_NE(all.find("'y'"), std::string::npos) << all;
  EXPECT_NE(all.find("MinMaxCalibration"), std::string::npos) << all;
  // Nothing of this model: an error naming the cache's tensors.
  try {
    fit_cache(cache_of({{"a", 0.1f}, {"b", 0.1f}}), kept, imported, "other.cache");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("other.cache does not fit this model"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("'a'"), std::string::npos) << e.what();
  }
}

TEST(QdqPropagation, TheTranslatorsRulesForwardThenBackward) {
  // x -> Relu -> r -> MaxPool -> p -> Sigmoid -> s; only r has a scale.
  Graph g;
  const int x = g.add_value("x", {DType::kF32, {1, 1, 2, 2}}),
            r = g.add_value("r", {DType::kF32, {1, 1, 2, 2}}),
            p = g.add_value("p", {DType::kF32, {1, 1, 1, 1}}),
            s = g.add_value("s", {DType::kF32, {1, 1, 1, 1}});
  Node relu{OpKind::Relu, "relu", 13, {x}, {r}, {}}, pool{OpKind::MaxPool, "pool", 13, {r}, {p}, {}},
      sig{OpKind::Sigmoid, "sig", 13, {p}, {s}, {}};
  pool.attrs["kernel_shape"] = std::vector<int64_t>{2, 2};
  g.nodes = {relu, pool, sig};
  g.inputs = {x};
  g.outputs = {s};
  g.relink();
  ScaleTable t = cache_of({{"r", 0.1f}});
  EXPECT_EQ(propagate_unchanged_scales(g, t), 2);
  EXPECT_EQ(*t.find_scale("p"), 0.1f);    // forward across MaxPool
  EXPECT_EQ(*t.find_scale("x"), 0.1f);    // backward across Relu
  EXPECT_EQ(t.find_scale("s"), nullptr);  // Sigmoid: never forward
  // Sigmoid backward: the input range of an output range a is ln(a / (1 - a)).
  ScaleTable u = cache_of({{"s", 0.88f / 127}});
  propagate_unchanged_scales(g, u);
  ASSERT_NE(u.find_scale("p"), nullptr);
  EXPECT_NEAR(*u.find_scale("p") * 127, std::log(0.88 / 0.12), 1e-5);
  ScaleTable v = cache_of({{"s", 0.4f / 127}});  // a <= 1/2 gives no positive range: nothing copied
  EXPECT_EQ(propagate_unchanged_scales(g, v), 0);
}

// ---- bias correction and weight rounding, checked through the emulation ----
namespace {

struct ConvCase {
  Graph g;
  std::vector<TensorMap> samples;
  ScaleTable scales;
  Placement placement;
};

// x [1, 8, H, W] (values in [0, 1): a ReLU's output has a mean, so weight rounding errors add up to a
// bias) -> Conv 3x3, 4 channels -> y, INT8 on the DLA with minmax ranges. By default 6x6, pad 1, stride 1.
struct ConvGeometry {
  int64_t h = 6, w = 6;
  std::vector<int64_t> pads{1, 1, 1, 1}, strides{1, 1}, dilations{1, 1};
};
ConvCase conv_case(const ConvGeometry& geom = {}) {
  ConvCase c;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f), pos(0.f, 1.f);
  Tensor w(DType::kF32, {4, 8, 3, 3}), b(DType::kF32, {4});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = 0.3f * u(rng);
  for (int64_t i = 0; i < 4; ++i) b.data<float>()[i] = 0.1f * u(rng);
  Graph& g = c.g;
  const int x = g.add_value("x", {DType::kF32, {1, 8, geom.h, geom.w}});
  Node conv{OpKind::Conv, "conv", 13, {x, g.add_constant("w", w), g.add_constant("b", b)}, {}, {}};
  conv.attrs["pads"] = geom.pads;
  conv.attrs["strides"] = geom.strides;
  conv.attrs["dilations"] = geom.dilations;
  const int y = g.add_value("y", op_impl(OpKind::Conv).infer(InferContext(g, conv))[0]);
  conv.outputs = {y};
  g.nodes = {conv};
  g.inputs = {x};
  g.outputs = {y};
  g.relink();
  for (int s = 0; s < 16; ++s) {
    Tensor t(DType::kF32, {1, 8, geom.h, geom.w});
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = pos(rng);
    c.samples.push_back({{"x", t}});
  }
  HistogramCollector h(g);
  for (auto& s : c.samples) h.add(s);
  CalibOptions mm;
  mm.algo = CalibAlgo::kMinMax;
  c.scales = h.compute(mm);
  PlacementOptions po;
  po.precision = dla::Precision::kINT8;
  c.placement = place(g, po);
  return c;
}

// Per output channel: mean and mean square of (INT8 emulation - FP32) over the samples.
std::pair<std::vector<double>, double> int8_error(const Graph& g, const ConvCase& c) {
  const NumericsPlan plan = plan_numerics(g, c.placement, &c.scales);
  EXPECT_EQ(plan.int8_nodes, 1);
  EmulatedEngine emu(g, plan);
  ReferenceEngine ref(c.g);  // the untuned model is the reference
  std::vector<double> mean(4, 0.0);
  double sq = 0, n = 0;
  for (auto& s : c.samples) {
    const Tensor a = ref.run(s).at("y"), b = emu.run(s).at("y");
    for (int64_t i = 0; i < a.numel(); ++i) {
      const double d = double(b.data<float>()[i]) - a.data<float>()[i];
      mean[size_t(i / (a.numel() / 4))] += d;
      sq += d * d;
      n += 1;
    }
  }
  for (double& m : mean) m /= n / 4;
  return {mean, sq / n};
}

// A geometry where every tap's valid output range differs: stride 2, uneven padding, odd sizes.
ConvGeometry strided_geometry() {
  ConvGeometry g;
  g.h = 9;
  g.w = 11;
  g.pads = {2, 1, 0, 2};
  g.strides = {2, 2};
  return g;
}

}  // namespace

// The default geometry and one where every tap's valid output range differs (stride 2, dilation 2, uneven
// padding): the patch sums the correction uses are taken over exactly the positions each tap reads.
TEST(WeightTuning, BiasCorrectionRemovesTheMeanErrorOfEachChannel) {
  ConvGeometry strided = strided_geometry();
  strided.dilations = {2, 2};
  for (const ConvGeometry& geom : {ConvGeometry{}, strided}) {
    SCOPED_TRACE(geom.h);
    const ConvCase c = conv_case(geom);
    Graph tuned = c.g;  // shares the original's tensors until one is replaced
    auto values = [](const Graph& g, size_t input) {
      const Tensor& t = *g.value(g.nodes[0].inputs[input]).constant;
      return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
    };
    const std::vector<float> weights = values(c.g, 1), bias = values(c.g, 2);
    TuneOptions o;
    o.bias_correction = true;
    const TuneReport r = tune_weights(tuned, plan_numerics(c.g, c.placement, &c.scales), c.samples, o);
    EXPECT_EQ(r.tuned, 1);
    const auto [before, mse_before] = int8_error(c.g, c);
    const auto [after, mse_after] = int8_error(tuned, c);
    double worst_before = 0, worst_after = 0;
    for (int k = 0; k < 4; ++k) {
      worst_before = std::max(worst_before, std::fabs(before[size_t(k)]));
      worst_after = std::max(worst_after, std::fabs(after[size_t(k)]));
    }
    EXPECT_GT(worst_before, 1e-3);                // there is a bias to remove
    EXPECT_LT(worst_after, 0.05 * worst_before);  // measured through the DLA's integer arithmetic
    EXPECT_LT(mse_after, mse_before);
    // The weights keep their values; the bias changes in the tuned copy only, not in the original model.
    EXPECT_EQ(values(tuned, 1), weights);
    EXPECT_EQ(values(c.g, 1), weights);
    EXPECT_EQ(values(c.g, 2), bias);
    EXPECT_NE(values(tuned, 2), bias);
  }
}

TEST(WeightTuning, WeightRoundingKeepsTheScalesAndLowersTheOutputError) {
  const ConvCase c = conv_case();
  Graph tuned = c.g;
  TuneOptions o;
  o.weight_rounding = true;
  const TuneReport r = tune_weights(tuned, plan_numerics(c.g, c.placement, &c.scales), c.samples, o);
  ASSERT_EQ(r.tuned, 1);
  EXPECT_GT(r.layers[0].flipped, 0);
  const Tensor &w0 = *c.g.value(c.g.nodes[0].inputs[1]).constant,
               &w1 = *tuned.value(tuned.nodes[0].inputs[1]).constant;
  const std::vector<float> s0 = per_channel_scales(w0, 0), s1 = per_channel_scales(w1, 0);
  ASSERT_EQ(s0.size(), s1.size());
  for (size_t k = 0; k < s0.size(); ++k) EXPECT_EQ(scale_to_hex(s0[k]), scale_to_hex(s1[k])) << k;
  // Every weight sits on its level (the DLA's rounding of w'/s returns it) one step at most from nearest.
  const Tensor q0 = quantize_weights(w0, s0, 0, Rounding::kHalfAwayFromZero);
  const Tensor q1 = quantize_weights(w1, s1, 0, Rounding::kHalfAwayFromZero);
  for (int64_t i = 0; i < w1.numel(); ++i) {
    const float level = q1.data<float>()[i], scale = s1[size_t(i / 72)];
    if (std::fabs(level) < 127) {
      EXPECT_EQ(w1.data<float>()[i], level * scale) << i;
    }
    EXPECT_LE(std::fabs(level - q0.data<float>()[i]), 1.f) << i;
  }
  EXPECT_LT(int8_error(tuned, c).second, int8_error(c.g, c).second);
}

// One pass for several edits gives each edit's graph and report as tune_weights gives them alone, bit for
// bit (the rounding statistics, collected for the options that round, change nothing for those that don't).
TEST(WeightTuning, EachFromOnePassEqualsEachAlone) {
  const ConvCase c = conv_case(strided_geometry());
  const NumericsPlan plan = plan_numerics(c.g, c.placement, &c.scales);
  std::vector<TuneOptions> each(4);
  for (int mode = 0; mode < 4; ++mode) {
    each[size_t(mode)].bias_correction = mode & 1;
    each[size_t(mode)].weight_rounding = mode & 2;
  }
  std::vector<TuneReport> reports;
  const std::vector<Graph> tuned = tune_weights_each(c.g, plan, c.samples, each, &reports);
  ASSERT_EQ(tuned.size(), 4u);
  ASSERT_EQ(reports.size(), 4u);
  for (size_t mode = 0; mode < 4; ++mode) {
    SCOPED_TRACE(mode);
    Graph alone = c.g;
    const TuneReport r = tune_weights(alone, plan, c.samples, each[mode]);
    EXPECT_EQ(reports[mode].tuned, r.tuned);
    ASSERT_EQ(reports[mode].layers.size(), r.layers.size());
    for (size_t i = 0; i < r.layers.size(); ++i) {
      EXPECT_EQ(reports[mode].layers[i].flipped, r.layers[i].flipped);
      EXPECT_EQ(reports[mode].layers[i].objective_reduction, r.layers[i].objective_reduction);
      EXPECT_EQ(reports[mode].layers[i].bias_shift_rms, r.layers[i].bias_shift_rms);
      EXPECT_EQ(reports[mode].layers[i].skipped, r.layers[i].skipped);
    }
    for (int input : {1, 2}) {
      const Tensor &a = *alone.value(alone.nodes[0].inputs[size_t(input)]).constant,
                   &b = *tuned[mode].value(tuned[mode].nodes[0].inputs[size_t(input)]).constant;
      ASSERT_EQ(a.numel(), b.numel());
      EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << "input " << input;
    }
  }
  // The edits did change something where asked: bias correction moves the bias, rounding the weights.
  const Tensor& b0 = *c.g.value(c.g.nodes[0].inputs[2]).constant;
  EXPECT_NE(std::memcmp(b0.raw(), tuned[1].value(tuned[1].nodes[0].inputs[2]).constant->raw(), b0.nbytes()),
            0);
  EXPECT_GT(reports[2].layers[0].flipped, 0);
}

// x -> conv1 -> a -> conv2 -> b -> conv3 -> y: 1x1 convolutions of 8 channels, random weights.
Graph conv_chain() {
  Graph g;
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-0.3f, 0.3f);
  int v = g.add_value("x", {DType::kF32, {1, 8, 6, 6}});
  g.inputs = {v};
  for (int i = 1; i <= 3; ++i) {
    Tensor w(DType::kF32, {8, 8, 1, 1});
    for (int64_t k = 0; k < w.numel(); ++k) w.data<float>()[k] = u(rng);
    const int out =
        g.add_value(i == 3 ? "y" : std::string(1, char('a' + i - 1)), {DType::kF32, {1, 8, 6, 6}});
    g.nodes.push_back({OpKind::Conv,
                       "conv" + std::to_string(i),
                       13,
                       {v, g.add_constant("w" + std::to_string(i), w)},
                       {out},
                       {}});
    v = out;
  }
  g.outputs = {v};
  g.relink();
  return g;
}

namespace {
// conv_chain on conv_case's samples with min-max scales, a's range 1000x too wide (a quantizes to zero), and
// every layer placed INT8: the search's test case.
struct CollapsedChain {
  ConvCase base = conv_case();
  Graph g = conv_chain();
  ScaleTable t;
  PlacementOptions po;
  CollapsedChain() {
    HistogramCollector h(g);
    for (auto& s : base.samples) h.add(s);
    CalibOptions mm;
    mm.algo = CalibAlgo::kMinMax;
    t = h.compute(mm);
    t.set_scale("a", *t.find_scale("a") * 1000);
    po.precision = dla::Precision::kINT8;
  }
};
}  // namespace

TEST(FixSearch, FindsTheOneLayerThatCollapsesTheOutput) {
  const CollapsedChain chain;
  const auto& [base, g, t, po] = chain;
  SearchOptions so;
  so.target = 0.99;  // output cosine
  const SearchResult r = search_fix(g, po, &t, {}, base.samples, so);
  EXPECT_LT(r.all_int8.metric, 0.5);
  EXPECT_EQ(r.sensitivity_samples, size_t(SearchOptions{}.sensitivity_samples));  // conv_case has 16
  EXPECT_LT(r.sensitivity_base.metric, 0.5);  // the same collapse on those samples
  EXPECT_TRUE(r.reachable);
  ASSERT_TRUE(r.reached);
  const CurvePoint& chosen = r.curve[size_t(r.chosen)];
  EXPECT_EQ(chosen.moves, 1);
  EXPECT_GE(chosen.score.metric, 0.99);
  // conv1 writes `a` and conv2 reads it: both go to FP16, so `a` is never quantized.
  EXPECT_NE(r.applied.layer_precisions.find("conv1:fp16"), std::string::npos) << r.applied.layer_precisions;
  EXPECT_NE(r.applied.layer_precisions.find("conv2:fp16"), std::string::npos) << r.applied.layer_precisions;
  EXPECT_EQ(r.applied.layer_precisions.find("conv3"), std::string::npos) << r.applied.layer_precisions;
  EXPECT_EQ(r.curve.front().moves, 0);
  EXPECT_FALSE(r.curve.front().meets);
}

// With --fix-confidence a point meets the target only when its bound does: the point that met a target
// equal to its own value without it misses with it, and the search moves more layers or ends unreached.
TEST(FixSearch, WithAConfidenceAPointIsJudgedOnItsBound) {
  const CollapsedChain chain;
  const auto& [base, g, t, po] = chain;
  SearchOptions so;
  so.target = 0.99;
  const SearchResult plain = search_fix(g, po, &t, {}, base.samples, so);
  ASSERT_TRUE(plain.reached);
  const CurvePoint& one = plain.curve[size_t(plain.chosen)];
  ASSERT_EQ(one.moves, 1);
  so.target = one.score.metric;  // met by the one-move point's value, exactly
  so.metric.confidence = 0.9;
  const SearchResult bounded = search_fix(g, po, &t, {}, base.samples, so);
  bool one_move_seen = false;
  for (const CurvePoint& c : bounded.curve) {
    EXPECT_LE(c.score.bound, c.score.metric);  // cosine: the lower tail
    EXPECT_EQ(c.meets, c.score.bound >= so.target) << c.moves;
    if (c.moves == 1 && c.returned == 0) {
      one_move_seen = true;
      EXPECT_DOUBLE_EQ(c.score.metric, one.score.metric);
      EXPECT_LT(c.score.bound, one.score.metric);
      EXPECT_FALSE(c.meets);
    }
  }
  EXPECT_TRUE(one_move_seen);
  if (bounded.reached) EXPECT_GT(bounded.curve[size_t(bounded.chosen)].moves, 1);
}

// Searches sharing a memo (another target, return_groups) give what they give alone, measure each plan
// once, and a memo is refused for another search's inputs.
TEST(FixSearch, AMemoChangesNoResult) {
  const CollapsedChain chain;
  const auto& [base, g, t, po] = chain;
  auto same = [](const SearchResult& a, const SearchResult& b) {
    EXPECT_EQ(a.evaluations, b.evaluations);
    EXPECT_EQ(a.chosen, b.chosen);
    EXPECT_EQ(a.applied.layer_precisions, b.applied.layer_precisions);
    ASSERT_EQ(a.curve.size(), b.curve.size());
    for (size_t i = 0; i < a.curve.size(); ++i) {
      EXPECT_EQ(a.curve[i].moves, b.curve[i].moves) << i;
      EXPECT_EQ(a.curve[i].returned, b.curve[i].returned) << i;
      EXPECT_EQ(a.curve[i].score.metric, b.curve[i].score.metric) << i;
      EXPECT_EQ(a.curve[i].score.cosine, b.curve[i].score.cosine) << i;
    }
    ASSERT_EQ(a.ranking.size(), b.ranking.size());
    for (size_t i = 0; i < a.ranking.size(); ++i) {
      EXPECT_EQ(a.ranking[i].layer, b.ranking[i].layer) << i;
      EXPECT_EQ(a.ranking[i].alone.cosine, b.ranking[i].alone.cosine) << i;
    }
  };
  SearchMemo memo;
  SearchOptions so;
  const double targets[] = {0.99, 0.999, 0.99};  // the last repeats the first
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(targets[i]);
    so.target = targets[i];
    so.return_groups = targets[i] > 0.995;
    const int measured = memo.measured;
    const SearchResult shared = search_fix(g, po, &t, {}, base.samples, so, {}, &memo);
    same(shared, search_fix(g, po, &t, {}, base.samples, so));
    const int new_plans = memo.measured - measured;
    EXPECT_EQ(size_t(memo.measured), memo.scores.size()) << "a plan measured twice";
    if (i == 0) {
      EXPECT_GT(new_plans, 0);
    } else if (i == 1) {
      EXPECT_LT(new_plans, shared.evaluations) << "another target measured every plan anew";
    } else {
      EXPECT_EQ(new_plans, 0) << "the repeated search measured a plan again";
    }
  }
  so.metric.kind = MetricKind::kTop1;
  EXPECT_THROW(search_fix(g, po, &t, {}, base.samples, so, {}, &memo), Error);
  so.metric = {};
  const std::vector<TensorMap> other = base.samples;
  EXPECT_THROW(search_fix(g, po, &t, {}, other, so, {}, &memo), Error);
}

TEST(FixSearch, FusedGroupsPairEachLayerWithTheMovesThatCoverIt) {
  // Moving conv_i to FP16 moves its INT8 reader conv_i+1 too, so conv2 returns to INT8 only with conv1
  // and conv3 only with conv2; conv1 is covered by no other move (step 4 returns it alone).
  const Graph g = conv_chain();
  HistogramCollector h(g);
  const ConvCase base = conv_case();
  for (auto& s : base.samples) h.add(s);
  const ScaleTable t = h.compute({});
  PlacementOptions po;
  po.precision = dla::Precision::kINT8;
  const CompareResult before = compare_numerics(g, plan_numerics(g, place(g, po), &t), base.samples);
  using Groups = std::vector<std::vector<std::string>>;
  EXPECT_EQ(fused_groups(before, {"conv1", "conv2", "conv3"}),
            (Groups{{"conv1", "conv2"}, {"conv2", "conv3"}}));
  EXPECT_EQ(fused_groups(before, {"conv3", "conv2"}), (Groups{{"conv2", "conv3"}}));
  EXPECT_EQ(fused_groups(before, {"conv1", "conv3"}), Groups{});
  // A fork: conv1's move covers both readers, but each reader returns with conv1 alone.
  Graph fork = g;
  fork.nodes[2].inputs[0] = fork.nodes[1].inputs[0];  // conv3 reads a, like conv2
  fork.outputs.push_back(fork.nodes[1].outputs[0]);
  fork.relink();
  const CompareResult forked = compare_numerics(fork, plan_numerics(fork, place(fork, po), &t), base.samples);
  EXPECT_EQ(fused_groups(forked, {"conv1", "conv2", "conv3"}),
            (Groups{{"conv1", "conv2"}, {"conv1", "conv3"}}));
}
