// Self-contained HTML reports (no network): one page skeleton and one renderer for every report. The
// page data is JSON embedded in the file; the renderer draws the layers in order as coloured boxes
// grouped in runs of one segment (device runs coloured, DLA<->GPU transitions marked), a details panel
// per layer (click, or #layer=NAME in the URL), the facts and the verdict on top, and any extra sections.
// Colouring: by the categorical fields the data names, or by any field that is a number in every layer
// (so a per-layer number added to a report's JSON, e.g. a predicted time, can be picked with no change
// here).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace dlakit::report {

// `page` fields the renderer reads:
//   title, facts: [[label, value]...], verdict?: {good: bool, text}, recommendation?: str,
//   layers: [objects], name_key ("name"), group_key? (a layer field naming its segment), device_key?,
//   categorical: [field names to colour by], colour_default: field name, numeric_skip: [fields that are
//   numbers but not measures], groups?: [{id, device, ...}], remarks?: [{pass, node, applied, message}].
// `extra_html` (trusted, already escaped) goes below the network picture.
std::string html_page(const nlohmann::json& page, const std::string& extra_html = "");

std::string escape_html(const std::string& s);

}  // namespace dlakit::report
