// What the GPU convolution kernel tests share: geometries, host vectors copied to the device, and random
// parameters of the INT8 convolution epilogue (int8_conv_output). Include only where DLAKIT_WITH_CUDA is set.
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "gpu/gpu.h"
#include "gpu/kernels.h"

namespace test_conv {
// A square-kernel convolution's geometry: input hw x (hw + 3) (width and height differ), the output's size
// from stride, padding (both sides), dilation and groups.
inline dlakit::gpu::k::ConvGeom geom(int64_t n, int64_t c, int64_t hw, int64_t m, int64_t k, int64_t stride,
                                     int64_t pad, int64_t dil, int64_t groups = 1) {
  dlakit::gpu::k::ConvGeom g;
  g.N = n, g.C = c, g.H = hw, g.W = hw + 3, g.M = m, g.KH = k, g.KW = k, g.SH = g.SW = stride;
  g.DH = g.DW = dil, g.PT = g.PL = pad, g.G = groups;
  const int64_t span = (k - 1) * dil + 1;
  g.OH = (g.H + 2 * pad - span) / stride + 1;
  g.OW = (g.W + 2 * pad - span) / stride + 1;
  return g;
}
// A named geometry: the parameter of the tests that run one kernel over several shapes (the name labels
// each instance).
struct NamedGeom {
  const char* name;
  dlakit::gpu::k::ConvGeom g;
};
}  // namespace test_conv

// A copy of v in device memory that `keep` owns.
template <typename T>
T* to_device(const std::vector<T>& v, std::vector<dlakit::gpu::DeviceBuffer>& keep) {
  keep.emplace_back(std::max<size_t>(v.size() * sizeof(T), 4));
  EXPECT_EQ(cudaMemcpy(keep.back().data(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice),
            cudaSuccess);
  return static_cast<T*>(keep.back().data());
}

struct Int8EpilogueData {
  std::vector<float> mult, bias;
  std::vector<double> bq;
};

// Scales that put most outputs of sums of the given spread inside a clip of +-6, biases in levels of the
// same order, and every 7th channel without a scale (it gives its float bias instead). spread: the typical
// size of a sum, about sqrt(K) * 74^2 for levels drawn over the whole int8 range.
inline Int8EpilogueData random_int8_epilogue(int64_t channels, double spread, std::mt19937& gen) {
  std::uniform_real_distribution<float> scale(float(0.5 / spread), float(3.0 / spread)), value(-4.f, 4.f);
  Int8EpilogueData d;
  for (int64_t m = 0; m < channels; ++m) {
    d.mult.push_back(m % 7 == 3 ? 0.f : scale(gen));
    d.bias.push_back(value(gen));
    d.bq.push_back(double(value(gen)) * spread / 4.0);
  }
  return d;
}
