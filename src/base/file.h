// Whole-file reading shared by every loader (ONNX, .npy, loadables, the CLI).
#pragma once
#include <string>

namespace dlakit {
// The file's bytes; an IoError names the path when it cannot be opened or read.
std::string read_file(const std::string& path);
}  // namespace dlakit
