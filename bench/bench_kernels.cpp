// Kernel micro-benchmarks (Google Benchmark): sgemm at conv-like shapes, reported in GFLOP/s.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "kernels/conv_direct.h"
#include "kernels/conv_int8.h"
#include "kernels/gemm.h"
#include "kernels/registry.h"

static void BM_Sgemm(benchmark::State& st) {
  const int64_t M = st.range(0), N = st.range(1), K = st.range(2);
  std::vector<float> A(size_t(M * K)), B(size_t(K * N)), C(size_t(M * N));
  std::mt19937 g(1);
  std::uniform_real_distribution<float> d(-1, 1);
  for (auto& x : A) x = d(g);
  for (auto& x : B) x = d(g);
  for (auto _ : st) {
    dlakit::sgemm({M, N, K, A.data(), K, 1, B.data(), N, 1, C.data(), N, false});
    benchmark::DoNotOptimize(C.data());
  }
  st.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * double(M * N * K), benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  st.SetLabel(dlakit::sgemm_isa());
}
// resnet50 layer shapes: 1x1 64->256 @56x56, 3x3 128->128 @28x28, 1x1 2048->512 @7x7, FC 1x2048x1000
BENCHMARK(BM_Sgemm)
    ->Args({256, 3136, 64})
    ->Args({128, 784, 1152})
    ->Args({512, 49, 2048})
    ->Args({1, 1000, 2048})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// A convolution benchmark's arguments: C, H(=W), M, kernel, stride, group; its output size and MACs.
struct ConvShape {
  int64_t C, H, M, K, S, G;
  int64_t out() const { return (H + 2 * (K / 2) - K) / S + 1; }
  double macs() const { return double(M * out() * out() * (C / G) * K * K); }
};
static ConvShape conv_shape(const benchmark::State& st) {
  return {st.range(0), st.range(1), st.range(2), st.range(3), st.range(4), st.range(5)};
}

