#!/usr/bin/env bash
# Prepares devrun/ for the CUDA backend's tests on the GPU machine (which lacks Debian's ONNX/protobuf
# libraries and the model cache, so they travel along). Then, on the device:
#   cd devrun && bash run_gpu.sh
set -euo pipefail
BUILD="${1:-build}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
D="$ROOT/devrun"
rm -rf "$D" && mkdir -p "$D/lib" "$D/.cache/models" "$D/.cache/images" "$D/tests/gpu"
cp -L "$ROOT/$BUILD/libcudla.so.1" /lib/x86_64-linux-gnu/libonnx_proto.so.1 /lib/x86_64-linux-gnu/libprotobuf.so.32 /lib/x86_64-linux-gnu/libstb.so.0 "$D/lib/"
cp "$ROOT/$BUILD/dlakit" "$ROOT/$BUILD/tests/dlakit_gpu_tests" "$ROOT/$BUILD/tests/cuda_stream_steps" "$D/"
for m in mobilenet_v2 squeezenet1_1 ppocr_det; do cp "$ROOT/.cache/models/$m.onnx" "$D/.cache/models/"; done
cp "$ROOT/.cache/images/messi5.jpg" "$ROOT/.cache/images/fruits.jpg" "$D/.cache/images/"
cp "$ROOT/tests/gpu/cuda_stream_test.sh" "$D/tests/gpu/"
cp "$ROOT/tests/device/bench_configs.sh" "$D/"
cat > "$D/run_gpu.sh" <<'RUN'
#!/usr/bin/env bash
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib DLAKIT_SOURCE_DIR=$PWD DLAKIT_REQUIRE_GPU=1  # a missing GPU fails, never skips
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
rc=0
./dlakit_gpu_tests || rc=1
bash tests/gpu/cuda_stream_test.sh ./dlakit ./cuda_stream_steps "$PWD" || rc=1
bash bench_configs.sh || rc=1
echo "RUN_GPU_RC=$rc"
RUN
echo "devrun/ ready ($(du -sh "$D" | cut -f1))"
