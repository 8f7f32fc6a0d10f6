// A C++ program built against an installed dlakit (find_package or pkg-config): imports a model, places it
// as one DLA graph, writes its FP16 loadable (the bytes `dlakit build` writes) and runs it on the emulated
// DLA. Usage: consumer MODEL.onnx OUT.dla
#include <cmath>
#include <cstdio>
#include <fstream>

#include "base/error.h"
#include "onnx/importer.h"
#include "workflow/engine_runner.h"
#include "workflow/build.h"

int main(int argc, char** argv) {
  using namespace dlakit;
  if (argc != 3) {
    std::fprintf(stderr, "usage: consumer MODEL.onnx OUT.dla\n");
    return 2;
  }
  try {
    PlacementOptions standalone;
    standalone.standalone = true;
    const workflow::PlacedModel pm =
        workflow::place_model(import_onnx_file(argv[1]), argv[1], standalone, {});
    const workflow::BuiltEngine e = workflow::build_engine(pm, {});
    std::ofstream(argv[2], std::ios::binary).write(e.bytes.data(), std::streamsize(e.bytes.size()));
    const auto engine = rt::EngineRunner::open(e.bytes, {});
    TensorMap feeds;
    for (const auto& in : engine->inputs()) {
      Tensor t(DType::kF32, in.shape);
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = std::sin(0.01f * float(i));
      feeds[in.name] = t;
    }
    for (const auto& [name, t] : engine->run(feeds)) {
      double sum = 0;
      for (int64_t i = 0; i < t.numel(); ++i) sum += std::abs(t.at_f64(i));
      std::printf("%s %s sum|x| %.6g\n", name.c_str(), shape_str(t.shape()).c_str(), sum);
    }
  } catch (const std::exception& x) {
    std::fprintf(stderr, "error: %s\n", x.what());
    return 1;
  }
  return 0;
}
