// Golden outputs of every DLA segment of the real models, FP16 and INT8, recorded from the emulated DLA
// before the loadable became a compiled program (issue #11), and the executors held to them.
//
// Each model is imported, optimised and placed as `dlakit build --allowGPUFallback` does (standalone
// models are one DLA segment). INT8 builds use a calibration stored in the golden file, so later changes
// to the calibrators cannot move the goldens. Every DLA segment is loaded as a module and run on
// seeded inputs at its own boundary (fp16:chw16 in, as the plan writes it), so GPU segments (FP32, whose
// float order may change) never feed a golden. Recorded per output: a hash of the float32 values
// (-0 as +0) and a strided sample of them.
//
// DLAKIT_UPDATE_GOLDEN=1 re-records the exact outputs from the current executor (with the recorded INT8
// calibration), keeping the rest of each file; a missing file is written whole (the v1 records stay in git
// history).
//
// Bit for bit holds on one CPU kernel set: the float steps (FP16 layers computed in fp32, INT8 layers'
// float epilogues and host steps) sum in the order of the SIMD kernels that run them (`sgemm_isa()`), so
// an AVX2 machine rounds a few values differently from the AVX-512 machine that recorded the files. Each
// exact output therefore carries the recording machine's hash and, per other kernel set where it differs,
// its own (`hash_by_isa`), recorded with DLAKIT_UPDATE_GOLDEN=isa only after the samples were found within
// kIsaBound of the recorded ones; on every other run the hash alone decides, and a mismatch reports the
// samples' gap.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../common/test_data.h"
#include "../common/test_paths.h"
#include "engine/engine.h"
#include "kernels/gemm.h"
#include "loadable/loadable.h"
#include "loadable/plan.h"
#include "onnx/importer.h"
#include "passes/passes.h"
#include "placement/placement.h"
#include "plan_generated.h"
#include "program/format.h"
#include "program/print.h"
#include "quant/calib_cache.h"
#include "runtime/runtime.h"

using namespace dlakit;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kSource = test_paths::source_dir();
const fs::path kGolden = kSource / "tests" / "golden" / "programs";

// The largest difference between the v1 CPU runtime's FP16 (every layer rounded to fp16) and the
// program's FP16 (the numerics plan: fused pipelines in fp32) at any sampled output, relative to the
// output's largest sampled magnitude: measured at most 0.0059 (PP-OCRv4 det) over the 136 outputs.
constexpr double kFp16RuntimeBound = 0.01;
// How far another CPU kernel set's float summation order may move a sample, relative to the output's
// peak: a few fp16 roundings (2^-11 each) flipping, and through them an int8 level or two.
constexpr double kIsaBound = 0.002;

struct ModelSpec {
  std::string name, shapes;
};
const ModelSpec kModels[] = {{"resnet18", ""},
                             {"resnet50", ""},
                             {"mobilenet_v2", ""},
                             {"googlenet", ""},
                             {"tiny_yolo", ""},
                             {"blazeface_128", ""},
                             {"squeezenet1_1", ""},
                             {"mobilenet_v3_small", ""},
                             {"efficientnet_b0", ""},
                             {"shufflenet_v2_x1_0", ""},
                             {"densenet121", ""},
                             {"ssdlite_mbv2", ""},
                             {"mlsd_tiny_320", ""},
                             {"lraspp_mobilenet_v3", ""},
                             {"ppocr_det", "x:1x3x320x320"},
                             {"ppocr_rec", "x:1x3x48x320"},
                             {"ppocr_cls", "x:1x3x48x192"}};

// A fixed generator (not the library's distributions, whose output may change between versions):
// values in [-2, 2) from a 64-bit LCG, never all zero.
std::vector<float> seeded_values(int64_t n, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = float(int32_t(s >> 40) - (1 << 23)) / float(1 << 22);
  }
  return v;
}

uint64_t hash_values(const Tensor& t) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the float32 bits, -0 as +0
  for (int64_t i = 0; i < t.numel(); ++i) {
    float x = t.data<float>()[i];
    if (x == 0) x = 0;
    uint32_t bits;
    std::memcpy(&bits, &x, 4);
    for (int b = 0; b < 4; ++b) h = (h ^ ((bits >> (8 * b)) & 0xffu)) * 1099511628211ull;
  }
  return h;
}

