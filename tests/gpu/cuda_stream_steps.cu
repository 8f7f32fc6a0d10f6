// A cuDLA hybrid-mode program as users write it on the board, with only cudla.h and the CUDA runtime:
//  A. pinned host buffers (cudaHostAlloc): a slow GPU kernel writes the input, the DLA task is submitted on
//     the same stream, the output is read after cudaStreamSynchronize: the task must wait for the kernel.
//  B. CUDA device buffers registered with cudlaMemRegister, a GPU pre-processing kernel, the DLA task on
//     the same stream, a GPU post-processing kernel, one cudaStreamSynchronize.
//  C. run A again on a device handle whose DLA runs on the CPU emulator (DLAKIT_DLA_BACKEND=cpu).
//  D. pageable host memory (posix_memalign) is refused by cudlaMemRegister with cudlaErrorInvalidAddress,
//     as cuDLA's hybrid mode refuses it on the board.
// A and B must be byte-identical (same backend, same input); A and C byte-identical for INT8 loadables
// ("exact"), cosine >= 0.999 over fp16 outputs otherwise ("close").
// Usage: cuda_stream_steps LOADABLE exact|close     Exit: 0 pass, 1 fail, 77 no GPU (skip; a failure when
// DLAKIT_REQUIRE_GPU=1, so a run meant for the GPU machine cannot pass by skipping).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cudla.h"

