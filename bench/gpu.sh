#!/usr/bin/env bash
# The emulated DLA on CUDA against PyTorch on the same GPU (issue #14), one command on the GPU machine:
#   bash bench/gpu.sh DLAKIT LOADABLE_DIR OUT.json [NAME:BATCH ...]   (default: resnet18:1 resnet50:1 mobilenet_v2:1)
# LOADABLE_DIR holds NAME_bBATCH.int8.dla (dlakit build --int8 of the torchvision export at that batch);
# `dlakit bench --backend cuda` times each (CUDA device buffers, tasks on a stream), `dlakit bench
# --config=gpu-fp16` times NAME_bBATCH.onnx (the export the loadable came from) in the gpu-fp16 configuration, and
# bench/pytorch_peer.py times the same torchvision architecture and batch in FP16 from a CUDA graph.
set -euo pipefail
D="$1" DIR="$2" OUT_JSON="$3"
shift 3
SPECS=("$@")
[ ${#SPECS[@]} -gt 0 ] || SPECS=(resnet18:1 resnet50:1 mobilenet_v2:1)
HERE="$(cd "$(dirname "$0")" && pwd)"
T="$(mktemp -d)"
for spec in "${SPECS[@]}"; do
  "$D" bench --loadEngine "$DIR/${spec%%:*}_b${spec##*:}.int8.dla" --backend cuda --warmUp 500 --duration 3 --json \
    > "$T/$spec.json"
  "$D" bench --config=gpu-fp16 --onnx "$DIR/${spec%%:*}_b${spec##*:}.onnx" --warmUp 500 --duration 3 --json \
    > "$T/$spec.fp16.json"
done
python3 "$HERE/pytorch_peer.py" "${SPECS[@]}" > "$T/torch.json"
python3 - "$T" "$OUT_JSON" "${SPECS[@]}" <<'PY'
import json, sys, datetime
tmp, out, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
peer = json.load(open(f"{tmp}/torch.json"))
rows = []
for spec in specs:
    d = json.load(open(f"{tmp}/{spec}.json"))
    fp16 = json.load(open(f"{tmp}/{spec}.fp16.json"))
    batch = int(spec.split(":")[1])
    ours, compute = d["latency_ms"]["median"], d["split_ms_mean"]["compute"]
    theirs = peer["models"][spec]["median_ms"]
    # dlakit's latency includes the copy of the (once packed) input from pinned memory and of the output
    # back (split_ms_mean); PyTorch's input stays on the GPU: compute alone is recorded too.
    rows.append({"model": spec.split(":")[0], "batch": batch, "dlakit_dla_int8_cuda_median_ms": ours,
                 "dlakit_compute_mean_ms": compute, "pytorch_fp16_cuda_graph_median_ms": theirs,
                 "ratio": ours / theirs, "ratio_compute": compute / theirs,
                 "dlakit_images_per_s_compute": batch * 1000 / compute,
                 "pytorch_images_per_s": batch * 1000 / theirs, "dlakit_iterations": d["iterations"],
                 # the gpu-fp16 configuration (GpuEngine, FP16 storage) on the ONNX export itself
                 "dlakit_gpu_fp16_median_ms": fp16["latency_ms"]["median"],
                 "dlakit_gpu_fp16_compute_mean_ms": fp16["split_ms_mean"]["compute"],
                 "ratio_gpu_fp16_compute": fp16["split_ms_mean"]["compute"] / theirs})
    print(f"{spec:16s} dlakit DLA-INT8 on CUDA {ours:9.3f} ms (compute {compute:9.3f}), "
          f"PyTorch FP16 + graph {theirs:7.3f} ms: {ours / theirs:6.1f}x ({compute / theirs:6.1f}x compute); "
          f"gpu-fp16 compute {fp16['split_ms_mean']['compute']:9.3f} ms "
          f"({fp16['split_ms_mean']['compute'] / theirs:6.2f}x)")
json.dump({"date": datetime.date.today().isoformat(), "gpu": peer["gpu"], "torch": peer["torch"],
           "rows": rows}, open(out, "w"), indent=1)
PY
