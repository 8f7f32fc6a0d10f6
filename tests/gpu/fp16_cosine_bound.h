// FP16 on the GPU against the CPU emulation: the bound on an output's cosine, per model, for the compiled
// program's executors (program_cuda_test; GpuEngine meets the target on every model, det at 0.9999924, and
// gpu_engine_test asserts it). Issue #14's target is 0.99999. PP-OCRv4 det's program does not meet it on
// the seeded input: 0.999982 on the H200 after the DLA rewrites (2026-12-04), 0.99996-0.99998 on an H100
// with the FP16 convolutions on tensor cores (2026-12-05/06; 105 of 102400 outputs differ, by at most
// 8.3e-7), the two executors' fp32 sums in different orders storing neighbouring fp16 values from the first
// convolution on. Why that costs so much here (measured with `dlakit run --random-inputs` at 320x320, and
// surface by surface on an H100, docs/device-runs/2026-12-07-32nd-session.md): on seeded N(0, 1) noise det's
// map is nothing but the sigmoid's tail, every value below 1.4e-4 (logits -9 and lower, median 1e-11), and
// its largest value holds about 69 % of the map's energy; one fp16 ulp of a logit near -9 (2^-7) moves that
// value by 0.6-0.78 %, the 8.3e-7 measured, which alone costs the cosine about 1.3e-5. On a photograph (the
// test beside it) the map holds text and meets 0.99999. For det on noise, 0.99995 is a regression guard
// below the target.
#pragma once
#include <string>

inline double fp16_cosine_bound(const std::string& model) { return model == "ppocr_det" ? 0.99995 : 0.99999; }
