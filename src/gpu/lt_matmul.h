// One matrix product on cuBLASLt's tensor-core kernels, planned once (descriptors and the heuristic's
// algorithm) and run on any stream, graph capture included. cuBLASLt is opened at run time
// (libcublasLt.so.13), so neither libcudla.so.1 nor the package needs it: plan() gives null on a machine
// without it or for a product it has no algorithm for, and the caller keeps its own kernels. Host code of
// the CUDA backend only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "gpu/kernels.h"  // cudaStream_t

namespace dlakit::gpu {

class LtMatmul {
 public:
  enum class Kind {
    kInt8,  // int8 x int8 summed in int32 (exact), int32 result; A is read transposed ("TN", K contiguous)
    kHalf,  // fp16 x fp16 summed in fp32 (products exact, sums in the kernel's order), fp32 result ("NN")
  };
  // A column-major matrix as cuBLASLt counts: rows, columns, leading dimension (elements).
  struct Matrix {
    int64_t rows = 0, cols = 0, ld = 0;
  };
  // D (d.rows x d.cols) = op(A) * B; kInt8: op(A) = A^T, kHalf: A.
  static std::unique_ptr<LtMatmul> plan(Kind kind, Matrix a, Matrix b, Matrix d);
  ~LtMatmul();
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;

  size_t workspace_bytes() const { return workspace_; }
  // workspace: at least workspace_bytes(). Throws kInternal when cuBLASLt reports a failure.
  void run(const void* a, const void* b, void* d, void* workspace, cudaStream_t s) const;

 private:
  struct Descriptors;  // cuBLASLt's, kept out of this header
  LtMatmul(Kind kind);
  Kind kind_;
  size_t workspace_ = 0;
  std::unique_ptr<Descriptors> lt_;
};

}  // namespace dlakit::gpu
