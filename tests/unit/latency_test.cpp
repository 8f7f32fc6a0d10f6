// The latency model on hand-checked operations (atom padding, image-input mode, depthwise lanes, grouped
// convolutions, FP16, memory-bound operations, buffer re-reads, power modes, overheads, bad input), the
// producer from placed layers (fusion, free concat, SRAM plan) and the report of a hybrid placement.
#include <gtest/gtest.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include "latency/from_program.h"
#include "latency/lower.h"
#include "latency/model.h"
#include "latency/predict.h"
#include "loadable/loadable.h"
#include "onnx/importer.h"
#include "passes/passes.h"

using namespace dlakit;
using namespace dlakit::latency;

namespace {

// Only what a test sets: no overheads, full overlap, all the DRAM bandwidth.
ModelParams bare() {
  ModelParams p;
  p.atom_c = 64, p.atom_k = 128, p.cbuf_bytes = 512 * 1024, p.depthwise_lanes = true, p.overlap = 1;
  p.dram_efficiency = 1, p.op_overhead_us = 0, p.op_overhead_cycles = 0, p.task_overhead_us = 0;
  return p;
}
const Chip& orin() { return chip_for("orin"); }
const PowerMode& maxn() { return power_mode(orin(), "MAXN"); }

HwOp conv(int64_t c, int64_t k, int64_t h, int64_t w, int kernel = 1, int groups = 1) {
  HwOp op;
  op.engine = Engine::kConv;
  op.input = {1, c, h, w};
  op.output = {1, k, h, w};
  op.kernel_h = op.kernel_w = kernel;
  op.groups = groups;
  op.macs = h * w * k * (c / groups) * kernel * kernel;
  op.layers = {"conv"};
  return op;
}

double cycles(const HwOp& op, const ModelParams& p = bare()) {
  return predict_op(op, orin(), maxn(), p).mac_cycles;
}

TEST(LatencyModel, ConvolutionCyclesPadChannelsAndKernelsToTheAtoms) {
  // 64 input channels x 128 kernels is exactly one atom block: one cycle per output pixel.
  EXPECT_EQ(cycles(conv(64, 128, 56, 56)), 56.0 * 56);
  EXPECT_EQ(cycles(conv(3, 128, 56, 56)), 56.0 * 56);       // 3 channels still fill one input atom
  EXPECT_EQ(cycles(conv(65, 128, 56, 56)), 2 * 56.0 * 56);  // one channel over: two input atoms
  EXPECT_EQ(cycles(conv(64, 129, 56, 56)), 2 * 56.0 * 56);
  EXPECT_EQ(cycles(conv(64, 128, 56, 56, 3)), 9 * 56.0 * 56);  // one cycle per kernel tap
  const OpTime t = predict_op(conv(256, 256, 28, 28, 3), orin(), maxn(), bare());
  EXPECT_NEAR(t.compute_us, 28 * 28 * 9 * 4 * 2 / 1.6e9 * 1e6, 1e-9);
  EXPECT_EQ(t.bottleneck, Bottleneck::kCompute);
}

TEST(LatencyModel, ImageInputPacksEachKernelRowIntoOneAtom) {
  HwOp stem = conv(3, 64, 112, 112, 7);
  const double direct = cycles(stem);
  stem.image_input = true;  // 7 pixels x 4 channels = 28 bytes fit one 64-channel atom: 7 taps, not 49
  EXPECT_EQ(cycles(stem), 112.0 * 112 * 7);
  EXPECT_EQ(direct, 112.0 * 112 * 49);
}

TEST(LatencyModel, DepthwiseAndGroupedConvolutions) {
  const HwOp dw = conv(256, 256, 28, 28, 3, 256);
  EXPECT_EQ(cycles(dw), 28.0 * 28 * 9 * 4);  // one channel per lane: 256 / 64 lanes
  ModelParams dense = bare();
  dense.depthwise_lanes = false;  // made dense with zero weights: 4 input x 2 kernel atoms
  EXPECT_EQ(cycles(dw, dense), 28.0 * 28 * 9 * 8);
  // ResNeXt's 32 groups of 4 channels: dense (2 x 1 blocks) beats 32 groups of one block each.
  EXPECT_EQ(cycles(conv(128, 128, 56, 56, 3, 32)), 56.0 * 56 * 9 * 2);
  // Two groups of 256 -> 256: 4 x 2 blocks each, as cheap as dense 8 x 4 = 32? No: 2 x 8 = 16.
  EXPECT_EQ(cycles(conv(512, 512, 14, 14, 1, 2)), 14.0 * 14 * 16);
}

TEST(LatencyModel, Fp16RunsOnTheFp16Array) {
  HwOp op = conv(64, 128, 56, 56);
  op.precision = OpPrecision::kFp16;  // 512 FP16 MACs: 32 x 16 atoms -> 2 x 8 blocks
  EXPECT_EQ(cycles(op), 16 * 56.0 * 56);
}

TEST(LatencyModel, MemoryBoundElementWiseOperation) {
  HwOp add;
  add.engine = Engine::kSdp;
  add.input = add.output = {1, 64, 112, 112};
  add.dram_read = 2 * 802816, add.dram_written = 802816;
  add.layers = {"add"};
  ModelParams p = bare();
  p.dram_efficiency = 0.5;
  const OpTime t = predict_op(add, orin(), maxn(), p);
  EXPECT_NEAR(t.memory_us, 3 * 802816 / (204.8e9 * 0.5) * 1e6, 1e-9);
  EXPECT_NEAR(t.compute_us, 802816 / 64 / 1.6e9 * 1e6, 1e-9);
  EXPECT_EQ(t.bottleneck, Bottleneck::kMemory);
  EXPECT_DOUBLE_EQ(t.total_us, t.memory_us);
}

TEST(LatencyModel, WeightsAreReadAgainWhenTheBufferCannotHoldThem) {
  // 3x3 256 -> 512: 1.18 MB of weights, 2 MB of input (256 ch x 90 x 90): neither fits in half of 512 KiB.
  HwOp op = conv(256, 512, 90, 90, 3);
  op.weight_bytes = 512 * 256 * 9;
  const double d = 256.0 * 90 * 90, half = 256 * 1024;
  const OpTime t = predict_op(op, orin(), maxn(), bare());
  const double stripes = std::ceil(d / half), groups = std::ceil(op.weight_bytes / half);
  ASSERT_LT(op.weight_bytes * stripes, d * groups);  // re-reading the weights is the cheaper split
  EXPECT_EQ(t.weight_reads, int(stripes));
  EXPECT_DOUBLE_EQ(t.dram_bytes, op.weight_bytes * stripes);
  // Small weights stay resident: read once.
  HwOp small = conv(64, 64, 90, 90, 3);
  small.weight_bytes = 64 * 64 * 9;
  EXPECT_EQ(predict_op(small, orin(), maxn(), bare()).weight_reads, 1);
  // A fully connected layer's batch fits: 4 MB of weights stream through once for both images.
  HwOp fc = conv(2048, 2000, 1, 1);
  fc.input.n = fc.output.n = 2;
  fc.weight_bytes = 2048 * 2000;
  EXPECT_EQ(predict_op(fc, orin(), maxn(), bare()).weight_reads, 1);
}

TEST(LatencyModel, PowerModesScaleClocksAndBandwidth) {
  const HwOp op = conv(256, 256, 56, 56, 3);
  const double maxn_us = predict_op(op, orin(), maxn(), bare()).total_us;
  const double w15_us = predict_op(op, orin(), power_mode(orin(), "15w"), bare()).total_us;
  EXPECT_NEAR(w15_us / maxn_us, 1600 / 614.4, 1e-9);  // compute-bound: the DLA clock alone
  EXPECT_NEAR(power_mode(orin(), "15W").dram_bytes_per_s, 204.8e9 * 2133 / 3199, 1);
  EXPECT_GT(power_mode(orin(), "MAXN").dla_hz, power_mode(orin(), "30W").dla_hz);
}

TEST(LatencyModel, OverheadsOverlapAndTasks) {
  ModelParams p = bare();
  p.op_overhead_us = 1, p.op_overhead_cycles = 1600, p.task_overhead_us = 10;
  const HwOp op = conv(64, 128, 56, 56);
  const OpTime t = predict_op(op, orin(), maxn(), p);
  EXPECT_NEAR(t.overhead_us, 2, 1e-12);  // 1 us + 1600 cycles at 1.6 GHz
  EXPECT_NEAR(predict_task({op, op}, orin(), maxn(), p).total_us, 2 * t.total_us + 10, 1e-9);
  HwOp both = op;
  both.dram_read = 1 << 20;
  ModelParams half = bare();
  half.overlap = 0.5;
  const OpTime full = predict_op(both, orin(), maxn(), bare()),
               partial = predict_op(both, orin(), maxn(), half);
  EXPECT_NEAR(partial.total_us - full.total_us, 0.5 * std::min(full.compute_us, full.memory_us), 1e-9);
}

TEST(LatencyModel, BadOperationsAndNamesAreClearErrors) {
  HwOp op = conv(64, 128, 56, 56);
  op.input.c = 0;
  try {
    predict_op(op, orin(), maxn(), bare());
    FAIL() << "a zero channel count must be rejected";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("input.c = 0"), std::string::npos) << e.what();
  }
  HwOp grouped = conv(64, 128, 8, 8, 3, 3);
  EXPECT_THROW(predict_op(grouped, orin(), maxn(), bare()), Error);
  try {
    power_mode(orin(), "20W");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("MAXN, 50W, 30W, 15W"), std::string::npos) << e.what();
  }
  EXPECT_THROW(chip_for("tpu"), Error);
}

