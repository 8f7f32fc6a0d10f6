// libcudla.so.1 (the cuDLA C ABI on the emulated DLA): a bad-input matrix covering every function, both
// cores driven from two threads at once, and the plain C client run on a real model's loadable with its
// outputs checked against the runtime (bit for bit) and the FP32 reference engine (FP16 tolerance).
#include <gtest/gtest.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "../common/onnx_text.h"
#include "../common/require_gpu.h"
#include "../common/test_data.h"
#include "../common/test_paths.h"
#include "cudla.h"
#include "dlakit/cudla_ext.h"
#include "engine/engine.h"
#include "gpu/gpu.h"
#include "loadable/loadable.h"
#include "onnx/importer.h"
#include "passes/passes.h"
#include "placement/placement.h"
#include "runtime/runtime.h"

namespace fs = std::filesystem;
using namespace dlakit;

namespace {

// A small all-DLA network: Conv 3x3 (8->8) + Relu + Add of the input.
std::string tiny_loadable() {
  const Graph g = test_data::passed_graph_of(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,8,16,16] x) => (float[1,8,16,16] y) {
      ws = Constant<value = int64[4] {8,8,3,3}>()
      w = ConstantOfShape<value = float[1] {0.05}>(ws)
      c = Conv<pads=[1,1,1,1]>(x, w)
      r = Relu(c)
      y = Add(r, x)
    })");
  LoadableOptions o;
  o.inputs = {{DType::kF16, rt::IoFormat::kChw16}};
  o.outputs = {{DType::kF16, rt::IoFormat::kDlaLinear}};
  return write_loadable(g, o);
}

struct Buffer {  // 64-byte aligned host memory
  void* p = nullptr;
  explicit Buffer(size_t n) {
    EXPECT_EQ(0, posix_memalign(&p, 64, n));
    std::memset(p, 0, n);
  }
  ~Buffer() { std::free(p); }
  uint64_t* u64() const { return static_cast<uint64_t*>(p); }
};

// What a C caller can pass where cudla.h says enum: any 32-bit value (built without forming the enum in C++).
template <typename E>
E bad_enum(uint32_t v) {
  E e;
  std::memcpy(&e, &v, sizeof e);
  return e;
}

const uint8_t* bytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

}  // namespace

TEST(CudlaAbi, VersionCountAndNullPointers) {
  uint64_t v = 0, n = 0;
  EXPECT_EQ(cudlaGetVersion(&v), cudlaSuccess);
  EXPECT_EQ(v, 1005000u);
  EXPECT_EQ(cudlaDeviceGetCount(&n), cudlaSuccess);
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(cudlaGetVersion(nullptr), cudlaErrorInvalidParam);
  EXPECT_EQ(cudlaDeviceGetCount(nullptr), cudlaErrorInvalidParam);
}

TEST(CudlaAbi, CreateDeviceRules) {
  cudlaDevHandle h = nullptr;
  EXPECT_EQ(cudlaCreateDevice(0, nullptr, CUDLA_CUDA_DLA), cudlaErrorInvalidParam);
  EXPECT_EQ(cudlaCreateDevice(5, &h, CUDLA_CUDA_DLA), cudlaErrorInvalidDevice);
  EXPECT_EQ(cudlaCreateDevice(0, &h, CUDLA_STANDALONE), cudlaErrorUnsupportedOperation);
  EXPECT_EQ(cudlaCreateDevice(0, &h, 7), cudlaErrorInvalidParam);
  // at most 16 handles per core
  std::vector<cudlaDevHandle> hs(16);
  for (auto& x : hs) ASSERT_EQ(cudlaCreateDevice(1, &x, CUDLA_CUDA_DLA), cudlaSuccess);
  EXPECT_EQ(cudlaCreateDevice(1, &h, CUDLA_CUDA_DLA), cudlaErrorOutOfResources);
  EXPECT_NE(std::string(dlakitCudlaLastMessage()).find("16"), std::string::npos);
  for (auto& x : hs) EXPECT_EQ(cudlaDestroyDevice(x), cudlaSuccess);
  EXPECT_EQ(cudlaCreateDevice(1, &h, CUDLA_CUDA_DLA), cudlaSuccess);  // freed slots are reusable
  EXPECT_EQ(cudlaDestroyDevice(h), cudlaSuccess);
}

