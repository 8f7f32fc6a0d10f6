#include "latency/chip.h"

#include <algorithm>

#include "base/error.h"
#include "targets/dla/limits.h"

namespace dlakit::latency {
namespace {

constexpr double kMHz = 1e6, kGBs = 1e9, kTera = 1e12;

// AGX Orin 64GB: 204.8 GB/s LPDDR5 at EMC 3199 MHz; 15W caps EMC at 2133 MHz (dla-performance.md).
constexpr double kOrinDram = 204.8 * kGBs;

PowerMode orin_mode(const char* name, double dla_mhz, double emc_mhz, double gpu_sparse_int8_tops,
                    double budget, double ppw_lo, double ppw_hi, const char* clock_source,
                    const char* memory_source) {
  PowerMode m;
  m.name = name;
  m.dla_hz = dla_mhz * kMHz;
  m.dram_bytes_per_s = kOrinDram * emc_mhz / 3199.0;
  // Dense = sparse / 2; Ampere's tensor cores do half as many FP16 as INT8 operations.
  m.gpu_int8_ops = gpu_sparse_int8_tops / 2 * kTera;
  m.gpu_fp16_flops = m.gpu_int8_ops / 2;
  m.budget_w = budget;
  m.perf_per_watt_lo = ppw_lo, m.perf_per_watt_hi = ppw_hi;
  m.clock_source = clock_source;
  m.memory_source = memory_source;
  m.gpu_source =
      "GPU sparse INT8 TOPS per mode (NVIDIA DLA-SW README, dla-constraints.md 5.1); dense = sparse / 2, "
      "FP16 = INT8 / 2 (derived)";
  return m;
}

Chip make_orin() {
  Chip c;
  c.target = "orin";
  c.cores = int(dla::orin_limits().cores);
  c.sram_bytes = dla::orin_limits().sram_bytes;
  c.int8_macs_per_cycle = 8192;
  // "Up to 2x slower than Xavier" in FP16: Xavier's 1024 FP16 MACs/cycle x 1395.2/1600 MHz / 2 = 446,
  // rounded up to the next power of two (MAC arrays come in powers of two).
  c.fp16_macs_per_cycle = 512;
  c.int8_macs_source =
      "105 sparse TOPS / 2 cores / 2 (sparsity) / 2 ops per MAC / 1.6 GHz (dla-performance.md)";
  c.fp16_macs_source =
      "'up to 2x slower than Xavier' (DOC85): Xavier's 1024 x 1395.2/1600 MHz / 2 = 446, rounded up to a "
      "power "
      "of two (the rounding is an assumption)";
  const char* emc_max = "EMC 3199 MHz = 204.8 GB/s (module spec; dla-performance.md)";
  // DLA-SW perf/W table, dense rows: MAXN 3.5-4.3, 50W 2.9-3.7, 30W 2.6-3.4, 15W 3.9-5.0.
  c.modes = {
      orin_mode("MAXN", 1600, 3199, 171, 0, 3.5, 4.3, "1600 MHz (NVIDIA MLPerf configs, nvpmodel)", emc_max),
      orin_mode("50W", 1600.0 * 92 / 105, 3199, 109, 50, 2.9, 3.7,
                "about 1402 MHz, derived from the TOPS table (92/105 x 1600); not published",
                "EMC 3199 MHz assumed (no cap published for 50W)"),
      orin_mode("30W", 1369.6, 3199, 41, 30, 2.6, 3.4, "1369.6 MHz (nvpmodel)",
                "EMC 3199 MHz (nvpmodel MODE_30W range 204-3199 MHz, secondary source)"),
      orin_mode("15W", 614.4, 2133, 14, 15, 3.9, 5.0, "614.4 MHz (nvpmodel)",
                "EMC capped at 2133 MHz = 136.5 GB/s (nvpmodel; derived bandwidth)"),
  };
  return c;
}

Chip make_xavier() {
  Chip c;
  c.target = "xavier";
  c.cores = int(dla::xavier_limits().cores);
  // 4 MiB shared by 2 DLAs and 2 PVAs: the model gives each core a quarter (assumption).
  c.sram_bytes = dla::xavier_limits().sram_bytes / 4;
  c.int8_macs_per_cycle = 2048;  // open NVDLA nv_full (nvdla/hw README)
  c.fp16_macs_per_cycle = 1024;
  c.int8_macs_source = c.fp16_macs_source = "open NVDLA nv_full (nvdla/hw; dla-performance.md)";
  PowerMode m;
  m.name = "MAXN";
  m.dla_hz = 1395.2 * kMHz;
  m.dram_bytes_per_s = 136.5 * kGBs;
  // AGX Xavier GPU: 22 INT8 TOPS / 11 FP16 TFLOPS dense (NVIDIA's module page; not in the specs).
  m.gpu_int8_ops = 22 * kTera;
  m.gpu_fp16_flops = 11 * kTera;
  m.clock_source = "1395.2 MHz (jetson_benchmarks, AGX Xavier nafll_dla max_rate)";
  m.memory_source = "136.5 GB/s (dla-performance.md)";
  m.gpu_source = "NVIDIA AGX Xavier module page (secondary; assumption)";
  c.modes = {m};
  return c;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
  return s;
}

}  // namespace

const Chip& chip_for(const std::string& target) {
  static const Chip orin = make_orin(), xavier = make_xavier();
  if (target == "orin") return orin;
  if (target == "xavier") return xavier;
  fail(Status::kInvalidArgument, "latency model: unknown target '", target, "' (orin or xavier)");
}

const PowerMode& power_mode(const Chip& chip, const std::string& name) {
  std::string valid;
  for (const PowerMode& m : chip.modes) {
    if (lower(m.name) == lower(name)) return m;
    valid += (valid.empty() ? "" : ", ") + m.name;
  }
  fail(Status::kInvalidArgument, "--power-mode '", name, "' is not a power mode of ", chip.target, " (",
       valid, ")");
}

}  // namespace dlakit::latency
