// DLA I/O formats: layouts, padding and the int8 quantization of pack/unpack (dla-constraints.md §2).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "base/error.h"
#include "runtime/io_format.h"

using namespace dlakit;
using namespace dlakit::rt;

namespace {
TensorDesc int8_desc(const Shape& s, IoFormat f, float scale) {
  TensorDesc d = make_desc("t", s, {DType::kI8, f}, 64);
  d.scale = scale;
  return d;
}
}  // namespace

// A 1x40x2x3 tensor on the int8 grid of scale 0.5 packed into chw32 descriptor d: checks where channel 33
// of (h1, w2) lands (second 32-channel surface, line 1, pixel 2, lane 1), that it unpacks exactly, and
// returns the buffer for the caller's own checks.
namespace {
std::vector<int8_t> pack_and_check_channel33(const TensorDesc& d) {
  Tensor x(DType::kF32, {1, 40, 2, 3});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float((i % 50) - 25) * 0.5f;
  std::vector<int8_t> b(d.size, 99);
  pack(x, d, b.data());
  const int64_t src = ((0 * 40 + 33) * 2 + 1) * 3 + 2;
  EXPECT_EQ(b[d.stride[2] + d.stride[1] + 2 * 32 + 1], int8_t(x.data<float>()[src] / 0.5f));
  const Tensor y = unpack(b.data(), d);
  EXPECT_EQ(0, std::memcmp(x.raw(), y.raw(), x.nbytes())) << "values on the int8 grid come back exactly";
  return b;
}
}  // namespace

TEST(IoFormat, Int8Chw32PutsChannel33InTheSecondSurfaceAndZeroesPadding) {
  const TensorDesc d = int8_desc({1, 40, 2, 3}, IoFormat::kChw32, 0.5f);
  EXPECT_EQ(d.stride[0], 1u);
  EXPECT_EQ(d.stride[1], 3u * 32u);       // one line: W pixels of 32 channels
  EXPECT_EQ(d.stride[2], 2u * 3u * 32u);  // one 32-channel surface
  EXPECT_EQ(d.size, 2u * d.stride[2]);    // 40 channels -> 2 surfaces
  const std::vector<int8_t> b = pack_and_check_channel33(d);
  EXPECT_EQ(b[d.stride[2] + 2 * 32 + 8], 0) << "channel 40 is padding";
}

TEST(IoFormat, Chw32WithPaddedLinesFromAnotherLibraryPacksEveryPixelInItsLine) {
  // A descriptor as cuDLA could report it for a TensorRT loadable: 32 bytes of padding after each line.
  TensorDesc d = int8_desc({1, 40, 2, 3}, IoFormat::kChw32, 0.5f);
  d.stride[1] = 3 * 32 + 32, d.stride[2] = d.stride[1] * 2, d.stride[3] = d.stride[2] * 2;
  d.size = d.stride[3];
  const std::vector<int8_t> b = pack_and_check_channel33(d);
  EXPECT_EQ(b[3 * 32], 0) << "the padding after a line stays zero";
}

TEST(IoFormat, Int8LinearAndHwc4RoundTripOnTheGrid) {
  std::mt19937 gen(3);
  std::uniform_int_distribution<int> lv(-128, 127);
  for (IoFormat f : {IoFormat::kDlaLinear, IoFormat::kDlaHwc4}) {
    const TensorDesc d = int8_desc({1, 3, 5, 7}, f, 0.02f);
    if (f == IoFormat::kDlaLinear) EXPECT_EQ(d.stride[1], 64u) << "lines aligned to 64 bytes on Orin";
    if (f == IoFormat::kDlaHwc4) EXPECT_EQ(d.stride[1], 64u) << "7 pixels x 4 bytes, aligned";
    Tensor x(DType::kF32, {1, 3, 5, 7});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float(lv(gen)) * 0.02f;
    std::vector<uint8_t> b(d.size);
    pack(x, d, b.data());
    const Tensor y = unpack(b.data(), d);
    for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(x.data<float>()[i], y.data<float>()[i]) << i;
  }
}

TEST(IoFormat, Int8PackRoundsTiesAwayFromZeroAndSaturates) {
  const TensorDesc d = int8_desc({1, 1, 1, 6}, IoFormat::kDlaLinear, 1.0f);
  const Tensor x = Tensor::from_f32({1, 1, 1, 6}, {2.5f, -2.5f, 0.49f, 300.f, -300.f, -127.5f});
  std::vector<int8_t> b(d.size);
  pack(x, d, b.data());
  const std::vector<int8_t> want{3, -3, 0, 127, -128, -128};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(b[i], want[i]) << i;
}

TEST(IoFormat, Int8WithoutAScaleIsAClearError) {
  const TensorDesc d = int8_desc({1, 2, 2, 2}, IoFormat::kChw32, 0.f);
  Tensor x(DType::kF32, {1, 2, 2, 2});
  std::vector<uint8_t> b(d.size);
  try {
    pack(x, d, b.data());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no quantization scale"), std::string::npos) << e.what();
  }
  EXPECT_THROW(unpack(b.data(), d), Error);
}
