#!/usr/bin/env bash
# The INT8 workflow on the command line (issue #13): auto calibration, the collapse warning, task metrics,
# the --fix-target search and its overrides, calibration inside build, weight edits, cache headers.
source "$(dirname "$0")/check_lib.sh" "$@"
REC=(--input-shape x:1x3x48x320 --mean 0.5,0.5,0.5 --std 0.5,0.5,0.5)
CLS=(--input-shape x:1x3x48x192 --mean 0.5,0.5,0.5 --std 0.5,0.5,0.5)
LABELS="$M/ppocr_keys_v1.txt"

# TensorRT's default calibrator collapses PP-OCRv4 rec: calibrate says so, names the layers and the fix.
"$DLAKIT" calibrate "$M/ppocr_rec.onnx" "${REC[@]}" --data "$IMG/ocr_calib" --max-samples 8 --calib-algo entropy2 \
  --metric ctc-cer --labels "$LABELS" --cache "$TMP/rec.e2.cache" > "$TMP/e2.out" 2> "$TMP/e2.err"; rc=$?
check "entropy2 on rec: the cache is still written" bash -c "test $rc -eq 0 && head -1 '$TMP/rec.e2.cache' | grep -q EntropyCalibration2"
check "entropy2 on rec: a collapse warning with the CER" bash -c "grep -q '^warning: INT8 falls below the warning threshold' '$TMP/e2.err' && grep -q 'CER 100.00 %' '$TMP/e2.err'"
check "the warning names the worst layers and the command that fixes it" bash -c "grep -q 'relative L2' '$TMP/e2.err' && grep -q 'dlakit compare .*--metric ctc-cer .*--fix --fix-target 0.05 --apply fix.json' '$TMP/e2.err'"
"$DLAKIT" calibrate "$M/ppocr_rec.onnx" "${REC[@]}" --data "$IMG/ocr_calib" --max-samples 8 --calib-algo entropy2 \
  --cache "$TMP/rec.e2.cache" --json > "$TMP/e2.json" 2> /dev/null
check "--json carries the collapse; --metric auto reads rec's output as CTC" /usr/bin/python3 -c "
import json; c=json.load(open('$TMP/e2.json'))['check']
assert c['collapsed'] and c['metric']=='ctc-cer' and c['value']>0.9 and len(c['worst_layers'])==5 and 'fix_command' in c"

# The default (auto) on cls: every calibrator measured, the best written; no warning when INT8 holds.
"$DLAKIT" calibrate "$M/ppocr_cls.onnx" "${CLS[@]}" --data "$IMG/ocr_calib" --max-samples 16 --cache "$TMP/cls.cache" \
  > "$TMP/auto.out" 2> "$TMP/auto.err"; rc=$?
check "auto is the default and resolves --metric auto to top1 on a softmax" bash -c "test $rc -eq 0 && grep -q -- '--metric auto: top1' '$TMP/auto.err'"
check "auto prints every candidate and the best" bash -c "for c in entropy2 minmax mse 'percentile 99.9 ' 'percentile 99.999 '; do grep -q \"\$c\" '$TMP/auto.out' || exit 1; done; grep -q '<- best' '$TMP/auto.out'"
check "auto's cache has the DLA's header" bash -c "head -1 '$TMP/cls.cache' | grep -qx 'TRT-100300-EntropyCalibration2'"

# Task metrics and the search: compare --fix --fix-target writes overrides that build reads.
"$DLAKIT" calibrate "$M/ppocr_cls.onnx" "${CLS[@]}" --data "$IMG/ocr_calib" --max-samples 16 --calib-algo entropy2 \
  --cache "$TMP/cls.e2.cache" > /dev/null 2>&1
"$DLAKIT" compare "$M/ppocr_cls.onnx" "${CLS[@]}" --int8 --calib "$TMP/cls.e2.cache" --data "$IMG/ocr_calib" \
  --max-samples 16 --metric cosine --fix --fix-target 0.99999 --fix-candidates 4 --apply "$TMP/fix.json" --json > "$TMP/search.json"; rc=$?
