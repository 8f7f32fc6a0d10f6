// What each op of ops.def accepts as ONNX defines it (opsets 1..17): input and output counts per opset,
// and every attribute with its type, the opsets that have it and the range of its values. The importer
// checks each node against it before shape inference, folding or any kernel runs, and the runtime checks
// each step of a loaded program the same way, so a kernel never sees a node with a missing output or an
// attribute of the wrong type or range. Every op has one schema (a missing one
// is a compile error, as for the kernel registry).
#pragma once
#include <climits>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace dlakit {

enum class AttrType : uint8_t { kInt, kFloat, kString, kInts, kFloats, kStrings, kTensor };
const char* attr_type_name(AttrType t);  // "int", "floats", ...

inline constexpr int kManyIo = INT_MAX;  // a variadic input or output list
inline constexpr int kLastOpset = 17;    // the newest opset dlakit imports

struct AttrRule {
  const char* name;
  AttrType type;
  double min = -1e300, max = 1e300;   // each number of an int/float attribute or list
  const char* choices = nullptr;      // a string attribute's allowed values, '|'-separated
  int since = 1, until = kLastOpset;  // the opsets in which the op has this attribute

  constexpr AttrRule opsets(int first, int last) const {
    AttrRule r = *this;
    r.since = first, r.until = last;
    return r;
  }
};

// Counts in force from opset `since` until the next entry's `since`. Inputs below in_min and outputs below
// out_min are required: they must be present and named.
struct IoRule {
  int since;
  int in_min, in_max, out_min, out_max;
};

struct OpSchema {
  std::vector<IoRule> io;  // ascending `since`; the op does not exist before io[0].since
  std::vector<AttrRule> attrs;
};

const OpSchema& op_schema(OpKind op);

// Every way `n` (as imported: its opset, attributes, and input/output lists with -1 for an omitted entry)
// departs from its op's schema, one sentence each naming what was expected and what was found; empty
// when it conforms.
std::vector<std::string> schema_violations(const Node& n);

}  // namespace dlakit
