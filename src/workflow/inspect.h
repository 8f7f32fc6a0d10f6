// What `dlakit inspect` reports (placement, then each DLA segment's compiled program), as JSON and text.
// The CLI and the Python module both call these, so their reports are the same.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "ir/graph.h"
#include "placement/placement.h"

namespace dlakit::workflow {

nlohmann::json inspect_json(const Graph& g, const Placement& p);
std::string inspect_text(const Graph& g, const Placement& p);

}  // namespace dlakit::workflow
