#include "io/jpeg.h"

// clang-format off
#include <cstdio>  // jpeglib.h uses FILE without including it
#include <jpeglib.h>
#include <jerror.h>  // the message codes
// clang-format on

#include <csetjmp>

#include "base/error.h"

namespace dlakit {

namespace {

// libjpeg reports an error by calling error_exit, which must not return: it longjmps back into the step
// that called libjpeg. Everything the jump can skip is plain data, and the steps below hold no object
// with a destructor.
struct Decoder {
  jpeg_decompress_struct info;
  jpeg_error_mgr errors;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool created;
};

[[noreturn]] void jump_out(j_common_ptr c) {
  auto* d = static_cast<Decoder*>(c->client_data);
  c->err->format_message(c, d->message);
  std::longjmp(d->jump, 1);
}

// Warnings about damaged data stay quiet (libjpeg repairs them as Pillow does), except data that ends
// early: libjpeg would fill the missing rows with grey, and Pillow refuses such a file by default (even one
// that lacks only its end marker: "image file is truncated").
void on_message(j_common_ptr c, int level) {
  if (level == -1 && c->err->msg_code == JWRN_JPEG_EOF) jump_out(c);
}

// Each step returns false, with d->message set, when libjpeg failed.
bool create(Decoder* d) {
  d->info.err = jpeg_std_error(&d->errors);
  d->errors.error_exit = jump_out;
  d->errors.emit_message = on_message;
  d->info.client_data = d;  // kept by jpeg_create_decompress
  if (setjmp(d->jump)) return false;
  d->created = true;  // destroying a half-created decompressor is safe, and frees what it has
  jpeg_create_decompress(&d->info);
  return true;
}

bool read_header(Decoder* d, const std::string* bytes) {
  if (setjmp(d->jump)) return false;
  jpeg_mem_src(&d->info, reinterpret_cast<const unsigned char*>(bytes->data()), bytes->size());
  jpeg_read_header(&d->info, TRUE);
  return true;
}

bool start_rgb(Decoder* d) {
  if (setjmp(d->jump)) return false;
  d->info.out_color_space = JCS_RGB;
  jpeg_calc_output_dimensions(&d->info);
  return true;
}

bool read_rows(Decoder* d, uint8_t* out) {
  if (setjmp(d->jump)) return false;
  jpeg_start_decompress(&d->info);
  const size_t row_bytes = size_t(d->info.output_width) * 3;
  while (d->info.output_scanline < d->info.output_height) {
    JSAMPROW row = out + size_t(d->info.output_scanline) * row_bytes;
    jpeg_read_scanlines(&d->info, &row, 1);
  }
  jpeg_finish_decompress(&d->info);
  return true;
}

// libjpeg decodes each scan of a progressive JPEG over the whole image, and a small file can hold
// thousands of scans of a few bytes each (minutes of work). Encoders write a few dozen at most; more than
// kMaxScans is refused before decoding. Each scan begins with an SOS marker (FF DA), a pair that
// entropy-coded data never contains, so counting the pairs bounds the scans from above.
constexpr int kMaxScans = 500;

int count_scan_markers(const std::string& b) {
  int n = 0;
  for (size_t i = b.find("\xff\xda"); i != std::string::npos; i = b.find("\xff\xda", i + 2)) ++n;
  return n;
}

}  // namespace

Image decode_jpeg(const std::string& bytes, const std::string& origin) {
  if (const int scans = count_scan_markers(bytes); scans > kMaxScans)
    fail(Status::kUnsupported, "cannot read image '", origin, "': a JPEG of ", scans, " scans (dlakit reads ",
         kMaxScans, " at most)");
  Decoder d{};
  struct Release {
    Decoder& d;
    ~Release() {
      if (d.created) jpeg_destroy_decompress(&d.info);
    }
  } release{d};
  auto failed = [&] { fail(Status::kIoError, "cannot read image '", origin, "': ", d.message); };
  if (!create(&d) || !read_header(&d, &bytes)) failed();
  const J_COLOR_SPACE space = d.info.jpeg_color_space;
  if (space != JCS_GRAYSCALE && space != JCS_YCbCr && space != JCS_RGB)
    fail(Status::kUnsupported, "cannot read image '", origin, "': a ",
         space == JCS_CMYK || space == JCS_YCCK ? "CMYK" : "multi-channel", " JPEG (", d.info.num_components,
         " components); dlakit reads grayscale and RGB JPEGs: convert it to RGB");
  const int64_t width = d.info.image_width, height = d.info.image_height;
  if (width * height > kMaxImagePixels)
    fail(Status::kUnsupported, origin, ": image of ", width, "x", height,
         " pixels is over dlakit's limit of ", kMaxImagePixels, " pixels");
  if (!start_rgb(&d)) failed();
  Image img{int(d.info.output_width), int(d.info.output_height), 3, {}};
  img.pixels.resize(size_t(img.width) * size_t(img.height) * 3);
  if (!read_rows(&d, img.pixels.data())) failed();
  return img;
}

}  // namespace dlakit
