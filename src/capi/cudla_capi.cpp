// libcudla.so.1: the cuDLA C ABI on dlakit's emulated DLA. Every function is a noexcept shim over
// dlakit::rt: handles are checked against live registries before use (a wrong handle is a status, never
// a dereference), and no exception crosses the ABI. Hybrid-mode functions work; standalone-only functions
// (NvSci) return cudlaErrorUnsupportedOperation after their parameter checks. See docs/runtime.md.
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "cudla.h"
#include "runtime/runtime.h"

#define CUDLA_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using dlakit::rt::Device;
using dlakit::rt::RuntimeError;

constexpr int kMaxHandlesPerCore = 16;

// The handles given out are the addresses of these objects; the registries own them. A look-up returns a
// shared_ptr, so a handle one thread uses stays alive while another thread destroys it: the destroyed
// handle is out of the registry (later calls get InvalidDevice/InvalidModule) and the object goes when the
// last call using it returns.
struct ModuleRef {  // what a cudlaModule points at
  std::shared_ptr<Device> device;
};

struct Registry {
  std::mutex mu;
  std::map<Device*, std::shared_ptr<Device>> devices;
  std::map<ModuleRef*, std::shared_ptr<ModuleRef>> modules;
  int per_core[2] = {0, 0};
  std::string last_message;  // the context of the most recent failure (dlakit extension)
};

// C callers may pass any integer where cudla.h says enum; loading an out-of-range enum value is undefined
// in C++, so enum parameters are read as their raw 32-bit representation.
template <typename E>
uint32_t raw(const E& e) {
  static_assert(sizeof(E) == sizeof(uint32_t), "cuDLA enums are 32-bit");
  uint32_t v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

Registry& reg() {
  static Registry* r = new Registry;  // never destroyed: callers may outlive static teardown
  return *r;
}

std::shared_ptr<Device> find_device(cudlaDevHandle h) {
  auto& r = reg();
  std::lock_guard<std::mutex> lk(r.mu);
  auto it = r.devices.find(reinterpret_cast<Device*>(h));
  return it == r.devices.end() ? nullptr : it->second;
}

std::shared_ptr<ModuleRef> find_module(cudlaModule m) {
  auto& r = reg();
  std::lock_guard<std::mutex> lk(r.mu);
  auto it = r.modules.find(reinterpret_cast<ModuleRef*>(m));
  return it == r.modules.end() ? nullptr : it->second;
}

cudlaStatus fail(cudlaStatus s, const std::string& msg) {
  auto& r = reg();
  std::lock_guard<std::mutex> lk(r.mu);
  r.last_message = msg;
  return s;
}

// Runs f, turning every exception into a status.
template <typename F>
cudlaStatus guarded(const char* fn, F&& f) noexcept {
  try {
    return f();
  } catch (const RuntimeError& e) {
    return fail(e.status(), std::string(fn) + ": " + e.what());
  } catch (const std::bad_alloc&) {
    return fail(cudlaErrorOutOfResources, std::string(fn) + ": out of memory");
  } catch (const std::exception& e) {
    return fail(cudlaErrorUnknown, std::string(fn) + ": " + e.what());
  } catch (...) {
    return fail(cudlaErrorUnknown, std::string(fn) + ": unknown failure");
  }
}

}  // namespace

CUDLA_EXPORT cudlaStatus cudlaGetVersion(uint64_t* const version) {
  if (!version) return fail(cudlaErrorInvalidParam, "cudlaGetVersion: version is NULL");
  *version = 1000000ull * CUDLA_VER_MAJOR + 1000ull * CUDLA_VER_MINOR + CUDLA_VER_PATCH;
  return cudlaSuccess;
}

CUDLA_EXPORT cudlaStatus cudlaDeviceGetCount(uint64_t* const pNumDevices) {
  if (!pNumDevices) return fail(cudlaErrorInvalidParam, "cudlaDeviceGetCount: pNumDevices is NULL");
  *pNumDevices = 2;
  return cudlaSuccess;
}

