// Image files that once crashed or hung the reader (found by fuzz_image) are refused, or read correctly,
// while real images decode as before.
#include <gtest/gtest.h>

#include <cstdio>
#include <optional>
#include <random>
#include <string>

#include "../common/test_paths.h"
#include "base/error.h"
#include "base/file.h"
#include "io/image.h"

using namespace dlakit;

namespace {

// An RGB image of random pixels with an odd size, written through write_png and read back as bytes.
std::string random_png(Image& img) {
  img = Image{7, 5, 3, std::vector<uint8_t>(7 * 5 * 3)};
  std::mt19937 gen(3);
  for (auto& p : img.pixels) p = uint8_t(gen() % 251 + 1);
  const std::string path = testing::TempDir() + "/dlakit_image_hardening.png";
  write_png(path, img);
  std::string bytes = read_file(path);
  std::remove(path.c_str());
  return bytes;
}

// How decode_image refuses a recorded fuzz input (tests/fuzz/regressions/fuzz_image); no status, and the
// size, when it decodes.
struct Refusal {
  std::optional<Status> status;
  std::string message;
};
Refusal refusal_of(const std::string& regression) {
  const std::string bytes =
      read_file(std::string(test_paths::source_dir()) + "/tests/fuzz/regressions/fuzz_image/" + regression);
  try {
    const Image img = decode_image(bytes, regression);
    return {std::nullopt, "decoded to " + std::to_string(img.width) + "x" + std::to_string(img.height)};
  } catch (const Error& e) {
    return {e.status(), e.what()};
  }
}

// A recorded fuzz input refused as a parse error whose message holds `text`.
void expect_parse_error(const std::string& regression, const std::string& text) {
  const Refusal r = refusal_of(regression);
  EXPECT_EQ(r.status, Status::kParseError) << regression << ": " << r.message;
  EXPECT_NE(r.message.find(text), std::string::npos) << r.message;
}

}  // namespace

TEST(ImageHardening, ZeroLengthIdatChunksAreSkippedAndThePixelsKept) {
  Image img;
  std::string png = random_png(img);
  const size_t idat = png.find("IDAT");
  ASSERT_NE(idat, std::string::npos);
  // A zero-length IDAT (length 0, type, CRC of "IDAT") before the real one: valid PNG.
  png.insert(idat - 4, std::string("\0\0\0\0IDAT\x35\xaf\x06\x1e", 12));
  const Image back = decode_image(png, "empty_idat.png");
  EXPECT_EQ(back.width, img.width);
  EXPECT_EQ(back.height, img.height);
  EXPECT_EQ(back.pixels, img.pixels);
}

TEST(ImageHardening, PngChunkLongerThanTheFileIsTruncatedNotAllocated) {
  Image img;
  std::string png = random_png(img);
  const size_t idat = png.find("IDAT");
  ASSERT_NE(idat, std::string::npos);
  // The IDAT chunk's length raised to 0x470d0a1a (1.19 GB, what fuzz_image found) in a file of a few
  // hundred bytes: stb would allocate that much before noticing the file ends.
  png.replace(idat - 4, 4, std::string("\x47\x0d\x0a\x1a", 4));
  try {
    decode_image(png, "long_idat.png");
    FAIL() << "a PNG with a chunk past its end was decoded";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kParseError);
    EXPECT_NE(std::string(e.what()).find("truncated PNG: chunk 'IDAT'"), std::string::npos) << e.what();
  }
}

TEST(ImageHardening, PngEndingInLessThanAChunkFrameBeforeIendIsTruncated) {
  // 44 bytes: the signature, IHDR, then "0000 0000 IDAT x\x9c\x89", an empty IDAT whose CRC the file lacks.
  expect_parse_error("png_zero_length_idat_in_an_unfinished_last_chunk.png",
                     "truncated PNG: the last 11 byte(s), from byte 33");
}

TEST(ImageHardening, BytesAfterIendAreNotReadAsChunks) {
  Image img;
  std::string png = random_png(img);
  // A whole chunk header and CRC (12 bytes, so the chunk scanner would read it) claiming 4 GB.
  png += std::string("\xff\xff\xff\xf0junkCRC!", 12);
  const Image back = decode_image(png, "trailing.png");
  EXPECT_EQ(back.pixels, img.pixels);
}

TEST(ImageHardening, BmpShorterThanItsHeaderSaysIsTruncated) {
  // 40-byte info header claiming 262144 x 16 pixels at 24 bits, in a file of 1 KB.
  std::string bmp(1024, '\0');
  auto put32 = [&](size_t at, uint32_t v) {
    for (int k = 0; k < 4; ++k) bmp[at + size_t(k)] = char(v >> (8 * k));
  };
  bmp[0] = 'B', bmp[1] = 'M';
  put32(2, 1024), put32(10, 54), put32(14, 40), put32(18, 262144), put32(22, 16);
  put32(26, 1 | 24 << 16), put32(30, 0);
  try {
    decode_image(bmp, "claims_more.bmp");
    FAIL() << "a truncated BMP was decoded";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kParseError);
    EXPECT_NE(std::string(e.what()).find("truncated BMP"), std::string::npos) << e.what();
  }
}

TEST(ImageHardening, BmpWithAnOs2HeaderShorterThanItSaysIsTruncated) {
  // The 12-byte OS/2 1.x header (16-bit sizes): 9065 x 5449 pixels at 1 bit in 27 bytes.
  expect_parse_error("bmp_os2_header_claims_9065x5449_pixels_in_27_bytes.bmp",
                     "truncated BMP: its header says 9065x5449 pixels at 1 bits");
}

TEST(ImageHardening, BmpEndingInsideItsHeaderIsTruncated) {
  // stb would read the missing header bytes as zeros and decode 89 M and 94 M pixels from nothing.
  expect_parse_error("bmp_ends_inside_its_40_byte_header_claiming_47x1900712_pixels.bmp",
                     "truncated BMP: its 40-byte header ends past the file's 29 bytes");
  expect_parse_error("bmp_ends_inside_its_124_byte_header_claiming_12x7864421_pixels.bmp",
                     "truncated BMP: its 124-byte header ends past the file's 30 bytes");
}

// A BMP whose header says 0 rows (found by fuzz_image): stb decodes it to an image with no pixels, which
// resize_image then indexed at row -1. decode_image refuses it.
TEST(ImageHardening, BmpWithNoRowsIsRefused) {
  const Refusal r = refusal_of("bmp_zero_rows_decoded_as_empty_image.bmp");
  EXPECT_EQ(r.status, Status::kIoError) << r.message;
  EXPECT_NE(r.message.find("pixels"), std::string::npos) << r.message;
}

// stb takes a negative compression code for an uncompressed BMP, so 56 bytes decoded to a 262144 x 272
// image of zeros (12 s under ASan; a CI timeout). Codes other than 0 and 3 are refused first.
TEST(ImageHardening, BmpWithACompressionCodeStbDoesNotCheckIsRefused) {
  const Refusal r = refusal_of("bmp_negative_compression_code_262144x272_in_56_bytes.bmp");
  EXPECT_EQ(r.status, Status::kUnsupported) << r.message;
  EXPECT_NE(r.message.find("BMP compression code 4278220032"), std::string::npos) << r.message;
}
