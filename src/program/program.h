// A compiled DLA program: what a dlakit loadable holds and what the runtime executes. Operations on the
// DLA's engines (named as in the open NVDLA documentation), each a short list of layer computations
// ("steps") with their numerics as data, reading and writing surfaces at fixed places in memory pools;
// constants pre-packed in the global DRAM pool; the cuDLA tensor descriptors of the task's buffers.
// The compiler (src/compiler) produces it, src/program serialises and verifies it, the executors
// (src/runtime) run it. Nothing here knows ONNX, placement or calibration.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "numerics/step.h"
#include "runtime/io_format.h"

namespace dlakit::prog {

inline constexpr uint32_t kFormatVersion = 2;

// The engine an operation runs on (dla-constraints.md §5.3; NVDLA firmware op types BDMA=0, CONV=1, SDP=2,
// PDP=3, CDP=4, RUBIK=5). kConv is the convolution pipeline with the SDP behind it.
enum class Engine : uint8_t { kBdma, kConv, kSdp, kPdp, kCdp, kRubik };
const char* engine_name(Engine e);  // "BDMA", "CONV", ...

// Where a surface lives. kInput/kOutput: the task's registered buffer of I/O tensor `io_index`.
enum class Pool : uint8_t { kGlobalDram, kLocalDram, kSram, kInput, kOutput };
const char* pool_name(Pool p);  // "global_dram", "local_dram", "sram", "input", "output"

// A tensor in DLA memory. `desc` gives its layout: format (chw16 for fp16 and chw32 for int8 inside the
// program, the I/O format for bound tensors), element type, strides in bytes, and its int8 scale.
// A view (parent >= 0) lies inside its parent's memory with the parent's strides: a Concat input
// written in place, or a Slice read in place (address aliasing).
struct Surface {
  rt::TensorDesc desc;
  Pool pool = Pool::kLocalDram;
  uint32_t io_index = 0;
  uint64_t offset = 0;  // bytes from the start of the pool (views: of the parent's pool)
  uint64_t bytes = 0;   // the span from offset that the surface touches
  int32_t parent = -1;
};

// A constant: weights, biases, scale factors and shape arguments, stored in the program's blob (the
// global DRAM pool) in the form its step reads: fp16 values (FP16 layers), int8 levels with one scale per
// output channel along `axis` (INT8 layers' weights), f32 (INT8 layers' other constants), i32/i64 (shape
// arguments such as Reshape's shape).
enum class ConstType : uint8_t { kF16, kF32, kI8, kI32, kI64 };
struct Constant {
  std::string name;
  ConstType type = ConstType::kF16;
  Shape shape;
  uint64_t offset = 0, bytes = 0;  // in Program::blob
  std::vector<float> scales;       // kI8
  int32_t axis = 0;                // kI8
};

// What a step reads or writes: a surface, a constant, or an fp32 value that stays inside the operation
// (a fused pipeline: the DLA keeps it in the SDP, never in memory), or nothing (an omitted input).
struct Ref {
  enum class Kind : uint8_t { kNone, kSurface, kConstant, kTemp };
  Kind kind = Kind::kNone;
  uint32_t index = 0;
};

// One layer's computation inside an operation: the layer it came from, its op and attributes (ONNX
// semantics, ops.def), its operands, the types of its results, and its numerics.
struct Step {
  std::string layer;
  OpKind op = OpKind::Identity;
  int opset = 0;
  std::map<std::string, Attribute> attrs;
  std::vector<Ref> inputs, outputs;
  std::vector<TensorType> out_types;
  numerics::StepRules rules;
};

// One operation on one engine. `macs`, `weight_bytes` and the bytes moved are the figures a latency model
// and users need; `reads`/`writes` are the surfaces it touches.
struct Op {
  Engine engine = Engine::kSdp;
  std::vector<Step> steps;
  std::vector<uint32_t> reads, writes;
  uint64_t macs = 0, weight_bytes = 0, read_bytes = 0, write_bytes = 0;
};

// A layer that needs no operation: its output is a view of memory another operation writes or reads
// (Concat along channels, Slice along channels, a Reshape that keeps the layout, Identity).
struct Alias {
  std::string layer;
  OpKind op = OpKind::Identity;
  uint32_t surface = 0;  // its output surface
};

// Bytes per pool: the budget (trtexec's --memPoolSize) and what the program uses at its peak.
struct PoolUse {
  uint64_t budget = 0, used = 0;
};

struct Program {
  std::string producer, target, dla_version;
  bool int8 = false;
  int32_t dla_core = 0;
  std::vector<uint32_t> inputs, outputs;  // surfaces bound to the task's buffers, in descriptor order
  std::vector<Surface> surfaces;
  std::vector<Constant> constants;
  std::vector<uint8_t> blob;  // the constants' bytes
  std::vector<Op> ops;
  std::vector<Alias> aliases;
  PoolUse sram, local_dram, global_dram;
  uint32_t layers = 0;  // source layers (steps + aliases)
  uint64_t macs = 0;

  const rt::TensorDesc& input_desc(size_t i) const { return surfaces[inputs[i]].desc; }
  const rt::TensorDesc& output_desc(size_t i) const { return surfaces[outputs[i]].desc; }
};

}  // namespace dlakit::prog
