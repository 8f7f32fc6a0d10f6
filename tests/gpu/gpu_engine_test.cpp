// The emulated DLA on CUDA against the CPU emulation (the oracle), on real models with random inputs:
// INT8 outputs must be equal, FP16 / FP32 within float rounding. Skips where no GPU answers (CI).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>

#include "../common/require_gpu.h"
#include "../common/test_data.h"
#include "../common/test_paths.h"
#include "base/fp16.h"
#include "engine/gpu_engine.h"
#include "gpu/gpu.h"
#include "gpu/layer_emit.h"
#include "kernels/registry.h"
#include "loadable/plan.h"
#include "loadable/plan_executor.h"
#include "onnx/importer.h"
#include "passes/passes.h"
#include "placement/placement.h"
#include "quant/calibrate.h"
#include "quant/numerics.h"

#if DLAKIT_WITH_CUDA
#include "gpu/conv_f16_gemm.h"
#include "gpu/implicit_gemm.h"
#include "gpu/kernels.h"
#endif

using namespace dlakit;
using dlakit::test_data::cosine;
using dlakit::test_data::random_calibration;
using dlakit::test_data::random_inputs;
namespace fs = std::filesystem;

namespace {
// The models of the build's source tree, or of DLAKIT_SOURCE_DIR (test_paths: the GPU machine runs a copy).
const fs::path kModels = fs::path(test_paths::source_dir()) / ".cache" / "models";

int64_t differing(const Tensor& a, const Tensor& b) {  // values, so -0 equals +0; NaN equals NaN
  int64_t d = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const float x = a.data<float>()[i], y = b.data<float>()[i];
    d += !(x == y || (x != x && y != y));
  }
  return d;
}

// `as_imported`: without the DLA rewrites (squeezenet keeps its global pool, so a plan has a GPU segment).
Graph load(const std::string& name, bool as_imported = false) {
  const fs::path f = kModels / (name + ".onnx");
  if (!fs::exists(f)) throw std::runtime_error(f.string() + " is missing: run make fetch");
  ImportOptions o;
  if (name == "ppocr_det") o.input_shapes = parse_input_shapes("x:1x3x320x320");  // dynamic in the file
  Graph g = import_onnx_file(f.string(), o);
  PassOptions passes;
  if (as_imported) passes.disabled = {"adjust-for-dla"};
  run_passes(g, passes);
  return g;
}

quant::NumericsPlan int8_plan(const Graph& g) {
  PlacementOptions po;
  po.precision = dla::Precision::kINT8;
  const Placement p = place(g, po);
  const quant::ScaleTable scales = random_calibration(g, 1);
  return quant::plan_numerics(g, p, &scales);
}
}  // namespace

TEST(GpuBackend, ReportsWhyItIsUnavailableOrNamesTheDevice) {
  std::string why;
  if (gpu::available(&why)) {
    EXPECT_FALSE(gpu::device_name().empty());
  } else {
    EXPECT_FALSE(why.empty());
    EXPECT_THROW(gpu::Queue(), Error);  // a clear error, not a crash
  }
}

class GpuModel : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuModel, Int8IsBitExactWithTheCpuEmulation) {
  REQUIRE_GPU();
  const Graph g = load(GetParam());
  const quant::NumericsPlan plan = int8_plan(g);
  ASSERT_GT(plan.int8_nodes, 0);
  gpu::GpuEngine gpu_engine(g, plan);
  quant::EmulatedEngine cpu_engine(g, plan);
  const TensorMap in = random_inputs(g, 7);
  const TensorMap want = cpu_engine.run(in), got = gpu_engine.run(in);
  int host = 0;
  for (auto& n : gpu_engine.nodes()) host += !n.on_gpu;
  std::printf("%s INT8: %d of %zu layers on the GPU, %d on the host\n", GetParam().c_str(),
              gpu_engine.gpu_nodes(), g.nodes.size(), host);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!gpu_engine.nodes()[i].on_gpu)
      std::printf("  on the host: %s (%s): %s\n", g.nodes[i].label().c_str(), op_name(g.nodes[i].op),
                  gpu_engine.nodes()[i].why.c_str());
  EXPECT_GT(gpu_engine.gpu_nodes(), int(g.nodes.size()) / 2);
  for (auto& [name, w] : want) {
    ASSERT_EQ(got.at(name).numel(), w.numel());
    EXPECT_EQ(differing(got.at(name), w), 0) << name << ": INT8 CUDA output differs from the CPU's";
  }
}

