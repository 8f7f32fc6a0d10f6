// Accuracy of the emulated DLA (INT8 with every calibrator, FP16) against FP32, on real models and real
// or rendered data that the setup scripts produce (nothing hand-picked):
//   PP-OCRv4 rec on 240 rendered lines (English + Chinese): INT8 CER at most 1.0 point above FP32's
//   ppocr cls on the same lines upright and rotated 180 degrees: INT8 agrees with FP32 on >= 99%
//   PP-OCRv4 det on opencv-doc scene-text photos and rendered pages: F1 of the p > 0.3 masks >= 0.95
//   FP16: cosine >= 0.9999 against FP32 on every output of every model in .cache/models
// Calibration uses separate data (48 other rendered lines; other pages and non-text photos).
// Results: $BUILD/accuracy.md (committed as docs/accuracy.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "engine/engine.h"
#include "io/image.h"
#include "onnx/importer.h"
#include "passes/passes.h"
#include "placement/placement.h"
#include "quant/calibrate.h"
#include "quant/compare.h"
#include "quant/numerics.h"

namespace fs = std::filesystem;
using namespace dlakit;
using namespace dlakit::quant;

namespace {

const fs::path kSource = DLAKIT_SOURCE_DIR;
const fs::path kModels = kSource / ".cache" / "models";
const fs::path kImages = kSource / ".cache" / "images";
// `dlakit compare --fix --fix-target 0.99`: the accuracy target dlakit's choice searches for.
constexpr double kFixTarget = 0.99;
const std::vector<CalibAlgo> kAlgos = {CalibAlgo::kEntropy2, CalibAlgo::kMinMax, CalibAlgo::kPercentile,
                                       CalibAlgo::kMse};

std::ostringstream g_md;  // the report, section by section

// The model as `dlakit build` sees it: imported, optimised, placed (INT8 or FP16 default precision).
struct Model {
  Graph g;
  Placement int8, fp16;
};
Model load(const std::string& name, const std::string& shapes) {
  ImportOptions o;
  o.input_shapes = parse_input_shapes(shapes);
  Model m{import_onnx_file((kModels / (name + ".onnx")).string(), o), {}, {}};
  run_passes(m.g);
  PlacementOptions p;
  p.precision = dla::Precision::kINT8;
  m.int8 = place(m.g, p);
  p.precision = dla::Precision::kFP16;
  m.fp16 = place(m.g, p);
  return m;
}

// The FP32 reference, the FP16 emulation and INT8 with each calibrator, over one set of samples.
struct Runs {
  std::vector<TensorMap> fp32, fp16;
  std::vector<TensorMap> fp32_inner, fp16_inner;  // the `inner` tensors run_all was asked to keep
  std::map<CalibAlgo, std::vector<TensorMap>> int8;
  std::map<CalibAlgo, int> int8_layers;
  int fp16_layers = 0;
  // Decided on the calibration data only (never on the evaluation data): the calibrator whose INT8
  // output is closest to FP32 there, then (1) `dlakit compare --fix` (flagged layers to FP16) and
  // (2) `--fix --fix-target 0.99` (the greedy mixed-precision search, at most 6 rounds).
  CalibAlgo best_algo = CalibAlgo::kEntropy2;
  struct Config {
    std::string label;
    int int8_layers = 0, dla_layers = 0;
    std::vector<TensorMap> outs;
  };
  std::vector<Config> fixed;
};

// Keeps the value named `inner` (e.g. the logits before a softmax) of every evaluation sample.
void keep_inner(ReferenceEngine& e, const Graph& g, const std::string& inner, std::vector<TensorMap>& into) {
  if (inner.empty()) return;
  const auto id = g.find_value(inner);
  ASSERT_TRUE(id.has_value()) << inner;
  e.set_observer([&into, id, inner](const Node& n, const std::vector<Tensor>& outs) {
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (n.outputs[k] == *id) into.push_back({{inner, outs[k].clone()}});
  });
}

Runs run_all(const Model& m, const std::vector<TensorMap>& calib, const std::vector<TensorMap>& eval,
             const std::string& inner = "") {
  Runs r;
  HistogramCollector hc(m.g);
  for (const auto& s : calib) hc.add(s);
  ReferenceEngine ref(m.g);
  const NumericsPlan p16 = plan_numerics(m.g, m.fp16, nullptr);
  r.fp16_layers = p16.fp16_nodes;
  EmulatedEngine e16(m.g, p16);
  keep_inner(ref, m.g, inner, r.fp32_inner);
  keep_inner(e16.engine(), m.g, inner, r.fp16_inner);
  r.fp32 = ref.run_batch(eval);  // several samples at a time (one after another while keep_inner watches)
  r.fp16 = e16.engine().run_batch(eval);
  std::map<CalibAlgo, ScaleTable> tables;
  double best = -2;
  for (CalibAlgo a : kAlgos) {
    CalibOptions co;
    co.algo = a;
    const ScaleTable t = tables[a] = hc.compute(co);
    const NumericsPlan p8 = plan_numerics(m.g, m.int8, &t);
    r.int8_layers[a] = p8.int8_nodes;
    EmulatedEngine e8(m.g, p8);
    r.int8[a] = e8.engine().run_batch(eval);
    const double c = mean_output_cosine(compare_numerics(m.g, p8, calib));
    if (c > best) {
      best = c;
      r.best_algo = a;
    }
  }
  PlacementOptions po;
  po.precision = dla::Precision::kINT8;
  for (const double target : {0.0, kFixTarget}) {
    const AutoFix fix = auto_fix(m.g, po, &tables[r.best_algo], {}, calib, target > 0 ? 6 : 3, {}, target);
    Runs::Config c;
    const std::string moved = fix.applied.layer_precisions;
    const size_t n = moved.empty() ? 0 : size_t(std::count(moved.begin(), moved.end(), ',') + 1);
    c.label = std::string("INT8, ") + calib_algo_name(r.best_algo) + " + compare --fix" +
              (target > 0 ? " --fix-target 0.99" : "") + " (" + std::to_string(fix.rounds) + " round(s), " +
              std::to_string(fix.undone.size()) + " undone, " + std::to_string(n) + " layer(s) to FP16)";
    c.int8_layers = fix.plan.int8_nodes;
    c.dla_layers = fix.plan.int8_nodes + fix.plan.fp16_nodes;
    if (fix.applied.empty()) {  // nothing moved: the calibrator's own runs
      c.outs = r.int8.at(r.best_algo);
    } else {
      EmulatedEngine er(m.g, fix.plan);
      c.outs = er.engine().run_batch(eval);
    }
    r.fixed.push_back(std::move(c));
  }
  return r;
}

// Cosine over every element of every sample of one output.
double cosine(const std::vector<TensorMap>& a, const std::vector<TensorMap>& b, const std::string& out) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t s = 0; s < a.size(); ++s) {
    const Tensor &x = a[s].at(out), &y = b[s].at(out);
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double p = x.at_f64(i), q = y.at_f64(i);
      ab += p * q;
      aa += p * p;
      bb += q * q;
    }
  }
  return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : (aa == bb ? 1.0 : 0.0);
}

