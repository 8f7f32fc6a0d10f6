// The cuDLA C ABI (libcudla.so.1's 16 functions and dlakit's two extensions) driven in an order and with
// arguments the fuzzer chooses: live, destroyed and made-up handles, registered, unregistered, misaligned
// and overlapping buffers, wrong tensor counts, truncated loadables, unknown flags and enum values. Every
// call must return a status, never crash, hang or leak. Arguments stay within what a caller may pass: a
// pointer is NULL or points into memory this program owns, an array holds as many entries as its count
// says (a caller that lies about either has undefined behaviour on the board too).
//
// Input format: a sequence of calls, each an opcode byte followed by the bytes its arguments take (see
// `step`); a missing byte reads as 0.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../common/test_paths.h"
#include "cudla.h"
#include "dlakit/cudla_ext.h"

namespace {

const std::vector<uint8_t>& loadable() {
  static const std::vector<uint8_t> bytes = [] {
    std::ifstream f(std::string(dlakit::test_paths::source_dir()) + "/tests/fuzz/seeds/test_Conv2d.dla",
                    std::ios::binary);
    std::vector<uint8_t> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (b.empty()) std::abort();  // the target is useless without its loadable
    return b;
  }();
  return bytes;
}

constexpr size_t kBufferBytes = 64 << 10, kBuffers = 4;
uint8_t* buffer(size_t i) {
  static uint8_t* buffers[kBuffers] = {};
  if (!buffers[i]) buffers[i] = static_cast<uint8_t*>(std::aligned_alloc(64, kBufferBytes));
  return buffers[i];
}

// In tests/fuzz/fuzz_capi_raw.c: calls with raw values where cudla.h says enum, made from C.
extern "C" cudlaStatus fuzz_module_get_attributes(cudlaModule m, uint32_t which, cudlaModuleAttribute* a);
extern "C" cudlaStatus fuzz_device_get_attribute(cudlaDevHandle d, uint32_t which, cudlaDevAttribute* a);

class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  bool more() const { return p_ < end_; }
  uint8_t u8() { return p_ < end_ ? *p_++ : 0; }
  uint32_t u32() {
    return uint32_t(u8()) | uint32_t(u8()) << 8 | uint32_t(u8()) << 16 | uint32_t(u8()) << 24;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

struct Session {
  std::vector<cudlaDevHandle> devices;  // live and destroyed: stale handles are part of the test
  std::vector<cudlaModule> modules;
  std::vector<uint64_t*> registered;
  std::vector<cudlaDevHandle> live;
  Bytes in;

  template <typename T>
  T pick(const std::vector<T>& from) {
    const uint8_t b = in.u8();
    if (b >= 240 || from.empty()) return reinterpret_cast<T>(uintptr_t(0x1000) * (b + 1));  // never valid
    if (b == 239) return nullptr;
    return from[b % from.size()];
  }
  // A pointer into one of the program's buffers, or NULL; `bytes` of room after it are guaranteed.
  uint8_t* pointer(size_t bytes) {
    const uint8_t b = in.u8();
    if (b == 255) return nullptr;
    const size_t offset = (size_t(in.u8()) * 64 + (b & 0x40 ? b & 31 : 0)) % (kBufferBytes - bytes);
    return buffer(b % kBuffers) + offset;
  }

  void step() {
    switch (in.u8() % 14) {
      case 0: {  // create: any device number, hybrid / standalone / unknown flags
        cudlaDevHandle h = nullptr;
        const uint64_t dev = in.u8() % 4;
        const uint32_t flags = in.u8() % 3 == 2 ? 7u : in.u8() % 2;
        if (cudlaCreateDevice(dev, in.u8() == 255 ? nullptr : &h, flags) == cudlaSuccess) {
          devices.push_back(h);
          live.push_back(h);
        }
        break;
      }
      case 1: {
        cudlaDevHandle h = pick(devices);
        if (cudlaDestroyDevice(h) == cudlaSuccess) std::erase(live, h);
        break;
      }
      case 2: {  // load the whole loadable, a truncated one, or none
        const auto& blob = loadable();
        const uint8_t cut = in.u8();
        const size_t size = cut < 200 ? blob.size() : blob.size() * (cut - 200) / 56;
        cudlaModule m = nullptr;
        const uint32_t flags = in.u8() % 4 == 3 ? 5u : 0u;
        if (cudlaModuleLoadFromMemory(pick(devices), cut == 199 ? nullptr : blob.data(), size,
                                      in.u8() == 255 ? nullptr : &m, flags) == cudlaSuccess)
          modules.push_back(m);
        break;
      }
      case 3:
        cudlaModuleUnload(pick(modules), in.u8() % 8 == 7 ? 1u : 0u);
        break;
      case 4: {  // register: aligned or not, sizes within the buffer, 0 included
        const size_t bytes = (size_t(in.u8()) << 8 | in.u8()) % kBufferBytes;
        uint8_t* p = pointer(bytes);
        uint64_t* dev = nullptr;
        const uint32_t flags = in.u8() % 4 == 3 ? 3u : 0u;
        if (cudlaMemRegister(pick(devices), reinterpret_cast<uint64_t*>(p), bytes,
                             in.u8() == 255 ? nullptr : &dev, flags) == cudlaSuccess)
          registered.push_back(dev);
        break;
      }
      case 5:
        cudlaMemUnregister(pick(devices),
                           in.u8() < 200 ? pick(registered) : reinterpret_cast<uint64_t*>(pointer(0)));
        break;
      case 6: {  // submit 0..3 tasks with 0..3 tensors each, on no stream or a queue
        const uint32_t n = in.u8() % 4;
        std::vector<cudlaTask> tasks(n);
        std::vector<std::vector<uint64_t*>> arrays;
        arrays.reserve(2 * n);
        for (auto& t : tasks) {
          std::memset(&t, 0, sizeof t);
          t.moduleHandle = pick(modules);
          t.numInputTensors = in.u8() % 4;
          t.numOutputTensors = in.u8() % 4;
          for (int side = 0; side < 2; ++side) {
            arrays.emplace_back();
            const uint32_t count = side ? t.numOutputTensors : t.numInputTensors;
            for (uint32_t k = 0; k < count; ++k)
              arrays.back().push_back(in.u8() < 200 ? pick(registered)
                                                    : reinterpret_cast<uint64_t*>(pointer(0)));
            uint64_t** array = in.u8() == 255 ? nullptr : arrays.back().data();
            if (side)
              t.outputTensor = array;
            else
              t.inputTensor = array;
          }
          if (in.u8() == 255) t.waitEvents = reinterpret_cast<cudlaWaitEvents*>(buffer(0));
        }
        static const uint32_t kFlags[] = {0, CUDLA_SUBMIT_NOOP, CUDLA_SUBMIT_SKIP_LOCK_ACQUIRE,
                                          CUDLA_SUBMIT_DIAGNOSTICS_TASK, 0x80};
        void* stream = in.u8() % 2 ? reinterpret_cast<void*>(uintptr_t(1)) : nullptr;  // queued on the CPU
        cudlaSubmitTask(pick(devices), n ? tasks.data() : nullptr, n, stream, kFlags[in.u8() % 5]);
        break;
      }
      case 7: {  // module attributes; descriptor arrays sized from the counts, as callers do
        cudlaModule m = pick(modules);
        cudlaModuleAttribute a;
        std::memset(&a, 0, sizeof a);
        const uint32_t which = in.u8() % 8;
        uint32_t count = 0;
        if (which == CUDLA_INPUT_TENSOR_DESCRIPTORS || which == CUDLA_OUTPUT_TENSOR_DESCRIPTORS) {
          cudlaModuleAttribute c;
          const auto count_of =
              which == CUDLA_INPUT_TENSOR_DESCRIPTORS ? CUDLA_NUM_INPUT_TENSORS : CUDLA_NUM_OUTPUT_TENSORS;
          if (cudlaModuleGetAttributes(m, count_of, &c) == cudlaSuccess) count = c.numInputTensors;
        }
        std::vector<cudlaModuleTensorDescriptor> descs(count);
        if (in.u8() != 255) a.inputTensorDesc = descs.data();
        fuzz_module_get_attributes(m, which, in.u8() == 255 ? nullptr : &a);
        break;
      }
      case 8: {
        cudlaDevAttribute a;
        fuzz_device_get_attribute(pick(devices), in.u8() % 4, in.u8() == 255 ? nullptr : &a);
        break;
      }
      case 9:
        cudlaGetLastError(pick(devices));
        break;
      case 10:
        cudlaSetTaskTimeoutInMs(pick(devices), in.u8() % 2 ? in.u8() % 4 : in.u32());
        break;
      case 11:
        dlakitCudlaSynchronize(pick(devices));
        break;
      case 12: {
        uint64_t v = 0;
        const bool null = in.u8() == 255;
        cudlaGetVersion(null ? nullptr : &v);
        cudlaDeviceGetCount(null ? nullptr : &v);
        (void)dlakitCudlaLastMessage();
        break;
      }
      case 13: {  // standalone-only functions: parameter checks, then UnsupportedOperation
        uint64_t* dev = nullptr;
        cudlaExternalMemoryHandleDesc md;
        cudlaExternalSemaphoreHandleDesc sd;
        std::memset(&md, 0, sizeof md);
        std::memset(&sd, 0, sizeof sd);
        const bool null = in.u8() == 255;
        cudlaImportExternalMemory(pick(devices), null ? nullptr : &md, &dev, 0);
        cudlaImportExternalSemaphore(pick(devices), null ? nullptr : &sd, &dev, 0);
        uint64_t attrs = 0;
        cudlaGetNvSciSyncAttributes(null ? nullptr : &attrs, in.u8() % 5);
        break;
      }
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Session s{{}, {}, {}, {}, Bytes(data, size)};
  for (int calls = 0; s.in.more() && calls < 64; ++calls) s.step();
  for (cudlaDevHandle h : s.live) cudlaDestroyDevice(h);  // the next input starts from nothing
  return 0;
}