// ---- The producer from placed layers

Graph import_text(const std::string& body, const std::string& inputs, const std::string& outputs) {
  const std::string text = "<ir_version: 8, opset_import: [\"\" : 13]>\ng (" + inputs + ") => (" + outputs +
                           ") {\n" + body + "\n}";
  onnx::ModelProto m;
  auto st = onnx::OnnxParser::Parse(m, text.c_str());
  EXPECT_TRUE(st.IsOK()) << st.ErrorMessage() << "\n" << text;
  const std::string b = m.SerializeAsString();
  Graph g = import_onnx_bytes(b.data(), b.size());
  run_passes(g);
  return g;
}

#define W(name, dims, rank)                                          \
  name "_s = Constant<value = int64[" #rank "] {" dims "}>()\n" name \
       " = ConstantOfShape<value = float[1] {0.01}>(" name "_s)\n"

Placement int8_placement(const Graph& g) {
  PlacementOptions o;
  o.precision = dla::Precision::kINT8;
  return place(g, o);
}

TEST(LatencyLowering, ResidualBlockFusesIntoTwoOperationsWithAnSramPlan) {
  const Graph g = import_text(W("w1", "64,64,3,3", 4)
                                  W("w2", "64,64,3,3",
                                    4) "c1 = Conv<pads=[1,1,1,1]>(x, w1)\nr1 = Relu(c1)\n"
                                       "c2 = Conv<pads=[1,1,1,1]>(r1, w2)\na = Add(c2, x)\ny = Relu(a)",
                              "float[1,64,56,56] x", "float[1,64,56,56] y");
  const Placement p = int8_placement(g);
  LowerOptions o;
  o.sram_bytes = 1 << 20;
  const LoweredSegment s = lower_dla_segment(g, p, 0, o);
  ASSERT_EQ(s.ops.size(), 2u);
  EXPECT_EQ(s.ops[0].fused, "Conv+Relu");  // the fuse-activation pass's Relu
  EXPECT_EQ(s.ops[1].fused, "Conv+Add+Relu");
  const int64_t surface = 64 * 56 * 56;       // INT8, 64 channels = two 32-channel atoms exactly
  EXPECT_EQ(s.ops[0].dram_read, surface);     // x, the network input
  EXPECT_EQ(s.ops[0].sram_written, surface);  // r1 fits the 1 MiB SRAM
  EXPECT_EQ(s.ops[1].sram_read, surface);
  EXPECT_EQ(s.ops[1].dram_read, surface);                  // x again, through the SDP's second read
  EXPECT_EQ(s.ops[1].dram_written, surface);               // y, the network output
  EXPECT_EQ(s.ops[0].weight_bytes, 64 * 64 * 9 + 64 * 4);  // kernel + per-channel requantization (4 B)
  o.sram_bytes = 0;
  const LoweredSegment dram = lower_dla_segment(g, p, 0, o);
  EXPECT_EQ(dram.ops[0].dram_written, surface);
  EXPECT_EQ(dram.ops[0].sram_written, 0);
}

