#include "quant/weight_tuning.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "base/threadpool.h"
#include "kernels/gemm.h"
#include "kernels/ref/conv_geom.h"
#include "passes/passes.h"

namespace dlakit::quant {

namespace {

// What one INT8 convolution saw over the calibration data, per group of input channels. A patch is the
// input window of one output position in weight order (channel, then kernel taps), zero where padded.
struct ConvStats {
  size_t node = 0;
  ref::WindowGeom geom;
  int64_t groups = 1, cg = 1, taps = 1, patch = 1, m = 1;
  float in_scale = 0;
  Rounding rounding = Rounding::kHalfAwayFromZero;
  bool rounding_stats = false;
  std::vector<double> sum_q, sum_x;  // [group][patch]: sums of the quantized and the FP32 patches
  double positions = 0;              // patches summed per group
  std::vector<float> qq, qx;         // [group][patch][patch]: sums of x_q x_q^T and x_q x^T (rounding)
  double rows = 0;                   // patches in qq / qx per group
  int64_t stride = 1;                // every stride-th position goes into qq / qx
};

// One patch of sample b, group grp, output position (o0, o1, o2) into q (quantized) and x (FP32).
void patch_at(const ConvStats& s, const float* in, const float* in_q, int64_t b, int64_t grp, int64_t o0,
              int64_t o1, int64_t o2, float* q, float* x) {
  const ref::WindowGeom& w = s.geom;
  int64_t i = 0;
  for (int64_t c = 0; c < s.cg; ++c) {
    const int64_t plane = ((b * w.C) + grp * s.cg + c) * w.in_vol();
    for (int64_t k0 = 0; k0 < w.k[0]; ++k0)
      for (int64_t k1 = 0; k1 < w.k[1]; ++k1)
        for (int64_t k2 = 0; k2 < w.k[2]; ++k2, ++i) {
          const int64_t y0 = o0 * w.s[0] - w.pb[0] + k0 * w.d[0], y1 = o1 * w.s[1] - w.pb[1] + k1 * w.d[1],
                        y2 = o2 * w.s[2] - w.pb[2] + k2 * w.d[2];
          const bool inside = y0 >= 0 && y0 < w.in[0] && y1 >= 0 && y1 < w.in[1] && y2 >= 0 && y2 < w.in[2];
          const int64_t at = plane + (y0 * w.in[1] + y1) * w.in[2] + y2;
          q[i] = inside ? in_q[at] : 0.f;
          x[i] = inside ? in[at] : 0.f;
        }
  }
}

// The output positions [lo, hi) along one spatial dim at which kernel tap k reads inside the input.
std::pair<int64_t, int64_t> valid_outputs(const ref::WindowGeom& w, int dim, int64_t k) {
  const int64_t off = k * w.d[size_t(dim)] - w.pb[size_t(dim)], st = w.s[size_t(dim)];
  const int64_t lo = off >= 0 ? 0 : (-off + st - 1) / st;
  const int64_t hi = w.in[size_t(dim)] - off <= 0 ? 0 : (w.in[size_t(dim)] - off - 1) / st + 1;
  return {lo, std::min(hi, w.out[size_t(dim)])};
}

// sums[t] += the sum over every output position of tap t of channel c of one sample and group: the input
// values that tap reads where it reads inside (padding adds zeros). `sums` is that channel's run of taps.
void add_patch_sums(const ConvStats& s, const float* in, int64_t b, int64_t grp, int64_t c, double* sums) {
  const ref::WindowGeom& w = s.geom;
  const float* plane = in + ((b * w.C) + grp * s.cg + c) * w.in_vol();
  int64_t i = 0;
  for (int64_t k0 = 0; k0 < w.k[0]; ++k0)
    for (int64_t k1 = 0; k1 < w.k[1]; ++k1)
      for (int64_t k2 = 0; k2 < w.k[2]; ++k2, ++i) {
        const auto [lo0, hi0] = valid_outputs(w, 0, k0);
        const auto [lo1, hi1] = valid_outputs(w, 1, k1);
        const auto [lo2, hi2] = valid_outputs(w, 2, k2);
        double total = 0;
        for (int64_t o0 = lo0; o0 < hi0; ++o0)
          for (int64_t o1 = lo1; o1 < hi1; ++o1) {
            const int64_t y0 = o0 * w.s[0] - w.pb[0] + k0 * w.d[0], y1 = o1 * w.s[1] - w.pb[1] + k1 * w.d[1];
            const int64_t row = (y0 * w.in[1] + y1) * w.in[2] + k2 * w.d[2] - w.pb[2];
            double line = 0;
            for (int64_t o2 = lo2; o2 < hi2; ++o2) line += plane[row + o2 * w.s[2]];
            total += line;
          }
        sums[i] += total;
      }
}

void observe(ConvStats& s, const Tensor& x) {
  Tensor xq = Tensor::uninitialized(DType::kF32, x.shape());
  fake_quantize_to(x.data<float>(), xq.data<float>(), x.numel(), s.in_scale, s.rounding);
  const ref::WindowGeom& w = s.geom;
  const int64_t P = s.patch, positions = w.out_vol();
  // Each (group, channel) has its own sums, added in sample order on one thread, so the result does not
  // depend on the thread count; a convolution of one group still splits across threads by channel.
  parallel_for(
      s.groups * s.cg,
      [&](int64_t j0, int64_t j1) {
        for (int64_t j = j0; j < j1; ++j) {
          const int64_t grp = j / s.cg, c = j % s.cg, at = grp * P + c * s.taps;
          for (int64_t b = 0; b < w.N; ++b) {
            add_patch_sums(s, xq.data<float>(), b, grp, c, s.sum_q.data() + at);
            add_patch_sums(s, x.data<float>(), b, grp, c, s.sum_x.data() + at);
          }
        }
      },
      1);
  s.positions += double(positions * w.N);
  if (!s.rounding_stats) return;
  // Every stride-th patch for the rounding statistics, each into its own row (on the threads).
  const int64_t R = (positions + s.stride - 1) / s.stride;
  std::vector<float> rows_q(size_t(R * P)), rows_x(size_t(R * P));
  for (int64_t b = 0; b < w.N; ++b)
    for (int64_t grp = 0; grp < s.groups; ++grp) {
      parallel_for(R, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t pos = r * s.stride;
          const int64_t o0 = pos / (w.out[1] * w.out[2]), o1 = (pos / w.out[2]) % w.out[1],
                        o2 = pos % w.out[2];
          patch_at(s, x.data<float>(), xq.data<float>(), b, grp, o0, o1, o2, rows_q.data() + r * P,
                   rows_x.data() + r * P);
        }
      });
      if (grp == 0) s.rows += double(R);
      // qq += Q^T Q, qx += Q^T X (Q, X: R x P row-major).
      for (auto [B, out] : {std::pair{&rows_q, &s.qq}, std::pair{&rows_x, &s.qx}})
        sgemm({P, P, R, rows_q.data(), 1, P, B->data(), P, 1, out->data() + grp * P * P, P, true});
    }
}

