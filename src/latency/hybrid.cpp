#include "latency/hybrid.h"

#include <algorithm>

namespace dlakit::latency {

double gpu_time_us(const GpuWork& w, const PowerMode& mode, const ModelParams& params) {
  const double peak = w.precision == OpPrecision::kInt8 ? mode.gpu_int8_ops : mode.gpu_fp16_flops;
  const double compute = peak > 0 ? w.ops / peak : 0, memory = w.bytes / mode.dram_bytes_per_s;
  return std::max(compute, memory) * 1e6 + params.gpu_launch_us;
}

double reformat_us(double bytes_in, double bytes_out, const PowerMode& mode, const ModelParams& params) {
  return (bytes_in + bytes_out) / mode.dram_bytes_per_s * 1e6 + params.gpu_launch_us;
}

}  // namespace dlakit::latency