CUDLA_EXPORT cudlaStatus cudlaCreateDevice(uint64_t const device, cudlaDevHandle* const devHandle,
                                           uint32_t const flags) {
  return guarded("cudlaCreateDevice", [&] {
    if (!devHandle) return fail(cudlaErrorInvalidParam, "cudlaCreateDevice: devHandle is NULL");
    if (device > 1)
      return fail(cudlaErrorInvalidDevice,
                  "cudlaCreateDevice: DLA " + std::to_string(device) + " does not exist (0 or 1)");
    if (flags == CUDLA_STANDALONE)
      return fail(cudlaErrorUnsupportedOperation,
                  "cudlaCreateDevice: standalone mode needs NvSci, which the emulated DLA does not provide");
    if (flags != CUDLA_CUDA_DLA)
      return fail(cudlaErrorInvalidParam,
                  "cudlaCreateDevice: flags must be CUDLA_CUDA_DLA or CUDLA_STANDALONE");
    auto& r = reg();
    std::lock_guard<std::mutex> lk(r.mu);
    if (r.per_core[device] >= kMaxHandlesPerCore) {
      r.last_message = "cudlaCreateDevice: at most 16 device handles per DLA core";
      return cudlaErrorOutOfResources;
    }
    // Hybrid mode takes the memory cuDLA takes (CUDA memory where a GPU answers).
    auto d = std::make_shared<Device>(int(device), dlakit::rt::MemoryPolicy::kLikeCudla);
    Device* raw = d.get();
    r.devices[raw] = std::move(d);
    ++r.per_core[device];
    *devHandle = reinterpret_cast<cudlaDevHandle>(raw);
    return cudlaSuccess;
  });
}

CUDLA_EXPORT cudlaStatus cudlaDestroyDevice(cudlaDevHandle const devHandle) {
  return guarded("cudlaDestroyDevice", [&] {
    std::shared_ptr<Device> owned;
    std::vector<std::shared_ptr<ModuleRef>> modules;  // released outside the lock, with the device
    {
      auto& r = reg();
      std::lock_guard<std::mutex> lk(r.mu);
      auto it = r.devices.find(reinterpret_cast<Device*>(devHandle));
      if (it == r.devices.end()) {
        r.last_message = "cudlaDestroyDevice: not a live device handle";
        return cudlaErrorInvalidDevice;
      }
      for (auto m = r.modules.begin(); m != r.modules.end();) {
        if (m->second->device == it->second) {
          modules.push_back(m->second);
          m = r.modules.erase(m);
        } else {
          ++m;
        }
      }
      --r.per_core[it->first->core()];
      owned = std::move(it->second);
      r.devices.erase(it);
    }
    modules.clear();
    owned.reset();  // unless a concurrent call still holds it, this cancels and waits for queued tasks
    return cudlaSuccess;
  });
}

CUDLA_EXPORT cudlaStatus cudlaMemRegister(cudlaDevHandle const devHandle, const uint64_t* const ptr,
                                          size_t const size, uint64_t** const devPtr, uint32_t const flags) {
  return guarded("cudlaMemRegister", [&] {
    const std::shared_ptr<Device> d = find_device(devHandle);
    if (!d) return fail(cudlaErrorInvalidDevice, "cudlaMemRegister: not a live device handle");
    if (!devPtr) return fail(cudlaErrorInvalidParam, "cudlaMemRegister: devPtr is NULL");
    if (flags != 0 && flags != CUDLA_TASK_STATISTICS)
      return fail(cudlaErrorInvalidParam, "cudlaMemRegister: flags must be 0 or CUDLA_TASK_STATISTICS");
    *devPtr = d->register_memory(ptr, size);
    return cudlaSuccess;
  });
}

CUDLA_EXPORT cudlaStatus cudlaMemUnregister(cudlaDevHandle const devHandle, const uint64_t* const devPtr) {
  return guarded("cudlaMemUnregister", [&] {
    const std::shared_ptr<Device> d = find_device(devHandle);
    if (!d) return fail(cudlaErrorInvalidDevice, "cudlaMemUnregister: not a live device handle");
    d->unregister_memory(devPtr);
    return cudlaSuccess;
  });
}

