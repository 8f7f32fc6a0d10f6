#!/usr/bin/env bash
# Prepares devrun/ for running NVIDIA's unmodified cuda.bindings.cudla against dlakit's libcudla.so.1 on the
# GPU machine (which has cuda-bindings but not Debian's ONNX/protobuf libraries, so those travel along).
# Expected output bytes are produced here by the plain C client (tests/capi/hybrid_steps.c).
# Then, on the device:  cd devrun && LD_LIBRARY_PATH=$PWD/lib python3 run_bindings.py
set -euo pipefail
BUILD="${1:-build}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
D="$ROOT/devrun"
rm -rf "$D" && mkdir -p "$D/lib"
cp -L "$ROOT/$BUILD/libcudla.so.1" "$D/lib/"
cp -L /lib/x86_64-linux-gnu/libonnx_proto.so.1 /lib/x86_64-linux-gnu/libprotobuf.so.32 "$D/lib/"
cp "$ROOT/tests/device/run_bindings.py" "$D/"
# PRECISION=int8: an INT8 loadable calibrated on two opencv-doc photos (default: FP16).
if [ "${PRECISION:-fp16}" = int8 ]; then
  "$ROOT/$BUILD/dlakit" calibrate "$ROOT/.cache/models/mobilenet_v2.onnx" --data "$ROOT/.cache/images/messi5.jpg" \
    "$ROOT/.cache/images/fruits.jpg" --mean 0.485,0.456,0.406 --std 0.229,0.224,0.225 --cache "$D/model.cache" > /dev/null
  "$ROOT/$BUILD/dlakit" build --onnx="$ROOT/.cache/models/mobilenet_v2.onnx" --int8 --calib="$D/model.cache" \
    --saveEngine="$D/model.dla" > /dev/null
else
  "$ROOT/$BUILD/dlakit" build --onnx="$ROOT/.cache/models/mobilenet_v2.onnx" --saveEngine="$D/model.dla" > /dev/null
fi
/usr/bin/python3 - "$D/in.bin" <<'PY'
import sys, numpy as np
x = np.random.RandomState(7).randn(1, 3, 224, 224).astype(np.float16)
buf = np.zeros((1, 1, 224, 224, 16), np.float16)  # chw16: channels padded to 16, innermost
buf[0, 0, :, :, :3] = x[0].transpose(1, 2, 0)
buf.tofile(sys.argv[1])
PY
"$ROOT/$BUILD/tests/cudla_hybrid_steps" "$D/model.dla" "$D/in.bin" "$D/expected_out.bin" 0 > /dev/null
echo "devrun/ ready ($(du -sh "$D" | cut -f1)); carry it to the device (it is git-ignored)"