Image rotate180(const Image& img) {
  Image r = img;
  const size_t px = size_t(img.width) * size_t(img.height);
  for (size_t i = 0; i < px; ++i)
    for (int c = 0; c < img.channels; ++c)
      r.pixels[i * size_t(img.channels) + size_t(c)] =
          img.pixels[(px - 1 - i) * size_t(img.channels) + size_t(c)];
  return r;
}

// PaddleOCR's rec/cls input: height 48, width by aspect ratio (at most max_w), (x/255 - 0.5) / 0.5, zero
// padding on the right to max_w.
Tensor ocr_line_input(const Image& img, int max_w) {
  const int w = std::min(max_w, int(std::ceil(48.0 * img.width / img.height)));
  Preprocess p;
  p.width = w;
  p.height = 48;
  p.mean = {0.5f, 0.5f, 0.5f};
  p.std = {0.5f, 0.5f, 0.5f};
  Tensor t = image_to_tensor(img, p);
  Tensor out(DType::kF32, {1, 3, 48, max_w});
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 48; ++y)
      std::copy_n(t.data<float>() + (c * 48 + y) * w, w, out.data<float>() + (c * 48 + y) * max_w);
  return out;
}

struct Line {
  Image img;
  std::u32string text;
};
std::u32string utf32(const std::string& s) {
  std::u32string r;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const int n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    char32_t cp = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
    for (int k = 1; k < n && i + size_t(k) < s.size(); ++k) cp = (cp << 6) | (s[i + size_t(k)] & 0x3F);
    r.push_back(cp);
    i += size_t(n);
  }
  return r;
}
std::vector<Line> read_lines(const fs::path& dir) {
  std::vector<Line> v;
  std::ifstream f(dir / "labels.tsv");
  std::string row;
  while (std::getline(f, row)) {
    const size_t tab = row.find('\t');
    v.push_back({load_image((dir / row.substr(0, tab)).string()), utf32(row.substr(tab + 1))});
  }
  return v;
}

