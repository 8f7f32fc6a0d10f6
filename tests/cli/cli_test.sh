#!/usr/bin/env bash
# End-to-end checks of the dlakit CLI on real models: exit codes, --explain, --standalone, --json, split, run.
source "$(dirname "$0")/check_lib.sh" "$@"

"$DLAKIT" inspect "$M/resnet18.onnx" > "$TMP/r18.txt"; rc=$?
check "resnet18 standalone possible -> exit 0" test "$rc" -eq 0
check "resnet18 report says standalone" has "$TMP/r18.txt" "standalone build possible: yes"
check "inspect shows the DLA program: hardware operations and SRAM" bash -c "grep -q '^  segment 0: .* -> [0-9]* hardware operations' '$TMP/r18.txt' && grep -q 'memory: SRAM .* of 1.0 MiB' '$TMP/r18.txt'"

# As imported (--no-adjust-for-dla), det's global pools over 20..160 keep it off one DLA graph.
NOADJ=(--input-shape x:1x3x640x640 --no-adjust-for-dla)
"$DLAKIT" inspect "$M/ppocr_det.onnx" "${NOADJ[@]}" > "$TMP/det.txt"; rc=$?
check "det as imported not standalone -> exit 3" test "$rc" -eq 3
check "det report names the GAP window reason" has "$TMP/det.txt" "AttrOutOfRange: window (input H,W)"
check "det report gives a fix" has "$TMP/det.txt" "fix: pool in stages"
check "the global-pool rule is marked unconfirmed" has "$TMP/det.txt" "\[unconfirmed: pool.global\]"

"$DLAKIT" inspect "$M/ppocr_det.onnx" "${NOADJ[@]}" --standalone > "$TMP/sa.txt" 2>&1; rc=$?
check "--standalone failure -> exit 3" test "$rc" -eq 3
check "--standalone lists offenders" has "$TMP/sa.txt" "cannot run on the DLA"

gap=$(grep -m1 "GlobalAveragePool" "$TMP/det.txt" | awk '{print $2}')
"$DLAKIT" inspect "$M/ppocr_det.onnx" "${NOADJ[@]}" --explain "$gap" > "$TMP/explain.txt"
check "--explain shows field/actual/limit/fix and the rule's source" bash -c "grep -q 'field:' '$TMP/explain.txt' && grep -q 'limit:' '$TMP/explain.txt' && grep -q 'fix:' '$TMP/explain.txt' && grep -q 'rule:   pool.global, assumed' '$TMP/explain.txt'"

"$DLAKIT" inspect "$M/ppocr_det.onnx" "${NOADJ[@]}" --json > "$TMP/det.json"
check "--json parses and has the schema" /usr/bin/python3 -c "
import json,sys; j=json.load(open('$TMP/det.json'))
assert j['schema_version']==1 and j['layers'] and j['segments'] and 'recommendation' in j['summary']
assert any(r['code']=='AttrOutOfRange' and r['confidence']=='assumed' and r['source'] for l in j['layers'] for r in l['reasons'])"

# With the DLA rewrites (the default) det and the direction classifier are one DLA graph each.
"$DLAKIT" inspect "$M/ppocr_det.onnx" --input-shape x:1x3x640x640 --standalone --json > "$TMP/det_adj.json"; rc=$?
check "det with the rewrites: --standalone exits 0" test "$rc" -eq 0
check "the rewrites are remarks naming what, where and the rule" /usr/bin/python3 -c "
import json; j=json.load(open('$TMP/det_adj.json'))
r=[x for x in j['remarks'] if x['pass']=='adjust-for-dla/pool-stages' and x['applied']]
assert len(r)==10 and all('AveragePool' in x['message'] and '§1.2 Pooling' in x['message'] for x in r), r
assert j['summary']['standalone_possible'] and not any(l['op']=='GlobalAveragePool' for l in j['layers'])"
"$DLAKIT" inspect "$M/ppocr_cls.onnx" --input-shape x:1x3x48x192 --standalone > /dev/null 2>&1; rc=$?
check "cls with the rewrites: --standalone exits 0" test "$rc" -eq 0
"$DLAKIT" inspect "$M/ppocr_det.onnx" --input-shape x:1x3x640x640 --adjustForDLA --no-adjust-for-dla > "$TMP/both.txt" 2>&1; rc=$?
check "--adjustForDLA with --no-adjust-for-dla -> exit 1" bash -c "test $rc -eq 1 && grep -q 'contradict' '$TMP/both.txt'"
"$DLAKIT" inspect "$M/resnet18.onnx" --disable-pass pool-stage > "$TMP/badpass.txt" 2>&1; rc=$?
check "an unknown --disable-pass name lists the known ones" bash -c "test $rc -eq 1 && grep -q 'pool-stages' '$TMP/badpass.txt'"

