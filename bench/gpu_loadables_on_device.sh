#!/usr/bin/env bash
# The INT8 loadables bench/gpu.sh times, made on the GPU machine itself, so that one call carries no
# loadable (a ResNet-50 one is 25 MB; a call carries at most 64 MiB):
#   bash bench/gpu_loadables_on_device.sh DLAKIT IMAGE_DIR OUT_DIR NAME:BATCH ...
# For each NAME (a torchvision architecture with seeded random weights: timing does not depend on them),
# python3 (torch) exports it to ONNX at batch 1 and at every BATCH asked for,
# `dlakit calibrate` calibrates the batch-1 export on two photos of IMAGE_DIR (enough for timing), and
# `dlakit build --int8` builds NAME_bBATCH.int8.dla from each export with that cache (the exports name
# their tensors alike whatever the batch). The exports NAME_bBATCH.onnx stay: bench/gpu.sh times them in the
# gpu-fp16 configuration.
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 DLAKIT IMAGE_DIR OUT_DIR NAME:BATCH ..." >&2; exit 2; }
D="$1" IMG="$2" OUT="$3"
shift 3
for spec in "$@"; do
  [[ "$spec" =~ ^[a-z0-9_]+:[0-9]+$ ]] || { echo "$0: '$spec' is not NAME:BATCH" >&2; exit 2; }
done
mkdir -p "$OUT"
declare -A batches
for spec in "$@"; do batches[${spec%%:*}]+=" ${spec##*:}"; done
for m in "${!batches[@]}"; do
  python3 - "$m" "$OUT" 1 ${batches[$m]} <<'PY'
import sys, warnings, torch, torchvision
name, out, sizes = sys.argv[1], sys.argv[2], sorted(set(int(b) for b in sys.argv[3:]))
warnings.filterwarnings("ignore")
torch.manual_seed(0)
model = getattr(torchvision.models, name)(weights=None).eval()
for b in sizes:
    x = torch.randn(b, 3, 224, 224)
    path = f"{out}/{name}_b{b}.onnx"
    try:  # the TorchScript exporter where this torch still has it, else the default one
        torch.onnx.export(model, x, path, opset_version=13, input_names=["input"], dynamo=False)
    except Exception as e:
        print(f"{name} b{b}: TorchScript export failed ({e}); using the default exporter", file=sys.stderr)
        torch.onnx.export(model, x, path, input_names=["input"])
PY
  "$D" calibrate "$OUT/${m}_b1.onnx" --data "$IMG/messi5.jpg" "$IMG/fruits.jpg" --mean 0.485,0.456,0.406 \
    --std 0.229,0.224,0.225 --cache "$OUT/$m.cache" > /dev/null
  for b in ${batches[$m]}; do
    "$D" build --onnx="$OUT/${m}_b$b.onnx" --int8 --calib="$OUT/$m.cache" --saveEngine="$OUT/${m}_b$b.int8.dla" \
      > /dev/null
  done
done
ls -la "$OUT"
