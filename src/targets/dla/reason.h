// "Unsupported" is data: every violated rule is a Reason record (code, field, actual value, limit, fix).
#pragma once
#include <string>
#include <vector>

#include "targets/dla/rule_sources.h"

namespace dlakit::dla {

#define DLAKIT_REASON_CODES(X)                                                           \
  X(OpNotSupported, "the DLA has no layer for this op")                                  \
  X(ChipNotSupported, "the layer exists on another DLA version only")                    \
  X(AttrOutOfRange, "an attribute is outside the DLA's range")                           \
  X(ModeNotSupported, "a mode or combination of attributes the DLA does not implement")  \
  X(DTypeNotSupported, "a tensor type the DLA cannot hold (it computes in fp16/int8)")   \
  X(PrecisionNotSupported, "the requested precision is not available for this layer")    \
  X(ShapeOutOfRange, "a tensor dimension, rank or batch outside the DLA's limits")       \
  X(AxisNotSupported, "the op works on an axis the DLA layer cannot")                    \
  X(NotConstant, "an operand the DLA needs at build time is computed at run time")       \
  X(BroadcastNotSupported, "an element-wise broadcast pattern the DLA does not support") \
  X(BufferExceeded, "the layer does not fit the convolution buffer (CBUF)")              \
  X(UserOverride, "placed on the GPU by --layerDeviceTypes")

enum class ReasonCode {
#define X(name, text) name,
  DLAKIT_REASON_CODES(X)
#undef X
};
const char* reason_code_name(ReasonCode c);
const char* reason_code_text(ReasonCode c);

struct Reason {
  Rule rule;  // the rule it breaks: its source and confidence (rule_sources.h)
  ReasonCode code;
  std::string field;   // what was checked: "kernel_shape[0]", "input[1].shape", "mode"
  std::string actual;  // the value found
  std::string limit;   // what the DLA accepts
  std::string fix;     // what the user can do
};

struct Capability {
  std::string dla_layer;           // the DLA layer this node maps to ("Convolution", "Scale", ...) or ""
  std::vector<Reason> reasons;     // empty: supported
  std::vector<std::string> notes;  // supported, but worth knowing (e.g. INT8 sigmoid runs in FP16)
  std::vector<Rule> unconfirmed;   // assumed rules that let the layer onto the DLA
  bool ok() const { return reasons.empty(); }
  void add(Rule rule, ReasonCode c, std::string field, std::string actual, std::string limit,
           std::string fix) {
    reasons.push_back({rule, c, std::move(field), std::move(actual), std::move(limit), std::move(fix)});
  }
};

}  // namespace dlakit::dla
