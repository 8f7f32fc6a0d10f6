#!/usr/bin/env bash
# Runs each fuzzer from a seed corpus of real files (small ONNX backend-test models, .npy, loadables).
# SECONDS = "ci" (what make test uses): a deterministic smoke run (fixed seed and run counts, fresh corpus),
# so a landing never depends on luck; a number: that many seconds per target with random seeds (real fuzzing).
set -euo pipefail
BUILD="$1"; SECONDS_EACH="${2:-60}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CORPUS="$BUILD/fuzz-corpus"
rm -rf "$CORPUS"
mkdir -p "$CORPUS/onnx" "$CORPUS/npy"
if [ "$SECONDS_EACH" = ci ]; then
  LIMIT_ONNX=(-seed=1 -runs=300000); LIMIT_NPY=(-seed=1 -runs=1000000); LIMIT_LOADABLE=(-seed=1 -runs=100000); LIMIT_CALIB=(-seed=1 -runs=300000)
else
  LIMIT_ONNX=(-max_total_time="$SECONDS_EACH"); LIMIT_NPY=("${LIMIT_ONNX[@]}"); LIMIT_LOADABLE=("${LIMIT_ONNX[@]}"); LIMIT_CALIB=("${LIMIT_ONNX[@]}")
fi
for c in test_conv_with_strides_padding test_resize_upsample_scales_linear test_reshape_negative_dim test_slice \
         test_maxpool_2d_pads test_gemm_all_attributes test_concat_2d_axis_0 test_pad_reflect_pad; do
  cp "/usr/share/libonnx-testdata/data/node/$c/model.onnx" "$CORPUS/onnx/$c.onnx" 2>/dev/null || true
done
/usr/bin/python3 - "$CORPUS/npy" <<'PY'
import sys, numpy as np
d = sys.argv[1]
np.save(d + "/f32.npy", np.arange(12, dtype=np.float32).reshape(3, 4))
np.save(d + "/i64.npy", np.arange(5, dtype=np.int64))
np.save(d + "/u8.npy", np.zeros((2, 2, 3), dtype=np.uint8))
np.save(d + "/scalar.npy", np.float32(1.5))
PY
# Regression inputs (crashes found before) run first; new crashes are kept in $BUILD/fuzz-artifacts/.
mkdir -p "$BUILD/fuzz-artifacts"
run() {
  local name="$1"; shift
  if ! "$BUILD/tests/fuzz/$name" -artifact_prefix="$BUILD/fuzz-artifacts/" "$@" > "$BUILD/$name.log" 2>&1; then
    grep -v '^#' "$BUILD/$name.log" | tail -40
    echo "fuzz: $name FAILED; the input is in $BUILD/fuzz-artifacts/"
    exit 1
  fi
  grep -E '^Done|^#[0-9]+ *DONE' "$BUILD/$name.log" | tail -1
}
run fuzz_onnx_import -runs=0 "$ROOT/tests/fuzz/regressions/onnx"
run fuzz_onnx_import "${LIMIT_ONNX[@]}" -rss_limit_mb=2048 -max_len=65536 "$CORPUS/onnx"
run fuzz_npy -runs=0 "$ROOT/tests/fuzz/regressions/npy"
run fuzz_npy "${LIMIT_NPY[@]}" -rss_limit_mb=2048 "$CORPUS/npy"
mkdir -p "$CORPUS/loadable" && cp "$ROOT/tests/fuzz/seeds/"*.dla "$CORPUS/loadable/"
run fuzz_loadable -runs=0 "$ROOT/tests/fuzz/regressions/loadable"
run fuzz_loadable "${LIMIT_LOADABLE[@]}" -rss_limit_mb=2048 "$CORPUS/loadable"
mkdir -p "$CORPUS/calib" && cp "$ROOT/tests/fuzz/seeds/calib/"*.cache "$CORPUS/calib/"
run fuzz_calib_cache "${LIMIT_CALIB[@]}" -rss_limit_mb=2048 -max_len=4096 "$CORPUS/calib"
echo "fuzz: all four targets ran (${SECONDS_EACH}) without a crash"
