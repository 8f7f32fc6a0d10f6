#include "placement/split.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <queue>
#include <set>

#include "base/file.h"
#include "onnx/exporter.h"
#include "onnx/importer.h"

namespace fs = std::filesystem;

namespace dlakit {

std::vector<int> segment_order(const Graph& g, const Placement& p) {
  const size_t S = p.segments.size();
  std::vector<std::set<int>> deps(S);
  for (const Segment& s : p.segments)
    for (int v : s.inputs) {
      const int pr = g.value(v).producer;
      if (pr >= 0) deps[size_t(s.id)].insert(p.layers[size_t(pr)].segment);
    }
  std::vector<int> order, indeg(S, 0);
  std::vector<std::vector<int>> users(S);
  for (size_t s = 0; s < S; ++s)
    for (int d : deps[s]) {
      ++indeg[s];
      users[size_t(d)].push_back(int(s));
    }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (size_t s = 0; s < S; ++s)
    if (!indeg[s]) ready.push(int(s));
  while (!ready.empty()) {
    int s = ready.top();
    ready.pop();
    order.push_back(s);
    for (int u : users[size_t(s)])
      if (--indeg[size_t(u)] == 0) ready.push(u);
  }
  if (order.size() != S) fail(Status::kInternal, "segments depend on each other in a cycle");
  return order;
}

namespace {

nlohmann::json io_json(const Graph& g, const std::vector<int>& ids) {
  nlohmann::json a = nlohmann::json::array();
  for (int v : ids)
    a.push_back({{"name", g.value(v).name},
                 {"dtype", dtype_name(g.value(v).type.dtype)},
                 {"shape", g.value(v).type.shape}});
  return a;
}

std::string trtexec_line(const Placement& p, const Segment& s, const std::string& file, int k) {
  const bool int8 = p.options.precision == dla::Precision::kINT8;
  if (s.device == Device::kGPU)
    return "trtexec --onnx=" + file + " --fp16 --saveEngine=segment_" + std::to_string(k) + "_gpu.plan";
  const std::string fmt = int8 ? "int8:chw32" : "fp16:chw16";
  return "trtexec --onnx=" + file + " --useDLACore=" + std::to_string(p.options.dla_core) +
         (int8 ? " --int8 --calib=calibration.cache" : " --fp16") +
         " --buildDLAStandalone --inputIOFormats=" + fmt + " --outputIOFormats=" + fmt +
         " --saveEngine=segment_" + std::to_string(k) + ".dla";
}

}  // namespace

nlohmann::json write_split(const Graph& g, const Placement& p, const std::string& dir,
                           const std::string& model_path) {
  fs::create_directories(dir);
  nlohmann::json m;
  m["model"] = model_path;
  m["target"] = p.target;
  m["precision"] = dla::precision_name(p.options.precision);
  m["inputs"] = io_json(g, g.inputs);
  m["outputs"] = io_json(g, g.outputs);
  m["segments"] = nlohmann::json::array();
  std::string sh =
      "#!/usr/bin/env bash\n# Written by dlakit split: builds every segment with TensorRT on the "
      "board.\nset -euo pipefail\ncd \"$(dirname \"$0\")\"\n";
  int k = 0;
  std::string gpu_layers;
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (p.layers[n].device == Device::kGPU)
      gpu_layers += (gpu_layers.empty() ? "" : ",") + g.nodes[n].name + ":GPU";
  for (int id : segment_order(g, p)) {
    const Segment& s = p.segments[size_t(id)];
    const std::string file =
        "segment_" + std::to_string(k) + (s.device == Device::kDLA ? "_dla" : "_gpu") + ".onnx";
    write_file((fs::path(dir) / file).string(), export_onnx(g, s.nodes, s.inputs, s.outputs, file));
    const std::string cmd = trtexec_line(p, s, file, k);
    sh += cmd + "\n";
    m["segments"].push_back({{"index", k},
                             {"id", s.id},
                             {"device", device_name(s.device)},
                             {"file", file},
                             {"layers", s.nodes.size()},
                             {"macs", s.macs},
                             {"inputs", io_json(g, s.inputs)},
                             {"outputs", io_json(g, s.outputs)},
                             {"trtexec", cmd}});
    ++k;
  }
  const std::string hybrid =
      "trtexec --onnx=" + fs::path(model_path).filename().string() +
      " --useDLACore=" + std::to_string(p.options.dla_core) +
      (p.options.precision == dla::Precision::kINT8 ? " --int8 --calib=calibration.cache" : " --fp16") +
      " --allowGPUFallback" + (gpu_layers.empty() ? "" : " --layerDeviceTypes=" + gpu_layers) +
      " --saveEngine=hybrid.plan";
  m["hybrid_trtexec"] = hybrid;
  sh += "# or the whole model as one hybrid engine (the same placement):\n# " + hybrid + "\n";
  write_file((fs::path(dir) / "build_on_jetson.sh").string(), sh);
  write_file((fs::path(dir) / "manifest.json").string(), m.dump(2) + "\n");
  return m;
}

TensorMap run_split(const std::string& dir, const TensorMap& inputs) {
  std::ifstream mf(fs::path(dir) / "manifest.json");
  if (!mf) fail(Status::kIoError, "no manifest.json in ", dir);
  const nlohmann::json m = nlohmann::json::parse(mf);
  TensorMap values = inputs;
  for (const auto& s : m["segments"]) {
    Graph g = import_onnx_file((fs::path(dir) / s["file"].get<std::string>()).string());
    TensorMap feeds;
    for (int id : g.inputs) feeds[g.value(id).name] = values.at(g.value(id).name);
    for (auto& [name, t] : ReferenceEngine(g).run(feeds)) values[name] = t;
  }
  TensorMap out;
  for (const auto& o : m["outputs"])
    out[o["name"].get<std::string>()] = values.at(o["name"].get<std::string>());
  return out;
}

}  // namespace dlakit