// Chooses each weight's level (floor or ceil of w/s) for one output channel by coordinate descent on
// E[(d.x_q + w.(x_q - x))^2] = d^T A d + 2 d^T (A - B) w + const, d = w' - w, A = E[x_q x_q^T],
// B = E[x_q x^T]; `peak`, the channel's largest |w|, keeps its level. Returns the levels; `reduction` gets
// the relative drop of the d-dependent part.
std::vector<float> choose_levels(const float* w, int64_t P, float peak, float scale, Rounding r,
                                 const float* A, const float* B, int64_t* flipped, double* reduction) {
  const size_t n = static_cast<size_t>(P);
  std::vector<float> level(n), lo(n);
  std::vector<double> d(n), c(n, 0.0), grad(n, 0.0);
  for (int64_t i = 0; i < P; ++i) {
    level[size_t(i)] = std::clamp(round_with(w[i] / scale, r), -127.f, 127.f);
    lo[size_t(i)] = std::floor(w[i] / scale);
    d[size_t(i)] = double(level[size_t(i)]) * scale - w[i];
  }
  for (int64_t i = 0; i < P; ++i)
    for (int64_t j = 0; j < P; ++j) c[size_t(i)] += (double(A[i * P + j]) - B[i * P + j]) * w[j];
  for (int64_t i = 0; i < P; ++i) {
    double gi = c[size_t(i)];
    for (int64_t j = 0; j < P; ++j) gi += double(A[i * P + j]) * d[size_t(j)];
    grad[size_t(i)] = gi;
  }
  auto objective = [&] {
    double f = 0;
    for (int64_t i = 0; i < P; ++i) f += d[size_t(i)] * (grad[size_t(i)] + c[size_t(i)]);
    return f;  // d^T A d + 2 d^T c = d^T (grad + c)
  };
  const double start = objective();
  for (int sweep = 0; sweep < 4; ++sweep) {
    bool changed = false;
    for (int64_t i = 0; i < P; ++i) {
      if (std::fabs(w[i]) == peak) continue;  // keeps the channel's scale
      const float other = level[size_t(i)] == lo[size_t(i)] ? lo[size_t(i)] + 1 : lo[size_t(i)];
      if (other < -127.f || other > 127.f) continue;
      const double step = double(other - level[size_t(i)]) * scale;
      const double change = 2 * step * grad[size_t(i)] + step * step * A[i * P + i];
      if (!(change < -1e-12 * std::fabs(start))) continue;
      level[size_t(i)] = other;
      d[size_t(i)] += step;
      for (int64_t j = 0; j < P; ++j) grad[size_t(j)] += step * A[j * P + i];
      changed = true;
    }
    if (!changed) break;
  }
  *reduction = start > 0 ? 1 - objective() / start : 0;
  for (int64_t i = 0; i < P; ++i) *flipped += level[size_t(i)] != round_with(w[i] / scale, r);
  return level;
}

