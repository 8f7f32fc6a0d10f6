#include "quant/calibrate.h"

namespace dlakit::quant {

HistogramCollector::HistogramCollector(const Graph& g) : g_(g), engine_(g), hist_(g.values.size()) {
  auto is_act = [&](int v) { return v >= 0 && !g.value(v).constant && g.value(v).type.dtype == DType::kF32; };
  for (int v : g.inputs)
    if (is_act(v)) order_.push_back(v);
  for (const Node& n : g.nodes)
    for (int v : n.outputs)
      if (is_act(v)) order_.push_back(v);
  engine_.set_observer([this](const Node& n, const std::vector<Tensor>& outs) {
    for (size_t k = 0; k < outs.size(); ++k) {
      const int v = n.outputs[k];
      if (v >= 0 && !outs[k].empty() && outs[k].dtype() == DType::kF32)
        hist_[size_t(v)].add(outs[k].data<float>(), outs[k].numel());
    }
  });
}

void HistogramCollector::add(const TensorMap& inputs) {
  for (int v : g_.inputs) {
    auto it = inputs.find(g_.value(v).name);
    if (it != inputs.end() && it->second.dtype() == DType::kF32)
      hist_[size_t(v)].add(it->second.data<float>(), it->second.numel());
  }
  engine_.run(inputs);
  ++samples_;
}

ScaleTable HistogramCollector::compute(const CalibOptions& o) const {
  ScaleTable t;
  t.algorithm = calib_algo_name(o.algo);
  for (int v : order_) {
    const AbsHistogram& h = hist_[size_t(v)];
    // An all-zero tensor gets range 0 (TensorRT writes scale 0 too): every value quantizes to 0.
    t.set_amax(g_.value(v).name, compute_amax(h, o));
  }
  return t;
}

ScaleTable calibrate(const Graph& g, const std::vector<TensorMap>& samples, const CalibOptions& o,
                     const std::function<void(int, int)>& progress) {
  HistogramCollector c(g);
  for (size_t i = 0; i < samples.size(); ++i) {
    c.add(samples[i]);
    if (progress) progress(int(i) + 1, int(samples.size()));
  }
  return c.compute(o);
}

}  // namespace dlakit::quant
