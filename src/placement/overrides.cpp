#include "placement/overrides.h"

#include <nlohmann/json.hpp>

namespace dlakit {

void add_overrides_json(const std::string& text, const std::string& origin, PlacementOptions& o) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(Status::kParseError, origin, ": not valid JSON (", e.what(), ")");
  }
  if (!j.is_object())
    fail(Status::kParseError, origin,
         ": expected a JSON object with \"layerDeviceTypes\" and/or \"layerPrecisions\"");
  auto str = [&](const char* key) {
    if (!j.contains(key)) return std::string();
    if (!j[key].is_string()) fail(Status::kParseError, origin, ": '", key, "' must be a string");
    return j[key].get<std::string>();
  };
  for (auto& x : parse_device_overrides(str("layerDeviceTypes"))) o.layer_devices.push_back(x);
  for (auto& x : parse_precision_overrides(str("layerPrecisions"))) o.layer_precisions.push_back(x);
}

}  // namespace dlakit
