// Whole-file reading shared by every loader (ONNX, .npy, loadables, the CLI).
#pragma once
#include <string>
#include <vector>

namespace dlakit {
// The file's bytes; an IoError names the path when it cannot be opened or read.
std::string read_file(const std::string& path);
// Writes `bytes` as the whole file; an IoError names the path when it cannot be written.
void write_file(const std::string& path, const std::string& bytes);
// The lines of a text: split at '\n', a trailing '\r' dropped from each; a final newline adds no line.
std::vector<std::string> split_lines(const std::string& text);
}  // namespace dlakit
