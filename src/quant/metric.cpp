#include "quant/metric.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "base/error.h"
#include "base/file.h"

namespace dlakit::quant {

MetricKind parse_metric(const std::string& s) {
  if (s == "cosine") return MetricKind::kCosine;
  if (s == "top1") return MetricKind::kTop1;
  if (s == "ctc-cer") return MetricKind::kCtcCer;
  if (s == "mask-f1") return MetricKind::kMaskF1;
  fail(Status::kInvalidArgument, "unknown metric '", s, "'; use cosine, top1, ctc-cer or mask-f1");
}

const char* metric_name(MetricKind k) {
  switch (k) {
    case MetricKind::kCosine:
      return "cosine";
    case MetricKind::kTop1:
      return "top1";
    case MetricKind::kCtcCer:
      return "ctc-cer";
    case MetricKind::kMaskF1:
      return "mask-f1";
  }
  return "?";
}

bool higher_is_better(MetricKind k) { return k != MetricKind::kCtcCer; }

double collapse_threshold(MetricKind k) {
  switch (k) {
    case MetricKind::kCosine:
    case MetricKind::kTop1:
      return 0.99;
    case MetricKind::kCtcCer:
      return 0.05;
    case MetricKind::kMaskF1:
      return 0.95;
  }
  return 0;
}

bool meets(MetricKind k, double value, double target) {
  return higher_is_better(k) ? value >= target : value <= target;
}

bool meets(MetricKind k, const Score& s, double target) { return meets(k, s.bound, target); }

bool better(MetricKind k, double a, double b) { return higher_is_better(k) ? a > b : a < b; }

bool better(MetricKind k, const Score& a, const Score& b) {
  if (a.metric != b.metric) return better(k, a.metric, b.metric);
  return a.cosine > b.cosine;
}

namespace {
bool against_truth(const MetricSpec& m) { return m.kind == MetricKind::kCtcCer && !m.truth.empty(); }
}  // namespace

std::string format_metric_value(const MetricSpec& m, double v) {
  char buf[64];
  if (against_truth(m)) {
    std::snprintf(buf, sizeof buf, "CER %+.2f points over FP32", 100 * v);
    return buf;
  }
  switch (m.kind) {
    case MetricKind::kCosine:
      std::snprintf(buf, sizeof buf, "cosine %.6f", v);
      break;
    case MetricKind::kTop1:
      std::snprintf(buf, sizeof buf, "top1 agreement %.2f %%", 100 * v);
      break;
    case MetricKind::kCtcCer:
      std::snprintf(buf, sizeof buf, "CER %.2f %%", 100 * v);
      break;
    case MetricKind::kMaskF1:
      std::snprintf(buf, sizeof buf, "mask F1 %.4f", v);
      break;
  }
  return buf;
}

std::string format_score(const MetricSpec& m, const Score& s) {
  std::string text = format_metric_value(m, s.metric);
  if (m.confidence > 0) {
    char pct[32];
    std::snprintf(pct, sizeof pct, "%g", 100 * m.confidence);
    text += std::string(" (") + pct + " % bound: " + format_metric_value(m, s.bound) + ")";
  }
  return text;
}

const char* metric_reference(const MetricSpec& m) {
  return against_truth(m) ? "against the truth" : "against FP32";
}

MetricKind auto_metric(const TensorMap& reference, std::string* why) {
  auto it = reference.begin();
  if (it == reference.end() || it->second.dtype() != DType::kF32 || it->second.rank() == 0 ||
      it->second.shape().back() < 2) {
    if (why) *why = "cosine (the first output is not a set of class scores)";
    return MetricKind::kCosine;
  }
  const Tensor& t = it->second;
  const int64_t classes = t.shape().back();
  const bool sequence = t.rank() >= 3 && t.dim(t.rank() - 2) > 1;
  for (int64_t r = 0; r < t.numel() / classes; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c) {
      const float p = t.data<float>()[r * classes + c];
      if (!(p >= 0.f && p <= 1.f)) {
        if (why)
          *why = "cosine (output '" + it->first + "' is not a probability distribution over its last axis)";
        return MetricKind::kCosine;
      }
      sum += p;
    }
    if (std::fabs(sum - 1) > 1e-3) {
      if (why) *why = "cosine (output '" + it->first + "' does not sum to 1 over its last axis)";
      return MetricKind::kCosine;
    }
  }
  if (sequence) {
    if (why)
      *why = "ctc-cer (output '" + it->first + "' is a sequence of " + std::to_string(t.dim(t.rank() - 2)) +
             " steps, each a probability distribution over " + std::to_string(classes) +
             " classes: read as CTC, class 0 the blank)";
    return MetricKind::kCtcCer;
  }
  if (why)
    *why = "top1 (output '" + it->first + "' is a probability distribution over its " +
           std::to_string(classes) + " classes)";
  return MetricKind::kTop1;
}

