// dlakit inspect MODEL: per-layer DLA capability with reasons and fixes, segments, summary.
// Exit status: 0 when a standalone (single DLA graph) build is possible, 3 when it is not, 1 on errors.
#include <iostream>
#include <memory>

#include "base/error.h"
#include "cli.h"
#include "placement/overrides.h"
#include "placement/placement.h"
#include "quant/qdq.h"
#include "targets/dla/matrix.h"

namespace dlakit::cli {

PlacementFlags::PlacementFlags() = default;

void PlacementFlags::add(CLI::App& app) {
  app.add_option("--target", target, "DLA chip: orin (DLA 2.0, default) or xavier (DLA 1.0)")
      ->check(CLI::IsMember({"orin", "xavier"}));
  app.add_flag("--standalone,--buildDLAStandalone", standalone,
               "The whole network must be one DLA graph (cuDLA); else one error listing every offender");
  app.add_flag("--fallback,--allowGPUFallback", fallback, "Run unsupported layers on the GPU (default)");
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
  app.add_option("--disable-pass", disabled_passes,
                 "Skip a graph pass (remove-identity, fold-constants, fold-batchnorm, fold-pad, decompose, "
                 "fuse-activation, dead-code)");
  app.add_flag("--no-passes", no_passes, "Skip every graph pass");
}

PlacementOptions PlacementFlags::options() const {
  if (standalone && fallback)
    fail(Status::kInvalidArgument,
         "--standalone and --fallback contradict each other (trtexec forbids it too)");
  if (int8 && fp16) fail(Status::kInvalidArgument, "choose one of --int8 and --fp16");
  PlacementOptions o;
  o.target = target;
  o.standalone = standalone;
  o.precision = int8 ? dla::Precision::kINT8 : dla::Precision::kFP16;
  o.dla_core = dla_core;
  o.layer_devices = parse_device_overrides(layer_devices);
  o.op_devices = parse_device_overrides(op_devices);
  o.layer_precisions = parse_precision_overrides(layer_precisions);
  if (!overrides_file.empty())  // after the command line's: first match wins
    add_overrides_json(read_file(overrides_file), overrides_file, o);
  o.op_precisions = parse_precision_overrides(op_precisions);
  return o;
}

std::vector<Remark> PlacementFlags::optimize(Graph& g) const {
  if (no_passes) return {};
  return run_passes(g, disabled_passes);
}

PlacedModel load_and_place(const ModelFlags& m, const PlacementFlags& pf) {
  Graph g = import_onnx_file(m.model, m.import_options());
  const bool qdq = quant::has_qdq(g);
  quant::ScaleTable scales;
  if (qdq) scales = quant::fold_qdq(g);  // the DLA takes scales, not Q/DQ nodes
  std::vector<Remark> remarks = pf.optimize(g);
  Placement p = place(g, pf.options());
  p.model = m.model;
  p.remarks = std::move(remarks);
  if (qdq)
    p.remarks.insert(
        p.remarks.begin(),
        {"fold-qdq", "", true,
         "folded the Q/DQ nodes into " + std::to_string(scales.scales.size()) + " activation ranges and " +
             std::to_string(scales.weight_scales.size()) + " weight scales"});
  return {std::move(g), std::move(p), std::move(scales), qdq};
}

namespace {

struct InspectFlags {
  ModelFlags model;
  PlacementFlags placement;
  bool json = false;
  std::string explain;
};

void run_inspect(const InspectFlags& f) {
  const auto [g, p, qdq_scales, is_qdq] = load_and_place(f.model, f.placement);
  if (!f.explain.empty()) {
    std::cout << explain_node(g, p, f.explain);
  } else if (f.json) {
    std::cout << placement_json(g, p).dump(2) << "\n";
  } else {
    std::cout << "model: " << f.model.model << "\n" << placement_text(g, p);
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
      "Exit status: 0 if a standalone (single DLA graph) build is possible, 3 if not, 1 on errors.");
  f->model.add(*sub);
  f->placement.add(*sub);
  sub->add_flag("--json", f->json, "Print JSON (schema: docs/inspect.md)");
  sub->add_option("--explain", f->explain,
                  "Explain one layer in full: inputs, DLA layer, every reason, pass remarks");
  sub->callback([f] { run_inspect(*f); });
  CLI::App* mat = app.add_subcommand(
      "support-matrix", "Print the DLA support matrix (op x chip x precision, with limits) as Markdown");
  mat->callback([] { std::cout << dla::support_matrix_markdown(); });
}

}  // namespace dlakit::cli