TEST_P(GpuModel, Fp16AndFp32MatchTheCpuWithinRounding) {
  REQUIRE_GPU();
  const Graph g = load(GetParam());
  const TensorMap in = random_inputs(g, 9);
  for (quant::Mode mode : {quant::Mode::kFP32, quant::Mode::kFP16}) {
    const quant::NumericsPlan plan = quant::plan_uniform(g, mode, nullptr);
    gpu::GpuEngine gpu_engine(g, plan);
    quant::EmulatedEngine cpu_engine(g, plan);
    const TensorMap want = cpu_engine.run(in), got = gpu_engine.run(in);
    std::printf("%s %s: %d of %zu layers on the GPU\n", GetParam().c_str(), quant::mode_name(mode),
                gpu_engine.gpu_nodes(), g.nodes.size());
    EXPECT_GT(gpu_engine.gpu_nodes(), int(g.nodes.size()) / 2);
    for (auto& [name, w] : want) {
      const double c = cosine(got.at(name), w);
      std::printf("  %s cosine %.7f\n", name.c_str(), c);
      EXPECT_GE(c, 0.99999) << name;  // issue #14's FP16 target, det included (0.9999924 through GpuEngine)
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RealModels, GpuModel,
                         ::testing::Values("mobilenet_v2", "squeezenet1_1", "ppocr_det"),
                         [](const auto& info) { return info.param; });

namespace {
// A fully connected layer "fc" then `reader` (test_data::fc_graph), random weights and bias in [-1, 1].
struct FcCase {
  OpKind op;
  bool trans_b;
  Shape bias;  // empty: none
  OpKind reader;
  int64_t N, K, M;
};

Tensor uniform(const Shape& s, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  Tensor t(DType::kF32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

Graph fc_case_graph(const FcCase& c, std::mt19937& rng) {
  const Tensor w = uniform(c.trans_b ? Shape{c.M, c.K} : Shape{c.K, c.M}, rng);
  const Tensor bias = c.bias.empty() ? Tensor() : uniform(c.bias, rng);
  return test_data::fc_graph(c.op, w, c.bias.empty() ? nullptr : &bias, c.N, c.trans_b, c.reader);
}
}  // namespace

// INT8 fully connected layers run on the GPU as 1x1 convolutions (cuBLASLt's int8 GEMM), bit for bit the
// CPU's exact integer sums: Gemm with either weight layout and a bias of M or 1 x M values, and MatMul; sizes
// that are no multiple of 4, 16 or 32; followed by a Relu fused into the layer's pipeline (fp32 between
// them) or an Identity (the layer's output stored as int8).
TEST(GpuBackend, Int8FullyConnectedLayersAreBitExactOnTheGpu) {
  REQUIRE_GPU();
  const FcCase cases[] = {{OpKind::Gemm, true, {13}, OpKind::Identity, 3, 301, 13},
                          {OpKind::Gemm, false, {1, 37}, OpKind::Relu, 5, 67, 37},
                          {OpKind::MatMul, false, {}, OpKind::Identity, 1, 2048, 1000},
                          {OpKind::Gemm, true, {1000}, OpKind::Relu, 33, 1280, 1000}};
  std::mt19937 rng(11);
  for (const FcCase& c : cases) {
    const Graph g = fc_case_graph(c, rng);
    const quant::ScaleTable scales = random_calibration(g, 3);
    const quant::NumericsPlan plan = quant::plan_uniform(g, quant::Mode::kINT8, &scales);
    ASSERT_EQ(quant::step_rules(g, plan, 0).exact_int8_conv, true) << op_name(c.op);
    gpu::GpuEngine gpu_engine(g, plan);
    quant::EmulatedEngine cpu_engine(g, plan);
    EXPECT_TRUE(gpu_engine.nodes().at(0).on_gpu) << op_name(c.op) << " K=" << c.K;
    const TensorMap in = {{"x", uniform({c.N, c.K}, rng)}};
    const Tensor want = cpu_engine.run(in).at("z"), got = gpu_engine.run(in).at("z");
    ASSERT_EQ(got.numel(), want.numel());
    EXPECT_EQ(differing(got, want), 0) << op_name(c.op) << " N=" << c.N << " K=" << c.K << " M=" << c.M;
  }
}

// FP16 fully connected layers: Gemm with transB and a bias of M values ([M] or [1, M]) runs as a 1x1
// convolution on the fp16 tensor cores, the others (a per-row bias [N, 1] with N == M, transB 0, MatMul) on
// the plain kernel; all within the sums' rounding of the CPU emulation, on the fp16 grid.
TEST(GpuBackend, Fp16FullyConnectedLayersMatchTheCpu) {
  REQUIRE_GPU();
  const FcCase cases[] = {{OpKind::Gemm, true, {13}, OpKind::Identity, 3, 301, 13},
                          {OpKind::Gemm, true, {1, 1000}, OpKind::Identity, 33, 1280, 1000},
                          {OpKind::Gemm, true, {13, 1}, OpKind::Identity, 13, 301, 13},
                          {OpKind::Gemm, false, {1, 37}, OpKind::Identity, 5, 67, 37},
                          {OpKind::MatMul, false, {}, OpKind::Identity, 1, 2048, 1000}};
  std::mt19937 rng(19);
  for (const FcCase& c : cases) {
    const Graph g = fc_case_graph(c, rng);
    const quant::NumericsPlan plan = quant::plan_uniform(g, quant::Mode::kFP16, nullptr);
    gpu::GpuEngine gpu_engine(g, plan);
    quant::EmulatedEngine cpu_engine(g, plan);
    EXPECT_TRUE(gpu_engine.nodes().at(0).on_gpu) << op_name(c.op);
    const TensorMap in = {{"x", uniform({c.N, c.K}, rng)}};
    const Tensor want = cpu_engine.run(in).at("z"), got = gpu_engine.run(in).at("z");
    ASSERT_EQ(got.numel(), want.numel());
    int64_t off_grid = 0;
    for (int64_t i = 0; i < got.numel(); ++i)
      off_grid += round_to_half(got.data<float>()[i]) != got.data<float>()[i];
    EXPECT_EQ(off_grid, 0) << op_name(c.op);
    EXPECT_GE(cosine(got, want), 0.99999) << op_name(c.op) << " N=" << c.N << " K=" << c.K << " M=" << c.M;
  }
}

namespace {
// g as the one node n reading graph input x (its outputs the graph's), run in FP32, FP16 and INT8 on the GPU
// and in the CPU emulation on random inputs of `shape` (uniform in [-spread, spread]): on the GPU or not as
// `on_gpu` says, the same bits.
void expect_one_node_bit_exact(Graph& g, const Node& n, int x, const Shape& shape, bool on_gpu,
                               const std::string& what, std::mt19937& rng, float spread = 1.f) {
  g.nodes = {n};
  g.inputs = {x};
  g.outputs = n.outputs;
  g.relink();
  const quant::ScaleTable scales = random_calibration(g, 3);
  for (quant::Mode mode : {quant::Mode::kFP32, quant::Mode::kFP16, quant::Mode::kINT8}) {
    const quant::NumericsPlan plan = quant::plan_uniform(g, mode, &scales);
    gpu::GpuEngine gpu_engine(g, plan);
    quant::EmulatedEngine cpu_engine(g, plan);
    const std::string where = what + " " + quant::mode_name(mode);
    EXPECT_EQ(gpu_engine.nodes().at(0).on_gpu, on_gpu) << where << ": " << gpu_engine.nodes().at(0).why;
    Tensor values = uniform(shape, rng);
    for (int64_t i = 0; i < values.numel(); ++i) values.data<float>()[i] *= spread;
    const TensorMap in = {{"x", values}};
    const Tensor want = cpu_engine.run(in).at("y"), got = gpu_engine.run(in).at("y");
    ASSERT_EQ(got.numel(), want.numel()) << where;
    EXPECT_EQ(differing(got, want), 0) << where;
  }
}
}  // namespace

// Resize of the last two axes on the GPU (PP-OCRv4 det's neck upsamples six times): nearest and linear, with
// scales and with sizes, up and down, odd sizes, several coordinate modes; bit for bit the CPU's in FP32 and
// in FP16 and INT8 (where the GPU runs it instead of a host step). align_corners stays a host step: the
// reference resizes every axis in its general path there (no unchanged axis counts as identity).
TEST(GpuBackend, ResizeIsBitExactOnTheGpu) {
  REQUIRE_GPU();
  struct Case {
    const char* mode;
    const char* coord;
    Shape in;
    std::vector<float> scales;   // or
    std::vector<int64_t> sizes;  // one of the two
    int64_t opset = 13;          // 10: scales are input 1 (asymmetric coordinates, "simple" nearest)
    bool on_gpu = true;
  };
  const Case cases[] = {{"nearest", "asymmetric", {1, 5, 7, 9}, {1, 1, 2, 2}, {}},
                        {"nearest", "half_pixel", {2, 3, 5, 6}, {}, {2, 3, 11, 13}},
                        {"nearest", "asymmetric", {1, 3, 4, 9}, {1, 1, 1, 2}, {}},  // rows unchanged
                        {"linear", "half_pixel", {1, 6, 7, 9}, {1, 1, 2, 2}, {}},
                        {"linear", "asymmetric", {1, 4, 6, 8}, {}, {1, 4, 13, 5}},
                        {"linear", "pytorch_half_pixel", {1, 3, 10, 7}, {1, 1, 0.5f, 1.5f}, {}},
                        {"nearest", "", {1, 2, 5, 5}, {1, 1, 2, 3}, {}, 10},
                        {"linear", "align_corners", {1, 4, 6, 8}, {}, {1, 4, 13, 5}, 13, false}};
  std::mt19937 rng(23);
  for (const Case& c : cases) {
    Graph g;
    const int x = g.add_value("x", {DType::kF32, c.in});
    Node n;
    n.op = OpKind::Resize;
    n.name = "resize";
    n.opset = c.opset;
    n.attrs["mode"] = std::string(c.mode);
    if (c.opset >= 11) {
      n.attrs["coordinate_transformation_mode"] = std::string(c.coord);
      n.attrs["nearest_mode"] = std::string("floor");
      n.inputs = {x, -1};
    } else {
      n.inputs = {x};
    }
    if (!c.scales.empty()) {
      Tensor t(DType::kF32, {int64_t(c.scales.size())});
      std::memcpy(t.raw(), c.scales.data(), t.nbytes());
      n.inputs.push_back(g.add_constant("scales", t));
    } else {
      Tensor t(DType::kI64, {int64_t(c.sizes.size())});
      std::memcpy(t.raw(), c.sizes.data(), t.nbytes());
      n.inputs.push_back(-1);
      n.inputs.push_back(g.add_constant("sizes", t));
    }
    n.outputs = {g.add_value("y", op_impl(OpKind::Resize).infer(InferContext(g, n))[0])};
    expect_one_node_bit_exact(g, n, x, c.in, c.on_gpu,
                              std::string(c.mode) + " " + c.coord + " opset " + std::to_string(c.opset), rng);
  }
}

// Softmax on the GPU (PP-OCRv4's classifier and recognizer end with one): rows of 2 to 6625 values, the
// last axis, an inner axis (channels at each pixel), opset 11's coercion to 2-D and more rows than the
// launch's blocks; inputs spread so that some exponentials are subnormal or 0. Bit for bit the CPU's in FP32,
// FP16 and INT8 (an FP16 layer there, once a host step): both sides take numerics::exp_float and sum in the
// same order.
TEST(GpuBackend, SoftmaxIsBitExactOnTheGpu) {
  REQUIRE_GPU();
  struct Case {
    Shape in;
    int64_t axis, opset;
    float spread;
  };
  const Case cases[] = {{{3, 2}, 1, 13, 4.f},         {{2, 5, 37}, -1, 13, 30.f},
                        {{1, 40, 6625}, 2, 13, 12.f}, {{2, 7, 5, 9}, 1, 13, 60.f},
                        {{2, 3, 5, 7}, 1, 11, 8.f},   {{1, 300, 3}, 1, 13, 110.f},
                        {{1, 2, 1100000}, 1, 13, 6.f}};  // more rows than blocks: a block takes a second row
  std::mt19937 rng(29);
  for (const Case& c : cases) {
    Graph g;
    const int x = g.add_value("x", {DType::kF32, c.in});
    Node n;
    n.op = OpKind::Softmax;
    n.name = "softmax";
    n.opset = c.opset;
    n.attrs["axis"] = c.axis;
    n.inputs = {x};
    n.outputs = {g.add_value("y", {DType::kF32, c.in})};
    expect_one_node_bit_exact(g, n, x, c.in, true,
                              "Softmax " + shape_str(c.in) + " axis " + std::to_string(c.axis) + " opset " +
                                  std::to_string(c.opset),
                              rng, c.spread);
  }
}

// MaxPool and AveragePool on the GPU (ResNet's stem pool, and the average pools of classifiers): odd planes,
// strides, asymmetric pads, dilation, ceil mode, both padding counts and a stem-sized plane, bit for bit the
// CPU's in FP32, FP16 and INT8; then NaN in MaxPool's windows.
TEST(GpuBackend, PoolingIsBitExactOnTheGpu) {
  REQUIRE_GPU();
  struct Case {
    OpKind op;
    Shape in;
    std::vector<int64_t> kernel, strides, pads, dilations;
    int64_t ceil_mode = 0, count_include_pad = 0;
  };
  const Case cases[] = {{OpKind::MaxPool, {2, 5, 11, 13}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}},
                        {OpKind::MaxPool, {1, 3, 9, 7}, {2, 3}, {1, 2}, {0, 2, 1, 0}, {2, 1}},
                        {OpKind::MaxPool, {1, 4, 8, 10}, {3, 2}, {3, 3}, {2, 1, 2, 1}, {}, 1},  // ceil mode
                        {OpKind::MaxPool, {2, 16, 112, 112}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}},
                        {OpKind::AveragePool, {2, 5, 11, 13}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 0, 0},
                        {OpKind::AveragePool, {2, 5, 11, 13}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 0, 1},
                        {OpKind::AveragePool, {1, 3, 10, 9}, {4, 3}, {3, 2}, {2, 1, 1, 2}, {}, 1, 1},
                        {OpKind::AveragePool, {3, 70, 7, 7}, {7, 7}, {1, 1}, {0, 0, 0, 0}, {}}};
  std::mt19937 rng(31);
  for (const Case& c : cases) {
    Graph g;
    const int x = g.add_value("x", {DType::kF32, c.in});
    Node n;
    n.op = c.op;
    n.name = "pool";
    n.opset = 13;
    n.attrs["kernel_shape"] = c.kernel, n.attrs["strides"] = c.strides, n.attrs["pads"] = c.pads;
    if (!c.dilations.empty()) n.attrs["dilations"] = c.dilations;
    n.attrs["ceil_mode"] = c.ceil_mode;
    if (c.op == OpKind::AveragePool) n.attrs["count_include_pad"] = c.count_include_pad;
    n.inputs = {x};
    n.outputs = {g.add_value("y", op_impl(n.op).infer(InferContext(g, n))[0])};
    expect_one_node_bit_exact(g, n, x, c.in, true,
                              std::string(op_name(c.op)) + " of " + shape_str(c.in) + " kernel " +
                                  shape_str(c.kernel) + " pads " + shape_str(c.pads) + " ceil " +
                                  std::to_string(c.ceil_mode) + " include_pad " +
                                  std::to_string(c.count_include_pad),
                              rng);
  }
  // NaN: std::max from -inf, as the reference takes it, never lets a NaN win, wherever it stands in the
  // window (the kernel once kept a window's first value when it was NaN). Windows {NaN, 1}, {2, NaN} and
  // {NaN, NaN}: 1, 2 and -inf.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Graph g;
  const int x = g.add_value("x", {DType::kF32, {1, 1, 1, 6}});
  Node n;
  n.op = OpKind::MaxPool;
  n.name = "pool";
  n.opset = 13;
  n.attrs["kernel_shape"] = std::vector<int64_t>{1, 2}, n.attrs["strides"] = std::vector<int64_t>{1, 2};
  n.inputs = {x};
  n.outputs = {g.add_value("y", op_impl(n.op).infer(InferContext(g, n))[0])};
  g.nodes = {n}, g.inputs = {x}, g.outputs = n.outputs;
  g.relink();
  for (quant::Mode mode : {quant::Mode::kFP32, quant::Mode::kFP16}) {
    const quant::NumericsPlan plan = quant::plan_uniform(g, mode, nullptr);
    gpu::GpuEngine gpu_engine(g, plan);
    ASSERT_TRUE(gpu_engine.nodes().at(0).on_gpu) << gpu_engine.nodes().at(0).why;
    Tensor values(DType::kF32, {1, 1, 1, 6});
    const float in[] = {nan, 1.f, 2.f, nan, nan, nan};
    std::memcpy(values.raw(), in, sizeof(in));
    const Tensor got = gpu_engine.run({{"x", values}}).at("y");
    const Tensor cpu = quant::EmulatedEngine(g, plan).run({{"x", values}}).at("y");
    ASSERT_EQ(got.numel(), 3);
    const float want[] = {1.f, 2.f, -std::numeric_limits<float>::infinity()};
    for (int64_t i = 0; i < 3; ++i) {
      EXPECT_EQ(cpu.data<float>()[i], want[i]) << quant::mode_name(mode) << " window " << i << " on the CPU";
      EXPECT_EQ(got.data<float>()[i], want[i]) << quant::mode_name(mode) << " window " << i << " on the GPU";
    }
  }
}

#if DLAKIT_WITH_CUDA
// The pool kernel's 32-bit indices (kernels.h): where pool2d_fits draws the line. Host code: runs without a
// GPU.
TEST(GpuBackend, PoolBoundsKeepTheKernelIndicesIn32Bits) {
  namespace k = gpu::k;
  k::PoolGeom stem;  // ResNet-50's stem pool, as many planes as fit below 2^31 input values
  stem.H = stem.W = 112, stem.OH = stem.OW = 56, stem.KH = stem.KW = 3, stem.SH = stem.SW = 2;
  stem.PT = stem.PL = stem.PB = stem.PR = 1;
  k::PoolGeom g = stem;
  g.NC = INT32_MAX / (112 * 112);
  EXPECT_TRUE(k::pool2d_fits(g));
  ++g.NC;
  EXPECT_FALSE(k::pool2d_fits(g)) << "2^31 input values or more";
  g = stem;
  g.NC = 1, g.H = (int64_t(1) << 30) - 2, g.W = 1, g.OH = g.H, g.OW = 1, g.KH = 1, g.KW = 1, g.SH = g.SW = 1;
  g.PL = g.PR = 0;
  EXPECT_TRUE(k::pool2d_fits(g)) << "a padded side of exactly 2^30";
  ++g.PB;
  EXPECT_FALSE(k::pool2d_fits(g)) << "a padded side above 2^30";
  g = stem;
  g.PL = INT64_MAX;  // the side's sum would overflow: refused, not wrapped
  EXPECT_FALSE(k::pool2d_fits(g));
}
#endif

// Sigmoid and Tanh of fp16 values (FP16 layers, and INT8 layers the DLA computes in FP16) look their results
// up in a table the reference kernel filled: bit for bit the CPU's, where expf and tanhf on the GPU differ by
// an ulp.
TEST(GpuBackend, TranscendentalActivationsOfFp16ValuesAreBitExact) {
  REQUIRE_GPU();
  // Every fp16 value but the NaNs (compared as values, a NaN never equals): zeros of both signs, subnormals,
  // infinities, and the values where the fp16 result sits next to a rounding boundary.
  // Padded with zeros to 16 planes of 64x64: a single row of them is wider than the DLA takes, and the
  // layer would go to the GPU in FP32 instead of the DLA's INT8-computed-in-FP16 rule.
  std::vector<float> every;
  for (uint32_t h = 0; h < 65536; ++h)
    if (const float v = half_to_float(uint16_t(h)); v == v) every.push_back(v);
  every.resize(65536, 0.f);
  const Shape shape = {1, 16, 64, 64};
  Tensor in(DType::kF32, shape);
  std::memcpy(in.raw(), every.data(), in.nbytes());
  for (OpKind op : {OpKind::Sigmoid, OpKind::Tanh}) {
    Graph g;
    const int x = g.add_value("x", {DType::kF32, shape});
    Node n;
    n.op = op;
    n.name = "act";
    n.opset = 13;
    n.inputs = {x};
    n.outputs = {g.add_value("y", {DType::kF32, shape})};
    g.nodes = {n};
    g.inputs = {x};
    g.outputs = {n.outputs[0]};
    g.relink();
    const quant::NumericsPlan fp16 = quant::plan_uniform(g, quant::Mode::kFP16, nullptr), int8 = int8_plan(g);
    ASSERT_TRUE(quant::step_rules(g, int8, 0).compute_fp16) << op_name(op) << ": the DLA's INT8 rule";
    for (const quant::NumericsPlan* plan : {&fp16, &int8}) {
      gpu::GpuEngine gpu_engine(g, *plan);
      quant::EmulatedEngine cpu_engine(g, *plan);
      const std::string what = std::string(op_name(op)) + " " + quant::mode_name(plan->nodes[0].mode);
      EXPECT_TRUE(gpu_engine.nodes().at(0).on_gpu) << what << ": " << gpu_engine.nodes().at(0).why;
      const Tensor want = cpu_engine.run({{"x", in}}).at("y"), got = gpu_engine.run({{"x", in}}).at("y");
      EXPECT_EQ(differing(got, want), 0) << what;
    }
  }
}

// BatchNormalization left unfused (after a ConvTranspose in PP-OCRv4 det's head) runs on the GPU with the
// reference's per-channel factors: bit for bit in FP32, FP16 and INT8.
TEST(GpuBackend, BatchNormalizationIsBitExactOnTheGpu) {
  REQUIRE_GPU();
  std::mt19937 rng(31);
  const Shape shape = {2, 7, 5, 9};
  Graph g;
  const int x = g.add_value("x", {DType::kF32, shape});
  Node n;
  n.op = OpKind::BatchNormalization;
  n.name = "bn";
  n.opset = 15;
  n.attrs["epsilon"] = 1e-3f;
  n.inputs = {x};
  for (const char* name : {"scale", "bias", "mean", "var"}) {
    Tensor t = uniform({7}, rng);
    if (std::string(name) == "var")
      for (int64_t i = 0; i < 7; ++i) t.data<float>()[i] = std::fabs(t.data<float>()[i]) + 0.1f;
    n.inputs.push_back(g.add_constant(name, t));
  }
  n.outputs = {g.add_value("y", {DType::kF32, shape})};
  expect_one_node_bit_exact(g, n, x, shape, true, "BatchNormalization", rng);
}

// Slice, Reshape and Unsqueeze read integer constants (bounds, a shape, axes) that only place the data: they
// run on the GPU as copies, bit for bit the CPU's in FP32, FP16 and INT8 plans (mlsd_tiny's DLA segment
// slices, blazeface's reshapes; Slice is an FP16 layer in INT8 plans, as on the DLA, so its INT8 pass runs
// it in FP16). Slices: positive and negative steps, negative and clamped bounds, a subset of the axes, steps
// without axes, and opset 9's attributes.
TEST(GpuBackend, SliceAndReshapeRunOnTheGpu) {
  REQUIRE_GPU();
  struct Case {
    OpKind op;
    Shape in;
    std::vector<int64_t> starts, ends, axes, steps;  // Slice; Reshape: the shape in `ends`; Unsqueeze: `axes`
    int64_t opset = 13;
  };
  const Case cases[] = {{OpKind::Slice, {1, 6, 7, 9}, {0, 1}, {3, 8}, {1, 3}, {1, 2}},
                        {OpKind::Slice, {2, 5, 6, 7}, {-1, 5}, {-100, 0}, {3, 2}, {-2, -1}},
                        {OpKind::Slice, {1, 4, 5, 11}, {2, -3}, {1000, -1}, {2, 3}, {}},
                        {OpKind::Slice, {2, 3, 5, 4}, {0, 1, 0, 3}, {2, 3, 5, 0}, {}, {1, 1, 2, -1}},
                        {OpKind::Slice, {1, 3, 8, 8}, {1, 2}, {3, 7}, {1, 2}, {}, 9},
                        {OpKind::Reshape, {2, 6, 5, 3}, {}, {2, 3, 2, 15}, {}, {}},
                        {OpKind::Unsqueeze, {2, 3, 5, 7}, {}, {}, {0, 3}, {}}};
  std::mt19937 rng(41);
  for (const Case& c : cases) {
    Graph g;
    const int x = g.add_value("x", {DType::kF32, c.in});
    auto ints = [&](const char* name, const std::vector<int64_t>& v) {
      Tensor t(DType::kI64, {int64_t(v.size())});
      std::memcpy(t.raw(), v.data(), t.nbytes());
      return g.add_constant(name, t);
    };
    Node n;
    n.op = c.op;
    n.name = "n";
    n.opset = c.opset;
    n.inputs = {x};
    std::string what = std::string(op_name(c.op)) + " of " + shape_str(c.in);
    if (c.op == OpKind::Reshape) {
      n.inputs.push_back(ints("shape", c.ends));
    } else if (c.op == OpKind::Unsqueeze) {
      n.inputs.push_back(ints("axes", c.axes));
    } else if (c.opset < 10) {
      n.attrs["starts"] = c.starts, n.attrs["ends"] = c.ends, n.attrs["axes"] = c.axes;
      what += " opset 9";
    } else {
      n.inputs.push_back(ints("starts", c.starts));
      n.inputs.push_back(ints("ends", c.ends));
      if (!c.axes.empty() || !c.steps.empty()) n.inputs.push_back(c.axes.empty() ? -1 : ints("axes", c.axes));
      if (!c.steps.empty()) n.inputs.push_back(ints("steps", c.steps));
      what += " steps " + shape_str(c.steps);
    }
    n.outputs = {g.add_value("y", op_impl(n.op).infer(InferContext(g, n))[0])};
    ASSERT_GT(numel(g.value(n.outputs[0]).type.shape), 0) << what << ": an empty output would test nothing";
    expect_one_node_bit_exact(g, n, x, c.in, true, what, rng);
  }
}

// ConvTranspose runs on the GPU (PP-OCRv4 det's head upsamples twice with it, then a Sigmoid): INT8 with
// exact integer sums, bit for bit the CPU's (numerics::Int8Conv, as the DLA's deconvolution), with the
// Sigmoid it feeds (computed in FP16: a lookup of the reference's results); FP32 and FP16 as float sums in
// another order than the CPU's, held to a cosine. Odd shapes: disjoint 2x2 stride-2 taps, overlapping 3x3
// taps with pads, output_padding and dilation, a batch of 2, and 300 input channels whose levels pass fp32's
// exact range (the CPU's chunked sums). A grouped ConvTranspose in INT8 stays a host step (float sums).
TEST(GpuBackend, ConvTransposeAndTheSigmoidAfterItRunOnTheGpu) {
  REQUIRE_GPU();
  struct Case {
    int64_t N, C, M, K, H, W, stride, pad, out_pad, dilation, groups;
  };
  const Case cases[] = {{1, 24, 24, 2, 9, 11, 2, 0, 0, 1, 1},
                        {2, 7, 5, 3, 6, 5, 2, 1, 1, 1, 1},
                        {1, 6, 3, 3, 5, 7, 3, 2, 0, 2, 1},
                        {1, 300, 3, 3, 4, 5, 2, 1, 0, 1, 1},
                        {1, 8, 6, 2, 5, 5, 2, 0, 0, 1, 2}};
  std::mt19937 rng(37);
  for (const Case& c : cases) {
    const std::string what = "C=" + std::to_string(c.C) + " K=" + std::to_string(c.K) +
                             " stride=" + std::to_string(c.stride) + " groups=" + std::to_string(c.groups);
    Graph g;
    const Shape xs = {c.N, c.C, c.H, c.W};
    const int x = g.add_value("x", {DType::kF32, xs});
    Node deconv;
    deconv.op = OpKind::ConvTranspose;
    deconv.name = "deconv";
    deconv.opset = 13;
    deconv.attrs["strides"] = std::vector<int64_t>{c.stride, c.stride};
    deconv.attrs["pads"] = std::vector<int64_t>{c.pad, c.pad, c.pad, c.pad};
    deconv.attrs["output_padding"] = std::vector<int64_t>{c.out_pad, c.out_pad};
    deconv.attrs["dilations"] = std::vector<int64_t>{c.dilation, c.dilation};
    deconv.attrs["group"] = c.groups;
    deconv.inputs = {x, g.add_constant("w", uniform({c.C, c.M / c.groups, c.K, c.K}, rng)),
                     g.add_constant("b", uniform({c.M}, rng))};
    const TensorType yt = op_impl(OpKind::ConvTranspose).infer(InferContext(g, deconv))[0];
    deconv.outputs = {g.add_value("d", yt)};
    Node sigmoid;
    sigmoid.op = OpKind::Sigmoid;
    sigmoid.name = "sigmoid";
    sigmoid.opset = 13;
    sigmoid.inputs = deconv.outputs;
    sigmoid.outputs = {g.add_value("y", yt)};
    g.nodes = {deconv, sigmoid};
    g.inputs = {x};
    g.outputs = sigmoid.outputs;
    g.relink();
    const quant::ScaleTable scales = random_calibration(g, 5);
    for (quant::Mode mode : {quant::Mode::kFP32, quant::Mode::kFP16, quant::Mode::kINT8}) {
      const quant::NumericsPlan plan = quant::plan_uniform(g, mode, &scales);
      gpu::GpuEngine gpu_engine(g, plan);
      quant::EmulatedEngine cpu_engine(g, plan);
      const std::string where = what + " " + quant::mode_name(mode);
      const bool exact = mode == quant::Mode::kINT8;
      const bool host = exact && c.groups > 1;
      EXPECT_EQ(gpu_engine.nodes().at(0).on_gpu, !host) << where << ": " << gpu_engine.nodes().at(0).why;
      EXPECT_TRUE(gpu_engine.nodes().at(1).on_gpu) << where << ": " << gpu_engine.nodes().at(1).why;
      const TensorMap in = {{"x", uniform(xs, rng)}};
      const Tensor want = cpu_engine.run(in).at("y"), got = gpu_engine.run(in).at("y");
      ASSERT_EQ(got.numel(), want.numel()) << where;
      if (exact) {
        EXPECT_EQ(differing(got, want), 0) << where;
      } else {
        EXPECT_GE(cosine(got, want), 0.99999) << where;
      }
    }
  }
}

TEST(GpuBackend, AQueuedRunWaitsForTheCallersStreamAndRunsInOrder) {
  REQUIRE_GPU();
  const Graph g = load("squeezenet1_1");
  const quant::NumericsPlan plan = int8_plan(g);
  gpu::GpuEngine e(g, plan);
  quant::EmulatedEngine cpu(g, plan);
  // Three runs queued back to back on one stream, each input written by a copy queued before it.
  gpu::Queue user;
  const Value& iv = g.value(g.inputs[0]);
  const Value& ov = g.value(g.outputs[0]);
  std::vector<TensorMap> ins;
  std::vector<Tensor> outs;
  for (uint32_t k = 0; k < 3; ++k) ins.push_back(random_inputs(g, 20 + k));
  for (uint32_t k = 0; k < 3; ++k) outs.push_back(Tensor::uninitialized(ov.type.dtype, ov.type.shape));
  for (uint32_t k = 0; k < 3; ++k) {
    user.copy(e.input(0), ins[k].at(iv.name).raw(), ins[k].at(iv.name).nbytes());
    e.enqueue(user.stream());
    user.copy(outs[k].raw(), e.output(0), outs[k].nbytes());
  }
  user.synchronize();
  e.synchronize();
  for (uint32_t k = 0; k < 3; ++k)
    EXPECT_EQ(differing(outs[k], cpu.run(ins[k]).at(ov.name)), 0) << "run " << k;
}

TEST(GpuBackend, HybridPlanGpuSegmentsRunOnCudaLikeTheReferenceEngine) {
  REQUIRE_GPU();
  const Graph g = load("squeezenet1_1", true);
  const std::string plan = write_plan(g, place(g, {}));
  rt::PlanExecutor on_cuda(reinterpret_cast<const uint8_t*>(plan.data()), plan.size());
  ASSERT_TRUE(on_cuda.gpu_on_cuda());
  setenv("DLAKIT_GPU_BACKEND", "cpu", 1);
  rt::PlanExecutor on_cpu(reinterpret_cast<const uint8_t*>(plan.data()), plan.size());
  unsetenv("DLAKIT_GPU_BACKEND");
  ASSERT_FALSE(on_cpu.gpu_on_cuda());
  const TensorMap in = random_inputs(g, 5);
  const TensorMap a = on_cuda.run(in), b = on_cpu.run(in);
  for (auto& [name, t] : b) {
    const double c = cosine(a.at(name), t);
    std::printf("squeezenet1_1 plan, GPU segment on CUDA vs reference engine: cosine %.7f\n", c);
    EXPECT_GE(c, 0.99999) << name;
  }
}

#if DLAKIT_WITH_CUDA
namespace {
// y = Add(a, conv2(a)) with a = Relu(Add(conv1(x), Relu(r))): `channels` of side x side at batch 32, so that
// both convolutions fill an H100 with the FP16 implicit GEMM's tiles (at 512 of 7 x 7, with K split).
// `blocked`: the convolutions' and the first Add's results are graph outputs too, so no layer may run in
// another's epilogue.
Graph residual_blocks(bool blocked, int64_t channels, int64_t side) {
  Graph g;
  const Shape shape = {32, channels, side, side};
  const int x = g.add_value("x", {DType::kF32, shape}), r = g.add_value("r", {DType::kF32, shape});
  g.inputs = {x, r};
  std::mt19937 gen(13);
  auto node = [&](OpKind op, std::vector<int> inputs, const std::string& name) {
    Node n;
    n.op = op;
    n.name = name;
    n.opset = 13;
    n.inputs = std::move(inputs);
    if (op == OpKind::Conv) {
      Tensor w(DType::kF32, {channels, channels, 3, 3}), b(DType::kF32, {channels});
      test_data::fill_random(w, gen);
      test_data::fill_random(b, gen);
      for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] *= 0.05f;  // sums of the inputs' size
      n.inputs.push_back(g.add_constant(name + "_w", w));
      n.inputs.push_back(g.add_constant(name + "_b", b));
      n.attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
    }
    n.outputs = {g.add_value(name + "_out", op_impl(op).infer(InferContext(g, n))[0])};
    g.nodes.push_back(n);
    return n.outputs[0];
  };
  const int r_half = node(OpKind::Relu, {r}, "relu_r");  // a layer's result: on the fp16 grid
  const int c1 = node(OpKind::Conv, {x}, "conv1");
  const int s1 = node(OpKind::Add, {c1, r_half}, "add1");
  const int a = node(OpKind::Relu, {s1}, "relu1");
  const int c2 = node(OpKind::Conv, {a}, "conv2");
  g.outputs = {node(OpKind::Add, {a, c2}, "add2")};
  if (blocked) g.outputs.insert(g.outputs.end(), {c1, s1, c2});
  g.relink();
  return g;
}
}  // namespace

// FP16 residual Adds (and the ReLU after one) run in their convolution's epilogue where it takes the implicit
// GEMM (on by default; DLAKIT_CUDA_IMPLICIT_GEMM=0: apart), and the first block's result, which only the
// second convolution and its fused Add read, passes between them as an fp16 surface: bit for bit what the
// layers give when run apart on the GPU (every value a graph output, float NCHW), and the CPU emulation's
// results up to the sums' order (every value on the fp16 grid, 97 % equal where measured). 40 channels: the
// surface's last atom has 8 padding channels. 512 channels of 7 x 7: ResNet-50's last stage, where the tiles
// are too few for the GPU and K is split; a second run on other inputs (a replay of the recorded graph, the
// same arrival counts) gives a fresh engine's bytes.
TEST(GpuBackend, Fp16ResidualAddsRunInTheConvolutionsEpilogue) {
  REQUIRE_GPU();
  for (const auto& [channels, side] : {std::pair<int64_t, int64_t>{64, 28}, {40, 28}, {512, 7}}) {
    SCOPED_TRACE(channels);
    const Graph g = residual_blocks(false, channels, side), apart = residual_blocks(true, channels, side);
    const quant::NumericsPlan plan = quant::plan_uniform(g, quant::Mode::kFP16, nullptr);
    gpu::GpuEngine gpu_engine(g, plan),
        apart_engine(apart, quant::plan_uniform(apart, quant::Mode::kFP16, nullptr));
    ASSERT_EQ(g.nodes.size(), 6u);  // relu_r conv1 add1 relu1 conv2 add2
    const bool on = gpu::implicit_gemm_enabled();
    EXPECT_EQ(gpu_engine.nodes()[2].fused_into, on ? 1 : -1);
    EXPECT_EQ(gpu_engine.nodes()[3].fused_into, on ? 1 : -1);
    EXPECT_EQ(gpu_engine.nodes()[5].fused_into, on ? 4 : -1);
    EXPECT_EQ(gpu_engine.nodes()[1].surface, on);  // relu1's result, read by conv2 and the Add fused into it
    EXPECT_FALSE(gpu_engine.nodes()[4].surface);   // a graph output
    EXPECT_EQ(gpu_engine.gpu_nodes(), 6);
    for (size_t n = 0; n < apart.nodes.size(); ++n) {
      EXPECT_EQ(apart_engine.nodes()[n].fused_into, -1) << n;
      EXPECT_FALSE(apart_engine.nodes()[n].surface) << n;
    }
    // The second convolution's geometry as the engine plans it.
    const Node& conv2 = g.nodes[4];
    auto shape_of = [&](int value) { return g.values[size_t(value)].type.shape; };
    const std::shared_ptr<const gpu::ConvF16Gemm> gemm = gpu::ConvF16Gemm::plan(gpu::conv_geom(
        conv2, shape_of(conv2.inputs[0]), shape_of(conv2.inputs[1]), shape_of(conv2.outputs[0])));
    ASSERT_TRUE(gemm);
    EXPECT_EQ(gemm->shape().splits > 1, on && channels == 512) << gemm->shape().splits;
    const TensorMap in = random_inputs(g, 17);
    const Tensor got = gpu_engine.run(in).at("add2_out"), separate = apart_engine.run(in).at("add2_out");
    ASSERT_EQ(got.nbytes(), separate.nbytes());
    EXPECT_EQ(std::memcmp(got.raw(), separate.raw(), got.nbytes()), 0) << "fused and separate layers differ";
    // A second run on other inputs against a fresh engine's first: with the split's arrival counts left
    // over from the first run no block would be last, and the first run's bytes would stay.
    const TensorMap other = random_inputs(g, 18);
    const Tensor again = gpu_engine.run(other).at("add2_out"),
                 fresh = gpu::GpuEngine(g, plan).run(other).at("add2_out");
    EXPECT_EQ(std::memcmp(fresh.raw(), again.raw(), fresh.nbytes()), 0) << "a second run differs";
    quant::EmulatedEngine cpu_engine(g, plan);
    const Tensor want = cpu_engine.run(in).at("add2_out");
    ASSERT_EQ(got.numel(), want.numel());
    int64_t off_grid = 0, equal = 0;
    for (int64_t i = 0; i < got.numel(); ++i) {
      const float v = got.data<float>()[i];
      off_grid += round_to_half(v) != v;
      equal += v == want.data<float>()[i];
    }
    EXPECT_EQ(off_grid, 0);
    // 97 % was measured with K = 576 and 360 (98.54 % and 99.25 % on an H100, 2026-12-06). At K = 4608 (512
    // channels) the second convolution sums thousands of inputs, a few of which the first one's other sum
    // order moved by an fp16 step: 93.18 % there on the implicit GEMM, 86.46 % on cuBLASLt
    // (DLAKIT_CUDA_IMPLICIT_GEMM=0; H100, 2026-12-06), so the 97 % does not hold; 90 % and 84 % are
    // regression guards below those measurements, and the cosine below is the target.
    std::printf("%lld channels: %.2f %% of the outputs equal to the CPU emulation's\n", (long long)channels,
                100.0 * double(equal) / double(got.numel()));
    const int64_t guard = channels != 512 ? 97 : on ? 90 : 84;
    EXPECT_GE(equal, got.numel() * guard / 100) << "of " << got.numel();
    EXPECT_GE(cosine(got, want), 0.99999);
  }
}
#endif
