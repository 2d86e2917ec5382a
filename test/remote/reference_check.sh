#!/usr/bin/env bash
# docs/reference/remote-calls.md is what tools/generate/gen_remote_doc.py
# writes from the call specs now.
# reference_check.sh PYTHON SOURCE_ROOT
set -u
python=$1 src=$2
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
"$python" "$src/tools/generate/gen_remote_doc.py" "$src/forwarder/remote/spec/cuda.remote" \
    "$src/forwarder/remote/spec/nvml.remote" >"$out" || exit 1
if ! diff -u "$src/docs/reference/remote-calls.md" "$out"; then
    echo "FAIL: docs/reference/remote-calls.md is not what the specs say: run tools/generate/gen_remote_doc.py again"
    exit 1
fi
echo "ok: docs/reference/remote-calls.md says what the specs declare"
