// The emulated DLA on CUDA for a compiled program: its operations as CUDA kernels over device arenas (the
// SRAM and local DRAM pools) and the task's buffers, in the DLA's layouts, queued on CUDA streams. A step
// without a CUDA kernel, or whose GPU formula could differ from the CPU's in the last bit in INT8, runs on
// the host inside the same stream (numerics::run_step between two copies), so INT8 results equal the CPU
// executor's bit for bit and FP16 results agree within float rounding.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "gpu/kernels.h"
#include "runtime/prepared_program.h"

namespace dlakit::gpu {

// A descriptor's layout as the pack/unpack kernels read it (CUDA builds only).
k::SurfaceGeom surface_geom(const rt::TensorDesc& d);

class ProgramEngine {
 public:
  // Uploads constants, allocates the arenas and plans every step. Throws kUnsupported without a GPU.
  explicit ProgramEngine(const rt::PreparedProgram& p);
  ~ProgramEngine();
  ProgramEngine(const ProgramEngine&) = delete;
  ProgramEngine& operator=(const ProgramEngine&) = delete;

  // Queues one run on the task's buffers (CUDA device memory, laid out per the program's descriptors)
  // after the work already on `stream` (a cudaStream_t; null: the legacy default stream); later work on
  // `stream` waits for it. Runs are serialised, like tasks on one core.
  void enqueue(const std::vector<const void*>& in, const std::vector<void*>& out, void* stream);
  // Host convenience: host buffers in and out, waits (throws what a host step threw).
  void run(const std::vector<const void*>& in, const std::vector<void*>& out);
  void synchronize();  // waits for queued runs; rethrows a host-step failure
  // For comparing executors operation by operation (rt::CpuExecutor has the same two): a host run of the
  // first `op_count` operations only; then the bytes of the SRAM or local DRAM arena.
  void run_prefix(const std::vector<const void*>& in, const std::vector<void*>& out, size_t op_count);
  std::vector<uint8_t> arena(prog::Pool pool);

  struct StepInfo {
    std::string layer;
    bool on_gpu = false;
    std::string why;  // why it runs on the host
  };
  const std::vector<StepInfo>& steps() const;
  int gpu_steps() const;
  // Residual Adds computed in their convolution's epilogue in whole runs (see program_cuda.cpp).
  int fused_adds() const;
  // Milliseconds per operation of one synchronous run on host buffers.
  std::vector<double> profile(const std::vector<const void*>& in, const std::vector<void*>& out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dlakit::gpu