// What the edits read: the statistics of every convolution they may edit (one FP32 pass over the
// samples), and the layers they leave alone with why.
struct Collected {
  std::map<size_t, ConvStats> stats;
  std::vector<TunedLayer> skipped;
};

Collected collect_stats(const Graph& g, const NumericsPlan& plan, const std::vector<TensorMap>& samples,
                        const TuneOptions& o) {
  Collected c;
  std::map<size_t, ConvStats>& stats = c.stats;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    if (node.op != OpKind::Conv || plan.nodes[n].mode != Mode::kINT8 || weight_axis(g, node) != 0) continue;
    TunedLayer t;
    t.layer = node.name;
    const Value& w = g.value(node.inputs[1]);
    const int x = node.inputs[0];
    if (plan.weight_scales.count(w.name))
      t.skipped = "its weight scales come from the model (Q/DQ)";
    else if (consumers(g, node.inputs[1]).size() != 1)
      t.skipped = "its weights are shared with another layer";
    else if (node.inputs.size() > 2 && node.inputs[2] >= 0 && consumers(g, node.inputs[2]).size() != 1)
      t.skipped = "its bias is shared with another layer";
    else if (!plan.scale.count(x) || g.value(x).type.shape.size() < 3)
      t.skipped = "its input has no INT8 range";
    if (!t.skipped.empty()) {
      c.skipped.push_back(t);
      continue;
    }
    ConvStats s;
    s.node = n;
    const Shape& ws = w.type.shape;
    s.geom = ref::window_geom(node, g.value(x).type.shape, Shape(ws.begin() + 2, ws.end()), false);
    s.groups = node.attr_int("group", 1);
    s.m = ws[0];
    s.cg = ws[1];
    s.taps = s.geom.k_vol();
    s.patch = s.cg * s.taps;
    s.in_scale = plan.scale.at(x);
    s.rounding = plan.nodes[n].rounding;
    s.rounding_stats = o.weight_rounding && s.patch <= o.max_patch;
    s.sum_q.assign(size_t(s.groups * s.patch), 0.0);
    s.sum_x.assign(size_t(s.groups * s.patch), 0.0);
    if (s.rounding_stats) {
      s.qq.assign(size_t(s.groups * s.patch * s.patch), 0.f);
      s.qx.assign(size_t(s.groups * s.patch * s.patch), 0.f);
      const int64_t per_sample =
          std::max<int64_t>(1, o.rounding_positions / std::max<int64_t>(1, int64_t(samples.size())));
      s.stride = std::max<int64_t>(1, s.geom.out_vol() * s.geom.N / per_sample);
    }
    stats.emplace(n, std::move(s));
  }
  // One FP32 pass: each tuned convolution sees its reference input.
  ReferenceEngine ref(g);
  ref.set_node_runner([&](size_t n, const std::vector<const Tensor*>& in) {
    auto it = stats.find(n);
    if (it != stats.end()) observe(it->second, *in[0]);
    return run_node(g, g.nodes[n], in);
  });
  for (const TensorMap& s : samples) ref.run(s);
  return c;
}

