#include "targets/dla/precision.h"

namespace dlakit::dla {

const std::vector<Int8Entry>& int8_table() {
  static const std::vector<Int8Entry> t = {
      {OpKind::Slice, Int8Mode::kFp16Layer, Confidence::kDocumented,
       "dla-constraints.md §1.2 Slice: FP16 only (DOC85)"},
      {OpKind::Split, Int8Mode::kFp16Layer, Confidence::kDocumented,
       "dla-constraints.md §1.2 Slice: FP16 only (DOC85); TensorRT's ONNX parser imports Split as one Slice "
       "layer per output (onnx-tensorrt)"},
      {OpKind::Softmax, Int8Mode::kFp16Layer, Confidence::kDocumented,
       "dla-constraints.md §1.2 SoftMax: FP16 only (HDR10, DOC85)"},
      {OpKind::LRN, Int8Mode::kFp16Layer, Confidence::kDocumented,
       "dla-constraints.md §1.2 LRN: INT8 is upgraded to FP16 (HDR10, DOC85)"},
      {OpKind::Sigmoid, Int8Mode::kFp16Compute, Confidence::kDocumented,
       "dla-constraints.md §1.2 Activation: INT8 Sigmoid runs in FP16 (DOC85); INT8 inputs and outputs are "
       "dlakit's reading"},
      {OpKind::Tanh, Int8Mode::kFp16Compute, Confidence::kDocumented,
       "dla-constraints.md §1.2 Activation: INT8 TanH runs in FP16 (DOC85); INT8 inputs and outputs are "
       "dlakit's reading"},
      {OpKind::Equal, Int8Mode::kInt8Only, Confidence::kDocumented,
       "dla-constraints.md §1.2 Comparison: INT8 only (DOC85, DLASW)"},
  };
  return t;
}

namespace {
const Int8Entry* find(OpKind op) {
  for (const Int8Entry& e : int8_table())
    if (e.op == op) return &e;
  return nullptr;
}
}  // namespace

Int8Mode int8_mode(OpKind op) {
  const Int8Entry* e = find(op);
  return e ? e->mode : Int8Mode::kInt8;
}

std::string int8_note(OpKind op) {
  const Int8Entry* e = find(op);
  if (!e) return "";
  const std::string name = op_name(op);
  switch (e->mode) {
    case Int8Mode::kFp16Layer:
      return name + " runs in FP16 on the DLA (" + e->source + ")";
    case Int8Mode::kFp16Compute:
      return "INT8 " + name + " is computed in FP16 on the DLA (" + e->source + ")";
    default:
      return "";
  }
}

}  // namespace dlakit::dla
