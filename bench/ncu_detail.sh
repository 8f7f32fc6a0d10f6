#!/usr/bin/env bash
# Where one kind of CUDA kernel loses its time: ncu's detail sections (speed of light, occupancy, warp state,
# scheduler, workload, instruction counts) for every launch whose name matches KERNEL_REGEX in one
# inference of MODEL (an ONNX model: the gpu-fp16 configuration; else an INT8 loadable), then a table with
# a row a launch. Each launch is replayed about 20 times: keep the model small or the batch modest. One
# command on the GPU machine:
#   bash bench/ncu_detail.sh DLAKIT MODEL KERNEL_REGEX OUT_DIR   (writes OUT_DIR/ncu_detail.txt and .table)
set -euo pipefail
[ $# -eq 4 ] || { echo "usage: $0 DLAKIT MODEL KERNEL_REGEX OUT_DIR" >&2; exit 2; }
D="$1" MODEL="$2" KERNELS="$3" OUT_DIR="$4"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
case "$MODEL" in
  *.onnx) RUN=(--config=gpu-fp16 --onnx "$MODEL") ;;
  *) RUN=(--loadEngine "$MODEL" --backend cuda) ;;
esac
sections=()
for s in SpeedOfLight Occupancy WarpStateStats SchedulerStats ComputeWorkloadAnalysis MemoryWorkloadAnalysis \
  LaunchStats InstructionStats; do
  sections+=(--section "$s")
done
"$NCU" --clock-control none --kernel-name "regex:$KERNELS" "${sections[@]}" \
  "$D" bench "${RUN[@]}" --warmUp 0 --iterations 1 --duration 0 > "$OUT_DIR/ncu_detail.txt"
python3 - "$OUT_DIR/ncu_detail.txt" <<'PY' | tee "$OUT_DIR/ncu_detail.table"
import re, sys
blocks = re.split(r"\n  (?=\S.*\(\d+, \d+, \d+\)x\(\d+, \d+, \d+\))", open(sys.argv[1]).read())[1:]
def metric(block, name):
    m = re.search(r"\n\s+" + re.escape(name) + r"\s+\S+\s+([\d,.]+)", block)
    return m.group(1).replace(",", "") if m else "?"
print(f"{'launch':>6} {'kernel':<40} {'grid':<12} {'us':>8} {'instr':>11} {'IPC':>5} {'issue%':>7} {'DRAM%':>6} {'occup%':>7}")
for i, b in enumerate(blocks):
    head = b.split("\n")[0]
    name = re.sub(r"^void |\(.*$", "", head).replace("unnamed>::", "")[:40]
    grid = re.search(r"\((\d+, \d+), \d+\)x", head).group(1).replace(" ", "")
    print(f"{i:>6} {name:<40} {grid:<12} {metric(b, 'Duration'):>8} {metric(b, 'Executed Instructions'):>11} "
          f"{metric(b, 'Executed Ipc Active'):>5} {metric(b, 'Issue Slots Busy'):>7} "
          f"{metric(b, 'DRAM Throughput'):>6} {metric(b, 'Achieved Occupancy'):>7}")
PY
