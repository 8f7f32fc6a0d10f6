#!/usr/bin/env bash
# Prepares devrun/ for the cuDLA client on the GPU machine: there it takes its CUDA path (device buffers,
# tasks on a CUDA stream) against dlakit's libcudla.so.1, which a CPU-only machine cannot test. Then:
#   cd devrun && bash run_cudla_client.sh
# On a Jetson (NVIDIA's libcudla.so.1, the real DLA) the same client is `dlakit run|bench --backend=cudla`
# on a loadable from `trtexec --buildDLAStandalone` (see the end of run_cudla_client.sh).
set -euo pipefail
BUILD="${1:-build}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
D="$ROOT/devrun"
rm -rf "$D" && mkdir -p "$D/lib" "$D/.cache/models"
cp -L "$ROOT/$BUILD/libcudla.so.1" "$ROOT/$BUILD/tests/libpartial_cudla.so" /lib/x86_64-linux-gnu/libonnx_proto.so.1 \
  /lib/x86_64-linux-gnu/libprotobuf.so.32 /lib/x86_64-linux-gnu/libstb.so.0 "$D/lib/"
cp "$ROOT/$BUILD/dlakit" "$ROOT/$BUILD/tests/dlakit_cudla_client_tests" "$D/"
cp "$ROOT/.cache/models/blazeface_128.onnx" "$D/.cache/models/"
cat > "$D/run_cudla_client.sh" <<'RUN'
#!/usr/bin/env bash
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib DLAKIT_SOURCE_DIR=$PWD
export DLAKIT_CUDLA_LIBRARY=$PWD/lib/libcudla.so.1 DLAKIT_PARTIAL_LIBRARY=$PWD/lib/libpartial_cudla.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
rc=0
./dlakit_cudla_client_tests || rc=1
./dlakit build --onnx=.cache/models/blazeface_128.onnx --saveEngine=face.dla > /dev/null || rc=1
./dlakit run --loadEngine=face.dla --random-inputs -o out_cpu > /dev/null || rc=1
./dlakit run --loadEngine=face.dla --random-inputs -o out_cudla --backend=cudla:$PWD/lib/libcudla.so.1 | tail -1 || rc=1
for f in out_cpu/*.npy; do cmp "$f" "out_cudla/$(basename "$f")" || rc=1; done
./dlakit bench --loadEngine=face.dla --backend=cudla:$PWD/lib/libcudla.so.1 --useDLACore=all --duration 1 || rc=1
# On a Jetson instead: trtexec --onnx=M --buildDLAStandalone --useDLACore=0 --saveEngine=m.dla ... then
#   dlakit bench --loadEngine=m.dla --backend=cudla --useDLACore=all   (NVIDIA's libcudla.so.1)
echo "RUN_CUDLA_CLIENT_RC=$rc"
RUN
echo "devrun/ ready ($(du -sh "$D" | cut -f1))"
