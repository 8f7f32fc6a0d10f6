// ConvInt8Gemm (conv_int8_gemm.h): the im2col and epilogue kernels, and cuBLASLt opened at run time.
// Compiled with -fmad=false like the other exact kernels.
#include <cublasLt.h>
#include <dlfcn.h>

#include <type_traits>

#include "base/error.h"
#include "gpu/conv_int8_gemm.h"
#include "gpu/device_math.cuh"

namespace dlakit::gpu {
namespace {

using k::ActParams;
using k::ConvGeom;

// Both kernels move a 32 x 32 tile through shared memory with 32 x 8 threads, so that global reads and
// writes run along the contiguous axis on each side (pixels in NCHW, K or filters in the GEMM matrices).
constexpr int kTile = 32, kRowsPerPass = 8;

// cols[p][k] = the level of input tap k of output pixel p, zero outside the image (padding is level 0)
// and past K.
__global__ void im2col_levels_kernel(ConvGeom g, int64_t k_padded, const float* x, float s_in, int rounding,
                                     int8_t* cols) {
  __shared__ int8_t tile[kTile][kTile + 4];  // [pixel][k]
  const int64_t pixels = g.N * g.OH * g.OW, window = g.KH * g.KW, k_real = g.C * window;
  const int64_t p0 = int64_t(blockIdx.x) * kTile, k0 = int64_t(blockIdx.y) * kTile;
  const int tx = threadIdx.x, ty = threadIdx.y;
  {
    const int64_t p = p0 + tx, ow = p % g.OW, oh = (p / g.OW) % g.OH, n = p / (g.OW * g.OH);
    for (int j = ty; j < kTile; j += kRowsPerPass) {
      const int64_t kk = k0 + j, c = kk / window, kh = (kk % window) / g.KW, kw = kk % g.KW;
      const int64_t ih = oh * g.SH - g.PT + kh * g.DH, iw = ow * g.SW - g.PL + kw * g.DW;
      int8_t v = 0;
      if (p < pixels && kk < k_real && s_in > 0 && ih >= 0 && ih < g.H && iw >= 0 && iw < g.W)
        v = int8_t(k::level(x[((n * g.C + c) * g.H + ih) * g.W + iw], s_in, rounding));
      tile[tx][j] = v;
    }
  }
  __syncthreads();
  // 256 threads write the tile's 32 rows of 32 bytes as 4-byte words, 8 threads a row.
  const int t = ty * kTile + tx, row = t / 8, word = t % 8;
  const int64_t p = p0 + row;
  if (p >= pixels) return;
  const int8_t* b = &tile[row][word * 4];
  const uint32_t packed = uint32_t(uint8_t(b[0])) | uint32_t(uint8_t(b[1])) << 8 |
                          uint32_t(uint8_t(b[2])) << 16 | uint32_t(uint8_t(b[3])) << 24;
  *reinterpret_cast<uint32_t*>(cols + p * k_padded + k0 + word * 4) = packed;
}

// y (NCHW) from sums[p][m]: int8_conv_output and the store rule, read along the filters, written along
// the pixels.
__global__ void sums_to_output_kernel(ConvGeom g, int64_t m_padded, const int32_t* sums, const float* mult,
                                      const double* bq, const float* bias, ActParams act, k::StoreRule store,
                                      float* y) {
  __shared__ int32_t tile[kTile][kTile + 1];  // [pixel][filter]
  const int64_t pixels = g.N * g.OH * g.OW, plane = g.OH * g.OW;
  const int64_t p0 = int64_t(blockIdx.x) * kTile, m0 = int64_t(blockIdx.y) * kTile;
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int j = ty; j < kTile; j += kRowsPerPass)
    if (p0 + j < pixels && m0 + tx < g.M) tile[j][tx] = sums[(p0 + j) * m_padded + m0 + tx];
  __syncthreads();
  const int64_t p = p0 + tx;
  if (p >= pixels) return;
  const int64_t n = p / plane, at = p % plane;
  for (int j = ty; j < kTile; j += kRowsPerPass) {
    const int64_t m = m0 + j;
    if (m < g.M)
      y[(n * g.M + m) * plane + at] =
          k::stored(store, k::int8_conv_output(tile[tx][j], m, mult, bq, bias, act));
  }
}

// cuBLASLt's functions, from the library opened once per process; null where it is missing. The handle
// is never destroyed: at exit the CUDA runtime may be gone before static destructors run.
struct Lt {
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
  cublasLtHandle_t handle = nullptr;
};

const Lt* lt() {
  static const Lt* const opened = []() -> const Lt* {
    static Lt api;
    void* lib = dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return nullptr;
    bool all = true;
    auto bind = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      all = all && fn;
    };
    bind(api.create, "cublasLtCreate");
    bind(api.desc_create, "cublasLtMatmulDescCreate");
    bind(api.desc_destroy, "cublasLtMatmulDescDestroy");
    bind(api.desc_set, "cublasLtMatmulDescSetAttribute");
    bind(api.layout_create, "cublasLtMatrixLayoutCreate");
    bind(api.layout_destroy, "cublasLtMatrixLayoutDestroy");
    bind(api.pref_create, "cublasLtMatmulPreferenceCreate");
    bind(api.pref_destroy, "cublasLtMatmulPreferenceDestroy");
    bind(api.pref_set, "cublasLtMatmulPreferenceSetAttribute");
    bind(api.heuristic, "cublasLtMatmulAlgoGetHeuristic");
    bind(api.matmul, "cublasLtMatmul");
    if (!all || api.create(&api.handle) != CUBLAS_STATUS_SUCCESS) return nullptr;
    return &api;
  }();
  return opened;
}

