#!/usr/bin/env bash
# Every CLI command fed bad input: prints a Markdown table (command, bad input, exit code, the error's first
# line) for docs/reliability.md, and fails if any case crashes (exit >= 128, e.g. 139 = SIGSEGV) or exits 0.
#   bash tests/cli/bad_inputs.sh build/dlakit > /tmp/table.md
set -uo pipefail
DLAKIT="$1"; ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
M="$ROOT/.cache/models"; IMG="$ROOT/.cache/images"; REG="$ROOT/tests/fuzz/regressions"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
bad=0

# Fixtures: truncated and foreign files, wrong shapes, empty batches.
head -c 300 "$M/squeezenet1_1.onnx" > "$T/trunc.onnx"
test -s "$T/trunc.onnx" || { echo "cannot write the truncated model" >&2; exit 1; }
printf 'not a model' > "$T/text.onnx"
: > "$T/empty.onnx"
# A fixture that is missing would make its cases fail to open the file, which passes for handling them.
/usr/bin/python3 - "$T" <<'PY' || { echo "cannot write the .npy and .jpg fixtures" >&2; exit 1; }
import sys, numpy as np
d = sys.argv[1]
np.save(d + "/batch0.npy", np.zeros((0, 3, 224, 224), np.float32))
np.save(d + "/wrong.npy", np.zeros((1, 3, 10, 10), np.float32))
np.save(d + "/f64.npy", np.zeros((1, 3, 224, 224), np.float64))
h = b"{'descr': '<f4', 'fortran_order': False, 'shape': (17179869184, 1073741824), }"
h += b" " * ((64 - (10 + len(h) + 1) % 64) % 64) + b"\n"
open(d + "/huge.npy", "wb").write(b"\x93NUMPY\x01\x00" + bytes([len(h) & 255, len(h) >> 8]) + h)  # 2^64 elements
open(d + "/bad.jpg", "wb").write(b"\xff\xd8\xff\xe0" + b"\x00" * 40)
PY
"$DLAKIT" build --onnx="$M/resnet18.onnx" --saveEngine="$T/sq.dla" > /dev/null 2>&1 || { echo "cannot build the fixture loadable" >&2; exit 1; }
head -c 2000 "$T/sq.dla" > "$T/trunc.dla"
printf 'DLAK%.0s' {1..20} > "$T/fake.dla"
printf '{"layerPrecisions": 3}' > "$T/ovr_type.json"
printf '{"layerDeviceTypes": "conv:TPU"}' > "$T/ovr_dev.json"
printf 'not json' > "$T/ovr_text.json"
printf 'TRT-8602-EntropyCalibration2\nx 3c010204\n' > "$T/bad.cache"

