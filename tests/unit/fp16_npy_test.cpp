// fp16 conversion (every half value, ties, subnormals, overflow) and .npy round trips and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "base/fp16.h"
#include "base/fp16_array.h"
#include "io/npy.h"

using namespace dlakit;

TEST(Fp16, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = half_to_float(uint16_t(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_half(f), h) << "half 0x" << std::hex << h;
  }
}

TEST(Fp16, RoundsToNearestEvenAtTies) {
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.f, -11)), 0x3c00);      // tie between 1 and 1+2^-10: even (1)
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.f, -11)), 0x3c02);  // tie: rounds up to even
  EXPECT_EQ(float_to_half(1.0f / 3.0f), 0x3555);
  EXPECT_EQ(float_to_half(65504.f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.f), 0x7c00);               // rounds to infinity
  EXPECT_EQ(float_to_half(std::ldexp(1.f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.f, -25)), 0x0000);  // tie with 0: even
  EXPECT_EQ(float_to_half(std::ldexp(3.f, -26)), 0x0001);  // above the tie
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
}

TEST(Npy, RoundTripsEveryDtype) {
  for (DType t : {DType::kF32, DType::kF16, DType::kI8, DType::kU8, DType::kI32, DType::kI64, DType::kBool}) {
    Tensor x(t, {2, 3, 5});
    for (size_t i = 0; i < x.nbytes(); ++i) static_cast<uint8_t*>(x.raw())[i] = uint8_t(i * 37 + 11);
    if (t == DType::kBool)
      for (int64_t i = 0; i < x.numel(); ++i) x.data<uint8_t>()[i] &= 1;
    Tensor y = parse_npy(serialize_npy(x), "mem");
    ASSERT_EQ(y.dtype(), t);
    ASSERT_EQ(y.shape(), x.shape());
    ASSERT_EQ(0, std::memcmp(x.raw(), y.raw(), x.nbytes()));
  }
  Tensor s = parse_npy(serialize_npy(Tensor::scalar_f32(2.5f)), "mem");
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.data<float>()[0], 2.5f);
}

TEST(Npy, BadFilesGiveClearErrors) {
  auto msg = [](const std::string& bytes) {
    try {
      parse_npy(bytes, "x.npy");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(msg("hello").find("not a .npy file"), std::string::npos);
  std::string good = serialize_npy(Tensor::from_f32({4}, {1, 2, 3, 4}));
  EXPECT_NE(msg(good.substr(0, good.size() - 3)).find("data bytes"), std::string::npos);
  EXPECT_NE(msg(good.substr(0, 20)).find("truncated"), std::string::npos);
  std::string f64 = good;
  f64.replace(f64.find("<f4"), 3, "<f8");
  EXPECT_NE(msg(f64).find("dtype '<f8'"), std::string::npos);
}

TEST(Npy, MalformedHeaderFieldsAreParseErrors) {  // found by fuzz_npy
  std::string good = serialize_npy(Tensor::from_f32({2}, {1, 2}));
  std::string bad = good;
  bad.replace(bad.find("(2,)"), 4, "}( ,");
  EXPECT_THROW(parse_npy(bad, "x.npy"), Error);
  bad = good;
  bad.replace(bad.find("(2,)"), 4, "(2, ");
  EXPECT_THROW(parse_npy(bad, "x.npy"), Error);
}

TEST(Fp16, VectorRoundingMatchesScalarOnEveryHalfAndRandomFloats) {
  std::vector<float> v;
  for (uint32_t h = 0; h < 65536; ++h)
    if (!std::isnan(half_to_float(uint16_t(h)))) v.push_back(half_to_float(uint16_t(h)));
  uint32_t x = 12345;
  for (int i = 0; i < 200000; ++i) {  // random bit patterns, NaNs excluded, incl. subnormal/overflow ranges
    x = x * 1664525u + 1013904223u;
    float f;
    std::memcpy(&f, &x, 4);
    if (!std::isnan(f)) v.push_back(f);
  }
  std::vector<float> w = v, copied(v.size());
  round_to_half_inplace(w.data(), int64_t(w.size()));
  round_to_half_into(v.data(), copied.data(), int64_t(v.size()));  // not in place
  for (size_t i = 0; i < v.size(); ++i) {
    const float want = round_to_half(v[i]);
    ASSERT_EQ(std::memcmp(&w[i], &want, 4), 0) << "at " << v[i];
    ASSERT_EQ(std::memcmp(&copied[i], &want, 4), 0) << "at " << v[i];
  }
}
