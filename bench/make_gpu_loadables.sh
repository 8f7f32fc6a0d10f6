#!/usr/bin/env bash
# The INT8 loadables bench/gpu.sh times, built here (the GPU machine has no ONNX models):
#   bash bench/make_gpu_loadables.sh BUILD OUT_DIR
# NAME_b1.int8.dla for resnet18, resnet50 and mobilenet_v2 (.cache/models), and resnet50_b32.int8.dla from
# a batch-32 export of the same torchvision architecture (/usr/bin/python3 with python3-torch; the export
# names its tensors as the batch-1 one does, so the batch-1 calibration cache applies). Calibration: two
# photos (messi5, fruits), ImageNet mean/std: enough for timing, which does not depend on the ranges.
set -euo pipefail
BUILD="$1" OUT="$2"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
D="$ROOT/$BUILD/dlakit" M="$ROOT/.cache/models" IMG="$ROOT/.cache/images"
mkdir -p "$OUT"
for m in resnet18 resnet50 mobilenet_v2; do
  "$D" calibrate "$M/$m.onnx" --data "$IMG/messi5.jpg" "$IMG/fruits.jpg" --mean 0.485,0.456,0.406 \
    --std 0.229,0.224,0.225 --cache "$OUT/$m.cache" > /dev/null
  "$D" build --onnx="$M/$m.onnx" --int8 --calib="$OUT/$m.cache" --saveEngine="$OUT/${m}_b1.int8.dla" > /dev/null
done
/usr/bin/python3 - "$OUT/resnet50_b32.onnx" <<'PY'
import sys, torch, torchvision.models as tvm
torch.manual_seed(0)
torch.onnx.export(tvm.resnet50().eval(), torch.randn(32, 3, 224, 224), sys.argv[1], opset_version=13,
                  input_names=["input"])
PY
"$D" build --onnx="$OUT/resnet50_b32.onnx" --int8 --calib="$OUT/resnet50.cache" \
  --saveEngine="$OUT/resnet50_b32.int8.dla" > /dev/null
rm "$OUT/resnet50_b32.onnx"
ls -la "$OUT"
