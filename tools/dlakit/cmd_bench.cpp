// dlakit bench --loadEngine=model.dla: latency and throughput of a DLA loadable on the emulated DLA, with
// trtexec's flags: the split between host-to-device copy (pack), compute and device-to-host copy (unpack),
// a per-layer profile, and concurrency over both cores.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <thread>

#include "cli.h"
#include "runtime/runtime.h"

namespace dlakit::cli {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

struct BenchFlags {
  std::string engine, cores = "0", export_times, export_profile;
  int warmup_ms = 200, iterations = 10, streams = 1;
  double duration_s = 3;
  bool dump_profile = false, json = false;
};

struct Buffers {  // registered, 64-byte aligned host buffers for one in-flight task
  std::vector<void*> in, out;
  rt::Task task;
  ~Buffers() {
    for (void* p : in) std::free(p);
    for (void* p : out) std::free(p);
  }
};

std::unique_ptr<Buffers> make_buffers(rt::Device& d, const rt::Module& m) {
  auto b = std::make_unique<Buffers>();
  for (const auto& desc : m.inputs()) {
    b->in.push_back(std::aligned_alloc(64, (desc.size + 63) / 64 * 64));
    b->task.inputs.push_back(d.register_memory(b->in.back(), desc.size));
  }
  for (const auto& desc : m.outputs()) {
    b->out.push_back(std::aligned_alloc(64, (desc.size + 63) / 64 * 64));
    b->task.outputs.push_back(d.register_memory(b->out.back(), desc.size));
  }
  return b;
}

struct Stats {
  double min, mean, median, p90, p95, p99, max;
};
Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto pct = [&](double p) { return v[std::min(v.size() - 1, size_t(p * double(v.size())))]; };
  double sum = 0;
  for (double x : v) sum += x;
  return {v.front(), sum / double(v.size()), pct(0.5), pct(0.9), pct(0.95), pct(0.99), v.back()};
}

