// NumPy .npy (format 1.0/2.0/3.0) read and write for the IR's dtypes, little-endian, C order.
#pragma once
#include <string>

#include "ir/tensor.h"

namespace dlakit {

Tensor read_npy(const std::string& path);
Tensor parse_npy(const std::string& bytes, const std::string& origin);
void write_npy(const std::string& path, const Tensor& t);
std::string serialize_npy(const Tensor& t);

}  // namespace dlakit
