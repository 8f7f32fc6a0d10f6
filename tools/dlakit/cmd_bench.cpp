// dlakit bench --loadEngine=model.dla: latency and throughput of a DLA loadable on the emulated DLA, with
// trtexec's flags: the split between host-to-device copy (pack), compute and device-to-host copy (unpack),
// a per-layer profile, and concurrency over both cores.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <iostream>
#include <memory>
#include <random>
#include <thread>

#include "cli.h"
#include "engine/gpu_engine.h"
#include "gpu/gpu.h"
#include "latency/chip.h"
#include "latency/from_program.h"
#include "latency/model.h"
#include "latency/params.h"
#include "loadable/plan.h"
#include "passes/passes.h"
#include "quant/numerics.h"
#include "runtime/runtime.h"
#include "workflow/engine_runner.h"

namespace dlakit::cli {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

struct BenchFlags {
  std::string engine, cores = "0", export_times, export_profile, backend = "cpu", config, onnx, calib,
                      input_shape, power_mode = "MAXN";
  int warmup_ms = 200, iterations = 10, streams = 1;
  double duration_s = 3;
  bool dump_profile = false, json = false, predict = false;
};

// --predict: the latency model's prediction for the board, from the loadable's compiled program (its
// operations, precisions and memory plan: latency/from_program.h). Kept apart from the emulator's timings
// (its own JSON object, its own lines).
nlohmann::json predict_board(const rt::Module& m, const std::string& mode) {
  const prog::Program& p = m.program();
  const latency::Chip& chip = latency::chip_for(p.target);
  const latency::PowerMode& pm = latency::power_mode(chip, mode);
  const std::vector<latency::HwOp> ops = latency::hw_ops(p);
  const latency::TaskTime t = latency::predict_task(ops, chip, pm, latency::fitted_params(p.target));
  const double ms = t.total_us / 1e3;
  const int64_t batch = p.inputs.empty() ? 1 : int64_t(p.input_desc(0).n);
  return {
      {"source", "dlakit latency model (docs/latency-model.md): a prediction for the board, not measured"},
      {"target", p.target},
      {"power_mode", pm.name},
      {"dla_clock_mhz", pm.dla_hz / 1e6},
      {"batch", batch},
      {"latency_ms", ms},
      {"dla_ms", ms},
      {"throughput_qps_one_core", ms > 0 ? 1e3 / ms : 0.0},
      {"throughput_qps_all_cores", ms > 0 ? chip.cores * 1e3 / ms : 0.0},
      {"operations", ops.size()}};
}

void print_prediction(const nlohmann::json& p) {
  const double ms = p["latency_ms"].get<double>();
  std::printf("predicted for the board (%s %s, DLA %.1f MHz; dlakit's latency model, not measured here):\n",
              p["target"].get<std::string>().c_str(), p["power_mode"].get<std::string>().c_str(),
              p["dla_clock_mhz"].get<double>());
  std::printf(
      "[predicted] Latency: min = %.3f ms, max = %.3f ms, mean = %.3f ms, median = %.3f ms, percentile(90%%) "
      "= "
      "%.3f ms, percentile(95%%) = %.3f ms, percentile(99%%) = %.3f ms (one value: the model predicts no "
      "spread)\n",
      ms, ms, ms, ms, ms, ms, ms);
  std::printf("[predicted] Throughput: %.1f qps on one DLA core, %.1f qps on both (--useDLACore=all)\n",
              p["throughput_qps_one_core"].get<double>(), p["throughput_qps_all_cores"].get<double>());
}

// One in-flight task's buffers, registered: on the CPU backend 64-byte aligned host buffers; on CUDA the
// task reads device buffers (dev_in, dev_out), the host side is pinned memory (so that H2D and D2H time the
// copies as an application with pinned buffers sees them) and a queue stands for the app's stream.
struct Buffers {
  std::vector<void*> in, out;  // host side, owned by `aligned` or `pinned`
  std::vector<std::unique_ptr<void, decltype(&std::free)>> aligned;
  std::vector<gpu::PinnedBuffer> pinned;
  std::vector<gpu::DeviceBuffer> dev_in, dev_out;
  std::unique_ptr<gpu::Queue> stream;
  rt::Task task;
};

std::unique_ptr<Buffers> make_buffers(rt::Device& d, const rt::Module& m, bool cuda) {
  auto b = std::make_unique<Buffers>();
  if (cuda) b->stream = std::make_unique<gpu::Queue>();
  auto host = [&](size_t bytes) {
    if (cuda) return b->pinned.emplace_back(bytes).data();
    return b->aligned.emplace_back(std::aligned_alloc(64, (bytes + 63) / 64 * 64), &std::free).get();
  };
  for (const auto& desc : m.inputs()) {
    b->in.push_back(host(desc.size));
    void* reg = b->in.back();
    if (cuda) reg = b->dev_in.emplace_back(desc.size).data();
    b->task.inputs.push_back(d.register_memory(reg, desc.size));
  }
  for (const auto& desc : m.outputs()) {
    b->out.push_back(host(desc.size));
    void* reg = b->out.back();
    if (cuda) reg = b->dev_out.emplace_back(desc.size).data();
    b->task.outputs.push_back(d.register_memory(reg, desc.size));
  }
  return b;
}

struct Stats {
  double min, mean, median, p90, p95, p99, max;
};
Stats stats(std::vector<double> v) {
  if (v.empty()) fail(Status::kInternal, "bench: no timed iteration to report");
  std::sort(v.begin(), v.end());
  auto pct = [&](double p) { return v[std::min(v.size() - 1, size_t(p * double(v.size())))]; };
  double sum = 0;
  for (double x : v) sum += x;
  return {v.front(), sum / double(v.size()), pct(0.5), pct(0.9), pct(0.95), pct(0.99), v.back()};
}

// Per-iteration times of the timed loop (ms): the H2D step, compute, the D2H step and their sum.
struct Timings {
  std::vector<double> h2d, compute, d2h, total;
  void add(double a, double b, double c) {
    h2d.push_back(a), compute.push_back(b), d2h.push_back(c), total.push_back(a + b + c);
  }
};

nlohmann::json latency_json(const Stats& L) {
  return {{"min", L.min}, {"mean", L.mean}, {"median", L.median}, {"p90", L.p90},
          {"p95", L.p95}, {"p99", L.p99},   {"max", L.max}};
}

// `how_h2d` / `how_d2h` name the copy steps ("H2D/pack" where packing is part of it).
void print_latency(const Stats& L, const Stats& H, const Stats& C, const Stats& D, const char* how_h2d,
                   const char* how_d2h, int iters, double wall_s, const char* scope) {
  std::printf("latency (ms): min %.3f  mean %.3f  median %.3f  p90 %.3f  p95 %.3f  p99 %.3f  max %.3f\n",
              L.min, L.mean, L.median, L.p90, L.p95, L.p99, L.max);
  std::printf("split (mean ms): %s %.3f  compute %.3f  %s %.3f\n", how_h2d, H.mean, C.mean, how_d2h, D.mean);
  std::printf("throughput: %.1f inferences/s over %d iterations in %.2f s%s\n", double(iters) / wall_s, iters,
              wall_s, scope);
}

// --exportTimes / --exportProfile: the JSON into `path`; a file that cannot be written is an error.
void write_json(const std::string& path, const nlohmann::json& j) { write_file(path, j.dump(1) + "\n"); }

// --dumpProfile / --exportProfile: per-layer milliseconds of the engine that was timed, into the JSON
// report and the export file; print_profile shows them.
void add_profile(const BenchFlags& f, const std::vector<std::pair<std::string, double>>& prof,
                 nlohmann::json& j) {
  nlohmann::json p = nlohmann::json::array();
  for (auto& [name, ms] : prof) p.push_back({{"name", name}, {"ms", ms}});
  if (!f.export_profile.empty()) write_json(f.export_profile, p);
  if (f.dump_profile) j["profile"] = p;
}

void print_profile(const nlohmann::json& j) {
  if (!j.contains("profile")) return;
  std::printf("per-layer profile:\n");
  for (auto& p : j["profile"])
    std::printf("  %-48s %8.3f ms\n", p["name"].get<std::string>().c_str(), p["ms"].get<double>());
}

std::vector<Tensor> seeded_noise(const std::vector<Shape>& shapes) {
  std::vector<Tensor> r;
  std::mt19937 gen(1);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (const Shape& s : shapes) {
    Tensor t(DType::kF32, s);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = nd(gen);
    r.push_back(t);
  }
  return r;
}

// --config=gpu-fp16|gpu-int8: the ONNX model on the GPU through the CUDA backend with the GPU's numerics
// (FP16 storage everywhere; or INT8 with the cache's scales, rounding half to even, FP32 where a scale
// is missing), timed like a loadable: H2D copy, compute, D2H copy.
void run_bench_gpu_model(const BenchFlags& f) {
  std::string why;
  if (!gpu::available(&why))
    fail(Status::kUnsupported, "--config=", f.config, " needs the CUDA backend: ", why);
  if (f.onnx.empty()) fail(Status::kInvalidArgument, "--config=", f.config, " needs --onnx=MODEL");
  ModelFlags mf;
  mf.model = f.onnx;
  mf.input_shape = f.input_shape;
  Graph g = import_onnx_file(f.onnx, mf.import_options());
  run_passes(g);
  quant::NumericsPlan plan;
  quant::ScaleTable scales;
  if (f.config == "gpu-int8") {
    if (f.calib.empty()) fail(Status::kInvalidArgument, "--config=gpu-int8 needs --calib=CACHE");
    scales = quant::read_calib_cache(f.calib);
    Placement p;
    p.layers.resize(g.nodes.size());
    for (auto& l : p.layers) l.device = Device::kGPU, l.precision = dla::Precision::kINT8;
    quant::NumericsOptions o;
    o.gpu_int8 = true;
    plan = quant::plan_numerics(g, p, &scales, o);
  } else {
    plan = quant::plan_uniform(g, quant::Mode::kFP16, nullptr);
  }
  gpu::GpuEngine e(g, plan);
  gpu::Queue stream;
  std::vector<Shape> shapes;
  for (int v : g.inputs) shapes.push_back(g.value(v).type.shape);
  const std::vector<Tensor> inputs = seeded_noise(shapes);
  std::vector<Tensor> outputs;
  for (int v : g.outputs) outputs.push_back(Tensor(g.value(v).type.dtype, g.value(v).type.shape));
  Timings times;
  auto one = [&](bool record) {
    auto t0 = Clock::now();
    for (size_t i = 0; i < inputs.size(); ++i) stream.copy(e.input(i), inputs[i].raw(), inputs[i].nbytes());
    stream.synchronize();
    const double a = ms_since(t0);
    auto t1 = Clock::now();
    e.enqueue(stream.stream());
    stream.synchronize();
    const double b = ms_since(t1);
    auto t2 = Clock::now();
    for (size_t i = 0; i < outputs.size(); ++i)
      stream.copy(outputs[i].raw(), e.output(i), outputs[i].nbytes());
    stream.synchronize();
    const double c = ms_since(t2);
    if (record) times.add(a, b, c);
  };
  const auto w0 = Clock::now();
  do one(false);
  while (ms_since(w0) < f.warmup_ms);
  const auto start = Clock::now();
  int n = 0;
  while (n < std::max(f.iterations, 1) || ms_since(start) < f.duration_s * 1000.0) one(true), ++n;
  const double wall_s = ms_since(start) / 1000.0;
  const Stats L = stats(times.total), C = stats(times.compute), H = stats(times.h2d), D = stats(times.d2h);
  nlohmann::json j;
  j["config"] = f.config;
  j["model"] = f.onnx;
  j["device"] = gpu::device_name();
  j["gpu_layers"] = e.gpu_nodes();
  j["layers"] = g.nodes.size();
  j["latency_ms"] = latency_json(L);
  j["split_ms_mean"] = {{"h2d", H.mean}, {"compute", C.mean}, {"d2h", D.mean}};
  j["throughput_qps"] = double(n) / wall_s;
  j["iterations"] = n;
  j["note"] =
      "dlakit's CUDA kernels (convolutions on cuBLASLt's tensor cores where they apply, the rest its own), "
      "not TensorRT: compare configurations with each other, not with TensorRT";
  if (!f.export_times.empty()) write_json(f.export_times, nlohmann::json(times.total));
  if (f.dump_profile || !f.export_profile.empty()) {
    TensorMap feeds;
    for (size_t i = 0; i < inputs.size(); ++i) feeds.emplace(g.value(g.inputs[i]).name, inputs[i]);
    const std::vector<double> ms = e.profile(feeds);
    std::vector<std::pair<std::string, double>> prof;
    for (size_t k = 0; k < ms.size(); ++k) prof.push_back({g.nodes[k].name, ms[k]});
    add_profile(f, prof, j);
  }
  if (f.json) {
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::printf("config %s: %s on %s, %d of %zu layers on the GPU\n", f.config.c_str(), f.onnx.c_str(),
              gpu::device_name().c_str(), e.gpu_nodes(), g.nodes.size());
  print_latency(L, H, C, D, "H2D", "D2H", n, wall_s, "");
  print_profile(j);
  std::printf("note: %s\n", j["note"].get<std::string>().c_str());
}

// --backend=cudla[:PATH]: the loadable through a cuDLA library (dlopen, the cuDLA C API only): on a
// Jetson, NVIDIA's libcudla.so.1 and the real DLA. One device handle per core and stream, each on its own
// thread, as with dlakit's runtime; H2D = pack + copy in, compute = submit + wait, D2H = copy out + unpack.
void run_bench_cudla(const BenchFlags& f, const std::string& blob, const std::vector<int>& cores) {
  if (f.dump_profile || !f.export_profile.empty())
    fail(Status::kUnsupported,
         "--dumpProfile/--exportProfile need dlakit's runtime (--backend=cpu or cuda): dlakit's cuDLA client "
         "does not read cuDLA's layer statistics");
  quant::ScaleTable io_scales;
  rt::RunnerOptions o;
  o.backend = f.backend;
  if (!f.calib.empty()) {
    io_scales = quant::read_calib_cache(f.calib);
    o.io_scales = &io_scales;
  }
  std::vector<std::unique_ptr<rt::EngineRunner>> engines;
  for (int c : cores)
    for (int s = 0; s < f.streams; ++s) {
      o.dla_core = c;
      engines.push_back(rt::EngineRunner::open(blob, o));
    }
  std::vector<Shape> shapes;
  for (const auto& in : engines[0]->inputs()) shapes.push_back(in.shape);
  const std::vector<Tensor> noise = seeded_noise(shapes);
  TensorMap feeds;
  for (size_t i = 0; i < noise.size(); ++i) feeds[engines[0]->inputs()[i].name] = noise[i];
  Timings times;
  auto one = [&](rt::EngineRunner& e, bool record) {
    auto t0 = Clock::now();
    e.set_inputs(feeds);
    const double a = ms_since(t0);
    auto t1 = Clock::now();
    e.execute();
    const double b = ms_since(t1);
    auto t2 = Clock::now();
    (void)e.outputs();
    const double c = ms_since(t2);
    if (record) times.add(a, b, c);
  };
  const auto w0 = Clock::now();
  while (ms_since(w0) < f.warmup_ms) one(*engines[0], false);
  std::atomic<int> done_iters{0};
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (size_t k = 0; k < engines.size(); ++k)
    threads.emplace_back([&, k] {  // the first handle's loop is the one whose latencies are reported
      for (int n = 0; n < f.iterations || ms_since(start) < f.duration_s * 1000.0; ++n, ++done_iters)
        one(*engines[k], k == 0);
    });
  for (auto& t : threads) t.join();
  const double wall_s = ms_since(start) / 1000.0;
  const Stats L = stats(times.total), C = stats(times.compute), H = stats(times.h2d), D = stats(times.d2h);
  const std::string where = engines[0]->where();
  nlohmann::json j;
  j["engine"] = f.engine;
  j["cores"] = cores;
  j["backend"] = "cudla: " + where;
  j["streams_per_core"] = f.streams;
  j["latency_ms"] = latency_json(L);
  j["split_ms_mean"] = {{"h2d_pack", H.mean}, {"compute", C.mean}, {"d2h_unpack", D.mean}};
  j["throughput_qps"] = double(done_iters) / wall_s;
  j["iterations"] = done_iters.load();
  j["note"] =
      "through the cuDLA C API: with NVIDIA's libcudla.so.1 compute is the DLA task on the hardware; with "
      "dlakit's, emulator timings";
  if (!f.export_times.empty()) write_json(f.export_times, nlohmann::json(times.total));
  if (f.json) {
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::printf("engine: %s via %s, core(s) %s, %d stream(s) per core\n", f.engine.c_str(), where.c_str(),
              f.cores.c_str(), f.streams);
  print_latency(L, H, C, D, "H2D/pack", "D2H/unpack", done_iters.load(), wall_s, " (all cores)");
  std::printf("note: %s\n", j["note"].get<std::string>().c_str());
}

void run_bench(BenchFlags f) {
  if (!f.config.empty()) {
    if (f.config == "gpu-fp16" || f.config == "gpu-int8") return run_bench_gpu_model(f);
    if (f.config == "dla-int8")
      f.cores = "0";
    else if (f.config == "dla-int8-2cores")
      f.cores = "all";
    else
      fail(Status::kInvalidArgument,
           "--config must be gpu-fp16, gpu-int8, dla-int8 or dla-int8-2cores, got '", f.config, "'");
  }
  if (f.engine.empty())
    fail(Status::kInvalidArgument,
         "--loadEngine=FILE.dla is required (or --config=gpu-fp16|gpu-int8 --onnx=M)");
  std::string cudla_library;
  const bool cudla = rt::parse_cudla_backend(f.backend, &cudla_library);
  if (f.backend != "cpu" && f.backend != "cuda" && !cudla)
    fail(Status::kInvalidArgument, "--backend must be cpu, cuda, cudla or cudla:PATH");
  const bool cuda = f.backend == "cuda";
  std::string why;
  if (cuda && !gpu::available(&why)) fail(Status::kUnsupported, "--backend=cuda: ", why);
  const std::string blob = read_file(f.engine);
  if (is_plan(reinterpret_cast<const uint8_t*>(blob.data()), blob.size()))
    fail(Status::kInvalidArgument, "--loadEngine '", f.engine,
         "' is a hybrid plan (DLA and GPU segments): bench times DLA loadables; `dlakit run --loadEngine ",
         f.engine,
         " --iterations N` times the plan; `dlakit build` without --allowGPUFallback gives a loadable");
  const auto* data = reinterpret_cast<const uint8_t*>(blob.data());
  std::vector<int> cores;
  if (f.cores == "all")
    cores = {0, 1};
  else if (f.cores == "0" || f.cores == "1")
    cores = {std::stoi(f.cores)};
  else
    fail(Status::kInvalidArgument, "--useDLACore must be 0, 1 or all");
  if (f.streams < 1 || f.streams > 16)
    fail(Status::kInvalidArgument, "--streams must be 1..16 (16 handles per core)");
  if (cudla) return run_bench_cudla(f, blob, cores);
  // One device handle (and module) per core and stream, as a cuDLA application would have.
  std::vector<std::unique_ptr<rt::Device>> devs;
  std::vector<std::unique_ptr<Buffers>> bufs;
  for (int c : cores)
    for (int s = 0; s < f.streams; ++s) {
      devs.push_back(std::make_unique<rt::Device>(c));
      devs.back()->load(data, blob.size());
      bufs.push_back(make_buffers(*devs.back(), devs.back()->module(), cuda));
    }
  const rt::Module& m = devs[0]->module();
  const nlohmann::json predicted =
      f.predict ? predict_board(m, f.power_mode) : nlohmann::json();  // bad mode: fail now
  if (f.config.rfind("dla-int8", 0) == 0 && !m.program().int8)
    fail(Status::kInvalidArgument, "--config=", f.config,
         " needs an INT8 loadable (dlakit build --int8 --calib=C)");
  // Inputs: seeded noise in NCHW float32, packed into each handle's buffers once, as trtexec fills its
  // input buffers once: the timed H2D step is the copy to the device (none on the CPU backend).
  std::vector<Shape> shapes;
  for (const auto& d : m.inputs()) shapes.push_back(d.network_shape);
  const std::vector<Tensor> inputs = seeded_noise(shapes);
  for (const auto& bk : bufs)
    for (size_t i = 0; i < inputs.size(); ++i) rt::pack(inputs[i], m.inputs()[i], bk->in[i]);
  Timings times;
  auto one = [&](size_t k, bool record) {
    auto t0 = Clock::now();
    Buffers& bk = *bufs[k];
    for (size_t i = 0; i < bk.dev_in.size(); ++i)
      bk.stream->copy(bk.dev_in[i].data(), bk.in[i], m.inputs()[i].size);
    if (bk.stream) bk.stream->synchronize();
    const double a = ms_since(t0);
    auto t1 = Clock::now();
    if (bk.stream) {  // on the app's stream, then wait for it (device handles order their own work)
      devs[k]->submit(bk.task, bk.stream->stream());
      bk.stream->synchronize();
    } else {
      devs[k]->submit(bk.task, nullptr);
    }
    const double b = ms_since(t1);
    auto t2 = Clock::now();
    for (size_t i = 0; i < bk.dev_out.size(); ++i)
      bk.stream->copy(bk.out[i], bk.dev_out[i].data(), m.outputs()[i].size);
    if (bk.stream) bk.stream->synchronize();
    for (size_t i = 0; i < m.outputs().size(); ++i) (void)rt::unpack(bk.out[i], m.outputs()[i]);
    const double c = ms_since(t2);
    if (record) times.add(a, b, c);
  };
  const auto w0 = Clock::now();
  while (ms_since(w0) < f.warmup_ms) one(0, false);
  // Timed: every device handle runs its own loop on its own thread; the cores run concurrently.
  std::mutex mu;
  std::atomic<int> done_iters{0};
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  std::exception_ptr failure;  // the first thread's failure, rethrown here (an exception leaving a thread
                               // would terminate the process)
  for (size_t k = 0; k < devs.size(); ++k)
    threads.emplace_back([&, k] {
      try {
        int n = 0;
        while (n < std::max(f.iterations, 1) || ms_since(start) < f.duration_s * 1000.0) {
          if (k == 0) {
            std::lock_guard<std::mutex> lk(mu);
            one(k, true);
          } else {
            one(k, false);
          }
          ++n;
          ++done_iters;
        }
      } catch (...) {
        std::lock_guard<std::mutex> lk(mu);
        if (!failure) failure = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
  const double wall_s = ms_since(start) / 1000.0;
  const Stats L = stats(times.total), C = stats(times.compute), H = stats(times.h2d), D = stats(times.d2h);
  nlohmann::json j;
  j["engine"] = f.engine;
  j["target"] = m.program().target;
  j["cores"] = cores;
  j["backend"] = cuda ? "cuda: " + gpu::device_name() : "cpu";
  j["streams_per_core"] = f.streams;
  j["latency_ms"] = latency_json(L);
  j["split_ms_mean"] = {{"h2d", H.mean}, {"compute", C.mean}, {"d2h_unpack", D.mean}};
  j["throughput_qps"] = double(done_iters) / wall_s;
  j["iterations"] = done_iters.load();
  j["note"] =
      std::string(cuda ? "emulated DLA on CUDA (dlakit's kernels)" : "emulated DLA on this machine's CPU") +
      ": emulator timings, not DLA hardware predictions; inputs packed once before the timed loop (as "
      "trtexec fills its buffers once), so H2D is the copy alone";
  if (!f.export_times.empty()) write_json(f.export_times, nlohmann::json(times.total));
  if (f.dump_profile || !f.export_profile.empty()) {
    // The profile of the executor that was timed: per operation, named by its first layer, the median of
    // kProfileRuns profiled runs (one run alone mostly shows the first operation waking the threads).
    constexpr int kProfileRuns = 10;
    const std::vector<const void*> in(bufs[0]->in.begin(), bufs[0]->in.end());
    std::vector<std::vector<double>> runs;
    for (int r = 0; r < kProfileRuns; ++r) {
      std::vector<double> ms;
      if (cuda) {
        ms = m.gpu_engine().profile(in, bufs[0]->out);
      } else {
        for (auto& [layer, t] : m.profile(in, bufs[0]->out)) ms.push_back(t);
      }
      runs.push_back(ms);
    }
    std::vector<std::pair<std::string, double>> prof;
    for (size_t i = 0; i < runs[0].size(); ++i) {
      std::vector<double> ms;
      for (const auto& run : runs) ms.push_back(run[i]);
      std::nth_element(ms.begin(), ms.begin() + long(ms.size() / 2), ms.end());
      prof.push_back({m.program().ops[i].steps[0].layer, ms[ms.size() / 2]});
    }
    add_profile(f, prof, j);
  }
  if (f.predict) j["predicted"] = predicted;
  if (f.json) {
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::printf("engine: %s (target %s), core(s) %s, %d stream(s) per core\n", f.engine.c_str(),
              m.program().target.c_str(), f.cores.c_str(), f.streams);
  print_latency(L, H, C, D, "H2D", "D2H/unpack", done_iters.load(), wall_s, " (all cores)");
  print_profile(j);
  std::printf("note: %s\n", j["note"].get<std::string>().c_str());
  if (j.contains("predicted")) print_prediction(j["predicted"]);
}

}  // namespace

void register_bench(CLI::App& app) {
  auto f = std::make_shared<BenchFlags>();
  CLI::App* sub = app.add_subcommand("bench",
                                     "Time a DLA loadable on the emulated DLA: latency percentiles, "
                                     "H2D/compute/D2H split, profile, both cores");
  sub->add_option("--loadEngine", f->engine, "The DLA loadable (.dla) from dlakit build")
      ->check(CLI::ExistingFile);
  sub->add_option("--backend", f->backend,
                  "cpu (the emulated DLA on the CPU; default), cuda (CUDA device buffers, tasks on a CUDA "
                  "stream, the emulated DLA on CUDA; DLAKIT_DLA_BACKEND=cpu keeps the CPU emulator there), "
                  "cudla (the system's libcudla.so.1 through the cuDLA C API: on a Jetson, the real DLA) or "
                  "cudla:PATH (a given libcudla.so.1)");
  sub->add_option("--config", f->config,
                  "One of the four configurations people compare: gpu-fp16 and gpu-int8 (--onnx, --calib; "
                  "the model on the GPU, CUDA backend), dla-int8 (an INT8 --loadEngine on one core), "
                  "dla-int8-2cores (on both cores at once)");
  sub->add_option("--onnx", f->onnx, "The ONNX model for --config=gpu-fp16|gpu-int8")
      ->check(CLI::ExistingFile);
  sub->add_option("--calib", f->calib,
                  "Calibration cache for --config=gpu-int8, or for --backend=cudla on a loadable dlakit did "
                  "not build (its int8 I/O scales)")
      ->check(CLI::ExistingFile);
  sub->add_option("--input-shape,--shapes", f->input_shape,
                  "Pin dynamic input dims of --onnx: name:1x3x224x224");
  sub->add_option("--warmUp", f->warmup_ms, "Warm-up time in ms (trtexec's meaning; default 200)")
      ->check(CLI::Range(0, 3600 * 1000));
  sub->add_option("--iterations", f->iterations,
                  "At least this many timed iterations (default 10; at least one always runs)")
      ->check(CLI::Range(0, 1000 * 1000 * 1000));
  sub->add_option("--duration", f->duration_s, "Run at least this many seconds (default 3)")
      ->check(CLI::Range(0.0, 24.0 * 3600));
  sub->add_option("--useDLACore", f->cores, "0, 1 or all (both cores concurrently)");
  sub->add_option("--streams", f->streams,
                  "Device handles (streams) per core, each with its own thread (1..16)")
      ->check(CLI::Range(1, 16));
  sub->add_option("--exportTimes", f->export_times, "Write per-iteration latencies (ms) as JSON");
  sub->add_flag(
      "--dumpProfile", f->dump_profile,
      "Print per-layer times (per operation of a loadable: the median of 10 profiled runs after the "
      "timed ones)");
  sub->add_option("--exportProfile", f->export_profile, "Write per-layer times as JSON");
  sub->add_flag("--json", f->json, "Print JSON");
  sub->add_flag("--predict", f->predict,
                "Also print the latency model's prediction for the board (trtexec-style Latency and "
                "Throughput lines marked [predicted]; JSON: a separate \"predicted\" object), beside the "
                "emulator's own timing");
  sub->add_option("--power-mode", f->power_mode, "Power mode for --predict: MAXN (default), 50W, 30W, 15W");
  sub->callback([f] { run_bench(*f); });
}

}  // namespace dlakit::cli