check "--fix-target: a curve of measured points, each with its MAC share, and a chosen one that meets" /usr/bin/python3 -c "
import json; s=json.load(open('$TMP/search.json'))['search']
assert s['reachable'] and s['reached'] and s['chosen']['meets'] and s['chosen']['metric']>=0.99999
ms=[p['moves'] for p in s['curve']]; assert ms[0]==0 and not s['curve'][0]['meets'] and ms[-1]==-1
assert all(0<=p['int8_mac_share']<=1 and 'predicted_latency_ms' in p for p in s['curve'])
assert sum(1 for r in s['ranking'] if 'alone_metric' in r)==4"
"$DLAKIT" compare "$M/ppocr_cls.onnx" "${CLS[@]}" --int8 --calib "$TMP/cls.e2.cache" --data "$IMG/ocr_calib" \
  --max-samples 16 --metric cosine --fix --fix-target 0.99999 --fix-candidates 4 --fix-return-groups --json > "$TMP/groups.json"; rc=$?
check "--fix-return-groups: fused groups are returned to INT8, and the chosen point keeps more MACs INT8 and meets" /usr/bin/python3 -c "
import json; s=json.load(open('$TMP/search.json'))['search']; g=json.load(open('$TMP/groups.json'))['search']
assert $rc==0 and g['reached'] and g['chosen']['meets'] and g['chosen']['metric']>=0.99999
assert any('+' in p.get('returned_layer', '') for p in g['curve'])
assert g['chosen']['int8_mac_share'] > s['chosen']['int8_mac_share']"
check "--apply writes the chosen moves" /usr/bin/python3 -c "import json; j=json.load(open('$TMP/fix.json')); assert ':fp16' in j['layerPrecisions']"
"$DLAKIT" build --onnx="$M/ppocr_cls.onnx" --input-shape x:1x3x48x192 --int8 --calib "$TMP/cls.e2.cache" --allowGPUFallback \
  --overrides "$TMP/fix.json" --saveEngine "$TMP/cls.plan" > "$TMP/build.txt" 2>&1; rc=$?
check "build reads the overrides" bash -c "test $rc -eq 0 && grep -q 'INT8: [0-9]* DLA layer' '$TMP/build.txt'"
printf 'a\nb\nc\n' > "$TMP/abc.txt"
"$DLAKIT" compare "$M/ppocr_rec.onnx" "${REC[@]}" --int8 --calib "$TMP/rec.e2.cache" --data "$IMG/ocr_calib" \
  --max-samples 2 --metric ctc-cer --labels "$TMP/abc.txt" > "$TMP/badlabels.txt" 2>&1; rc=$?
check "ctc-cer with labels that do not fit the classes: a clear error" bash -c "test $rc -eq 1 && grep -q 'with --labels of 3 characters' '$TMP/badlabels.txt'"
# --truth: the CER INT8 adds over FP32's, both against the expected readings (PaddleOCR's label file).
"$DLAKIT" compare "$M/ppocr_rec.onnx" "${REC[@]}" --int8 --calib "$TMP/rec.e2.cache" --data "$IMG/ocr_calib" \
  --max-samples 4 --metric ctc-cer --labels "$LABELS" --truth "$IMG/ocr_calib/labels.tsv" > "$TMP/truth.txt" 2>&1; rc=$?
check "--truth: entropy2's collapse is measured against the labels, as points over FP32" bash -c "test $rc -eq 0 && grep -Eq 'CER \+[5-9][0-9]\.[0-9]{2} points over FP32 against the truth' '$TMP/truth.txt'"
(sed -n 2p "$IMG/ocr_calib/labels.tsv"; sed -n 1p "$IMG/ocr_calib/labels.tsv"; sed -n '3,$p' "$IMG/ocr_calib/labels.tsv") > "$TMP/swapped.tsv"
"$DLAKIT" compare "$M/ppocr_rec.onnx" "${REC[@]}" --int8 --calib "$TMP/rec.e2.cache" --data "$IMG/ocr_calib" \
  --max-samples 4 --metric ctc-cer --labels "$LABELS" --truth "$TMP/swapped.tsv" > "$TMP/swapped.txt" 2>&1; rc=$?
