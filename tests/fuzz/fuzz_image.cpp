// The image reader (JPEG through libjpeg-turbo, PNG and BMP through stb_image) must decode or reject any
// byte string with dlakit::Error, never crash, and refuse huge headers before allocating for them.
// stb_image is compiled into this target (and, by symbol interposition, used by dlakit's reader) so that
// the fuzzer sees its coverage; the release build links Debian's libstb, built from the same header.
// libjpeg-turbo is Debian's shared library, not instrumented: the fuzzer drives it blind, through dlakit's
// checks around it.
#include <cstddef>
#include <cstdint>
#include <string>

#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>

#include "base/error.h"
#include "io/image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const dlakit::Image img =
        dlakit::decode_image(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    if (img.pixels.size() != size_t(img.width) * size_t(img.height) * 3) __builtin_trap();
    dlakit::Preprocess p;
    p.width = 8, p.height = 8;
    (void)dlakit::image_to_tensor(dlakit::resize_image(img, 8, 8), p);
  } catch (const dlakit::Error&) {
  }
  return 0;
}
