// The producer that exists today: placed graph layers -> DLA hardware operations (hw_op.h), one DLA
// segment (one loadable) at a time. A convolution takes up to three following element-wise layers into its
// SDP and one pooling layer into its PDP (the open NVDLA pipeline); concatenations are free (producers
// write into the joined surface); a greedy memory plan keeps intermediate surfaces in SRAM while they fit.
// These rules are dlakit's assumptions (docs/latency-model.md); the compiled program's operations, when
// they exist, replace this file as the producer.
#pragma once
#include <vector>

#include "ir/graph.h"
#include "latency/hw_op.h"
#include "placement/placement.h"

namespace dlakit::latency {

struct LowerOptions {
  bool image_input = false;  // graph inputs arrive as kDLA_HWC4 images: a first conv uses image-input mode
  OpPrecision input_precision = OpPrecision::kInt8;   // graph inputs as stored
  OpPrecision output_precision = OpPrecision::kInt8;  // graph outputs as stored
  long long sram_bytes = 0;                           // what the memory plan may use (0: everything in DRAM)
};

struct LoweredSegment {
  std::vector<HwOp> ops;
  std::vector<int> op_of_node;  // per graph node: the operation it is part of, -1 if none (other
                                // segment, or free: concat, identity, layout-only reshape)
};

LoweredSegment lower_dla_segment(const Graph& g, const Placement& p, int segment, const LowerOptions& opt);

// How a value is laid out for the DLA: batch = product of all but the last three dims (dla-constraints.md
// 1.1); a 2-D [N, C] tensor is N x C x 1 x 1 (a fully connected layer's view).
Dims dims_of(const Shape& s);

}  // namespace dlakit::latency