json describe(const Tensor& t) {
  json o;
  o["shape"] = t.shape();
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, hash_values(t));
  o["hash"] = buf;
  const int64_t stride = std::max<int64_t>(1, t.numel() / 64);
  o["sample_stride"] = stride;
  json s = json::array();
  for (int64_t i = 0; i < t.numel(); i += stride) s.push_back(t.data<float>()[i]);
  o["samples"] = s;
  return o;
}

struct Built {
  std::string plan;
  std::string cache;  // INT8: the calibration the build used (TensorRT cache text)
};

Built build(const ModelSpec& m, bool int8, const std::string& stored_cache) {
  ImportOptions o;
  o.input_shapes = parse_input_shapes(m.shapes);
  Graph g = import_onnx_file((kSource / ".cache" / "models" / (m.name + ".onnx")).string(), o);
  // The records pin the executor on the segments they were made from, before the DLA rewrites (#12)
  // changed where segments break: those stay off here (placement_test covers them).
  PassOptions passes;
  passes.disabled = {"adjust-for-dla"};
  run_passes(g, passes);
  PlacementOptions po;
  po.precision = int8 ? dla::Precision::kINT8 : dla::Precision::kFP16;
  const Placement p = place(g, po);
  Built b;
  if (!int8) {
    b.plan = write_plan(g, p);
    return b;
  }
  const quant::ScaleTable scales = stored_cache.empty() ? test_data::random_calibration(g, 2)
                                                        : quant::parse_calib_cache(stored_cache, "golden");
  b.cache = quant::format_calib_cache(scales);
  b.plan = write_plan(g, p, &scales);
  return b;
}

// Runs every DLA segment of the plan on seeded inputs; the golden JSON of what came out.
json run_dla_segments(const std::string& plan) {
  const auto* p = fbp::GetPlan(plan.data());
  json segs = json::array();
  for (flatbuffers::uoffset_t s = 0; s < p->segments()->size(); ++s) {
    const fbp::Segment* seg = p->segments()->Get(s);
    if (seg->device() != fbp::Device_DLA) continue;
    rt::Module m(seg->payload()->data(), seg->payload()->size());
    std::vector<std::vector<uint8_t>> in(m.inputs().size()), out(m.outputs().size());
    std::vector<const void*> ip;
    std::vector<void*> op;
    TensorMap feeds;
    for (size_t i = 0; i < m.inputs().size(); ++i) {
      const rt::TensorDesc& d = m.inputs()[i];
      Tensor x(DType::kF32, d.network_shape);
      const std::vector<float> v = seeded_values(x.numel(), 1000 * s + i);
      std::memcpy(x.data<float>(), v.data(), v.size() * 4);
      in[i].resize(d.size);
      rt::pack(x, d, in[i].data());
      ip.push_back(in[i].data());
      feeds[d.name] = rt::unpack(in[i].data(), d);
    }
    for (size_t k = 0; k < m.outputs().size(); ++k) {
      out[k].resize(m.outputs()[k].size);
      op.push_back(out[k].data());
    }
    json js;
    js["segment"] = s;
    js["layers"] = m.program().layers;
    try {
      m.execute(ip, op);
    } catch (const std::exception& e) {  // recorded: a format change must not hide a failure
      js["error"] = e.what();
      segs.push_back(js);
      continue;
    }
    for (size_t k = 0; k < m.outputs().size(); ++k)
      js["outputs"][m.outputs()[k].name] = describe(rt::unpack(out[k].data(), m.outputs()[k]));
    segs.push_back(js);
  }
  return segs;
}

// The largest difference between two equally long sample lists, relative to the first's largest magnitude.
double relative_gap(const json& want, const json& got) {
  double peak = 0, diff = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    peak = std::max(peak, std::fabs(want[i].get<double>()));
    diff = std::max(diff, std::fabs(want[i].get<double>() - got[i].get<double>()));
  }
  return diff / std::max(peak, 1e-6);
}

std::string read_text(const fs::path& f) {
  std::ifstream in(f);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The whole text, made before anything is written, into a file beside f that then replaces it: a recording
// that throws or fails to write leaves the old file as it was.
void write_text(const fs::path& f, const std::string& text) {
  const fs::path part = f.string() + ".part";
  {
    std::ofstream out(part);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + part.string());
  }
  fs::rename(part, f);
}

class ProgramGolden : public ::testing::TestWithParam<std::tuple<ModelSpec, bool>> {};

