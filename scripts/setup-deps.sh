#!/usr/bin/env bash
# Installs every system dependency from Debian apt. Idempotent, non-interactive; run as root.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build pkg-config git ccache
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcli11-dev libstb-dev libjpeg-dev libflatbuffers-dev flatbuffers-compiler
  clang clang-format libclang-rt-14-dev
  nodejs
  python3-numpy python3-pil python3-torch python3-torchvision
  python3-dev pybind11-dev python3-pytest
  fonts-dejavu-core fonts-wqy-microhei
  chromium
)
missing=()
# npm ships inside the nodejs package on these machines; only install the Debian npm when absent.
command -v npm >/dev/null || PKGS+=(npm)
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-deps: all ${#PKGS[@]} packages present"
  exit 0
fi
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
echo "setup-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
