#include "ir/op_schema.h"

#include <variant>

#include "base/error.h"

namespace dlakit {
namespace {

// dlakit's bound on sizes given in attributes (kernel_shape, strides, pads, group, ...): 2^31 keeps every
// shape formula over them inside int64. ONNX sets no upper bound; no real network comes near it.
constexpr double kMaxSize = double(int64_t(1) << 31);

constexpr AttrRule Int(const char* name, double min = -1e300, double max = 1e300) {
  return {name, AttrType::kInt, min, max};
}
constexpr AttrRule Flag(const char* name) { return Int(name, 0, 1); }
constexpr AttrRule Ints(const char* name, double min = -1e300, double max = 1e300) {
  return {name, AttrType::kInts, min, max};
}
constexpr AttrRule Float(const char* name) { return {name, AttrType::kFloat}; }
constexpr AttrRule Floats(const char* name) { return {name, AttrType::kFloats}; }
constexpr AttrRule Str(const char* name, const char* choices = nullptr) {
  return {name, AttrType::kString, -1e300, 1e300, choices};
}
constexpr AttrRule Strs(const char* name) { return {name, AttrType::kStrings}; }
constexpr AttrRule Tens(const char* name) { return {name, AttrType::kTensor}; }

// Attributes of opsets before 7 that later versions dropped.
constexpr AttrRule kConsumedInputs = Ints("consumed_inputs").opsets(1, 5);
constexpr AttrRule kLegacyBroadcast = Flag("broadcast").opsets(1, 6);
constexpr AttrRule kLegacyAxis = Int("axis").opsets(1, 6);
constexpr AttrRule kIsTest = Flag("is_test").opsets(1, 6);

constexpr AttrRule kAutoPad = Str("auto_pad", "NOTSET|SAME_UPPER|SAME_LOWER|VALID");
constexpr AttrRule kKernelShape = Ints("kernel_shape", 1, kMaxSize);
constexpr AttrRule kStrides = Ints("strides", 1, kMaxSize);
constexpr AttrRule kDilations = Ints("dilations", 1, kMaxSize);
constexpr AttrRule kPads = Ints("pads", 0, kMaxSize);

const std::vector<IoRule> kOneToOne = {{1, 1, 1, 1, 1}};
const std::vector<IoRule> kBinary = {{1, 2, 2, 1, 1}};
const std::vector<IoRule> kVariadic = {{1, 1, kManyIo, 1, 1}};

// The activation dlakit's fuse-activation pass (passes/rewrite.cpp) folds into a Conv, as program steps
// carry it; not an ONNX attribute, but a file that names it gets exactly the fused arithmetic.
constexpr AttrRule kFusedActivation = Str("dlakit_activation", "Relu|LeakyRelu|Clip");
constexpr AttrRule kFusedActivationParams = Floats("dlakit_activation_params");

const OpSchema kSchema_Conv{{{1, 2, 3, 1, 1}},
                            {kAutoPad, kDilations, Int("group", 1, kMaxSize), kKernelShape, kPads, kStrides,
                             kFusedActivation, kFusedActivationParams}};
const OpSchema kSchema_ConvTranspose{
    {{1, 2, 3, 1, 1}},
    {kAutoPad, kDilations, Int("group", 1, kMaxSize), kKernelShape, Ints("output_padding", 0, kMaxSize),
     Ints("output_shape", 0, kMaxSize), kPads, kStrides}};
const OpSchema kSchema_MaxPool{
    {{1, 1, 1, 1, 1}, {8, 1, 1, 1, 2}},
    {kAutoPad, Flag("ceil_mode").opsets(10, kLastOpset), kDilations.opsets(10, kLastOpset), kKernelShape,
     kPads, Flag("storage_order").opsets(8, kLastOpset), kStrides}};
const OpSchema kSchema_AveragePool{
    {{1, 1, 1, 1, 1}},
    {kAutoPad, Flag("ceil_mode").opsets(10, kLastOpset), Flag("count_include_pad").opsets(7, kLastOpset),
     kKernelShape, kPads, kStrides}};
const OpSchema kSchema_GlobalAveragePool{kOneToOne, {}};
const OpSchema kSchema_GlobalMaxPool{kOneToOne, {}};
const OpSchema kSchema_BatchNormalization{
    {{1, 5, 5, 1, 5}},
    {Float("epsilon"), Float("momentum"), Flag("spatial").opsets(1, 8), kIsTest, kConsumedInputs,
     Flag("training_mode").opsets(14, kLastOpset)}};
const OpSchema kSchema_LRN{kOneToOne,
                           {Float("alpha"), Float("beta"), Float("bias"), Int("size", 1, kMaxSize)}};
const OpSchema kSchema_Softmax{kOneToOne, {Int("axis")}};
const OpSchema kSchema_Relu{kOneToOne, {kConsumedInputs}};
const OpSchema kSchema_LeakyRelu{kOneToOne, {Float("alpha"), kConsumedInputs}};
const OpSchema kSchema_PRelu{kBinary, {kConsumedInputs}};
const OpSchema kSchema_Sigmoid{kOneToOne, {kConsumedInputs}};
const OpSchema kSchema_Tanh{kOneToOne, {kConsumedInputs}};
const OpSchema kSchema_Clip{{{1, 1, 1, 1, 1}, {11, 1, 3, 1, 1}},
                            {Float("min").opsets(1, 10), Float("max").opsets(1, 10), kConsumedInputs}};
const OpSchema kSchema_HardSigmoid{kOneToOne, {Float("alpha"), Float("beta"), kConsumedInputs}};
const OpSchema kSchema_HardSwish{{{14, 1, 1, 1, 1}}, {}};
const OpSchema kSchema_Elu{kOneToOne, {Float("alpha"), kConsumedInputs}};
const OpSchema kSchema_Softplus{kOneToOne, {}};
const OpSchema kSchema_Add{kBinary, {kLegacyBroadcast, kLegacyAxis, kConsumedInputs}};
const OpSchema kSchema_Sub{kBinary, {kLegacyBroadcast, kLegacyAxis, kConsumedInputs}};
const OpSchema kSchema_Mul{kBinary, {kLegacyBroadcast, kLegacyAxis, kConsumedInputs}};
const OpSchema kSchema_Div{kBinary, {kLegacyBroadcast, kLegacyAxis, kConsumedInputs}};
const OpSchema kSchema_Pow{kBinary, {kLegacyBroadcast, kLegacyAxis}};
const OpSchema kSchema_Max{kVariadic, {kConsumedInputs}};
const OpSchema kSchema_Min{kVariadic, {kConsumedInputs}};
const OpSchema kSchema_Sum{kVariadic, {kConsumedInputs}};
const OpSchema kSchema_Equal{kBinary, {kLegacyBroadcast, kLegacyAxis}};
const OpSchema kSchema_Sqrt{kOneToOne, {kConsumedInputs}};
const OpSchema kSchema_Exp{kOneToOne, {kConsumedInputs}};
const OpSchema kSchema_Log{kOneToOne, {kConsumedInputs}};
const OpSchema kSchema_Neg{kOneToOne, {kConsumedInputs}};
const OpSchema kSchema_Abs{kOneToOne, {kConsumedInputs}};
const OpSchema kSchema_Reciprocal{kOneToOne, {kConsumedInputs}};
const OpSchema kSchema_Erf{{{9, 1, 1, 1, 1}}, {}};
const OpSchema kSchema_Floor{kOneToOne, {kConsumedInputs}};
const OpSchema kSchema_Ceil{kOneToOne, {kConsumedInputs}};
const OpSchema kSchema_Concat{kVariadic, {Int("axis")}};
const OpSchema kSchema_Split{{{1, 1, 2, 1, kManyIo}, {2, 1, 1, 1, kManyIo}, {13, 1, 2, 1, kManyIo}},
                             {Int("axis"), Ints("split", 0, kMaxSize).opsets(1, 12)}};
const OpSchema kSchema_Slice{
    {{1, 1, 1, 1, 1}, {10, 3, 5, 1, 1}},
    {Ints("starts").opsets(1, 9), Ints("ends").opsets(1, 9), Ints("axes").opsets(1, 9)}};
const OpSchema kSchema_Reshape{{{1, 1, 1, 1, 1}, {5, 2, 2, 1, 1}},
                               {Ints("shape").opsets(1, 4), Ints("consumed_inputs").opsets(1, 4),
                                Flag("allowzero").opsets(14, kLastOpset)}};
const OpSchema kSchema_Flatten{kOneToOne, {Int("axis")}};
const OpSchema kSchema_Transpose{kOneToOne, {Ints("perm", 0, kMaxSize)}};
const OpSchema kSchema_Squeeze{{{1, 1, 1, 1, 1}, {13, 1, 2, 1, 1}}, {Ints("axes").opsets(1, 12)}};
const OpSchema kSchema_Unsqueeze{{{1, 1, 1, 1, 1}, {13, 2, 2, 1, 1}}, {Ints("axes").opsets(1, 12)}};
const OpSchema kSchema_Pad{{{1, 1, 1, 1, 1}, {11, 2, 3, 1, 1}},
                           {Str("mode", "constant|reflect|edge"), Ints("paddings").opsets(1, 1),
                            Ints("pads").opsets(2, 10), Float("value").opsets(1, 10)}};
const OpSchema kSchema_Identity{kOneToOne, {}};
const OpSchema kSchema_Dropout{
    {{1, 1, 1, 1, 2}, {12, 1, 3, 1, 2}},
    {Float("ratio").opsets(1, 11), kIsTest, kConsumedInputs, Int("seed").opsets(12, kLastOpset)}};
// `to` is a type name before opset 6 and an ONNX TensorProto.DataType code (1..16) from 6.
const OpSchema kSchema_Cast{kOneToOne, {Str("to").opsets(1, 5), Int("to", 1, 16).opsets(6, kLastOpset)}};
const OpSchema kSchema_Gather{kBinary, {Int("axis")}};
const OpSchema kSchema_Shape{kOneToOne,
                             {Int("start").opsets(15, kLastOpset), Int("end").opsets(15, kLastOpset)}};
const OpSchema kSchema_Constant{
    {{1, 0, 0, 1, 1}},
    {Tens("value"), Float("value_float").opsets(12, kLastOpset),
     Floats("value_floats").opsets(12, kLastOpset), Int("value_int").opsets(12, kLastOpset),
     Ints("value_ints").opsets(12, kLastOpset), Str("value_string").opsets(12, kLastOpset),
     Strs("value_strings").opsets(12, kLastOpset)}};
const OpSchema kSchema_ConstantOfShape{{{9, 1, 1, 1, 1}}, {Tens("value")}};
const OpSchema kSchema_Gemm{
    {{1, 3, 3, 1, 1}, {11, 2, 3, 1, 1}},
    {Float("alpha"), Float("beta"), Flag("transA"), Flag("transB"), kLegacyBroadcast}};
const OpSchema kSchema_MatMul{kBinary, {}};
const OpSchema kSchema_Resize{
    {{10, 2, 2, 1, 1}, {11, 1, 4, 1, 1}},
    {Str("mode", "nearest|linear|cubic"),
     Str("coordinate_transformation_mode",
         "half_pixel|pytorch_half_pixel|align_corners|asymmetric|tf_half_pixel_for_nn|tf_crop_and_resize")
         .opsets(11, kLastOpset),
     Float("cubic_coeff_a").opsets(11, kLastOpset), Flag("exclude_outside").opsets(11, kLastOpset),
     Float("extrapolation_value").opsets(11, kLastOpset),
     Str("nearest_mode", "round_prefer_floor|round_prefer_ceil|floor|ceil").opsets(11, kLastOpset)}};
const OpSchema kSchema_Upsample{{{1, 1, 1, 1, 1}, {9, 2, 2, 1, 1}},
                                {Str("mode", "nearest|linear|bilinear"), Floats("scales").opsets(7, 8),
                                 Float("width_scale").opsets(1, 6), Float("height_scale").opsets(1, 6)}};
const OpSchema kSchema_ReduceMean{kOneToOne, {Ints("axes"), Flag("keepdims")}};
const OpSchema kSchema_ReduceMax{kOneToOne, {Ints("axes"), Flag("keepdims")}};
const OpSchema kSchema_ReduceSum{
    {{1, 1, 1, 1, 1}, {13, 1, 2, 1, 1}},
    {Ints("axes").opsets(1, 12), Flag("keepdims"), Flag("noop_with_empty_axes").opsets(13, kLastOpset)}};
const OpSchema kSchema_QuantizeLinear{{{10, 2, 3, 1, 1}}, {Int("axis").opsets(13, kLastOpset)}};
const OpSchema kSchema_DequantizeLinear{{{10, 2, 3, 1, 1}}, {Int("axis").opsets(13, kLastOpset)}};

const OpSchema* const kSchemas[] = {
#define DLAKIT_OP(e, name, family) &kSchema_##e,
#include "ir/ops.def"
#undef DLAKIT_OP
};
static_assert(std::size(kSchemas) == size_t(kNumOps));

// The variant's alternatives are in AttrType's order.
static_assert(std::variant_size_v<Attribute> == 7);
AttrType type_of(const Attribute& a) { return AttrType(a.index()); }

std::string range_text(double min, double max) {
  if (max >= 1e300) return cat(">= ", int64_t(min));
  return cat("in [", int64_t(min), ", ", int64_t(max), "]");
}

// The first number of `a` outside [rule.min, rule.max], described; empty when all are inside.
std::string out_of_range(const Attribute& a, const AttrRule& rule) {
  if (rule.min <= -1e300 && rule.max >= 1e300) return "";
  auto check = [&](double v) { return v < rule.min || v > rule.max; };
  if (auto* i = std::get_if<int64_t>(&a); i && check(double(*i))) return cat(*i);
  if (auto* l = std::get_if<std::vector<int64_t>>(&a))
    for (size_t k = 0; k < l->size(); ++k)
      if (check(double((*l)[k]))) return cat((*l)[k], " (element ", k, ")");
  return "";
}

bool is_choice(const std::string& v, const char* choices) {
  const std::string list = std::string("|") + choices + "|";
  return list.find("|" + v + "|") != std::string::npos;
}

}  // namespace

const char* attr_type_name(AttrType t) {
  switch (t) {
    case AttrType::kInt:
      return "int";
    case AttrType::kFloat:
      return "float";
    case AttrType::kString:
      return "string";
    case AttrType::kInts:
      return "ints";
    case AttrType::kFloats:
      return "floats";
    case AttrType::kStrings:
      return "strings";
    case AttrType::kTensor:
      return "tensor";
  }
  return "?";
}

const OpSchema& op_schema(OpKind op) { return *kSchemas[size_t(op)]; }

std::vector<std::string> schema_violations(const Node& n) {
  const OpSchema& s = op_schema(n.op);
  std::vector<std::string> out;
  auto say = [&](auto&&... parts) { out.push_back(cat(n.label(), " (opset ", n.opset, "): ", parts...)); };
  const IoRule* io = nullptr;
  for (const IoRule& r : s.io)
    if (r.since <= n.opset) io = &r;
  if (!io) {
    say(op_name(n.op), " exists from opset ", s.io.front().since, " on");
    return out;
  }
  auto count = [&](const std::vector<int>& ids, int min, int max, const char* what) {
    const int got = int(ids.size());
    if (got < min || got > max)
      say("has ", got, " ", what, "s, expected ",
          max == kManyIo ? cat("at least ", min) : (min == max ? cat(min) : cat(min, " to ", max)));
    for (int i = 0; i < min && i < got; ++i)
      if (ids[size_t(i)] < 0) say(what, " #", i, " is required but its name is empty");
  };
  count(n.inputs, io->in_min, io->in_max, "input");
  count(n.outputs, io->out_min, io->out_max, "output");

  for (const auto& [name, value] : n.attrs) {
    const AttrRule* rule = nullptr;
    const AttrRule* other_opsets = nullptr;
    for (const AttrRule& r : s.attrs)
      if (name == r.name) (r.since <= n.opset && n.opset <= r.until ? rule : other_opsets) = &r;
    if (!rule) {
      if (other_opsets) {
        say("attribute '", name, "' belongs to opsets ", other_opsets->since, "..", other_opsets->until,
            " of ", op_name(n.op), ", not to opset ", n.opset);
      } else {
        std::string known;
        for (const AttrRule& r : s.attrs)
          if (r.since <= n.opset && n.opset <= r.until) known += cat(known.empty() ? "" : ", ", r.name);
        say("unknown attribute '", name, "' (", op_name(n.op), " has ", known.empty() ? "none" : known, ")");
      }
      continue;
    }
    if (type_of(value) != rule->type) {
      say("attribute '", name, "' must be ", attr_type_name(rule->type), ", found ",
          attr_type_name(type_of(value)));
      continue;
    }
    if (std::string bad = out_of_range(value, *rule); !bad.empty())
      say("attribute '", name, "' = ", bad, " is out of range: must be ", range_text(rule->min, rule->max));
    if (rule->choices)
      if (auto* v = std::get_if<std::string>(&value); v && !is_choice(*v, rule->choices))
        say("attribute '", name, "' = '", *v, "' is not one of ", rule->choices);
  }
  return out;
}

}  // namespace dlakit
