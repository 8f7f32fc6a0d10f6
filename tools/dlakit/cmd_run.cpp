// dlakit run MODEL --input name=x.npy | --image photo.jpg [preprocessing] [--output-dir D] [--json]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>

#include "base/error.h"
#include "cli.h"
#include "engine/engine.h"
#include "io/image.h"
#include "io/npy.h"
#include "workflow/engine_runner.h"

namespace dlakit::cli {
namespace {

struct RunFlags {
  ModelFlags model;
  std::vector<std::string> inputs;  // name=file.npy
  std::string image, size, mean = "0,0,0", std = "1,1,1", labels, output_dir, overlay;
  float scale = 1.0f / 255.0f;
  bool bgr = false, nhwc = false, json = false, random_inputs = false, profile = false;
  int top_k = 5, iterations = 1, warmup = 0, dla_core = 0;
  std::string engine;  // --loadEngine: run a DLA loadable through the runtime instead of an ONNX model
  std::string backend = "cpu", calib;
};

Tensor random_tensor(const TensorType& t, uint32_t seed) {
  Tensor r(t.dtype, t.shape);
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.f, 1.f);
  DLAKIT_CHECK(t.dtype == DType::kF32, Status::kUnsupported, "--random-inputs only fills float32 inputs");
  for (int64_t i = 0; i < r.numel(); ++i) r.data<float>()[i] = dist(gen);
  return r;
}

std::string safe_name(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  return s;
}

void report(const RunFlags& f, const std::string& model, const Image& img,
            const std::vector<std::string>& input_lines,
            const std::vector<std::pair<std::string, Tensor>>& outputs, std::vector<double> times,
            const char* where) {
  std::sort(times.begin(), times.end());
  double mean_ms = 0;
  for (double t : times) mean_ms += t / double(times.size());
  std::vector<std::string> labels;
  if (!f.labels.empty()) {
    std::ifstream lf(f.labels);
    if (!lf) fail(Status::kIoError, "cannot open labels file '", f.labels, "'");
    for (std::string line; std::getline(lf, line);) labels.push_back(line);
  }
  if (!f.output_dir.empty()) std::filesystem::create_directories(f.output_dir);
  nlohmann::json j;
  j["model"] = model;
  j["executed_on"] = where;
  j["latency_ms"] = {{"mean", mean_ms},
                     {"min", times.front()},
                     {"median", times[times.size() / 2]},
                     {"iterations", times.size()}};
  for (const auto& [name, t] : outputs) {
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    for (int64_t i = 0; i < t.numel(); ++i) {
      double v = t.at_f64(i);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
    }
    nlohmann::json o{{"name", name},
                     {"type", type_str(t.type())},
                     {"min", lo},
                     {"max", hi},
                     {"mean", t.numel() ? sum / double(t.numel()) : 0.0}};
    if (!f.output_dir.empty()) {
      std::string path = (std::filesystem::path(f.output_dir) / (safe_name(name) + ".npy")).string();
      write_npy(path, t);
      o["file"] = path;
    }
    // Classifier-shaped outputs ([1,K] or [1,K,1,1] with K >= 2) get a top-k list.
    int64_t k_classes = t.numel();
    const bool classifier_shape = t.rank() == 2 || (t.rank() == 4 && t.dim(2) == 1 && t.dim(3) == 1);
    if (classifier_shape && t.dim(0) == 1 && k_classes >= 2 && k_classes == t.dim(1) &&
        t.dtype() == DType::kF32) {
      std::vector<int64_t> idx(static_cast<size_t>(k_classes));
      for (int64_t i = 0; i < k_classes; ++i) idx[size_t(i)] = i;
      const int64_t k = std::min<int64_t>(f.top_k, k_classes);
      // Not `t` in the lambda: clang (the fuzz build) cannot capture a structured binding.
      const float* scores = t.data<float>();
      std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                        [scores](int64_t a, int64_t b) { return scores[a] > scores[b]; });
      for (int64_t i = 0; i < k; ++i) {
        nlohmann::json e{{"class", idx[size_t(i)]}, {"score", scores[idx[size_t(i)]]}};
        if (size_t(idx[size_t(i)]) < labels.size()) e["label"] = labels[size_t(idx[size_t(i)])];
        o["top_k"].push_back(e);
      }
    }
    // Map-shaped outputs ([1,1,H,W]) can be drawn over the input image.
    if (!f.overlay.empty() && !f.image.empty() && t.rank() == 4 && t.dim(0) == 1 && t.dim(1) == 1 &&
        !j.contains("overlay")) {
      write_png(f.overlay, overlay_heatmap(img, t.to_f32(), int(t.dim(3)), int(t.dim(2))));
      j["overlay"] = f.overlay;
      int64_t above = 0;
      for (int64_t i = 0; i < t.numel(); ++i) above += t.at_f64(i) > 0.3;
      o["fraction_above_0.3"] = double(above) / double(t.numel());
    }
    j["outputs"].push_back(o);
  }
  if (!f.overlay.empty() && !j.contains("overlay"))
    std::fprintf(stderr,
                 "warning: --overlay: no output is a [1, 1, H, W] map to draw over the image; %s not "
                 "written\n",
                 f.overlay.c_str());
  if (f.json) {
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << "model: " << model << "\n";
  for (const auto& line : input_lines) std::cout << "input:  " << line << "\n";
  for (auto& o : j["outputs"]) {
    std::cout << "output: " << o["name"].get<std::string>() << " " << o["type"].get<std::string>() << "  min "
              << o["min"].get<double>() << "  max " << o["max"].get<double>() << "  mean "
              << o["mean"].get<double>();
    if (o.contains("file")) std::cout << "  -> " << o["file"].get<std::string>();
    if (o.contains("fraction_above_0.3"))
      std::cout << "  (" << 100 * o["fraction_above_0.3"].get<double>() << "% > 0.3)";
    std::cout << "\n";
    if (o.contains("top_k"))
      for (auto& e : o["top_k"])
        std::cout << "  class " << e["class"] << "  score " << e["score"].get<float>()
                  << (e.contains("label") ? "  " + e["label"].get<std::string>() : "") << "\n";
  }
  if (j.contains("overlay")) std::cout << "overlay: " << j["overlay"].get<std::string>() << "\n";
  std::printf("latency: %.2f ms mean, %.2f ms min over %zu run(s) (%s)\n", mean_ms, times.front(),
              times.size(), where);
}

// Time per op type and the slowest layers of the last run (--dumpProfile on an ONNX model).
void print_profile(const Graph& g, const ReferenceEngine& engine) {
  nlohmann::json j;
  {
    std::map<std::string, std::pair<double, int>> by_op;
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      auto& e = by_op[op_name(g.nodes[n].op)];
      e.first += engine.node_ms()[n];
      ++e.second;
    }
    std::vector<std::pair<std::string, std::pair<double, int>>> rows(by_op.begin(), by_op.end());
    std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.second.first > b.second.first; });
    for (auto& [op, e] : rows) j["profile"].push_back({{"op", op}, {"ms", e.first}, {"count", e.second}});
    std::vector<size_t> order(g.nodes.size());
    for (size_t n = 0; n < order.size(); ++n) order[n] = n;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return engine.node_ms()[a] > engine.node_ms()[b]; });
    for (size_t k = 0; k < std::min<size_t>(10, order.size()); ++k) {
      const Node& n = g.nodes[order[k]];
      j["slowest_layers"].push_back({{"name", n.name},
                                     {"op", op_name(n.op)},
                                     {"ms", engine.node_ms()[order[k]]},
                                     {"output", type_str(g.value(n.outputs[0]).type)}});
    }
  }
  {
    std::cout << "profile (last run, by op type):\n";
    for (auto& r : j["profile"])
      std::printf("  %-20s %4d nodes %9.2f ms\n", r["op"].get<std::string>().c_str(), r["count"].get<int>(),
                  r["ms"].get<double>());
    std::cout << "slowest layers:\n";
    for (auto& r : j["slowest_layers"])
      std::printf("  %-40s %-14s %-24s %8.2f ms\n", r["name"].get<std::string>().c_str(),
                  r["op"].get<std::string>().c_str(), r["output"].get<std::string>().c_str(),
                  r["ms"].get<double>());
  }
}

