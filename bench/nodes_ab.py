#!/usr/bin/python3
"""Two builds of the reference engine, layer by layer, interleaved: did a CPU change gain anything?

Usage: /usr/bin/python3 bench/nodes_ab.py MODEL BASE_BENCH NEW_BENCH [--input input] [--shape 1x3x224x224]
                                          [--threads 2] [--rounds 8] [--iterations 30] [--show 8]
                                          [--json OUT.json]
BASE_BENCH and NEW_BENCH are two dlakit_bench_model binaries (copy build/bench/dlakit_bench_model aside
before rebuilding). Each round runs both on the same seeded input, in alternating order (A B, then B A), so
that a drift of this shared host's speed falls on both alike. Prints each build's latency medians per round,
the sum of the convolutions' per-node medians, and the nodes that moved most, each as the median over the
rounds of its per-run median. On this 2-core host single runs move 5-10 % from minute to minute: a change
smaller than that needs many rounds, and a layer whose code did not change moving as much says the rest is
noise.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile


def run(binary, model, feed, threads, iterations):
    """One run: (latency median, {node: ms})."""
    env = dict(os.environ, DLAKIT_NUM_THREADS=str(threads))
    out = subprocess.run([binary, model, feed, "--iterations", str(iterations), "--warmUp", "5", "--nodes",
                          "100000"], env=env, check=True, capture_output=True, text=True).stdout
    result = json.loads(out)
    return result["latency_ms"]["median"], {n["node"]: n["ms"] for n in result["slowest_ms"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("base")
    ap.add_argument("new")
    ap.add_argument("--input", default="input", help="the model's input name (PP-OCRv4: x)")
    ap.add_argument("--shape", default="1x3x224x224")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--iterations", type=int, default=30)
    ap.add_argument("--show", type=int, default=8, help="nodes shown at each end of the change ranking")
    ap.add_argument("--json", help="also write every run's figures here")
    a = ap.parse_args()
    import numpy as np

    x = os.path.join(tempfile.mkdtemp(prefix="nodes_ab_"), "x.npy")
    np.save(x, np.random.RandomState(0).randn(*[int(d) for d in a.shape.split("x")]).astype(np.float32))
    feed = f"{a.input}={x}"
    builds = {"base": a.base, "new": a.new}
    latency = {name: [] for name in builds}
    nodes = {name: {} for name in builds}
    for r in range(a.rounds):
        for name in (["base", "new"] if r % 2 == 0 else ["new", "base"]):
            ms, per_node = run(builds[name], a.model, feed, a.threads, a.iterations)
            latency[name].append(ms)
            for node, t in per_node.items():
                nodes[name].setdefault(node, []).append(t)
        print(f"round {r + 1}/{a.rounds}: base {latency['base'][-1]:.3f} ms, new {latency['new'][-1]:.3f} ms",
              flush=True)
    median = {name: {node: statistics.median(v) for node, v in nodes[name].items()} for name in builds}
    conv_sum = {name: sum(t for node, t in median[name].items() if "Conv" in node) for name in builds}
    print(f"\n{os.path.basename(a.model)}, {a.threads} thread(s), {a.rounds} rounds of {a.iterations} runs")
    for name in builds:
        print(f"{name}: latency median {statistics.median(latency[name]):.3f} ms (rounds: "
              f"{', '.join(f'{v:.2f}' for v in latency[name])}); convolutions' node medians sum to "
              f"{conv_sum[name]:.3f} ms")
    common = [node for node in median["base"] if node in median["new"]]
    moved = sorted(common, key=lambda node: median["new"][node] - median["base"][node])
    shown = moved if len(moved) <= 2 * a.show else moved[:a.show] + moved[-a.show:]
    print("\n| node | base ms | new ms | change |\n|---|---|---|---|")
    for node in shown:
        before, after = median["base"][node], median["new"][node]
        print(f"| {node} | {before:.3f} | {after:.3f} | {100 * (after / before - 1):+.1f} % |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model": a.model, "threads": a.threads, "rounds": a.rounds, "latency_ms": latency,
                       "node_ms": nodes}, f, indent=1)


if __name__ == "__main__":
    main()
