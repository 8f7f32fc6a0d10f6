#include "base/file.h"

#include <fstream>
#include <iterator>

#include "base/error.h"

namespace dlakit {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(Status::kIoError, "cannot open '", path, "'");
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) fail(Status::kIoError, "error reading '", path, "'");
  return bytes;
}

}  // namespace dlakit