CUDLA_EXPORT cudlaStatus cudlaModuleLoadFromMemory(cudlaDevHandle const devHandle,
                                                   const uint8_t* const pModule, size_t const moduleSize,
                                                   cudlaModule* const hModule, uint32_t const flags) {
  return guarded("cudlaModuleLoadFromMemory", [&] {
    const std::shared_ptr<Device> d = find_device(devHandle);
    if (!d) return fail(cudlaErrorInvalidDevice, "cudlaModuleLoadFromMemory: not a live device handle");
    if (flags == CUDLA_MODULE_ENABLE_FAULT_DIAGNOSTICS)
      return fail(cudlaErrorUnsupportedOperation,
                  "cudlaModuleLoadFromMemory: the emulated DLA has no fault-diagnostics module");
    if (flags != 0)
      return fail(cudlaErrorInvalidParam, "cudlaModuleLoadFromMemory: flags must be CUDLA_MODULE_DEFAULT");
    if (!pModule || moduleSize == 0 || !hModule)
      return fail(cudlaErrorInvalidParam,
                  "cudlaModuleLoadFromMemory: pModule, moduleSize and hModule are required");
    d->load(pModule, moduleSize);
    auto& r = reg();
    std::lock_guard<std::mutex> lk(r.mu);
    if (!r.devices.count(d.get())) {  // destroyed by another thread meanwhile: no handle to a dead device
      r.last_message = "cudlaModuleLoadFromMemory: the device was destroyed during the call";
      return cudlaErrorInvalidDevice;
    }
    auto m = std::make_shared<ModuleRef>(ModuleRef{d});
    *hModule = reinterpret_cast<cudlaModule>(m.get());
    r.modules[m.get()] = std::move(m);
    return cudlaSuccess;
  });
}

CUDLA_EXPORT cudlaStatus cudlaModuleUnload(cudlaModule const hModule, uint32_t const flags) {
  return guarded("cudlaModuleUnload", [&] {
    const std::shared_ptr<ModuleRef> m = find_module(hModule);
    if (!m) return fail(cudlaErrorInvalidModule, "cudlaModuleUnload: not a live module handle");
    if (flags != 0) return fail(cudlaErrorInvalidParam, "cudlaModuleUnload: flags must be 0");
    m->device->unload();
    auto& r = reg();
    std::lock_guard<std::mutex> lk(r.mu);
    r.modules.erase(m.get());
    return cudlaSuccess;
  });
}

namespace {
void fill_desc(const dlakit::rt::TensorDesc& s, cudlaModuleTensorDescriptor& d) {
  std::memset(&d, 0, sizeof d);
  std::snprintf(d.name, sizeof d.name, "%s", s.name.c_str());
  d.size = s.size;
  d.n = s.n;
  d.c = s.c;
  d.h = s.h;
  d.w = s.w;
  d.dataFormat = s.data_format;
  d.dataType = s.data_type;
  d.dataCategory = s.data_category;
  d.pixelFormat = s.pixel_format;
  d.pixelMapping = s.pixel_mapping;
  for (int i = 0; i < 8; ++i) d.stride[i] = s.stride[size_t(i)];
}
}  // namespace

CUDLA_EXPORT cudlaStatus cudlaModuleGetAttributes(cudlaModule const hModule,
                                                  cudlaModuleAttributeType const attrType,
                                                  cudlaModuleAttribute* const attribute) {
  return guarded("cudlaModuleGetAttributes", [&] {
    const std::shared_ptr<ModuleRef> m = find_module(hModule);
    if (!m) return fail(cudlaErrorInvalidModule, "cudlaModuleGetAttributes: not a live module handle");
    if (!attribute) return fail(cudlaErrorInvalidParam, "cudlaModuleGetAttributes: attribute is NULL");
    const std::shared_ptr<const dlakit::rt::Module> held = m->device->loaded_module();
    const auto& mod = *held;
    switch (raw(attrType)) {
      case CUDLA_NUM_INPUT_TENSORS:
        attribute->numInputTensors = uint32_t(mod.inputs().size());
        return cudlaSuccess;
      case CUDLA_NUM_OUTPUT_TENSORS:
        attribute->numOutputTensors = uint32_t(mod.outputs().size());
        return cudlaSuccess;
      case CUDLA_NUM_OUTPUT_TASK_STATISTICS:
        attribute->numOutputTensors = 0;
        return cudlaSuccess;
      case CUDLA_INPUT_TENSOR_DESCRIPTORS:
        if (!attribute->inputTensorDesc)
          return fail(cudlaErrorInvalidParam,
                      "cudlaModuleGetAttributes: set inputTensorDesc to an array first");
        for (size_t i = 0; i < mod.inputs().size(); ++i)
          fill_desc(mod.inputs()[i], attribute->inputTensorDesc[i]);
        return cudlaSuccess;
      case CUDLA_OUTPUT_TENSOR_DESCRIPTORS:
        if (!attribute->outputTensorDesc)
          return fail(cudlaErrorInvalidParam,
                      "cudlaModuleGetAttributes: set outputTensorDesc to an array first");
        for (size_t i = 0; i < mod.outputs().size(); ++i)
          fill_desc(mod.outputs()[i], attribute->outputTensorDesc[i]);
        return cudlaSuccess;
      case CUDLA_OUTPUT_TASK_STATISTICS_DESCRIPTORS:
        return cudlaSuccess;  // no statistics tensors
    }
    return fail(cudlaErrorInvalidAttribute,
                "cudlaModuleGetAttributes: unknown attribute " + std::to_string(raw(attrType)));
  });
}

