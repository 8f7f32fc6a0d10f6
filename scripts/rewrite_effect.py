#!/usr/bin/env python3
"""The effect of dlakit's DLA rewrites (adjust-for-dla) on every real model, as the Markdown table in
docs/inspect.md: `dlakit inspect --json` with --no-adjust-for-dla (before) and by default (after), per chip.
Usage: /usr/bin/python3 scripts/rewrite_effect.py [build/dlakit] > table.md"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DLAKIT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "dlakit")
# The models and input shapes of tests/models/placement_test.cpp.
MODELS = [("ppocr_det", "x:1x3x640x640"), ("ppocr_rec", "x:1x3x48x320"), ("ppocr_cls", "x:1x3x48x192"),
          ("resnet18", ""), ("resnet50", ""), ("mobilenet_v2", ""), ("mobilenet_v3_small", ""),
          ("efficientnet_b0", ""), ("densenet121", ""), ("shufflenet_v2_x1_0", ""), ("tiny_yolo", ""),
          ("ssdlite_mbv2", ""), ("blazeface_128", ""), ("mlsd_tiny_320", ""), ("googlenet", ""),
          ("squeezenet1_1", ""), ("lraspp_mobilenet_v3", "")]


def summary(model, shape, target, extra):
    cmd = [DLAKIT, "inspect", os.path.join(ROOT, ".cache", "models", model + ".onnx"), "--target", target,
           "--json"] + (["--input-shape", shape] if shape else []) + extra
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode not in (0, 3):
        sys.exit(f"{' '.join(cmd)} failed:\n{run.stderr}")
    return json.loads(run.stdout)["summary"]


def pair(before, after, fmt=str):
    a, b = fmt(before), fmt(after)
    return a if a == b else f"{a} -> **{b}**"


print("| model | chip | DLA layers | DLA share of MACs | DLA loadables | DLA<->GPU transitions | standalone |"
      " DLA layers on unconfirmed rules | GPU layers only by unconfirmed rules |")
print("|---|---|---|---|---|---|---|---|---|")
for model, shape in MODELS:
    for target in ("orin", "xavier"):
        b = summary(model, shape, target, ["--no-adjust-for-dla"])
        a = summary(model, shape, target, [])
        layers = pair(f"{b['dla_layers']}/{b['total_layers']}", f"{a['dla_layers']}/{a['total_layers']}")
        share = pair(b["dla_mac_share"], a["dla_mac_share"], lambda v: f"{100 * v:.1f}%")
        print(f"| {model} | {target} | {layers} | {share} | {pair(b['dla_loadables'], a['dla_loadables'])} | "
              f"{pair(b['transitions'], a['transitions'])} | "
              f"{pair(b['standalone_possible'], a['standalone_possible'], lambda v: 'yes' if v else 'no')} | "
              f"{pair(b['unconfirmed_dla_layers'], a['unconfirmed_dla_layers'])} | "
              f"{pair(b['unconfirmed_gpu_layers'], a['unconfirmed_gpu_layers'])} |")