// Runs a DLA loadable or a hybrid plan on the chosen backend (rt::EngineRunner): inputs from --input,
// --image (the first input) or seeded noise, laid out per the engine; only the engine's work is timed.
// The --input name=file.npy flags, read.
TensorMap input_files(const RunFlags& f) {
  TensorMap feeds;
  for (const auto& spec : f.inputs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      fail(Status::kInvalidArgument, "--input '", spec, "' should be name=file.npy");
    feeds[spec.substr(0, eq)] = read_npy(spec.substr(eq + 1));
  }
  return feeds;
}

std::string run_loadable(const RunFlags& f, const Preprocess& pre, const Image* img,
                         std::vector<std::pair<std::string, Tensor>>& outputs,
                         std::vector<std::string>& input_lines, std::vector<double>& times) {
  quant::ScaleTable io_scales;
  rt::RunnerOptions o;
  o.dla_core = f.dla_core;
  o.backend = f.backend;
  if (!f.calib.empty()) {
    io_scales = quant::read_calib_cache(f.calib);
    o.io_scales = &io_scales;
  }
  const std::unique_ptr<rt::EngineRunner> engine = rt::EngineRunner::open(read_file(f.engine), o);
  // Every --input as given (set_inputs refuses a name the engine lacks), then images and noise for the rest.
  TensorMap feeds = input_files(f);
  uint32_t seed = 1;
  for (size_t i = 0; i < engine->inputs().size(); ++i) {
    const rt::EngineInput& in = engine->inputs()[i];
    Tensor x = feeds.count(in.name) ? feeds.at(in.name) : Tensor();
    if (x.empty() && img && i == 0) {
      Preprocess sized = pre;  // without --size, the engine's input size (NCHW, what set_inputs takes)
      if (sized.width == 0 && in.shape.size() == 4) {
        sized.height = int(in.shape[2]);
        sized.width = int(in.shape[3]);
      }
      x = image_to_tensor(*img, sized);
    }
    if (x.empty() && f.random_inputs) x = random_tensor({DType::kF32, in.shape}, seed++);
    if (x.empty())
      fail(Status::kInvalidArgument, "no data for input '", in.name, "' (f32[", shape_str(in.shape),
           "]): give --input ", in.name, "=file.npy, --image, or --random-inputs");
    input_lines.push_back(cat(in.name, " ", type_str(x.type()), " -> ", in.layout));
    feeds[in.name] = x;
  }
  engine->set_inputs(feeds);
  for (int i = 0; i < f.warmup; ++i) engine->execute();
  for (int i = 0; i < std::max(1, f.iterations); ++i) {
    auto t0 = std::chrono::steady_clock::now();
    engine->execute();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  const TensorMap res = engine->outputs();
  for (const auto& n : engine->output_names()) outputs.push_back({n, res.at(n)});
  return engine->where();
}

void run_cmd(const RunFlags& f) {
  f.model.apply_threads();
  if (f.engine.empty() && f.model.model.empty())
    fail(Status::kInvalidArgument, "give an ONNX model or --loadEngine=model.dla");
  if (!f.engine.empty() && !f.model.model.empty())
    fail(Status::kInvalidArgument, "give an ONNX model or --loadEngine, not both");
  if (f.engine.empty() && (f.backend != "cpu" || !f.calib.empty()))
    fail(Status::kInvalidArgument,
         "--backend and --calib apply to --loadEngine; an ONNX model runs on the "
         "reference engine");
  if (!f.overlay.empty() && f.image.empty())
    fail(Status::kInvalidArgument, "--overlay draws the model's map over the input image: add --image");
  if (!f.engine.empty() && f.profile)
    fail(Status::kInvalidArgument,
         "--dumpProfile times an ONNX model's ops on the reference engine; for a loadable's operations use "
         "`dlakit bench --loadEngine ",
         f.engine, " --dumpProfile`");
  if (!f.engine.empty()) {
    Preprocess pre;
    Image img;
    if (!f.image.empty()) {
      img = load_image(f.image);
      pre = {0, 0, floats(f.mean, "--mean"), std_devs(f.std), f.scale, f.bgr, f.nhwc};
      if (!f.size.empty()) std::tie(pre.width, pre.height) = parse_size(f.size);
    }
    std::vector<std::pair<std::string, Tensor>> outputs;
    std::vector<std::string> input_lines;
    std::vector<double> times;
    const std::string where =
        run_loadable(f, pre, f.image.empty() ? nullptr : &img, outputs, input_lines, times);
    return report(f, f.engine, img, input_lines, outputs, times, where.c_str());
  }
  ImportOptions opt = f.model.import_options();
  const OnnxSignature sig = read_onnx_signature(f.model.model);
  if (sig.inputs.empty() && !f.image.empty())  // a model of constants still runs; it takes no image
    fail(Status::kInvalidArgument, f.model.model, " has no runtime inputs to take --image");
  Preprocess pre;
  Image img;
  if (!f.image.empty()) {
    img = load_image(f.image);
    pre.mean = floats(f.mean, "--mean");
    pre.std = std_devs(f.std);
    pre.scale = f.scale;
    pre.bgr = f.bgr;
    pre.nhwc = f.nhwc;
    const auto& first = sig.inputs[0];
    if (!f.size.empty()) {
      std::tie(pre.width, pre.height) = parse_size(f.size);
    } else if (first.dims.size() == 4 && std::all_of(first.dims.begin() + 1, first.dims.end(), [](auto& d) {
                 return !d.empty() && std::isdigit(static_cast<unsigned char>(d[0]));
               })) {
      pre.height = std::stoi(first.dims[f.nhwc ? 1 : 2]);
      pre.width = std::stoi(first.dims[f.nhwc ? 2 : 3]);
    } else {
      pre.width = img.width;
      pre.height = img.height;
    }
    if (!opt.input_shapes.count(first.name))
      opt.input_shapes[first.name] =
          f.nhwc ? Shape{1, pre.height, pre.width, 3} : Shape{1, 3, pre.height, pre.width};
  }
  TensorMap feeds = input_files(f);
  for (const auto& [name, t] : feeds)
    if (!opt.input_shapes.count(name))
      for (auto& io : sig.inputs)
        if (io.name == name) opt.input_shapes[io.name] = t.shape();
  opt.runtime_values = feeds;  // an input that feeds a shape argument specializes the graph
  const Graph g = import_onnx_file(f.model.model, opt);
  std::vector<std::string> input_lines;
  for (auto it = feeds.begin(); it != feeds.end();) {
    if (g.find_value(it->first) && g.value(*g.find_value(it->first)).constant) {
      input_lines.push_back(
          cat(it->first, " ", type_str(it->second.type()),
              " bound as a constant: a shape argument needs it (the graph is specialized on "
              "its value)"));
      it = feeds.erase(it);
    } else {
      ++it;
    }
  }
  if (!f.image.empty()) feeds[g.value(g.inputs[0]).name] = image_to_tensor(img, pre);
  uint32_t seed = 1;
  for (int id : g.inputs) {
    const Value& v = g.value(id);
    if (feeds.count(v.name)) continue;
    if (!f.random_inputs)
      fail(Status::kInvalidArgument, "no data for input '", v.name, "' (", type_str(v.type),
           "): give --input ", v.name, "=file.npy, --image, or --random-inputs");
    feeds[v.name] = random_tensor(v.type, seed++);
  }
  ReferenceEngine engine(g);
  engine.set_profiling(f.profile);
  TensorMap outputs;
  for (int i = 0; i < f.warmup; ++i) engine.run(feeds);
  std::vector<double> times;
  for (int i = 0; i < std::max(1, f.iterations); ++i) {
    auto t0 = std::chrono::steady_clock::now();
    outputs = engine.run(feeds);
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::vector<std::pair<std::string, Tensor>> outs;
  for (int id : g.outputs) outs.push_back({g.value(id).name, outputs.at(g.value(id).name)});
  for (int id : g.inputs) input_lines.push_back(cat(g.value(id).name, " ", type_str(g.value(id).type)));
  report(f, f.model.model, img, input_lines, outs, times, "reference engine, CPU");
  if (f.profile) print_profile(g, engine);
}

}  // namespace

void register_run(CLI::App& app) {
  auto f = std::make_shared<RunFlags>();
  CLI::App* sub = app.add_subcommand(
      "run", "Run a model on the reference engine: .npy or image inputs, .npy outputs, top-k, heat maps");
  f->model.add(*sub);
  sub->add_option("--input,-i", f->inputs, "Input as name=file.npy (repeatable)");
  sub->add_option("--image", f->image, "Image (jpg/png/bmp) for the model's first input")
      ->check(CLI::ExistingFile);
  sub->add_option("--size", f->size, "Resize the image to WIDTHxHEIGHT (default: the model's input size)");
  sub->add_option("--mean", f->mean, "Per-channel mean in 0..1 units, e.g. 0.485,0.456,0.406 (ImageNet)");
  sub->add_option("--std", f->std, "Per-channel std in 0..1 units, e.g. 0.229,0.224,0.225 (ImageNet)");
  sub->add_option("--scale", f->scale, "Pixel scale before mean/std (default 1/255)");
  sub->add_flag("--bgr", f->bgr, "The model takes BGR channel order (default RGB)");
  sub->add_flag("--nhwc", f->nhwc, "The model takes NHWC layout (default NCHW)");
  sub->add_flag("--random-inputs", f->random_inputs, "Fill inputs not given with seeded N(0,1) noise");
  sub->add_option("--labels", f->labels, "Class names, one per line, for top-k");
  sub->add_option("--top-k", f->top_k, "How many classes to print for classifier outputs (default 5)")
      ->check(CLI::Range(1, 1000 * 1000));
  sub->add_option("--output-dir,-o", f->output_dir, "Write every output as NAME.npy here");
  sub->add_option("--overlay", f->overlay,
                  "Write a heat map of the first [1,1,H,W] output over the image (PNG)");
  sub->add_option("--iterations", f->iterations, "Timed runs (default 1)")->check(CLI::Range(1, 1000 * 1000));
  sub->add_option("--warmUp", f->warmup,
                  "Untimed runs first (default 0; a count here, where `bench --warmUp` is milliseconds as in "
                  "trtexec)")
      ->check(CLI::Range(0, 1000 * 1000));
  sub->add_flag("--dumpProfile", f->profile,
                "Print time per op type of the last run (ONNX models; loadables: bench --dumpProfile)");
  sub->add_flag("--json", f->json, "Print JSON instead of text");
  sub->add_option("--loadEngine", f->engine,
                  "Run a DLA loadable (from dlakit build) through the runtime on the emulated DLA")
      ->check(CLI::ExistingFile);
  sub->add_option("--useDLACore", f->dla_core, "DLA core for --loadEngine (0 or 1)")->check(CLI::Range(0, 1));
  sub->add_option("--backend", f->backend,
                  "For --loadEngine: cpu (dlakit's runtime, the emulated DLA; default), cudla (the system's "
                  "libcudla.so.1 through the cuDLA C API: NVIDIA's on a Jetson runs the real DLA) or "
                  "cudla:PATH (a given libcudla.so.1, e.g. dlakit's emulated one)");
  sub->add_option(
         "--calib", f->calib,
         "With --backend=cudla on a loadable dlakit did not build (trtexec's): the calibration cache "
         "giving its int8 I/O tensors' scales")
      ->check(CLI::ExistingFile);
  sub->callback([f] { run_cmd(*f); });
}

}  // namespace dlakit::cli
