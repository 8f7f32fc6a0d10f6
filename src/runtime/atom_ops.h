// Operations executed on int8 chw32 surfaces in place (kernels/int8_atoms.h on the CPU, gpu/int8_atoms.cu
// on CUDA) instead of reading them to float and writing them back: an SDP Add (+ ReLU) of two int8 surfaces
// and a PDP MaxPool, taken only when every rule of their steps is one those kernels reproduce bit for bit.
// Decided once per operation when the program is prepared (PreparedProgram::atom_op).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "ir/graph.h"
#include "kernels/int8_atoms.h"
#include "program/program.h"

namespace dlakit::rt {

// Whether two surfaces share bytes (views share their parent's pool).
bool overlap(const prog::Surface& a, const prog::Surface& b);

struct AtomOp {
  enum class Kind { kAdd, kMaxPool } kind = Kind::kAdd;
  const prog::Surface* x = nullptr;  // Add: the first operand; MaxPool: the input
  const prog::Surface* b = nullptr;  // Add: the second operand
  const prog::Surface* y = nullptr;
  bool relu = false;         // Add
  PoolWindow window;         // MaxPool
  bool keep_levels = false;  // MaxPool: quant::same_levels(x scale, y scale)
};

// The in-place form of operation `oi` of `p`, whose steps' kernel nodes are `nodes`; nullopt when it is not
// one of the operations above.
std::optional<AtomOp> plan_int8_atoms(const prog::Program& p, size_t oi,
                                      const std::vector<const Node*>& nodes);
// A chw32 surface's layout over its bytes at `data`.
Int8Atoms atoms_of(const prog::Surface& s, uint8_t* data);
// Runs it on the CPU; `base` gives each surface's bytes.
void run_int8_atoms(const AtomOp& a, const std::function<uint8_t*(const prog::Surface&)>& base);

}  // namespace dlakit::rt
