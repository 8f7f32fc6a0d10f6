// The CUDA executor against the CPU executor on the same compiled programs: every DLA segment of real
// models (hybrid placement, FP16 and INT8), run on seeded inputs. INT8: equal value for value. FP16: the
// float sums of convolutions and matrix products run in another order on the GPU, so outputs agree within
// rounding (cosine >= 0.99999, docs/runtime.md; PP-OCRv4 det: fp16_cosine_bound.h). Skips without a
// GPU; fails with DLAKIT_REQUIRE_GPU=1.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "../common/require_gpu.h"
#include "../common/test_data.h"
#include "../common/test_paths.h"
#include "fp16_cosine_bound.h"
#include "gpu/gpu.h"
#include "gpu/program_engine.h"
#include "io/image.h"
#include "loadable/plan.h"
#include "onnx/importer.h"
#include "passes/passes.h"
#include "placement/placement.h"
#include "program/print.h"
#include "runtime/runtime.h"

using namespace dlakit;
namespace fs = std::filesystem;

namespace {

const fs::path kModels = fs::path(test_paths::source_dir()) / ".cache" / "models";

struct ModelSpec {
  std::string name, shapes;
};
// The models the GPU machine gets (tests/device/prepare_gpu_run.sh, within the 64 MiB a device call
// carries): regular, depthwise and transposed convolutions, FC, pools, resize, concat, transposes,
// hard-swish and sigmoid blocks.
const ModelSpec kModelsOnGpu[] = {{"mobilenet_v2", ""},          {"mobilenet_v3_small", ""},
                                  {"squeezenet1_1", ""},         {"ppocr_det", "x:1x3x320x320"},
                                  {"ppocr_cls", "x:1x3x48x192"}, {"blazeface_128", ""},
                                  {"mlsd_tiny_320", ""}};

std::string plan_of(const ModelSpec& m, bool int8) {
  ImportOptions o;
  o.input_shapes = parse_input_shapes(m.shapes);
  Graph g = import_onnx_file((kModels / (m.name + ".onnx")).string(), o);
  run_passes(g);
  PlacementOptions po;
  po.precision = int8 ? dla::Precision::kINT8 : dla::Precision::kFP16;
  const Placement p = place(g, po);
  if (!int8) return write_plan(g, p);
  const quant::ScaleTable scales = test_data::random_calibration(g, 1);
  return write_plan(g, p, &scales);
}

// A surface's values as an executor left them: from its arena, or from the task's output buffers.
Tensor surface_values(const prog::Surface& s, const std::vector<uint8_t>& sram,
                      const std::vector<uint8_t>& dram, const std::vector<void*>& out) {
  const uint8_t* base = nullptr;
  if (s.pool == prog::Pool::kSram) base = sram.data();
  if (s.pool == prog::Pool::kLocalDram) base = dram.data();
  if (s.pool == prog::Pool::kOutput) base = static_cast<const uint8_t*>(out.at(s.io_index));
  return base ? rt::unpack(base + s.offset, s.desc) : Tensor();
}

// Where a segment's outputs differ: the first operation (bisected over prefixes of the program) after which
// a surface it wrote differs between the executors, with that operation's text and its first differences.
// FP16 counts only differences above a few fp16 ulps (float sums in another order differ by one).
std::string first_difference(const rt::Module& mod, gpu::ProgramEngine& e, const std::vector<const void*>& in,
                             bool int8) {
  const prog::Program& p = mod.program();
  rt::CpuExecutor cpu(mod.prepared());
  std::vector<std::vector<uint8_t>> cb, gb;
  std::vector<void*> cp, gp;
  for (const rt::TensorDesc& d : mod.outputs()) {
    cb.emplace_back(d.size), gb.emplace_back(d.size);
    cp.push_back(cb.back().data()), gp.push_back(gb.back().data());
  }
  // Differences in what operation `oi` wrote, after running operations 0..oi on both.
  auto diff_after = [&](size_t oi) {
    cpu.run_prefix(in, cp, oi + 1);
    e.run_prefix(in, gp, oi + 1);
    const auto cs = cpu.arena(prog::Pool::kSram), cd = cpu.arena(prog::Pool::kLocalDram);
    const auto gs = e.arena(prog::Pool::kSram), gd = e.arena(prog::Pool::kLocalDram);
    std::string report;
    for (const prog::Step& st : p.ops[oi].steps)
      for (const prog::Ref& r : st.outputs) {
        if (r.kind != prog::Ref::Kind::kSurface) continue;
        const prog::Surface& sf = p.surfaces[r.index];
        const Tensor a = surface_values(sf, cs, cd, cp), b = surface_values(sf, gs, gd, gp);
        int64_t differ = 0;
        std::string first;
        for (int64_t i = 0; i < a.numel(); ++i) {
          const float x = a.data<float>()[i], y = b.data<float>()[i];
          if (int8 ? x == y : std::fabs(x - y) <= 4e-3f * std::max(1.f, std::fabs(x))) continue;
          if (differ++ < 4)
            first += " [" + std::to_string(i) + "] " + std::to_string(x) + " vs " + std::to_string(y);
        }
        if (differ)
          report += "  s" + std::to_string(r.index) + " '" + sf.desc.name + "': " + std::to_string(differ) +
                    " of " + std::to_string(a.numel()) + " differ (cpu vs cuda):" + first + "\n";
      }
    return report;
  };
  size_t lo = 0, hi = p.ops.size();  // the first op whose writes differ lies in [lo, hi)
  while (lo + 1 < hi) {
    const size_t mid = (lo + hi) / 2;
    if (diff_after(mid - 1).empty())
      lo = mid;
    else
      hi = mid;
  }
  const std::string report = diff_after(lo);
  if (report.empty()) return "no operation's surfaces differ";
  const std::string text = prog::to_text(p);
  const size_t at = text.find("  op" + std::to_string(lo) + " ");
  const size_t end = text.find("\n  op", at + 1);
  return "first difference after op" + std::to_string(lo) + ":\n" + report +
         (at == std::string::npos ? ""
                                  : text.substr(at, end == std::string::npos ? std::string::npos : end - at));
}

class CudaExecutor : public ::testing::TestWithParam<std::tuple<ModelSpec, bool>> {};

TEST_P(CudaExecutor, MatchesTheCpuExecutorOnEveryDlaSegment) {
  REQUIRE_GPU();
  const auto& [m, int8] = GetParam();
  const std::string plan = plan_of(m, int8);
  const PlanContents c = read_plan(reinterpret_cast<const uint8_t*>(plan.data()), plan.size());
  int segments = 0, fused_adds = 0;
  for (size_t si = 0; si < c.segments.size(); ++si) {
    if (!c.segments[si].dla) continue;
    ++segments;
    const std::string& bytes = c.segments[si].payload;
    rt::Module mod(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    std::vector<std::vector<uint8_t>> in, cpu, gpu;
    std::vector<const void*> ip;
    std::vector<void*> cp, gp;
    for (size_t i = 0; i < mod.inputs().size(); ++i) {
      const rt::TensorDesc& d = mod.inputs()[i];
      Graph shape_only;
      shape_only.inputs.push_back(shape_only.add_value(d.name, {DType::kF32, d.network_shape}));
      in.emplace_back(d.size);
      rt::pack(test_data::random_inputs(shape_only, uint32_t(100 * si + i)).at(d.name), d, in.back().data());
      ip.push_back(in.back().data());
    }
    for (const rt::TensorDesc& d : mod.outputs()) {
      cpu.emplace_back(d.size);
      gpu.emplace_back(d.size);
      cp.push_back(cpu.back().data());
      gp.push_back(gpu.back().data());
    }
    mod.execute(ip, cp);
    gpu::ProgramEngine& e = mod.gpu_engine();
    e.run(ip, gp);
    for (size_t k = 0; k < mod.outputs().size(); ++k) {
      const Tensor a = rt::unpack(cpu[k].data(), mod.outputs()[k]),
                   b = rt::unpack(gpu[k].data(), mod.outputs()[k]);
      int64_t differ = 0;
      double max_abs = 0;
      for (int64_t i = 0; i < a.numel(); ++i) {
        const float x = a.data<float>()[i], y = b.data<float>()[i];
        differ += !(x == y);  // values: -0 equals +0
        max_abs = std::max(max_abs, double(std::fabs(x - y)));
      }
      const double cos = test_data::cosine(a, b);
      std::printf(
          "%s %s segment %zu output %s: %lld of %lld differ, max |diff| %g, cosine %.9f; %d of %zu steps on "
          "the GPU, %d residual Adds fused\n",
          m.name.c_str(), int8 ? "int8" : "fp16", si, mod.outputs()[k].name.c_str(), (long long)differ,
          (long long)a.numel(), max_abs, cos, e.gpu_steps(), e.steps().size(), e.fused_adds());
      if (k == 0)
        for (const gpu::ProgramEngine::StepInfo& st : e.steps())
          if (!st.on_gpu) std::printf("  host step: %s: %s\n", st.layer.c_str(), st.why.c_str());
      const bool ok = int8 ? differ == 0 : cos >= fp16_cosine_bound(m.name);
      EXPECT_TRUE(ok) << m.name << " segment " << si << " output " << mod.outputs()[k].name << ": "
                      << (int8 ? "INT8 must be equal"
                               : "FP16 needs cosine >= " + std::to_string(fp16_cosine_bound(m.name)))
                      << "\n"
                      << first_difference(mod, e, ip, int8);
      if (!ok) break;
    }
    fused_adds += e.fused_adds();
  }
  EXPECT_GT(segments, 0) << m.name << " has no DLA segment";
  // MobileNetV2's inverted residual blocks end in a projection convolution and an Add: in INT8 those are
  // fused, so the comparison above covers the fused epilogue on a real model.
  if (m.name == "mobilenet_v2" && int8) {
    EXPECT_GT(fused_adds, 0);
  }
}

std::string label(const ::testing::TestParamInfo<std::tuple<ModelSpec, bool>>& info) {
  return std::get<0>(info.param).name + (std::get<1>(info.param) ? "_int8" : "_fp16");
}

INSTANTIATE_TEST_SUITE_P(RealModels, CudaExecutor,
                         ::testing::Combine(::testing::ValuesIn(kModelsOnGpu), ::testing::Bool()), label);

// PP-OCRv4 det in FP16 on a photograph (scenetext01.jpg at 320x320, ImageNet normalization as PaddleOCR's
// det): the seeded inputs above give a probability map of almost nothing but tiny values, where a few fp16
// ulps of the float sums' order weigh on the cosine; a real image gives the map the model is for. Issue
// #14's target, 0.99999, is asserted here.
TEST(CudaExecutor, Fp16DetOnAPhotographMeetsTheCosineTarget) {
  REQUIRE_GPU();
  const fs::path photo = fs::path(test_paths::source_dir()) / ".cache" / "images" / "scenetext01.jpg";
  ASSERT_TRUE(fs::exists(photo)) << photo << " is missing: run make fetch";
  const std::string plan = plan_of({"ppocr_det", "x:1x3x320x320"}, false);
  const PlanContents c = read_plan(reinterpret_cast<const uint8_t*>(plan.data()), plan.size());
  ASSERT_EQ(c.segments.size(), 1u) << "det in FP16 is one DLA graph";
  const std::string& bytes = c.segments[0].payload;
  rt::Module mod(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  ASSERT_EQ(mod.inputs().size(), 1u);
  ASSERT_EQ(mod.outputs().size(), 1u);
  Preprocess pre;
  pre.width = pre.height = 320;
  pre.mean = {0.485f, 0.456f, 0.406f};
  pre.std = {0.229f, 0.224f, 0.225f};
  std::vector<uint8_t> in(mod.inputs()[0].size), cpu(mod.outputs()[0].size), gpu(mod.outputs()[0].size);
  rt::pack(image_to_tensor(load_image(photo.string()), pre), mod.inputs()[0], in.data());
  mod.execute({in.data()}, {cpu.data()});
  mod.gpu_engine().run({in.data()}, {gpu.data()});
  const Tensor a = rt::unpack(cpu.data(), mod.outputs()[0]), b = rt::unpack(gpu.data(), mod.outputs()[0]);
  int64_t text = 0, differ = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    text += a.data<float>()[i] > 0.3f;
    differ += !(a.data<float>()[i] == b.data<float>()[i]);
  }
  const double cos = test_data::cosine(a, b);
  std::printf("ppocr_det fp16 on %s: %lld of %lld map values above 0.3 (CPU), %lld differ, cosine %.9f\n",
              photo.filename().c_str(), (long long)text, (long long)a.numel(), (long long)differ, cos);
  EXPECT_GT(text, 0) << "the photograph shows no text to the CPU executor: not the map this test is for";
  EXPECT_GE(cos, 0.99999);
}

// A MobileNetV2 INT8 DLA segment (the first) on the CUDA executor, with task buffers in device memory.
struct DeviceTasks {
  std::string plan = plan_of({"mobilenet_v2", ""}, true);
  PlanContents contents = read_plan(reinterpret_cast<const uint8_t*>(plan.data()), plan.size());
  std::unique_ptr<rt::Module> mod;
  gpu::Queue copies;                                        // host <-> device, any memory kinds
  std::vector<std::vector<gpu::DeviceBuffer>> buffer_sets;  // per set: inputs then outputs

  DeviceTasks() {
    for (const auto& seg : contents.segments)
      if (seg.dla && !mod)
        mod = std::make_unique<rt::Module>(reinterpret_cast<const uint8_t*>(seg.payload.data()),
                                           seg.payload.size());
  }
  size_t new_buffer_set() {
    buffer_sets.emplace_back();
    for (const rt::TensorDesc& d : mod->inputs()) buffer_sets.back().emplace_back(d.size);
    for (const rt::TensorDesc& d : mod->outputs()) buffer_sets.back().emplace_back(d.size);
    return buffer_sets.size() - 1;
  }
  // One task on buffer set `set` with inputs of `seed`, its outputs checked against the CPU executor's byte
  // for byte; returns the CPU executor's outputs.
  std::vector<std::vector<uint8_t>> run(size_t set, uint32_t seed) {
    const size_t ni = mod->inputs().size();
    std::vector<std::vector<uint8_t>> in, want, got;
    std::vector<const void*> ip, ip_dev;
    std::vector<void*> wp, op_dev;
    for (size_t i = 0; i < ni; ++i) {
      const rt::TensorDesc& d = mod->inputs()[i];
      Graph shape_only;
      shape_only.inputs.push_back(shape_only.add_value(d.name, {DType::kF32, d.network_shape}));
      in.emplace_back(d.size);
      rt::pack(test_data::random_inputs(shape_only, seed).at(d.name), d, in.back().data());
      ip.push_back(in.back().data());
      ip_dev.push_back(buffer_sets[set][i].data());
      copies.copy(buffer_sets[set][i].data(), in.back().data(), d.size);
    }
    for (size_t k = 0; k < mod->outputs().size(); ++k) {
      want.emplace_back(mod->outputs()[k].size), wp.push_back(want.back().data());
      op_dev.push_back(buffer_sets[set][ni + k].data());
    }
    copies.synchronize();
    mod->execute(ip, wp);
    mod->gpu_engine().enqueue(ip_dev, op_dev, nullptr);
    mod->gpu_engine().synchronize();
    for (size_t k = 0; k < op_dev.size(); ++k) {
      got.emplace_back(want[k].size());
      copies.copy(got.back().data(), op_dev[k], got.back().size());
    }
    copies.synchronize();
    for (size_t k = 0; k < got.size(); ++k) EXPECT_EQ(got[k], want[k]) << "output " << k;
    return want;
  }
};

// Tasks submitted again and again on the same device buffers replay the run recorded as a CUDA graph:
// each replay reads the inputs of its own task (three different inputs, then the first again), equal to
// the CPU executor's outputs byte for byte, which differ from seed to seed.
TEST(CudaExecutor, RepeatedTasksOnTheSameBuffersReplayWithTheirOwnInputs) {
  REQUIRE_GPU();
  DeviceTasks t;
  ASSERT_TRUE(t.mod);
  const size_t set = t.new_buffer_set();
  std::vector<std::vector<uint8_t>> first;
  for (uint32_t seed : {1u, 2u, 3u, 1u}) {
    SCOPED_TRACE("inputs of seed " + std::to_string(seed));
    const auto want = t.run(set, seed);
    if (first.empty())
      first = want;
    else if (seed != 1u)  // else a replay that ignored its inputs would still equal the CPU executor
      ASSERT_NE(want, first) << "these seeds' inputs give the first seed's outputs";
  }
}

// More buffer sets than the engine records graphs for (8): the later sets run their kernels one by one,
// and every task, on every set and again on the first, equals the CPU executor.
TEST(CudaExecutor, MoreBufferSetsThanRecordedGraphsStillRunEveryTask) {
  REQUIRE_GPU();
  DeviceTasks t;
  ASSERT_TRUE(t.mod);
  for (uint32_t k = 0; k < 10; ++k) {
    SCOPED_TRACE("buffer set " + std::to_string(k));
    t.run(t.new_buffer_set(), 20 + k);
  }
  SCOPED_TRACE("the first set again");
  t.run(0, 40);
}

}  // namespace
