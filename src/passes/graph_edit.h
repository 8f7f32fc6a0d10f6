// Small graph-editing helpers for passes.
#pragma once
#include <set>
#include <string>

#include "ir/graph.h"

namespace dlakit {

// Makes every reader of `from` (nodes and graph outputs) read `to` instead.
void replace_uses(Graph& g, int from, int to);
// Removes the nodes whose indices are in `drop`, keeping the order of the rest.
void remove_nodes(Graph& g, const std::set<int>& drop);
// A new value name that does not exist yet, derived from `base`.
std::string fresh_name(const Graph& g, const std::string& base);

}  // namespace dlakit
