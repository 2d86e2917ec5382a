#!/usr/bin/env bash
# The remote driver's committed ABI (forwarder/remote/cuda.remote) is what
# tools/generate/gen_remote_abi.py makes of a toolkit's cuda.h now.
# abi_check.sh PYTHON SOURCE_ROOT CUDA_INCLUDE CC...   Skips (77) without the toolkit's cuda.h.
set -u
python=$1 src=$2 inc=$3
shift 3
[ -f "$inc/cuda.h" ] || { echo "no cuda.h in $inc: skipped"; exit 77; }
"$python" -c "import pycparser" 2>/dev/null || { echo "no pycparser: skipped"; exit 77; }
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
"$python" "$src/tools/generate/gen_remote_abi.py" --cc "$*" --cuda-h "$inc/cuda.h" \
    --symbols "$src/interpose/cuda.symbols" >"$out" || exit 1
if ! diff -u "$src/forwarder/remote/cuda.remote" "$out"; then
    echo "FAIL: forwarder/remote/cuda.remote is not what gen_remote_abi.py makes of $inc/cuda.h: run it again"
    exit 1
fi
echo "ok: $(awk '$2 == "carried"' "$out" | wc -l) carried, $(awk '$2 == "manual"' "$out" | wc -l) manual, $(awk '$2 == "absent"' "$out" | wc -l) absent"
