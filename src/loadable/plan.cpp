#include "loadable/plan.h"

#include <cstring>
#include <map>

#include "loadable/loadable.h"
#include "onnx/exporter.h"
#include "onnx/importer.h"
#include "placement/split.h"
#include "plan_generated.h"
#include "targets/dla/limits.h"

namespace dlakit {

bool is_plan(const uint8_t* data, size_t size) {
  return data && size >= 8 && fbp::PlanBufferHasIdentifier(data);
}

PlanContents read_plan(const uint8_t* data, size_t size, const std::string& origin) {
  if (!is_plan(data, size))
    fail(Status::kParseError, origin, ": not a dlakit hybrid plan (file identifier is not 'DLKP')");
  // As for loadables: FlatBuffers reads 8-byte fields in place, so an unaligned plan is read from a copy.
  if (reinterpret_cast<uintptr_t>(data) % 8) {
    std::vector<uint64_t> aligned((size + 7) / 8);
    std::memcpy(aligned.data(), data, size);
    return read_plan(reinterpret_cast<const uint8_t*>(aligned.data()), size, origin);
  }
  flatbuffers::Verifier v(data, size);
  if (!fbp::VerifyPlanBuffer(v))
    fail(Status::kParseError, origin, ": the plan is corrupt or truncated (", size,
         " bytes failed verification)");
  const fbp::Plan* p = fbp::GetPlan(data);
  if (p->format_version() != 1)
    fail(Status::kParseError, origin, ": plan format version ", p->format_version(), "; this dlakit reads 1");
  if (!p->segments() || !p->inputs() || !p->outputs())
    fail(Status::kParseError, origin, ": the plan has no segments or I/O");
  PlanContents c;
  for (auto* s : *p->inputs()) c.inputs.push_back(s->str());
  for (auto* s : *p->outputs()) c.outputs.push_back(s->str());
  for (const fbp::Segment* s : *p->segments()) {
    if (!s->payload() || !s->inputs() || !s->outputs())
      fail(Status::kParseError, origin, ": a plan segment is incomplete");
    PlanSegment seg;
    seg.dla = s->device() == fbp::Device_DLA;
    seg.payload.assign(reinterpret_cast<const char*>(s->payload()->data()), s->payload()->size());
    for (auto* n : *s->inputs()) seg.inputs.push_back(n->str());
    for (auto* n : *s->outputs()) seg.outputs.push_back(n->str());
    c.segments.push_back(std::move(seg));
  }
  return c;
}

std::string write_plan(const Graph& original, const Placement& p, const quant::ScaleTable* scales,
                       int* int8_layers, const compiler::MemoryBudgets& pools) {
  if (int8_layers) *int8_layers = 0;
  // cuDLA descriptor names hold 80 characters: internal tensors with longer names get a short unique
  // alias inside the plan (the network's own inputs and outputs keep their names).
  // The calibration's scales and weight scales follow the values to their aliases.
  Graph g = original;
  quant::ScaleTable renamed = scales ? *scales : quant::ScaleTable{};
  std::vector<char> io(g.values.size(), 0);
  for (int v : g.inputs) io[size_t(v)] = 1;
  for (int v : g.outputs) io[size_t(v)] = 1;
  for (size_t v = 0; v < g.values.size(); ++v)
    if (!io[v] && g.values[v].name.size() > 80) {
      const std::string alias =
          "t" + std::to_string(v) + "~" + g.values[v].name.substr(g.values[v].name.size() - 60);
      if (const float* s = renamed.find_scale(g.values[v].name)) renamed.set_scale(alias, *s);
      auto w = renamed.weight_scales.find(g.values[v].name);
      if (w != renamed.weight_scales.end()) renamed.weight_scales[alias] = w->second;
      g.values[v].name = alias;
    }
  flatbuffers::FlatBufferBuilder b(1 << 20);
  std::vector<flatbuffers::Offset<fbp::Segment>> segs;
  auto names = [&](const std::vector<int>& ids) {
    std::vector<std::string> r;
    for (int v : ids) r.push_back(g.value(v).name);
    return r;
  };
  std::map<std::string, dla::Precision> precision;  // INT8 builds: each layer's placed precision, by name
  if (scales)
    for (size_t i = 0; i < g.nodes.size(); ++i) precision[g.nodes[i].name] = p.layers[i].precision;
  for (int id : segment_order(g, p)) {
    const Segment& s = p.segments[size_t(id)];
    std::string onnx = export_onnx(g, s.nodes, s.inputs, s.outputs, "segment_" + std::to_string(id));
    std::string payload = onnx;
    if (s.device == Device::kDLA) {
      const Graph sub = import_onnx_bytes(onnx.data(), onnx.size(), {}, "DLA segment " + std::to_string(id));
      LoadableOptions o;
      o.pools = pools;
      o.target = p.target;
      o.dla_core = p.options.dla_core;
      o.inputs.assign(sub.inputs.size(), {DType::kF16, rt::IoFormat::kChw16});
      o.outputs.assign(sub.outputs.size(), {DType::kF16, rt::IoFormat::kChw16});
      quant::NumericsPlan numerics;
      if (scales) {  // the segment's layers keep their placed precision (matched by layer name)
        Placement sp;
        sp.layers.resize(sub.nodes.size());
        for (size_t i = 0; i < sub.nodes.size(); ++i) {
          sp.layers[i].device = Device::kDLA;
          auto it = precision.find(sub.nodes[i].name);
          sp.layers[i].precision = it == precision.end() ? dla::Precision::kINT8 : it->second;
        }
        numerics = quant::plan_numerics(sub, sp, &renamed);
        if (int8_layers) *int8_layers += numerics.int8_nodes;
        o.int8 = true;
        o.plan = &numerics;
      }
      payload = write_loadable(sub, o);
    }
    std::vector<uint8_t> bytes(payload.begin(), payload.end());
    const auto in = names(s.inputs), out = names(s.outputs);
    std::vector<flatbuffers::Offset<flatbuffers::String>> fin, fout;
    for (auto& n : in) fin.push_back(b.CreateString(n));
    for (auto& n : out) fout.push_back(b.CreateString(n));
    segs.push_back(fbp::CreateSegmentDirect(b, s.device == Device::kDLA ? fbp::Device_DLA : fbp::Device_GPU,
                                            &bytes, &fin, &fout));
  }
  std::vector<flatbuffers::Offset<flatbuffers::String>> gin, gout;
  for (auto& n : names(g.inputs)) gin.push_back(b.CreateString(n));
  for (auto& n : names(g.outputs)) gout.push_back(b.CreateString(n));
  fbp::FinishPlanBuffer(b, fbp::CreatePlanDirect(b, 1, p.target.c_str(), &gin, &gout, &segs));
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

}  // namespace dlakit
