#include "quant/calib_cache.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>

#include "base/error.h"
#include "base/file.h"
#include "numerics/quantize.h"

namespace dlakit::quant {

const float* ScaleTable::find_scale(const std::string& name) const {
  for (auto& [n, a] : scales)
    if (n == name) return &a;
  return nullptr;
}

void ScaleTable::set_scale(const std::string& name, float scale) {
  for (auto& [n, a] : scales)
    if (n == name) {
      a = scale;
      return;
    }
  scales.emplace_back(name, scale);
}

std::string scale_to_hex(float scale) {
  uint32_t bits;
  std::memcpy(&bits, &scale, 4);
  char buf[16];
  std::snprintf(buf, sizeof buf, "%x", bits);
  return buf;
}

namespace {
std::string shown(const std::string& s) { return s.size() > 60 ? s.substr(0, 60) + "..." : s; }
}  // namespace

ScaleTable parse_calib_cache(const std::string& text, const std::string& source) {
  ScaleTable t;
  std::set<std::string> seen;
  int line_no = 0;
  bool header = false;
  for (const std::string& line : split_lines(text)) {
    ++line_no;
    if (line.empty()) continue;
    auto where = [&] { return source + ":" + std::to_string(line_no); };
    if (!header) {
      // TRT-<digits>-<Algorithm>
      const size_t dash = line.find('-', 4);
      if (line.rfind("TRT-", 0) != 0 || dash == std::string::npos || dash == 4 || dash + 1 >= line.size())
        fail(Status::kParseError, where(), ": expected the header 'TRT-<version>-<Algorithm>' (e.g. ",
             "TRT-100300-EntropyCalibration2), found '", shown(line), "'");
      const std::string ver = line.substr(4, dash - 4);
      if (ver.size() > 9 || ver.find_first_not_of("0123456789") != std::string::npos)
        fail(Status::kParseError, where(), ": the version in the header must be digits, found '", shown(ver),
             "'");
      t.trt_version = std::stoi(ver);
      t.algorithm = line.substr(dash + 1);
      header = true;
      continue;
    }
    const size_t colon = line.rfind(": ");
    if (colon == std::string::npos || colon == 0)
      fail(Status::kParseError, where(), ": expected '<tensor name>: <hex scale>', found '", shown(line),
           "'");
    const std::string name = line.substr(0, colon), hex = line.substr(colon + 2);
    if (hex.empty() || hex.size() > 8 || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
      fail(Status::kParseError, where(), ": the scale of '", shown(name),
           "' must be the float32 bits as 1 to 8 hex digits, found '", shown(hex), "'");
    const uint32_t bits = uint32_t(std::stoul(hex, nullptr, 16));
    float scale;
    std::memcpy(&scale, &bits, 4);
    if (!std::isfinite(scale) || scale < 0)
      fail(Status::kParseError, where(), ": the scale of '", shown(name), "' is ", scale, " (bits ", hex,
           "); scales are finite and >= 0");
    if (!seen.insert(name).second)
      fail(Status::kParseError, where(), ": tensor '", shown(name), "' appears twice");
    t.scales.emplace_back(name, scale);
  }
  if (!header) fail(Status::kParseError, source, ": empty; a cache starts with 'TRT-<version>-<Algorithm>'");
  return t;
}

ScaleTable read_calib_cache(const std::string& path) { return parse_calib_cache(read_file(path), path); }

std::string format_calib_cache(const ScaleTable& t) {
  std::string s = "TRT-" + std::to_string(t.trt_version) + "-EntropyCalibration2\n";
  for (auto& [name, scale] : t.scales) s += name + ": " + scale_to_hex(scale) + "\n";
  return s;
}

void write_calib_cache(const std::string& path, const ScaleTable& t) {
  write_file(path, format_calib_cache(t));
}

}  // namespace dlakit::quant
