#include "io/npy.h"

#include "base/checked.h"
#include "base/file.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

namespace dlakit {
namespace {

const char* descr(DType t) {
  switch (t) {
    case DType::kF32:
      return "<f4";
    case DType::kF16:
      return "<f2";
    case DType::kI8:
      return "|i1";
    case DType::kU8:
      return "|u1";
    case DType::kI32:
      return "<i4";
    case DType::kI64:
      return "<i8";
    case DType::kBool:
      return "|b1";
  }
  return "";
}

// Value of `key` in the header dict, as its raw text.
std::string field(const std::string& h, const std::string& key, const std::string& origin) {
  size_t k = h.find("'" + key + "'");
  if (k == std::string::npos) fail(Status::kParseError, origin, ": .npy header has no '", key, "'");
  size_t colon = h.find(':', k);
  if (colon == std::string::npos) fail(Status::kParseError, origin, ": malformed .npy header");
  size_t v = h.find_first_not_of(' ', colon + 1);
  if (v == std::string::npos) fail(Status::kParseError, origin, ": malformed .npy header");
  if (h[v] == '(') {
    const size_t close = h.find(')', v);
    if (close == std::string::npos)
      fail(Status::kParseError, origin, ": .npy header's '", key, "' tuple is not closed");
    return h.substr(v, close - v + 1);
  }
  const size_t end = h.find_first_of(",}", v);
  if (end == std::string::npos || end == v)
    fail(Status::kParseError, origin, ": .npy header's '", key, "' has no value");
  return h.substr(v, end - v);
}

}  // namespace

Tensor parse_npy(const std::string& b, const std::string& origin) {
  if (b.size() < 10 || b.compare(0, 6, "\x93NUMPY") != 0)
    fail(Status::kParseError, origin, ": not a .npy file (missing the \\x93NUMPY magic)");
  const int major = uint8_t(b[6]);
  size_t hlen, off;
  if (major == 1) {
    hlen = uint8_t(b[8]) | size_t(uint8_t(b[9])) << 8;
    off = 10;
  } else if (major == 2 || major == 3) {
    if (b.size() < 12) fail(Status::kParseError, origin, ": truncated .npy header");
    hlen = uint8_t(b[8]) | size_t(uint8_t(b[9])) << 8 | size_t(uint8_t(b[10])) << 16 |
           size_t(uint8_t(b[11])) << 24;
    off = 12;
  } else {
    fail(Status::kParseError, origin, ": unsupported .npy version ", major);
  }
  if (off + hlen > b.size()) fail(Status::kParseError, origin, ": truncated .npy header");
  const std::string h = b.substr(off, hlen);
  std::string d = field(h, "descr", origin);
  d.erase(std::remove(d.begin(), d.end(), '\''), d.end());
  std::optional<DType> dt;
  for (DType t : {DType::kF32, DType::kF16, DType::kI8, DType::kU8, DType::kI32, DType::kI64, DType::kBool})
    if (d == descr(t) || (d.size() == 3 && d[0] == '=' && d.substr(1) == std::string(descr(t)).substr(1)))
      dt = t;
  if (!dt)
    fail(Status::kUnsupported, origin, ": .npy dtype '", d,
         "' (supported: float32, float16, int8, uint8, int32, int64, bool; little-endian)");
  if (field(h, "fortran_order", origin).find("True") != std::string::npos)
    fail(Status::kUnsupported, origin,
         ": Fortran-ordered .npy arrays are not supported (save with np.ascontiguousarray)");
  std::string sh = field(h, "shape", origin);
  if (sh.size() < 2 || sh.front() != '(' || sh.back() != ')')
    fail(Status::kParseError, origin, ": .npy shape '", sh, "' is not a tuple");
  Shape shape;
  std::stringstream ss(sh.substr(1, sh.size() - 2));
  std::string item;
  while (std::getline(ss, item, ',')) {
    item.erase(0, item.find_first_not_of(' '));
    if (item.empty()) continue;
    char* end = nullptr;
    long long v = std::strtoll(item.c_str(), &end, 10);
    if (v < 0 || (*end && *end != 'L' && *end != ' '))
      fail(Status::kParseError, origin, ": bad .npy shape ", sh);
    shape.push_back(v);
  }
  const size_t data_off = off + hlen;
  const int64_t count = checked_numel(shape, kMaxElements, origin + ": .npy array", Status::kParseError);
  const size_t need = size_t(count) * dtype_size(*dt);  // kMaxElements * 8 fits in size_t
  if (b.size() - data_off != need)
    fail(Status::kParseError, origin, ": .npy holds ", b.size() - data_off, " data bytes, shape ", sh,
         " needs ", need);
  Tensor t(*dt, shape);
  if (need) std::memcpy(t.raw(), b.data() + data_off, need);
  return t;
}

Tensor read_npy(const std::string& path) { return parse_npy(read_file(path), path); }

std::string serialize_npy(const Tensor& t) {
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i)
    shape +=
        std::to_string(t.shape()[i]) + (t.shape().size() == 1 ? "," : (i + 1 < t.shape().size() ? ", " : ""));
  shape += ")";
  std::string h = cat("{'descr': '", descr(t.dtype()), "', 'fortran_order': False, 'shape': ", shape, ", }");
  const size_t total = 10 + h.size() + 1;
  h.append((64 - total % 64) % 64, ' ');
  h += '\n';
  std::string out = "\x93NUMPY";
  out += char(1);
  out += char(0);
  out += char(h.size() & 0xff);
  out += char(h.size() >> 8);
  out += h;
  out.append(static_cast<const char*>(t.raw()), t.nbytes());
  return out;
}

void write_npy(const std::string& path, const Tensor& t) {
  std::ofstream f(path, std::ios::binary);
  if (!f) fail(Status::kIoError, "cannot write '", path, "'");
  const std::string b = serialize_npy(t);
  f.write(b.data(), std::streamsize(b.size()));
  if (!f) fail(Status::kIoError, "error writing '", path, "'");
}

}  // namespace dlakit
