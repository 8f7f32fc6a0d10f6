#!/usr/bin/env bash
# End-to-end checks of the latency predictions in the CLI: inspect --power-mode (text, --json, --explain),
# bench --predict next to the emulator's timing, and clear errors.
source "$(dirname "$0")/check_lib.sh" "$@"

"$DLAKIT" inspect "$M/resnet18.onnx" --int8 --power-mode MAXN --json > "$TMP/maxn.json"; rc=$?
check "inspect --power-mode --json exits 0 (standalone)" test "$rc" -eq 0
"$DLAKIT" inspect "$M/resnet18.onnx" --int8 --power-mode 15W --json > "$TMP/15w.json"
check "--json has the latency object, per-layer latency_us, consistent totals" /usr/bin/python3 -c "
import json
j = json.load(open('$TMP/maxn.json')); l = j['latency']
assert l['predicted'] is True and l['power_mode'] == 'MAXN' and l['target'] == 'orin', l
assert l['dla_ms'] > 0 and abs(l['total_ms'] - l['dla_ms']) < 1e-9, l  # all-DLA: no GPU, no transitions
assert abs(l['images_per_s_2cores'] - 2 * 1000 / l['dla_ms']) < 1e-6 * l['images_per_s_2cores'], l
assert len(l['layers']) == len(j['layers']) and all('latency_us' in x for x in j['layers'])
assert abs(sum(x['latency_us'] for x in l['layers']) / 1000 - l['dla_ms']) < 0.01, 'layers sum to the task'
assert all(x['role'] in ('operation', 'fused', 'free') for x in l['layers'])
assert all(op['bottleneck'] in ('compute', 'memory', 'overhead') for op in l['operations'])
w = json.load(open('$TMP/15w.json'))['latency']
assert w['dla_ms'] > l['dla_ms'] and w['power']['budget_w'] == 15, (w['dla_ms'], l['dla_ms'])
"

"$DLAKIT" inspect "$M/resnet18.onnx" --int8 --power-mode 30w > "$TMP/text.txt"
check "text: per-layer predicted time, bound and totals" bash -c "grep -q 'predicted latency: orin, power mode 30W' '$TMP/text.txt' && grep -q 'fused into' '$TMP/text.txt' && grep -q 'images/s with both DLA cores' '$TMP/text.txt' && grep -q 'energy per inference is not modelled' '$TMP/text.txt'"

# det without the DLA rewrites (with them it is one DLA graph): GPU segments and transitions to estimate.
"$DLAKIT" inspect "$M/ppocr_det.onnx" --input-shape x:1x3x640x640 --no-adjust-for-dla --power-mode MAXN --inputIOFormats fp32:chw --json > "$TMP/det.json"
check "hybrid: GPU segments, transitions and reformats are estimates in the total" /usr/bin/python3 -c "
import json
l = json.load(open('$TMP/det.json'))['latency']
assert l['gpu_ms'] > 0 and l['transitions_ms'] > 0
assert abs(l['total_ms'] - (l['dla_ms'] + l['gpu_ms'] + l['transitions_ms'])) < 1e-9
kinds = {t['direction'] for t in l['transitions']}
assert {'DLA->GPU', 'GPU->DLA', 'input reformat', 'output reformat'} <= kinds, kinds
assert all(t['estimate'] for t in l['transitions'])
"

conv=$(/usr/bin/python3 -c "import json; print(json.load(open('$TMP/maxn.json'))['layers'][0]['name'])")
"$DLAKIT" inspect "$M/resnet18.onnx" --int8 --power-mode MAXN --explain "$conv" > "$TMP/explain.txt"
check "--explain shows the layer's predicted latency" has "$TMP/explain.txt" "predicted latency (MAXN):"

"$DLAKIT" inspect "$M/resnet18.onnx" --power-mode 20W > "$TMP/bad.txt" 2>&1; rc=$?
check "unknown power mode -> exit 1 naming the valid ones" bash -c "test $rc -eq 1 && grep -q 'MAXN, 50W, 30W, 15W' '$TMP/bad.txt'"
"$DLAKIT" inspect "$M/resnet18.onnx" --power-mode MAXN --inputIOFormats int8 > "$TMP/badfmt.txt" 2>&1; rc=$?
check "malformed --inputIOFormats -> exit 1" bash -c "test $rc -eq 1 && grep -q 'type:format' '$TMP/badfmt.txt'"

"$DLAKIT" build --onnx="$M/resnet18.onnx" --saveEngine="$TMP/r18.dla" --fp16 > /dev/null
"$DLAKIT" bench --loadEngine="$TMP/r18.dla" --predict --duration 0.2 --warmUp 20 --iterations 2 --json > "$TMP/bench.json"
"$DLAKIT" inspect "$M/resnet18.onnx" --power-mode MAXN --json > "$TMP/fp16.json"
# bench --predict reads the loadable's compiled program (latency/from_program.h), inspect the placed graph:
# the program keeps each residual Add as its own SDP pass where the graph producer fuses it into the
# convolution, so the program's prediction is higher (docs/latency-model.md, "Two producers").
check "bench --predict: a separate predicted object, at or above inspect's graph prediction by the SDP passes" /usr/bin/python3 -c "
import json
b = json.load(open('$TMP/bench.json')); p = b['predicted']
assert 'latency_ms' in b and 'median' in b['latency_ms'], 'the emulator timing stays as it was'
assert p['power_mode'] == 'MAXN' and 'not measured' in p['source']
i = json.load(open('$TMP/fp16.json'))['latency']
assert i['total_ms'] <= p['latency_ms'] < 1.6 * i['total_ms'], (p['latency_ms'], i['total_ms'])
assert abs(p['throughput_qps_all_cores'] - 2 * p['throughput_qps_one_core']) < 1e-6 * p['throughput_qps_all_cores']
"
"$DLAKIT" bench --loadEngine="$TMP/r18.dla" --predict --power-mode 15W --duration 0.2 --warmUp 20 --iterations 2 > "$TMP/bench.txt"
check "bench --predict text: emulator lines, then trtexec-style [predicted] lines" bash -c "grep -q '^latency (ms):' '$TMP/bench.txt' && grep -q '^\[predicted\] Latency: min = ' '$TMP/bench.txt' && grep -q '^\[predicted\] Throughput: ' '$TMP/bench.txt' && grep -q 'orin 15W' '$TMP/bench.txt'"

"$DLAKIT" inspect "$M/resnet18.onnx" --power-mode MAXN --html "$TMP/lat.html" > /dev/null
check "inspect --html --power-mode: layers carry latency_us and the page colours by it" bash -c "grep -q '\"colour_default\":\"latency_us\"' '$TMP/lat.html' && grep -q '\"latency_us\":[1-9]' '$TMP/lat.html'"

finish
