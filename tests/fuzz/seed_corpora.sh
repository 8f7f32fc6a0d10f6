#!/usr/bin/env bash
# Seeds the fuzz corpora (tests/fuzz/corpus/<target>) from real files, keeping only the seeds that add
# coverage (libFuzzer -merge=1). Run once when a target is added or a format changes (e.g. loadable v2):
#   bash tests/fuzz/seed_corpora.sh build-fuzz build
# Sources: ONNX backend-test models (Debian's libonnx-testdata); .npy files written by numpy; loadables
# (program format v2, tests/fuzz/seeds from make_seeds.sh) and hybrid plans built by dlakit from
# backend-test models and seeds/conv_erf_conv.onnx; TensorRT calibration caches
# (tests/fuzz/seeds/calib, /work/shared/data/trt-caches when present); crops of the photos in .cache/images
# saved by PIL in every format stb_image reads; overrides files as `dlakit compare --apply` writes them;
# for the C ABI, call sequences that create, load, register, submit and tear down.
set -euo pipefail
FUZZ_BUILD="$1"; BUILD="$2"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
FUZZ="$ROOT/tests/fuzz"
DLAKIT="$BUILD/dlakit"
S="$(mktemp -d)"
trap 'rm -rf "$S"' EXIT
mkdir -p "$S"/{onnx,npy,loadable,calib,image,plan,overrides,capi}