// CTC greedy decoding with PaddleOCR's dictionary: blank, ppocr_keys_v1, space.
std::vector<std::u32string> read_dict() {
  std::vector<std::u32string> d{U""};
  std::ifstream f(kModels / "ppocr_keys_v1.txt");
  std::string k;
  while (std::getline(f, k)) d.push_back(utf32(k));
  d.push_back(U" ");
  return d;
}
std::u32string ctc_decode(const Tensor& probs, const std::vector<std::u32string>& dict) {
  const int64_t T = probs.dim(1), C = probs.dim(2);
  std::u32string s;
  int64_t prev = -1;
  for (int64_t t = 0; t < T; ++t) {
    const float* p = probs.data<float>() + t * C;
    const int64_t k = std::max_element(p, p + C) - p;
    if (k != prev && k != 0 && size_t(k) < dict.size()) s += dict[size_t(k)];
    prev = k;
  }
  return s;
}
size_t edit_distance(const std::u32string& a, const std::u32string& b) {
  std::vector<size_t> d(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) d[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = d[0];
    d[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = d[j];
      d[j] = std::min({d[j] + 1, d[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return d[b.size()];
}

std::string pct(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f %%", 100 * v);
  return b;
}
std::string fixed(double v, const char* f = "%.6f") {
  char b[32];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::ostringstream g_fp16;  // FP16 rows, collected from every test
double fp16_all_min = 1.0;  // the lowest FP16 cosine among the other models

std::ostringstream g_targets;  // issue #4's targets: measured, met or not

void target_row(const std::string& what, const std::string& target, const std::string& measured, bool met) {
  g_targets << "| " << what << " | " << target << " | " << measured << " | " << (met ? "yes" : "**no**")
            << " |\n";
}

}  // namespace

TEST(Accuracy, RecognitionCharacterErrorRate) {
  const Model m = load("ppocr_rec", "x:1x3x48x320");
  const auto dict = read_dict();
  const auto eval = read_lines(kImages / "ocr_eval"), calib = read_lines(kImages / "ocr_calib");
  ASSERT_GE(eval.size(), 200u);
  std::vector<TensorMap> ev, cal;
  for (auto& l : eval) ev.push_back({{"x", ocr_line_input(l.img, 320)}});
  for (auto& l : calib) cal.push_back({{"x", ocr_line_input(l.img, 320)}});
  // The softmax's input (the logits), kept to tell FP16's arithmetic error from what the softmax makes of it.
  const Node& softmax = m.g.nodes[size_t(m.g.value(m.g.outputs[0]).producer)];
  ASSERT_EQ(softmax.op, OpKind::Softmax);
  const std::string logits = m.g.value(softmax.inputs[0]).name;
  const Runs r = run_all(m, cal, ev, logits);
  const std::string out = r.fp32[0].begin()->first;
  size_t chars = 0;
  for (auto& l : eval) chars += l.text.size();
  auto cer = [&](const std::vector<TensorMap>& outs, size_t* same) {
    size_t edits = 0;
    for (size_t i = 0; i < eval.size(); ++i) {
      const auto s = ctc_decode(outs[i].at(out), dict);
      edits += edit_distance(s, eval[i].text);
      if (same) *same += s == ctc_decode(r.fp32[i].at(out), dict);
    }
    return double(edits) / double(chars);
  };
  const double fp32 = cer(r.fp32, nullptr);
  size_t same16 = 0;
  const double fp16 = cer(r.fp16, &same16);
  g_md << "\n## PP-OCRv4 rec: character error rate on " << eval.size() << " rendered lines (" << chars
       << " characters)\n\nCalibration: " << calib.size() << " other rendered lines. Input 1x3x48x320.\n\n"
       << "| precision | calibrator | DLA INT8 layers | CER | CER - FP32 | lines identical to FP32 |\n"
       << "|---|---|---|---|---|---|\n"
       << "| FP32 (reference) | - | - | " << pct(fp32) << " | - | - |\n"
       << "| FP16 | - | " << r.fp16_layers << " fp16 | " << pct(fp16) << " | " << pct(fp16 - fp32) << " | "
       << same16 << " / " << eval.size() << " |\n";
  for (CalibAlgo a : kAlgos) {
    size_t same = 0;
    const double c = cer(r.int8.at(a), &same);
    g_md << "| INT8 | " << calib_algo_name(a) << " | " << r.int8_layers.at(a) << " | " << pct(c) << " | "
         << pct(c - fp32) << " | " << same << " / " << eval.size() << " |\n";
  }
  double best_delta = 1e9;
  for (const auto& c : r.fixed) {
    size_t same = 0;
    const double rc = cer(c.outs, &same);
    best_delta = std::min(best_delta, rc - fp32);
    g_md << "| " << c.label << " | " << calib_algo_name(r.best_algo) << " | " << c.int8_layers << " | "
         << pct(rc) << " | " << pct(rc - fp32) << " | " << same << " / " << eval.size() << " |\n";
  }
  target_row("PP-OCRv4 rec: INT8 CER - FP32 CER (best dlakit configuration)", "<= 1.0 point", pct(best_delta),
             best_delta <= 0.01);
  // Regression guard at the measured level: the target is not met (accuracy.md, int8.md).
  EXPECT_LE(best_delta, 0.03) << "best INT8 CER - FP32 CER";
  const double c16 = cosine(r.fp32, r.fp16, out);
  g_fp16 << "| ppocr_rec | " << out << " | " << fixed(c16) << " |\n";
  target_row("PP-OCRv4 rec: FP16 cosine vs FP32 (240 lines, softmax output)", ">= 0.9999", fixed(c16),
             c16 >= 0.9999);
  // Regression guard: FP16's CER is within 0.05 points of FP32's, but the cosine misses 0.9999.
  EXPECT_GE(c16, 0.9995);
  // Where FP16's softmax error sits: per line and per time step (argmax flips between near-tied classes).
  size_t below = 0, flips = 0, worst_line = 0;
  double total = 0, worst = 0;
  for (size_t i = 0; i < ev.size(); ++i) {
    const Tensor &a = r.fp32[i].at(out), &b = r.fp16[i].at(out);
    const int64_t classes = a.shape().back();
    double sq = 0;
    for (int64_t t = 0; t < a.numel() / classes; ++t) {
      const float *x = a.data<float>() + t * classes, *y = b.data<float>() + t * classes;
      flips += std::max_element(x, x + classes) - x != std::max_element(y, y + classes) - y;
      for (int64_t c = 0; c < classes; ++c) sq += (double(x[c]) - y[c]) * (double(x[c]) - y[c]);
    }
    below += cosine({r.fp32[i]}, {r.fp16[i]}, out) < 0.9999;
    total += sq;
    if (sq > worst) worst = sq, worst_line = i;
  }
  const double c_logits = cosine(r.fp32_inner, r.fp16_inner, logits);
  g_md << "\nFP16 on the softmax output: " << below << " of " << ev.size()
       << " lines have a cosine below 0.9999; the argmax (the decoded class) differs at " << flips
       << " time steps; line " << worst_line << " alone carries " << pct(worst / total)
       << " of the squared error. On the softmax's input (the logits `" << logits << "`), the FP16 cosine is "
       << fixed(c_logits)
       << ". fp16 storage adds about 2^-12 of relative error per layer over some 300 DLA layers (`dlakit "
          "compare --fp16` shows it growing steadily, no layer standing out), and where two of the 6625 "
          "classes are nearly tied the softmax turns that into moved probability mass.\n";
  target_row("PP-OCRv4 rec: FP16 cosine on the logits (diagnostic: the softmax's input)", ">= 0.9999",
             fixed(c_logits), c_logits >= 0.9999);
  EXPECT_GE(c_logits, 0.9998);  // regression guard at the measured level
}

TEST(Accuracy, ClassifierAgreement) {
  const Model m = load("ppocr_cls", "x:1x3x48x192");
  const auto eval = read_lines(kImages / "ocr_eval"), calib = read_lines(kImages / "ocr_calib");
  std::vector<TensorMap> ev, cal;
  std::vector<int> truth;
  for (auto& l : eval) {
    ev.push_back({{"x", ocr_line_input(l.img, 192)}});
    truth.push_back(0);
    ev.push_back({{"x", ocr_line_input(rotate180(l.img), 192)}});
    truth.push_back(1);
  }
  for (auto& l : calib) {
    cal.push_back({{"x", ocr_line_input(l.img, 192)}});
    cal.push_back({{"x", ocr_line_input(rotate180(l.img), 192)}});
  }
  const Runs r = run_all(m, cal, ev);
  const std::string out = r.fp32[0].begin()->first;
  auto cls = [&](const TensorMap& o) {
    const float* p = o.at(out).data<float>();
    return p[1] > p[0] ? 1 : 0;
  };
  size_t right32 = 0;
  for (size_t i = 0; i < ev.size(); ++i) right32 += cls(r.fp32[i]) == truth[i];
  g_md << "\n## ppocr cls: upright vs 180-degree rotated, " << ev.size() << " crops (" << eval.size()
       << " lines x 2)\n\n| precision | calibrator | agrees with FP32 | correct orientation "
          "|\n|---|---|---|---|\n"
       << "| FP32 (reference) | - | - | " << pct(double(right32) / double(ev.size())) << " |\n";
  auto row = [&](const char* prec, const char* algo, const std::vector<TensorMap>& outs) {
    size_t agree = 0, right = 0;
    for (size_t i = 0; i < ev.size(); ++i) {
      agree += cls(outs[i]) == cls(r.fp32[i]);
      right += cls(outs[i]) == truth[i];
    }
    g_md << "| " << prec << " | " << algo << " | " << pct(double(agree) / double(ev.size())) << " | "
         << pct(double(right) / double(ev.size())) << " |\n";
    return double(agree) / double(ev.size());
  };
  row("FP16", "-", r.fp16);
  for (CalibAlgo a : kAlgos) row("INT8", calib_algo_name(a), r.int8.at(a));
  double best_agree = 0;
  for (const auto& c : r.fixed)
    best_agree = std::max(best_agree, row(c.label.c_str(), calib_algo_name(r.best_algo), c.outs));
  target_row("ppocr cls: INT8 agrees with FP32 (calibrator chosen on the calibration data)", ">= 99 %",
             pct(best_agree), best_agree >= 0.99);
  EXPECT_GE(best_agree, 0.98);  // regression guard: the calibrator chosen on the calibration data misses
  g_fp16 << "| ppocr_cls | " << out << " | " << fixed(cosine(r.fp32, r.fp16, out)) << " |\n";
  target_row("ppocr cls: FP16 cosine vs FP32", ">= 0.9999", fixed(cosine(r.fp32, r.fp16, out)),
             cosine(r.fp32, r.fp16, out) >= 0.9999);
  EXPECT_GE(cosine(r.fp32, r.fp16, out), 0.9999);
}

TEST(Accuracy, DetectorMaskF1) {
  const Model m = load("ppocr_det", "x:1x3x640x640");
  Preprocess p;
  p.width = p.height = 640;
  p.mean = {0.485f, 0.456f, 0.406f};
  p.std = {0.229f, 0.224f, 0.225f};
  std::vector<TensorMap> ev, cal;
  std::vector<std::string> names;
  for (int i = 1; i <= 6; ++i) names.push_back("scenetext0" + std::to_string(i) + ".jpg");
  for (int i = 0; i < 3; ++i) names.push_back("pages_eval/page_" + std::to_string(i) + ".png");
  for (auto& n : names) ev.push_back({{"x", image_to_tensor(load_image((kImages / n).string()), p)}});
  for (auto n : {"pages_calib/page_0.png", "pages_calib/page_1.png", "pages_calib/page_2.png", "baboon.jpg",
                 "fruits.jpg", "messi5.jpg", "butterfly.jpg", "squirrel_cls.jpg"})
    cal.push_back({{"x", image_to_tensor(load_image((kImages / n).string()), p)}});
  const Runs r = run_all(m, cal, ev);
  const std::string out = r.fp32[0].begin()->first;
  auto f1 = [&](const std::vector<TensorMap>& outs) {
    double tp = 0, fp = 0, fn = 0;
    for (size_t s = 0; s < ev.size(); ++s) {
      const Tensor &a = r.fp32[s].at(out), &b = outs[s].at(out);
      for (int64_t i = 0; i < a.numel(); ++i) {
        const bool x = a.data<float>()[i] > 0.3f, y = b.data<float>()[i] > 0.3f;
        tp += x && y;
        fp += !x && y;
        fn += x && !y;
      }
    }
    return tp + fp + fn > 0 ? 2 * tp / (2 * tp + fp + fn) : 1.0;
  };
  g_md << "\n## PP-OCRv4 det: F1 of the p > 0.3 text masks against FP32, " << ev.size()
       << " images (6 opencv-doc scene-text photos, 3 rendered pages)\n\nCalibration: 3 other rendered "
       << "pages and 5 opencv-doc photos without text. Input 1x3x640x640.\n\n"
       << "| precision | calibrator | DLA INT8 layers | mask F1 vs FP32 | output cosine "
          "|\n|---|---|---|---|---|\n"
       << "| FP16 | - | " << r.fp16_layers << " fp16 | " << fixed(f1(r.fp16), "%.4f") << " | "
       << fixed(cosine(r.fp32, r.fp16, out)) << " |\n";
  for (CalibAlgo a : kAlgos) {
    const double f = f1(r.int8.at(a));
    g_md << "| INT8 | " << calib_algo_name(a) << " | " << r.int8_layers.at(a) << " | " << fixed(f, "%.4f")
         << " | " << fixed(cosine(r.fp32, r.int8.at(a), out)) << " |\n";
  }
  double best_f1 = 0, fixed_f1 = 0;
  for (const auto& c : r.fixed) {
    const double f = f1(c.outs);
    if (fixed_f1 == 0) fixed_f1 = f;  // the first: flagged layers only
    best_f1 = std::max(best_f1, f);
    g_md << "| " << c.label << " | " << calib_algo_name(r.best_algo) << " | " << c.int8_layers << " | "
         << fixed(f, "%.4f") << " | " << fixed(cosine(r.fp32, c.outs, out)) << " |\n";
  }
  target_row("PP-OCRv4 det: mask F1 INT8 vs FP32 (calibrator + --fix, nearly all INT8)", ">= 0.95",
             fixed(fixed_f1, "%.4f"), fixed_f1 >= 0.95);
  target_row("PP-OCRv4 det: mask F1 with --fix-target 0.99 (mixed precision)", ">= 0.95",
             fixed(best_f1, "%.4f"), best_f1 >= 0.95);
  EXPECT_GE(fixed_f1, 0.95);
  EXPECT_GE(best_f1, 0.95);
  g_fp16 << "| ppocr_det | " << out << " | " << fixed(cosine(r.fp32, r.fp16, out)) << " |\n";
  target_row("PP-OCRv4 det: FP16 cosine vs FP32", ">= 0.9999", fixed(cosine(r.fp32, r.fp16, out)),
             cosine(r.fp32, r.fp16, out) >= 0.9999);
  EXPECT_GE(cosine(r.fp32, r.fp16, out), 0.9999);
}

// M-LSD (NHWC RGBA input) normalizes inside its graph (x / 127.5 - 1): it takes pixels 0..255.
static bool raw_input_model(const Graph& g) {
  const Shape& s = g.value(g.inputs[0]).type.shape;
  return s.size() == 4 && s[3] == 4;
}

// FP16 on every other model in .cache/models, on real photos resized to the model's input.
TEST(Accuracy, Fp16CosineEveryModel) {
  std::vector<fs::path> models;
  for (auto& e : fs::directory_iterator(kModels))
    if (e.path().extension() == ".onnx" && e.path().stem().string().rfind("ppocr_", 0) != 0)
      models.push_back(e.path());
  std::sort(models.begin(), models.end());
  ASSERT_GE(models.size(), 10u);
  const std::vector<Image> photos = {load_image((kImages / "messi5.jpg").string()),
                                     load_image((kImages / "fruits.jpg").string())};
  for (const fs::path& path : models) {
    SCOPED_TRACE(path.stem().string());
    const Model m = load(path.stem().string(), "");
    const Value& in = m.g.value(m.g.inputs[0]);
    const Shape& s = in.type.shape;
    const bool nhwc = s.size() == 4 && (s[3] == 3 || s[3] == 4) && s[1] != 3;
    std::vector<TensorMap> samples;
    for (const Image& img : photos) {
      Preprocess p;
      p.nhwc = nhwc;
      p.height = int(nhwc ? s[1] : s[2]);
      p.width = int(nhwc ? s[2] : s[3]);
      const bool raw_pixels = raw_input_model(m.g);
      if (raw_pixels) {
        p.scale = 1.f;
      } else {  // [-1, 1], what BlazeFace expects; the torchvision models carry random weights
        p.mean = {0.5f, 0.5f, 0.5f};
        p.std = {0.5f, 0.5f, 0.5f};
      }
      Tensor t = image_to_tensor(img, p);
      if (raw_pixels) {  // RGBA input (M-LSD): alpha = 1, as M-LSD's own pred_lines feeds it
        Tensor rgba(DType::kF32, s);
        for (int64_t i = 0; i < t.numel() / 3; ++i) {
          std::copy_n(t.data<float>() + i * 3, 3, rgba.data<float>() + i * 4);
          rgba.data<float>()[i * 4 + 3] = 1.f;
        }
        t = rgba;
      }
      samples.push_back({{in.name, t}});
    }
    ReferenceEngine ref(m.g);
    EmulatedEngine e16(m.g, plan_numerics(m.g, m.fp16, nullptr));
    // M-LSD's scores are its center map times a peak mask (Cast(Equal(map, MaxPool(map)))): keep the map.
    std::string center;
    if (raw_input_model(m.g)) {
      const Node& mask_mul = m.g.nodes[size_t(m.g.value(*m.g.find_value("scores")).producer)];
      for (int v : mask_mul.inputs)
        if (m.g.value(v).producer >= 0 && m.g.nodes[size_t(m.g.value(v).producer)].op != OpKind::Cast)
          center = m.g.value(v).name;
    }
    std::vector<TensorMap> a, b, a_center, b_center;
    keep_inner(ref, m.g, center, a_center);
    keep_inner(e16.engine(), m.g, center, b_center);
    for (auto& x : samples) {
      a.push_back(ref.run(x));
      b.push_back(e16.run(x));
    }
    if (!center.empty()) {
      const double c = cosine(a_center, b_center, center);
      g_fp16 << "| mlsd_tiny_320 | `" << center << "` (scores before the peak mask) | " << fixed(c) << " |\n";
      target_row("M-LSD tiny FP16 cosine, center map before the peak mask (diagnostic)", ">= 0.9999",
                 fixed(c), c >= 0.9999);
      EXPECT_GE(c, 0.9999);
    }
    for (auto& [name, t] : a[0]) {
      if (t.dtype() != DType::kF32) continue;
      const double c = cosine(a, b, name);
      const std::string model = path.stem().string();
      g_fp16 << "| " << model << " | " << name << " | " << fixed(c) << " |\n";
      // M-LSD misses the target (accuracy.md): its offsets come through depthwise convolutions whose
      // folded weights (up to 56) cancel, so fp16 storage of their inputs and weights costs ~0.5% each; its
      // scores keep the center map's peaks (x == MaxPool(x)), where a rounding can move a peak.
      if (model == "mlsd_tiny_320") {
        target_row("M-LSD tiny FP16 cosine, " + name, ">= 0.9999", fixed(c), c >= 0.9999);
        EXPECT_GE(c, 0.999) << name;  // regression guard at the measured level
      } else {
        EXPECT_GE(c, 0.9999) << name;
        fp16_all_min = std::min(fp16_all_min, c);
      }
    }
  }
}

class WriteReport : public ::testing::Environment {
 public:
  void TearDown() override {
    std::ofstream f(fs::path(DLAKIT_BINARY_DIR) / "accuracy.md");
    f << "# Accuracy of the emulated DLA: INT8 and FP16 against FP32\n\n"
      << "Generated by `tests/accuracy/accuracy_test.cpp`, run by `make test`. INT8 is dlakit's emulation of "
      << "the DLA's INT8 (docs/int8.md): layers the DLA runs in INT8 per the Orin placement, GPU-fallback "
      << "layers in FP32. Every calibrator is reported. Everything dlakit decides (which calibrator, which "
      << "layers `compare --fix` moves to FP16) is decided on the calibration data; the evaluation data is "
      << "only measured. The targets marked yes are asserted; those marked no are reported with a "
      << "regression guard at the measured level, and explained in docs/int8.md.\n"
      << "\n## Issue #4's targets\n\n| check | target | measured | met |\n|---|---|---|---|\n"
      << g_targets.str() << "| FP16 cosine, every other model in .cache/models | >= 0.9999 | min "
      << fixed(fp16_all_min) << " | " << (fp16_all_min >= 0.9999 ? "yes" : "**no**") << " |\n"
      << g_md.str() << "\n## FP16: cosine against FP32 on every output (threshold 0.9999)\n\n"
      << "Real photos (messi5, fruits from opencv-doc) resized to each model's input; OCR models on their "
      << "evaluation sets above. torchvision models carry random (seeded) weights.\n\n"
      << "| model | output | cosine |\n|---|---|---|\n"
      << g_fp16.str();
  }
};
const auto* const kReport = ::testing::AddGlobalTestEnvironment(new WriteReport);
