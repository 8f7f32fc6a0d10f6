// Real photos decode to the pixels Pillow gives (the decoder of the user's Python pipeline, with
// torchvision's convert("RGB")): baseline 4:2:0 and 4:4:4, progressive and grayscale JPEGs, and PNG.
// Pillow writes the variants and the reference pixels; the test needs /usr/bin/python3 with python3-pil
// (scripts/setup-deps.sh) and the fetched photos (make fetch).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "../common/test_paths.h"
#include "base/error.h"
#include "base/file.h"
#include "io/image.h"
#include "io/npy.h"

using namespace dlakit;
namespace fs = std::filesystem;

namespace {

// Writes the variants of `photo` into `dir` and, next to each, NAME.npy: Pillow's RGB pixels of it.
void write_variants_with_pillow(const fs::path& photo, const fs::path& dir) {
  const std::string script = R"(
import sys, numpy, PIL.Image
src, out = sys.argv[1], sys.argv[2]
photo = PIL.Image.open(src).convert("RGB").crop((0, 0, 333, 251))
photo.save(out + "/baseline420.jpg", quality=85)
photo.save(out + "/baseline444.jpg", quality=92, subsampling=0)
photo.save(out + "/progressive.jpg", quality=80, progressive=True)
photo.convert("L").save(out + "/gray.jpg", quality=90)
photo.save(out + "/photo.png")
photo.convert("CMYK").save(out + "/cmyk.jpg", quality=90)
for name in ("baseline420.jpg", "baseline444.jpg", "progressive.jpg", "gray.jpg", "photo.png"):
    pixels = numpy.asarray(PIL.Image.open(out + "/" + name).convert("RGB"))
    numpy.save(out + "/" + name + ".npy", pixels)
)";
  const fs::path py = dir / "variants.py";
  std::ofstream(py) << script;
  const std::string cmd = "/usr/bin/python3 " + py.string() + " " + photo.string() + " " + dir.string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

}  // namespace

TEST(ImageDecode, PhotosDecodeToPillowsPixels) {
  const fs::path photo = fs::path(test_paths::source_dir()) / ".cache" / "images" / "fruits.jpg";
  if (!fs::exists(photo)) GTEST_SKIP() << "run make fetch";
  const fs::path dir = fs::path(testing::TempDir()) / "dlakit_image_decode";
  fs::create_directories(dir);
  write_variants_with_pillow(photo, dir);
  for (const char* name :
       {"baseline420.jpg", "baseline444.jpg", "progressive.jpg", "gray.jpg", "photo.png"}) {
    SCOPED_TRACE(name);
    const Image img = load_image((dir / name).string());
    const Tensor want = read_npy((dir / (std::string(name) + ".npy")).string());
    ASSERT_EQ(want.shape(), (Shape{251, 333, 3}));
    ASSERT_EQ(img.width, 333);
    ASSERT_EQ(img.height, 251);
    ASSERT_EQ(img.pixels.size(), size_t(want.numel()));
    size_t differ = 0;
    for (size_t i = 0; i < img.pixels.size(); ++i) differ += img.pixels[i] != want.data<uint8_t>()[i];
    EXPECT_EQ(differ, 0u) << "of " << img.pixels.size() << " channel values";
  }
  fs::remove_all(dir);
}

// Pillow refuses a JPEG cut short ("image file is truncated"); libjpeg would fill the rest with grey.
TEST(ImageDecode, ATruncatedJpegIsRefused) {
  const fs::path photo = fs::path(test_paths::source_dir()) / ".cache" / "images" / "fruits.jpg";
  if (!fs::exists(photo)) GTEST_SKIP() << "run make fetch";
  const std::string whole = read_file(photo.string());
  EXPECT_NO_THROW(decode_image(whole, "fruits.jpg"));
  try {
    decode_image(whole.substr(0, whole.size() / 2), "half.jpg");
    FAIL() << "half a JPEG decoded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Premature end of JPEG file"), std::string::npos) << e.what();
  }
}

// A file that lacks only its end marker (FF D9) is refused, as Pillow refuses it ("image file is
// truncated"); so are a CMYK JPEG and a file of more scans than dlakit reads, each by name.
TEST(ImageDecode, MissingEndMarkerCmykAndTooManyScansAreRefused) {
  const fs::path photo = fs::path(test_paths::source_dir()) / ".cache" / "images" / "fruits.jpg";
  if (!fs::exists(photo)) GTEST_SKIP() << "run make fetch";
  const std::string whole = read_file(photo.string());
  ASSERT_EQ(whole.substr(whole.size() - 2), "\xff\xd9");
  try {
    decode_image(whole.substr(0, whole.size() - 2), "no_eoi.jpg");
    FAIL() << "a JPEG without its end marker decoded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Premature end of JPEG file"), std::string::npos) << e.what();
  }

  const fs::path dir = fs::path(testing::TempDir()) / "dlakit_image_cmyk";
  fs::create_directories(dir);
  write_variants_with_pillow(photo, dir);
  try {
    load_image((dir / "cmyk.jpg").string());
    FAIL() << "a CMYK JPEG decoded";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("a CMYK JPEG (4 components)"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);

  std::string scans = "\xff\xd8\xff";
  for (int i = 0; i < 501; ++i) scans += "\xff\xda";
  try {
    decode_image(scans, "scans.jpg");
    FAIL() << "501 scans decoded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a JPEG of 501 scans (dlakit reads 500 at most)"), std::string::npos)
        << e.what();
  }
}
