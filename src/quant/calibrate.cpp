#include "quant/calibrate.h"

#include "base/threadpool.h"
#include "quant/numerics.h"

namespace dlakit::quant {

HistogramCollector::HistogramCollector(const Graph& g) : g_(g), engine_(g), hist_(g.values.size()) {
  for (int v : g.inputs)
    if (is_float_activation(g, v)) order_.push_back(v);
  for (const Node& n : g.nodes)
    for (int v : n.outputs)
      if (is_float_activation(g, v)) order_.push_back(v);
  engine_.set_observer([this](const Node& n, const std::vector<Tensor>& outs) {
    for (size_t k = 0; k < outs.size(); ++k) {
      const int v = n.outputs[k];
      if (v >= 0 && !outs[k].empty() && outs[k].dtype() == DType::kF32)
        hist_[size_t(v)].add(outs[k].data<float>(), outs[k].numel());
    }
  });
}

TensorMap HistogramCollector::add(const TensorMap& inputs) {
  for (int v : g_.inputs) {
    auto it = inputs.find(g_.value(v).name);
    if (it != inputs.end() && it->second.dtype() == DType::kF32)
      hist_[size_t(v)].add(it->second.data<float>(), it->second.numel());
  }
  ++samples_;
  return engine_.run(inputs);
}

ScaleTable HistogramCollector::compute(const CalibOptions& o) const {
  ScaleTable t;
  t.algorithm = calib_algo_name(o.algo);
  // Each tensor's threshold search is independent (and the costly part for entropy and mse): one tensor per
  // thread at a time, then the table in order.
  std::vector<float> amax(order_.size());
  parallel_for(int64_t(order_.size()), [&](int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) amax[size_t(i)] = compute_amax(hist_[size_t(order_[size_t(i)])], o);
  });
  // An all-zero tensor gets range 0 (TensorRT writes scale 0 too): every value quantizes to 0.
  for (size_t i = 0; i < order_.size(); ++i) t.set_amax(g_.value(order_[i]).name, amax[i]);
  return t;
}

}  // namespace dlakit::quant
