#include "latency/predict.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

#include "ir/stats.h"
#include "latency/hybrid.h"
#include "latency/lower.h"

namespace dlakit::latency {
namespace {

OpPrecision to_precision(dla::Precision p) {
  return p == dla::Precision::kINT8 ? OpPrecision::kInt8 : OpPrecision::kFp16;
}

// GPU layers TensorRT turns into no kernel at all.
bool free_on_gpu(OpKind op) {
  return op == OpKind::Identity || op == OpKind::Dropout || op == OpKind::Reshape || op == OpKind::Flatten ||
         op == OpKind::Squeeze || op == OpKind::Unsqueeze;
}

GpuWork gpu_work(const Graph& g, const Node& n, OpPrecision prec) {
  const double bpe = prec == OpPrecision::kInt8 ? 1 : 2;
  GpuWork w;
  w.precision = prec;
  const int64_t macs = node_macs(g, n);
  int64_t out_elements = 0;
  for (int o : n.outputs)
    if (o >= 0) out_elements += numel(g.value(o).type.shape);
  w.ops = macs > 0 ? 2.0 * double(macs) : double(out_elements);
  double elements = double(out_elements);
  for (int v : n.inputs)
    if (v >= 0) elements += double(numel(g.value(v).type.shape));
  w.bytes = elements * bpe;
  return w;
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string pad(std::string s, size_t w) {
  if (s.size() > w) s = s.substr(0, w - 1) + "~";
  s.resize(w, ' ');
  return s;
}

LowerOptions lower_options(const Placement& p, const LatencyOptions& opt) {
  const OpPrecision build = to_precision(p.options.precision);
  LowerOptions lo;
  lo.image_input = opt.image_input && build == OpPrecision::kInt8;
  lo.input_precision = build;
  lo.output_precision = opt.output_precision.value_or(build);
  lo.sram_bytes = chip_for(p.target).sram_bytes;
  return lo;
}

}  // namespace

std::vector<std::vector<HwOp>> lower_dla_tasks(const Graph& g, const Placement& p,
                                               const LatencyOptions& opt) {
  const LowerOptions lo = lower_options(p, opt);
  std::vector<std::vector<HwOp>> tasks;
  for (const Segment& s : p.segments)
    if (s.device == Device::kDLA) tasks.push_back(lower_dla_segment(g, p, s.id, lo).ops);
  return tasks;
}

LatencyReport predict_latency(const Graph& g, const Placement& p, const LatencyOptions& opt) {
  const Chip& chip = chip_for(p.target);
  const PowerMode& mode = opt.mode ? *opt.mode : power_mode(chip, opt.power_mode);
  const ModelParams& params = opt.params ? *opt.params : fitted_params(p.target);
  LatencyReport r;
  r.target = p.target;
  r.power_mode = mode.name;
  r.mode = mode;
  r.cores = chip.cores;
  r.layers.resize(g.nodes.size());
  if (!g.inputs.empty()) r.batch = dims_of(g.value(g.inputs[0]).type.shape).n;
  const OpPrecision build = to_precision(p.options.precision);
  const LowerOptions lo = lower_options(p, opt);

  double gpu_busy_us = 0;  // GPU kernels (fallback layers and reformats), shared by both cores' work
  for (const Segment& s : p.segments) {
    SegmentLatency sl;
    sl.id = s.id;
    sl.device = s.device;
    if (s.device == Device::kDLA) {
      const LoweredSegment low = lower_dla_segment(g, p, s.id, lo);
      const TaskTime task = predict_task(low.ops, chip, mode, params);
      const int base = int(r.ops.size());
      for (int k : s.nodes) {
        LayerLatency& L = r.layers[size_t(k)];
        const int op = low.op_of_node[size_t(k)];
        if (op < 0) {
          L.role = "free";
          continue;
        }
        L.op = base + op;
        if (low.ops[size_t(op)].layers.front() == g.nodes[size_t(k)].name) {
          L.role = "operation";
          L.latency_us = task.ops[size_t(op)].total_us;
          L.bottleneck = bottleneck_name(task.ops[size_t(op)].bottleneck);
        } else {
          L.role = "fused";
          L.fused_into = low.ops[size_t(op)].layers.front();
        }
      }
      r.ops.insert(r.ops.end(), low.ops.begin(), low.ops.end());
      r.op_times.insert(r.op_times.end(), task.ops.begin(), task.ops.end());
      sl.latency_us = task.total_us;
      sl.operations = int(low.ops.size());
      r.dla_ms += task.total_us / 1e3;
    } else {
      for (int k : s.nodes) {
        const Node& n = g.nodes[size_t(k)];
        LayerLatency& L = r.layers[size_t(k)];
        if (free_on_gpu(n.op)) {
          L.role = "free";
          continue;
        }
        L.role = "gpu";
        L.bottleneck = "roofline";
        L.latency_us = gpu_time_us(gpu_work(g, n, to_precision(p.layers[size_t(k)].precision)), mode, params);
        sl.latency_us += L.latency_us;
        ++sl.operations;
      }
      r.gpu_ms += sl.latency_us / 1e3;
      gpu_busy_us += sl.latency_us;
    }
    r.segments.push_back(sl);
  }

  // Values crossing devices: a GPU reformat to or from the DLA's layout and a hand-over each.
  std::set<std::pair<int, int>> seen;  // (value, reading segment)
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (int v : g.nodes[k].inputs) {
      if (v < 0 || g.value(v).producer < 0) continue;
      const LayerPlacement &from = p.layers[size_t(g.value(v).producer)], &to = p.layers[k];
      if (from.device == to.device || !seen.insert({v, to.segment}).second) continue;
      const LayerPlacement& dla_side = from.device == Device::kDLA ? from : to;
      TransitionLatency t;
      t.tensor = g.value(v).name;
      t.direction = from.device == Device::kDLA ? "DLA->GPU" : "GPU->DLA";
      t.bytes = surface_bytes(dims_of(g.value(v).type.shape), to_precision(dla_side.precision));
      t.reformat_us = reformat_us(double(t.bytes), double(t.bytes), mode, params);
      t.sync_us = params.transition_sync_us;
      gpu_busy_us += t.reformat_us;
      r.transitions.push_back(t);
    }
  // Non-native I/O: TensorRT converts FP32 linear tensors on the GPU around the DLA.
  if (!opt.native_io) {
    auto io = [&](int v, const char* what) {
      TransitionLatency t;
      t.tensor = g.value(v).name;
      t.direction = what;
      t.bytes = surface_bytes(dims_of(g.value(v).type.shape), build);
      t.reformat_us = reformat_us(4.0 * double(numel(g.value(v).type.shape)), double(t.bytes), mode, params);
      gpu_busy_us += t.reformat_us;
      r.transitions.push_back(t);
    };
    for (int v : g.inputs) {
      bool dla_reads = false;
      for (size_t k = 0; k < g.nodes.size(); ++k)
        for (int in : g.nodes[k].inputs)
          dla_reads = dla_reads || (in == v && p.layers[k].device == Device::kDLA);
      if (dla_reads) io(v, "input reformat");
    }
    for (int v : g.outputs)
      if (g.value(v).producer >= 0 && p.layers[size_t(g.value(v).producer)].device == Device::kDLA)
        io(v, "output reformat");
  }
  for (const TransitionLatency& t : r.transitions) r.transitions_ms += (t.reformat_us + t.sync_us) / 1e3;
  r.total_ms = r.dla_ms + r.gpu_ms + r.transitions_ms;
  const double per_inference_ms = std::max(r.dla_ms / chip.cores, gpu_busy_us / 1e3);
  r.images_per_s_2cores = per_inference_ms > 0 ? double(r.batch) * 1e3 / per_inference_ms : 0;
  return r;
}

nlohmann::json latency_json(const Graph& g, const LatencyReport& r) {
  using nlohmann::json;
  json j{
      {"predicted", true},
      {"model", "dlakit latency model (docs/latency-model.md); predictions for the board, not measurements"},
      {"target", r.target},
      {"power_mode", r.power_mode},
      {"dla_clock_mhz", r.mode.dla_hz / 1e6},
      {"dram_gb_per_s", r.mode.dram_bytes_per_s / 1e9},
      {"batch", r.batch},
      {"dla_ms", r.dla_ms},
      {"gpu_ms", r.gpu_ms},
      {"transitions_ms", r.transitions_ms},
      {"total_ms", r.total_ms},
      {"images_per_s_2cores", r.images_per_s_2cores}};
  j["layers"] = json::array();
  for (size_t k = 0; k < r.layers.size(); ++k) {
    const LayerLatency& L = r.layers[k];
    json l{{"index", k}, {"name", g.nodes[k].name}, {"latency_us", L.latency_us}, {"role", L.role}};
    if (!L.bottleneck.empty()) l["bottleneck"] = L.bottleneck;
    if (!L.fused_into.empty()) l["fused_into"] = L.fused_into;
    if (L.op >= 0) l["operation"] = L.op;
    j["layers"].push_back(l);
  }
  j["operations"] = json::array();
  for (size_t i = 0; i < r.ops.size(); ++i) {
    const HwOp& op = r.ops[i];
    const OpTime& t = r.op_times[i];
    j["operations"].push_back({{"engine", engine_name(op.engine)},
                               {"precision", precision_name(op.precision)},
                               {"fused", op.fused},
                               {"layers", op.layers},
                               {"macs", op.macs},
                               {"latency_us", t.total_us},
                               {"compute_us", t.compute_us},
                               {"memory_us", t.memory_us},
                               {"overhead_us", t.overhead_us},
                               {"bottleneck", bottleneck_name(t.bottleneck)},
                               {"dram_bytes", t.dram_bytes},
                               {"sram_bytes", t.sram_bytes},
                               {"weight_reads", t.weight_reads}});
  }
  j["segments"] = json::array();
  for (const SegmentLatency& s : r.segments)
    j["segments"].push_back({{"id", s.id},
                             {"device", device_name(s.device)},
                             {"latency_us", s.latency_us},
                             {"operations", s.operations},
                             {"estimate", s.device == Device::kGPU}});
  j["transitions"] = json::array();
  for (const TransitionLatency& t : r.transitions)
    j["transitions"].push_back({{"tensor", t.tensor},
                                {"direction", t.direction},
                                {"bytes", t.bytes},
                                {"reformat_us", t.reformat_us},
                                {"sync_us", t.sync_us},
                                {"estimate", true}});
  j["power"] = {{"budget_w", r.mode.budget_w == 0 ? json(nullptr) : json(r.mode.budget_w)},
                {"energy", "not modelled"},
                {"note", power_text(r.mode)}};
  if (r.mode.perf_per_watt_hi > 0)
    j["power"]["published_dla_vs_gpu_perf_per_watt"] = {r.mode.perf_per_watt_lo, r.mode.perf_per_watt_hi};
  return j;
}

std::string power_text(const PowerMode& m) {
  std::string s = m.budget_w > 0 ? "module power budget " + fmt("%.0f W", m.budget_w) : "no power cap (MAXN)";
  if (m.perf_per_watt_hi > 0)
    s += "; NVIDIA measured the DLA " + fmt("%.1f", m.perf_per_watt_lo) + "-" +
         fmt("%.1fx", m.perf_per_watt_hi) +
         " as power-efficient as the GPU in this mode (images/s per W, accelerator power, six dense "
         "networks; DLA-SW README)";
  return s + "; energy per inference is not modelled";
}

std::string latency_text(const Graph& g, const Placement& p, const LatencyReport& r) {
  std::ostringstream os;
  os << "\npredicted latency: " << r.target << ", power mode " << r.power_mode << " (DLA "
     << fmt("%.1f", r.mode.dla_hz / 1e6) << " MHz, DRAM " << fmt("%.1f", r.mode.dram_bytes_per_s / 1e9)
     << " GB/s), batch " << r.batch
     << "\n(dlakit's latency model, docs/latency-model.md: predictions for the board, not measurements)\n\n";
  os << pad("#", 5) << pad("layer", 38) << pad("device", 7) << pad("predicted us", 14) << "bound\n";
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const LayerLatency& L = r.layers[k];
    os << pad(std::to_string(k), 5) << pad(g.nodes[k].name, 38) << pad(device_name(p.layers[k].device), 7);
    if (L.role == "fused")
      os << pad("-", 14) << "fused into " << L.fused_into << "\n";
    else if (L.role == "free")
      os << pad("0", 14) << "free (no operation)\n";
    else
      os << pad(fmt("%.1f", L.latency_us), 14) << L.bottleneck << (L.role == "gpu" ? " (GPU estimate)" : "")
         << "\n";
  }
  os << "\npredicted per segment:\n";
  for (const SegmentLatency& s : r.segments)
    os << "  [" << s.id << "] " << device_name(s.device) << "  " << s.operations
       << (s.device == Device::kDLA ? " DLA operation(s), one task  " : " GPU kernel(s), estimate  ")
       << fmt("%.1f us", s.latency_us) << "\n";
  if (!r.transitions.empty()) {
    os << "predicted transitions (estimates):\n";
    for (const TransitionLatency& t : r.transitions)
      os << "  " << pad(t.direction, 16) << pad(t.tensor, 36) << fmt("%.0f bytes", double(t.bytes))
         << "  reformat " << fmt("%.1f us", t.reformat_us) << ", hand-over " << fmt("%.1f us", t.sync_us)
         << "\n";
  }
  os << "\npredicted: " << fmt("%.3f", r.dla_ms) << " ms on one DLA core for one inference of batch "
     << r.batch << "; " << fmt("%.3f", r.total_ms) << " ms in total";
  if (r.gpu_ms > 0 || r.transitions_ms > 0)
    os << " (GPU " << fmt("%.3f", r.gpu_ms) << " ms and transitions " << fmt("%.3f", r.transitions_ms)
       << " ms are estimates)";
  os << "; " << fmt("%.0f", r.images_per_s_2cores) << " images/s with both DLA cores\n";
  os << "power: " << power_text(r.mode) << "\n";
  return os.str();
}

}  // namespace dlakit::latency
