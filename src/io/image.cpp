#include "io/image.h"

#include <stb/stb_image.h>
#include <stb/stb_image_write.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "base/error.h"
#include "base/file.h"
#include "io/jpeg.h"

namespace dlakit {

namespace {

enum class ImageFormat { kJpeg, kPng, kBmp, kOther };

ImageFormat format_of(const std::string& b) {
  auto starts = [&](const char* magic, size_t n) { return b.size() >= n && b.compare(0, n, magic, n) == 0; };
  if (starts("\xff\xd8\xff", 3)) return ImageFormat::kJpeg;
  if (starts("\x89PNG\r\n\x1a\n", 8)) return ImageFormat::kPng;
  if (starts("BM", 2)) return ImageFormat::kBmp;
  return ImageFormat::kOther;
}

// stb_image fills the rows a BMP lacks with zeros, so a 1 KB file claiming 262144 x 16 pixels decodes to a
// black image (slowly: found by fuzz_image as a timeout). An uncompressed BMP shorter than its header says
// is refused as truncated instead, with either header stb reads: the 40-byte (or longer) Windows header
// and the 12-byte OS/2 1.x one (16-bit sizes: a 27-byte file claiming 9065 x 5449 pixels took 22 s
// under ASan, found by a fuzz_image campaign on the GPU machine).
void check_bmp_size(const std::string& b, const std::string& origin) {
  auto u16 = [&](size_t i) {
    return i + 2 <= b.size() ? uint32_t(uint8_t(b[i])) | uint32_t(uint8_t(b[i + 1])) << 8 : 0u;
  };
  auto u32 = [&](size_t i) { return u16(i) | u16(i + 2) << 16; };
  // stb reads these header sizes and refuses the others; past the file's end it reads zeros, so a file
  // that ends inside its header is refused here (two such BMPs of 29 and 30 bytes claimed 89 M and 94 M
  // pixels).
  const uint32_t header = u32(14);
  if (header != 12 && header != 40 && header != 56 && header != 108 && header != 124) return;
  if (b.size() < 14 + size_t(header))
    fail(Status::kParseError, origin, ": truncated BMP: its ", header, "-byte header ends past the file's ",
         b.size(), " bytes");
  int64_t width = 0, height = 0, bpp = 0;
  if (header == 12) {
    width = u16(18), height = u16(20), bpp = u16(24);
  } else {
    width = int32_t(u32(18)), height = int32_t(u32(22)), bpp = u16(28);
    const uint32_t compression = u32(30);
    // stb reads the code as a signed int and refuses only 1, 2 (RLE) and 4 or more, so a negative code
    // passed as uncompressed, past this check (found by CI's fuzz_image smoke run: 56 bytes decoding to a
    // 262144 x 272 image). dlakit reads what stb decodes: uncompressed (0) and bitfields (3).
    if (compression != 0 && compression != 3)
      fail(Status::kUnsupported, "cannot read image '", origin, "': BMP compression code ", compression,
           " (dlakit reads uncompressed and bitfield BMPs)");
  }
  // stb refuses dimensions over 2^24 itself; below that the product stays far inside int64.
  if (std::abs(width) > (1 << 24) || std::abs(height) > (1 << 24)) return;
  const int64_t stride = (std::abs(width) * bpp + 31) / 32 * 4;
  const int64_t need = int64_t(u32(10)) + stride * std::abs(height);
  if (int64_t(b.size()) < need)
    fail(Status::kParseError, origin, ": truncated BMP: its header says ", width, "x", height, " pixels at ",
         bpp, " bits (", need, " bytes), the file has ", b.size());
}

// Two PNG chunk checks before stb reads the file, both found by fuzz_image:
// - a zero-length IDAT chunk is valid PNG but makes stb copy 0 bytes into a buffer it has not allocated yet
//   (memcpy from NULL, undefined behaviour): such chunks carry no data and are dropped;
// - stb allocates an IDAT chunk's stated length before it reads the data, so a 551-byte file whose chunk
//   says 1.19 GB took a second and a GB of memory to be refused: a chunk longer than the rest of the file
//   is refused here as truncated.
// - bytes that end the file before IEND without a whole chunk frame (length, type, CRC: 12 bytes) are a
//   truncated chunk, refused: a zero-length IDAT cut short there slipped past the first check (fuzz_image
//   on the GPU machine's 16 cores, 2026-12-04).
// Every other chunk is kept byte for byte; whatever follows IEND is left to stb, which stops there.
std::string checked_png_chunks(const std::string& b, const std::string& origin) {
  auto u32 = [&](size_t i) {
    return uint32_t(uint8_t(b[i])) << 24 | uint32_t(uint8_t(b[i + 1])) << 16 |
           uint32_t(uint8_t(b[i + 2])) << 8 | uint32_t(uint8_t(b[i + 3]));
  };
  std::string out = b.substr(0, 8);
  size_t at = 8;
  bool end = false;
  while (!end && at + 12 <= b.size()) {
    const size_t chunk = 12 + size_t(u32(at));
    if (chunk > b.size() - at)
      fail(Status::kParseError, origin, ": truncated PNG: chunk '", b.substr(at + 4, 4), "' at byte ", at,
           " says ", chunk - 12, " bytes of data, the file has ", b.size() - at - 12, " after its header");
    if (!(chunk == 12 && b.compare(at + 4, 4, "IDAT") == 0)) out.append(b, at, chunk);
    end = b.compare(at + 4, 4, "IEND") == 0;
    at += chunk;
  }
  if (!end && at < b.size())
    fail(Status::kParseError, origin, ": truncated PNG: the last ", b.size() - at, " byte(s), from byte ", at,
         ", are less than a chunk's 12-byte frame (length, type, CRC) and no IEND came before them");
  out.append(b, at, std::string::npos);
  return out;
}

}  // namespace

Image decode_image(const std::string& bytes, const std::string& origin) {
  if (bytes.size() > size_t(INT32_MAX)) fail(Status::kUnsupported, origin, ": image files over 2 GiB");
  // JPEG, PNG and BMP are what dlakit reads (the photos and renders users feed models); stb_image's other
  // decoders (GIF, PSD, PIC, PNM, HDR, TGA) are not exposed to untrusted files.
  const ImageFormat format = format_of(bytes);
  if (format == ImageFormat::kOther)
    fail(Status::kUnsupported, "cannot read image '", origin, "': not a JPEG, PNG or BMP file");
  // JPEG goes to libjpeg-turbo: stb_image's entropy decoder misbehaves on corrupt data in ways no check
  // of the markers can rule out (fuzz_image found a Huffman table overflow and an out-of-range shift in
  // its bit reader), and libjpeg-turbo gives the pixels Pillow gives.
  if (format == ImageFormat::kJpeg) return decode_jpeg(bytes, origin);
  if (format == ImageFormat::kBmp) check_bmp_size(bytes, origin);
  const std::string png = format == ImageFormat::kPng ? checked_png_chunks(bytes, origin) : std::string();
  const std::string& file = format == ImageFormat::kPng ? png : bytes;
  const auto* data = reinterpret_cast<const stbi_uc*>(file.data());
  const int len = int(file.size());
  int w = 0, h = 0, c = 0;
  // The header's size is checked before stb allocates anything for it.
  if (stbi_info_from_memory(data, len, &w, &h, &c) && int64_t(w) * int64_t(h) > kMaxImagePixels)
    fail(Status::kUnsupported, origin, ": image of ", w, "x", h, " pixels is over dlakit's limit of ",
         kMaxImagePixels, " pixels");
  unsigned char* pixels = stbi_load_from_memory(data, len, &w, &h, &c, 3);
  if (!pixels)
    fail(Status::kIoError, "cannot read image '", origin,
         "': ", stbi_failure_reason() ? stbi_failure_reason() : "unknown error");
  // stb accepts a BMP whose header says 0 rows; every user of an Image needs a pixel.
  if (w < 1 || h < 1) {
    stbi_image_free(pixels);
    fail(Status::kIoError, "cannot read image '", origin, "': it has ", w, "x", h, " pixels");
  }
  Image img{w, h, 3, std::vector<uint8_t>(pixels, pixels + size_t(w) * size_t(h) * 3)};
  stbi_image_free(pixels);
  return img;
}

Image load_image(const std::string& path) { return decode_image(read_file(path), path); }

Image resize_image(const Image& img, int width, int height) {
  if (width == img.width && height == img.height) return img;
  DLAKIT_CHECK(width > 0 && height > 0 && width <= 16384 && height <= 16384, Status::kInvalidArgument,
               "resize target ", width, "x", height, " must be within 1..16384");
  Image out{width, height, img.channels,
            std::vector<uint8_t>(size_t(width) * size_t(height) * size_t(img.channels))};
  // Bilinear with half-pixel centres (as OpenCV's INTER_LINEAR and PIL's BILINEAR for upsampling).
  const float sx = float(img.width) / float(width), sy = float(img.height) / float(height);
  for (int y = 0; y < height; ++y) {
    float fy = std::clamp((float(y) + 0.5f) * sy - 0.5f, 0.f, float(img.height - 1));
    int y0 = int(fy), y1 = std::min(y0 + 1, img.height - 1);
    float wy = fy - float(y0);
    for (int x = 0; x < width; ++x) {
      float fx = std::clamp((float(x) + 0.5f) * sx - 0.5f, 0.f, float(img.width - 1));
      int x0 = int(fx), x1 = std::min(x0 + 1, img.width - 1);
      float wx = fx - float(x0);
      for (int c = 0; c < img.channels; ++c) {
        auto at = [&](int yy, int xx) {
          return float(
              img.pixels[(size_t(yy) * size_t(img.width) + size_t(xx)) * size_t(img.channels) + size_t(c)]);
        };
        float v = (1 - wy) * ((1 - wx) * at(y0, x0) + wx * at(y0, x1)) +
                  wy * ((1 - wx) * at(y1, x0) + wx * at(y1, x1));
        out.pixels[(size_t(y) * size_t(width) + size_t(x)) * size_t(img.channels) + size_t(c)] =
            uint8_t(std::lround(std::clamp(v, 0.f, 255.f)));
      }
    }
  }
  return out;
}

void write_png(const std::string& path, const Image& img) {
  if (!stbi_write_png(path.c_str(), img.width, img.height, img.channels, img.pixels.data(),
                      img.width * img.channels))
    fail(Status::kIoError, "cannot write PNG '", path, "'");
}

Tensor image_to_tensor(const Image& src, const Preprocess& p) {
  DLAKIT_CHECK(p.mean.size() == 3 && p.std.size() == 3, Status::kInvalidArgument,
               "mean and std need 3 values each");
  const Image img = p.width > 0 && p.height > 0 ? resize_image(src, p.width, p.height) : src;
  const int64_t H = img.height, W = img.width;
  Tensor t(DType::kF32, p.nhwc ? Shape{1, H, W, 3} : Shape{1, 3, H, W});
  float* d = t.data<float>();
  for (int64_t y = 0; y < H; ++y)
    for (int64_t x = 0; x < W; ++x)
      for (int64_t c = 0; c < 3; ++c) {
        const int64_t sc = p.bgr ? 2 - c : c;  // model channel c takes image channel sc
        float v = float(img.pixels[size_t((y * W + x) * 3 + sc)]) * p.scale;
        v = (v - p.mean[size_t(c)]) / p.std[size_t(c)];
        d[p.nhwc ? (y * W + x) * 3 + c : (c * H + y) * W + x] = v;
      }
  return t;
}

Image overlay_heatmap(const Image& img, const std::vector<float>& map, int map_w, int map_h, float alpha) {
  Image out = img;
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x) {
      const int mx = std::min(map_w - 1, int(int64_t(x) * map_w / img.width));
      const int my = std::min(map_h - 1, int(int64_t(y) * map_h / img.height));
      const float v = std::clamp(map[size_t(my) * size_t(map_w) + size_t(mx)], 0.f, 1.f);
      // a "hot" colour ramp: black -> red -> yellow, blended in proportion to the probability
      const float r = std::min(1.f, v * 2.f) * 255.f, g = std::max(0.f, v * 2.f - 1.f) * 255.f;
      const float a = alpha * v;
      uint8_t* px = &out.pixels[(size_t(y) * size_t(img.width) + size_t(x)) * 3];
      px[0] = uint8_t(std::lround(px[0] * (1 - a) + r * a));
      px[1] = uint8_t(std::lround(px[1] * (1 - a) + g * a));
      px[2] = uint8_t(std::lround(px[2] * (1 - a)));
    }
  return out;
}

}  // namespace dlakit
