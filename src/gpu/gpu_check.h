// Turns a CUDA runtime status into a dlakit error naming the call (host code of the CUDA backend only).
#pragma once

namespace dlakit::gpu {
void check_cuda(int err, const char* what);  // err: a cudaError_t
}  // namespace dlakit::gpu

#define DLAKIT_CUDA(call) ::dlakit::gpu::check_cuda(int(call), #call)
