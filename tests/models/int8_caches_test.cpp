// Calibration caches that work with TensorRT and with real TensorRT caches (issue #13, parts 8 and 9):
//   - `qdq-to-cache` on the project's QAT ResNet-18 writes the 34 entries NVIDIA's qdq-translator writes
//     (its 17 quantized tensors plus the 17 its default rules copy across Relu and MaxPool), each copied
//     scale bit for bit its source's;
//   - every real cache in /work/shared/data/trt-caches builds: retina_lp's on its own network (the full model
//     as a hybrid plan, its DLA part standalone), the four without a model on a model carrying their names
//     (a chain of 1x1 convolutions whose tensors are the cache's names, in the cache's order), through the
//     `dlakit build` command line;
//   - a cache for another model is a clear error.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include <unistd.h>

#include "../common/test_paths.h"
#include "base/file.h"
#include "onnx/exporter.h"
#include "onnx/importer.h"
#include "passes/passes.h"
#include "quant/cache_fit.h"
#include "quant/qdq.h"

namespace fs = std::filesystem;
using namespace dlakit;
using namespace dlakit::quant;

namespace {

const fs::path kSource = test_paths::source_dir();
// The five real caches (and retina_lp's model) are the project's shared test data, not part of the
// repository (three of their sources state no licence): $DLAKIT_TRT_CACHES, shared/data/trt-caches in the
// checkout, or /work/shared/data/trt-caches. Empty when none is there.
fs::path caches_dir() {
  std::vector<fs::path> where = {kSource / "shared" / "data" / "trt-caches", "/work/shared/data/trt-caches"};
  if (const char* env = std::getenv("DLAKIT_TRT_CACHES")) where.insert(where.begin(), env);
  for (const fs::path& p : where)
    if (fs::exists(p / "retina_lp_trt8501_entropy2.cache")) return p;
  return {};
}
#define NEED_CACHES()                                                                           \
  if (caches_dir().empty())                                                                     \
  GTEST_SKIP() << "the real TensorRT caches are not here: set DLAKIT_TRT_CACHES to the shared " \
                  "data/trt-caches folder"

struct CliRun {
  int status = -1;
  std::string output;
};
// `dlakit ARGS` with stdout and stderr together.
CliRun run_cli(const std::string& args) {
  const fs::path log =
      fs::temp_directory_path() / ("dlakit_int8_caches_" + std::to_string(::getpid()) + ".log");
  CliRun r;
  r.status =
      std::system((std::string(test_paths::cli()) + " " + args + " > " + log.string() + " 2>&1").c_str());
  r.output = read_file(log.string());
  fs::remove(log);
  return r;
}

std::string bits(float f) { return scale_to_hex(f); }

}  // namespace

