// A cuDLA library opened with dlopen: the 16 public functions of cudla.h and nothing else, so the same
// client code drives NVIDIA's libcudla.so.1 on a Jetson (the real DLA) and dlakit's (the emulated DLA).
#pragma once
#include <memory>
#include <string>

#include "cudla.h"

namespace dlakit::cudla_client {

// The functions, as cudla.h declares them.
struct Api {
  cudlaStatus (*GetVersion)(uint64_t* const);
  cudlaStatus (*DeviceGetCount)(uint64_t* const);
  cudlaStatus (*CreateDevice)(uint64_t const, cudlaDevHandle* const, uint32_t const);
  cudlaStatus (*MemRegister)(cudlaDevHandle const, const uint64_t* const, size_t const, uint64_t** const,
                             uint32_t const);
  cudlaStatus (*ModuleLoadFromMemory)(cudlaDevHandle const, const uint8_t* const, size_t const,
                                      cudlaModule* const, uint32_t const);
  cudlaStatus (*ModuleGetAttributes)(cudlaModule const, cudlaModuleAttributeType const,
                                     cudlaModuleAttribute* const);
  cudlaStatus (*ModuleUnload)(cudlaModule const, uint32_t const);
  cudlaStatus (*SubmitTask)(cudlaDevHandle const, const cudlaTask* const, uint32_t const, void* const,
                            uint32_t const);
  cudlaStatus (*DeviceGetAttribute)(cudlaDevHandle const, cudlaDevAttributeType const,
                                    cudlaDevAttribute* const);
  cudlaStatus (*MemUnregister)(cudlaDevHandle const, const uint64_t* const);
  cudlaStatus (*GetLastError)(cudlaDevHandle const);
  cudlaStatus (*DestroyDevice)(cudlaDevHandle const);
  cudlaStatus (*ImportExternalMemory)(cudlaDevHandle const, const cudlaExternalMemoryHandleDesc* const,
                                      uint64_t** const, uint32_t const);
  cudlaStatus (*GetNvSciSyncAttributes)(uint64_t*, uint32_t const);
  cudlaStatus (*ImportExternalSemaphore)(cudlaDevHandle const, const cudlaExternalSemaphoreHandleDesc* const,
                                         uint64_t** const, uint32_t const);
  cudlaStatus (*SetTaskTimeoutInMs)(cudlaDevHandle const, uint32_t const);
};

class Library {
 public:
  // `path` empty: the system's libcudla.so.1 (NVIDIA's on a Jetson). A file that cannot be loaded, or a
  // library lacking any of the 16 functions, is an error that says which and what to do.
  static std::shared_ptr<Library> open(const std::string& path = "");
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  const Api& api() const { return api_; }
  const std::string& path() const { return path_; }  // what was loaded (the resolved file where known)
  uint64_t version() const;                          // 1000000 * major + 1000 * minor + patch
  uint64_t device_count() const;

 private:
  Library() = default;
  void* handle_ = nullptr;  // never dlclose'd (see the destructor)
  std::string path_;
  Api api_{};
};

// Throws rt::RuntimeError(s, "<what>: <status name>") unless s is cudlaSuccess.
void check(cudlaStatus s, const std::string& what);

}  // namespace dlakit::cudla_client
