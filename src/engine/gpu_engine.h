// The emulated DLA on CUDA: runs a graph with a numerics plan (FP32 / DLA FP16 / DLA INT8, as
// quant::NumericsRunner defines them) on the GPU, queued on CUDA streams. Nodes with a CUDA kernel run on
// the GPU; every other node runs on the host inside the same queue (copied out, run by the NumericsRunner,
// copied back), so any graph runs and results follow the CPU emulation: INT8 layers bit for bit (their
// GPU kernels repeat the CPU's integer and float operations in the same order, and layers whose float
// sums could differ in order run on the host), FP16/FP32 layers within float rounding.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "quant/numerics.h"

namespace dlakit::gpu {

class GpuEngine {
 public:
  // Prepares buffers, constants and the step list. Throws kUnsupported without a GPU.
  GpuEngine(const Graph& g, quant::NumericsPlan plan);
  ~GpuEngine();
  GpuEngine(const GpuEngine&) = delete;
  GpuEngine& operator=(const GpuEngine&) = delete;

  // Device buffers of graph input / output i (the value's dtype and shape, dense).
  void* input(size_t i);
  const void* output(size_t i);
  // Queues one run on the engine's queue after the work already on `stream` (a cudaStream_t; null: the
  // legacy default stream); later work on `stream` waits for it. Runs are serialized, like tasks on a core.
  void enqueue(void* stream);
  // Host convenience: copies in, runs, waits, copies out (throws what a host step threw).
  TensorMap run(const TensorMap& inputs);
  void synchronize();  // waits for queued runs; rethrows a host-step failure

  struct NodeInfo {
    bool on_gpu = false;
    std::string why;       // why it runs on the host
    int fused_into = -1;   // the node whose launches compute this one (a residual Add or ReLU in a Conv's)
    bool surface = false;  // writes its result as an fp16 chw16 surface (its readers are FP16 convolutions)
  };
  const std::vector<NodeInfo>& nodes() const;
  int gpu_nodes() const;
  // Milliseconds per node of one synchronous run (events around every step).
  std::vector<double> profile(const TensorMap& inputs);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dlakit::gpu
