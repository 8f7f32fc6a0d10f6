#!/usr/bin/env bash
# Runs the fuzz targets from the corpora kept in the repository (tests/fuzz/corpus/<target>, minimised,
# seeded from real files by seed_corpora.sh) with their dictionaries (tests/fuzz/dict/<target>.dict).
#
#   run.sh BUILD ci        what `make test` runs: every crash found before (tests/fuzz/regressions/<target>)
#                          is replayed, then each target runs a fixed number of inputs with a fixed seed on a
#                          scratch copy of its corpus. Deterministic and short; writes nothing back.
#   run.sh BUILD N         a campaign: all targets at once, N seconds each, random seeds. Inputs that add
#                          coverage are merged back into tests/fuzz/corpus (libFuzzer -merge=1 keeps only
#                          those; edges, not hit counts, so the corpora stay small), crashes are kept in
#                          BUILD/fuzz-artifacts/, and each target's executions are appended to BUILD/fuzz-campaigns.tsv (for docs/reliability.md).
#   run.sh BUILD minimize  re-minimises every corpus in place (merge into an empty directory).
#
# FUZZ_TARGETS="fuzz_npy fuzz_image" limits a run to some targets; FUZZ_INSTANCES=N runs N instances of each
# target in a campaign (a machine with more cores than targets), each on its own copy of the corpus, all
# merged back and their executions summed.
set -euo pipefail
BUILD="$1"; MODE="${2:-ci}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
FUZZ="$ROOT/tests/fuzz"
BIN="$BUILD/tests/fuzz"

# target  max input bytes  inputs in the CI run
TABLE="
fuzz_onnx_import 16384  100000
fuzz_npy          4096  400000
fuzz_loadable    16384   20000
fuzz_calib_cache  4096  200000
fuzz_image       16384   50000
fuzz_plan        32768    5000
fuzz_overrides    1024  100000
fuzz_module      16384    5000
fuzz_capi         2048   20000
"
TARGETS="${FUZZ_TARGETS:-$(awk 'NF {print $1}' <<<"$TABLE")}"
field() { awk -v t="$1" -v c="$2" '$1 == t {print $c}' <<<"$TABLE"; }

mkdir -p "$BUILD/fuzz-artifacts" "$BUILD/fuzz-logs"
SCRATCH="$BUILD/fuzz-work"

# common libFuzzer flags of a target
flags() {
  local t="$1" f=(-max_len="$(field "$t" 2)" -rss_limit_mb=2048 -timeout=20 -report_slow_units=60 -print_final_stats=1
                  -artifact_prefix="$BUILD/fuzz-artifacts/$t-")
  [ -f "$FUZZ/dict/$t.dict" ] && f+=(-dict="$FUZZ/dict/$t.dict")
  echo "${f[@]}"
}

replay_regressions() {
  local t="$1"
  [ -d "$FUZZ/regressions/$t" ] || return 0
  # shellcheck disable=SC2046
  if ! "$BIN/$t" $(flags "$t") -runs=0 "$FUZZ/regressions/$t" > "$BUILD/fuzz-logs/$t.regressions.log" 2>&1; then
    grep -v -e '^#' -e 'NEW_FUNC' "$BUILD/fuzz-logs/$t.regressions.log" | tail -30
    echo "fuzz: $t crashes again on a recorded regression input"
    return 1
  fi
}

# Runs one target (instance NAME: the target, or target.K) on a scratch copy of its corpus; then extra
# libFuzzer flags.
run_target() {
  local name="$1"; shift
  local t="${name%%.*}"
  rm -rf "${SCRATCH:?}/$name" && mkdir -p "$SCRATCH/$name"
  [ -d "$FUZZ/corpus/$t" ] && cp "$FUZZ/corpus/$t/"* "$SCRATCH/$name/" 2>/dev/null || true
  # shellcheck disable=SC2046
  "$BIN/$t" $(flags "$t") "$@" "$SCRATCH/$name" > "$BUILD/fuzz-logs/$name.log" 2>&1
}

