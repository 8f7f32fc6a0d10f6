#include "cudla_client/library.h"

#include <dlfcn.h>
#include <link.h>

#include <vector>

#include "base/error.h"
#include "runtime/runtime.h"

namespace dlakit::cudla_client {
namespace {

// The soname cuDLA clients link against (cudla-api.md §1). On JetPack it lives in the CUDA toolkit's
// library folder, which ld.so's configuration normally lists; the explicit fallback is an assumption [U].
constexpr const char* kSystemLibrary = "libcudla.so.1";
constexpr const char* kToolkitLibrary = "/usr/local/cuda/lib64/libcudla.so.1";

}  // namespace

void check(cudlaStatus s, const std::string& what) {
  if (s != cudlaSuccess) throw rt::RuntimeError(s, what);
}

std::shared_ptr<Library> Library::open(const std::string& path) {
  std::shared_ptr<Library> lib(new Library);
  const std::string first = path.empty() ? kSystemLibrary : path;
  lib->handle_ = dlopen(first.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string why = lib->handle_ ? "" : dlerror();
  if (!lib->handle_ && path.empty()) {
    lib->handle_ = dlopen(kToolkitLibrary, RTLD_NOW | RTLD_LOCAL);
    if (!lib->handle_) why += std::string("; ") + dlerror();
  }
  if (!lib->handle_)
    fail(Status::kIoError, "cannot load the cuDLA library '", first, "': ", why,
         path.empty() ? ". On a Jetson it comes with JetPack (CUDA's libcudla.so.1); elsewhere give "
                        "dlakit's emulated one: --backend=cudla:PREFIX/lib/dlakit/libcudla.so.1"
                      : "");
  lib->path_ = first;
  if (const link_map* map = nullptr;
      dlinfo(lib->handle_, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name)
    lib->path_ = map->l_name;
  std::vector<std::string> missing;
  auto bind = [&](auto& fn, const char* name) {
    void* sym = dlsym(lib->handle_, name);
    if (!sym) missing.push_back(name);
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(sym);
  };
  Api& a = lib->api_;
  bind(a.GetVersion, "cudlaGetVersion");
  bind(a.DeviceGetCount, "cudlaDeviceGetCount");
  bind(a.CreateDevice, "cudlaCreateDevice");
  bind(a.MemRegister, "cudlaMemRegister");
  bind(a.ModuleLoadFromMemory, "cudlaModuleLoadFromMemory");
  bind(a.ModuleGetAttributes, "cudlaModuleGetAttributes");
  bind(a.ModuleUnload, "cudlaModuleUnload");
  bind(a.SubmitTask, "cudlaSubmitTask");
  bind(a.DeviceGetAttribute, "cudlaDeviceGetAttribute");
  bind(a.MemUnregister, "cudlaMemUnregister");
  bind(a.GetLastError, "cudlaGetLastError");
  bind(a.DestroyDevice, "cudlaDestroyDevice");
  bind(a.ImportExternalMemory, "cudlaImportExternalMemory");
  bind(a.GetNvSciSyncAttributes, "cudlaGetNvSciSyncAttributes");
  bind(a.ImportExternalSemaphore, "cudlaImportExternalSemaphore");
  bind(a.SetTaskTimeoutInMs, "cudlaSetTaskTimeoutInMs");
  if (!missing.empty()) {
    std::string names;
    for (const auto& m : missing) names += (names.empty() ? "" : ", ") + m;
    fail(Status::kInvalidArgument, "'", lib->path_, "' is not a cuDLA library: it lacks ", missing.size(),
         " of the 16 cuDLA functions (", names, ")");
  }
  return lib;
}

// The library stays loaded: cuDLA implementations keep worker threads and state past their last handle,
// and unloading code under a live thread would crash.
Library::~Library() = default;

uint64_t Library::version() const {
  uint64_t v = 0;
  check(api_.GetVersion(&v), "cudlaGetVersion");
  return v;
}

uint64_t Library::device_count() const {
  uint64_t n = 0;
  check(api_.DeviceGetCount(&n), "cudlaDeviceGetCount");
  return n;
}

}  // namespace dlakit::cudla_client
