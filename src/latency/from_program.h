// The second producer of hardware operations (hw_op.h): a compiled program's operations, as the runtime
// executes them. Everything the model reads is in the program itself: the engine, the precision, the
// surfaces read and written with the pool each lives in (so SRAM and DRAM traffic come from the memory
// plan, not from a guess), MACs and weight bytes. bench --predict uses it on a loadable.
#pragma once
#include <vector>

#include "latency/hw_op.h"
#include "program/program.h"

namespace dlakit::latency {

std::vector<HwOp> hw_ops(const prog::Program& p);

}  // namespace dlakit::latency
