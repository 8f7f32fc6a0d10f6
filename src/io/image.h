// Image loading (JPEG via libjpeg-turbo, PNG and BMP via stb_image) and the preprocessing users know from
// Polygraphy and torchvision: resize, scale, mean/std, RGB/BGR order, NCHW/NHWC layout. Also PNG writing and
// heat-map overlays for map-shaped outputs (detection/segmentation probabilities).
#pragma once
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace dlakit {

struct Image {
  int width = 0, height = 0, channels = 3;  // interleaved 8-bit, RGB(A)
  std::vector<uint8_t> pixels;
};

Image load_image(const std::string& path);  // always 3 channels (RGB)
// The same from a file's bytes; `origin` names it in errors. JPEG, PNG and BMP only; images over
// kMaxImagePixels are refused before decoding.
Image decode_image(const std::string& bytes, const std::string& origin);
inline constexpr int64_t kMaxImagePixels = int64_t(1) << 27;  // 134 M pixels (e.g. 16384 x 8192)
Image resize_image(const Image& img, int width, int height);  // bilinear
void write_png(const std::string& path, const Image& img);

struct Preprocess {
  int width = 0, height = 0;         // 0: keep the image's size
  std::vector<float> mean{0, 0, 0};  // in 0..1 units, applied after scale
  std::vector<float> std{1, 1, 1};
  float scale = 1.0f / 255.0f;  // pixel * scale, then (x - mean) / std
  bool bgr = false;             // channel order of the model
  bool nhwc = false;            // layout of the model's input
};

// Image -> float32 tensor [1,3,H,W] (or [1,H,W,3]).
Tensor image_to_tensor(const Image& img, const Preprocess& p);

// Blends a [H', W'] probability map (values 0..1) over the image as a heat map, resized to the image.
Image overlay_heatmap(const Image& img, const std::vector<float>& map, int map_w, int map_h,
                      float alpha = 0.55f);

}  // namespace dlakit
