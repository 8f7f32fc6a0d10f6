// dlakit: predict, explain and run DLA workloads anywhere. See `dlakit --help`.
#include <fstream>
#include <iostream>
#include <iterator>

#include "base/error.h"
#include "base/threadpool.h"
#include "cli.h"

namespace dlakit::cli {

void ModelFlags::add(CLI::App& app) {
  app.add_option("model", model, "ONNX model file")->check(CLI::ExistingFile);
  app.add_option("--input-shape,--shapes", input_shape,
                 "Pin input shapes (dynamic dims), trtexec style: name:1x3x640x640[,name2:...]");
  app.add_option("--threads", threads,
                 "CPU threads for the reference engine (default: DLAKIT_NUM_THREADS or 2)")
      ->check(CLI::Range(1, 256));
}

ImportOptions ModelFlags::import_options() const {
  ImportOptions o;
  o.input_shapes = parse_input_shapes(input_shape);
  return o;
}

void ModelFlags::apply_threads() const {
  if (threads > 0) set_num_threads(threads);
}

std::string human(double v) {
  const char* units[] = {"", " K", " M", " G", " T"};
  int u = 0;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.2f%s" : "%.0f%s", v, units[u]);
  return buf;
}

}  // namespace dlakit::cli

int main(int argc, char** argv) {
  CLI::App app{
      "dlakit: make NVIDIA's Deep Learning Accelerator usable, explainable and testable anywhere.\n"
      "Commands take trtexec/Polygraphy-style flags; info, inspect, run, bench, calibrate and compare print\n"
      "JSON with --json.\n\n"
      "Examples:\n"
      "  dlakit info model.onnx --input-shape x:1x3x640x640\n"
      "  dlakit run resnet18.onnx --image cat.jpg --size 224x224 --mean 0.485,0.456,0.406 --std "
      "0.229,0.224,0.225\n"
      "  dlakit run det.onnx --image photo.jpg --size 640x640 --overlay heat.png\n"
      "  dlakit inspect model.onnx --target orin --int8 --layerDeviceTypes 'head*:GPU'\n"
      "  dlakit split model.onnx -o segments/\n"
      "  dlakit calibrate det.onnx --data images/ --cache det.cache\n"
      "  dlakit compare det.onnx --int8 --calib det.cache --data images/ --fix --html report.html"};
  app.require_subcommand(1);
  dlakit::cli::register_info(app);
  dlakit::cli::register_run(app);
  dlakit::cli::register_inspect(app);
  dlakit::cli::register_split(app);
  dlakit::cli::register_build(app);
  dlakit::cli::register_bench(app);
  dlakit::cli::register_calibrate(app);
  dlakit::cli::register_compare(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; a usage error (unknown flag, missing or invalid argument) exits 2, as
    // most command-line tools do, instead of CLI11's own codes (105-109).
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const dlakit::Error& e) {
    std::cerr << "error (" << dlakit::status_name(e.status()) << "): " << e.what() << "\n";
    // A standalone build that is not possible is a verdict, not a failure of dlakit.
    return std::string(e.what()).rfind("--buildDLAStandalone", 0) == 0 ? 3 : 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return dlakit::cli::exit_code;
}