echo "| command | bad input | exit | error (first line) |"
echo "|---|---|---|---|"
case_() {  # case_ "COMMAND LABEL" "BAD INPUT LABEL" args...
  local label="$1" what="$2"; shift 2
  "$DLAKIT" "$@" > "$T/out.txt" 2>&1
  local rc=$?
  local msg
  # The most specific line: generic summaries and the model's own description are skipped.
  msg=$(grep -v -E "details above|^import failed|^(model|producer|declared inputs|target):|^  [^ ]+ +[a-z0-9]+\[|^ *$" "$T/out.txt" \
        | head -2 | sed 's/^ *//' | awk 'NR == 1 {l = $0; if (l !~ /:$/) {print l; exit}} NR == 2 {print l " " $0}' \
        | cut -c1-190 | sed 's/|/\\|/g; s#'"$T"'/##g; s#'"$ROOT"'/##g')
  echo "| \`$label\` | $what | $rc | $msg |"
  if [ "$rc" -eq 0 ] || [ "$rc" -ge 128 ]; then bad=$((bad + 1)); echo "BAD CASE: $label / $what -> $rc" >&2; fi
}
case_ "info" "empty file" info "$T/empty.onnx"
case_ "info" "text, not ONNX" info "$T/text.onnx"
case_ "info" "truncated ONNX" info "$T/trunc.onnx"
case_ "info" "Conv with no outputs (was SIGSEGV)" info "$REG/fuzz_onnx_import/conv_constant_inputs_no_outputs.onnx"
case_ "info" "dynamic input not pinned" info "$M/ppocr_det.onnx"
case_ "info" "--input-shape of wrong rank" info "$M/ppocr_det.onnx" --input-shape x:1x3x640
case_ "info" "--input-shape naming no input" info "$M/resnet18.onnx" --input-shape nope:1x3x224x224
case_ "info" "--input-shape 2^31 x 3 x 2^31 x 2^31" info "$M/ppocr_det.onnx" --input-shape x:2147483648x3x2147483648x2147483648
case_ "run" "no inputs" run "$M/resnet18.onnx"
case_ "run" ".npy of the wrong shape" run "$M/resnet18.onnx" --input "input=$T/wrong.npy"
case_ "run" ".npy of float64" run "$M/resnet18.onnx" --input "input=$T/f64.npy"
case_ "run" ".npy whose dims wrap to 0" run "$M/resnet18.onnx" --input "input=$T/huge.npy"
case_ "run" "a JPEG header with no image" run "$M/resnet18.onnx" --image "$T/bad.jpg"
case_ "run" "truncated loadable" run --loadEngine="$T/trunc.dla" --random-inputs
case_ "run" "'DLAK' repeated (not a loadable)" run --loadEngine="$T/fake.dla" --random-inputs
case_ "run" "--useDLACore 2" run --loadEngine="$T/sq.dla" --random-inputs --useDLACore 2
case_ "inspect" "--standalone with --fallback" inspect "$M/resnet18.onnx" --standalone --fallback
case_ "inspect" "--layerDeviceTypes without a device" inspect "$M/resnet18.onnx" --layerDeviceTypes conv1
case_ "inspect" "--overrides: not JSON" inspect "$M/resnet18.onnx" --overrides "$T/ovr_text.json"
case_ "inspect" "--overrides: a number where a string goes" inspect "$M/resnet18.onnx" --overrides "$T/ovr_type.json"
case_ "inspect" "--overrides: unknown device" inspect "$M/resnet18.onnx" --overrides "$T/ovr_dev.json"
case_ "inspect" "--explain of an unknown layer" inspect "$M/resnet18.onnx" --explain nope
case_ "split" "truncated ONNX" split "$T/trunc.onnx" -o "$T/split"
case_ "build" "standalone build of a model the DLA cannot run whole (rewrites off: with them PP-OCRv4 det is one DLA graph)" build --onnx="$M/ppocr_det.onnx" --input-shape x:1x3x640x640 --no-adjust-for-dla --saveEngine="$T/x.dla"
case_ "build" "int8 I/O without --int8" build --onnx="$M/mobilenet_v2.onnx" --inputIOFormats=int8:chw32 --saveEngine="$T/x.dla"
case_ "build" "--inputIOFormats=fp32:chw" build --onnx="$M/mobilenet_v2.onnx" --inputIOFormats=fp32:chw --saveEngine="$T/x.dla"
case_ "build" "--int8 without --calib" build --onnx="$M/mobilenet_v2.onnx" --int8 --saveEngine="$T/x.dla"
case_ "bench" "--iterations -1" bench --loadEngine="$T/sq.dla" --iterations -1
case_ "bench" "--streams 0" bench --loadEngine="$T/sq.dla" --streams 0
case_ "bench" "--config=fastest" bench --loadEngine="$T/sq.dla" --config=fastest
case_ "bench" "--config=dla-int8 on an FP16 loadable" bench --loadEngine="$T/sq.dla" --config=dla-int8
case_ "bench" "truncated loadable" bench --loadEngine="$T/trunc.dla"
case_ "calibrate" "--data .npy with batch 0 (was SIGFPE)" calibrate "$M/resnet18.onnx" --data "$T/batch0.npy" --cache "$T/c.cache"
case_ "calibrate" "--data folder without images" calibrate "$M/resnet18.onnx" --data "$ROOT/tests/cli" --cache "$T/c.cache"
case_ "calibrate" "--mean with two values" calibrate "$M/resnet18.onnx" --data "$IMG/fruits.jpg" --mean 0.5,0.5 --cache "$T/c.cache"
case_ "compare" "--int8 with a missing calibration cache" compare "$M/resnet18.onnx" --int8 --calib "$T/missing.cache" --data "$IMG/fruits.jpg"
case_ "compare" "malformed calibration cache" compare "$M/resnet18.onnx" --int8 --calib "$T/bad.cache" --data "$IMG/fruits.jpg"
case_ "qdq-to-cache" "a model without Q/DQ nodes" qdq-to-cache "$M/resnet18.onnx" -o "$T/q.cache"
echo
echo "$bad bad case(s)" >&2
test "$bad" -eq 0