void run_bench(const BenchFlags& f) {
  const std::string blob = read_file(f.engine);
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
  // One device handle (and module) per core and stream, as a cuDLA application would have.
  std::vector<std::unique_ptr<rt::Device>> devs;
  std::vector<std::unique_ptr<Buffers>> bufs;
  for (int c : cores)
    for (int s = 0; s < f.streams; ++s) {
      devs.push_back(std::make_unique<rt::Device>(c));
      devs.back()->load(data, blob.size());
      bufs.push_back(make_buffers(*devs.back(), devs.back()->module()));
    }
  const rt::Module& m = devs[0]->module();
  // Inputs: seeded noise in NCHW float32, packed per descriptor for every iteration (the H2D step).
  std::vector<Tensor> inputs;
  std::mt19937 gen(1);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (const auto& d : m.inputs()) {
    Tensor t(DType::kF32, d.network_shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = nd(gen);
    inputs.push_back(t);
  }
  std::vector<double> h2d, compute, d2h, total;
  auto one = [&](size_t k, bool record) {
    auto t0 = Clock::now();
    for (size_t i = 0; i < inputs.size(); ++i) rt::pack(inputs[i], m.inputs()[i], bufs[k]->in[i]);
    const double a = ms_since(t0);
    auto t1 = Clock::now();
    devs[k]->submit(bufs[k]->task, nullptr);
    const double b = ms_since(t1);
    auto t2 = Clock::now();
    for (size_t i = 0; i < m.outputs().size(); ++i) (void)rt::unpack(bufs[k]->out[i], m.outputs()[i]);
    const double c = ms_since(t2);
    if (record) {
      h2d.push_back(a);
      compute.push_back(b);
      d2h.push_back(c);
      total.push_back(a + b + c);
    }
  };
  const auto w0 = Clock::now();
  while (ms_since(w0) < f.warmup_ms) one(0, false);
  // Timed: every device handle runs its own loop on its own thread; the cores run concurrently.
  std::mutex mu;
  std::atomic<int> done_iters{0};
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (size_t k = 0; k < devs.size(); ++k)
    threads.emplace_back([&, k] {
      int n = 0;
      while (n < f.iterations || ms_since(start) < f.duration_s * 1000.0) {
        if (k == 0) {
          std::lock_guard<std::mutex> lk(mu);
          one(k, true);
        } else {
          one(k, false);
        }
        ++n;
        ++done_iters;
      }
    });
  for (auto& t : threads) t.join();
  const double wall_s = ms_since(start) / 1000.0;
  const Stats L = stats(total), C = stats(compute), H = stats(h2d), D = stats(d2h);
  nlohmann::json j;
  j["engine"] = f.engine;
  j["target"] = m.loadable().target;
  j["cores"] = cores;
  j["streams_per_core"] = f.streams;
  j["latency_ms"] = {{"min", L.min}, {"mean", L.mean}, {"median", L.median}, {"p90", L.p90},
                     {"p95", L.p95}, {"p99", L.p99},   {"max", L.max}};
  j["split_ms_mean"] = {{"h2d_pack", H.mean}, {"compute", C.mean}, {"d2h_unpack", D.mean}};
  j["throughput_qps"] = double(done_iters) / wall_s;
  j["iterations"] = done_iters.load();
  j["note"] = "emulated DLA on this machine's CPU: these are emulator timings, not DLA hardware predictions";
  if (!f.export_times.empty()) std::ofstream(f.export_times) << nlohmann::json(total).dump() << "\n";
  if (f.dump_profile || !f.export_profile.empty()) {
    auto prof = m.profile(std::vector<const void*>(bufs[0]->in.begin(), bufs[0]->in.end()), bufs[0]->out);
    nlohmann::json p = nlohmann::json::array();
    for (auto& [name, ms] : prof) p.push_back({{"name", name}, {"ms", ms}});
    if (!f.export_profile.empty()) std::ofstream(f.export_profile) << p.dump(1) << "\n";
    if (f.dump_profile) j["profile"] = p;
  }
  if (f.json) {
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::printf("engine: %s (target %s), core(s) %s, %d stream(s) per core\n", f.engine.c_str(),
              m.loadable().target.c_str(), f.cores.c_str(), f.streams);
  std::printf("latency (ms): min %.3f  mean %.3f  median %.3f  p90 %.3f  p95 %.3f  p99 %.3f  max %.3f\n",
              L.min, L.mean, L.median, L.p90, L.p95, L.p99, L.max);
  std::printf("split (mean ms): H2D/pack %.3f  compute %.3f  D2H/unpack %.3f\n", H.mean, C.mean, D.mean);
  std::printf("throughput: %.1f inferences/s over %d iterations in %.2f s (all cores)\n",
              double(done_iters) / wall_s, done_iters.load(), wall_s);
  if (j.contains("profile")) {
    std::printf("per-layer profile:\n");
    for (auto& p : j["profile"])
      std::printf("  %-48s %8.3f ms\n", p["name"].get<std::string>().c_str(), p["ms"].get<double>());
  }
  std::printf("note: %s\n", j["note"].get<std::string>().c_str());
}

}  // namespace

void register_bench(CLI::App& app) {
  auto f = std::make_shared<BenchFlags>();
  CLI::App* sub = app.add_subcommand("bench",
                                     "Time a DLA loadable on the emulated DLA: latency percentiles, "
                                     "H2D/compute/D2H split, profile, both cores");
  sub->add_option("--loadEngine", f->engine, "The DLA loadable (.dla) from dlakit build")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("--warmUp", f->warmup_ms, "Warm-up time in ms (trtexec's meaning; default 200)");
  sub->add_option("--iterations", f->iterations, "At least this many timed iterations (default 10)");
  sub->add_option("--duration", f->duration_s, "Run at least this many seconds (default 3)");
  sub->add_option("--useDLACore", f->cores, "0, 1 or all (both cores concurrently)");
  sub->add_option("--streams", f->streams, "Device handles (streams) per core, each with its own thread");
  sub->add_option("--exportTimes", f->export_times, "Write per-iteration latencies (ms) as JSON");
  sub->add_flag("--dumpProfile", f->dump_profile, "Print per-layer times");
  sub->add_option("--exportProfile", f->export_profile, "Write per-layer times as JSON");
  sub->add_flag("--json", f->json, "Print JSON");
  sub->callback([f] { run_bench(*f); });
}

}  // namespace dlakit::cli