TEST(CudlaAbi, BadHandlesAreStatusesNeverCrashes) {
  int not_a_handle = 0;
  auto bogus_dev = reinterpret_cast<cudlaDevHandle>(&not_a_handle);
  auto bogus_mod = reinterpret_cast<cudlaModule>(&not_a_handle);
  uint64_t* dp = nullptr;
  Buffer b(64);
  cudlaModule m = nullptr;
  cudlaModuleAttribute a;
  cudlaDevAttribute da;
  cudlaTask t{};
  cudlaExternalMemoryHandleDesc md{};
  cudlaExternalSemaphoreHandleDesc sd{};
  EXPECT_EQ(cudlaDestroyDevice(bogus_dev), cudlaErrorInvalidDevice);
  EXPECT_EQ(cudlaDestroyDevice(nullptr), cudlaErrorInvalidDevice);
  EXPECT_EQ(cudlaMemRegister(bogus_dev, b.u64(), 64, &dp, 0), cudlaErrorInvalidDevice);
  EXPECT_EQ(cudlaMemUnregister(bogus_dev, b.u64()), cudlaErrorInvalidDevice);
  EXPECT_EQ(cudlaModuleLoadFromMemory(bogus_dev, bytes("x"), 1, &m, 0), cudlaErrorInvalidDevice);
  EXPECT_EQ(cudlaModuleGetAttributes(bogus_mod, CUDLA_NUM_INPUT_TENSORS, &a), cudlaErrorInvalidModule);
  EXPECT_EQ(cudlaModuleUnload(bogus_mod, 0), cudlaErrorInvalidModule);
  EXPECT_EQ(cudlaSubmitTask(bogus_dev, &t, 1, nullptr, 0), cudlaErrorInvalidDevice);
  EXPECT_EQ(cudlaDeviceGetAttribute(bogus_dev, CUDLA_DEVICE_VERSION, &da), cudlaErrorInvalidDevice);
  EXPECT_EQ(cudlaGetLastError(bogus_dev), cudlaErrorInvalidDevice);
  EXPECT_EQ(cudlaSetTaskTimeoutInMs(bogus_dev, 100), cudlaErrorInvalidParam);  // documented: InvalidParam
  EXPECT_EQ(cudlaImportExternalMemory(bogus_dev, &md, &dp, 0), cudlaErrorInvalidDevice);
  EXPECT_EQ(cudlaImportExternalSemaphore(bogus_dev, &sd, &dp, 0), cudlaErrorInvalidDevice);
  EXPECT_EQ(cudlaGetNvSciSyncAttributes(nullptr, CUDLA_NVSCISYNC_ATTR_WAIT), cudlaErrorInvalidParam);
  uint64_t list = 0;
  EXPECT_EQ(cudlaGetNvSciSyncAttributes(&list, CUDLA_NVSCISYNC_ATTR_WAIT), cudlaErrorUnsupportedOperation);
}

