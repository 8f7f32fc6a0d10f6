#!/usr/bin/python3
"""The HTML reports in a real browser: `dlakit inspect --html` (a model with GPU fallback, rewrites and
reasons) and `dlakit compare --html` (INT8 with --fix) open in headless Chromium with no console message
and no page error, draw one box per layer, select the layer a #layer=NAME link names, and fetch nothing.
Screenshots go to OUT_DIR (docs/report-*.png are copies of them).

usage: report_browser_test.py DLAKIT SOURCE_DIR OUT_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse

DLAKIT, SOURCE, OUT = (os.path.abspath(a) for a in sys.argv[1:4])
MODELS = os.path.join(SOURCE, ".cache", "models")
IMAGES = [os.path.join(SOURCE, ".cache", "images", n) for n in ("baboon.jpg", "fruits.jpg", "messi5.jpg")]
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def dlakit(*args):  # run next to the models, so reports name them without a path
    r = subprocess.run([DLAKIT, *args], capture_output=True, text=True, cwd=MODELS)
    if r.returncode not in (0, 3):  # inspect says 3 when a standalone build is not possible
        sys.exit(f"dlakit {' '.join(args)} failed ({r.returncode}):\n{r.stderr}")
    return r.stdout


def chromium(url, *mode):
    browser = shutil.which("chromium")
    if not browser:
        sys.exit("chromium not found: scripts/setup-deps.sh installs Debian's chromium")
    with tempfile.TemporaryDirectory() as profile:  # a fresh profile every time; the network stays closed
        r = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                            "--disable-background-networking", "--disable-component-update", "--disable-sync",
                            f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
                            "--hide-scrollbars", "--window-size=1400,900", "--virtual-time-budget=5000", *mode,
                            url], capture_output=True, text=True, timeout=120)
    console = [l for l in r.stderr.splitlines() if ":CONSOLE" in l]
    return r.returncode, r.stdout, console


def esc(text):  # how --dump-dom writes text
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def open_report(name, html, layers, pick):
    """Checks one report page; `pick` is a layer name for the #layer= link; saves OUT/report-NAME.png."""
    text = open(html, encoding="utf-8").read()
    check(not re.search(r"<link|\bsrc\s*=|url\(|@import|fetch\(|XMLHttpRequest", text),
          f"{name}: self-contained (no link, src, url(), import or fetch)")
    url = "file://" + os.path.abspath(html)
    rc, dom, console = chromium(url + "#layer=" + urllib.parse.quote(pick), "--dump-dom")
    check(rc == 0, f"{name}: chromium --dump-dom exits 0 (got {rc})")
    check(not console, f"{name}: no console message ({console[:3]})")
    errors = re.search(r'data-errors="([^"]*)"', dom)
    check(errors is None, f"{name}: no page error ({errors.group(1) if errors else ''})")
    rendered = re.search(r'data-rendered="(\d+)"', dom)
    check(rendered is not None and int(rendered.group(1)) == layers,
          f"{name}: rendered {rendered.group(1) if rendered else 'nothing'} layers, expected {layers}")
    check(dom.count("<button class=\"layer") == layers, f"{name}: one box per layer")
    check(f'<aside id="details"><h2>{esc(pick)}</h2>' in dom, f"{name}: #layer={pick} selects it")
    png = os.path.join(OUT, f"report-{name}.png")
    rc, _, console = chromium(url, f"--screenshot={png}")
    check(rc == 0 and os.path.getsize(png) > 10000, f"{name}: screenshot {png}")
    check(not console, f"{name}: no console message while drawing the screenshot ({console[:3]})")
    return dom


os.makedirs(OUT, exist_ok=True)
work = tempfile.mkdtemp(prefix="dlakit_html_")
try:
    # inspect: M-LSD on Orin falls back to the GPU for 4 layers (reasons, transitions) and has rewrites.
    mlsd = "mlsd_tiny_320.onnx"
    report = json.loads(dlakit("inspect", mlsd, "--json"))
    gpu = [l for l in report["layers"] if l["device"] == "GPU" and l["reasons"]]
    check(len(gpu) > 0 and len(report["segments"]) > 1, "inspect: the model has GPU layers with reasons")
    inspect_html = os.path.join(work, "inspect.html")
    dlakit("inspect", mlsd, "--html", inspect_html)
    dom = open_report("inspect", inspect_html, len(report["layers"]), gpu[-1]["name"])
    reason = gpu[-1]["reasons"][0]
    check("Why it cannot run on the DLA" in dom and f"<b>{esc(reason['code'])}</b>" in dom and
          esc("fix: " + reason["fix"]) in dom, "inspect: the selected layer's reasons and fix are shown")
    check(dom.count('class="hop"') >= 1, "inspect: DLA<->GPU transitions are marked")
    check("Rewrites:" in dom, "inspect: the graph passes' rewrites are listed")

    # compare: BlazeFace INT8 vs FP32 on three photos, with --fix.
    face = "blazeface_128.onnx"
    data = ["--data", *IMAGES, "--nhwc", "--size", "128x128"]
    cache = os.path.join(work, "face.cache")
    dlakit("calibrate", face, *data, "--cache", cache)
    compare_html = os.path.join(work, "compare.html")
    cmp = json.loads(dlakit("compare", face, "--int8", "--calib", cache, *data, "--fix", "--json"))
    dlakit("compare", face, "--int8", "--calib", cache, *data, "--fix", "--html", compare_html)
    layers = cmp["before"]["layers"]
    worst = max(layers, key=lambda l: l["own_rel_l2"] or 0)
    dom = open_report("compare", compare_html, len(layers), worst["layer"])
    check("Error per layer" in dom and "<svg" in dom, "compare: the error chart is there")
finally:
    shutil.rmtree(work, ignore_errors=True)

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("all report checks passed")