// Weight rounding's outcome for one layer: the new weights (channels without a scale as they were), the
// weights moved off round-to-nearest and the mean objective reduction.
struct Rounded {
  Tensor weights;
  int64_t flipped = 0;
  double objective_reduction = 0;
};

Rounded round_weights(const ConvStats& s, const Tensor& w, const std::vector<float>& scales,
                      const std::string& label) {
  const int64_t P = s.patch, per_group = s.m / s.groups;
  Rounded r{w.clone(), 0, 0.0};  // new storage: the old tensor may be shared with other graphs
  float* wt = r.weights.data<float>();
  // Channels are independent: in parallel, each with its own counts, summed in channel order after.
  std::vector<double> reductions(size_t(s.m), 0.0);
  std::vector<int64_t> flips(size_t(s.m), 0);
  parallel_for(s.m, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      if (!(scales[size_t(k)] > 0)) continue;
      const int64_t grp = k / per_group;
      float peak = 0;  // the channel's largest |w|
      for (int64_t i = 0; i < P; ++i) peak = std::max(peak, std::fabs(w.data<float>()[k * P + i]));
      const std::vector<float> level = choose_levels(
          w.data<float>() + k * P, P, peak, scales[size_t(k)], s.rounding, s.qq.data() + grp * P * P,
          s.qx.data() + grp * P * P, &flips[size_t(k)], &reductions[size_t(k)]);
      for (int64_t i = 0; i < P; ++i) {
        float& v = wt[k * P + i];
        // +-127 is the channel's largest |w| itself, so the scale max|w|/127 does not move.
        v = std::fabs(level[size_t(i)]) == 127.f ? std::copysign(peak, level[size_t(i)])
                                                 : level[size_t(i)] * scales[size_t(k)];
      }
    }
  });
  double reduction_sum = 0;
  for (int64_t k = 0; k < s.m; ++k) {
    reduction_sum += reductions[size_t(k)];
    r.flipped += flips[size_t(k)];
  }
  r.objective_reduction = reduction_sum / double(s.m);
  // The DLA's rounding of the new weights must give exactly the chosen levels with the same scales.
  if (per_channel_scales(r.weights, 0) != scales)
    fail(Status::kInternal, label, ": weight rounding changed the per-channel scales");
  return r;
}

