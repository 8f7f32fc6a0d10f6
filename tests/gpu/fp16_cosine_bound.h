// FP16 on the GPU against the CPU emulation: the bound on an output's cosine, per model, for both engines
// (program_cuda_test: the compiled program's executors; gpu_engine_test: GpuEngine). Issue #14's target is
// 0.99999. PP-OCRv4 det does not meet it: after the DLA rewrites it measured 0.999982 on the H200
// (2026-12-04), 39 of 307200 values of op11 (depthwise conv, then a batch-norm Mul by a large constant and an
// Add, fused) differing by up to 6 fp16 ulps where the convolution's terms cancel, carried by the 360 steps
// after; with the FP16 convolutions on tensor cores (other fp32 sums) 0.99996-0.99998 on an H100
// (2026-12-05/06, 105 of 102400 outputs differ, by at most 1.5e-6, in a map of mostly tiny probabilities),
// and 0.999992 through GpuEngine. Why (measured with `dlakit run --random-inputs` at 320x320, 2026-12-07): on
// seeded N(0, 1) noise det's map is nothing but the sigmoid's tail, every value below 1.3e-4 (logits -9 and
// lower, median 1e-11), so its cosine rests on its largest value (1.36e-4, about 69 % of the map's energy;
// surfaces compared operation by operation on an H100, docs/device-runs/2026-12-07-32nd-session.md), and one
// fp16 ulp of a logit near -9 (2^-7) moves that value by 0.6-0.78 %: the 8.3e-7 measured, which alone costs
// the cosine about 1.3e-5. On a photograph (the test beside it) the map holds text and meets 0.99999. For det
// on noise, 0.99995 is a regression guard below the target.
#pragma once
#include <string>

inline double fp16_cosine_bound(const std::string& model) { return model == "ppocr_det" ? 0.99995 : 0.99999; }
