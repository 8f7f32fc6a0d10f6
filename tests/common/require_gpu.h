// GPU tests skip where no GPU answers (CI), and fail instead where one is expected: DLAKIT_REQUIRE_GPU=1
// (set by the device scripts) turns every skip into a failure, so a broken CUDA build cannot pass there.
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "gpu/gpu.h"

// GTEST_SKIP returns from the function it is in, so this is a macro.
#define REQUIRE_GPU()                                                                                        \
  do {                                                                                                       \
    std::string why_;                                                                                        \
    if (!::dlakit::gpu::available(&why_)) {                                                                  \
      const char* required_ = std::getenv("DLAKIT_REQUIRE_GPU");                                             \
      if (required_ && std::string(required_) == "1") FAIL() << "DLAKIT_REQUIRE_GPU=1 but no GPU: " << why_; \
      GTEST_SKIP() << "no GPU: " << why_;                                                                    \
    }                                                                                                        \
  } while (0)

// Tests that register pageable host memory, which the C ABI takes only where no GPU answers (with a GPU,
// hybrid mode takes CUDA memory only, as cuDLA does; tests/gpu covers that).
#define HOST_MEMORY_SEMANTICS_ONLY()                                                                  \
  do {                                                                                                \
    if (dlakit::gpu::available()) GTEST_SKIP() << "a GPU answers: pageable buffers are refused here"; \
  } while (0)
