#!/usr/bin/env bash
# A remote driver's committed ABI (forwarder/remote/spec/LIB.remote) is what
# tools/generate/gen_remote_abi.py makes of the library's header now.
# abi_check.sh PYTHON SOURCE_ROOT LIB HEADER CC...   Skips (77) without the header;
# NVML_H, when set, names nvml.h instead.
set -u
python=$1 src=$2 lib=$3 header=$4
[ "$lib" = nvml ] && [ -n "${NVML_H:-}" ] && header=$NVML_H
shift 4
[ -f "$header" ] || { echo "no $header: skipped"; exit 77; }
"$python" -c "import pycparser" 2>/dev/null || { echo "no pycparser: skipped"; exit 77; }
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
"$python" "$src/tools/generate/gen_remote_abi.py" --cc "$*" --lib "$lib" --header "$header" \
    --merge "$src/forwarder/remote/spec/$lib.remote" \
    --symbols "$src/interpose/$lib.symbols" >"$out" || exit 1
if ! diff -u "$src/forwarder/remote/spec/$lib.remote" "$out"; then
    echo "FAIL: forwarder/remote/spec/$lib.remote is not what gen_remote_abi.py makes of $header: run it again"
    exit 1
fi
echo "ok: $(awk '$2 == "carried"' "$out" | wc -l) carried, $(awk '$2 == "manual"' "$out" | wc -l) manual, $(awk '$2 == "absent"' "$out" | wc -l) absent"
