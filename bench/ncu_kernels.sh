#!/usr/bin/env bash
# Device time per CUDA kernel of one inference on the GPU (ncu, one pass, clocks as they are), summed by
# kernel name: where the time goes, against the memory and compute floors. MODEL is an INT8 loadable (the
# emulated DLA on CUDA) or an ONNX model (the gpu-fp16 configuration). One command on the GPU machine:
#   bash bench/ncu_kernels.sh DLAKIT MODEL OUT_DIR   (writes OUT_DIR/ncu_<MODEL's name>.csv and .txt)
set -euo pipefail
D="$1" MODEL="$2" OUT_DIR="$3"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
NAME="$(basename "$MODEL")"
case "$MODEL" in
  *.onnx) RUN=(--config=gpu-fp16 --onnx "$MODEL") ;;
  *) RUN=(--loadEngine "$MODEL" --backend cuda) ;;
esac
"$NCU" --clock-control none --metrics gpu__time_duration.sum --csv --launch-skip 0 --launch-count 2000 \
  "$D" bench "${RUN[@]}" --warmUp 0 --iterations 1 --duration 0 > "$OUT_DIR/ncu_$NAME.csv"
python3 - "$OUT_DIR/ncu_$NAME.csv" <<'PY' | tee "$OUT_DIR/ncu_$NAME.txt"
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head, rows = rows[0], rows[1:]
ki, mi, vi, ui = (head.index(k) for k in ("Kernel Name", "Metric Name", "Metric Value", "Metric Unit"))
total, count = collections.defaultdict(float), collections.Counter()
for r in rows:
    if r[mi] != "gpu__time_duration.sum":
        continue
    name = r[ki].split("(")[0][:70]
    total[name] += float(r[vi].replace(",", ""))
    count[name] += 1
print("unit", rows[0][ui] if rows else "?", "kernels", sum(count.values()))
for name, t in sorted(total.items(), key=lambda x: -x[1])[:30]:
    print(f"{t:14.1f} {count[name]:5d}  {name}")
PY