TEST(QdqTranslatorParity, ResNet18WritesTheTranslatorsThirtyFourEntries) {
  Graph g = import_onnx_file((kSource / ".cache" / "models" / "resnet18_qdq.onnx").string(), {});
  const ScaleTable t = fold_qdq(g);
  ASSERT_EQ(t.scales.size(), 34u);
  // The 17 quantized tensors are the input, the max pool's output and 15 block ReLU outputs (every Conv
  // input).
  int relu_outputs = 0;
  for (auto& [name, s] : t.scales)
    relu_outputs += name.find("/Relu") != std::string::npos && name.find("layer") != std::string::npos;
  // Copied by the translator's rules (backward through Relu and MaxPool): each block ReLU's input (the
  // batch norm or residual Add output), the stem ReLU's output (from the max pool) and its input.
  std::vector<std::pair<std::string, std::string>> copied = {
      {"/relu/Relu_output_0", "/maxpool/MaxPool_output_0"},
      {"/bn1/BatchNormalization_output_0", "/maxpool/MaxPool_output_0"}};
  for (const char* layer : {"layer1", "layer2", "layer3", "layer4"})
    for (int block = 0; block < 2; ++block) {
      const std::string b = std::string("/") + layer + "/" + layer + "." + std::to_string(block);
      copied.push_back({b + "/bn1/BatchNormalization_output_0", b + "/relu/Relu_output_0"});
      if (!(std::string(layer) == "layer4" && block == 1))  // its relu_1 feeds the pooling: no Q/DQ there
        copied.push_back({b + "/Add_output_0", b + "/relu_1/Relu_output_0"});
    }
  ASSERT_EQ(copied.size(), 17u);
  for (auto& [to, from] : copied) {
    ASSERT_NE(t.find_scale(to), nullptr) << to;
    ASSERT_NE(t.find_scale(from), nullptr) << from;
    EXPECT_EQ(bits(*t.find_scale(to)), bits(*t.find_scale(from))) << to << " <- " << from;
  }
  EXPECT_EQ(relu_outputs,
            15);  // quantized block ReLU outputs (all but layer4.1's last, which feeds the pooling)
  // The cache `qdq-to-cache` writes: the same 34, the header in the TensorRT version asked for.
  const fs::path out = fs::temp_directory_path() / "dlakit_r18_qdq.cache";
  const CliRun r = run_cli("qdq-to-cache " + (kSource / ".cache/models/resnet18_qdq.onnx").string() + " -o " +
                           out.string() + " --jetpack 6.0");
  ASSERT_EQ(r.status, 0) << r.output;
  const ScaleTable written = read_calib_cache(out.string());
  EXPECT_EQ(written.trt_version, 8602);
  ASSERT_EQ(written.scales.size(), 34u);
  for (auto& [name, s] : t.scales) EXPECT_EQ(bits(*written.find_scale(name)), bits(s)) << name;
  fs::remove(out);
}

TEST(RealTensorRtCaches, RetinaLpBuildsOnItsOwnNetwork) {
  NEED_CACHES();
  const fs::path dir = caches_dir(), model = dir / "retina_lp_reduced.onnx",
                 cache = dir / "retina_lp_trt8501_entropy2.cache";
  ASSERT_TRUE(fs::exists(model)) << model;
  const fs::path tmp = fs::temp_directory_path() / "dlakit_retina";
  fs::create_directories(tmp);
  // The whole model: a hybrid plan (its heads' Concat/Reshape run on the GPU).
  CliRun r = run_cli("build --onnx=" + model.string() + " --int8 --calib " + cache.string() +
                     " --allowGPUFallback --saveEngine " + (tmp / "retina.plan").string());
  ASSERT_EQ(r.status, 0) << r.output;
  // 26 of the 126 names belong to the FPN level the reduced export lacks: a warning naming them.
  EXPECT_NE(r.output.find("26 of the cache's 126 tensor names are not in this model"), std::string::npos)
      << r.output;
  // Its DLA part as one standalone loadable: the cache names each Conv output before its fused LeakyReLU,
  // which dlakit's passes fold away as TensorRT's fusions do.
  ASSERT_EQ(run_cli("split " + model.string() + " --output-dir " + (tmp / "split").string()).status, 0);
  r = run_cli("build --onnx=" + (tmp / "split" / "segment_0_dla.onnx").string() + " --int8 --calib " +
              cache.string() + " --saveEngine " + (tmp / "retina.dla").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("layers in INT8"), std::string::npos) << r.output;
  // The scales the network takes are the cache's, bit for bit, where the names agree.
  Graph imported = import_onnx_file(model.string(), {});
  Graph kept = imported;
  run_passes(kept);
  const ScaleTable c = read_calib_cache(cache.string());
  const CacheFit fit = fit_cache(c, kept, imported);
  EXPECT_EQ(
      fit.kept.size() + fit.folded.size() + fit.mapped.size() + fit.unknown.size() + fit.internal.size(),
      126u);
  EXPECT_EQ(fit.unknown.size(), 26u);
  EXPECT_FALSE(fit.folded.empty());  // the Conv outputs before their LeakyReLU
  for (const std::string& n : fit.folded) EXPECT_NE(n.find("Conv_output_0"), std::string::npos) << n;
  for (const std::string& n : fit.kept)
    EXPECT_EQ(bits(*fit.scales.find_scale(n)), bits(*c.find_scale(n))) << n;
  fs::remove_all(tmp);
}

