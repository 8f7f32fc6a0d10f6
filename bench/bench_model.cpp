// Times the reference engine on one model: dlakit_bench_model MODEL name=input.npy [...] [--iterations N]
// [--warmUp N] [--threads N] [--nodes N]. Prints JSON: wall-clock and process CPU milliseconds per run
// (medians; CPU time is the steadier figure on a shared machine) and, from as many more runs with per-step
// timing (each step's median: one run is too noisy on a shared machine), time per op type and the N
// slowest nodes (default 8; fused steps count for their first node, as in `dlakit run --dumpProfile`).
// bench/run.sh interleaves it with ONNX Runtime on the same inputs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/threadpool.h"
#include "engine/engine.h"
#include "io/npy.h"
#include "onnx/importer.h"

using namespace dlakit;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double cpu_ms() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(
        stderr,
        "usage: %s MODEL name=input.npy [...] [--iterations N] [--warmUp N] [--threads N] [--nodes N]\n",
        argv[0]);
    return 2;
  }
  try {
    int iterations = 20, warmup = 2, nodes = 8;
    ImportOptions opt;
    TensorMap feeds;
    for (int i = 2; i < argc; ++i) {
      const std::string a = argv[i];
      if ((a == "--iterations" || a == "--warmUp" || a == "--threads" || a == "--nodes") && i + 1 < argc) {
        const int v = std::stoi(argv[++i]);
        if (a == "--nodes") nodes = std::max(0, v);
        if (a == "--iterations") iterations = std::max(1, v);
        if (a == "--warmUp") warmup = std::max(0, v);
        if (a == "--threads") set_num_threads(v);
        continue;
      }
      const size_t eq = a.find('=');
      if (eq == std::string::npos)
        fail(Status::kInvalidArgument, "argument '", a, "' should be name=file.npy");
      Tensor t = read_npy(a.substr(eq + 1));
      opt.input_shapes[a.substr(0, eq)] = t.shape();
      feeds[a.substr(0, eq)] = t;
    }
    const Graph g = import_onnx_file(argv[1], opt);
    ReferenceEngine engine(g);
    for (int i = 0; i < warmup; ++i) engine.run(feeds);
    std::vector<double> wall, cpu;
    for (int i = 0; i < iterations; ++i) {
      const double c0 = cpu_ms();
      const auto t0 = std::chrono::steady_clock::now();
      engine.run(feeds);
      wall.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      cpu.push_back(cpu_ms() - c0);
    }
    // As many runs again with per-step timing (wall clock; a fused step counts for its first node).
    engine.set_profiling(true);
    std::vector<std::vector<double>> samples(g.nodes.size());
    for (int i = 0; i < iterations; ++i) {
      engine.run(feeds);
      for (size_t n = 0; n < g.nodes.size(); ++n) samples[n].push_back(engine.node_ms()[n]);
    }
    std::vector<double> node_ms(g.nodes.size());
    for (size_t n = 0; n < g.nodes.size(); ++n) node_ms[n] = median(samples[n]);
    std::map<std::string, double> by_op;
    for (size_t n = 0; n < g.nodes.size(); ++n) by_op[op_name(g.nodes[n].op)] += node_ms[n];
    std::vector<size_t> order(g.nodes.size());
    for (size_t n = 0; n < order.size(); ++n) order[n] = n;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return node_ms[a] > node_ms[b]; });
    nlohmann::json slowest = nlohmann::json::array();
    for (size_t i = 0; i < std::min<size_t>(size_t(nodes), order.size()); ++i) {
      const Node& node = g.nodes[order[i]];
      slowest.push_back(
          {{"node", node.name},
           {"index", order[i]},  // the node's place in the graph (bench/layers_vs_ort.py)
           {"op", op_name(node.op)},
           {"input", node.inputs.empty() || node.inputs[0] < 0 ? std::string()
                                                               : type_str(g.value(node.inputs[0]).type)},
           {"output", node.outputs.empty() || node.outputs[0] < 0 ? std::string()
                                                                  : type_str(g.value(node.outputs[0]).type)},
           {"ms", node_ms[order[i]]}});
    }
    nlohmann::json out = {
        {"model", argv[1]},
        {"threads", num_threads()},
        {"iterations", iterations},
        {"latency_ms", {{"median", median(wall)}, {"min", *std::min_element(wall.begin(), wall.end())}}},
        {"cpu_ms", {{"median", median(cpu)}}},
        {"op_ms", by_op},
        {"slowest_ms", slowest}};
    std::cout << out.dump() << "\n";
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_model: %s\n", e.what());
    return 1;
  }
  return 0;
}
