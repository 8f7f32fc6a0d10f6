// The memory plan: where every surface of a compiled program lives. Constants go to the global DRAM
// pool; each intermediate surface gets an offset in the managed SRAM pool, or in the local DRAM pool when
// SRAM is short (the DLA falls back to local DRAM instead of failing, dla-constraints.md §1.1), reusing
// memory between surfaces whose lifetimes do not overlap; network inputs and outputs are the task's
// buffers. Pool budgets follow trtexec's --memPoolSize.
#pragma once
#include <cstdint>
#include <string>

#include "program/program.h"

namespace dlakit::compiler {

// Defaults per dla-constraints.md §1.1 (TensorRT's MemoryPoolType defaults: managed SRAM 1 MiB, local
// DRAM 1 GiB, global DRAM 512 MiB).
struct MemoryBudgets {
  uint64_t sram = uint64_t(1) << 20;
  uint64_t local_dram = uint64_t(1) << 30;
  uint64_t global_dram = uint64_t(512) << 20;
};

// trtexec's --memPoolSize=dlaSRAM:N,dlaLocalDRAM:N,dlaGlobalDRAM:N: sizes in MiB unless suffixed
// (K, M, G: base 2; B: bytes), other pools (workspace, tacticSharedMem) accepted and ignored. Each DLA
// pool must be a power of two of at least 4 KiB (dlaSRAM is rounded down to one, and clipped to 1 GiB).
MemoryBudgets parse_mem_pool_sizes(const std::string& spec, MemoryBudgets base = {});

// Assigns pools and offsets to every surface that owns its memory and fills p.sram / local_dram /
// global_dram. Throws (naming the pool, the bytes needed and --memPoolSize) when a pool is too small.
void plan_memory(prog::Program& p, const MemoryBudgets& budgets);

}  // namespace dlakit::compiler