#define CHECK(call)                                                                            \
  do {                                                                                         \
    cudlaStatus s_ = (call);                                                                   \
    if (s_ != cudlaSuccess) {                                                                  \
      std::fprintf(stderr, "%s failed with status %d at line %d\n", #call, int(s_), __LINE__); \
      return 1;                                                                                \
    }                                                                                          \
  } while (0)
#define CUDA(call)                                                                                 \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "%s failed: %s at line %d\n", #call, cudaGetErrorString(e_), __LINE__); \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

// Copies after spinning ~20 ms: if the DLA task did not wait for it (or the next kernel did not wait for
// the task), the task would read an unwritten input or the copy an unwritten output.
__global__ void slow_copy(const unsigned char* src, unsigned char* dst, size_t n) {
  const long long start = clock64();
  while (clock64() - start < 20000000LL) {
  }
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

static std::vector<unsigned char> read_all(const char* path) {
  std::vector<unsigned char> b;
  FILE* f = std::fopen(path, "rb");
  if (!f) return b;
  std::fseek(f, 0, SEEK_END);
  b.resize(size_t(std::ftell(f)));
  std::fseek(f, 0, SEEK_SET);
  if (std::fread(b.data(), 1, b.size(), f) != b.size()) b.clear();
  std::fclose(f);
  return b;
}

// The loaded module's tensors.
struct Module {
  cudlaModule mod = nullptr;
  std::vector<cudlaModuleTensorDescriptor> din, dout;
};

static cudlaStatus load(cudlaDevHandle dev, const std::vector<unsigned char>& blob, Module& m) {
  cudlaStatus s = cudlaModuleLoadFromMemory(dev, blob.data(), blob.size(), &m.mod, 0);
  if (s != cudlaSuccess) return s;
  cudlaModuleAttribute attr;
  if ((s = cudlaModuleGetAttributes(m.mod, CUDLA_NUM_INPUT_TENSORS, &attr)) != cudlaSuccess) return s;
  m.din.resize(attr.numInputTensors);
  if ((s = cudlaModuleGetAttributes(m.mod, CUDLA_NUM_OUTPUT_TENSORS, &attr)) != cudlaSuccess) return s;
  m.dout.resize(attr.numOutputTensors);
  attr.inputTensorDesc = m.din.data();
  if ((s = cudlaModuleGetAttributes(m.mod, CUDLA_INPUT_TENSOR_DESCRIPTORS, &attr)) != cudlaSuccess) return s;
  attr.outputTensorDesc = m.dout.data();
  return cudlaModuleGetAttributes(m.mod, CUDLA_OUTPUT_TENSOR_DESCRIPTORS, &attr);
}

// Run A (and C): pinned host buffers; the input reaches them through a slow kernel on `stream`, the task is
// queued after it on the same stream; outputs are read after synchronizing the stream.
static int run_pinned(cudlaDevHandle dev, const Module& m,
                      const std::vector<std::vector<unsigned char>>& input, cudaStream_t stream,
                      std::vector<std::vector<unsigned char>>& out) {
  const size_t nin = m.din.size(), nout = m.dout.size();
  std::vector<void*> src(nin), pin(nin), pout(nout);
  std::vector<uint64_t*> in_reg(nin), out_reg(nout);
  for (size_t i = 0; i < nin; ++i) {
    CUDA(cudaMalloc(&src[i], m.din[i].size));
    CUDA(cudaMemcpy(src[i], input[i].data(), m.din[i].size, cudaMemcpyHostToDevice));
    CUDA(cudaHostAlloc(&pin[i], m.din[i].size, cudaHostAllocDefault));
    std::memset(pin[i], 0, m.din[i].size);
    CHECK(cudlaMemRegister(dev, (const uint64_t*)pin[i], m.din[i].size, &in_reg[i], 0));
  }
  for (size_t i = 0; i < nout; ++i) {
    CUDA(cudaHostAlloc(&pout[i], m.dout[i].size, cudaHostAllocDefault));
    std::memset(pout[i], 0, m.dout[i].size);
    CHECK(cudlaMemRegister(dev, (const uint64_t*)pout[i], m.dout[i].size, &out_reg[i], 0));
  }
  cudlaTask task;
  std::memset(&task, 0, sizeof task);
  task.moduleHandle = m.mod;
  task.inputTensor = in_reg.data();
  task.numInputTensors = uint32_t(nin);
  task.outputTensor = out_reg.data();
  task.numOutputTensors = uint32_t(nout);
  for (size_t i = 0; i < nin; ++i)  // the input arrives ~20 ms later, through the stream
    slow_copy<<<64, 256, 0, stream>>>((const unsigned char*)src[i], (unsigned char*)pin[i], m.din[i].size);
  CHECK(cudlaSubmitTask(dev, &task, 1, stream, 0));
  CUDA(cudaStreamSynchronize(stream));
  CHECK(cudlaGetLastError(dev));
  out.resize(nout);
  for (size_t i = 0; i < nout; ++i)
    out[i].assign((unsigned char*)pout[i], (unsigned char*)pout[i] + m.dout[i].size);
  for (size_t i = 0; i < nin; ++i) {
    CHECK(cudlaMemUnregister(dev, in_reg[i]));
    cudaFreeHost(pin[i]);
    cudaFree(src[i]);
  }
  for (size_t i = 0; i < nout; ++i) {
    CHECK(cudlaMemUnregister(dev, out_reg[i]));
    cudaFreeHost(pout[i]);
  }
  return 0;
}

// Fails unless `a` and `b` agree: byte for byte, or (close) cosine >= 0.999 over fp16 values; either way
// the outputs must not be all zeros.
static int compare(const char* what, const Module& m, const std::vector<std::vector<unsigned char>>& a,
                   const std::vector<std::vector<unsigned char>>& b, bool exact) {
  int failures = 0;
  for (size_t i = 0; i < m.dout.size(); ++i) {
    const bool same = a[i] == b[i];
    double ab = 0, aa = 0, bb = 0;
    bool nonzero = false;
    for (size_t k = 0; k + 1 < m.dout[i].size; k += 2) {
      __half ha, hb;
      std::memcpy(&ha, &a[i][k], 2);
      std::memcpy(&hb, &b[i][k], 2);
      const double x = __half2float(ha), y = __half2float(hb);
      ab += x * y, aa += x * x, bb += y * y;
      nonzero = nonzero || y != 0;
    }
    const double cos = aa == 0 && bb == 0 ? 1.0 : ab / std::sqrt(aa * bb);
    std::printf("%s, output %s: %llu bytes, byte-identical %s, cosine %.7f\n", what, m.dout[i].name,
                (unsigned long long)m.dout[i].size, same ? "yes" : "no", cos);
    if (!nonzero || (exact ? !same : cos < 0.999)) ++failures;
  }
  return failures;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: cuda_stream_steps LOADABLE exact|close\n");
    return 2;
  }
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    const char* require = std::getenv("DLAKIT_REQUIRE_GPU");
    if (require && std::strcmp(require, "1") == 0) {
      std::printf("no GPU, but DLAKIT_REQUIRE_GPU=1: FAIL\n");
      return 1;
    }
    std::printf("no GPU: skipped\n");
    return 77;
  }
  const bool exact = std::strcmp(argv[2], "exact") == 0;
  std::vector<unsigned char> blob = read_all(argv[1]);
  if (blob.empty()) return std::fprintf(stderr, "cannot read %s\n", argv[1]), 1;

  cudlaDevHandle dev = nullptr;
  CHECK(cudlaCreateDevice(0, &dev, CUDLA_CUDA_DLA));
  Module m;
  CHECK(load(dev, blob, m));
  const std::vector<cudlaModuleTensorDescriptor>& din = m.din;
  const std::vector<cudlaModuleTensorDescriptor>& dout = m.dout;
  const uint32_t nin = uint32_t(din.size()), nout = uint32_t(dout.size());
  cudlaModule mod = m.mod;

  // The input: random fp16 values in [-1, 1] (random bytes for int8 tensors), the same for every run.
  std::vector<std::vector<unsigned char>> input(nin), pinned_out, cpu_out, gpu_out(nout);
  unsigned seed = 12345;
  for (uint32_t i = 0; i < nin; ++i) {
    input[i].resize(din[i].size);
    for (size_t k = 0; k + 1 < din[i].size; k += 2) {
      seed = seed * 1103515245u + 12345u;
      const float v = float((seed >> 8) & 0xffff) / 32768.f - 1.f;
      const __half h = __float2half(v);
      std::memcpy(&input[i][k], &h, 2);
    }
  }
  cudaStream_t stream;
  CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  // D. Pageable host memory is not CUDA memory: refused, as on the board.
  void* pageable = nullptr;
  if (posix_memalign(&pageable, 64, din[0].size)) return 1;
  uint64_t* refused = nullptr;
  const cudlaStatus pageable_status =
      cudlaMemRegister(dev, (const uint64_t*)pageable, din[0].size, &refused, 0);
  std::printf("pageable host memory: cudlaMemRegister -> %d (expected cudlaErrorInvalidAddress = %d)\n",
              int(pageable_status), int(cudlaErrorInvalidAddress));
  std::free(pageable);
  int failures = pageable_status == cudlaErrorInvalidAddress ? 0 : 1;

  // A. Pinned host buffers in stream order.
  if (run_pinned(dev, m, input, stream, pinned_out)) return 1;

  // B. CUDA device buffers, kernels before and after the task on one stream.
  cudlaTask task;
  std::memset(&task, 0, sizeof task);
  task.moduleHandle = mod;
  task.numInputTensors = nin;
  task.numOutputTensors = nout;
  std::vector<void*> src(nin), din_dev(nin), dout_dev(nout), dst(nout);
  std::vector<uint64_t*> din_reg(nin), dout_reg(nout);
  for (uint32_t i = 0; i < nin; ++i) {
    CUDA(cudaMalloc(&src[i], din[i].size));
    CUDA(cudaMalloc(&din_dev[i], din[i].size));
    CUDA(cudaMemset(din_dev[i], 0, din[i].size));
    CUDA(cudaMemcpy(src[i], input[i].data(), din[i].size, cudaMemcpyHostToDevice));
    CHECK(cudlaMemRegister(dev, (const uint64_t*)din_dev[i], din[i].size, &din_reg[i], 0));
  }
  for (uint32_t i = 0; i < nout; ++i) {
    CUDA(cudaMalloc(&dout_dev[i], dout[i].size));
    CUDA(cudaMalloc(&dst[i], dout[i].size));
    CUDA(cudaMemset(dout_dev[i], 0, dout[i].size));
    CHECK(cudlaMemRegister(dev, (const uint64_t*)dout_dev[i], dout[i].size, &dout_reg[i], 0));
  }
  task.inputTensor = din_reg.data();
  task.outputTensor = dout_reg.data();
  cudaEvent_t t0, t1;
  CUDA(cudaEventCreate(&t0));
  CUDA(cudaEventCreate(&t1));
  CUDA(cudaEventRecord(t0, stream));
  for (uint32_t i = 0; i < nin; ++i)  // GPU pre-processing
    slow_copy<<<64, 256, 0, stream>>>((const unsigned char*)src[i], (unsigned char*)din_dev[i], din[i].size);
  CHECK(cudlaSubmitTask(dev, &task, 1, stream, 0));  // the DLA task, ordered on the stream
  for (uint32_t i = 0; i < nout; ++i)                // GPU post-processing
    slow_copy<<<64, 256, 0, stream>>>((const unsigned char*)dout_dev[i], (unsigned char*)dst[i],
                                      dout[i].size);
  CUDA(cudaEventRecord(t1, stream));
  CUDA(cudaStreamSynchronize(stream));
  CHECK(cudlaGetLastError(dev));
  float ms = 0;
  CUDA(cudaEventElapsedTime(&ms, t0, t1));
  for (uint32_t i = 0; i < nout; ++i) {
    gpu_out[i].resize(dout[i].size);
    CUDA(cudaMemcpy(gpu_out[i].data(), dst[i], dout[i].size, cudaMemcpyDeviceToHost));
  }
  const char* backend = std::getenv("DLAKIT_DLA_BACKEND");
  std::printf("stream run (pre kernel + DLA task + post kernel): %.2f ms, backend %s\n", ms,
              backend ? backend : "cuda");

  failures += compare("A (pinned, stream order) vs B (device buffers)", m, pinned_out, gpu_out, true);

  // C. The same as A on a handle whose DLA runs on the CPU emulator: the CUDA emulation agrees with it.
  setenv("DLAKIT_DLA_BACKEND", "cpu", 1);
  cudlaDevHandle cpu_dev = nullptr;
  CHECK(cudlaCreateDevice(1, &cpu_dev, CUDLA_CUDA_DLA));
  Module cm;
  CHECK(load(cpu_dev, blob, cm));
  if (run_pinned(cpu_dev, cm, input, stream, cpu_out)) return 1;
  failures += compare("A vs C (CPU emulator)", m, pinned_out, cpu_out, exact);
  CHECK(cudlaModuleUnload(cm.mod, 0));
  CHECK(cudlaDestroyDevice(cpu_dev));

  for (uint32_t i = 0; i < nin; ++i) CHECK(cudlaMemUnregister(dev, din_reg[i]));
  for (uint32_t i = 0; i < nout; ++i) CHECK(cudlaMemUnregister(dev, dout_reg[i]));
  CHECK(cudlaModuleUnload(mod, 0));
  CHECK(cudlaDestroyDevice(dev));
  for (auto p : src) cudaFree(p);
  for (auto p : din_dev) cudaFree(p);
  for (auto p : dout_dev) cudaFree(p);
  for (auto p : dst) cudaFree(p);
  cudaStreamDestroy(stream);
  std::printf(failures ? "FAIL\n" : "ok\n");
  return failures ? 1 : 0;
}
