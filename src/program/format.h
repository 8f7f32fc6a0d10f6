// The loadable file (format version 2, src/program/program.fbs): a compiled program written as
// FlatBuffers, and read back with every field verified before anything runs. Corrupt, truncated, foreign
// and other-version files are errors that say which, never crashes.
#pragma once
#include <cstdint>
#include <string>

#include "program/program.h"

namespace dlakit::prog {

std::string serialize(const Program& p);

// Verifies and reads a loadable. Throws Error(kParseError / kUnsupported) naming `origin` and the fault.
Program deserialize(const uint8_t* data, size_t size, const std::string& origin = "<memory>");

// The checks deserialize runs on the program itself (sizes, pools, references, data flow), for programs
// built in memory too.
void verify(const Program& p, const std::string& origin);

}  // namespace dlakit::prog
