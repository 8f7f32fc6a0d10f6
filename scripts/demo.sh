#!/usr/bin/env bash
# make demo: PP-OCRv4 text detection (a real pretrained model) on a real photo, end to end.
set -euo pipefail
BUILD="${1:-build}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DLAKIT="$ROOT/$BUILD/dlakit"
OUT="$ROOT/out/demo"
mkdir -p "$OUT"
MODEL="$ROOT/.cache/models/ppocr_det.onnx"
PHOTO="$ROOT/.cache/images/scenetext01.jpg"
echo "== dlakit info (what the model is)"
"$DLAKIT" info "$MODEL" --input-shape x:1x3x640x640
echo
echo "== dlakit run (reference engine on a real photo, heat map of text probability)"
"$DLAKIT" run "$MODEL" --image "$PHOTO" --size 640x640 --mean 0.485,0.456,0.406 --std 0.229,0.224,0.225 \
  --overlay "$OUT/scenetext01_text_heatmap.png" --output-dir "$OUT" --warmUp 1 --iterations 3
echo
echo "== dlakit inspect (can the Orin DLA run it? every reason, segments, recommendation)"
"$DLAKIT" inspect "$MODEL" --input-shape x:1x3x640x640 --target orin > "$OUT/placement.txt" || true
# With the DLA rewrites (adjust-for-dla, on by default) det is one DLA graph: no GPU layers to show.
grep -E -A3 "GPU +fp32" "$OUT/placement.txt" | head -12 || echo "(no GPU layers: every layer runs on the DLA)"
sed -n '/^summary/,/^DLA programs/p' "$OUT/placement.txt"
grep -A2 "^DLA programs" "$OUT/placement.txt" | tail -2
echo "(full report: $OUT/placement.txt)"
echo
echo "== dlakit build + run through the runtime: BlazeFace (real pretrained face detector) as an FP16 DLA loadable"
FACE="$ROOT/.cache/models/blazeface_128.onnx"
"$DLAKIT" build --onnx="$FACE" --saveEngine="$OUT/blazeface.dla" --fp16 --inputIOFormats=fp16:chw16 --outputIOFormats=fp16:chw16
PRE="--image $ROOT/.cache/images/messi5.jpg --size 128x128 --nhwc --mean 0.5,0.5,0.5 --std 0.5,0.5,0.5"
"$DLAKIT" run --loadEngine="$OUT/blazeface.dla" $PRE --output-dir "$OUT/dla" --json > "$OUT/dla.json"
"$DLAKIT" run "$FACE" $PRE --output-dir "$OUT/ref" --json > "$OUT/ref.json"
/usr/bin/python3 - "$OUT" <<'PY'
import json, sys, numpy as np
out = sys.argv[1]
dla, ref = json.load(open(out + "/dla.json")), json.load(open(out + "/ref.json"))
for o in ref["outputs"]:
    a = np.load(out + "/dla/" + o["file"].split("/")[-1]).ravel().astype(np.float64)
    b = np.load(o["file"]).ravel().astype(np.float64)
    cos = a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30)
    print(f"  {o['name']:14s} emulated DLA (FP16) vs FP32 reference: cosine {cos:.6f}, max |diff| {np.abs(a - b).max():.4f}")
s = np.concatenate([np.load(out + "/dla/Identity_0.npy").ravel(), np.load(out + "/dla/Identity_1_0.npy").ravel()])
print(f"  best face score on messi5.jpg (DLA): sigmoid {1 / (1 + np.exp(-s.max())):.3f}")
print(f"  latency: emulated DLA {dla['latency_ms']['mean']:.1f} ms, reference engine {ref['latency_ms']['mean']:.1f} ms (CPU; not DLA hardware)")
PY
echo
echo "== INT8: calibrate PP-OCRv4 det (TensorRT cache), then compare the emulated DLA INT8 with FP32 per layer"
DET=(--input-shape x:1x3x640x640 --mean 0.485,0.456,0.406 --std 0.229,0.224,0.225)
"$DLAKIT" calibrate "$MODEL" "${DET[@]}" --data "$ROOT/.cache/images/pages_calib" "$ROOT/.cache/images/messi5.jpg" \
  "$ROOT/.cache/images/fruits.jpg" --calib-algo mse --cache "$OUT/det.cache"
"$DLAKIT" compare "$MODEL" "${DET[@]}" --int8 --calib "$OUT/det.cache" --data "$PHOTO" --top 8 \
  --html "$OUT/det_int8.html" | sed -n '/before /,$p'
echo
echo "Open $OUT/scenetext01_text_heatmap.png to see where the model found text, and $OUT/det_int8.html for"
echo "the INT8 error per layer (docs/int8.md explains it; docs/accuracy.md has the measured accuracy)."
