// A cuDLA hybrid-mode program as users write it on the board: CUDA device buffers registered with
// cudlaMemRegister, a GPU pre-processing kernel, the DLA task submitted on the same CUDA stream, a GPU
// post-processing kernel, one cudaStreamSynchronize. It includes only cudla.h and the CUDA runtime.
// The same task also runs on host buffers with a NULL stream (dlakit's CPU path); the outputs must agree:
// byte for byte for INT8 loadables ("exact"), cosine >= 0.999 over fp16 outputs otherwise ("close").
// Usage: cuda_stream_steps LOADABLE exact|close     Exit: 0 pass, 1 fail, 77 no GPU (skip).
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

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: cuda_stream_steps LOADABLE exact|close\n");
    return 2;
  }
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    std::printf("no GPU: skipped\n");
    return 77;
  }
  const bool exact = std::strcmp(argv[2], "exact") == 0;
  std::vector<unsigned char> blob = read_all(argv[1]);
  if (blob.empty()) return std::fprintf(stderr, "cannot read %s\n", argv[1]), 1;

  cudlaDevHandle dev = nullptr;
  CHECK(cudlaCreateDevice(0, &dev, CUDLA_CUDA_DLA));
  cudlaModule mod = nullptr;
  CHECK(cudlaModuleLoadFromMemory(dev, blob.data(), blob.size(), &mod, 0));
  cudlaModuleAttribute attr;
  CHECK(cudlaModuleGetAttributes(mod, CUDLA_NUM_INPUT_TENSORS, &attr));
  const uint32_t nin = attr.numInputTensors;
  CHECK(cudlaModuleGetAttributes(mod, CUDLA_NUM_OUTPUT_TENSORS, &attr));
  const uint32_t nout = attr.numOutputTensors;
  std::vector<cudlaModuleTensorDescriptor> din(nin), dout(nout);
  attr.inputTensorDesc = din.data();
  CHECK(cudlaModuleGetAttributes(mod, CUDLA_INPUT_TENSOR_DESCRIPTORS, &attr));
  attr.outputTensorDesc = dout.data();
  CHECK(cudlaModuleGetAttributes(mod, CUDLA_OUTPUT_TENSOR_DESCRIPTORS, &attr));

  // The input: random fp16 values in [-1, 1] (random bytes for int8 tensors), the same for both runs.
  std::vector<std::vector<unsigned char>> input(nin), host_out(nout), gpu_out(nout);
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

  // Run 1: host buffers, NULL stream (the CPU path).
  std::vector<uint64_t*> in_reg(nin), out_reg(nout);
  std::vector<void*> hin(nin), hout(nout);
  for (uint32_t i = 0; i < nin; ++i) {
    if (posix_memalign(&hin[i], 64, din[i].size)) return 1;
    std::memcpy(hin[i], input[i].data(), din[i].size);
    CHECK(cudlaMemRegister(dev, (const uint64_t*)hin[i], din[i].size, &in_reg[i], 0));
  }
  for (uint32_t i = 0; i < nout; ++i) {
    if (posix_memalign(&hout[i], 64, dout[i].size)) return 1;
    CHECK(cudlaMemRegister(dev, (const uint64_t*)hout[i], dout[i].size, &out_reg[i], 0));
  }
  cudlaTask task;
  std::memset(&task, 0, sizeof task);
  task.moduleHandle = mod;
  task.inputTensor = in_reg.data();
  task.numInputTensors = nin;
  task.outputTensor = out_reg.data();
  task.numOutputTensors = nout;
  CHECK(cudlaSubmitTask(dev, &task, 1, nullptr, 0));
  CHECK(cudlaGetLastError(dev));
  for (uint32_t i = 0; i < nout; ++i)
    host_out[i].assign((unsigned char*)hout[i], (unsigned char*)hout[i] + dout[i].size);

  // Run 2: CUDA device buffers, kernels before and after the task on one stream.
  cudaStream_t stream;
  CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
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

  int failures = 0;
  for (uint32_t i = 0; i < nout; ++i) {
    const bool same = host_out[i] == gpu_out[i];
    double ab = 0, aa = 0, bb = 0;
    bool nonzero = false;
    for (size_t k = 0; k + 1 < dout[i].size; k += 2) {
      __half ha, hb;
      std::memcpy(&ha, &host_out[i][k], 2);
      std::memcpy(&hb, &gpu_out[i][k], 2);
      const double a = __half2float(ha), b = __half2float(hb);
      ab += a * b, aa += a * a, bb += b * b;
      nonzero = nonzero || b != 0;
    }
    const double cos = aa == 0 && bb == 0 ? 1.0 : ab / std::sqrt(aa * bb);
    std::printf("output %s: %llu bytes, byte-identical %s, cosine %.7f\n", dout[i].name,
                (unsigned long long)dout[i].size, same ? "yes" : "no", cos);
    if (!nonzero || (exact ? !same : cos < 0.999)) ++failures;
  }
  for (uint32_t i = 0; i < nin; ++i) {
    CHECK(cudlaMemUnregister(dev, in_reg[i]));
    CHECK(cudlaMemUnregister(dev, din_reg[i]));
  }
  for (uint32_t i = 0; i < nout; ++i) {
    CHECK(cudlaMemUnregister(dev, out_reg[i]));
    CHECK(cudlaMemUnregister(dev, dout_reg[i]));
  }
  CHECK(cudlaModuleUnload(mod, 0));
  CHECK(cudlaDestroyDevice(dev));
  for (auto p : src) cudaFree(p);
  for (auto p : din_dev) cudaFree(p);
  for (auto p : dout_dev) cudaFree(p);
  for (auto p : dst) cudaFree(p);
  for (auto p : hin) std::free(p);
  for (auto p : hout) std::free(p);
  cudaStreamDestroy(stream);
  std::printf(failures ? "FAIL\n" : "ok\n");
  return failures ? 1 : 0;
}
