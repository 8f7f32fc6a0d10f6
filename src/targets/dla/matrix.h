// The DLA support matrix (op x chip x precision, with limits), generated from ops.def and the limit tables.
#pragma once
#include <string>

namespace dlakit::dla {
std::string support_matrix_markdown();
}  // namespace dlakit::dla