// The most workspace an algorithm may ask for (the engines share one per slot: conv_int8_gemm.h's caller).
constexpr size_t kMaxWorkspace = size_t(32) << 20;

}  // namespace

struct ConvInt8Gemm::Descriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t w = nullptr, cols = nullptr, sums = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Descriptors() {
    const Lt* api = lt();
    if (op) api->desc_destroy(op);
    for (cublasLtMatrixLayout_t l : {w, cols, sums})
      if (l) api->layout_destroy(l);
  }
};

ConvInt8Gemm::ConvInt8Gemm(const ConvGeom& g, int64_t k_padded)
    : g_(g), k_padded_(k_padded), m_padded_((g.M + 3) / 4 * 4), pixels_(g.N * g.OH * g.OW) {}

ConvInt8Gemm::~ConvInt8Gemm() = default;

std::shared_ptr<const ConvInt8Gemm> ConvInt8Gemm::plan(const ConvGeom& g, int64_t k_padded) {
  const int64_t pixels = g.N * g.OH * g.OW;
  if (g.G != 1 || !k::conv_int8_mma_fits(g) || pixels < 1 || pixels > INT32_MAX) return nullptr;
  const Lt* api = lt();
  if (!api) return nullptr;
  std::shared_ptr<ConvInt8Gemm> c(new ConvInt8Gemm(g, k_padded));
  c->lt_ = std::make_unique<Descriptors>();
  Descriptors& d = *c->lt_;
  // Column-major, as cuBLASLt counts: sums (M_padded x pixels) = weights^T (M_padded x K) * cols (K x
  // pixels), both operands with K contiguous: the "TN" form its int8 kernels take.
  const cublasOperation_t transpose = CUBLAS_OP_T;
  if (api->desc_create(&d.op, CUBLAS_COMPUTE_32I, CUDA_R_32I) != CUBLAS_STATUS_SUCCESS ||
      api->desc_set(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof(transpose)) !=
          CUBLAS_STATUS_SUCCESS ||
      api->layout_create(&d.w, CUDA_R_8I, uint64_t(k_padded), uint64_t(c->m_padded_), k_padded) !=
          CUBLAS_STATUS_SUCCESS ||
      api->layout_create(&d.cols, CUDA_R_8I, uint64_t(k_padded), uint64_t(pixels), k_padded) !=
          CUBLAS_STATUS_SUCCESS ||
      api->layout_create(&d.sums, CUDA_R_32I, uint64_t(c->m_padded_), uint64_t(pixels), c->m_padded_) !=
          CUBLAS_STATUS_SUCCESS)
    return nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  if (api->pref_create(&pref) != CUBLAS_STATUS_SUCCESS) return nullptr;
  cublasLtMatmulHeuristicResult_t found{};
  int count = 0;
  const bool ok = api->pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kMaxWorkspace,
                                sizeof(kMaxWorkspace)) == CUBLAS_STATUS_SUCCESS &&
                  api->heuristic(api->handle, d.op, d.w, d.cols, d.sums, d.sums, pref, 1, &found, &count) ==
                      CUBLAS_STATUS_SUCCESS &&
                  count > 0;
  api->pref_destroy(pref);
  if (!ok) return nullptr;
  d.algo = found.algo;
  c->workspace_ = found.workspaceSize;
  return c;
}

void ConvInt8Gemm::run(const float* x, float s_in, int rounding, const int8_t* w, const float* mult,
                       const double* bq, const float* bias, ActParams act, const k::StoreRule& store,
                       float* y, void* cols, void* sums, void* workspace, cudaStream_t s) const {
  const dim3 threads(kTile, kRowsPerPass);
  const unsigned pixel_tiles = unsigned((pixels_ + kTile - 1) / kTile);
  im2col_levels_kernel<<<dim3(pixel_tiles, unsigned(k_padded_ / kTile)), threads, 0, s>>>(
      g_, k_padded_, x, s_in, rounding, static_cast<int8_t*>(cols));
  const int32_t one = 1, zero = 0;
  const Lt* api = lt();
  if (api->matmul(api->handle, lt_->op, &one, w, lt_->w, cols, lt_->cols, &zero, sums, lt_->sums, sums,
                  lt_->sums, &lt_->algo, workspace, workspace_, s) != CUBLAS_STATUS_SUCCESS)
    fail(Status::kInternal, "cuBLASLt's int8 matrix product failed");
  sums_to_output_kernel<<<dim3(pixel_tiles, unsigned((g_.M + kTile - 1) / kTile)), threads, 0, s>>>(
      g_, m_padded_, static_cast<const int32_t*>(sums), mult, bq, bias, act, store, y);
}

}  // namespace dlakit::gpu
