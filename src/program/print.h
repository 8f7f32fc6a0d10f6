// Readable views of a compiled program: a short summary (what `dlakit build` prints), the whole program
// as text (`dlakit info model.dla --dump program`) and as JSON (`dlakit info model.dla --json`).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "program/program.h"

namespace dlakit::prog {

std::string summary(const Program& p);
std::string to_text(const Program& p);
nlohmann::json to_json(const Program& p);

// Operations per engine, e.g. "CONV 20, SDP 3, PDP 2".
std::string engine_counts(const Program& p);

}  // namespace dlakit::prog
