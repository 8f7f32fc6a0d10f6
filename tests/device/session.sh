#!/usr/bin/env bash
# One whole device call for issue #14: the device suite, then the GPU benchmarks with the implicit GEMM (the
# default) and without it (DLAKIT_CUDA_IMPLICIT_GEMM=0: im2col + cuBLASLt), then ncu's kernel times at
# ResNet-50 batch 32 both ways (the INT8 loadable and the gpu-fp16 configuration). Here (the development machine), after a build:
#   bash tests/device/session.sh pack [BUILD]   -> devpack/devrun.tar.xz (git-ignored; pass it as carry)
# On the device, from the repository root (every step's exit status counts; results under $OUT):
#   bash tests/device/session.sh run [suite|bench]   (default both; one call may not fit both in its limit)
#   bash tests/device/session.sh run "suite ab"      (instead of bench: bench/gpu.sh, then the A/B of the new
#     build against devpack/dlakit_base.xz; e.g. SPECS="resnet50:32 resnet50:256" for a short call)
#   ONLY_ON=H200 bash tests/device/session.sh run ...  (runs nothing, exit 0, on a GPU whose name lacks H200:
#     the targets are stated on one, and a call cannot choose the card it gets)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SPECS="${SPECS:-resnet18:1 mobilenet_v2:1 resnet50:1 resnet50:32 resnet50:256}"
case "${1:-}" in
  pack)
    set -e
    BUILD="${2:-build}"
    cd "$ROOT" && rm -rf devrun devpack
    bash tests/device/prepare_gpu_run.sh "$BUILD" > /dev/null
    strip --strip-unneeded devrun/dlakit devrun/dlakit_gpu_tests devrun/cuda_stream_steps devrun/cudla_hybrid_steps \
      devrun/lib/libcudla.so.1
    mkdir devpack && tar cf - devrun | xz -6 -T2 > devpack/devrun.tar.xz
    ls -la devpack
    ;;
  run)
    cd "$ROOT"
    : "${OUT:?set OUT to the results folder}"
    gpu_name="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
    echo "GPU: $gpu_name"
    if [[ -n ${ONLY_ON:-} && $gpu_name != *"$ONLY_ON"* ]]; then
      echo "not an $ONLY_ON: nothing run"
      exit 0
    fi
    parts="${2:-suite bench}"
    rc=0
    rm -rf devrun && tar xJf devpack/devrun.tar.xz || exit 9  # a warm machine may keep an older devrun/
    mkdir -p "$OUT/suite" /tmp/ld
    if [[ $parts == *suite* ]]; then
      (cd devrun && OUT="$OUT/suite" bash run_gpu.sh) > "$OUT/suite.txt" 2>&1 || rc=1
      grep -E "^== .*exit|RUN_GPU_RC" "$OUT/suite.txt"
      grep -h -E "tests passed|FAILED|PASSED" "$OUT/suite/gpu_tests.log" "$OUT/suite/gpu_tests_cublaslt.log" | head -30
      # The two test logs as they are, the other logs in one archive: the tool returns a limited count of files.
      cp "$OUT"/suite/gpu_tests*.log "$OUT"/ && tar cJf "$OUT/suite_logs.tar.xz" -C "$OUT" suite && rm -rf "$OUT/suite" ||
        rc=1
    fi
    if [[ $parts != *bench* && $parts != *ab* ]]; then
      echo "SESSION_RC=$rc"
      exit $rc
    fi
    export LD_LIBRARY_PATH="$PWD/devrun/lib"
    D="$PWD/devrun/dlakit"
    # shellcheck disable=SC2086  # SPECS is a list
    bash bench/gpu_loadables_on_device.sh "$D" devrun/.cache/images /tmp/ld $SPECS > "$OUT/loadables.txt" 2>&1 || rc=1
    if [[ $parts == *ab* ]]; then
      # bench/gpu.sh on the new build (PyTorch beside it), then the new build against the base one
      # (devpack/dlakit_base.xz: a stripped, xz'd dlakit of the commit before) interleaved.
      xz -dc devpack/dlakit_base.xz > /tmp/dlakit_base || exit 9
      chmod +x /tmp/dlakit_base
      # shellcheck disable=SC2086
      bash bench/gpu.sh "$D" /tmp/ld "$OUT/gpu.json" $SPECS > "$OUT/gpu.txt" 2>&1 || rc=1
      tail -8 "$OUT/gpu.txt"
      # shellcheck disable=SC2086  # AB_SPECS is a list
      bash bench/gpu_ab.sh /tmp/dlakit_base "$D" /tmp/ld "$OUT/ab.json" 2 ${AB_SPECS:-resnet50:32} > "$OUT/ab.txt" 2>&1 ||
        rc=1
      cat "$OUT/ab.txt"
      echo "SESSION_RC=$rc"
      exit $rc
    fi
    for mode in cublaslt implicit; do
      flag=1
      [ "$mode" = cublaslt ] && flag=0
      mkdir -p "$OUT/$mode"
      # shellcheck disable=SC2086
      DLAKIT_CUDA_IMPLICIT_GEMM=$flag bash bench/gpu.sh "$D" /tmp/ld "$OUT/$mode/gpu.json" $SPECS \
        > "$OUT/$mode/gpu.txt" 2>&1 || rc=1
      tail -12 "$OUT/$mode/gpu.txt"
      DLAKIT_CUDA_IMPLICIT_GEMM=$flag bash bench/ncu_kernels.sh "$D" /tmp/ld/resnet50_b32.int8.dla "$OUT/$mode" \
        > /dev/null 2>&1 || rc=1
      head -12 "$OUT/$mode/ncu_resnet50_b32.int8.dla.txt"
      DLAKIT_CUDA_IMPLICIT_GEMM=$flag bash bench/ncu_kernels.sh "$D" /tmp/ld/resnet50_b32.onnx "$OUT/$mode" \
        > /dev/null 2>&1 || rc=1
      head -12 "$OUT/$mode/ncu_resnet50_b32.onnx.txt"
    done
    nvidia-smi --query-gpu=name,clocks.max.sm --format=csv
    echo "SESSION_RC=$rc"
    exit $rc
    ;;
  *)
    echo "usage: $0 pack [BUILD] | run" >&2
    exit 2
    ;;
esac
