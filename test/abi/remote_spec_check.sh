#!/usr/bin/env bash
# A remote driver's committed ABI (forwarder/remote/spec/LIB.remote) is what
# tools/generate/gen_remote_abi.py makes of the library's header now.
# remote_spec_check.sh PYTHON SOURCE_ROOT LIB HEADER CC...   Skips (77) without the header;
# NVML_H, when set, names nvml.h instead.
python=$1 src=$2 lib=$3 header=$4
[ "$lib" = nvml ] && [ -n "${NVML_H:-}" ] && header=$NVML_H
shift 4
# shellcheck source=test/common/lib.sh
. "$(dirname "$(realpath "$0")")/../common/lib.sh"
[ -f "$header" ] || skip "no $header"
"$python" -c "import pycparser" 2>/dev/null || skip "no pycparser (apt-get install python3-pycparser)"
temp_dir vgpu-remote-abi
out=$tmp/$lib.remote
"$python" "$src/tools/generate/gen_remote_abi.py" --cc "$*" --lib "$lib" --header "$header" \
    --merge "$src/forwarder/remote/spec/$lib.remote" \
    --symbols "$src/interpose/$lib.symbols" >"$out" || exit 1
if ! diff -u "$src/forwarder/remote/spec/$lib.remote" "$out"; then
    echo "FAIL: forwarder/remote/spec/$lib.remote is not what gen_remote_abi.py makes of $header: run it again"
    exit 1
fi
echo "ok: $(awk '$2 == "carried"' "$out" | wc -l) carried, $(awk '$2 == "manual"' "$out" | wc -l) manual, $(awk '$2 == "absent"' "$out" | wc -l) absent"
