# Sourced by the CLI test scripts (`source check_lib.sh "$@"` with DLAKIT and ROOT as arguments): the
# paths, a temporary folder removed on exit, `check NAME COMMAND...` that counts, `has FILE TEXT`, and
# `finish`, which prints the counts and fails when a check failed.
set -uo pipefail
DLAKIT="$1"; ROOT="$2"
M="$ROOT/.cache/models"; IMG="$ROOT/.cache/images"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
pass=0; failn=0
check() {  # check NAME CONDITION...
  local name="$1"; shift
  if "$@"; then pass=$((pass + 1)); else failn=$((failn + 1)); echo "FAIL: $name"; fi
}
has() { grep -q -- "$2" "$1"; }
finish() {
  echo "$pass passed, $failn failed"
  test "$failn" -eq 0
}