"$DLAKIT" inspect "$M/resnet18.onnx" --layerDeviceTypes '/layer4*:GPU' > "$TMP/ovr.txt"; rc=$?
check "--layerDeviceTypes glob moves layers" has "$TMP/ovr.txt" "override: --layerDeviceTypes"
check "override breaks standalone -> exit 3" test "$rc" -eq 3

"$DLAKIT" inspect "$M/resnet18.onnx" --target xavier --int8 > "$TMP/xav.txt"; rc=$?
check "xavier int8 resnet18 standalone" test "$rc" -eq 0
"$DLAKIT" inspect "$M/ppocr_rec.onnx" --input-shape x:1x3x48x320 --target xavier > "$TMP/rec_x.txt"
check "xavier has no SoftMax" has "$TMP/rec_x.txt" "ChipNotSupported"

"$DLAKIT" split "$M/ppocr_cls.onnx" --input-shape x:1x3x48x192 -o "$TMP/split" > /dev/null
check "split writes manifest, script and segments" bash -c "test -f '$TMP/split/manifest.json' && test -f '$TMP/split/build_on_jetson.sh' && ls '$TMP/split'/segment_0_*.onnx >/dev/null"
check "split segments import" bash -c "\"$DLAKIT\" info \"$TMP/split/segment_0_dla.onnx\" > /dev/null"
check "trtexec lines are standalone DLA builds" has "$TMP/split/build_on_jetson.sh" "--buildDLAStandalone --inputIOFormats=fp16:chw16"
"$DLAKIT" split "$M/ppocr_det.onnx" --input-shape x:1x3x640x640 -o "$TMP/split_det" > /dev/null
"$DLAKIT" info "$TMP/split_det/segment_0_dla.onnx" > "$TMP/split_det.txt"
check "split writes the rewritten graph: det is one DLA segment with pooling stages" bash -c "test \$(ls '$TMP/split_det'/segment_*.onnx | wc -l) -eq 1 && grep -q AveragePool '$TMP/split_det.txt' && ! grep -q GlobalAveragePool '$TMP/split_det.txt'"

"$DLAKIT" inspect "$M/resnet18.onnx" --standalone --fallback > /dev/null 2>&1; rc=$?
check "contradictory flags -> exit 1" test "$rc" -eq 1
"$DLAKIT" run "$M/resnet18.onnx" > "$TMP/noinput.txt" 2>&1; rc=$?
check "run without inputs explains what to pass" bash -c "test $rc -eq 1 && grep -q -- '--random-inputs' '$TMP/noinput.txt'"
"$DLAKIT" info /dev/null > /dev/null 2>&1; rc=$?
check "empty file is an error, not a crash" test "$rc" -eq 1

"$DLAKIT" build --onnx="$M/resnet18.onnx" --saveEngine="$TMP/r18.dla" > /dev/null
"$DLAKIT" run --loadEngine="$TMP/r18.dla" --random-inputs --json > "$TMP/r18run.json"
check "build + run a loadable through the runtime" /usr/bin/python3 -c "
import json; j=json.load(open('$TMP/r18run.json')); assert j['executed_on'].startswith('emulated DLA') and j['outputs'][0]['type']=='f32[1x1000]'"
"$DLAKIT" build --onnx="$M/ppocr_det.onnx" "${NOADJ[@]}" --saveEngine="$TMP/det.dla" > "$TMP/det_build.txt" 2>&1; rc=$?
check "standalone build of a non-DLA model fails with the offenders" bash -c "test $rc -eq 3 && grep -q 'GlobalAveragePool' '$TMP/det_build.txt'"
for m in "ppocr_det x:1x3x640x640" "ppocr_cls x:1x3x48x192"; do
  set -- $m
  "$DLAKIT" build --onnx="$M/$1.onnx" --input-shape "$2" --buildDLAStandalone --saveEngine="$TMP/$1.dla" > "$TMP/$1_build.txt" 2>&1; rc=$?
  check "$1 builds --buildDLAStandalone with the rewrites" bash -c "test $rc -eq 0 && grep -q 'FP16' '$TMP/$1_build.txt'"
