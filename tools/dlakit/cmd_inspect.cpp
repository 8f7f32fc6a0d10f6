// dlakit inspect MODEL: per-layer DLA capability with reasons and fixes, segments, summary.
// Exit status: 0 when a standalone (single DLA graph) build is possible, 3 when it is not, 1 on errors.
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "base/error.h"
#include "cli.h"
#include "latency/predict.h"
#include "loadable/plan.h"
#include "placement/overrides.h"
#include "placement/placement.h"
#include "program/format.h"
#include "program/print.h"
#include "quant/qdq.h"
#include "report/inspect_html.h"
#include "runtime/io_format.h"
#include "targets/dla/matrix.h"
#include "workflow/inspect.h"

namespace dlakit::cli {

PlacementFlags::PlacementFlags() = default;

void PlacementFlags::add(CLI::App& app) {
  app.add_option("--target", target, "DLA chip: orin (DLA 2.0, default) or xavier (DLA 1.0)")
      ->check(CLI::IsMember({"orin", "xavier"}));
  app.add_flag("--standalone,--buildDLAStandalone", standalone,
               "The whole network must be one DLA graph (cuDLA); else one error listing every offender");
  app.add_flag("--fallback,--allowGPUFallback", fallback,
               "Run unsupported layers on the GPU: a hybrid plan. inspect, calibrate and compare place this "
               "way unless given --standalone; build makes one DLA loadable (--buildDLAStandalone) unless "
               "given this");
  app.add_flag("--int8", int8, "Default DLA precision INT8 (default FP16)");
  app.add_flag("--fp16", fp16, "Default DLA precision FP16 (the default)");
  app.add_option("--useDLACore", dla_core, "DLA core 0 or 1")->check(CLI::Range(0, 1));
  app.add_option("--layerDeviceTypes", layer_devices,
                 "Per-layer device, trtexec style: name:GPU|DLA[,...]; names may use * and ?");
  app.add_option("--layerPrecisions", layer_precisions,
                 "Per-layer precision: name:fp16|int8[,...]; names may use * and ?");
  app.add_option("--overrides", overrides_file,
                 "JSON file with layerPrecisions / layerDeviceTypes strings (what `dlakit compare --fix "
                 "--apply` writes); flags given on the command line win");
  app.add_option("--opDeviceTypes", op_devices, "Per-op-type device: Conv:GPU,Softmax:DLA");
  app.add_option("--opPrecisions", op_precisions, "Per-op-type precision: Sigmoid:fp16");
  std::string names;
  for (const std::string& n : pass_names()) names += (names.empty() ? "" : ", ") + n;
  app.add_option("--disable-pass", disabled_passes,
                 "Skip a graph pass or one of adjust-for-dla's rewrites (repeatable): " + names);
  app.add_flag("--no-passes", no_passes, "Skip every graph pass");
  app.add_flag("--no-adjust-for-dla", no_adjust_for_dla,
               "Keep the layers as imported: no DLA rewrites (same as --disable-pass adjust-for-dla)");
  app.add_flag("--adjustForDLA", adjust_for_dla,
               "trtexec's opt-in flag, accepted: dlakit applies its exact DLA rewrites by default and lists "
               "each under remarks");
}

PlacementOptions PlacementFlags::options() const {
  if (standalone && fallback)
    fail(Status::kInvalidArgument,
         "--standalone and --fallback contradict each other (trtexec forbids it too)");
  if (int8 && fp16) fail(Status::kInvalidArgument, "choose one of --int8 and --fp16");
  workflow::PlacementRequest r;
  r.target = target;
  r.standalone = standalone;
  r.int8 = int8;
  r.dla_core = dla_core;
  r.layer_devices = layer_devices;
  r.layer_precisions = layer_precisions;
  r.op_devices = op_devices;
  r.op_precisions = op_precisions;
  r.overrides_file = overrides_file;
  return workflow::placement_options(r);
}

workflow::PassOptions PlacementFlags::passes() const {
  if (no_adjust_for_dla && adjust_for_dla)
    fail(Status::kInvalidArgument, "--adjustForDLA and --no-adjust-for-dla contradict each other");
  workflow::PassOptions o;
  o.run = !no_passes;
  o.disabled = disabled_passes;
  if (no_adjust_for_dla) o.disabled.push_back("adjust-for-dla");
  return o;
}

PlacedModel load_and_place(const ModelFlags& m, const PlacementFlags& pf) {
  return workflow::place_model(import_onnx_file(m.model, m.import_options()), m.model, pf.options(),
                               pf.passes());
}

namespace {

struct InspectFlags {
  ModelFlags model;
  PlacementFlags placement;
  bool json = false;
  std::string explain, power_mode, input_formats, output_formats, html;
};

// trtexec's --inputIOFormats/--outputIOFormats as the latency model reads them: fp32 (trtexec's default
// without the flags) means GPU reformat kernels around the DLA; an int8 input that is not dla_hwc4 turns
// image-input mode off; fp16 outputs of an INT8 build make its last operations write FP16.
latency::LatencyOptions latency_options(const InspectFlags& f) {
  latency::LatencyOptions o;
  o.power_mode = f.power_mode;
  auto entries = [](const std::string& spec, const char* flag) {
    std::vector<std::pair<std::string, std::string>> r;  // (type, format)
    std::stringstream ss(spec);
    std::string item;
    while (std::getline(ss, item, ',')) {
      const size_t c = item.find(':');
      if (c == std::string::npos)
        fail(Status::kInvalidArgument, flag, " entry '", item, "' should be type:format, e.g. int8:chw32");
      r.push_back({item.substr(0, c), item.substr(c + 1)});
    }
    return r;
  };
  for (auto& [type, fmt] : entries(f.input_formats, "--inputIOFormats")) {
    if (type == "fp32") {
      o.native_io = false;
      continue;
    }
    (void)rt::parse_io_formats(type + ":" + fmt, 1, true);  // a DLA format, or a clear error
    if (fmt != "dla_hwc4" && fmt != "chw4") o.image_input = false;
  }
  for (auto& [type, fmt] : entries(f.output_formats, "--outputIOFormats")) {
    if (type == "fp32") {
      o.native_io = false;
      continue;
    }
    (void)rt::parse_io_formats(type + ":" + fmt, 1, false);
    if (type == "fp16") o.output_precision = latency::OpPrecision::kFp16;
  }
  return o;
}

void run_inspect(const InspectFlags& f) {
  const PlacedModel pm = load_and_place(f.model, f.placement);
  const Graph& g = pm.graph;
  const Placement& p = pm.placement;
  std::optional<latency::LatencyReport> lat;
  if (!f.power_mode.empty()) lat = latency::predict_latency(g, p, latency_options(f));
  if (!f.html.empty()) {
    std::vector<double> latency_us;  // predicted per layer (--power-mode): the page colours by it
    if (lat)
      for (const latency::LayerLatency& l : lat->layers) latency_us.push_back(l.latency_us);
    write_file(f.html, report::inspect_html(g, p, lat ? &latency_us : nullptr));
  }
  if (!f.explain.empty() && f.json) {
    // The name's entries of the --json report: its layers (none where a pass removed or merged it) and the
    // passes' remarks on it. explain_node refuses a name that is neither.
    explain_node(g, p, f.explain);
    const nlohmann::json report = workflow::inspect_json(g, p);
    nlohmann::json j = {
        {"name", f.explain}, {"layers", nlohmann::json::array()}, {"remarks", nlohmann::json::array()}};
    for (size_t k = 0; k < g.nodes.size(); ++k)
      if (g.nodes[k].name == f.explain) {
        nlohmann::json layer = report["layers"][k];
        if (lat) layer["latency_us"] = lat->layers[k].latency_us;
        j["layers"].push_back(layer);
      }
    for (const auto& r : report["remarks"])
      if (r["node"] == f.explain) j["remarks"].push_back(r);
    std::cout << j.dump(2) << "\n";
  } else if (!f.explain.empty()) {
    std::cout << explain_node(g, p, f.explain);
    if (lat) {
      for (size_t k = 0; k < g.nodes.size(); ++k)
        if (g.nodes[k].name == f.explain) {
          const latency::LayerLatency& L = lat->layers[k];
          std::cout << "  predicted latency (" << lat->power_mode << "): "
                    << (L.role == "fused"  ? "fused into " + L.fused_into
                        : L.role == "free" ? std::string("free (no operation)")
                                           : std::to_string(L.latency_us) + " us, bound by " + L.bottleneck)
                    << "\n";
        }
    }
  } else if (f.json) {
    nlohmann::json j = workflow::inspect_json(g, p);
    if (lat) {
      j["latency"] = latency::latency_json(g, *lat);
      for (size_t k = 0; k < g.nodes.size(); ++k) j["layers"][k]["latency_us"] = lat->layers[k].latency_us;
    }
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "model: " << f.model.model << "\n" << workflow::inspect_text(g, p);
    if (lat) std::cout << latency::latency_text(g, p, *lat);
    if (!f.html.empty()) std::cout << "report: " << f.html << "\n";
  }
  exit_code = p.standalone_possible ? 0 : 3;
}

}  // namespace

void register_inspect(CLI::App& app) {
  auto f = std::make_shared<InspectFlags>();
  CLI::App* sub = app.add_subcommand(
      "inspect",
      "Per-layer DLA capability with every reason and a fix, DLA/GPU segments, coverage and a "
      "recommendation.\n"
      "Exit status: 0 if a standalone (single DLA graph) build is possible, 3 if not, 2 on a usage error, 1 "
      "on other errors.");
  f->model.add(*sub);
  f->placement.add(*sub);
  sub->add_flag("--json", f->json, "Print JSON (schema: docs/inspect.md)");
  sub->add_option(
      "--html", f->html,
      "Also write a self-contained HTML report: the network as coloured layers (DLA/GPU segments, "
      "transitions, rewrites), every reason and fix on click");
  sub->add_option("--explain", f->explain,
                  "Explain one layer in full: inputs, DLA layer, every reason, pass remarks (with --json: "
                  "its entry of the JSON report)");
  sub->add_option("--power-mode", f->power_mode,
                  "Predict the board's latency in this power mode (orin: MAXN, 50W, 30W, 15W; xavier: MAXN): "
                  "per layer with its bottleneck (compute, memory, overhead), per segment and transition, "
                  "one DLA core's time and both cores' throughput. Predictions of dlakit's latency model "
                  "(docs/latency-model.md), not measurements");
  sub->add_option("--inputIOFormats", f->input_formats,
                  "With --power-mode: the input format the application hands over, trtexec style (default: "
                  "int8:dla_hwc4 for INT8, fp16:chw16 for FP16; fp32:chw = trtexec's default, reformatted on "
                  "the GPU)");
  sub->add_option("--outputIOFormats", f->output_formats,
                  "With --power-mode: the output format (default: int8:chw32 / fp16:chw16; fp32:chw is "
                  "reformatted on the GPU)");
  sub->callback([f] { run_inspect(*f); });
  CLI::App* mat = app.add_subcommand(
      "support-matrix", "Print the DLA support matrix (op x chip x precision, with limits) as Markdown");
  mat->callback([] { std::cout << dla::support_matrix_markdown(); });
}

}  // namespace dlakit::cli
