// What `dlakit build` produces, as bytes: a standalone placement becomes one DLA loadable (FP16, or INT8
// with scales), a GPU-fallback placement a hybrid plan. The CLI and the Python module both call this, so
// `dlakit.build(...)` returns the bytes `dlakit build` writes.
#pragma once
#include <string>

#include "compiler/memory_plan.h"
#include "quant/calib_cache.h"
#include "quant/numerics.h"
#include "workflow/placed_model.h"

namespace dlakit::workflow {

struct BuildOptions {
  bool int8 = false;
  const quant::ScaleTable* calib = nullptr;   // INT8 ranges (a calibration cache); wins over a Q/DQ model's
  std::string input_formats, output_formats;  // trtexec's --inputIOFormats / --outputIOFormats syntax
  std::string mem_pool_sizes;                 // trtexec's --memPoolSize syntax ("" = the chip's pools)
};

struct BuiltEngine {
  std::string bytes;
  bool is_plan = false;
  int int8_layers = 0;           // layers that run INT8
  quant::NumericsPlan numerics;  // a loadable's INT8 plan (empty otherwise)
};

// The INT8 scales: the Q/DQ model's, then the calibration cache's (which wins). Throws when there are none.
quant::ScaleTable int8_scales(const quant::ScaleTable& qdq, const quant::ScaleTable* calib);

// pm.placement's mode decides: "standalone" -> loadable, "fallback" -> hybrid plan (I/O formats ignored:
// plan segments use fp16:chw16).
BuiltEngine build_engine(const PlacedModel& pm, const BuildOptions& o);

}  // namespace dlakit::workflow