done
"$DLAKIT" build --onnx="$M/ppocr_cls.onnx" --input-shape x:1x3x48x192 --no-adjust-for-dla --allowGPUFallback --saveEngine="$TMP/cls.plan" > /dev/null
"$DLAKIT" run --loadEngine="$TMP/cls.plan" --random-inputs > "$TMP/plan.txt"
check "hybrid plan runs" grep -q "hybrid plan" "$TMP/plan.txt"
"$DLAKIT" bench --loadEngine="$TMP/r18.dla" --duration 0.2 --iterations 2 --warmUp 0 --useDLACore all --json > "$TMP/bench.json"
check "bench reports percentiles and the split" /usr/bin/python3 -c "
import json; j=json.load(open('$TMP/bench.json')); assert j['latency_ms']['p99']>0 and 'compute' in j['split_ms_mean'] and j['cores']==[0,1]"
rc=0; "$DLAKIT" bench --loadEngine="$TMP/r18.dla" --config=dla-int8 > "$TMP/cfg.txt" 2>&1 || rc=$?
check "bench --config=dla-int8 refuses an FP16 loadable: exit 1, saying why" bash -c "test $rc -eq 1 && grep -q 'needs an INT8 loadable' '$TMP/cfg.txt'"
rc=0; "$DLAKIT" bench --config=fastest --loadEngine="$TMP/r18.dla" > "$TMP/cfg.txt" 2>&1 || rc=$?
check "bench --config lists the four configurations: exit 1" bash -c "test $rc -eq 1 && grep -q 'gpu-fp16, gpu-int8, dla-int8 or dla-int8-2cores' '$TMP/cfg.txt'"
rc=0; "$DLAKIT" bench --loadEngine="$TMP/r18.dla" --iterations 0 --duration 0 --warmUp 0 --json > "$TMP/zero.json" 2>&1 || rc=$?
check "bench --iterations 0 --duration 0 runs one iteration (no empty statistics)" bash -c "test $rc -eq 0 && /usr/bin/python3 -c \"import json; j=json.load(open('$TMP/zero.json')); assert j['iterations']>=1 and j['latency_ms']['max']>0\""
rc=0; "$DLAKIT" bench --loadEngine="$TMP/r18.dla" --iterations -1 > "$TMP/neg.txt" 2>&1 || rc=$?
check "bench --iterations -1: a usage error, not a crash" bash -c "test $rc -ne 0 -a $rc -lt 128 && grep -q 'iterations' '$TMP/neg.txt'"
if ! nvidia-smi > /dev/null 2>&1; then  # CI: no GPU, so the CUDA paths must say so clearly
  rc=0; "$DLAKIT" bench --loadEngine="$TMP/r18.dla" --backend=cuda > "$TMP/cuda.txt" 2>&1 || rc=$?
  check "bench --backend=cuda without a GPU: exit 1, clear error" bash -c "test $rc -eq 1 && grep -q 'backend=cuda' '$TMP/cuda.txt'"
fi
head -c 1000 "$TMP/r18.dla" > "$TMP/trunc.dla"
"$DLAKIT" run --loadEngine="$TMP/trunc.dla" --random-inputs > "$TMP/trunc.txt" 2>&1; rc=$?
check "truncated loadable: clear error, exit 1" bash -c "test $rc -eq 1 && grep -q 'corrupt or truncated' '$TMP/trunc.txt'"

# INT8: calibrate -> cache -> compare --fix --apply --html -> inspect --overrides; Q/DQ -> cache.
CAL=(--input-shape x:1x3x48x192 --size 192x48 --mean 0.5,0.5,0.5 --std 0.5,0.5,0.5)
"$DLAKIT" calibrate "$M/ppocr_cls.onnx" "${CAL[@]}" --data "$IMG/ocr_calib" --max-samples 16 --calib-algo all \
  --cache "$TMP/cls.cache" > "$TMP/calib.txt"; rc=$?
