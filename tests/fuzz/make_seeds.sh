#!/usr/bin/env bash
# Rebuilds the loadable seeds of tests/fuzz/seeds from ONNX backend-test models (small programs of every
# kind the fuzzer should start from: FP16 conv, depthwise, a single SDP op, INT8 with fp16 and int8 I/O).
#   tests/fuzz/make_seeds.sh BUILD_DIR
set -euo pipefail
BUILD="$1"; ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
DATA=/usr/share/libonnx-testdata/data/pytorch-converted
OUT="$ROOT/tests/fuzz/seeds"; TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
"$BUILD/dlakit" build --onnx="$DATA/test_Conv2d/model.onnx" --saveEngine="$OUT/test_Conv2d.dla" > /dev/null
"$BUILD/dlakit" build --onnx="$DATA/test_Conv2d_depthwise/model.onnx" --saveEngine="$OUT/test_Conv2d_depthwise.dla" > /dev/null
"$BUILD/dlakit" build --onnx="$DATA/test_ReLU/model.onnx" --saveEngine="$OUT/test_ReLU.dla" > /dev/null
/usr/bin/python3 -c "import numpy as np; np.save('$TMP/x.npy', np.random.default_rng(1).normal(size=(2, 3, 7, 5)).astype(np.float32))"
"$BUILD/dlakit" calibrate "$DATA/test_Conv2d/model.onnx" --standalone --int8 --data "$TMP/x.npy" --cache "$TMP/c.cache" > /dev/null
"$BUILD/dlakit" build --onnx="$DATA/test_Conv2d/model.onnx" --int8 --calib="$TMP/c.cache" --saveEngine="$OUT/test_Conv2d_int8.dla" > /dev/null
"$BUILD/dlakit" build --onnx="$DATA/test_Conv2d/model.onnx" --int8 --calib="$TMP/c.cache" \
  --inputIOFormats=int8:chw32 --outputIOFormats=int8:dla_linear --saveEngine="$OUT/test_Conv2d_int8_io.dla" > /dev/null
ls -l "$OUT"/*.dla
