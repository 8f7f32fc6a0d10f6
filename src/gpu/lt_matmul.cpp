// LtMatmul (lt_matmul.h): cuBLASLt's functions from the library opened once per process.
#include "gpu/lt_matmul.h"

#include <cublasLt.h>
#include <dlfcn.h>

#include <type_traits>

#include "base/error.h"

namespace dlakit::gpu {
namespace {

// Null where the library or one of its functions is missing. The handle is never destroyed: at exit the
// CUDA runtime may be gone before static destructors run.
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

// The most workspace an algorithm may ask for (the engines share one per scratch slot).
constexpr size_t kMaxWorkspace = size_t(32) << 20;

}  // namespace

struct LtMatmul::Descriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Descriptors() {
    const Lt* api = lt();
    if (op) api->desc_destroy(op);
    for (cublasLtMatrixLayout_t l : {a, b, d})
      if (l) api->layout_destroy(l);
  }
};

LtMatmul::LtMatmul(Kind kind) : kind_(kind) {}
LtMatmul::~LtMatmul() = default;

std::unique_ptr<LtMatmul> LtMatmul::plan(Kind kind, Matrix a, Matrix b, Matrix d) {
  const Lt* api = lt();
  if (!api) return nullptr;
  std::unique_ptr<LtMatmul> m(new LtMatmul(kind));
  m->lt_ = std::make_unique<Descriptors>();
  Descriptors& ds = *m->lt_;
  const bool int8 = kind == Kind::kInt8;
  const cudaDataType_t in = int8 ? CUDA_R_8I : CUDA_R_16F, out = int8 ? CUDA_R_32I : CUDA_R_32F;
  const cublasOperation_t op_a = int8 ? CUBLAS_OP_T : CUBLAS_OP_N;
  auto layout = [&](cublasLtMatrixLayout_t* l, cudaDataType_t type, const Matrix& x) {
    return api->layout_create(l, type, uint64_t(x.rows), uint64_t(x.cols), x.ld) == CUBLAS_STATUS_SUCCESS;
  };
  if (api->desc_create(&ds.op, int8 ? CUBLAS_COMPUTE_32I : CUBLAS_COMPUTE_32F,
                       int8 ? CUDA_R_32I : CUDA_R_32F) != CUBLAS_STATUS_SUCCESS ||
      api->desc_set(ds.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)) != CUBLAS_STATUS_SUCCESS ||
      !layout(&ds.a, in, a) || !layout(&ds.b, in, b) || !layout(&ds.d, out, d))
    return nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  if (api->pref_create(&pref) != CUBLAS_STATUS_SUCCESS) return nullptr;
  cublasLtMatmulHeuristicResult_t found{};
  int count = 0;
  const bool ok = api->pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kMaxWorkspace,
                                sizeof(kMaxWorkspace)) == CUBLAS_STATUS_SUCCESS &&
                  api->heuristic(api->handle, ds.op, ds.a, ds.b, ds.d, ds.d, pref, 1, &found, &count) ==
                      CUBLAS_STATUS_SUCCESS &&
                  count > 0;
  api->pref_destroy(pref);
  if (!ok) return nullptr;
  ds.algo = found.algo;
  m->workspace_ = found.workspaceSize;
  return m;
}

void LtMatmul::run(const void* a, const void* b, void* d, void* workspace, cudaStream_t s) const {
  const int32_t one_i = 1, zero_i = 0;
  const float one_f = 1.f, zero_f = 0.f;
  const bool int8 = kind_ == Kind::kInt8;
  const void* one = int8 ? static_cast<const void*>(&one_i) : &one_f;
  const void* zero = int8 ? static_cast<const void*>(&zero_i) : &zero_f;
  const Lt* api = lt();
  if (api->matmul(api->handle, lt_->op, one, a, lt_->a, b, lt_->b, zero, d, lt_->d, d, lt_->d, &lt_->algo,
                  workspace, workspace_, s) != CUBLAS_STATUS_SUCCESS)
    fail(Status::kInternal,
         int8 ? "cuBLASLt's int8 matrix product failed" : "cuBLASLt's fp16 matrix product failed");
}

}  // namespace dlakit::gpu
