#include "quant/fix_search.h"

#include <algorithm>
#include <map>
#include <set>

namespace dlakit::quant {

double int8_mac_share(const Placement& p, const NumericsPlan& plan) {
  double int8 = 0, dla = 0;
  for (size_t i = 0; i < p.layers.size(); ++i) {
    if (p.layers[i].device != Device::kDLA) continue;
    dla += double(p.layers[i].macs);
    if (plan.nodes[i].mode == Mode::kINT8) int8 += double(p.layers[i].macs);
  }
  return dla > 0 ? int8 / dla : 0.0;
}

namespace {

struct Evaluator {
  const Graph& g;
  const ScaleTable* scales;
  const NumericsOptions& no;
  const std::vector<TensorMap>& samples;
  SearchMemo& memo;
  const SearchOptions& o;
  int evaluations = 0;

  // The placement's score on the first `count` samples, measured once per memo; make_plan() gives its
  // numerics plan, asked for only when the memo has no score.
  template <class MakePlan>
  Score score(const PlacementOptions& po, size_t count, MakePlan&& make_plan) {
    count = std::min(count, samples.size());
    const auto key = std::make_pair(po, count);
    auto it = memo.scores.find(key);
    if (it != memo.scores.end()) return it->second;
    ++memo.measured;
    const NumericsPlan& plan = make_plan();
    if (count == samples.size())
      return memo.scores[key] = score_plan(g, plan, samples, memo.reference, o.metric);
    const std::vector<TensorMap> some(samples.begin(), samples.begin() + long(count));
    const std::vector<TensorMap> want(memo.reference.begin(), memo.reference.begin() + long(count));
    return memo.scores[key] = score_plan(g, plan, some, want, o.metric);
  }

  // The score of a placement on the first `count` samples (sensitivity) without building a curve point.
  Score quick(const PlacementOptions& po, size_t count) {
    ++evaluations;
    return score(po, count, [&] { return plan_numerics(g, place(g, po), scales, no); });
  }

