#!/usr/bin/env bash
# Two dlakit builds on the same GPU, interleaved, so that a kernel change is measured against the build before
# it in the same minutes (clocks and neighbours drift between calls). One command on the GPU machine:
#   bash bench/gpu_ab.sh BASE NEW LOADABLE_DIR OUT.json ROUNDS [NAME:BATCH ...]   (default: resnet50:32)
# LOADABLE_DIR as for bench/gpu.sh (NAME_bBATCH.int8.dla and NAME_bBATCH.onnx, from gpu_loadables_on_device.sh).
# Each round times, for every spec, the INT8 loadable (`bench --backend cuda`) and the gpu-fp16 configuration
# (`bench --config=gpu-fp16`) with both builds, base first in odd rounds and new first in even ones.
# OUT.json: the GPU, the two binaries' checksums, every run's compute mean and latency median.
set -euo pipefail
BASE="$1" NEW="$2" DIR="$3" OUT_JSON="$4" ROUNDS="$5"
shift 5
SPECS=("$@")
[ ${#SPECS[@]} -gt 0 ] || SPECS=(resnet50:32)
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
nvidia-smi --query-gpu=name --format=csv,noheader > "$T/gpu.txt"
sha256sum "$BASE" "$NEW" > "$T/builds.txt"
for round in $(seq 1 "$ROUNDS"); do
  order="base new"
  [ $((round % 2)) -eq 0 ] && order="new base"
  for spec in "${SPECS[@]}"; do
    stem="$DIR/${spec%%:*}_b${spec##*:}"
    for build in $order; do
      D="$BASE"
      [ "$build" = new ] && D="$NEW"
      "$D" bench --loadEngine "$stem.int8.dla" --backend cuda --warmUp 500 --duration 3 --json \
        > "$T/$round.$spec.$build.int8.json"
      "$D" bench --config=gpu-fp16 --onnx "$stem.onnx" --warmUp 500 --duration 3 --json \
        > "$T/$round.$spec.$build.fp16.json"
    done
  done
done
python3 - "$T" "$OUT_JSON" "$ROUNDS" "${SPECS[@]}" <<'PY'
import json, sys, datetime
tmp, out, rounds, specs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
gpu = open(f"{tmp}/gpu.txt").read().strip()
builds = dict(zip(("base", "new"), (line.split()[0] for line in open(f"{tmp}/builds.txt"))))
runs = []
for r in range(1, rounds + 1):
    for spec in specs:
        for build in ("base", "new"):
            for config in ("int8", "fp16"):
                d = json.load(open(f"{tmp}/{r}.{spec}.{build}.{config}.json"))
                runs.append({"round": r, "spec": spec, "build": build,
                             "config": "dla-int8-cuda" if config == "int8" else "gpu-fp16",
                             "compute_mean_ms": d["split_ms_mean"]["compute"],
                             "latency_median_ms": d["latency_ms"]["median"]})
for spec in specs:
    for config in ("dla-int8-cuda", "gpu-fp16"):
        cells = {b: [x["compute_mean_ms"] for x in runs if x["spec"] == spec and x["config"] == config
                     and x["build"] == b] for b in ("base", "new")}
        print(f"{spec:14s} {config:14s} compute base " + " / ".join(f"{v:.3f}" for v in cells["base"]) +
              " ms, new " + " / ".join(f"{v:.3f}" for v in cells["new"]) + " ms")
json.dump({"date": datetime.date.today().isoformat(), "gpu": gpu, "sha256": builds, "runs": runs},
          open(out, "w"), indent=1)
PY