check "calibrate writes one cache per calibrator" bash -c "test $rc -eq 0 && ls >/dev/null '$TMP'/cls.entropy2.cache '$TMP'/cls.minmax.cache '$TMP'/cls.percentile.cache '$TMP'/cls.mse.cache"
check "cache has the TensorRT header and hex scales" bash -c "head -1 '$TMP/cls.mse.cache' | grep -qx 'TRT-100300-EntropyCalibration2' && grep -Eq '^x: [0-9a-f]+$' '$TMP/cls.mse.cache'"
"$DLAKIT" compare "$M/ppocr_cls.onnx" "${CAL[@]}" --int8 --calib "$TMP/cls.mse.cache" --data "$IMG/ocr_calib" \
  --max-samples 8 --fix --apply "$TMP/fix.json" --html "$TMP/cmp.html" --json > "$TMP/cmp.json"; rc=$?
check "compare --json has per-layer own and end-to-end metrics" /usr/bin/python3 -c "
import json; j=json.load(open('$TMP/cmp.json'))
l=j['before']['layers']; assert len(l)>100 and all('own_rel_l2' in x and 'cosine' in x for x in l)
assert j['before']['outputs'][0]['cosine']>0.9 and 'layerPrecisions' in j['fix']"
check "compare --html is a self-contained report with an SVG chart" bash -c "grep -q '<svg' '$TMP/cmp.html' && ! grep -q '<script src' '$TMP/cmp.html'"
check "--apply writes overrides JSON" /usr/bin/python3 -c "import json; j=json.load(open('$TMP/fix.json')); assert set(j)=={'layerPrecisions','layerDeviceTypes'}"
"$DLAKIT" inspect "$M/ppocr_cls.onnx" --input-shape x:1x3x48x192 --int8 --overrides "$TMP/fix.json" > "$TMP/ovr2.txt" 2>&1; rc=$?
check "--overrides file is accepted (exit 0 or 3: a verdict, not an error)" bash -c "test $rc -eq 0 -o $rc -eq 3"
printf '{"layerPrecisions": "p2o.Conv.0:fp16"}' > "$TMP/ovr_conv0.json"
"$DLAKIT" inspect "$M/ppocr_cls.onnx" --input-shape x:1x3x48x192 --int8 --overrides "$TMP/ovr_conv0.json" > "$TMP/ovr3.txt" 2>&1
check "--overrides file's layer runs fp16 under --int8, the others int8" bash -c "grep -E -- ' p2o.Conv.0 +' '$TMP/ovr3.txt' | grep -q ' fp16 ' && grep -E -- ' p2o.Conv.1 +' '$TMP/ovr3.txt' | grep -q ' int8 '"
printf '[1, 2]' > "$TMP/notobj.json"
"$DLAKIT" inspect "$M/ppocr_cls.onnx" --input-shape x:1x3x48x192 --overrides "$TMP/notobj.json" > "$TMP/notobj.txt" 2>&1; rc=$?
check "--overrides that is not a JSON object: exit 1 naming the file" bash -c "test $rc -eq 1 && grep -q 'notobj.json: expected a JSON object' '$TMP/notobj.txt'"
"$DLAKIT" compare "$M/ppocr_cls.onnx" "${CAL[@]}" --int8 --data "$IMG/ocr_calib" --max-samples 8 > "$TMP/nocal.txt" 2>&1; rc=$?
check "--int8 without --calib: calibrates on --data" bash -c "test $rc -eq 0 && grep -q 'no --calib given: calibrated on these samples' '$TMP/nocal.txt'"
printf 'TRT-8602-EntropyCalibration2\nx 3c010204\n' > "$TMP/bad.cache"
"$DLAKIT" compare "$M/ppocr_cls.onnx" "${CAL[@]}" --int8 --calib "$TMP/bad.cache" --data "$IMG/ocr_calib" > "$TMP/bad.txt" 2>&1; rc=$?
check "malformed cache: error names the line" bash -c "test $rc -eq 1 && grep -q 'bad.cache:2' '$TMP/bad.txt'"
"$DLAKIT" qdq-to-cache "$M/resnet18_qdq.onnx" -o "$TMP/qdq.cache" --save-onnx "$TMP/noqdq.onnx" > "$TMP/qdq.txt"; rc=$?
check "qdq-to-cache folds a torch QAT export" bash -c "test $rc -eq 0 && grep -q 'per-channel weight scales' '$TMP/qdq.txt' && test \$(wc -l < '$TMP/qdq.cache') -gt 10"
"$DLAKIT" info "$TMP/noqdq.onnx" > "$TMP/noqdq.txt"; rc=$?
check "the folded model has no Q/DQ nodes" bash -c "test $rc -eq 0 && ! grep -q 'QuantizeLinear' '$TMP/noqdq.txt'"
/usr/bin/python3 -c "import numpy as np; np.save('$TMP/empty_batch.npy', np.zeros((0, 3, 48, 192), np.float32))"
"$DLAKIT" calibrate "$M/ppocr_cls.onnx" --input-shape x:1x3x48x192 --data "$TMP/empty_batch.npy" --cache "$TMP/e.cache" > "$TMP/empty.txt" 2>&1; rc=$?
check "--data .npy with batch dimension 0: exit 1 naming the file (was a division by zero)" bash -c "test $rc -eq 1 && grep -q 'empty_batch.npy.*holds no samples' '$TMP/empty.txt'"
"$DLAKIT" info "$ROOT/tests/fuzz/regressions/fuzz_onnx_import/conv_constant_inputs_no_outputs.onnx" > "$TMP/conv0.txt" 2>&1; rc=$?
check "Conv with constant inputs and no outputs: exit 1 naming the node (was SIGSEGV)" bash -c "test $rc -eq 1 && grep -q \"Conv 'Conv_1' (opset 13): has 0 outputs, expected 1\" '$TMP/conv0.txt'"
# INT8 I/O formats and INT8 hybrid plans.
"$DLAKIT" calibrate "$M/mobilenet_v2.onnx" --data "$IMG/messi5.jpg" --cache "$TMP/mb.cache" > /dev/null 2>&1
"$DLAKIT" build --onnx="$M/mobilenet_v2.onnx" --int8 --calib "$TMP/mb.cache" --inputIOFormats=int8:chw32 \
  --outputIOFormats=int8:dla_linear --saveEngine="$TMP/mb_i8io.dla" > "$TMP/i8io.txt"; rc=$?
