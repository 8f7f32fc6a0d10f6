#!/usr/bin/env bash
# dlakit as an installed library: `cmake --install` into a temporary prefix, then the installed CLI, a C++
# program built against the installed package with CMake (find_package) and with pkg-config, the installed
# Python module, and dlakit's libcudla.so.1 from lib/dlakit through `--backend=cudla:`; every one of them
# builds BlazeFace's FP16 loadable and the bytes must be the same. Then `cpack` builds the .deb: its
# contents, its dependencies (dpkg --dry-run, as root), and the unpacked tree used the same way.
# With --system PREFIX it checks an installed package instead (e.g. /usr after `apt install ./dlakit*.deb`).
# usage: package_test.sh BUILD_DIR SOURCE_DIR PYTHON   |   package_test.sh --system PREFIX SOURCE_DIR PYTHON
set -euo pipefail
MODE=build
if [ "$1" = --system ]; then MODE=system; shift; fi
BUILD=$(realpath "$1") SRC=$(realpath "$2") PY=$3
MODEL="$SRC/.cache/models/blazeface_128.onnx"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
check() {  # check "what" command...
  local what=$1; shift
  if "$@" > "$TMP/check.log" 2>&1; then echo "ok   $what"; else echo "FAIL $what"; sed 's/^/     /' "$TMP/check.log" | tail -20; fails=$((fails + 1)); fi
}

# Everything a user of PREFIX does; the loadables all land in $TMP/$2.*.dla
use_tree() {  # use_tree PREFIX TAG [pkg-config-only]
  local prefix=$1 tag=$2
  check "$tag: the installed files" bash -c "for f in bin/dlakit lib/libdlakit.a include/dlakit/workflow/build.h \
    include/dlakit/cudla.h include/dlakit/program_generated.h lib/cmake/dlakit/dlakitConfig.cmake \
    lib/pkgconfig/dlakit.pc lib/dlakit/libcudla.so.1 lib/python3/dist-packages/dlakit/__init__.py; do \
    test -e '$prefix/'\$f || { echo missing \$f; exit 1; }; done; ls '$prefix'/lib/python3/dist-packages/dlakit/_core*.so"
  check "$tag: no libcudla outside lib/dlakit" bash -c "! find '$prefix' -name 'libcudla*' -not -path '*/lib/dlakit/*' | grep ."
  check "$tag: the CLI builds a loadable" "$prefix/bin/dlakit" build --onnx="$MODEL" --saveEngine="$TMP/$tag.cli.dla"
  check "$tag: the CLI runs it through lib/dlakit/libcudla.so.1" "$prefix/bin/dlakit" run --loadEngine="$TMP/$tag.cli.dla" \
    --random-inputs --backend="cudla:$prefix/lib/dlakit/libcudla.so.1"
  check "$tag: the Python module imports from the prefix and builds" env PYTHONPATH="$prefix/lib/python3/dist-packages" \
    "$PY" -c "import dlakit, sys; assert dlakit.__file__.startswith('$prefix'), dlakit.__file__; \
dlakit.build(dlakit.load('$MODEL')).save('$TMP/$tag.py.dla')"
  if [ "${3:-}" != pkg-config-only ]; then
    check "$tag: a C++ program with find_package(dlakit)" bash -c "cmake -S '$SRC/tests/package/consumer' -B '$TMP/$tag.cmake' \
      -G Ninja -DCMAKE_PREFIX_PATH='$prefix' -DCMAKE_BUILD_TYPE=Release && cmake --build '$TMP/$tag.cmake' && \
      '$TMP/$tag.cmake/consumer' '$MODEL' '$TMP/$tag.cmake.dla'"
  fi
  check "$tag: a C++ program with pkg-config" bash -c "g++ -std=c++20 -O1 '$SRC/tests/package/consumer/main.cpp' -o '$TMP/$tag.pc' \
    \$(PKG_CONFIG_PATH='$prefix/lib/pkgconfig' pkg-config --cflags --libs dlakit) && '$TMP/$tag.pc' '$MODEL' '$TMP/$tag.pc.dla'"
  check "$tag: CLI, Python and C++ wrote the same bytes" bash -c "ls '$TMP'/$tag.*.dla | wc -l | grep -qx '[34]' && \
    for f in '$TMP'/$tag.*.dla; do cmp '$TMP/$tag.cli.dla' \"\$f\" || exit 1; done"
}

if [ "$MODE" = system ]; then
  use_tree "$BUILD" system
else
  check "cmake --install into a temporary prefix" cmake --install "$BUILD" --prefix "$TMP/prefix"
  use_tree "$TMP/prefix" installed
  check "cpack builds the .deb" bash -c "cd '$TMP' && cpack -G DEB --config '$BUILD/CPackConfig.cmake' -B '$TMP/deb' > cpack.log"
  DEB=$(ls "$TMP"/deb/dlakit_*.deb 2>/dev/null | head -1)
  check "the .deb holds the CLI, library, CMake package, pkg-config file, Python module and lib/dlakit/libcudla.so.1" \
    bash -c "dpkg-deb -c '$DEB' > '$TMP/deb.list' && for f in ./usr/bin/dlakit ./usr/lib/libdlakit.a ./usr/lib/cmake/dlakit/dlakitConfig.cmake \
      ./usr/lib/pkgconfig/dlakit.pc ./usr/lib/dlakit/libcudla.so.1 ./usr/lib/python3/dist-packages/dlakit/__init__.py; do \
      grep -q \" \$f\" '$TMP/deb.list' || { echo missing \$f; exit 1; }; done"
  check "the .deb depends on numpy and the C++ package's dependencies" bash -c \
    "dpkg-deb -f '$DEB' Depends | tee /dev/stderr | grep -q python3-numpy && dpkg-deb -f '$DEB' Depends | grep -q libonnx-dev"
  if [ "$(id -u)" = 0 ]; then  # what apt would check: every dependency is satisfiable here (nothing is installed)
    check "dpkg --dry-run -i accepts the .deb" dpkg --dry-run -i "$DEB"
  else
    echo "skip dpkg --dry-run -i (needs root)"
  fi
  check "unpack the .deb" dpkg-deb -x "$DEB" "$TMP/root"
  use_tree "$TMP/root/usr" unpacked pkg-config-only
fi
[ "$fails" = 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all package checks passed"