# ONNX: every backend-test model under 16 KiB whose ops dlakit implements (dlakit info accepts it).
for f in /usr/share/libonnx-testdata/data/{node,simple,pytorch-converted,pytorch-operator}/*/model.onnx; do
  [ "$(stat -c %s "$f")" -le 16384 ] || continue
  "$DLAKIT" info "$f" > /dev/null 2>&1 || continue
  cp "$f" "$S/onnx/$(basename "$(dirname "$f")").onnx"
done

# Loadables (FP16, INT8, int8 I/O) from small backend-test models; the existing seeds too.
cp "$FUZZ/seeds/"*.dla "$S/loadable/"
for t in test_Conv2d_groups test_MaxPool2d test_AvgPool2d test_BatchNorm2d_eval test_PReLU_2d test_ConvTranspose2d; do
  m="/usr/share/libonnx-testdata/data/pytorch-converted/$t/model.onnx"
  [ -f "$m" ] && "$DLAKIT" build --onnx="$m" --saveEngine="$S/loadable/$t.dla" > /dev/null 2>&1 || true
done

# Hybrid plans (FP16 and INT8): Conv, Erf, Conv, Sigmoid (seeds/conv_erf_conv.onnx), whose Erf runs on the
# GPU between two DLA loadables.
/usr/bin/python3 -c "import numpy as np; np.save('$S/x.npy', np.random.default_rng(1).normal(size=(2, 3, 8, 8)).astype(np.float32))"
"$DLAKIT" build --onnx="$FUZZ/seeds/conv_erf_conv.onnx" --allowGPUFallback --saveEngine="$S/plan/gelu_fp16.plan" > /dev/null
"$DLAKIT" calibrate "$FUZZ/seeds/conv_erf_conv.onnx" --int8 --data "$S/x.npy" --cache "$S/gelu.cache" > /dev/null
"$DLAKIT" build --onnx="$FUZZ/seeds/conv_erf_conv.onnx" --int8 --calib="$S/gelu.cache" --allowGPUFallback \
  --saveEngine="$S/plan/gelu_int8.plan" > /dev/null

# Calibration caches written by TensorRT.
cp "$FUZZ/seeds/calib/"*.cache "$S/calib/"
for c in /work/shared/data/trt-caches/*.cache; do [ -f "$c" ] && cp "$c" "$S/calib/"; done

# .npy files written by numpy, and images in every format stb_image reads, cropped from real photos.
/usr/bin/python3 - "$S" "$ROOT/.cache/images/fruits.jpg" <<'PY'
import sys, numpy as np
from PIL import Image
out, photo = sys.argv[1], sys.argv[2]
img = Image.open(photo).convert("RGB")
crop = img.crop((100, 100, 124, 116))
px = np.asarray(crop)
np.save(out + "/npy/pixels_u8.npy", px)
np.save(out + "/npy/nchw_f32.npy", (px.transpose(2, 0, 1)[None] / 255.0).astype(np.float32))
np.save(out + "/npy/f16.npy", px[:4, :4, 0].astype(np.float16))
np.save(out + "/npy/i8.npy", (px[:2, :3, 1].astype(np.int16) - 128).astype(np.int8))
np.save(out + "/npy/i32.npy", np.arange(6, dtype=np.int32).reshape(2, 3))
np.save(out + "/npy/i64.npy", np.arange(5, dtype=np.int64))
np.save(out + "/npy/bool.npy", px[:3, :3, 2] > 128)
np.save(out + "/npy/scalar.npy", np.float32(1.5))
np.save(out + "/npy/empty.npy", np.zeros((0, 3), np.float32))
with open(out + "/npy/v2.npy", "wb") as f:
    np.lib.format.write_array(f, px[:2, :2, 0], version=(2, 0))
for name, fmt, kw in [("a.png", "PNG", {}), ("a.jpg", "JPEG", {"quality": 80}),
                      ("prog.jpg", "JPEG", {"progressive": True}), ("a.bmp", "BMP", {}),
                      ("a.gif", "GIF", {}), ("a.ppm", "PPM", {}), ("a.tga", "TGA", {})]:
    crop.save(out + "/image/" + name, fmt, **kw)
crop.convert("L").save(out + "/image/gray.pgm", "PPM")
crop.convert("RGBA").save(out + "/image/rgba.png", "PNG")
crop.convert("P").save(out + "/image/palette.png", "PNG")
PY

# Overrides files as `dlakit compare --fix --apply` writes them, and the command-line forms.
printf '{"layerDeviceTypes": "", "layerPrecisions": "conv1:fp16,relu1:fp16"}' > "$S/overrides/apply.json"
printf '{"layerDeviceTypes": "pool:GPU,conv*:DLA", "layerPrecisions": "*:int8"}' > "$S/overrides/globs.json"
printf '{"layerPrecisions": "[cr]*:fp16"}' > "$S/overrides/class.json"

# C ABI call sequences (see fuzz_capi.cpp for the byte format).
/usr/bin/python3 - "$S/capi" <<'PY'
import sys
d = sys.argv[1]
# create(core 0), load(seed 0), register in/out, submit null stream, last error, unregister, unload, destroy
seqs = {
  "lifecycle": [0, 0, 0, 2, 0, 0, 4, 0, 0, 0, 64, 4, 0, 1, 0, 64, 6, 0, 0, 0, 0, 9, 0, 5, 0, 0, 5, 0, 1, 3, 0, 1, 0],
  "queued": [0, 1, 0, 2, 0, 1, 4, 0, 0, 0, 64, 4, 0, 1, 0, 64, 6, 0, 1, 0, 0, 6, 0, 1, 0, 0, 10, 0, 1, 0],
  "bad_handles": [3, 200, 4, 200, 0, 0, 0, 6, 200, 0, 0, 0, 9, 200, 1, 0],
}
for name, s in seqs.items():
    open(f"{d}/{name}.bin", "wb").write(bytes(s))
PY

merge() {  # merge TARGET SEED_DIR
  mkdir -p "$FUZZ/corpus/$1"
  "$FUZZ_BUILD/tests/fuzz/$1" -merge=1 -use_counters=0 -max_len=32768 -rss_limit_mb=2048 -timeout=20 "$FUZZ/corpus/$1" "$2" \
    > "$FUZZ_BUILD/seed-$1.log" 2>&1
  echo "$1: $(ls "$FUZZ/corpus/$1" | wc -l) corpus inputs ($(du -sk "$FUZZ/corpus/$1" | cut -f1) KiB)"
}
merge fuzz_onnx_import "$S/onnx"
merge fuzz_npy "$S/npy"
merge fuzz_loadable "$S/loadable"
merge fuzz_module "$S/loadable"
merge fuzz_calib_cache "$S/calib"
merge fuzz_image "$S/image"
merge fuzz_plan "$S/plan"
merge fuzz_overrides "$S/overrides"
merge fuzz_capi "$S/capi"