std::u32string utf8_to_utf32(const std::string& s) {
  std::u32string r;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const int n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    char32_t cp = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
    for (int k = 1; k < n && i + size_t(k) < s.size(); ++k) cp = (cp << 6) | (s[i + size_t(k)] & 0x3F);
    r.push_back(cp);
    i += size_t(n);
  }
  return r;
}

std::vector<std::u32string> read_labels(const std::string& path) {
  std::vector<std::u32string> labels;
  for (const std::string& line : split_lines(read_file(path))) labels.push_back(utf8_to_utf32(line));
  if (labels.empty())
    fail(Status::kInvalidArgument, "--labels '", path, "' is empty; it needs one label a line");
  return labels;
}

std::u32string ctc_greedy(const float* probs, int64_t steps, int64_t classes,
                          const std::vector<std::u32string>& labels) {
  std::u32string text;
  int64_t prev = -1;
  for (int64_t t = 0; t < steps; ++t) {
    const float* p = probs + t * classes;
    const int64_t k = std::max_element(p, p + classes) - p;
    if (k != prev && k != 0) {
      if (labels.empty())
        text += char32_t(k);  // no character list: the class itself is the symbol
      else
        text += size_t(k) <= labels.size() ? labels[size_t(k) - 1] : U" ";
    }
    prev = k;
  }
  return text;
}

