// Loading time of a DLA loadable (read, verify, ready to execute: the rt::Module constructor, which
// cudlaModuleLoadFromMemory runs) for ResNet-50 INT8, built standalone from .cache/models/resnet50.onnx
// and calibrated on two random batches. Prints the median of --runs loads as JSON.
//   dlakit_bench_load SOURCE_DIR [runs]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "../tests/common/test_data.h"
#include "loadable/loadable.h"
#include "onnx/importer.h"
#include "passes/passes.h"
#include "placement/placement.h"
#include "runtime/runtime.h"

using namespace dlakit;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s SOURCE_DIR [runs]\n", argv[0]);
    return 2;
  }
  const int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  try {
    Graph g = import_onnx_file(std::string(argv[1]) + "/.cache/models/resnet50.onnx", {});
    run_passes(g);
    PlacementOptions po;
    po.standalone = true;
    po.precision = dla::Precision::kINT8;
    const quant::ScaleTable scales = test_data::random_calibration(g, 2);
    const quant::NumericsPlan plan = quant::plan_numerics(g, place(g, po), &scales);
    LoadableOptions o;
    o.int8 = true;
    o.plan = &plan;
    o.inputs = rt::parse_io_formats("", g.inputs.size(), true);
    o.outputs = rt::parse_io_formats("", g.outputs.size(), false);
    const std::string bytes = write_loadable(g, o);
    std::vector<double> ms;
    for (int i = 0; i < runs; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      rt::Module m(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf(
        "{\"model\": \"resnet50\", \"precision\": \"int8\", \"loadable_bytes\": %zu, \"runs\": %d, "
        "\"load_ms_median\": %.3f, \"load_ms_min\": %.3f}\n",
        bytes.size(), runs, ms[ms.size() / 2], ms.front());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dlakit_bench_load: %s\n", e.what());
    return 1;
  }
  return 0;
}
