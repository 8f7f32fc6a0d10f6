// Task metrics: how far an emulated precision's outputs are from the FP32 reference's, measured the way
// the task reads them. One metric drives `compare --fix --fix-target`, `--calib-algo auto` and the collapse
// warning; each is accumulated sample by sample.
//   cosine   mean over outputs of the cosine similarity (all samples' elements together); higher is better
//   top1     share of positions whose argmax over the last axis agrees with FP32's; higher is better
//   ctc-cer  character error rate of the greedy CTC decoding against FP32's decoding (class 0 the blank;
//            without a character list, each class is one symbol); lower is better. With the expected
//            readings (`--truth`): the CER against them minus FP32's CER against them, the error INT8 adds
//            on the task (negative where INT8 happens to read better); lower is better
//   mask-f1  F1 of the (p > threshold) masks against FP32's; higher is better
#pragma once
#include <string>
#include <vector>

#include "engine/engine.h"
#include "quant/numerics.h"

namespace dlakit::quant {

enum class MetricKind { kCosine, kTop1, kCtcCer, kMaskF1 };
MetricKind parse_metric(const std::string& s);  // "cosine" | "top1" | "ctc-cer" | "mask-f1"
const char* metric_name(MetricKind k);
bool higher_is_better(MetricKind k);

struct MetricSpec {
  MetricKind kind = MetricKind::kCosine;
  std::string output;                  // the output it reads (top1/ctc-cer/mask-f1); empty: the first
  std::vector<std::u32string> labels;  // ctc-cer: the characters of classes 1..N (class 0 is the blank);
                                       // empty: each class is one symbol
  float threshold = 0.5f;              // mask-f1: a pixel is set when p > threshold
  // ctc-cer: the expected reading of each line, in sample order (a [batch, steps, classes] output holds
  // `batch` lines); empty: judged against FP32's reading.
  std::vector<std::u32string> truth;
  // `--fix-confidence P` (0: off): a plan meets a target when the metric's pessimistic bound at confidence P
  // does (MetricAccumulator::bound), not only its value on these samples. A few dozen calibration samples
  // measure a metric with sampling noise the evaluation data does not share.
  double confidence = 0;
  bool operator==(const MetricSpec&) const = default;
};

// `--metric auto` (dlakit's default), from the first output on the FP32 reference: when it holds a
// probability distribution over its last axis (every value in [0, 1], every row summing to 1 within 1e-3,
// at least 2 classes), ctc-cer if it is a sequence ([..., steps > 1, classes]: a CTC recognizer's softmax,
// where per-step argmax agreement is dominated by blank steps) and top1 otherwise (a classifier); cosine
// for anything else. `why` says which and why.
MetricKind auto_metric(const TensorMap& reference_outputs, std::string* why = nullptr);

// One label per line (UTF-8), e.g. PaddleOCR's ppocr_keys_v1.txt; errors name the file.
std::vector<std::u32string> read_labels(const std::string& path);
std::u32string utf8_to_utf32(const std::string& s);

// The level below which (above, for ctc-cer) dlakit warns that INT8 has collapsed (dlakit's choice):
// cosine 0.99, top1 0.99, ctc-cer 0.05 (with --truth: 5 points over FP32's CER), mask-f1 0.95.
double collapse_threshold(MetricKind k);
bool meets(MetricKind k, double value, double target);
// a is better than b on this metric (strictly).
bool better(MetricKind k, double a, double b);
// "cosine 0.987654", "top1 99.17 %", "CER 2.31 %", "mask F1 0.9600"; with --truth "CER +1.20 points over
// FP32".
std::string format_metric_value(const MetricSpec& m, double v);
// What the metric is measured against: "against FP32", or "against the truth" with --truth.
const char* metric_reference(const MetricSpec& m);

// Every metric is a function of sums over the samples (cosine: per output, the sums of ab, aa and bb;
// top1: agreements and positions; ctc-cer: edits, characters and FP32's edits against the truth; mask-f1:
// true positives, false positives, false negatives). The accumulator keeps each sample's share of those
// sums, so that the samples can be drawn again (bound).
class MetricAccumulator {
 public:
  explicit MetricAccumulator(MetricSpec spec) : spec_(std::move(spec)) {}
  // One sample: the FP32 reference's outputs and the emulation's, by output name. Samples come in order
  // (the truth of ctc-cer is indexed by it).
  void add(const TensorMap& reference, const TensorMap& test);
  double value() const;
  // The metric's pessimistic bound at `confidence` (0 < confidence < 1): a percentile bootstrap over the
  // samples (2000 draws of as many samples, with replacement, from a fixed seed, so a plan's bound does not
  // change from run to run), the lower bound where higher is better, the upper one for ctc-cer. With one
  // sample, or confidence 0, the value itself.
  double bound(double confidence) const;
  const MetricSpec& spec() const { return spec_; }

 private:
  const Tensor& pick(const TensorMap& m, const char* which) const;
  double value_of(const std::vector<double>& sums) const;
  MetricSpec spec_;
  std::vector<std::string> outputs_;         // cosine: every float output, in the first sample's order
  std::vector<std::vector<double>> shares_;  // each sample's share of the sums (layout above)
  std::vector<double> sums_;                 // their totals
  size_t lines_ = 0;                         // ctc-cer: lines read so far (the index into truth)
};

// Greedy CTC decoding of one [T, C] slice: the argmax per step, repeats merged, blanks (class 0) dropped;
// class c >= 1 is labels[c - 1], and class N + 1 a space when C = N + 2 (PaddleOCR's `use_space_char`).
std::u32string ctc_greedy(const float* probs, int64_t steps, int64_t classes,
                          const std::vector<std::u32string>& labels);
size_t edit_distance(const std::u32string& a, const std::u32string& b);

// The metric and the mean output cosine (the tie-break and what every report shows) of one plan.
struct Score {
  double metric = 0, cosine = 0;
  double bound = 0;  // the metric's bound at the spec's confidence (the metric itself without one)
};
// Whether a plan's score meets a target: its bound (its metric unless --fix-confidence is set).
bool meets(MetricKind k, const Score& s, double target);
// A score's metric, and with a confidence the bound it is judged on: "CER +0.20 points over FP32 (95 % bound:
// CER +0.85 points over FP32)".
std::string format_score(const MetricSpec& m, const Score& s);
// FP32 reference outputs of every sample (computed once, shared by every plan that is scored).
std::vector<TensorMap> reference_outputs(const Graph& g, const std::vector<TensorMap>& samples);
Score score_plan(const Graph& g, const NumericsPlan& plan, const std::vector<TensorMap>& samples,
                 const std::vector<TensorMap>& reference, const MetricSpec& metric);
// a better than b: on the metric, then on the cosine.
bool better(MetricKind k, const Score& a, const Score& b);

}  // namespace dlakit::quant
