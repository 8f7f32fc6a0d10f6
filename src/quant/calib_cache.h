// Dynamic ranges per tensor, and TensorRT's calibration cache text format (dla-constraints.md §4.5):
//   TRT-<version>-EntropyCalibration2
//   <tensor name>: <IEEE-754 float32 bits of the scale, unpadded lowercase hex>
// Names may contain ": " themselves, so a line splits at its last ": ". scale = amax / 127.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace dlakit::quant {

struct ScaleTable {
  // Activation scale per tensor name (amax / 127), in the order it was read or calibrated. The scale, not
  // the range, is stored so a cache read and written again keeps every bit.
  std::vector<std::pair<std::string, float>> scales;
  // Per-output-channel weight scales per weight tensor name (from Q/DQ models; calibration leaves it
  // empty and the weights' own max|w| / 127 is used).
  std::map<std::string, std::vector<float>> weight_scales;
  // Header fields; `algorithm` records what produced the ranges.
  int trt_version = 100300;  // TensorRT 10.3 (JetPack 6.1/6.2 on Orin)
  std::string algorithm = "EntropyCalibration2";

  const float* find_scale(const std::string& name) const;
  void set_scale(const std::string& name, float scale);  // replaces or appends
  void set_amax(const std::string& name, float amax) { set_scale(name, amax > 0 ? amax / 127.0f : 0.f); }
};

// Parses a cache; errors name the line, the text and what was expected. Never crashes (fuzzed).
ScaleTable parse_calib_cache(const std::string& text, const std::string& source = "calibration cache");
ScaleTable read_calib_cache(const std::string& path);
// Always writes the EntropyCalibration2 header: trtexec --calib and the DLA expect it, whatever
// dlakit calibrator produced the ranges.
std::string format_calib_cache(const ScaleTable& t);
void write_calib_cache(const std::string& path, const ScaleTable& t);

// "3c010204" <-> 0.0078740157f (float32 bit patterns).
std::string scale_to_hex(float scale);

}  // namespace dlakit::quant