# Executions in the given logs, summed (the instances of a campaign).
executions() {
  cat "$@" 2>/dev/null | grep -o 'stat::number_of_executed_units: *[0-9]*' | grep -o '[0-9]*$' |
    awk '{s += $1} END {print s + 0}'
}

case "$MODE" in
  minimize)
    for t in $TARGETS; do
      rm -rf "${SCRATCH:?}/min-$t" && mkdir -p "$SCRATCH/min-$t"
      # shellcheck disable=SC2046
      "$BIN/$t" $(flags "$t") -merge=1 -use_counters=0 "$SCRATCH/min-$t" "$FUZZ/corpus/$t" > "$BUILD/fuzz-logs/$t.min.log" 2>&1
      before=$(ls "$FUZZ/corpus/$t" | wc -l)
      rm -rf "${FUZZ:?}/corpus/$t" && mv "$SCRATCH/min-$t" "$FUZZ/corpus/$t"
      echo "$t: $before -> $(ls "$FUZZ/corpus/$t" | wc -l) files ($(du -sk "$FUZZ/corpus/$t" | cut -f1) KiB)"
    done
    exit 0 ;;
  ci)
    # One thread: the executors' worker threads make coverage, and so the inputs libFuzzer keeps, depend on
    # scheduling; with one the same seed gives the same run on every machine.
    export DLAKIT_NUM_THREADS=1
    failed=0
    for t in $TARGETS; do replay_regressions "$t" || failed=1; done
    pids=()
    for t in $TARGETS; do run_target "$t" -seed=1 -runs="$(field "$t" 3)" & pids+=($!); done
    i=0
    for t in $TARGETS; do
      if ! wait "${pids[$i]}"; then
        grep -v -e '^#' -e 'NEW_FUNC' "$BUILD/fuzz-logs/$t.log" | tail -30
        echo "fuzz: $t FAILED; the input is in $BUILD/fuzz-artifacts/"
        failed=1
      else
        echo "fuzz: $t $(executions "$BUILD/fuzz-logs/$t.log") inputs, no crash"
      fi
      i=$((i + 1))
    done
    [ "$failed" -eq 0 ] && echo "fuzz: every target ran its deterministic smoke run (and its regressions) without a crash"
    exit "$failed" ;;
  *[!0-9]*|'')
    echo "usage: run.sh BUILD ci|SECONDS|minimize" >&2; exit 2 ;;
esac

# A campaign.
INSTANCES="${FUZZ_INSTANCES:-1}"
failed=0
for t in $TARGETS; do replay_regressions "$t" || failed=1; done
declare -A pids
for t in $TARGETS; do
  rm -f "$BUILD/fuzz-logs/$t.log" "$BUILD/fuzz-logs/$t".[0-9]*.log
  for k in $(seq 1 "$INSTANCES"); do
    run_target "$t.$k" -max_total_time="$MODE" & pids[$t.$k]=$!
  done
done
for t in $TARGETS; do
  rc=0
  for k in $(seq 1 "$INSTANCES"); do wait "${pids[$t.$k]}" || rc=$?; done
  before=$(ls "$FUZZ/corpus/$t" 2>/dev/null | wc -l)
  mkdir -p "$FUZZ/corpus/$t"
  # shellcheck disable=SC2046
  "$BIN/$t" $(flags "$t") -merge=1 -use_counters=0 "$FUZZ/corpus/$t" "$SCRATCH/$t".* > "$BUILD/fuzz-logs/$t.merge.log" 2>&1 || true
  added=$(( $(ls "$FUZZ/corpus/$t" | wc -l) - before ))
  runs=$(executions "$BUILD/fuzz-logs/$t".[0-9]*.log)
  crash=$([ "$rc" -eq 0 ] && echo none || echo "$(ls -t "$BUILD/fuzz-artifacts/$t-"* 2>/dev/null | head -1)")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "$MODE" "$runs" "$added" "$crash" \
    "$INSTANCES" >> "$BUILD/fuzz-campaigns.tsv"
  echo "fuzz: $t $runs executions ($INSTANCES instance(s) of $MODE s), $added new corpus inputs, crash: $crash"
  [ "$rc" -eq 0 ] || failed=1
done
exit "$failed"