  CurvePoint point(const PlacementOptions& po, int moves, NumericsPlan* plan_out = nullptr) {
    const Placement p = place(g, po);
    NumericsPlan plan = plan_numerics(g, p, scales, no);
    CurvePoint c;
    c.moves = moves;
    c.int8_layers = plan.int8_nodes;
    c.fp16_layers = plan.fp16_nodes;
    c.int8_mac_share = int8_mac_share(p, plan);
    c.score = score(po, samples.size(), [&]() -> const NumericsPlan& { return plan; });
    c.meets = meets(o.metric.kind, c.score, o.target);
    if (o.predict_latency) c.predicted_latency_ms = o.predict_latency(p, plan);
    ++evaluations;
    if (plan_out) *plan_out = std::move(plan);
    return c;
  }
};

// Fills an empty memo with the reference and the all-INT8 comparison; refuses one from other inputs.
void prepare_memo(SearchMemo& m, const Graph& g, const PlacementOptions& base, const ScaleTable* scales,
                  const NumericsOptions& no, const std::vector<TensorMap>& samples, const MetricSpec& metric,
                  const NumericsPlan& all_int8) {
  if (m.graph) {
    if (m.graph != &g || m.scales != scales || m.samples != &samples || m.base != base ||
        !(m.numerics == no) || !(m.metric == metric))
      fail(Status::kInvalidArgument, "search_fix: the memo belongs to another search's inputs");
    return;
  }
  m.graph = &g;
  m.scales = scales;
  m.samples = &samples;
  m.base = base;
  m.numerics = no;
  m.metric = metric;
  m.reference = reference_outputs(g, samples);
  m.before = compare_numerics(g, all_int8, samples, {}, metric);
}

std::vector<std::string> first_layers(const std::vector<LayerSensitivity>& ranking, int k) {
  std::vector<std::string> v;
  for (int i = 0; i < k && i < int(ranking.size()); ++i) v.push_back(ranking[size_t(i)].layer);
  return v;
}

}  // namespace

std::vector<std::vector<std::string>> fused_groups(const CompareResult& before,
                                                   const std::vector<std::string>& moved) {
  std::map<std::string, std::set<std::string>> covers;  // moved layer -> the layers its move puts in FP16
  for (const std::string& l : moved)
    for (const auto& o : parse_precision_overrides(propose_layers(before, {l}, "").layer_precisions))
      covers[l].insert(o.first);
  std::vector<std::vector<std::string>> groups;
  std::set<std::vector<std::string>> seen;
  for (const std::string& l : moved) {
    std::vector<std::string> group{l};
    for (const std::string& k : moved)
      if (k != l && covers[k].count(l)) group.push_back(k);
    if (group.size() < 2) continue;
    std::sort(group.begin(), group.end());
    if (seen.insert(group).second) groups.push_back(group);
  }
  return groups;
}

SearchResult search_fix(const Graph& g, const PlacementOptions& base, const ScaleTable* scales,
                        const NumericsOptions& no, const std::vector<TensorMap>& samples,
                        const SearchOptions& o, const std::function<void(const std::string&)>& log,
                        SearchMemo* memo) {
  auto say = [&](const std::string& s) {
    if (log) log(s);
  };
  const MetricKind kind = o.metric.kind;
  SearchResult r;
  SearchMemo own;
  SearchMemo& m = memo ? *memo : own;
  Evaluator ev{g, scales, no, samples, m, o};
  CurvePoint all16;
  auto finish = [&](bool with_all16) {  // the curve by moves, all FP16 last
    if (with_all16) r.curve.push_back(all16);
    // Stable: the points of step 5 keep their order after the bisection's point of the same count.
    std::stable_sort(r.curve.begin(), r.curve.end(), [](const CurvePoint& a, const CurvePoint& b) {
      return (a.moves < 0 ? 1 << 30 : a.moves) < (b.moves < 0 ? 1 << 30 : b.moves);
    });
    r.evaluations = ev.evaluations;
    return r;
  };

  // 1. All INT8 (with every layer's own error) and all FP16.
  const Placement p8 = place(g, base);
  r.plan = plan_numerics(g, p8, scales, no);
  r.options = base;
  prepare_memo(m, g, base, scales, no, samples, o.metric, r.plan);
  r.before = m.before;
  r.all_int8 = r.before.score;
  CurvePoint start;
  start.int8_layers = r.plan.int8_nodes;
  start.fp16_layers = r.plan.fp16_nodes;
  start.int8_mac_share = int8_mac_share(p8, r.plan);
  start.score = r.all_int8;
  start.meets = meets(kind, start.score, o.target);
  if (o.predict_latency) start.predicted_latency_ms = o.predict_latency(p8, r.plan);
  r.curve.push_back(start);
  ++ev.evaluations;
  say("all INT8: " + format_metric_value(o.metric, r.all_int8.metric));
  if (start.meets) {
    r.reachable = r.reached = true;
    r.chosen = 0;
    return finish(false);
  }
  PlacementOptions fp16 = base;
  fp16.precision = dla::Precision::kFP16;
  all16 = ev.point(fp16, -1);
  r.all_fp16 = all16.score;
  r.reachable = all16.meets;
  say("all FP16: " + format_metric_value(o.metric, r.all_fp16.metric));

  // 2. Sensitivity: own error for every INT8 layer, the metric with each candidate moved alone.
  for (const LayerError& e : r.before.layers)
    if (e.mode == "int8" && std::isfinite(e.own.rel_l2) && e.own.rel_l2 > 0) {
      LayerSensitivity s;
      s.layer = e.node;
      s.op = e.op;
      s.own_rel_l2 = e.own.rel_l2;
      r.ranking.push_back(s);
    }
  std::stable_sort(r.ranking.begin(), r.ranking.end(),
                   [](const auto& a, const auto& b) { return a.own_rel_l2 > b.own_rel_l2; });
  if (!r.reachable) return finish(true);
  // Candidates: half by own error, half the INT8 layers nearest the outputs (their relative error is
  // small, their effect on the task's decision is not: on PP-OCRv4 det, the last 4 INT8 layers alone cost
  // 0.19 mask F1).
  const int count =
      o.candidates > 0 ? std::min<int>(o.candidates, int(r.ranking.size())) : int(r.ranking.size());
  std::map<std::string, size_t> position;
  for (size_t i = 0; i < r.before.layers.size(); ++i) position[r.before.layers[i].node] = i;
  std::vector<size_t> by_position(r.ranking.size());
  for (size_t i = 0; i < by_position.size(); ++i) by_position[i] = i;
  std::stable_sort(by_position.begin(), by_position.end(), [&](size_t a, size_t b) {
    return position[r.ranking[a].layer] > position[r.ranking[b].layer];
  });
  std::vector<char> chosen(r.ranking.size(), 0);
  int picked = 0;
  for (size_t i = 0; i < r.ranking.size() && picked < (count + 1) / 2; ++i, ++picked) chosen[i] = 1;
  for (size_t i = 0; i < by_position.size() && picked < count; ++i)
    if (!chosen[by_position[i]]) chosen[by_position[i]] = 1, ++picked;
  const size_t some = o.sensitivity_samples > 0 ? size_t(o.sensitivity_samples) : samples.size();
  const Score base_some = ev.quick(base, some);
  r.sensitivity_samples = std::min(some, samples.size());
  r.sensitivity_base = base_some;
  int done = 0;
  for (size_t i = 0; i < r.ranking.size(); ++i) {
    if (!chosen[i]) continue;
    LayerSensitivity& s = r.ranking[i];
    const Fix f = propose_layers(r.before, {s.layer}, "measured alone");
    s.alone = ev.quick(with_fix(base, f), some);
    s.measured = true;
    say("measured alone " + std::to_string(++done) + "/" + std::to_string(count) + ": " + s.layer + " -> " +
        format_metric_value(o.metric, s.alone.metric) + ", output cosine " + std::to_string(s.alone.cosine));
  }
  // 3. Ranking: measured moves that raise the output cosine (most first), then unmeasured by own error,
  // then measured moves that lower it.
  auto group = [&](const LayerSensitivity& s) {
    if (!s.measured) return 1;
    return s.alone.cosine > base_some.cosine ? 0 : 2;
  };
  std::stable_sort(r.ranking.begin(), r.ranking.end(), [&](const auto& a, const auto& b) {
    if (group(a) != group(b)) return group(a) < group(b);
    return group(a) != 1 && a.alone.cosine > b.alone.cosine;
  });

  // 4. Bisection on the number of leading layers moved: lo misses, hi meets, both measured.
  const int n = int(r.ranking.size());
  auto at = [&](int k) {
    NumericsPlan plan;
    const Fix f = propose_layers(r.before, first_layers(r.ranking, k), "ranked by measured sensitivity");
    CurvePoint c = ev.point(with_fix(base, f), k, &plan);
    say("moving " + std::to_string(k) + " layer(s): " + format_metric_value(o.metric, c.score.metric) +
        (c.meets ? " (meets)" : ""));
    r.curve.push_back(c);
    return c.meets;
  };
  int lo = 0, hi = n;
  if (!at(hi)) return finish(true);  // every ranked layer moved still misses: no choice
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    (at(mid) ? hi : lo) = mid;
  }
  std::vector<std::string> moved = first_layers(r.ranking, hi);

