#!/usr/bin/env bash
# The emulated DLA on CUDA against PyTorch on the same GPU (issue #14), one command on the GPU machine:
#   bash bench/gpu.sh DLAKIT LOADABLE_DIR OUT.json
# LOADABLE_DIR holds NAME.int8.dla (dlakit build --int8) for resnet18, resnet50 and mobilenet_v2 at batch 1;
# `dlakit bench --backend cuda` times each (CUDA device buffers, tasks on a stream), and
# bench/pytorch_peer.py times the same torchvision architecture in FP16 from a CUDA graph in the same run.
set -euo pipefail
D="$1" DIR="$2" OUT_JSON="$3"
HERE="$(cd "$(dirname "$0")" && pwd)"
MODELS="resnet18 resnet50 mobilenet_v2"
T="$(mktemp -d)"
for m in $MODELS; do
  "$D" bench --loadEngine "$DIR/$m.int8.dla" --backend cuda --warmUp 500 --duration 3 --json > "$T/$m.json"
done
python3 "$HERE/pytorch_peer.py" "$(echo $MODELS | tr ' ' ,)" 1 > "$T/torch.json"
python3 - "$T" "$OUT_JSON" $MODELS <<'PY'
import json, sys, datetime
tmp, out, models = sys.argv[1], sys.argv[2], sys.argv[3:]
peer = json.load(open(f"{tmp}/torch.json"))
rows = []
for m in models:
    d = json.load(open(f"{tmp}/{m}.json"))
    ours, theirs = d["latency_ms"]["median"], peer["models"][m]["median_ms"]
    # dlakit's latency includes the bench's host-side packing of the input and its copy (split_ms_mean);
    # PyTorch's input stays on the GPU: compute alone is recorded too.
    rows.append({"model": m, "batch": 1, "dlakit_dla_int8_cuda_median_ms": ours,
                 "dlakit_compute_mean_ms": d["split_ms_mean"]["compute"],
                 "pytorch_fp16_cuda_graph_median_ms": theirs, "ratio": ours / theirs,
                 "dlakit_iterations": d["iterations"]})
    print(f"{m:14s} batch 1: dlakit DLA-INT8 on CUDA {ours:8.3f} ms, PyTorch FP16 + graph {theirs:6.3f} ms, "
          f"{ours / theirs:6.1f}x")
json.dump({"date": datetime.date.today().isoformat(), "gpu": peer["gpu"], "torch": peer["torch"],
           "rows": rows}, open(out, "w"), indent=1)
PY
