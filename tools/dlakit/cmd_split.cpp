// dlakit split MODEL -o DIR: each DLA and GPU segment as an ONNX model, a manifest wiring them, and the
// trtexec command lines that build them on a Jetson from dlakit's placement.
#include <iostream>
#include <memory>

#include "cli.h"
#include "placement/split.h"

namespace dlakit::cli {
namespace {

struct SplitFlags {
  ModelFlags model;
  PlacementFlags placement;
  std::string out_dir;
};

void run_split_cmd(const SplitFlags& f) {
  const auto [g, p, qdq_scales, is_qdq, imported] = load_and_place(f.model, f.placement);
  nlohmann::json m = write_split(g, p, f.out_dir, f.model.model);
  for (auto& s : m["segments"])
    std::cout << "segment " << s["index"] << "  " << s["device"].get<std::string>() << "  " << s["layers"]
              << " layer(s)  -> " << f.out_dir << "/" << s["file"].get<std::string>() << "\n    "
              << s["trtexec"].get<std::string>() << "\n";
  std::cout << "manifest: " << f.out_dir << "/manifest.json\nbuild script: " << f.out_dir
            << "/build_on_jetson.sh\n";
}

}  // namespace

void register_split(CLI::App& app) {
  auto f = std::make_shared<SplitFlags>();
  CLI::App* sub = app.add_subcommand(
      "split", "Write each DLA/GPU segment as ONNX, a manifest, and trtexec lines to build them on a Jetson");
  f->model.add(*sub);
  f->placement.add(*sub);
  sub->add_option("-o,--output-dir", f->out_dir, "Directory for the segments")->required();
  sub->callback([f] { run_split_cmd(*f); });
}

}  // namespace dlakit::cli
