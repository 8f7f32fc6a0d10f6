# dlakit: the two commands a newcomer needs are `make demo` and `make test`; each does its own set-up.
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
JOBS       ?= 2
FUZZ_SECONDS ?= ci
CMAKE_GEN  := -G Ninja
# ccache where it is installed (setup installs it; make decides before setup runs, so a machine's first
# `make` builds without it). Paths are hashed relative to the tree, so a fresh clone at another path on the
# same machine reuses the cache (CI's reruns).
ifneq ($(shell command -v ccache 2>/dev/null),)
CMAKE_GEN += -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := true
endif

PREFIX     ?= /usr/local

.PHONY: all setup fetch build test test-fast test-asan fuzz demo bench format clean install package package-check

all: build

setup:            ## install system packages (Debian apt; run as root)
	bash scripts/setup-deps.sh

fetch: setup      ## download/export models and images into .cache/ (checksummed)
	bash scripts/fetch-models.sh

$(BUILD)/build.ninja: CMakeLists.txt
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release

build: setup $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

test-fast: build fetch   ## unit tests, ONNX conformance and the real-model comparison with ONNX Runtime
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	cp $(BUILD)/conformance.md docs/conformance.md
	cp $(BUILD)/model_comparison.md docs/model-comparison.md
	cp $(BUILD)/accuracy.md docs/accuracy.md

test-asan: setup fetch   ## the unit and conformance tests again under AddressSanitizer + UBSan
	cmake -S . -B $(ASAN_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDLAKIT_SANITIZE=ON -DDLAKIT_BENCH=OFF
	cmake --build $(ASAN_BUILD) -j $(JOBS) --target dlakit_unit_tests dlakit_conformance dlakit_capi_tests cudla_hybrid_steps dlakit_cudla_client_tests dlakit_stress_tests
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS) -L "unit|conformance"

fuzz: setup       ## libFuzzer, 9 targets (parsers, runtime, C ABI) from the corpora in tests/fuzz/corpus; FUZZ_SECONDS=ci: deterministic smoke run; =N: N s each in parallel, new coverage merged back
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDLAKIT_FUZZ=ON -DDLAKIT_BENCH=OFF
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_all
	bash tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

test: test-fast test-asan fuzz   ## everything CI runs

demo: build fetch ## PP-OCRv4 text detection on a real photo: heat map PNG and timing
	bash scripts/demo.sh $(BUILD)

bench: build fetch ## reference engine, and the emulated DLA (INT8, FP16) on the CPU, vs ONNX Runtime, same run; writes docs/benchmarks.md
	bash bench/run.sh $(BUILD)
	bash bench/emulated_cpu.sh $(BUILD)

install: build    ## the CLI, libdlakit + headers, CMake package, pkg-config file, Python module, lib/dlakit/libcudla.so.1 into $(PREFIX)
	cmake --install $(BUILD) --prefix $(PREFIX)

package: build    ## a .deb of all of it (CPack), in $(BUILD)/
	cd $(BUILD) && cpack -G DEB

package-check: package fetch   ## apt-installs the .deb (root), checks its CLI, C++ package and Python module under /usr, removes it
	apt-get install -y ./$(BUILD)/dlakit_*.deb
	rc=0; bash tests/package/package_test.sh --system /usr . /usr/bin/python3 || rc=$$?; \
	  apt-get remove -y dlakit; exit $$rc

format:
	clang-format -i $$(git ls-files '*.cpp' '*.h' '*.inc')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) out