check "--truth out of --data's order: a clear error naming the line and the sample" bash -c "test $rc -eq 1 && grep -q \"line 1 is for 'line_001.png' but sample 1 of --data is '.*line_000.png'\" '$TMP/swapped.txt'"
"$DLAKIT" compare "$M/ppocr_cls.onnx" "${CLS[@]}" --int8 --calib "$TMP/cls.e2.cache" --data "$IMG/ocr_calib" \
  --max-samples 2 --metric top1 --truth "$IMG/ocr_calib/labels.tsv" > "$TMP/truthtop1.txt" 2>&1; rc=$?
check "--truth with a metric other than ctc-cer: a clear error" bash -c "test $rc -eq 1 && grep -q 'expected readings for --metric ctc-cer; the metric is top1' '$TMP/truthtop1.txt'"
"$DLAKIT" compare "$M/ppocr_cls.onnx" "${CLS[@]}" --fp16 --data "$IMG/ocr_calib" --max-samples 2 --fix --fix-target 0.9 \
  > "$TMP/fp16t.txt" 2>&1; rc=$?
check "--fix-target with --fp16: a clear error" bash -c "test $rc -eq 1 && grep -q 'use it with --int8' '$TMP/fp16t.txt'"

# build --int8 with --data and no cache: calibrates (auto) and measures, like calibrate.
"$DLAKIT" build --onnx="$M/ppocr_cls.onnx" "${CLS[@]}" --int8 --data "$IMG/ocr_calib" --max-samples 8 --allowGPUFallback \
  --saveEngine "$TMP/cls2.plan" > "$TMP/b2.txt" 2>&1; rc=$?
check "build --int8 --data calibrates and checks" bash -c "test $rc -eq 0 && grep -q 'calibrated on 8 samples of --data with' '$TMP/b2.txt' && grep -q 'INT8 holds on 8 sample' '$TMP/b2.txt'"

# Weight edits need a model to go to; the tuned model builds with the cache.
"$DLAKIT" calibrate "$M/ppocr_cls.onnx" "${CLS[@]}" --data "$IMG/ocr_calib" --max-samples 8 --bias-correction \
  --cache "$TMP/t.cache" > "$TMP/t1.txt" 2>&1; rc=$?
check "--bias-correction without --save-onnx: a clear error" bash -c "test $rc -eq 1 && grep -q 'give --save-onnx FILE' '$TMP/t1.txt'"
"$DLAKIT" calibrate "$M/ppocr_cls.onnx" "${CLS[@]}" --data "$IMG/ocr_calib" --max-samples 8 --bias-correction --weight-rounding \
  --cache "$TMP/t.cache" --save-onnx "$TMP/tuned.onnx" > "$TMP/t2.txt" 2>&1; rc=$?
check "--bias-correction --weight-rounding tune the convolutions and save the model" bash -c "test $rc -eq 0 && grep -q 'tuned [1-9][0-9]* INT8 convolution' '$TMP/t2.txt' && test -s '$TMP/tuned.onnx'"
"$DLAKIT" build --onnx="$TMP/tuned.onnx" --int8 --calib "$TMP/t.cache" --allowGPUFallback --saveEngine "$TMP/tuned.plan" \
  > "$TMP/t3.txt" 2>&1; rc=$?
check "the tuned model builds with its cache, no name left over" bash -c "test $rc -eq 0 && ! grep -q 'warning' '$TMP/t3.txt'"

# Cache headers per JetPack.
"$DLAKIT" qdq-to-cache "$M/resnet18_qdq.onnx" -o "$TMP/q.cache" --jetpack 5.1 > /dev/null; rc=$?
check "--jetpack 5.1 writes TensorRT 8.5.2's header; 34 entries like the qdq-translator" bash -c "test $rc -eq 0 && head -1 '$TMP/q.cache' | grep -qx 'TRT-8502-EntropyCalibration2' && test \$(wc -l < '$TMP/q.cache') -eq 35"

finish
