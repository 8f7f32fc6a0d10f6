#!/usr/bin/env bash
# Device time per CUDA kernel of one inference of an INT8 loadable on the emulated DLA on CUDA (ncu, one
# pass, clocks as they are), summed by kernel name: where the time goes, against the memory and compute
# floors. One command on the GPU machine:
#   bash bench/ncu_kernels.sh DLAKIT LOADABLE OUT_DIR   (writes OUT_DIR/ncu.csv and OUT_DIR/ncu_summary.txt)
set -euo pipefail
D="$1" LOADABLE="$2" OUT_DIR="$3"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
"$NCU" --clock-control none --metrics gpu__time_duration.sum --csv --launch-skip 0 --launch-count 2000 \
  "$D" bench --loadEngine "$LOADABLE" --backend cuda --warmUp 0 --iterations 1 --duration 0 > "$OUT_DIR/ncu.csv"
python3 - "$OUT_DIR/ncu.csv" <<'PY' | tee "$OUT_DIR/ncu_summary.txt"
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