// The compiled program as producer (what bench --predict reads): its operations as the program has them
// (the numerics plan keeps the residual Add as its own SDP pass, where the graph producer assumes it fused
// into the second convolution), the same MACs and kernels, and the traffic of the program's memory plan.
TEST(LatencyFromProgram, ResidualBlockOperationsMacsAndTraffic) {
  const Graph g = import_text(W("w1", "64,64,3,3", 4)
                                  W("w2", "64,64,3,3",
                                    4) "c1 = Conv<pads=[1,1,1,1]>(x, w1)\nr1 = Relu(c1)\n"
                                       "c2 = Conv<pads=[1,1,1,1]>(r1, w2)\na = Add(c2, x)\ny = Relu(a)",
                              "float[1,64,56,56] x", "float[1,64,56,56] y");
  PlacementOptions po;
  po.precision = dla::Precision::kFP16;
  LowerOptions lo;
  lo.input_precision = lo.output_precision = OpPrecision::kFp16;
  lo.sram_bytes = 1 << 20;
  const LoweredSegment from_graph = lower_dla_segment(g, place(g, po), 0, lo);
  LoadableOptions opt;  // fp16:chw16 in and out, as dlakit build writes by default
  opt.inputs = opt.outputs = {rt::IoSpec{}};
  const prog::Program p = compile_program(g, opt);
  const std::vector<HwOp> ops = hw_ops(p);
  ASSERT_EQ(ops.size(), 3u);
  ASSERT_EQ(from_graph.ops.size(), 2u);
  EXPECT_EQ(ops[0].engine, Engine::kConv);
  EXPECT_EQ(ops[1].engine, Engine::kConv);
  EXPECT_EQ(ops[2].engine, Engine::kSdp);
  EXPECT_EQ(ops[2].fused, "Add+Relu");
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(ops[i].precision, OpPrecision::kFp16) << i;
    EXPECT_EQ(ops[i].macs, from_graph.ops[i].macs) << i;
    EXPECT_EQ(ops[i].kernel_h, 3) << i;
    EXPECT_EQ(ops[i].input.c, 64) << i;
  }
  const int64_t surface = 64 * 56 * 56 * 2;  // fp16 chw16: 64 channels, four atoms exactly
  EXPECT_EQ(ops[0].dram_read, surface);      // x, the task's input buffer
  EXPECT_EQ(ops[0].sram_written + ops[0].dram_written, surface);
  EXPECT_EQ(ops[2].dram_read + ops[2].sram_read, 2 * surface);  // c2 and x
  EXPECT_EQ(ops[2].dram_written, surface);                      // y, the task's output buffer
  const Chip& chip = chip_for("orin");
  const double a = predict_task(ops, chip, power_mode(chip, "MAXN"), fitted_params("orin")).total_us;
  const double b =
      predict_task(from_graph.ops, chip, power_mode(chip, "MAXN"), fitted_params("orin")).total_us;
  EXPECT_GT(a, b) << "the extra SDP pass costs time";
  EXPECT_LT(a, 1.5 * b) << "program " << a << " us, graph " << b << " us";
}

