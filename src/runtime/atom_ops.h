// Operations the CPU executor runs on int8 chw32 surfaces in place (kernels/int8_atoms.h) instead of
// reading them to float and writing them back: an SDP Add (+ ReLU) of two int8 surfaces and a PDP MaxPool,
// taken only when every rule of their steps is one those kernels reproduce bit for bit.
#pragma once
#include <cstdint>
#include <functional>

#include "program/program.h"
#include "runtime/prepared_program.h"

namespace dlakit::rt {

// Whether two surfaces share bytes (views share their parent's pool).
bool overlap(const prog::Surface& a, const prog::Surface& b);

// Runs operation `op` (index `oi`) on its surfaces in place and returns true, or returns false having
// touched nothing when it is not one of the operations above.
bool run_on_int8_atoms(const PreparedProgram& pp, size_t oi,
                       const std::function<uint8_t*(const prog::Surface&)>& base);

}  // namespace dlakit::rt
