#include "targets/dla/limits.h"

#include "base/error.h"

namespace dlakit::dla {

std::string Range::str() const {
  return lo == hi ? std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi);
}

const DlaLimits& orin_limits() {
  static const DlaLimits l = [] {
    DlaLimits o;
    o.chip = "orin";
    o.dla_version = "2.0";
    // Div and Pow are in the latest TensorRT DLA table; Xavier's ElementWise predates them.
    o.eltwise_ops = {"Add", "Sub", "Mul", "Max", "Min", "Div", "Pow"};
    return o;
  }();
  return l;
}

const DlaLimits& xavier_limits() {
  static const DlaLimits l = [] {
    DlaLimits x;
    x.chip = "xavier";
    x.dla_version = "1.0";
    x.eltwise_ops = {"Add", "Sub", "Mul", "Max", "Min"};  // Sub is emulated as Scale + Sum by TensorRT
    x.has_softmax = false;
    x.avgpool_exclusive_padding = false;
    x.line_stride_align_bytes = 32;
    x.sram_bytes = 4 << 20;  // shared by 2 DLAs and 2 PVAs
    return x;
  }();
  return l;
}

const DlaLimits& limits_for(const std::string& chip) {
  if (chip == "orin") return orin_limits();
  if (chip == "xavier") return xavier_limits();
  fail(Status::kInvalidArgument, "--target '", chip, "' is not a DLA chip dlakit knows (orin, xavier)");
}

}  // namespace dlakit::dla
