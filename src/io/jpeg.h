// JPEG decoding with libjpeg-turbo, the decoder Pillow (and so torchvision) uses: with its defaults (islow
// IDCT, fancy upsampling) a photo decodes to the same pixels as in the user's Python pipeline.
#pragma once
#include <string>

#include "io/image.h"

namespace dlakit {

// RGB, 3 channels. Corrupt, truncated, CMYK and oversized images (kMaxImagePixels) are refused with
// dlakit::Error before any pixel buffer is allocated for them.
Image decode_jpeg(const std::string& bytes, const std::string& origin);

}  // namespace dlakit
