// Surfaces of a compiled program in memory: a tensor's fp16 or int8 elements laid out as its descriptor
// says (the DLA's chw16/chw32 feature formats inside the program, any I/O format at the task's buffers),
// read into float32 NCHW and written back.
#pragma once
#include <cstdint>

#include "ir/tensor.h"
#include "runtime/io_format.h"

namespace dlakit::rt {

// The surface at `base` (its first byte) as float32 of its network shape; int8 elements are q * scale.
Tensor read_surface(const TensorDesc& d, const uint8_t* base);

// Writes x (float32 of the network shape) to the surface at `base`: fp16 rounded to nearest even, int8
// quantized to the descriptor's scale (ties away from zero, saturated). The padding channels of the
// surface's own channel atoms are zeroed; nothing outside its elements' atoms is touched, so a view
// (a Concat input written in place) leaves its neighbours alone.
void write_surface(const Tensor& x, const TensorDesc& d, uint8_t* base);

}  // namespace dlakit::rt