TEST(CudlaAbi, DeviceMemoryModuleAndTaskRules) {
  HOST_MEMORY_SEMANTICS_ONLY();
  const std::string lb = tiny_loadable();
  cudlaDevHandle d = nullptr;
  ASSERT_EQ(cudlaCreateDevice(0, &d, CUDLA_CUDA_DLA), cudlaSuccess);
  cudlaDevAttribute da;
  EXPECT_EQ(cudlaDeviceGetAttribute(d, CUDLA_UNIFIED_ADDRESSING, &da), cudlaSuccess);
  EXPECT_EQ(cudlaDeviceGetAttribute(d, CUDLA_DEVICE_VERSION, nullptr), cudlaErrorInvalidParam);
  EXPECT_EQ(cudlaDeviceGetAttribute(d, bad_enum<cudlaDevAttributeType>(9), &da), cudlaErrorInvalidAttribute);
  // timeouts: 0 and > 1000 s are invalid
  EXPECT_EQ(cudlaSetTaskTimeoutInMs(d, 0), cudlaErrorInvalidParam);
  EXPECT_EQ(cudlaSetTaskTimeoutInMs(d, 1000001), cudlaErrorInvalidParam);
  EXPECT_EQ(cudlaSetTaskTimeoutInMs(d, 1000000), cudlaSuccess);
  // module loading
  cudlaModule m = nullptr;
  EXPECT_EQ(cudlaModuleLoadFromMemory(d, nullptr, 10, &m, 0), cudlaErrorInvalidParam);
  EXPECT_EQ(cudlaModuleLoadFromMemory(d, bytes(lb), lb.size(), nullptr, 0), cudlaErrorInvalidParam);
  EXPECT_EQ(cudlaModuleLoadFromMemory(d, bytes(lb), lb.size(), &m, 3), cudlaErrorInvalidParam);
  EXPECT_EQ(cudlaModuleLoadFromMemory(d, bytes("this is a TensorRT engine"), 25, &m, 0), cudlaErrorUmd);
  EXPECT_NE(std::string(dlakitCudlaLastMessage()).find("not a dlakit DLA loadable"), std::string::npos)
      << dlakitCudlaLastMessage();
  EXPECT_EQ(cudlaModuleLoadFromMemory(d, bytes(lb), lb.size() / 2, &m, 0), cudlaErrorUmd);  // truncated
  ASSERT_EQ(cudlaModuleLoadFromMemory(d, bytes(lb), lb.size(), &m, 0), cudlaSuccess);
  cudlaModule m2 = nullptr;
  EXPECT_EQ(cudlaModuleLoadFromMemory(d, bytes(lb), lb.size(), &m2, 0),
            cudlaErrorUnsupportedOperation);  // one per handle
  // attributes
  cudlaModuleAttribute a;
  ASSERT_EQ(cudlaModuleGetAttributes(m, CUDLA_NUM_INPUT_TENSORS, &a), cudlaSuccess);
  EXPECT_EQ(a.numInputTensors, 1u);
  EXPECT_EQ(cudlaModuleGetAttributes(m, CUDLA_NUM_INPUT_TENSORS, nullptr), cudlaErrorInvalidParam);
  a.inputTensorDesc = nullptr;
  EXPECT_EQ(cudlaModuleGetAttributes(m, CUDLA_INPUT_TENSOR_DESCRIPTORS, &a), cudlaErrorInvalidParam);
  EXPECT_EQ(cudlaModuleGetAttributes(m, bad_enum<cudlaModuleAttributeType>(42), &a),
            cudlaErrorInvalidAttribute);
  cudlaModuleTensorDescriptor in{}, out{};
  a.inputTensorDesc = &in;
  ASSERT_EQ(cudlaModuleGetAttributes(m, CUDLA_INPUT_TENSOR_DESCRIPTORS, &a), cudlaSuccess);
  a.outputTensorDesc = &out;
  ASSERT_EQ(cudlaModuleGetAttributes(m, CUDLA_OUTPUT_TENSOR_DESCRIPTORS, &a), cudlaSuccess);
  EXPECT_STREQ(in.name, "x");
  EXPECT_EQ(in.size, 1u * 1 * 16 * 16 * 16 * 2);  // chw16: 8 channels padded to 16, fp16
  EXPECT_EQ(in.dataFormat, CUDLA_DATA_FORMAT_NCxHWx);
  EXPECT_EQ(out.dataFormat, CUDLA_DATA_FORMAT_NCHW);
  EXPECT_EQ(out.stride[1], 64u);  // dla_linear line stride: 16 fp16 = 32 bytes, rounded up to 64 on Orin
  // memory registration: alignment, double registration, unknown addresses
  Buffer ib(in.size + 64), ob(out.size);
  uint64_t *ip = nullptr, *op = nullptr, *tmp = nullptr;
  EXPECT_EQ(cudlaMemRegister(d, reinterpret_cast<uint64_t*>(static_cast<char*>(ib.p) + 8), 64, &tmp, 0),
            cudlaErrorInvalidAddress);
  EXPECT_EQ(cudlaMemRegister(d, ib.u64(), 0, &tmp, 0), cudlaErrorInvalidAddress);
  EXPECT_EQ(cudlaMemRegister(d, ib.u64(), 64, nullptr, 0), cudlaErrorInvalidParam);
  EXPECT_EQ(cudlaMemRegister(d, ib.u64(), 64, &tmp, 99), cudlaErrorInvalidParam);
  ASSERT_EQ(cudlaMemRegister(d, ib.u64(), in.size, &ip, 0), cudlaSuccess);
  EXPECT_EQ(cudlaMemRegister(d, ib.u64(), in.size, &tmp, 0), cudlaErrorMemoryRegistered);
  // an output buffer that is not registered -> InvalidAddress, and nothing runs
  cudlaTask t{};
  t.moduleHandle = m;
  t.inputTensor = &ip;
  t.numInputTensors = 1;
  uint64_t* unregistered = ob.u64();
  t.outputTensor = &unregistered;
  t.numOutputTensors = 1;
  EXPECT_EQ(cudlaSubmitTask(d, &t, 1, nullptr, 0), cudlaErrorInvalidAddress);
  EXPECT_NE(std::string(dlakitCudlaLastMessage()).find("output 0"), std::string::npos)
      << dlakitCudlaLastMessage();
  ASSERT_EQ(cudlaMemRegister(d, ob.u64(), out.size, &op, 0), cudlaSuccess);
  t.outputTensor = &op;
  EXPECT_EQ(cudlaSubmitTask(d, nullptr, 1, nullptr, 0), cudlaErrorInvalidParam);
  EXPECT_EQ(cudlaSubmitTask(d, &t, 0, nullptr, 0), cudlaErrorInvalidParam);
  cudlaTask wrong = t;
  wrong.numInputTensors = 2;
  EXPECT_EQ(cudlaSubmitTask(d, &wrong, 1, nullptr, 0), cudlaErrorInvalidParam);
  wrong = t;
  wrong.moduleHandle = nullptr;
  EXPECT_EQ(cudlaSubmitTask(d, &wrong, 1, nullptr, 0), cudlaErrorInvalidModule);
  wrong = t;
  cudlaWaitEvents we{};
  wrong.waitEvents = &we;
  EXPECT_EQ(cudlaSubmitTask(d, &wrong, 1, nullptr, 0), cudlaErrorUnsupportedOperation);
  wrong = t;
  wrong.inputTensor = nullptr;
  EXPECT_EQ(cudlaSubmitTask(d, &wrong, 1, nullptr, 0), cudlaErrorUnsupportedOperation);
  EXPECT_EQ(cudlaSubmitTask(d, &t, 1, nullptr, CUDLA_SUBMIT_DIAGNOSTICS_TASK),
            cudlaErrorUnsupportedOperation);
  EXPECT_EQ(cudlaSubmitTask(d, &t, 1, nullptr, CUDLA_SUBMIT_NOOP), cudlaSuccess);
  // a real submission: output equals the runtime's own execution of the module
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  rt::Module ref(bytes(lb), lb.size());
  Tensor x(DType::kF32, {1, 8, 16, 16});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = u(gen);
  rt::pack(x, ref.inputs()[0], ib.p);
  ASSERT_EQ(cudlaSubmitTask(d, &t, 1, nullptr, 0), cudlaSuccess);
  EXPECT_EQ(cudlaGetLastError(d), cudlaSuccess);
  Buffer expect(out.size);
  ref.execute({ib.p}, {expect.p});
  EXPECT_EQ(0, std::memcmp(expect.p, ob.p, out.size));
  // standalone-only functions on a hybrid device
  cudlaExternalMemoryHandleDesc md{};
  EXPECT_EQ(cudlaImportExternalMemory(d, nullptr, &tmp, 0), cudlaErrorInvalidParam);
  EXPECT_EQ(cudlaImportExternalMemory(d, &md, &tmp, 0), cudlaErrorUnsupportedOperation);
  cudlaExternalSemaphoreHandleDesc sd{};
  EXPECT_EQ(cudlaImportExternalSemaphore(d, &sd, &tmp, 0), cudlaErrorUnsupportedOperation);
  // teardown, and handles are dead afterwards
  EXPECT_EQ(cudlaMemUnregister(d, ip), cudlaSuccess);
  EXPECT_EQ(cudlaMemUnregister(d, ip), cudlaErrorInvalidAddress);
  EXPECT_EQ(cudlaMemUnregister(d, op), cudlaSuccess);
  EXPECT_EQ(cudlaModuleUnload(m, 1), cudlaErrorInvalidParam);
  EXPECT_EQ(cudlaModuleUnload(m, 0), cudlaSuccess);
  EXPECT_EQ(cudlaModuleUnload(m, 0), cudlaErrorInvalidModule);
  EXPECT_EQ(cudlaDestroyDevice(d), cudlaSuccess);
  EXPECT_EQ(cudlaGetLastError(d), cudlaErrorInvalidDevice);
}