check "build with int8:chw32 in and int8:dla_linear out" bash -c "test $rc -eq 0 && grep -q 'input  input  int8:chw32' '$TMP/i8io.txt'"
"$DLAKIT" run --loadEngine="$TMP/mb_i8io.dla" --random-inputs --output-dir "$TMP/i8out" > "$TMP/i8run.txt" 2>&1; rc=$?
check "run an int8-I/O loadable" bash -c "test $rc -eq 0 && grep -q 'INT8' '$TMP/i8run.txt'"
rc=0; "$DLAKIT" build --onnx="$M/mobilenet_v2.onnx" --inputIOFormats=int8:chw32 \
  --saveEngine="$TMP/x.dla" > "$TMP/i8bad.txt" 2>&1 || rc=$?
check "int8 I/O without --int8: exit 1, clear error" bash -c "test $rc -eq 1 && grep -q 'needs an INT8 build' '$TMP/i8bad.txt'"
"$DLAKIT" calibrate "$M/squeezenet1_1.onnx" --data "$IMG/messi5.jpg" --cache "$TMP/sq.cache" > /dev/null 2>&1
"$DLAKIT" build --onnx="$M/squeezenet1_1.onnx" --int8 --calib "$TMP/sq.cache" --allowGPUFallback --no-adjust-for-dla \
  --saveEngine="$TMP/sq.plan" > "$TMP/sqplan.txt"; rc=$?
check "INT8 hybrid plan: INT8 DLA segments + GPU" bash -c "test $rc -eq 0 && grep -q 'INT8: [1-9][0-9]* DLA layer' '$TMP/sqplan.txt'"
"$DLAKIT" run --loadEngine="$TMP/sq.plan" --random-inputs > "$TMP/sqrun.txt" 2>&1; rc=$?
check "run an INT8 hybrid plan" bash -c "test $rc -eq 0 && grep -q 'emulated DLA INT8 + GPU FP32' '$TMP/sqrun.txt'"

