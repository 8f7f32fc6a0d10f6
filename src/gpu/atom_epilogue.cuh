// The INT8 convolution's epilogue onto an int8 chw32 surface, written once for the two kernels that write
// one (the pass over cuBLASLt's sums, and the implicit GEMM that keeps its sums in registers): filter m's
// exact int32 sum -> int8_conv_sum, the activation, the store rule, then the surface's quantization
// (pack_surface's), as the CPU executor computes them.
#pragma once
#include <type_traits>

#include "gpu/conv_int8_gemm.h"
#include "gpu/device_math.cuh"
#include "gpu/fast_divide.h"

namespace dlakit::gpu {

// What the epilogue needs besides the sums and the filters' numbers, fixed for a launch: the inverses of the
// scales (numerics::usable_inverse, the same IEEE division on the host) and the pixel split. direct: the
// store rule quantizes to the surface's own scale, so its level is the byte (ConvInt8Gemm::quantize_once).
struct AtomEpilogue {
  k::StoreRule store;
  float inv_store = 0, inv_out = 0, inv_y = 0;
  PixelSplit pixel;
  bool direct = false;
};

inline AtomEpilogue atom_epilogue(const k::ConvGeom& g, const k::StoreRule& store, const Int8Atoms& out,
                                  const AtomAdd* add) {
  AtomEpilogue e;
  e.store = store;
  e.inv_store = numerics::usable_inverse(store.scale);
  e.inv_out = numerics::usable_inverse(out.scale);
  e.inv_y = add ? numerics::usable_inverse(add->y.scale) : 0.f;
  e.pixel = PixelSplit(g.OW, g.OH);
  e.direct = ConvInt8Gemm::quantize_once(store, out.scale);
  return e;
}

// How a level reaches the surface: through the store rule, then the surface's quantization (kRule); or the
// store rule's own quantization, which is the surface's (AtomEpilogue::direct), after a rounding to fp16
// (kDirectHalfFirst) or not. A template argument, so that no value pays for the choice.
enum class AtomStore { kRule, kDirect, kDirectHalfFirst };
__host__ __device__ inline AtomStore atom_store(const AtomEpilogue& e) {
  return !e.direct ? AtomStore::kRule : e.store.half_first ? AtomStore::kDirectHalfFirst : AtomStore::kDirect;
}
// f(atom_store(e) as a std::integral_constant): the one switch from the launch's store to the epilogues'
// template argument, for host code (a kernel to launch) and device code (a per-thread choice) alike.
#pragma nv_exec_check_disable
template <class F>
__host__ __device__ auto with_atom_store(const AtomEpilogue& e, F&& f) {
  switch (atom_store(e)) {
    case AtomStore::kDirect:
      return f(std::integral_constant<AtomStore, AtomStore::kDirect>{});
    case AtomStore::kDirectHalfFirst:
      return f(std::integral_constant<AtomStore, AtomStore::kDirectHalfFirst>{});
    default:
      return f(std::integral_constant<AtomStore, AtomStore::kRule>{});
  }
}

// The output surface's level (an exact integer as a float; 0 where the surface has no scale, as
// pack_surface writes) from filter m's sum and numbers (bias_m: 0 without a bias).
template <k::Act kAct, AtomStore kStore>
__device__ inline float conv_atom_level(int32_t sum, float mult_m, double bq_m, float bias_m,
                                        k::ActParams act, const AtomEpilogue& e, float out_scale) {
  // the sum's double from its bits (numerics::int_value): a conversion per value bounds the epilogue
  const float v = k::activated<kAct>(act, k::int8_conv_sum(numerics::int_value(sum), mult_m, bq_m, bias_m));
  if constexpr (kStore == AtomStore::kRule) {
    const float level = numerics::fast_level(k::stored(e.store, v), out_scale, e.inv_out, 0);
    return out_scale > 0 ? level : 0.f;
  } else {  // direct: the surface's scale is the store rule's, which is positive (quantize_once)
    return numerics::fast_level(kStore == AtomStore::kDirectHalfFirst ? k::half_rounded(v) : v, e.store.scale,
                                e.inv_store, e.store.rounding);
  }
}

}  // namespace dlakit::gpu
