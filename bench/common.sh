# Sourced by the bench scripts: the build folder (their first argument), the repository root, the model
# cache, a temporary folder removed on exit, and the Python with numpy.
set -euo pipefail
BUILD="${1:-build}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
M="$ROOT/.cache/models"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
PY=/usr/bin/python3
