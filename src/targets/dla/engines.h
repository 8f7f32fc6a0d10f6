// Which DLA engine runs each layer kind once it is compiled (dla-constraints.md §5.3: the open NVDLA
// blocks). Orin's DLA 2.0 is a proprietary descendant, so the rows that NVDLA v1 does not document are
// dlakit's reading and say so.
#pragma once
#include "ir/graph.h"
#include "program/program.h"

namespace dlakit::dla {

struct EngineChoice {
  prog::Engine engine;
  const char* source;  // "NVDLA v1: ..." or "[U] ..."
};
EngineChoice engine_of(OpKind op);

}  // namespace dlakit::dla