TEST(CudlaAbi, TwoCoresFromTwoThreadsAtOnce) {
  HOST_MEMORY_SEMANTICS_ONLY();
  const std::string lb = tiny_loadable();
  rt::Module ref(bytes(lb), lb.size());
  const size_t in_size = ref.inputs()[0].size, out_size = ref.outputs()[0].size;
  auto worker = [&](uint64_t core, int* failures) {
    cudlaDevHandle d = nullptr;
    cudlaModule m = nullptr;
    if (cudlaCreateDevice(core, &d, CUDLA_CUDA_DLA) ||
        cudlaModuleLoadFromMemory(d, bytes(lb), lb.size(), &m, 0)) {
      ++*failures;
      return;
    }
    constexpr int kTasks = 12;
    std::vector<std::unique_ptr<Buffer>> ins, outs;
    std::vector<uint64_t*> ip(kTasks), op(kTasks);
    std::vector<cudlaTask> tasks(kTasks);
    std::mt19937 gen(uint32_t(core) + 1);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (int k = 0; k < kTasks; ++k) {
      ins.push_back(std::make_unique<Buffer>(in_size));
      outs.push_back(std::make_unique<Buffer>(out_size));
      Tensor x(DType::kF32, {1, 8, 16, 16});
      for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = u(gen);
      rt::pack(x, ref.inputs()[0], ins.back()->p);
      if (cudlaMemRegister(d, ins.back()->u64(), in_size, &ip[size_t(k)], 0) ||
          cudlaMemRegister(d, outs.back()->u64(), out_size, &op[size_t(k)], 0))
        ++*failures;
      tasks[size_t(k)] = cudlaTask{m, &op[size_t(k)], 1, 1, &ip[size_t(k)], nullptr, nullptr};
    }
    int stream_token = 0;  // a non-NULL stream: tasks queue on the core in order
    if (cudlaSubmitTask(d, tasks.data(), kTasks, &stream_token, 0) || dlakitCudlaSynchronize(d) ||
        cudlaGetLastError(d))
      ++*failures;
    Buffer expect(out_size);
    for (int k = 0; k < kTasks; ++k) {
      ref.execute({ins[size_t(k)]->p}, {expect.p});
      if (std::memcmp(expect.p, outs[size_t(k)]->p, out_size)) ++*failures;
    }
    if (cudlaModuleUnload(m, 0) || cudlaDestroyDevice(d)) ++*failures;
  };
  int f0 = 0, f1 = 0;
  std::thread t0(worker, 0, &f0), t1(worker, 1, &f1);
  t0.join();
  t1.join();
  EXPECT_EQ(f0, 0);
  EXPECT_EQ(f1, 0);
}

