// The DLA's limits as data: one table per chip (../shared/specs/dla-constraints.md §1). Rules read these
// and the support matrix in docs/ is generated from them, so the two cannot disagree.
#pragma once
#include <string>
#include <vector>

namespace dlakit::dla {

struct Range {
  long lo, hi;
  bool contains(long v) const { return v >= lo && v <= hi; }
  std::string str() const;  // "1..32"
};

struct DlaLimits {
  std::string chip;         // "orin" | "xavier"
  std::string dla_version;  // "2.0" | "1.0"
  // general
  long max_batch = 4096;  // product of all dims except the last three
  long max_dim = 8192;    // any non-batch dimension
  long max_loadables_per_core = 16;
  long long max_intermediate_bytes = 1LL << 30;  // per DLA graph, strictly less than
  int cores = 2;
  // convolution / fully connected
  Range conv_kernel{1, 32}, conv_stride{1, 8}, conv_pad{0, 31}, conv_dilation{1, 32},
      conv_out_channels{1, 8192}, conv_groups{1, 8192};
  int cbuf_banks = 16, cbuf_bank_bytes = 32768, cbuf_bank_entries = 256, cbuf_entry_bytes = 128;
  // deconvolution
  Range deconv_kernel{1, 32}, deconv_channels{1, 8192};
  std::vector<long> deconv_long_kernels{64, 96, 128};  // allowed as 1xK or Kx1
  // pooling
  Range pool_window{1, 8}, pool_stride{1, 16}, pool_pad{0, 7};
  bool avgpool_exclusive_padding = true;  // Xavier: only count_include_pad=1
  // activation
  Range clip_max{1, 127};  // clipped ReLU: min 0, max in this range
  // element-wise
  std::vector<std::string> eltwise_ops;  // ONNX op names supported natively
  // LRN
  std::vector<long> lrn_windows{3, 5, 7, 9};
  // resize
  Range resize_nearest_scale{1, 32}, resize_linear_scale{1, 4};
  // softmax
  bool has_softmax = true;
  long softmax_accurate_axis = 8192, softmax_approx_axis = 1024;
  // I/O
  int line_stride_align_bytes = 64;
  long sram_bytes = 1 << 20;
};

const DlaLimits& orin_limits();
const DlaLimits& xavier_limits();
const DlaLimits& limits_for(const std::string& chip);  // error names the valid chips

}  // namespace dlakit::dla
