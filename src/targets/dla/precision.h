// How an INT8 build runs the DLA layers that do not simply run INT8: the one list that the rules (notes and
// the INT8-only reason), the support matrix, docs/dla-support-matrix.md and the numerics planner
// (src/quant/numerics.cpp) read, each entry with its source.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"
#include "targets/dla/rule_sources.h"

namespace dlakit::dla {

enum class Int8Mode {
  kInt8,         // runs INT8 (every op not listed)
  kFp16Layer,    // the layer runs FP16 in an INT8 build: FP16 inputs, outputs and math
  kFp16Compute,  // INT8 inputs and outputs, computed in FP16
  kInt8Only,     // exists in INT8 only: an FP16 build cannot run it on the DLA
};

struct Int8Entry {
  OpKind op;
  Int8Mode mode;
  Confidence confidence;
  const char* source;
};

const std::vector<Int8Entry>& int8_table();
Int8Mode int8_mode(OpKind op);
// The note inspect prints for the op in an INT8 build ("Slice runs in FP16 on the DLA (source)"); "" for
// INT8.
std::string int8_note(OpKind op);

}  // namespace dlakit::dla
