// Shared flag parsing and the calibration/comparison data loader.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "cli.h"
#include "io/image.h"
#include "io/npy.h"

namespace dlakit::cli {

std::vector<float> floats(const std::string& s, const char* what) {
  std::vector<float> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    float x = std::strtof(item.c_str(), &end);
    if (item.empty() || *end)
      fail(Status::kInvalidArgument, what, " '", s, "': '", item, "' is not a number");
    v.push_back(x);
  }
  if (v.size() != 3) fail(Status::kInvalidArgument, what, " '", s, "' needs 3 comma-separated values");
  return v;
}

std::vector<float> std_devs(const std::string& s) {
  const std::vector<float> v = floats(s, "--std");
  for (float x : v)
    if (!(x > 0.f))
      fail(Status::kInvalidArgument, "--std '", s, "': the pixels are divided by it; each value must be > 0");
  return v;
}

std::pair<int, int> parse_size(const std::string& s) {
  int w = 0, h = 0;
  char x = 0;
  std::stringstream ss(s);
  if (!(ss >> w >> x >> h) || x != 'x' || w < 1 || h < 1 || w > 16384 || h > 16384)
    fail(Status::kInvalidArgument, "--size '", s, "' should be WIDTHxHEIGHT, e.g. 640x640");
  return {w, h};
}

void DataFlags::add(CLI::App& app, bool required) {
  app.add_option("--data", data, "Calibration/evaluation data: image files, folders of images, .npy files")
      ->required(required);
  app.add_option("--size", size, "Resize images to WIDTHxHEIGHT (default: the model's input size)");
  app.add_option("--mean", mean, "Per-channel mean in 0..1 units, e.g. 0.485,0.456,0.406");
  app.add_option("--std", std, "Per-channel std in 0..1 units, e.g. 0.229,0.224,0.225");
  app.add_option("--scale", scale, "Pixel scale before mean/std (default 1/255)");
  app.add_flag("--bgr", bgr, "The model takes BGR channel order (default RGB)");
  app.add_flag("--nhwc", nhwc, "The model takes NHWC layout (default NCHW)");
  app.add_option("--max-samples", max_samples, "Use at most N samples (default: all)")
      ->check(CLI::PositiveNumber);
}

std::string DataFlags::as_flags() const {
  std::string s;
  for (const std::string& d : data) s += " --data " + d;
  if (!size.empty()) s += " --size " + size;
  if (mean != "0,0,0") s += " --mean " + mean;
  if (std != "1,1,1") s += " --std " + std;
  if (scale != 1.0f / 255.0f) s += " --scale " + std::to_string(scale);
  if (bgr) s += " --bgr";
  if (nhwc) s += " --nhwc";
  if (max_samples > 0) s += " --max-samples " + std::to_string(max_samples);
  return s.empty() ? s : s.substr(1);
}

namespace {
bool is_image(const std::filesystem::path& p) {
  std::string e = p.extension().string();
  std::transform(e.begin(), e.end(), e.begin(), ::tolower);
  return e == ".jpg" || e == ".jpeg" || e == ".png" || e == ".bmp";
}
}  // namespace

std::vector<TensorMap> DataFlags::load(const Graph& g, std::vector<std::string>* sources) const {
  namespace fs = std::filesystem;
  if (g.inputs.empty()) fail(Status::kInvalidArgument, "the model has no runtime inputs to feed");
  const Value& in = g.value(g.inputs[0]);
  std::vector<fs::path> files;
  for (const std::string& d : data) {
    if (fs::is_directory(d)) {
      std::vector<fs::path> found;
      for (auto& e : fs::directory_iterator(d))
        if (e.is_regular_file() && (is_image(e.path()) || e.path().extension() == ".npy"))
          found.push_back(e.path());
      std::sort(found.begin(), found.end());  // deterministic order
      if (found.empty())
        fail(Status::kInvalidArgument, "--data '", d, "' holds no .jpg/.png/.bmp/.npy files");
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(d)) {
      files.emplace_back(d);
    } else {
      fail(Status::kInvalidArgument, "--data '", d, "' is neither a file nor a folder");
    }
  }
  Preprocess pre;
  pre.mean = floats(mean, "--mean");
  pre.std = std_devs(std);
  pre.scale = scale;
  pre.bgr = bgr;
  pre.nhwc = nhwc;
  const Shape& s = in.type.shape;
  if (!size.empty()) {
    std::tie(pre.width, pre.height) = parse_size(size);
  } else if (s.size() == 4) {
    pre.height = int(s[nhwc ? 1 : 2]);
    pre.width = int(s[nhwc ? 2 : 3]);
  }
  std::vector<TensorMap> samples;
  auto full = [&] { return max_samples > 0 && int(samples.size()) >= max_samples; };
  for (const fs::path& f : files) {
    if (full()) break;
    if (f.extension() == ".npy") {
      Tensor t = read_npy(f.string());
      if (t.type() == in.type) {
        samples.push_back({{in.name, t}});
        if (sources) sources->push_back(f.string());
        continue;
      }
      // [B, rest...] with the model's [1, rest...]: B samples.
      Shape one = t.shape();
      if (!one.empty()) one[0] = 1;
      if (t.dtype() != in.type.dtype || one != s || s.empty() || s[0] != 1)
        fail(Status::kInvalidArgument, f.string(), " is ", type_str(t.type()), " but input '", in.name,
             "' is ", type_str(in.type), " (a leading batch dimension may differ)");
      if (t.dim(0) == 0)
        fail(Status::kInvalidArgument, f.string(), " is ", type_str(t.type()),
             ": its batch dimension is 0, so it holds no samples");
      const size_t per = t.nbytes() / size_t(t.dim(0));
      for (int64_t b = 0; b < t.dim(0) && !full(); ++b) {
        Tensor x = Tensor::uninitialized(t.dtype(), one);
        std::memcpy(x.raw(), static_cast<const uint8_t*>(t.raw()) + size_t(b) * per, per);
        samples.push_back({{in.name, x}});
        if (sources) sources->push_back(f.string());
      }
      continue;
    }
    Tensor x = image_to_tensor(load_image(f.string()), pre);
    if (!(x.type() == in.type))
      fail(Status::kInvalidArgument, f.string(), " becomes ", type_str(x.type()), " but input '", in.name,
           "' is ", type_str(in.type), "; set --size (and --nhwc) to match");
    samples.push_back({{in.name, x}});
    if (sources) sources->push_back(f.string());
  }
  if (samples.empty()) fail(Status::kInvalidArgument, "--data gave no samples");
  return samples;
}

}  // namespace dlakit::cli

#include <unistd.h>

#include <cstdio>

namespace dlakit::cli {

std::function<void(int, int)> progress_bar(const std::string& what) {
  if (!isatty(2)) return {};
  return [what](int i, int n) {
    const int width = 30, done = n > 0 ? i * width / n : width;
    std::fprintf(stderr, "\r  %s [%s%s] %d/%d", what.c_str(), std::string(size_t(done), '#').c_str(),
                 std::string(size_t(width - done), '.').c_str(), i, n);
    if (i == n) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  };
}

}  // namespace dlakit::cli
