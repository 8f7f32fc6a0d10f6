#include "workflow/compare.h"

#include <cmath>

#include "base/error.h"
#include "quant/fix_search.h"

namespace dlakit::workflow {

quant::ScaleTable compare_scales(const PlacedModel& pm, const CompareOptions& o) {
  quant::ScaleTable scales = pm.qdq;
  if (o.calib)
    for (auto& [n, s] : o.calib->scales) scales.set_scale(n, s);
  if (o.int8 && scales.scales.empty())
    fail(Status::kInvalidArgument,
         "--int8 needs ranges: --calib CACHE (from `dlakit calibrate` or "
         "TensorRT), or a Q/DQ model");
  return scales;
}

quant::AutoFix compare(const PlacedModel& pm, const std::vector<TensorMap>& samples, const CompareOptions& o,
                       const std::function<void(int, int)>& progress) {
  const quant::ScaleTable scales = compare_scales(pm, o);
  quant::NumericsOptions no;
  no.gpu_int8 = o.gpu_int8;
  if (o.fix && o.fix_target > 0) {
    // `dlakit compare --fix --fix-target`'s search (quant/fix_search.h) on the mean output cosine.
    quant::SearchOptions so;
    so.target = o.fix_target;
    const quant::SearchResult s =
        quant::search_fix(pm.graph, pm.placement.options, &scales, no, samples, so, {});
    quant::AutoFix a;
    a.before = s.before;
    a.applied = s.applied;
    a.options = s.options;
    a.plan = s.plan;
    a.rounds = 1;
    a.after =
        s.applied.empty() ? s.before : quant::compare_numerics(pm.graph, s.plan, samples, {}, so.metric);
    return a;
  }
  // --fix: compare, move flagged layers to FP16 / the GPU, re-place, re-measure (up to fix_rounds).
  return quant::auto_fix(pm.graph, pm.placement.options, &scales, no, samples, o.fix ? o.fix_rounds : 0,
                         progress);
}

nlohmann::json compare_result_json(const quant::CompareResult& r) {
  nlohmann::json j;
  j["samples"] = r.samples;
  j["median_step"] = r.median_step;
  j["median_own_rel_l2"] = r.median_own;
  auto row = [](const quant::LayerError& e) {
    auto finite = [](double v) { return std::isinf(v) ? nlohmann::json(nullptr) : nlohmann::json(v); };
    return nlohmann::json{{"layer", e.node},
                          {"op", e.op},
                          {"tensor", e.tensor},
                          {"mode", e.mode},
                          {"cosine", e.err.cosine},
                          {"rel_l2", finite(e.err.rel_l2)},
                          {"max_abs", e.err.max_abs},
                          {"sqnr_db", finite(e.err.sqnr_db)},
                          {"own_rel_l2", finite(e.own.rel_l2)},
                          {"own_cosine", e.own.cosine},
                          {"step", e.step},
                          {"flagged", e.flagged},
                          {"note", e.note}};
  };
  j["outputs"] = nlohmann::json::array();
  for (auto& e : r.outputs) j["outputs"].push_back(row(e));
  j["layers"] = nlohmann::json::array();
  for (auto& e : r.layers) j["layers"].push_back(row(e));
  return j;
}

nlohmann::json compare_json(const std::string& model, const CompareOptions& o, const quant::AutoFix& a) {
  const quant::Fix& fix = a.applied;
  nlohmann::json j;
  j["model"] = model;
  j["precision"] = o.int8 ? "INT8" : "FP16";
  j["fix_rounds"] = a.rounds;
  j["fix_undone"] = a.undone;
  j["int8_layers"] = a.plan.int8_nodes;
  j["fp16_layers"] = a.plan.fp16_nodes;
  j["fp32_layers"] = a.plan.fp32_nodes;
  j["before"] = compare_result_json(a.before);
  if (o.fix) j["fix"] = {{"layerPrecisions", fix.layer_precisions}, {"layerDeviceTypes", fix.layer_devices}};
  if (!fix.empty()) j["after"] = compare_result_json(a.after);
  return j;
}

}  // namespace dlakit::workflow
