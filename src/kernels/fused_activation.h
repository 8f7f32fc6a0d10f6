// The activation the fuse-activation pass attaches to a Conv ("dlakit_activation" with
// "dlakit_activation_params"), applied to a finished output with the separate node's exact arithmetic.
#pragma once
#include <cstdint>

#include "ir/graph.h"
#include "kernels/gemm.h"

namespace dlakit::ref {
void apply_fused_activation(const Node& n, float* y, int64_t count);
// The same activation as an epilogue for kernels that apply it as they store (kNone when there is none).
GemmEpilogue fused_epilogue(const Node& n);
}  // namespace dlakit::ref
