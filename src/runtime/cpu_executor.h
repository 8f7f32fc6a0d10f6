// The CPU executor: runs a prepared program operation by operation over byte arenas, as the DLA would run
// it: each step reads its surfaces from the SRAM / local DRAM arenas or the task's buffers, computes with
// its numerics (numerics::run_step), keeps fused values inside the operation, and writes its surfaces back.
#pragma once
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "runtime/prepared_program.h"
#include "runtime/run_control.h"

namespace dlakit::rt {

class CpuExecutor {
 public:
  explicit CpuExecutor(const PreparedProgram& p);
  // One run on the task's buffers (laid out per the program's descriptors). Runs are serialised: the
  // arenas are the executor's, like one DLA core's memory. `control` is checked before every operation and
  // before the outputs are written: a run it stops throws with the output buffers untouched.
  void run(const std::vector<const void*>& in, const std::vector<void*>& out,
           const RunControl& control = {}) const;
  // Milliseconds per operation of one run (with the operation's first layer name).
  std::vector<std::pair<std::string, double>> profile(const std::vector<const void*>& in,
                                                      const std::vector<void*>& out) const;
  // For comparing executors operation by operation: runs the first `op_count` operations only; then the
  // bytes of the SRAM or local DRAM arena (what the following operations would read).
  void run_prefix(const std::vector<const void*>& in, const std::vector<void*>& out, size_t op_count) const;
  std::vector<uint8_t> arena(prog::Pool pool) const;

 private:
  void run_locked(const std::vector<const void*>& in, const std::vector<void*>& out,
                  std::vector<std::pair<std::string, double>>* times, size_t op_count,
                  const RunControl& control = {}) const;
  const PreparedProgram& p_;
  mutable std::mutex mu_;
  mutable std::vector<uint8_t> sram_, local_dram_;
  mutable std::vector<std::vector<uint8_t>> out_staging_;  // runs that may stop write their outputs here
};

}  // namespace dlakit::rt
