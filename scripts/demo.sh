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
grep -E -A3 "GPU +fp32" "$OUT/placement.txt" | head -12
sed -n '/^summary/,$p' "$OUT/placement.txt"
echo "(full report: $OUT/placement.txt)"
echo
echo "Open $OUT/scenetext01_text_heatmap.png to see where the model found text."
