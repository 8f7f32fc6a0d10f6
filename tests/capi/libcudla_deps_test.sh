#!/usr/bin/env bash
# libcudla.so.1 is the runtime side only: it needs no protobuf or ONNX library, contains none of the
# compiler (importer, passes, placement, quantizer, lowering), and exports the cuDLA C ABI alone.
#   libcudla_deps_test.sh path/to/libcudla.so.1
set -u
LIB="$1"; fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi; }
needed=$(readelf -d "$LIB" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p')
echo "NEEDED: $(echo $needed)"
check "links no protobuf/ONNX/flatbuffers library" "! echo \"$needed\" | grep -qiE 'protobuf|onnx|flatbuffers'"
check "needs only the C/C++ runtime libraries" \
  "! echo \"$needed\" | grep -vqE '^(libstdc\+\+|libm|libgcc_s|libc|ld-linux-x86-64|libdl|libpthread|librt|libasan|libubsan)\.so'"
symbols=$(nm -C "$LIB" 2>/dev/null)
# A positive control: the symbol table is there (a stripped library would make the next check vacuous).
check "the symbol table shows the runtime (dlakit::rt::Module)" "echo \"\$symbols\" | grep -q 'dlakit::rt::Module::Module'"
compiler=$(echo "$symbols" | grep -E 'google::protobuf|onnx::|dlakit::import_onnx|dlakit::run_passes|dlakit::place\(|dlakit::quant::(plan_numerics|step_rules|HistogramCollector)|dlakit::compiler::|dlakit::write_loadable' | head -5)
check "contains no compiler code${compiler:+ (found: $compiler)}" "test -z \"\$compiler\""
exports=$(nm -D --defined-only "$LIB" | awk '{print $3}')
check "exports the 16 cuDLA functions" "test \$(echo \"\$exports\" | grep -c '^cudla') -eq 16"
check "exports nothing but cudla* and dlakitCudla*" "! echo \"\$exports\" | grep -vqE '^(cudla|dlakitCudla)'"
exit $fail