CUDLA_EXPORT cudlaStatus cudlaSubmitTask(cudlaDevHandle const devHandle, const cudlaTask* const ptrToTasks,
                                         uint32_t const numTasks, void* const stream, uint32_t const flags) {
  return guarded("cudlaSubmitTask", [&] {
    const std::shared_ptr<Device> d = find_device(devHandle);
    if (!d) return fail(cudlaErrorInvalidDevice, "cudlaSubmitTask: not a live device handle");
    if (!ptrToTasks || numTasks == 0) return fail(cudlaErrorInvalidParam, "cudlaSubmitTask: no tasks");
    if (flags & CUDLA_SUBMIT_DIAGNOSTICS_TASK)
      return fail(cudlaErrorUnsupportedOperation, "cudlaSubmitTask: no diagnostics module");
    if (flags & ~uint32_t(CUDLA_SUBMIT_NOOP | CUDLA_SUBMIT_SKIP_LOCK_ACQUIRE))
      return fail(cudlaErrorInvalidParam, "cudlaSubmitTask: unknown flags");
    // All or nothing: every task is checked (its counts before its arrays are read) before any runs.
    const std::shared_ptr<const dlakit::rt::Module> held = d->loaded_module();
    const auto& mod = *held;
    std::vector<dlakit::rt::Task> tasks(numTasks);
    for (uint32_t i = 0; i < numTasks; ++i) {
      const cudlaTask& t = ptrToTasks[i];
      const std::string task = "cudlaSubmitTask: task " + std::to_string(i);
      const std::shared_ptr<ModuleRef> m = find_module(t.moduleHandle);
      if (!m || m->device != d)
        return fail(cudlaErrorInvalidModule, task + " names no module of this device");
      if (t.waitEvents || t.signalEvents)
        return fail(cudlaErrorUnsupportedOperation,
                    task + ": wait/signal events are standalone-mode (NvSci) features");
      if (!t.inputTensor || !t.outputTensor)
        return fail(cudlaErrorUnsupportedOperation, task + ": hybrid tasks need input and output tensors");
      if (t.numInputTensors != mod.inputs().size() || t.numOutputTensors != mod.outputs().size())
        return fail(cudlaErrorInvalidParam,
                    task + " has " + std::to_string(t.numInputTensors) + " inputs / " +
                        std::to_string(t.numOutputTensors) + " outputs; the module has " +
                        std::to_string(mod.inputs().size()) + " / " + std::to_string(mod.outputs().size()));
      tasks[i].inputs.assign(t.inputTensor, t.inputTensor + t.numInputTensors);
      tasks[i].outputs.assign(t.outputTensor, t.outputTensor + t.numOutputTensors);
    }
    d->submit(tasks, stream, (flags & CUDLA_SUBMIT_NOOP) != 0);
    return cudlaSuccess;
  });
}

CUDLA_EXPORT cudlaStatus cudlaDeviceGetAttribute(cudlaDevHandle const devHandle,
                                                 cudlaDevAttributeType const attrib,
                                                 cudlaDevAttribute* const pAttribute) {
  return guarded("cudlaDeviceGetAttribute", [&] {
    const std::shared_ptr<Device> d = find_device(devHandle);
    if (!d) return fail(cudlaErrorInvalidDevice, "cudlaDeviceGetAttribute: not a live device handle");
    if (!pAttribute) return fail(cudlaErrorInvalidParam, "cudlaDeviceGetAttribute: pAttribute is NULL");
    const uint32_t a = raw(attrib);
    if (a == CUDLA_UNIFIED_ADDRESSING) {
      pAttribute->unifiedAddressingSupported = 1;  // host pointers are the device pointers here
      return cudlaSuccess;
    }
    if (a == CUDLA_DEVICE_VERSION) {
      pAttribute->deviceVersion = 2;  // DLA 2.0 (Orin); the real encoding is undocumented
      return cudlaSuccess;
    }
    return fail(cudlaErrorInvalidAttribute,
                "cudlaDeviceGetAttribute: unknown attribute " + std::to_string(a));
  });
}