// Conv through the reference kernel (constant weights, so packed once), at real layer shapes:
// C, H(=W), M, kernel, stride, group. GFLOP/s counts 2 * multiply-adds of the convolution.
static void BM_Conv(benchmark::State& st) {
  using namespace dlakit;
  const ConvShape cs = conv_shape(st);
  const int64_t C = cs.C, H = cs.H, M = cs.M, K = cs.K, S = cs.S, G = cs.G;
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> d(-1, 1);
  auto random = [&](const Shape& s) {
    Tensor t(DType::kF32, s);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(gen);
    return t;
  };
  Tensor x = random({1, C, H, H}), w = random({M, C / G, K, K}), b = random({M});
  Node n;
  n.op = OpKind::Conv;
  n.name = "conv";
  n.opset = 13;
  n.attrs["strides"] = std::vector<int64_t>{S, S};
  n.attrs["pads"] = std::vector<int64_t>{K / 2, K / 2, K / 2, K / 2};
  n.attrs["group"] = G;
  const int64_t OH = cs.out();
  Tensor y(DType::kF32, {1, M, OH, OH});
  const KernelFn conv = op_impl(OpKind::Conv).run;
  for (auto _ : st) {
    conv(KernelContext(n, {&x, &w, &b}, {&y}, {0, 1, 1}));
    benchmark::DoNotOptimize(y.data<float>());
  }
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * cs.macs(), benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
}
// resnet18 7x7 stem, 3x3 64@56, stride 2 into 128@28, 256@14 and 512@7, 256@14, 512@7; resnet50 1x1
// 256->64@56;
// mobilenet_v2 1x1 96->24@56 and 16->96@112, depthwise 144@56, 96@112 stride 2, 576@14, 192@28, 960@7 and
// stride 2 from 144@56, 192@28 and 576@14; ppocr_det 3x3 96->24@160.
BENCHMARK(BM_Conv)
    ->Args({3, 224, 64, 7, 2, 1})
    ->Args({64, 56, 64, 3, 1, 1})
    ->Args({64, 56, 128, 3, 2, 1})
    ->Args({128, 28, 256, 3, 2, 1})
    ->Args({256, 14, 512, 3, 2, 1})
    ->Args({256, 14, 256, 3, 1, 1})
    ->Args({512, 7, 512, 3, 1, 1})
    ->Args({256, 56, 64, 1, 1, 1})
    ->Args({96, 56, 24, 1, 1, 1})
    ->Args({16, 112, 96, 1, 1, 1})
    ->Args({144, 56, 144, 3, 1, 144})
    ->Args({96, 112, 96, 3, 2, 96})
    ->Args({576, 14, 576, 3, 1, 576})
    ->Args({192, 28, 192, 3, 1, 192})
    ->Args({960, 7, 960, 3, 1, 960})
    ->Args({144, 56, 144, 3, 2, 144})
    ->Args({192, 28, 192, 3, 2, 192})
    ->Args({576, 14, 576, 3, 2, 576})
    ->Args({32, 112, 32, 3, 1, 32})
    ->Args({96, 160, 24, 3, 1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The direct kernel's two tilings on one padded input, weights hot in cache (the engine's choice between
// them, conv_choose_kernel, is a model of their wasted lanes; this measures it): C, H(=W), M, kernel, stride,
// then 0 for positions in the lanes, 1 for channels in the lanes, 2 for channels with the weights coming
// from memory.
static void BM_ConvTiles(benchmark::State& st) {
  using namespace dlakit;
  const ConvShape cs{st.range(0), st.range(1), st.range(2), st.range(3), st.range(4), 1};
  const bool channels = st.range(5) >= 1, cold = st.range(5) == 2;
  const int64_t OH = cs.out(), pad = cs.K / 2, Hp = (OH - 1) * cs.S + cs.K,
                Wq = conv_direct_layout((OH - 1) * cs.S + cs.K, cs.S), K = cs.C * cs.K * cs.K;
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> x(size_t(cs.C * cs.H * cs.H)), w(size_t(cs.M * K)), b(size_t(cs.M)),
      y(size_t(cs.M * OH * OH));
  for (auto* v : {&x, &w, &b})
    for (float& f : *v) f = d(gen);
  std::vector<float> padded(size_t(conv_direct_buffer_size(cs.C, Hp, cs.S, Wq)));
  conv_direct_pad_input(x.data(), cs.C, cs.H, cs.H, pad, pad, Hp, cs.S, Wq, padded.data());
  // Cold: copies of the weights, 64 MB in all (more than the L3), taken in turn: the weights come from
  // memory, as a model's do when its weights outgrow the caches (ResNet-18: 46 MB).
  const int64_t copies = cold ? std::max<int64_t>(1, (64 << 20) / (4 * cs.M * K)) : 1;
  std::vector<std::shared_ptr<const PackedA>> packs;
  for (int64_t i = 0; i < copies; ++i)
    packs.push_back(channels ? conv_channels_pack_weights(cs.M, K, w.data())
                             : conv_direct_pack_weights(cs.M, K, w.data()));
  ConvDirectArgs args{padded.data(), cs.C, Hp, cs.S,           Wq,       cs.K,     cs.K, 1, 1,
                      cs.S,          OH,   OH, packs[0].get(), b.data(), y.data(), {}};
  int64_t turn = 0;
  for (auto _ : st) {
    args.w = packs[size_t(turn++ % copies)].get();
    if (channels)
      conv_direct_channels(args);
    else
      conv_direct(args);
    benchmark::DoNotOptimize(y.data());
  }
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * cs.macs(), benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
}
// The ResNet stem (7x7 stride 2, 112 outputs a row), ResNet stages at 56, 28, 14 and 7 (3x3 and 1x1), stride
// 2 into 14 and 7, MobileNetV2's 1x1 at 7 and 14.
BENCHMARK(BM_ConvTiles)
    ->ArgsProduct({{3}, {224}, {64}, {7}, {2}, {0, 1}})
    ->ArgsProduct({{64}, {56}, {64}, {3}, {1}, {0, 1}})
    ->ArgsProduct({{128}, {28}, {128}, {3}, {1}, {0, 1, 2}})
    ->ArgsProduct({{256}, {14}, {256}, {3}, {1}, {0, 1, 2}})
    ->ArgsProduct({{512}, {7}, {512}, {3}, {1}, {0, 1, 2}})
    ->ArgsProduct({{256}, {14}, {512}, {3}, {2}, {0, 1}})
    ->ArgsProduct({{128}, {28}, {256}, {3}, {2}, {0, 1}})
    ->ArgsProduct({{1024}, {14}, {256}, {1}, {1}, {0, 1}})
    ->ArgsProduct({{2048}, {7}, {512}, {1}, {1}, {0, 1}})
    ->ArgsProduct({{512}, {7}, {2048}, {1}, {1}, {0, 1}})
    ->ArgsProduct({{160}, {7}, {960}, {1}, {1}, {0, 1}})
    ->ArgsProduct({{64}, {14}, {384}, {1}, {1}, {0, 1}})
    ->ArgsProduct({{256}, {56}, {64}, {1}, {1}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// A 1x1 convolution read in place, on the GEMM (weights packed once) or on the channel tiles: the other
// choice conv_choose_kernel makes. C, H(=W), M, then 0 for the GEMM, 1 for the channel tiles; then 1 to add
// a residual before a ReLU in the epilogue (a ResNet block's last layer), and 1 for cold weights: 48 packed
// copies taken in turn, as a model's weights come from memory.
static void BM_ConvPointwise(benchmark::State& st) {
  using namespace dlakit;
  const int64_t C = st.range(0), H = st.range(1), M = st.range(2), N = H * H;
  const bool channels = st.range(3) == 1, residual = st.range(4) == 1, cold = st.range(5) == 1;
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> x(size_t(C * N)), w(size_t(M * C)), b(static_cast<size_t>(M)), y(size_t(M * N)),
      res(size_t(M * N));
  for (auto* v : {&x, &w, &b, &res})
    for (float& f : *v) f = d(gen);
  std::vector<std::shared_ptr<const PackedA>> copies;
  for (int i = 0; i < (cold ? 48 : 1); ++i)
    copies.push_back(channels ? conv_channels_pack_weights(M, C, w.data())
                              : sgemm_pack_a(M, C, w.data(), C, 1));
  GemmEpilogue epilogue;
  if (residual) epilogue.act = GemmEpilogue::Act::kRelu, epilogue.residual = res.data(), epilogue.ldr = N;
  size_t turn = 0;
  for (auto _ : st) {
    const PackedA* packed = copies[turn++ % copies.size()].get();
    if (channels)
      conv_direct_channels({x.data(), C, H, 1, H, 1, 1, 1, 1, 1, H, H, packed, b.data(), y.data(), epilogue});
    else
      sgemm(
          {M, N, C, w.data(), C, 1, x.data(), N, 1, y.data(), N, false, b.data(), packed, nullptr, epilogue});
    benchmark::DoNotOptimize(y.data());
  }
  st.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * double(M * N * C), benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
// ResNet-50's and MobileNetV2's 1x1 layers at 14x14 and 7x7; ResNet-50's block ends with and without the
// residual, hot and cold.
BENCHMARK(BM_ConvPointwise)
    ->ArgsProduct({{1024}, {14}, {256}, {0, 1}, {0}, {0}})
    ->ArgsProduct({{256}, {14}, {1024}, {0, 1}, {0, 1}, {0, 1}})
    ->ArgsProduct({{2048}, {7}, {512}, {0, 1}, {0}, {0}})
    ->ArgsProduct({{512}, {7}, {2048}, {0, 1}, {0, 1}, {0, 1}})
    ->ArgsProduct({{960}, {7}, {160}, {0, 1}, {0}, {0}})
    ->ArgsProduct({{64}, {14}, {384}, {0, 1}, {0}, {0}})
    ->ArgsProduct({{96}, {14}, {576}, {0, 1}, {0}, {0}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The exact INT8 convolution (kernels/conv_int8.h) from planar levels into an int8 chw32 surface, as the
// CPU executor runs it: C, H(=W), M, kernel, stride, group, and a 7th argument 1 to read the input from an
// int8 chw32 surface too (the depthwise path between surfaces). GMAC/s counts the convolution's
// multiply-adds.
static void BM_ConvInt8(benchmark::State& st) {
  using namespace dlakit;
  const ConvShape cs = conv_shape(st);
  const int64_t C = cs.C, H = cs.H, M = cs.M, K = cs.K, S = cs.S, G = cs.G;
  std::mt19937 gen(1);
  std::uniform_int_distribution<int> level(-127, 127);
  std::vector<float> w(size_t(M * (C / G) * K * K));
  for (float& v : w) v = float(level(gen));
  std::vector<int8_t> x(size_t(C * H * H));
  for (int8_t& v : x) v = int8_t(level(gen));
  const auto packed = pack_int8_conv(M, C / G, G, K, K, w.data());
  Int8ConvGeometry g;
  g.C = C, g.H = H, g.W = H, g.M = M, g.groups = G, g.KH = K, g.KW = K, g.sh = S, g.sw = S;
  g.pt = K / 2, g.pl = K / 2;
  g.OH = cs.out(), g.OW = g.OH;
  std::vector<float> mult(size_t(M), 1e-4f);
  std::vector<double> bias_q(size_t(M), 0.0);
  const Int8Requant rq{mult.data(), bias_q.data(), nullptr, GemmEpilogue{}};
  const int64_t group_bytes = g.OH * g.OW * 32;
  std::vector<int8_t> y(size_t((M + 31) / 32 * group_bytes));
  Int8Output out;
  out.atoms = y.data(), out.batch = int64_t(y.size()), out.group = group_bytes, out.line = g.OW * 32;
  out.scale = 0.05f;
  const bool atoms_in = st.range(6) != 0;
  std::vector<int8_t> x_atoms(size_t((C + 31) / 32 * H * H * 32), 0);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = 0; i < H * H; ++i)
      x_atoms[size_t(((c / 32) * H * H + i) * 32 + c % 32)] = x[size_t(c * H * H + i)];
  const Int8Input in = atoms_in
                           ? Int8Input::atoms(x_atoms.data(), 32, int64_t(x_atoms.size()), H * H * 32, H * 32)
                           : Int8Input::planar(x.data(), C, H, H);
  for (auto _ : st) {
    conv_int8_exact(*packed, g, 1, in, rq, out);
    benchmark::DoNotOptimize(y.data());
  }
  st.counters["GMAC/s"] =
      benchmark::Counter(double(M * g.OH * g.OW * (C / G) * K * K),
                         benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  st.SetLabel(int8_kernel_name(int8_kernel()));
}
// resnet18's stem 7x7/2 3->64 @224, its 3x3 64@56 and 512@7, mobilenet_v2's depthwise 144@56.
BENCHMARK(BM_ConvInt8)
    ->Args({3, 224, 64, 7, 2, 1, 0})
    ->Args({64, 56, 64, 3, 1, 1, 0})
    ->Args({512, 7, 512, 3, 1, 1, 0})
    ->Args({144, 56, 144, 3, 1, 144, 0})
    ->Args({144, 56, 144, 3, 1, 144, 1})
    ->Args({960, 7, 960, 3, 1, 960, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