  // 5. Back to INT8 (the header's step 4), most MACs first: each moved layer whose move takes MACs out of
  // INT8 is returned alone and kept in INT8 when the target is still met (the moves' effects do not add up,
  // so a prefix of the ranking can hold layers the target does not need in FP16). A move can take fused
  // producers out of INT8 with it: what returning a layer gives back is measured on the plan (no samples
  // run), as the INT8 MAC share without it.
  auto moved_without = [&](const std::set<std::string>& back) {  // in ranking order
    std::vector<std::string> rest;
    for (const std::string& l : moved)
      if (!back.count(l)) rest.push_back(l);
    return rest;
  };
  auto share_of = [&](const std::vector<std::string>& layers) {
    const Placement p = place(g, with_fix(base, propose_layers(r.before, layers, "")));
    return int8_mac_share(p, plan_numerics(g, p, scales, no));
  };
  const double share_now = share_of(moved);
  std::vector<std::pair<double, std::string>> gains;
  for (const std::string& l : moved) {
    const double gain = share_of(moved_without({l})) - share_now;
    if (gain > 0) gains.emplace_back(gain, l);
  }
  std::stable_sort(gains.begin(), gains.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  int returned = 0;
  for (size_t i = 0; i < gains.size(); ++i) {
    const std::string& back = gains[i].second;
    const std::vector<std::string> rest = moved_without({back});
    CurvePoint c =
        ev.point(with_fix(base, propose_layers(r.before, rest, "ranked, then returned to INT8")), hi);
    c.returned = returned + 1;
    c.returned_layer = back;
    say("returning " + back + " to INT8 (" + std::to_string(i + 1) + "/" + std::to_string(gains.size()) +
        "): " + format_metric_value(o.metric, c.score.metric) + (c.meets ? " (meets, kept in INT8)" : ""));
    r.curve.push_back(c);
    if (!c.meets) continue;
    moved = rest;
    ++returned;
  }
  // 6. With return_groups, fused groups back to INT8 (the header's step 5): a moved layer that other moved
  // layers pull back to FP16 (their fused producer, or an INT8 reader they move with them) gives back nothing
  // alone; with those layers it can. Each such group (the layer and the moved layers whose move covers it)
  // whose return gives back MACs is a unit; the units, most MACs first, are returned as a prefix, and the
  // longest prefix that meets is bisected (every point measured; the metric need not be monotonic, so the
  // bisection only ends on a point that meets). Bounded: about log2(units) more plans scored.
  const std::vector<std::vector<std::string>> groups =
      o.return_groups ? fused_groups(r.before, moved) : std::vector<std::vector<std::string>>{};
  const double share_after_singles = groups.empty() ? 0.0 : share_of(moved);
  std::vector<std::pair<double, std::vector<std::string>>> units;
  for (const std::vector<std::string>& unit : groups) {
    const double gain = share_of(moved_without({unit.begin(), unit.end()})) - share_after_singles;
    if (gain > 0) units.emplace_back(gain, unit);
  }
  std::stable_sort(units.begin(), units.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  auto returning = [&](size_t count) {  // `moved` without the first `count` units
    std::set<std::string> back;
    for (size_t i = 0; i < count; ++i) back.insert(units[i].second.begin(), units[i].second.end());
    return moved_without(back);
  };
  auto try_units = [&](size_t count) {
    const std::vector<std::string> rest = returning(count);
    CurvePoint c =
        ev.point(with_fix(base, propose_layers(r.before, rest, "ranked, then returned to INT8")), hi);
    c.returned = returned + int(moved.size() - rest.size());
    for (const std::string& l : units[count - 1].second)
      c.returned_layer += (c.returned_layer.empty() ? "" : "+") + l;
    say("returning the first " + std::to_string(count) + " of " + std::to_string(units.size()) +
        " fused group(s) to INT8: " + format_metric_value(o.metric, c.score.metric) +
        (c.meets ? " (meets)" : ""));
    r.curve.push_back(c);
    return c.meets;
  };
  size_t kept = 0;
  if (!units.empty()) {
    if (try_units(units.size())) {
      kept = units.size();
    } else {
      size_t miss = units.size();
      while (miss - kept > 1) {
        const size_t mid = kept + (miss - kept) / 2;
        (try_units(mid) ? kept : miss) = mid;
      }
    }
  }
  if (kept > 0) moved = returning(kept);
  r.applied = propose_layers(r.before, moved, "ranked by measured sensitivity");
  r.options = with_fix(base, r.applied);
  r.plan = plan_numerics(g, place(g, r.options), scales, no);
  r.reached = true;
  finish(true);
  for (size_t i = 0; i < r.curve.size(); ++i)  // the last point of k moves that meets: the last return kept
    if (r.curve[i].moves == hi && r.curve[i].meets) r.chosen = int(i);
  return r;
}

}  // namespace dlakit::quant