// Edits g (the graph the statistics were collected on, or a copy of it) as `o` asks. `rounded`: each layer's
// weight rounding by node, computed once for every option that rounds (the weights and statistics are
// the same), shared by their graphs (never written).
TuneReport apply_edits(Graph& g, const Collected& c, const TuneOptions& o,
                       std::map<size_t, Rounded>& rounded) {
  TuneReport report;
  report.layers = c.skipped;

  for (auto& entry : c.stats) {
    const ConvStats& s = entry.second;
    Node& node = g.nodes[entry.first];
    TunedLayer t;
    t.layer = node.name;
    Value& wv = g.value(node.inputs[1]);
    const Tensor& w = *wv.constant;
    const std::vector<float> scales = per_channel_scales(w, 0);
    const int64_t P = s.patch, per_group = s.m / s.groups;
    Tensor tuned;
    if (o.weight_rounding && s.rounding_stats && s.rows > 0) {
      auto it = rounded.find(entry.first);
      if (it == rounded.end())
        it = rounded.emplace(entry.first, round_weights(s, w, scales, node.label())).first;
      tuned = it->second.weights;
      t.flipped = it->second.flipped;
      t.objective_reduction = it->second.objective_reduction;
    } else {
      tuned = fake_quantize_weights(w, scales, 0, s.rounding);  // what the DLA computes with
      if (o.weight_rounding)
        t.skipped = "weight rounding: patch of " + std::to_string(P) + " is over the limit";
    }
    const float* wt = tuned.data<float>();
    if (o.bias_correction && s.positions > 0) {
      const int64_t M = s.m;
      std::vector<float> bias(size_t(M), 0.f);
      const bool has_bias = node.inputs.size() > 2 && node.inputs[2] >= 0;
      if (has_bias) bias = g.value(node.inputs[2]).constant->to_f32();
      double shift_sq = 0;
      for (int64_t k = 0; k < M; ++k) {
        const int64_t grp = k / per_group;
        double mean_err = 0;  // mean(w'.x_q) - mean(w.x) over the positions
        for (int64_t i = 0; i < P; ++i)
          mean_err += double(wt[k * P + i]) * s.sum_q[size_t(grp * P + i)] -
                      double(w.data<float>()[k * P + i]) * s.sum_x[size_t(grp * P + i)];
        mean_err /= s.positions;
        bias[size_t(k)] -= float(mean_err);
        shift_sq += mean_err * mean_err;
      }
      t.bias_shift_rms = std::sqrt(shift_sq / double(M));
      Tensor b(DType::kF32, {M});
      std::copy(bias.begin(), bias.end(), b.data<float>());
      if (has_bias) {
        g.value(node.inputs[2]).constant = b;
        g.value(node.inputs[2]).type = b.type();
      } else {
        node.inputs.resize(3);
        node.inputs[2] = g.add_constant(node.name + "/bias_correction", b);
      }
    }
    if (o.weight_rounding && s.rounding_stats) wv.constant = tuned;
    ++report.tuned;
    report.layers.push_back(t);
  }
  return report;
}

}  // namespace

TuneReport tune_weights(Graph& g, const NumericsPlan& plan, const std::vector<TensorMap>& samples,
                        const TuneOptions& o) {
  if (!o.edits()) return {};
  std::map<size_t, Rounded> rounded;
  return apply_edits(g, collect_stats(g, plan, samples, o), o, rounded);
}

std::vector<Graph> tune_weights_each(const Graph& g, const NumericsPlan& plan,
                                     const std::vector<TensorMap>& samples,
                                     const std::vector<TuneOptions>& each, std::vector<TuneReport>* reports) {
  // The statistics are collected once, with the rounding statistics when any option rounds.
  TuneOptions wanted = each.empty() ? TuneOptions{} : each[0];
  for (const TuneOptions& o : each)
    if (o.weight_rounding) wanted = o;
  for (const TuneOptions& o : each)
    if (o.weight_rounding &&
        (o.rounding_positions != wanted.rounding_positions || o.max_patch != wanted.max_patch))
      fail(Status::kInvalidArgument, "tune_weights_each: the options round with different statistics");
  const bool edits = std::any_of(each.begin(), each.end(), [](const TuneOptions& o) { return o.edits(); });
  const Collected c =
      edits ? collect_stats(g, plan, samples, wanted) : Collected{};  // tune_weights' shortcut
  std::map<size_t, Rounded> rounded;
  std::vector<Graph> tuned;
  for (const TuneOptions& o : each) {
    tuned.push_back(g);
    TuneReport r = o.edits() ? apply_edits(tuned.back(), c, o, rounded) : TuneReport{};
    if (reports) reports->push_back(std::move(r));
  }
  return tuned;
}

}  // namespace dlakit::quant
