// The overrides file (`--overrides fix.json`, as `dlakit compare --fix --apply` writes it): a JSON object
// whose optional "layerDeviceTypes" and "layerPrecisions" strings use trtexec's NAME:VALUE syntax.
#pragma once
#include <string>

#include "placement/placement.h"

namespace dlakit {

// Appends the file's rules after those already in `o` (the command line's come first: first match wins).
// A file that is not a JSON object of strings is a ParseError naming `origin`; bad rules are
// InvalidArgument, as on the command line.
void add_overrides_json(const std::string& text, const std::string& origin, PlacementOptions& o);

}  // namespace dlakit
