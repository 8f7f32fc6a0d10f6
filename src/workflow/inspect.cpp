#include "workflow/inspect.h"

#include "base/error.h"
#include "loadable/plan.h"
#include "program/format.h"
#include "program/print.h"

namespace dlakit::workflow {
namespace {

// Each DLA segment compiled as `dlakit build --allowGPUFallback` would (FP16 without a calibration): its
// hardware operations and what it needs of each memory pool. Empty, with the reason, when it cannot compile.
nlohmann::json dla_programs(const Graph& g, const Placement& p, std::string& why_not) {
  nlohmann::json out = nlohmann::json::array();
  try {
    const std::string bytes = write_plan(g, p);
    const PlanContents c = read_plan(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    for (size_t k = 0; k < c.segments.size(); ++k) {
      if (!c.segments[k].dla) continue;
      const std::string& b = c.segments[k].payload;
      const prog::Program prog = prog::deserialize(reinterpret_cast<const uint8_t*>(b.data()), b.size());
      out.push_back({{"segment", k},
                     {"operations", prog.ops.size()},
                     {"engines", prog::engine_counts(prog)},
                     {"sram_bytes", prog.sram.used},
                     {"sram_budget", prog.sram.budget},
                     {"local_dram_bytes", prog.local_dram.used},
                     {"summary", prog::summary(prog)}});
    }
  } catch (const Error& e) {
    why_not = e.what();
  }
  return out;
}

}  // namespace

nlohmann::json inspect_json(const Graph& g, const Placement& p) {
  nlohmann::json j = placement_json(g, p);
  std::string why_not;
  j["dla_programs"] = dla_programs(g, p, why_not);
  if (!why_not.empty()) j["dla_programs_error"] = why_not;
  return j;
}

std::string inspect_text(const Graph& g, const Placement& p) {
  std::string t = placement_text(g, p);
  std::string why_not;
  const nlohmann::json programs = dla_programs(g, p, why_not);
  t += "DLA programs (each DLA segment compiled as `dlakit build` would, FP16 without a calibration; "
       "`dlakit info --dump program` shows one whole):\n";
  for (const auto& q : programs)
    t += "  segment " + std::to_string(q["segment"].get<size_t>()) + ": " + q["summary"].get<std::string>();
  if (!why_not.empty()) t += "  not compiled: " + why_not + "\n";
  return t;
}

}  // namespace dlakit::workflow
