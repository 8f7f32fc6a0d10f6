// Clocks, memory bandwidth and GPU peaks per chip and power mode, each with its source
// (../shared/specs/dla-performance.md "Hardware facts" and dla-constraints.md §5.1), and the published
// power figures the reports may quote.
#pragma once
#include <string>
#include <vector>

namespace dlakit::latency {

struct PowerMode {
  std::string name;   // "MAXN", "50W", "30W", "15W"
  double dla_hz = 0;  // per-core DLA clock
  double dram_bytes_per_s = 0;
  double gpu_int8_ops = 0;    // GPU dense INT8 peak, ops/s (2 per MAC)
  double gpu_fp16_flops = 0;  // GPU dense FP16 peak
  double budget_w = 0;        // the mode's module power budget; 0 for MAXN (no cap)
  // Published DLA-vs-GPU perf/W ratio range over NVIDIA's dense benchmark rows (0 = not published).
  double perf_per_watt_lo = 0, perf_per_watt_hi = 0;
  std::string clock_source, memory_source, gpu_source;
};

struct Chip {
  std::string target;  // "orin" | "xavier"
  int cores = 2;
  long long sram_bytes = 0;  // per core as the model uses it (Xavier: 4 MiB shared by 2 DLAs, 2 PVAs)
  int int8_macs_per_cycle = 0, fp16_macs_per_cycle = 0;
  std::string int8_macs_source, fp16_macs_source;
  std::vector<PowerMode> modes;
};

const Chip& chip_for(const std::string& target);  // error names the valid targets
// Case-insensitive ("maxn", "15w"); the error lists the chip's modes.
const PowerMode& power_mode(const Chip& chip, const std::string& name);

}  // namespace dlakit::latency