TEST(CudlaAbi, PlainCClientOnARealModelMatchesTheReference) {
  HOST_MEMORY_SEMANTICS_ONLY();
  const fs::path model = fs::path(test_paths::source_dir()) / ".cache" / "models" / "mobilenet_v2.onnx";
  ASSERT_TRUE(fs::exists(model)) << "run scripts/fetch-models.sh";
  Graph g = import_onnx_file(model.string());
  Graph optimised = g;
  run_passes(optimised);
  LoadableOptions o;
  o.inputs = {{DType::kF16, rt::IoFormat::kChw16}};
  o.outputs = {{DType::kF16, rt::IoFormat::kChw16}};
  const std::string lb = write_loadable(optimised, o);
  const fs::path dir = fs::temp_directory_path() / ("dlakit_capi_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "model.dla", std::ios::binary).write(lb.data(), std::streamsize(lb.size()));
  rt::Module mod(bytes(lb), lb.size());
  std::mt19937 gen(5);
  std::normal_distribution<float> nd(0.f, 1.f);
  Tensor x(DType::kF32, {1, 3, 224, 224});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = nd(gen);
  Buffer in(mod.inputs()[0].size);
  rt::pack(x, mod.inputs()[0], in.p);
  std::ofstream(dir / "in.bin", std::ios::binary)
      .write(static_cast<const char*>(in.p), std::streamsize(mod.inputs()[0].size));
  const std::string cmd = std::string(test_paths::hybrid_steps()) + " " + (dir / "model.dla").string() + " " +
                          (dir / "in.bin").string() + " " + (dir / "out.bin").string() + " 1 > " +
                          (dir / "log.txt").string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << std::ifstream(dir / "log.txt").rdbuf();
  std::ifstream f(dir / "out.bin", std::ios::binary);
  std::string out((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_EQ(out.size(), mod.outputs()[0].size);
  // 1. the C client through libcudla gives exactly what the runtime computes
  Buffer expect(mod.outputs()[0].size);
  mod.execute({in.p}, {expect.p});
  EXPECT_EQ(0, std::memcmp(expect.p, out.data(), out.size()));
  // 2. and the emulated FP16 DLA is close to the FP32 reference engine
  const Tensor dla = rt::unpack(out.data(), mod.outputs()[0]);
  Tensor xr = rt::unpack(in.p, mod.inputs()[0]);  // the fp16-rounded input the DLA saw
  const Tensor ref = ReferenceEngine(g).run({{"input", xr}}).begin()->second;
  EXPECT_GE(test_data::cosine(dla, ref), 0.999) << "FP16 emulation vs FP32 cosine";
  fs::remove_all(dir);
}

// A CNN ending in a GlobalAveragePool over 16x16: the DLA rewrites (on by default) make it one DLA graph,
// so it builds standalone, and the plain C cuDLA client runs its loadable: bit for bit what the runtime
// computes, and within FP16 of the FP32 reference on the original graph.
TEST(CudlaAbi, PlainCClientRunsACnnEndingInA16x16GlobalAveragePool) {
  onnx::ModelProto m;
  auto st = onnx::OnnxParser::Parse(m, R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3,64,64] x) => (float[1,32,1,1] y) {
      s1 = Constant<value = int64[4] {16,3,3,3}>()
      w1 = ConstantOfShape<value = float[1] {0.1}>(s1)
      c1 = Conv<pads=[1,1,1,1], strides=[2,2]>(x, w1)
      r1 = Relu(c1)
      s2 = Constant<value = int64[4] {32,16,3,3}>()
      w2 = ConstantOfShape<value = float[1] {0.1}>(s2)
      c2 = Conv<pads=[1,1,1,1], strides=[2,2]>(r1, w2)
      r2 = Relu(c2)
      y = GlobalAveragePool(r2)
    })");
  ASSERT_TRUE(st.IsOK()) << st.ErrorMessage();
  const std::string b = m.SerializeAsString();
  Graph g = import_onnx_bytes(b.data(), b.size());
  std::mt19937 gen(3);
  std::normal_distribution<float> nd(0.f, 0.2f);
  for (Value& v : g.values)  // random weights instead of the folded 0.1s
    if (v.constant && v.constant->rank() == 4)
      for (int64_t i = 0; i < v.constant->numel(); ++i) v.constant->data<float>()[i] = nd(gen);
  PlacementOptions standalone;
  standalone.standalone = true;
  Graph as_imported = g;
  PassOptions no_rewrites;
  no_rewrites.disabled = {"adjust-for-dla"};
  run_passes(as_imported, no_rewrites);
  EXPECT_THROW(place(as_imported, standalone), Error) << "a 16x16 global pool is over the 8x8 window";
  Graph optimised = g;
  run_passes(optimised);
  ASSERT_NO_THROW(place(optimised, standalone));
  LoadableOptions o;
  o.inputs = {{DType::kF16, rt::IoFormat::kChw16}};
  o.outputs = {{DType::kF16, rt::IoFormat::kChw16}};
  const std::string lb = write_loadable(optimised, o);
  const fs::path dir = fs::temp_directory_path() / ("dlakit_capi_gap_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "model.dla", std::ios::binary).write(lb.data(), std::streamsize(lb.size()));
  rt::Module mod(bytes(lb), lb.size());
  Tensor x(DType::kF32, {1, 3, 64, 64});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = nd(gen) * 5;
  Buffer in(mod.inputs()[0].size);
  rt::pack(x, mod.inputs()[0], in.p);
  std::ofstream(dir / "in.bin", std::ios::binary)
      .write(static_cast<const char*>(in.p), std::streamsize(mod.inputs()[0].size));
  const std::string cmd = std::string(test_paths::hybrid_steps()) + " " + (dir / "model.dla").string() + " " +
                          (dir / "in.bin").string() + " " + (dir / "out.bin").string() + " 0 > " +
                          (dir / "log.txt").string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << std::ifstream(dir / "log.txt").rdbuf();
  std::ifstream f(dir / "out.bin", std::ios::binary);
  const std::string out((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_EQ(out.size(), mod.outputs()[0].size);
  Buffer expect(mod.outputs()[0].size);
  mod.execute({in.p}, {expect.p});
  EXPECT_EQ(0, std::memcmp(expect.p, out.data(), out.size())) << "the C client differs from the runtime";
  const Tensor dla = rt::unpack(out.data(), mod.outputs()[0]);
  const Tensor ref = ReferenceEngine(g).run({{"x", rt::unpack(in.p, mod.inputs()[0])}}).at("y");
  EXPECT_GE(test_data::cosine(dla, ref), 0.999) << "FP16 emulation vs FP32 cosine";
  fs::remove_all(dir);
}

// A task list is all or nothing: with one bad task (anywhere in the list) none runs, whatever is wrong
// with it. The counts are compared with the module before the caller's arrays are read (the array here
// holds one pointer while the task claims two: reading two would be an out-of-bounds read).
TEST(CudlaAbi, SubmitIsAllOrNothing) {
  HOST_MEMORY_SEMANTICS_ONLY();
  const std::string lb = tiny_loadable();
  cudlaDevHandle d = nullptr;
  cudlaModule m = nullptr;
  ASSERT_EQ(cudlaCreateDevice(0, &d, CUDLA_CUDA_DLA), cudlaSuccess);
  ASSERT_EQ(cudlaModuleLoadFromMemory(d, bytes(lb), lb.size(), &m, 0), cudlaSuccess);
  rt::Module ref(bytes(lb), lb.size());
  const size_t in_size = ref.inputs()[0].size, out_size = ref.outputs()[0].size;
  Buffer ib(in_size), o0(out_size), o1(out_size), stray(out_size);
  std::memset(ib.p, 0x3c, in_size);  // fp16 1.0
  uint64_t *ip, *op0, *op1;
  ASSERT_EQ(cudlaMemRegister(d, ib.u64(), in_size, &ip, 0), cudlaSuccess);
  ASSERT_EQ(cudlaMemRegister(d, o0.u64(), out_size, &op0, 0), cudlaSuccess);
  ASSERT_EQ(cudlaMemRegister(d, o1.u64(), out_size, &op1, 0), cudlaSuccess);
  uint64_t* unregistered = stray.u64();
  auto untouched = [&] {
    for (const Buffer* b : {&o0, &o1})
      for (size_t i = 0; i < out_size; ++i)
        if (static_cast<uint8_t*>(b->p)[i] != 0) return false;
    return true;
  };
  const cudlaTask good0{m, &op0, 1, 1, &ip, nullptr, nullptr}, good1{m, &op1, 1, 1, &ip, nullptr, nullptr};
  cudlaTask bad_count = good1;
  bad_count.numInputTensors = 2;  // the array holds one pointer
  cudlaTask bad_address = good1;
  bad_address.outputTensor = &unregistered;
  cudlaTask bad_module = good1;
  bad_module.moduleHandle = reinterpret_cast<cudlaModule>(&stray);
  const struct {
    cudlaTask bad;
    cudlaStatus status;
    const char* message;
  } cases[] = {{bad_count, cudlaErrorInvalidParam, "task 2 has 2 inputs / 1 outputs; the module has 1 / 1"},
               {bad_address, cudlaErrorInvalidAddress, "task 2: output 0"},
               {bad_module, cudlaErrorInvalidModule, "task 2 names no module of this device"}};
  int stream_token = 0;
  for (const auto& c : cases)
    for (void* stream : {static_cast<void*>(nullptr), static_cast<void*>(&stream_token)}) {
      const cudlaTask list[] = {good0, good1, c.bad};
      EXPECT_EQ(cudlaSubmitTask(d, list, 3, stream, 0), c.status) << c.message;
      EXPECT_NE(std::string(dlakitCudlaLastMessage()).find(c.message), std::string::npos)
          << dlakitCudlaLastMessage();
      ASSERT_EQ(dlakitCudlaSynchronize(d), cudlaSuccess);
      EXPECT_TRUE(untouched()) << "a task before the bad one ran: " << c.message;
    }
  // The same list without the bad task runs both.
  const cudlaTask both[] = {good0, good1};
  ASSERT_EQ(cudlaSubmitTask(d, both, 2, nullptr, 0), cudlaSuccess);
  EXPECT_FALSE(untouched());
  EXPECT_EQ(0, std::memcmp(o0.p, o1.p, out_size));
  EXPECT_EQ(cudlaDestroyDevice(d), cudlaSuccess);
}

// One thread keeps using a device and its module while another destroys them: every call returns a
// status (success, or InvalidDevice/InvalidModule once the handle is gone), never a use-after-free
// (AddressSanitizer checks this in make test-asan).
TEST(CudlaAbi, HandlesDestroyedWhileAnotherThreadUsesThem) {
  HOST_MEMORY_SEMANTICS_ONLY();
  const std::string lb = tiny_loadable();
  rt::Module ref(bytes(lb), lb.size());
  const size_t in_size = ref.inputs()[0].size, out_size = ref.outputs()[0].size;
  for (int round = 0; round < 20; ++round) {
    cudlaDevHandle d = nullptr;
    cudlaModule m = nullptr;
    ASSERT_EQ(cudlaCreateDevice(uint64_t(round % 2), &d, CUDLA_CUDA_DLA), cudlaSuccess);
    ASSERT_EQ(cudlaModuleLoadFromMemory(d, bytes(lb), lb.size(), &m, 0), cudlaSuccess);
    Buffer ib(in_size), ob(out_size);
    uint64_t *ip, *op;
    ASSERT_EQ(cudlaMemRegister(d, ib.u64(), in_size, &ip, 0), cudlaSuccess);
    ASSERT_EQ(cudlaMemRegister(d, ob.u64(), out_size, &op, 0), cudlaSuccess);
    std::atomic<bool> go{false};
    std::atomic<int> unexpected{0};
    std::thread user([&] {
      while (!go) std::this_thread::yield();
      for (int i = 0; i < 50; ++i) {
        cudlaTask t{m, &op, 1, 1, &ip, nullptr, nullptr};
        const cudlaStatus s = cudlaSubmitTask(d, &t, 1, nullptr, 0);
        cudlaModuleAttribute a;
        const cudlaStatus g = cudlaModuleGetAttributes(m, CUDLA_NUM_INPUT_TENSORS, &a);
        const cudlaStatus e = cudlaGetLastError(d);
        if ((s != cudlaSuccess && s != cudlaErrorInvalidDevice && s != cudlaErrorInvalidModule) ||
            (g != cudlaSuccess && g != cudlaErrorInvalidModule) ||
            (e != cudlaSuccess && e != cudlaErrorInvalidDevice))
          ++unexpected;
      }
    });
    go = true;
    std::this_thread::sleep_for(std::chrono::microseconds(200 * (round % 5)));
    if (round % 2 == 0) {  // odd rounds: destroy only
      EXPECT_EQ(cudlaModuleUnload(m, 0), cudlaSuccess);
    }
    EXPECT_EQ(cudlaDestroyDevice(d), cudlaSuccess);
    user.join();
    EXPECT_EQ(unexpected.load(), 0) << "round " << round;
  }
}

// The C++ runtime API: wrong buffer lists and every failure are rt::RuntimeError; a run past its deadline
// stops between layers with its outputs untouched.
TEST(RuntimeApi, ExecuteRejectsWrongBuffersAndStopsAtTheDeadline) {
  const std::string lb = tiny_loadable();
  const rt::Module m(bytes(lb), lb.size());
  Buffer in(m.inputs()[0].size), out(m.outputs()[0].size);
  auto status_of = [&](auto&& f) {
    try {
      f();
    } catch (const rt::RuntimeError& e) {
      return std::make_pair(e.status(), std::string(e.what()));
    }
    return std::make_pair(cudlaSuccess, std::string());
  };
  EXPECT_EQ(status_of([&] { m.execute({}, {out.p}); }).first, cudlaErrorInvalidParam);
  EXPECT_EQ(status_of([&] { m.execute({in.p, in.p}, {out.p}); }).first, cudlaErrorInvalidParam);
  const auto null_out = status_of([&] { m.execute({in.p}, {nullptr}); });
  EXPECT_EQ(null_out.first, cudlaErrorInvalidParam);
  EXPECT_NE(null_out.second.find("output 'y' is null"), std::string::npos) << null_out.second;
  std::memset(out.p, 0xAB, m.outputs()[0].size);
  rt::RunControl past;
  past.deadline = rt::RunControl::Clock::now() - std::chrono::seconds(1);
  const auto stopped = status_of([&] { m.execute({in.p}, {out.p}, past); });
  EXPECT_EQ(stopped.first, cudlaErrorDlaErrEngineTimeout);
  EXPECT_NE(stopped.second.find("timed out at the start"), std::string::npos) << stopped.second;
  std::atomic<bool> cancel{true};
  rt::RunControl cancelled;
  cancelled.cancelled = &cancel;
  EXPECT_EQ(status_of([&] { m.execute({in.p}, {out.p}, cancelled); }).first, cudlaErrorDlaErrEngineTimeout);
  for (size_t i = 0; i < m.outputs()[0].size; ++i)
    ASSERT_EQ(static_cast<uint8_t*>(out.p)[i], 0xAB) << "a stopped run wrote its output";
  EXPECT_EQ(status_of([&] { m.execute({in.p}, {out.p}, rt::RunControl::timeout_ms(60000)); }).first,
            cudlaSuccess);
  EXPECT_EQ(status_of([] { rt::Module bad(bytes("DLAK"), 4); }).first, cudlaErrorUmd);
}
