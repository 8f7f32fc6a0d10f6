// Host overhead per submitted task (bench target: < 20 us on the 2-core development machine) on a trivial
// loadable (one ReLU over 16 fp16 values), through the C ABI: synchronous (NULL stream), asynchronous
// (queued on a stream, synchronised every 64 tasks), and validation only (CUDLA_SUBMIT_NOOP).
#include <benchmark/benchmark.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include <cstdlib>
#include <cstring>

#include "cudla.h"
#include "dlakit/cudla_ext.h"
#include "loadable/loadable.h"
#include "onnx/importer.h"

namespace {

std::string trivial_loadable() {
  onnx::ModelProto m;
  onnx::OnnxParser::Parse(m,
                          "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,16,1,1] x) => "
                          "(float[1,16,1,1] y) { y = Relu(x) }");
  const std::string b = m.SerializeAsString();
  dlakit::Graph g = dlakit::import_onnx_bytes(b.data(), b.size());
  dlakit::LoadableOptions o;
  o.inputs = {{dlakit::DType::kF16, dlakit::rt::IoFormat::kChw16}};
  o.outputs = {{dlakit::DType::kF16, dlakit::rt::IoFormat::kChw16}};
  return dlakit::write_loadable(g, o);
}

struct Fixture {
  cudlaDevHandle dev = nullptr;
  cudlaModule mod = nullptr;
  void *in = nullptr, *out = nullptr;
  uint64_t *pin = nullptr, *pout = nullptr;
  cudlaTask task{};
  std::string blob = trivial_loadable();
  Fixture() {
    cudlaCreateDevice(0, &dev, CUDLA_CUDA_DLA);
    cudlaModuleLoadFromMemory(dev, reinterpret_cast<const uint8_t*>(blob.data()), blob.size(), &mod, 0);
    in = std::aligned_alloc(64, 64);
    out = std::aligned_alloc(64, 64);
    std::memset(in, 0, 64);
    cudlaMemRegister(dev, static_cast<uint64_t*>(in), 64, &pin, 0);
    cudlaMemRegister(dev, static_cast<uint64_t*>(out), 64, &pout, 0);
    task = cudlaTask{mod, &pout, 1, 1, &pin, nullptr, nullptr};
  }
  ~Fixture() {
    cudlaMemUnregister(dev, pin);
    cudlaMemUnregister(dev, pout);
    cudlaModuleUnload(mod, 0);
    cudlaDestroyDevice(dev);
    std::free(in);
    std::free(out);
  }
};

void BM_SubmitSync(benchmark::State& st) {
  Fixture f;
  for (auto _ : st)
    if (cudlaSubmitTask(f.dev, &f.task, 1, nullptr, 0) != cudlaSuccess) st.SkipWithError("submit failed");
}
BENCHMARK(BM_SubmitSync)->Unit(benchmark::kMicrosecond);

void BM_SubmitAsyncStream(benchmark::State& st) {
  Fixture f;
  int stream = 0;
  int64_t n = 0;
  for (auto _ : st) {
    if (cudlaSubmitTask(f.dev, &f.task, 1, &stream, 0) != cudlaSuccess) st.SkipWithError("submit failed");
    if (++n % 64 == 0) dlakitCudlaSynchronize(f.dev);
  }
  dlakitCudlaSynchronize(f.dev);
}
BENCHMARK(BM_SubmitAsyncStream)->Unit(benchmark::kMicrosecond);

void BM_SubmitNoop(benchmark::State& st) {
  Fixture f;
  for (auto _ : st)
    if (cudlaSubmitTask(f.dev, &f.task, 1, nullptr, CUDLA_SUBMIT_NOOP) != cudlaSuccess)
      st.SkipWithError("submit failed");
}
BENCHMARK(BM_SubmitNoop)->Unit(benchmark::kMicrosecond);

}  // namespace
