#!/usr/bin/env bash
# The four configurations of `dlakit bench` (and the CPU vs CUDA backends) on MobileNetV2, for the GPU
# machine: cd devrun && LD_LIBRARY_PATH=$PWD/lib bash bench_configs.sh
set -euo pipefail
D=./dlakit M=.cache/models/mobilenet_v2.onnx T="$(mktemp -d)"
$D calibrate $M --data .cache/images/messi5.jpg .cache/images/fruits.jpg --mean 0.485,0.456,0.406 \
  --std 0.229,0.224,0.225 --cache $T/c.cache >/dev/null
$D build --onnx=$M --int8 --calib=$T/c.cache --saveEngine=$T/int8.dla >/dev/null
$D build --onnx=$M --saveEngine=$T/fp16.dla >/dev/null
run() { echo "== dlakit bench $*"; $D bench "$@" --duration 2 --warmUp 300 | grep -v "^note"; }
run --config=gpu-fp16 --onnx=$M
run --config=gpu-int8 --onnx=$M --calib=$T/c.cache
for b in cpu cuda; do
  run --config=dla-int8 --loadEngine=$T/int8.dla --backend=$b
  run --config=dla-int8-2cores --loadEngine=$T/int8.dla --backend=$b
  run --loadEngine=$T/fp16.dla --backend=$b
done