namespace {

// A chain of 1x1 convolutions whose tensors are `names` in order (the first is the input), 4 channels of
// 4x4: a model carrying a cache's names.
Graph chain(const std::vector<std::string>& names) {
  Graph g;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  int x = g.add_value(names[0], {DType::kF32, {1, 4, 4, 4}});
  g.inputs = {x};
  for (size_t i = 1; i < names.size(); ++i) {
    Tensor w(DType::kF32, {4, 4, 1, 1});
    for (int64_t k = 0; k < w.numel(); ++k) w.data<float>()[k] = u(rng);
    Node n;
    n.op = OpKind::Conv;
    n.name = std::string("conv").append(std::to_string(i));
    n.opset = 13;
    n.inputs = {x, g.add_constant(std::string("w").append(std::to_string(i)), w)};
    x = g.add_value(names[i], {DType::kF32, {1, 4, 4, 4}});
    n.outputs = {x};
    g.nodes.push_back(n);
  }
  g.outputs = {x};
  g.opset = 13;
  g.relink();
  return g;
}

void build_with_names_of(const std::string& file, const std::string& header_warning) {
  SCOPED_TRACE(file);
  const fs::path cache = caches_dir() / file;
  const ScaleTable c = read_calib_cache(cache.string());
  std::vector<std::string> names;
  for (auto& [name, s] : c.scales)
    if (name.rfind("(Unnamed Layer* ", 0) != 0) names.push_back(name);
  const Graph g = chain(names);
  std::vector<int> all(g.nodes.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = int(i);
  const fs::path onnx = fs::temp_directory_path() / (file + ".onnx"),
                 dla = fs::temp_directory_path() / (file + ".dla");
  {
    std::ofstream f(onnx, std::ios::binary);
    f << export_onnx(g, all, g.inputs, g.outputs, "names_of_" + file);
  }
  const CliRun r = run_cli("build --onnx=" + onnx.string() + " --int8 --calib " + cache.string() +
                           " --saveEngine " + dla.string());
  ASSERT_EQ(r.status, 0) << r.output;
  // Every layer INT8 (each of its tensors has a range > 0), except where the cache says 0.
  const CacheFit fit = fit_cache(c, g, g);
  EXPECT_EQ(fit.kept.size(), names.size());
  EXPECT_TRUE(fit.unknown.empty());
  for (const std::string& n : fit.kept) {
    if (*c.find_scale(n) > 0) {
      EXPECT_EQ(bits(*fit.scales.find_scale(n)), bits(*c.find_scale(n))) << n;
    }
  }
  const size_t layers = names.size() - 1;
  if (fit.zero.empty()) {
    EXPECT_NE(r.output.find("INT8: " + std::to_string(layers) + " layers in INT8"), std::string::npos)
        << r.output;
  }
  if (!header_warning.empty()) {
    EXPECT_NE(r.output.find(header_warning), std::string::npos) << r.output;
  }
  fs::remove(onnx);
  fs::remove(dla);
}

}  // namespace

TEST(RealTensorRtCaches, EveryCacheWithoutItsModelBuildsAModelCarryingItsNames) {
  NEED_CACHES();
  build_with_names_of("ssd300_tf_trt7203_entropy2.cache", "");
  build_with_names_of("vgg16_torchtrt_trt8400_minmax.cache", "header says MinMaxCalibration");
  build_with_names_of("yolov5_deepstream_trt8502_entropy2.table", "");
  build_with_names_of("yolov5_qat_qdqtranslator_trt8600.cache", "");
}

TEST(RealTensorRtCaches, ACacheForAnotherModelIsAClearError) {
  NEED_CACHES();
  const CliRun r =
      run_cli("build --onnx=" + (kSource / ".cache/models/resnet18.onnx").string() + " --int8 --calib " +
              (caches_dir() / "yolov5_deepstream_trt8502_entropy2.table").string() + " --saveEngine " +
              (fs::temp_directory_path() / "dlakit_wrong.dla").string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(
      r.output.find("does not fit this model: 430 of its 431 tensor names are not tensors of the model"),
      std::string::npos)
      << r.output;
}
