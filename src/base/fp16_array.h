// Rounds float arrays to fp16 values in place (fp16 storage emulation), vectorised where the CPU can.
#pragma once
#include <cstdint>

namespace dlakit {
void round_to_half_inplace(float* p, int64_t n);
}  // namespace dlakit
