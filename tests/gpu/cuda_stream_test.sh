#!/usr/bin/env bash
# cuda_stream_steps on MobileNetV2 loadables (FP16 and INT8), on the emulated DLA on CUDA and on the CPU
# emulator ordered on the stream: pinned and device buffers in stream order, pageable memory refused.
# Exit 77 (skipped) where no GPU answers, unless DLAKIT_REQUIRE_GPU=1 (then that is a failure).
set -euo pipefail
DLAKIT="$1" STEPS="$2" ROOT="$3"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
"$STEPS" /dev/null close >/dev/null 2>&1 || { rc=$?; [ $rc -eq 77 ] && { echo "no GPU: skipped"; exit 77; }; }
# (with DLAKIT_REQUIRE_GPU=1 the probe above exits 1 without a GPU, and the runs below fail)
M="$ROOT/.cache/models/mobilenet_v2.onnx"
"$DLAKIT" build --onnx="$M" --saveEngine="$T/fp16.dla" >/dev/null
"$DLAKIT" calibrate "$M" --data "$ROOT/.cache/images/messi5.jpg" "$ROOT/.cache/images/fruits.jpg" \
  --mean 0.485,0.456,0.406 --std 0.229,0.224,0.225 --cache "$T/int8.cache" >/dev/null
"$DLAKIT" build --onnx="$M" --int8 --calib="$T/int8.cache" --saveEngine="$T/int8.dla" >/dev/null
"$DLAKIT" build --onnx="$M" --int8 --calib="$T/int8.cache" --inputIOFormats=int8:chw32 \
  --outputIOFormats=int8:dla_linear --saveEngine="$T/int8io.dla" >/dev/null
for backend in cuda cpu; do
  echo "== FP16 loadable, backend $backend"; DLAKIT_DLA_BACKEND=$backend "$STEPS" "$T/fp16.dla" close
  echo "== INT8 loadable, backend $backend"; DLAKIT_DLA_BACKEND=$backend "$STEPS" "$T/int8.dla" exact
  echo "== INT8 loadable with int8 I/O, backend $backend"; DLAKIT_DLA_BACKEND=$backend "$STEPS" "$T/int8io.dla" exact
done
