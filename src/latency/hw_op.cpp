#include "latency/hw_op.h"

#include "base/error.h"

namespace dlakit::latency {

const char* engine_name(Engine e) {
  switch (e) {
    case Engine::kConv:
      return "conv";
    case Engine::kSdp:
      return "sdp";
    case Engine::kPdp:
      return "pdp";
    case Engine::kCdp:
      return "cdp";
    case Engine::kRubik:
      return "rubik";
    case Engine::kBdma:
      return "bdma";
  }
  return "?";
}

const char* precision_name(OpPrecision p) { return p == OpPrecision::kInt8 ? "int8" : "fp16"; }

void validate(const HwOp& op) {
  const std::string what =
      std::string(engine_name(op.engine)) + " operation '" + (op.layers.empty() ? "?" : op.layers[0]) + "'";
  auto positive = [&](const char* field, int64_t v) {
    if (v < 1) fail(Status::kInvalidArgument, what, ": ", field, " = ", v, " (must be >= 1)");
  };
  auto non_negative = [&](const char* field, int64_t v) {
    if (v < 0) fail(Status::kInvalidArgument, what, ": ", field, " = ", v, " (must be >= 0)");
  };
  for (const auto& [name, d] : {std::pair{"input", op.input}, std::pair{"output", op.output}}) {
    positive((std::string(name) + ".n").c_str(), d.n);
    positive((std::string(name) + ".c").c_str(), d.c);
    positive((std::string(name) + ".h").c_str(), d.h);
    positive((std::string(name) + ".w").c_str(), d.w);
  }
  positive("kernel_h", op.kernel_h), positive("kernel_w", op.kernel_w);
  positive("stride_h", op.stride_h), positive("stride_w", op.stride_w);
  positive("dilation_h", op.dilation_h), positive("dilation_w", op.dilation_w);
  positive("groups", op.groups), positive("element_passes", op.element_passes);
  if (op.engine == Engine::kConv && (op.input.c % op.groups != 0 || op.output.c % op.groups != 0))
    fail(Status::kInvalidArgument, what, ": groups = ", op.groups, " does not divide the input (", op.input.c,
         ") and output (", op.output.c, ") channels");
  non_negative("macs", op.macs), non_negative("weight_bytes", op.weight_bytes);
  non_negative("dram_read", op.dram_read), non_negative("dram_written", op.dram_written);
  non_negative("sram_read", op.sram_read), non_negative("sram_written", op.sram_written);
}

}  // namespace dlakit::latency