TEST_P(ProgramGolden, DlaSegmentsReproduceTheRecordedOutputs) {
  const auto& [m, int8] = GetParam();
  if (!fs::exists(kSource / ".cache" / "models" / (m.name + ".onnx"))) GTEST_SKIP() << "run make fetch";
  const fs::path file = kGolden / (m.name + (int8 ? ".int8.json" : ".fp16.json"));
  const char* update_env = std::getenv("DLAKIT_UPDATE_GOLDEN");
  const bool add_isa = update_env && std::string(update_env) == "isa";
  const bool update = update_env && !add_isa;
  json want;
  if (fs::exists(file))
    want = json::parse(read_text(file));
  else
    ASSERT_TRUE(update) << file << " is missing; DLAKIT_UPDATE_GOLDEN=1 records it";
  // A new recording keeps the recorded calibration, so that only the executor's change shows in its diff.
  const Built b = build(m, int8, want.is_object() ? want.value("calibration", "") : "");
  json got;
  got["model"] = m.name;
  got["shapes"] = m.shapes;
  got["precision"] = int8 ? "int8" : "fp16";
  if (int8) got["calibration"] = b.cache;
  got["isa"] = sgemm_isa();  // the kernel set the hashes are from
  got["segments"] = run_dla_segments(b.plan);
  const std::string isa = sgemm_isa();
  const bool recording_isa =
      isa == (want.is_object() ? want.value("isa", std::string("avx512")) : std::string("avx512"));
  const char* exact_key = int8 ? "outputs" : "plan_outputs";
  if (update && !want.is_object()) {  // a new file: the program's outputs are its exact record
    if (!int8)
      for (json& seg : got["segments"])
        if (seg.contains("outputs")) seg[exact_key] = seg["outputs"];
    fs::create_directories(kGolden);
    write_text(file, got.dump() + "\n");
    return;
  }
  if (update) {
    // Re-records the exact outputs from this executor, keeping the rest of the file (an FP16 file's v1
    // runtime records, the calibration). Another kernel set's hash is kept where the recorded output kept
    // its value and dropped where it changed: only a run on that kernel set can record it again.
    ASSERT_TRUE(recording_isa) << file << " was recorded on " << want.value("isa", std::string("avx512"))
                               << "; on " << isa << " only DLAKIT_UPDATE_GOLDEN=isa applies";
    ASSERT_EQ(got["segments"].size(), want["segments"].size()) << "DLA segments of " << m.name;
    for (size_t s = 0; s < want["segments"].size(); ++s) {
      json& w_seg = want["segments"][s];
      const json& g_seg = got["segments"][s];
      w_seg["layers"] = g_seg["layers"];
      // The segment's error and its exact outputs as this executor has them now: an output it no longer
      // has goes, and so does an error it no longer raises.
      if (g_seg.contains("error"))
        w_seg["error"] = g_seg["error"];
      else
        w_seg.erase("error");
      json exact = json::object();
      const json outputs = g_seg.value("outputs", json::object());
      for (auto& [name, g] : outputs.items()) {
        const json w = w_seg.contains(exact_key) ? w_seg[exact_key].value(name, json()) : json();
        const bool kept = w.is_object() && w.value("hash", std::string()) == g["hash"].get<std::string>();
        exact[name] = g;
        if (kept && w.contains("hash_by_isa")) exact[name]["hash_by_isa"] = w["hash_by_isa"];
      }
      if (exact.empty())
        w_seg.erase(exact_key);
      else
        w_seg[exact_key] = exact;
    }
    write_text(file, want.dump() + "\n");
    return;
  }
  bool added = false;  // a hash_by_isa entry (DLAKIT_UPDATE_GOLDEN=isa)
  // INT8: bit for bit what the v1 runtime computed. FP16: bit for bit what the numerics plan's emulation
  // computed (SDP chains fused in fp32, constants in fp16: `plan_outputs`, what `compare --fp16` and the
  // CUDA backend ran), which the program's rules are; the v1 CPU runtime rounded every layer's output
  // instead (`outputs` of FP16 files), so against it the program is compared within a bound.
  ASSERT_EQ(got["segments"].size(), want["segments"].size()) << "DLA segments of " << m.name;
  for (size_t s = 0; s < want["segments"].size(); ++s) {
    const json& w_seg = want["segments"][s];
    const json& g_seg = got["segments"][s];
    EXPECT_EQ(g_seg.value("error", ""), w_seg.value("error", "")) << m.name << " segment " << s;
    if (!w_seg.contains("outputs") || !g_seg.contains("outputs")) continue;
    ASSERT_TRUE(w_seg.contains(exact_key)) << file << " segment " << s << " has no " << exact_key;
    for (auto& [name, w] : w_seg[exact_key].items()) {
      const json& g = g_seg["outputs"][name];
      ASSERT_EQ(g["samples"].size(), w["samples"].size()) << m.name << " segment " << s << " output " << name;
      size_t differ = 0;
      std::string first;
      for (size_t i = 0; i < w["samples"].size(); ++i)
        if (w["samples"][i] != g["samples"][i] && differ++ == 0)
          first =
              "sample " + std::to_string(i) + ": " + g["samples"][i].dump() + " vs " + w["samples"][i].dump();
      const std::string where = m.name + " segment " + std::to_string(s) + " output " + name + " (" +
                                std::to_string(differ) + " of " + std::to_string(w["samples"].size()) +
                                " samples differ; " + first + ")";
      if (recording_isa) {
        EXPECT_EQ(g["hash"], w["hash"]) << where;
        continue;
      }
      // Another kernel set: bit for bit its own hash, recorded only within kIsaBound of the recorded samples
      // (a hash equal to the one recorded means the same samples, so the bound gates the recording alone).
      const double gap = relative_gap(w["samples"], g["samples"]);
      if (add_isa && g["hash"] != w["hash"]) {
        EXPECT_LE(gap, kIsaBound) << where << " on " << isa;
        want["segments"][s][exact_key][name]["hash_by_isa"][isa] = g["hash"];
        added = true;
        continue;
      }
      const bool own = w.contains("hash_by_isa") && w["hash_by_isa"].contains(isa);
      EXPECT_EQ(g["hash"], own ? w["hash_by_isa"][isa] : w["hash"])
          << where << " on " << isa << ", relative gap " << gap << " (bound " << kIsaBound << ")"
          << (own ? "" : " (DLAKIT_UPDATE_GOLDEN=isa records this kernel set's hash)");
    }
    if (int8) continue;
    for (auto& [name, w] : w_seg["outputs"].items()) {
      const json& a = w["samples"];
      const json& b = g_seg["outputs"][name]["samples"];
      ASSERT_EQ(a.size(), b.size());
      EXPECT_LE(relative_gap(a, b), kFp16RuntimeBound)
          << m.name << " segment " << s << " output " << name << ": the v1 runtime's per-layer rounding";
    }
  }
  if (added && !::testing::Test::HasFailure()) write_text(file, want.dump() + "\n");
}

