#!/usr/bin/python3
"""Layer by layer: the reference engine against ONNX Runtime on the same model, input and threads.

Usage: /usr/bin/python3 bench/layers_vs_ort.py MODEL [--input input] [--shape 1x3x224x224] [--threads 2]
                                               [--iterations 40] [--json OUT.json]
Runs bench/dlakit_bench_model (per-step timing: a fused step counts for its first node, so an expansion
step's time holds its depthwise layer's too, paired with ORT's expansion alone) and
scripts/ort_run.js --profile (ONNX Runtime's own trace: a fused node is named after its last output, with
"_nchwc" where ORT moved it to its blocked layout), then prints the per-layer medians side by side.
Convolutions and matrix products are paired by their first input's and their output's shapes (channels
rounded up to ORT's blocks of 16), each of dlakit's in graph order with ORT's first unpaired one of the same
shapes; the other ops are summed per op type. Wall-clock medians; on a shared 2-core machine rerun before
trusting one layer.
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAIRED = ("Conv", "ConvTranspose", "Gemm", "MatMul", "FusedConv", "FusedGemm", "FusedMatMul")


def ort_layers(trace_file, warmup_runs):
    """[(name, op, ms, (input shape, output shape))] in execution order, ms the median over the traced runs
    after `warmup_runs`."""
    with open(trace_file) as f:
        events = json.load(f)
    order, times, ops, shapes = [], collections.defaultdict(list), {}, {}
    for e in events:
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time"):
            continue
        name = e["name"][: -len("_kernel_time")]
        if name not in ops:
            order.append(name)
            ops[name] = e["args"].get("op_name", "?")
            shapes[name] = (dims(e["args"].get("input_type_shape", [{}])[:1]),
                            dims(e["args"].get("output_type_shape", [{}])[:1]))
        times[name].append(e["dur"] / 1000.0)
    return [(n, ops[n], statistics.median(times[n][warmup_runs:] or times[n]), shapes[n]) for n in order]


def blocked(shape):
    """A shape with its channels (axis 1) rounded up to 16, as ORT's NCHWc layout reports it."""
    return tuple(d if i != 1 else (d + 15) // 16 * 16 for i, d in enumerate(shape)) if shape else ()


def dims(type_shapes):
    """ORT's [{"float": [1, 64, 56, 56]}] -> (1, 64, 56, 56), channels blocked."""
    return blocked(tuple(next(iter(type_shapes[0].values())))) if type_shapes and type_shapes[0] else ()


def parse_type(text):
    """dlakit's "f32[1x64x56x56]" -> (1, 64, 56, 56), channels blocked."""
    inside = text[text.find("[") + 1: text.rfind("]")] if "[" in text else ""
    return blocked(tuple(int(d) for d in inside.split("x") if d)) if inside else ()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--input", default="input", help="the model's input name (PP-OCRv4: x)")
    ap.add_argument("--shape", default="1x3x224x224")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=40)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--json", help="also write the pairs and sums here")
    a = ap.parse_args()
    import numpy as np

    tmp = tempfile.mkdtemp(prefix="layers_vs_ort_")
    x = os.path.join(tmp, "x.npy")
    input_dims = [int(d) for d in a.shape.split("x")]
    np.save(x, np.random.RandomState(0).randn(*input_dims).astype(np.float32))
    env = dict(os.environ, DLAKIT_NUM_THREADS=str(a.threads))
    ours = json.loads(subprocess.run(
        [os.path.join(a.build, "bench", "dlakit_bench_model"), a.model, f"{a.input}={x}", "--iterations",
         str(a.iterations), "--nodes", "100000"], env=env, check=True, capture_output=True, text=True).stdout)
    ort = json.loads(subprocess.run(
        ["node", os.path.join(ROOT, "scripts", "ort_run.js"), a.model, os.path.join(tmp, "ort"), "--threads",
         str(a.threads), "--iterations", str(a.iterations), "--profile", f"{a.input}={x}"],
        check=True, capture_output=True, text=True).stdout)
    if not ort.get("profile"):
        sys.exit("layers_vs_ort: ONNX Runtime wrote no profile")
    theirs = ort_layers(ort["profile"], warmup_runs=1)

    # dlakit's steps: nodes with time of their own (a fused step's other nodes report 0).
    steps = sorted((s for s in ours["slowest_ms"] if s["ms"] > 0), key=lambda s: s["index"])
    our_paired = [s for s in steps if s["op"] in PAIRED]
    ort_paired = [t for t in theirs if t[1] in PAIRED]
    sums = collections.defaultdict(lambda: [0.0, 0.0])
    for s in steps:
        sums[s["op"]][0] += s["ms"]
    for name, op, ms, _ in theirs:
        sums[op][1] += ms
    print(f"# {os.path.basename(a.model)} {a.shape}, {a.threads} thread(s), medians of {a.iterations} runs")
    print(f"end to end (no profiling): dlakit {ours['latency_ms']['median']:.3f} ms; ONNX Runtime (profiling on) "
          f"{ort['latency_ms']['median']:.3f} ms\n")
    pairs, taken = [], set()
    for s in our_paired:
        key = (parse_type(s["input"]), parse_type(s["output"]))
        match = next((i for i, t in enumerate(ort_paired) if i not in taken and t[3] == key), None)
        if match is None:
            continue
        taken.add(match)
        t = ort_paired[match]
        pairs.append({"dlakit": s, "ort": {"node": t[0], "op": t[1], "ms": t[2]}})
    print(f"{len(pairs)} of dlakit's {len(our_paired)} convolutions and matrix products paired with ORT's "
          f"({len(ort_paired)})\n")
    print("| dlakit node | input -> output | dlakit ms | ORT node | ORT ms | dlakit / ORT |")
    print("|---|---|---|---|---|---|")
    for p in pairs:
        s, t = p["dlakit"], p["ort"]
        print(f"| {s['node']} | {s['input']} -> {s['output']} | {s['ms']:.3f} | {t['node']} | {t['ms']:.3f} | "
              f"{s['ms'] / t['ms'] if t['ms'] > 0 else float('inf'):.2f} |")
    print()
    print("| op | dlakit ms | ORT ms |")
    print("|---|---|---|")
    for op, (mine, other) in sorted(sums.items(), key=lambda kv: -max(kv[1])):
        print(f"| {op} | {mine:.3f} | {other:.3f} |")
    total = [sum(v[0] for v in sums.values()), sum(v[1] for v in sums.values())]
    print(f"| all | {total[0]:.3f} | {total[1]:.3f} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model": a.model, "shape": a.shape, "threads": a.threads, "pairs": pairs,
                       "sums": {op: {"dlakit_ms": v[0], "ort_ms": v[1]} for op, v in sums.items()},
                       "latency_ms": {"dlakit": ours["latency_ms"]["median"],
                                      "ort_profiled": ort["latency_ms"]["median"]}}, f, indent=1)


if __name__ == "__main__":
    main()
