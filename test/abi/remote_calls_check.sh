#!/usr/bin/env bash
# docs/reference/remote-calls.md is what tools/generate/gen_remote_doc.py
# writes from the call specs now.
# remote_calls_check.sh PYTHON SOURCE_ROOT
python=$1 src=$2
# shellcheck source=test/common/lib.sh
. "$(dirname "$(realpath "$0")")/../common/lib.sh"
temp_dir vgpu-remote-calls
out=$tmp/remote-calls.md
"$python" "$src/tools/generate/gen_remote_doc.py" "$src/forwarder/remote/spec/cuda.remote" \
    "$src/forwarder/remote/spec/nvml.remote" >"$out" || exit 1
if ! diff -u "$src/docs/reference/remote-calls.md" "$out"; then
    echo "FAIL: docs/reference/remote-calls.md is not what the specs say: run tools/generate/gen_remote_doc.py again"
    exit 1
fi
echo "ok: docs/reference/remote-calls.md says what the specs declare"