size_t edit_distance(const std::u32string& a, const std::u32string& b) {
  std::vector<size_t> d(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) d[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = d[0];
    d[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = d[j];
      d[j] = std::min({d[j] + 1, d[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return d[b.size()];
}

const Tensor& MetricAccumulator::pick(const TensorMap& m, const char* which) const {
  auto it = spec_.output.empty() ? m.begin() : m.find(spec_.output);
  if (it == m.end())
    fail(Status::kInvalidArgument, "the model has no output '", spec_.output, "' for --metric ",
         metric_name(spec_.kind));
  if (it->second.dtype() != DType::kF32)
    fail(Status::kInvalidArgument, "--metric ", metric_name(spec_.kind), " reads float ", which, "; output '",
         it->first, "' is ", type_str(it->second.type()));
  return it->second;
}

void MetricAccumulator::add(const TensorMap& reference, const TensorMap& test) {
  std::vector<double> share;
  if (spec_.kind == MetricKind::kCosine) {
    if (outputs_.empty())
      for (auto& [name, t] : reference)
        if (t.dtype() == DType::kF32) outputs_.push_back(name);
    share.assign(3 * outputs_.size(), 0.0);  // per output: ab, aa, bb
    for (size_t o = 0; o < outputs_.size(); ++o) {
      const float *a = reference.at(outputs_[o]).data<float>(), *b = test.at(outputs_[o]).data<float>();
      for (int64_t i = 0; i < reference.at(outputs_[o]).numel(); ++i) {
        share[3 * o] += double(a[i]) * b[i];
        share[3 * o + 1] += double(a[i]) * a[i];
        share[3 * o + 2] += double(b[i]) * b[i];
      }
    }
  } else {
    const char* what = spec_.kind == MetricKind::kMaskF1 ? "probabilities" : "scores";
    const Tensor &ref = pick(reference, what), &emu = pick(test, what);
    const int64_t classes = ref.rank() > 0 ? ref.shape().back() : 1;
    share.assign(3, 0.0);
    if (spec_.kind == MetricKind::kTop1) {  // agreements, positions
      for (int64_t r = 0; r < ref.numel() / std::max<int64_t>(classes, 1); ++r) {
        const float *a = ref.data<float>() + r * classes, *b = emu.data<float>() + r * classes;
        share[0] += std::max_element(a, a + classes) - a == std::max_element(b, b + classes) - b;
        share[1] += 1;
      }
    } else if (spec_.kind == MetricKind::kCtcCer) {  // edits, characters, FP32's edits against the truth
      const int64_t n = int64_t(spec_.labels.size());
      if (ref.rank() < 2 || (n > 0 && classes != n + 1 && classes != n + 2))
        fail(Status::kInvalidArgument, "--metric ctc-cer: output of shape ", shape_str(ref.shape()),
             " with --labels of ", n, " characters; a CTC output is [batch, steps, classes] with classes = ",
             "characters + 1 (the blank, class 0) or + 2 (and a space, PaddleOCR's use_space_char)");
      const int64_t steps = ref.dim(ref.rank() - 2), lines = ref.numel() / (steps * classes);
      if (!spec_.truth.empty() && lines_ + size_t(lines) > spec_.truth.size())
        fail(Status::kInvalidArgument, "--truth has ", spec_.truth.size(),
             " reading(s) but the data has more lines");
      for (int64_t l = 0; l < lines; ++l, ++lines_) {
        const std::u32string a =
            ctc_greedy(ref.data<float>() + l * steps * classes, steps, classes, spec_.labels);
        const std::u32string b =
            ctc_greedy(emu.data<float>() + l * steps * classes, steps, classes, spec_.labels);
        if (spec_.truth.empty()) {
          share[0] += double(edit_distance(b, a));
          share[1] += double(a.size());
        } else {
          const std::u32string& want = spec_.truth[lines_];
          share[0] += double(edit_distance(b, want));
          share[1] += double(want.size());
          share[2] += double(edit_distance(a, want));
        }
      }
    } else {  // true positives, false positives, false negatives
      for (int64_t i = 0; i < ref.numel(); ++i) {
        const bool x = ref.data<float>()[i] > spec_.threshold, y = emu.data<float>()[i] > spec_.threshold;
        share[0] += x && y;
        share[1] += !x && y;
        share[2] += x && !y;
      }
    }
  }
  sums_.resize(std::max(sums_.size(), share.size()), 0.0);
  for (size_t i = 0; i < share.size(); ++i) sums_[i] += share[i];
  shares_.push_back(std::move(share));
}

double MetricAccumulator::value_of(const std::vector<double>& sums) const {
  auto sum = [&](size_t i) { return i < sums.size() ? sums[i] : 0.0; };
  switch (spec_.kind) {
    case MetricKind::kCosine: {
      if (outputs_.empty()) return 1.0;
      double total = 0;
      for (size_t o = 0; o < outputs_.size(); ++o) {
        const double ab = sum(3 * o), aa = sum(3 * o + 1), bb = sum(3 * o + 2);
        total += aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : (aa == bb ? 1.0 : 0.0);
      }
      return total / double(outputs_.size());
    }
    case MetricKind::kTop1:
      return sum(1) > 0 ? sum(0) / sum(1) : 1.0;
    case MetricKind::kCtcCer:
      if (!spec_.truth.empty())  // every expected reading empty: the edits INT8 adds, counted as characters
        return (sum(0) - sum(2)) / std::max(sum(1), 1.0);
      // FP32 reading nothing on every sample: 1 when the emulation reads anything.
      return sum(1) > 0 ? sum(0) / sum(1) : (sum(0) > 0 ? 1.0 : 0.0);
    case MetricKind::kMaskF1:
      return sum(0) + sum(1) + sum(2) > 0 ? 2 * sum(0) / (2 * sum(0) + sum(1) + sum(2)) : 1.0;
  }
  return 0;
}

double MetricAccumulator::value() const { return value_of(sums_); }

double MetricAccumulator::bound(double confidence) const {
  if (confidence <= 0 || shares_.size() < 2) return value();
  constexpr int kDraws = 2000;
  std::mt19937_64 draw(20261207);  // fixed: the same samples give the same bound
  std::uniform_int_distribution<size_t> pick_sample(0, shares_.size() - 1);
  std::vector<double> values(kDraws), sums(sums_.size());
  for (double& v : values) {
    std::fill(sums.begin(), sums.end(), 0.0);
    for (size_t n = 0; n < shares_.size(); ++n) {
      const std::vector<double>& share = shares_[pick_sample(draw)];
      for (size_t i = 0; i < share.size(); ++i) sums[i] += share[i];
    }
    v = value_of(sums);
  }
  std::sort(values.begin(), values.end());
  // The pessimistic tail: the (1 - confidence) quantile where higher is better, the confidence quantile
  // for ctc-cer.
  const double q = higher_is_better(spec_.kind) ? 1 - confidence : confidence;
  return values[std::min(size_t(q * (kDraws - 1) + 0.5), size_t(kDraws - 1))];
}

std::vector<TensorMap> reference_outputs(const Graph& g, const std::vector<TensorMap>& samples) {
  return ReferenceEngine(g).run_batch(samples);
}

Score score_plan(const Graph& g, const NumericsPlan& plan, const std::vector<TensorMap>& samples,
                 const std::vector<TensorMap>& reference, const MetricSpec& metric) {
  EmulatedEngine emu(g, plan);
  MetricAccumulator task(metric), cosine(MetricSpec{});
  emu.run_each(samples, [&](size_t s, const TensorMap& out) {
    task.add(reference[s], out);
    cosine.add(reference[s], out);
  });
  return {task.value(), cosine.value(), task.bound(metric.confidence)};
}

}  // namespace dlakit::quant
