#!/usr/bin/env bash
# Prepares devrun/ (git-ignored) for one call on the GPU machine, which lacks Debian's ONNX/protobuf
# libraries and the model cache, so they travel along: the CUDA tests (DLAKIT_REQUIRE_GPU=1: no skip
# passes), the cuDLA stream program, NVIDIA's unmodified cuda.bindings.cudla on an FP16 and an INT8
# loadable (expected bytes from the plain C client here), and the bench configurations. On the device:
#   cd devrun && bash run_gpu.sh   (every step's exit status counts; logs in $OUT when set)
set -euo pipefail
BUILD="${1:-build}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
D="$ROOT/devrun"
rm -rf "$D" && mkdir -p "$D/lib" "$D/.cache/models" "$D/.cache/images" "$D/tests/gpu" "$D/bindings/fp16" "$D/bindings/int8"
cp -L "$ROOT/$BUILD/libcudla.so.1" /lib/x86_64-linux-gnu/libonnx_proto.so.1 /lib/x86_64-linux-gnu/libprotobuf.so.32 /lib/x86_64-linux-gnu/libstb.so.0 /lib/x86_64-linux-gnu/libjpeg.so.62 "$D/lib/"
cp "$ROOT/$BUILD/dlakit" "$ROOT/$BUILD/tests/dlakit_gpu_tests" "$ROOT/$BUILD/tests/cuda_stream_steps" \
  "$ROOT/$BUILD/tests/cudla_hybrid_steps" "$D/"
for m in mobilenet_v2 mobilenet_v3_small squeezenet1_1 ppocr_det ppocr_cls blazeface_128 mlsd_tiny_320; do
  cp "$ROOT/.cache/models/$m.onnx" "$D/.cache/models/"
done
cp "$ROOT/.cache/images/messi5.jpg" "$ROOT/.cache/images/fruits.jpg" "$ROOT/.cache/images/scenetext01.jpg" "$D/.cache/images/"
cp "$ROOT/tests/gpu/cuda_stream_test.sh" "$D/tests/gpu/"
cp "$ROOT/tests/device/bench_configs.sh" "$ROOT/tests/device/run_bindings.py" "$D/"
# cuda.bindings.cudla inputs: a MobileNetV2 loadable per precision and the C client's output for it.
M="$ROOT/.cache/models/mobilenet_v2.onnx"
"$ROOT/$BUILD/dlakit" build --onnx="$M" --saveEngine="$D/bindings/fp16/model.dla" > /dev/null
"$ROOT/$BUILD/dlakit" calibrate "$M" --data "$ROOT/.cache/images/messi5.jpg" "$ROOT/.cache/images/fruits.jpg" \
  --mean 0.485,0.456,0.406 --std 0.229,0.224,0.225 --cache "$D/bindings/int8/model.cache" > /dev/null
"$ROOT/$BUILD/dlakit" build --onnx="$M" --int8 --calib="$D/bindings/int8/model.cache" \
  --saveEngine="$D/bindings/int8/model.dla" > /dev/null
for p in fp16 int8; do
  /usr/bin/python3 - "$D/bindings/$p/in.bin" <<'PY'
import sys, numpy as np
x = np.random.RandomState(7).randn(1, 3, 224, 224).astype(np.float16)
buf = np.zeros((1, 1, 224, 224, 16), np.float16)  # chw16: channels padded to 16, innermost
buf[0, 0, :, :, :3] = x[0].transpose(1, 2, 0)
buf.tofile(sys.argv[1])
PY
  "$ROOT/$BUILD/tests/cudla_hybrid_steps" "$D/bindings/$p/model.dla" "$D/bindings/$p/in.bin" \
    "$D/bindings/$p/expected_out.bin" 0 > /dev/null
  cp "$ROOT/tests/device/run_bindings.py" "$D/bindings/$p/"
  cp "$D/bindings/$p/expected_out.bin" "$D/bindings/$p/dev_out.bin"
  # The device rebuilds the loadable (to fit the 64 MiB a call carries) and checks it is this one, byte for byte.
  (cd "$D/bindings/$p" && sha256sum model.dla > model.sha256 && rm model.dla)
done
cat > "$D/run_gpu.sh" <<'RUN'
#!/usr/bin/env bash
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib DLAKIT_SOURCE_DIR=$PWD DLAKIT_REQUIRE_GPU=1  # a missing GPU fails, never skips
LOG="${OUT:-/tmp}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
rc=0
step() { local name="$1"; shift; echo "== $name"; "$@" > "$LOG/$name.log" 2>&1; local r=$?; tail -25 "$LOG/$name.log"; echo "== $name: exit $r"; [ $r -eq 0 ] || rc=1; }
step gpu_tests ./dlakit_gpu_tests
# The implicit-GEMM INT8 convolution (gpu/conv_atoms_mma.h) is the default; every GPU test again with it off
# keeps im2col + cuBLASLt (the path of the layers it does not take) checked on every real model too.
step gpu_tests_cublaslt env DLAKIT_CUDA_IMPLICIT_GEMM=0 ./dlakit_gpu_tests
step stream bash tests/gpu/cuda_stream_test.sh ./dlakit ./cuda_stream_steps "$PWD"
M=.cache/models/mobilenet_v2.onnx
step build_fp16 ./dlakit build --onnx=$M --saveEngine=bindings/fp16/model.dla
step build_int8 ./dlakit build --onnx=$M --int8 --calib=bindings/int8/model.cache --saveEngine=bindings/int8/model.dla
step same_bytes_fp16 bash -c "cd bindings/fp16 && sha256sum -c model.sha256"
step same_bytes_int8 bash -c "cd bindings/int8 && sha256sum -c model.sha256"
# INT8: the binding's bytes must equal the C client's on this machine's CPU executor (with the GPU hidden
# the client runs as on a machine without one: host buffers, the CPU executor), and those the development
# machine's: every layer of the INT8 MobileNetV2 is exact integer or element-wise arithmetic, so another
# CPU's SIMD kernels (this machine's) give the same bytes.
step client_int8 env CUDA_VISIBLE_DEVICES= ./cudla_hybrid_steps bindings/int8/model.dla bindings/int8/in.bin bindings/int8/expected_out.bin 0
step client_int8_as_on_dev cmp bindings/int8/expected_out.bin bindings/int8/dev_out.bin
step bindings_fp16 python3 bindings/fp16/run_bindings.py
step bindings_int8 python3 bindings/int8/run_bindings.py
step bench bash bench_configs.sh
echo "RUN_GPU_RC=$rc"
exit $rc
RUN
echo "devrun/ ready ($(du -sh "$D" | cut -f1))"