std::string label(const ::testing::TestParamInfo<std::tuple<ModelSpec, bool>>& info) {
  return std::get<0>(info.param).name + (std::get<1>(info.param) ? "_int8" : "_fp16");
}

INSTANTIATE_TEST_SUITE_P(RealModels, ProgramGolden,
                         ::testing::Combine(::testing::ValuesIn(kModels), ::testing::Bool()), label);

}  // namespace

// `dlakit info model.dla --dump program` on two real models (FP16 standalone loadables, fp16:chw16 I/O):
// the operations, surfaces, memory plan and constants as text, against files reviewed when recorded
// (DLAKIT_UPDATE_GOLDEN=1 rewrites them; review the diff). A change in lowering, fusion or the memory plan
// shows here as text.
namespace {

class ProgramText : public ::testing::TestWithParam<const char*> {};

TEST_P(ProgramText, DumpMatchesTheRecordedText) {
  const std::string name = GetParam();
  Graph g = import_onnx_file((kSource / ".cache" / "models" / (name + ".onnx")).string());
  run_passes(g);
  PlacementOptions po;
  po.standalone = true;
  place(g, po);  // throws if the model cannot be one DLA graph
  LoadableOptions lo;
  lo.inputs.assign(g.inputs.size(), rt::IoSpec{});
  lo.outputs.assign(g.outputs.size(), rt::IoSpec{});
  const std::string bytes = write_loadable(g, lo);
  const std::string text =
      prog::to_text(prog::deserialize(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  const fs::path file = kGolden / (name + ".fp16.program.txt");
  if (std::getenv("DLAKIT_UPDATE_GOLDEN")) {
    write_text(file, text);
    GTEST_SKIP() << "recorded " << file;
  }
  ASSERT_TRUE(fs::exists(file)) << file << " is missing; run with DLAKIT_UPDATE_GOLDEN=1 to record it";
  std::ifstream in(file);
  const std::string want((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, want) << name << ": the program's text differs from " << file;
}

INSTANTIATE_TEST_SUITE_P(RealModels, ProgramText, ::testing::Values("squeezenet1_1", "mobilenet_v2"));

}  // namespace