CUDLA_EXPORT cudlaStatus cudlaGetLastError(cudlaDevHandle const devHandle) {
  return guarded("cudlaGetLastError", [&] {
    const std::shared_ptr<Device> d = find_device(devHandle);
    if (!d) return fail(cudlaErrorInvalidDevice, "cudlaGetLastError: not a live device handle");
    return d->take_last_error();
  });
}

CUDLA_EXPORT cudlaStatus cudlaSetTaskTimeoutInMs(cudlaDevHandle const devHandle, uint32_t const timeout) {
  return guarded("cudlaSetTaskTimeoutInMs", [&] {
    const std::shared_ptr<Device> d = find_device(devHandle);
    if (!d)
      return fail(cudlaErrorInvalidParam,
                  "cudlaSetTaskTimeoutInMs: not a live device handle");  // documented: InvalidParam
    d->set_timeout_ms(timeout);
    return cudlaSuccess;
  });
}

CUDLA_EXPORT cudlaStatus cudlaImportExternalMemory(cudlaDevHandle const devHandle,
                                                   const cudlaExternalMemoryHandleDesc* const desc,
                                                   uint64_t** const devPtr, uint32_t const flags) {
  return guarded("cudlaImportExternalMemory", [&] {
    if (!find_device(devHandle))
      return fail(cudlaErrorInvalidDevice, "cudlaImportExternalMemory: not a live device handle");
    if (!desc || !devPtr)
      return fail(cudlaErrorInvalidParam, "cudlaImportExternalMemory: desc and devPtr are required");
    (void)flags;
    return fail(cudlaErrorUnsupportedOperation,
                "cudlaImportExternalMemory: NvSciBuf import is standalone-mode only; use cudlaMemRegister");
  });
}

CUDLA_EXPORT cudlaStatus cudlaImportExternalSemaphore(cudlaDevHandle const devHandle,
                                                      const cudlaExternalSemaphoreHandleDesc* const desc,
                                                      uint64_t** const devPtr, uint32_t const flags) {
  return guarded("cudlaImportExternalSemaphore", [&] {
    if (!find_device(devHandle))
      return fail(cudlaErrorInvalidDevice, "cudlaImportExternalSemaphore: not a live device handle");
    if (!desc || !devPtr)
      return fail(cudlaErrorInvalidParam, "cudlaImportExternalSemaphore: desc and devPtr are required");
    (void)flags;
    return fail(cudlaErrorUnsupportedOperation,
                "cudlaImportExternalSemaphore: NvSciSync is standalone-mode only");
  });
}

CUDLA_EXPORT cudlaStatus cudlaGetNvSciSyncAttributes(uint64_t* attrList, uint32_t const flags) {
  if (!attrList) return fail(cudlaErrorInvalidParam, "cudlaGetNvSciSyncAttributes: attrList is NULL");
  if (flags == 0 || (flags & ~uint32_t(CUDLA_NVSCISYNC_ATTR_WAIT | CUDLA_NVSCISYNC_ATTR_SIGNAL)))
    return fail(cudlaErrorInvalidParam, "cudlaGetNvSciSyncAttributes: flags must be WAIT, SIGNAL or both");
  return fail(cudlaErrorUnsupportedOperation, "cudlaGetNvSciSyncAttributes: no NvSci on the emulated DLA");
}

// dlakit extensions (declared in include/dlakit/cudla_ext.h): what the CPU emulation needs beyond cuDLA.
CUDLA_EXPORT const char* dlakitCudlaLastMessage(void) {
  auto& r = reg();
  std::lock_guard<std::mutex> lk(r.mu);
  thread_local std::string copy;
  copy = r.last_message;
  return copy.c_str();
}

CUDLA_EXPORT cudlaStatus dlakitCudlaSynchronize(cudlaDevHandle const devHandle) {
  return guarded("dlakitCudlaSynchronize", [&] {
    const std::shared_ptr<Device> d = find_device(devHandle);
    if (!d) return fail(cudlaErrorInvalidDevice, "dlakitCudlaSynchronize: not a live device handle");
    d->synchronize();
    return cudlaSuccess;
  });
}