# Usage errors and bad arguments (a newcomer's walkthrough, thirty-third session): clear errors, no crash,
# no silent no-op.
"$DLAKIT" run "$M/resnet18.onnx" --random-inputs --top-k -1 > "$TMP/topk.txt" 2>&1; rc=$?
check "--top-k -1: usage error, exit 2 (was free(): invalid pointer)" bash -c "test $rc -eq 2 && grep -q 'top-k' '$TMP/topk.txt'"
"$DLAKIT" inspect "$TMP/nosuch.onnx" > /dev/null 2>&1; rc=$?
check "a missing model file: usage error, exit 2 (was CLI11's 105)" test "$rc" -eq 2
/usr/bin/python3 -c "import numpy as np; np.save('$TMP/x.npy', np.ones((1, 3, 224, 224), np.float32))"
"$DLAKIT" run --loadEngine="$TMP/r18.dla" --input "wrong=$TMP/x.npy" --random-inputs > "$TMP/wrong.txt" 2>&1; rc=$?
check "--input with a name the engine lacks: exit 1 naming the inputs (was ignored)" bash -c "test $rc -eq 1 && grep -q \"unknown input 'wrong'; the engine's inputs are: input\" '$TMP/wrong.txt'"
"$DLAKIT" run --loadEngine="$TMP/r18.dla" --image "$IMG/baboon.jpg" > "$TMP/engsize.txt" 2>&1; rc=$?
check "--image on --loadEngine is resized to the engine's input without --size" bash -c "test $rc -eq 0 && grep -q 'class ' '$TMP/engsize.txt'"
"$DLAKIT" run "$M/resnet18.onnx" --image "$IMG/baboon.jpg" --std 0,0,0 > "$TMP/std0.txt" 2>&1; rc=$?
check "--std 0,0,0: exit 1 (was a division by zero)" bash -c "test $rc -eq 1 && grep -q 'must be > 0' '$TMP/std0.txt'"
"$DLAKIT" run "$M/resnet18.onnx" --random-inputs --overlay "$TMP/o.png" > "$TMP/ov.txt" 2>&1; rc=$?
check "--overlay without --image: exit 1" bash -c "test $rc -eq 1 && grep -q 'add --image' '$TMP/ov.txt'"
"$DLAKIT" run "$M/resnet18.onnx" --image "$IMG/baboon.jpg" --overlay "$TMP/o.png" > "$TMP/ov2.txt" 2>&1; rc=$?
check "--overlay with no map output: a warning, no file" bash -c "test $rc -eq 0 && grep -q 'warning: --overlay' '$TMP/ov2.txt' && test ! -e '$TMP/o.png'"
"$DLAKIT" bench --loadEngine="$TMP/r18.dla" --duration 0 --iterations 2 --warmUp 0 --exportTimes "$TMP/no/t.json" > "$TMP/exp.txt" 2>&1; rc=$?
check "--exportTimes to a folder that does not exist: exit 1 (was silent)" bash -c "test $rc -eq 1 && grep -q 'cannot write' '$TMP/exp.txt'"
"$DLAKIT" bench --loadEngine="$TMP/cls.plan" > "$TMP/benchplan.txt" 2>&1; rc=$?
check "bench on a hybrid plan: exit 1 pointing to run --loadEngine" bash -c "test $rc -eq 1 && grep -q 'is a hybrid plan' '$TMP/benchplan.txt'"
"$DLAKIT" run --loadEngine="$TMP/r18.dla" --random-inputs --dumpProfile > "$TMP/runprof.txt" 2>&1; rc=$?
check "run --loadEngine --dumpProfile: exit 1 pointing to bench (printed nothing before)" bash -c "test $rc -eq 1 && grep -q 'bench --loadEngine' '$TMP/runprof.txt'"
"$DLAKIT" inspect "$M/resnet18.onnx" --json --explain /fc/Gemm > "$TMP/exj.json"; rc=$?
check "inspect --explain --json prints the layer's JSON entry" /usr/bin/python3 -c "
import json; j=json.load(open('$TMP/exj.json'))
assert $rc == 0 and [l['name'] for l in j['layers']] == ['/fc/Gemm'] and j['name'] == '/fc/Gemm', j"
"$DLAKIT" inspect "$M/ppocr_det.onnx" --input-shape x:1x3x640x640 --json --explain p2o.BatchNormalization.0 > "$TMP/exfold.json"; rc=$?
check "inspect --explain --json on a layer a pass folded: no layer, the pass's remark (printed nothing before)" /usr/bin/python3 -c "
import json; j=json.load(open('$TMP/exfold.json'))
assert $rc == 0 and j['layers'] == [] and j['remarks'][0]['pass'] == 'fold-batchnorm', j"

finish