TEST(LatencyLowering, SiluFusesAndConcatIsFree) {
  const Graph g = import_text(W("w0", "16,16,1,1", 4) W("w1", "32,16,1,1", 4) W("w2", "32,16,1,1", 4)
                                  W("w3", "16,64,1,1",
                                    4) "x0 = Conv(x, w0)\na = Conv(x0, w1)\ns = Sigmoid(a)\nm = Mul(a, s)\n"
                                       "b = Conv(x0, w2)\nc = Concat<axis=1>(m, b)\ny = Conv(c, w3)",
                              "float[1,16,20,20] x", "float[1,16,20,20] y");
  const Placement p = int8_placement(g);
  const LoweredSegment s = lower_dla_segment(g, p, 0, {});
  ASSERT_EQ(p.segments.size(), 1u);
  ASSERT_EQ(s.ops.size(), 4u);
  EXPECT_EQ(s.ops[1].fused, "Conv+Sigmoid+Mul");
  EXPECT_TRUE(s.ops[1].lut);
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (g.nodes[k].op == OpKind::Concat) {
      EXPECT_EQ(s.op_of_node[k], -1);
    }
  EXPECT_EQ(s.ops[3].dram_read, 64 * 20 * 20);  // the last conv reads the joined 64-channel surface
}

TEST(LatencyReportTest, HybridPlacementHasGpuSegmentsAndTransitions) {
  // Floor has no DLA layer: DLA -> GPU -> DLA.
  const Graph g =
      import_text(W("w1", "32,32,3,3", 4)
                      W("w2", "32,32,3,3",
                        4) "a = Conv<pads=[1,1,1,1]>(x, w1)\nf = Floor(a)\ny = Conv<pads=[1,1,1,1]>(f, w2)",
                  "float[2,32,40,40] x", "float[2,32,40,40] y");
  const Placement p = int8_placement(g);
  ASSERT_EQ(p.segments.size(), 3u);
  LatencyOptions o;
  o.power_mode = "30W";
  const LatencyReport r = predict_latency(g, p, o);
  EXPECT_EQ(r.batch, 2);
  EXPECT_EQ(r.power_mode, "30W");
  ASSERT_EQ(r.transitions.size(), 2u);
  EXPECT_EQ(r.transitions[0].direction, "DLA->GPU");
  EXPECT_EQ(r.transitions[1].direction, "GPU->DLA");
  EXPECT_GT(r.gpu_ms, 0);
  EXPECT_NEAR(r.total_ms, r.dla_ms + r.gpu_ms + r.transitions_ms, 1e-12);
  double layer_sum = 0;
  for (const LayerLatency& L : r.layers) layer_sum += L.latency_us;
  const double task_overheads = 2 * fitted_params("orin").task_overhead_us;
  EXPECT_NEAR(layer_sum / 1e3 + task_overheads / 1e3, r.dla_ms + r.gpu_ms, 1e-9);
  const nlohmann::json j = latency_json(g, r);
  for (const char* key : {"dla_ms", "total_ms", "images_per_s_2cores", "layers", "segments", "transitions"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_TRUE(j["predicted"].get<bool>());
  EXPECT_EQ(j["layers"].size(), g.nodes.size());
  EXPECT_TRUE(j["layers"][0].contains("latency_us"));
  // Both cores: the DLA halves, the GPU part is shared.
  double gpu_busy_ms = r.gpu_ms;
  for (const TransitionLatency& t : r.transitions) gpu_busy_ms += t.reformat_us / 1e3;
  EXPECT_NEAR(r.images_per_s_2cores, 2e3 / std::max(r.dla_ms / 2, gpu_busy_ms), 1e-6);
  // FP32 I/O (trtexec's default) adds a GPU reformat on each side.
  o.native_io = false;
  EXPECT_EQ(predict_latency(g, p, o).transitions.size(), 4u);
}

}  // namespace
