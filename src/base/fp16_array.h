// Rounds float arrays to fp16 values in place (fp16 storage emulation), vectorised where the CPU can.
#pragma once
#include <cstdint>

namespace dlakit {
void round_to_half_inplace(float* p, int64_t n);
// The same from `in` into `out` (out may be in): one pass over memory where a copy and a rounding take two.
void round_to_half_into(const float* in, float* out, int64_t n);
// Bulk conversions of one short run (no threads): fp16 bits -> float, float -> fp16 bits (nearest even).
void halves_to_floats(const uint16_t* in, float* out, int64_t n);
void floats_to_halves(const float* in, uint16_t* out, int64_t n);
}  // namespace dlakit
