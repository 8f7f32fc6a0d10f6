#include "latency/published.h"

namespace dlakit::latency {
namespace {

const char* kDlaSw =
    "NVIDIA Deep-Learning-Accelerator-SW README, Orin DLA dense performance (JetPack 5.1.1, AGX Orin 64GB, "
    "INT8, int8:dla_hwc4 in, int8:chw32 out)";
const char* kCudlaSamples =
    "NVIDIA-AI-IOT/cuDLA-samples README (DRIVE Orin-X, DLA 1331 MHz, EMC 3200 MHz, TensorRT 8.6, DLA 3.14)";

struct Net {
  const char* label;
  const char* network;
  long long batch;
  double gmacs;
  const char* macs_source;
  double ips[4];  // MAXN, 50W, 30W, 15W images/s with both DLAs
  bool calibration;
};

// Calibration: the four networks of dla-performance.md at MAXN and 15W; their 50W and 30W figures and
// the two RetinaNets are validation.
const Net kNets[] = {
    {"ResNet-34 backbone (1280x768, bs 1)",
     "resnet34_backbone_1280x768",
     1,
     3.66 * 1280 * 768 / (224 * 224),
     "torchvision resnet34 3.66 GMACs at 224x224, scaled by the pixel count",
     {285, 260, 255, 121},
     true},
    {"SSD-ResNet-34 (1200x1200, bs 1)",
     "ssd_resnet34_1200",
     1,
     433.411 / 2,
     "OpenVINO Open Model Zoo ssd-resnet34-1200-onnx: 433.4 GFLOPs",
     {83, 76, 74, 36},
     true},
    {"ResNet-50 (224x224, bs 2)",
     "resnet50_bs2",
     2,
     4.09,
     "torchvision resnet50: 4.09 GMACs",
     {2037, 1948, 1928, 1072},
     true},
    {"SSD-MobileNetV1 (300x300, bs 2)",
     "ssd_mobilenet_v1_300_bs2",
     2,
     2.494 / 2,
     "OpenVINO Open Model Zoo ssd_mobilenet_v1_coco: 2.494 GFLOPs",
     {2664, 2506, 2472, 1313},
     true},
    {"RetinaNet ResNeXt-50 (800x800, bs 1)", "retinanet_resnext50_800", 1, 0, "", {78, 72, 71, 36}, false},
    {"RetinaNet ResNet-34 (1280x768, bs 1)",
     "retinanet_resnet34_1280x768",
     1,
     0,
     "",
     {108, 98, 96, 45},
     false},
};
const char* kModes[4] = {"MAXN", "50W", "30W", "15W"};

std::vector<PublishedRow> make_rows() {
  std::vector<PublishedRow> rows;
  for (const Net& n : kNets)
    for (int m = 0; m < 4; ++m) {
      PublishedRow r;
      r.label = n.label;
      r.network = n.network;
      r.batch = n.batch;
      r.mode = kModes[m];
      // Derived: one DLA's time per batch = batch / (published / 2).
      r.published_ms = double(n.batch) / (n.ips[m] / 2) * 1e3;
      r.published = std::to_string(int(n.ips[m])) + " img/s (2 DLAs)";
      r.role = n.calibration && (m == 0 || m == 3) ? RowRole::kCalibration : RowRole::kValidation;
      r.source = kDlaSw;
      r.published_gmacs = n.gmacs;
      r.macs_source = n.macs_source;
      rows.push_back(r);
    }
  // YOLOv5s 672x672 on one DLA of a DRIVE Orin-X: INT8 with fp16:chw16 outputs, batch 1..16.
  const std::pair<long long, double> yolo[] = {{1, 3.82},  {2, 7.68},   {4, 15.17},
                                               {8, 30.92}, {12, 46.71}, {16, 62.54}};
  for (auto [batch, ms] : yolo) {
    PublishedRow r;
    r.label = "YOLOv5s (672x672, bs " + std::to_string(batch) + ", fp16:chw16 out)";
    r.network = "yolov5s_672";
    r.batch = batch;
    r.dla_mhz = 1331, r.dram_gb_per_s = 204.8 * 3200 / 3199;
    r.published_ms = ms;
    r.published = std::to_string(ms).substr(0, 5) + " ms";
    r.fp16_output = true;
    r.source = kCudlaSamples;
    r.published_gmacs = 8.25 * 672 * 672 / (640 * 640);
    r.macs_source = "ultralytics YOLOv5 README: 16.5 GFLOPs at 640x640, scaled by the pixel count";
    rows.push_back(r);
  }
  PublishedRow int8_out = rows.back();
  int8_out.label = "YOLOv5s (672x672, bs 1, int8:chw32 out)";
  int8_out.batch = 1;
  int8_out.published_ms = 2.4;
  int8_out.published = "about 2.4 ms";
  int8_out.fp16_output = false;
  rows.push_back(int8_out);
  PublishedRow mixed = rows[rows.size() - 7];  // batch 1, fp16 out
  mixed.label = "YOLOv5s (672x672, bs 1, last 4 layers FP16)";
  mixed.published_ms = 4.46;
  mixed.published = "4.46 ms";
  mixed.fp16_layers = "/detect.*:fp16,/h23/cv3/*:fp16";
  rows.push_back(mixed);
  return rows;
}

}  // namespace

const std::vector<PublishedRow>& published_rows() {
  static const std::vector<PublishedRow> rows = make_rows();
  return rows;
}

}  // namespace dlakit::latency
