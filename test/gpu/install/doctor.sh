#!/usr/bin/env bash
# vgpu-doctor on the real driver, with PyTorch: a process under vgpu-run's
# preload (-- COMMAND --preload), one without vgpu, and one under the
# symlink install (LD_LIBRARY_PATH).  The doctor must tell the real driver
# from vgpu, read the vGPU from the status record, and name the fix for the
# process without vgpu.  Skips (77) without a GPU.
# Usage: doctor.sh BUILD_DIR [OUT_DIR]   (OUT_DIR keeps every report)
# shellcheck source=test/gpu/lib.sh
. "$(dirname "$(realpath "$0")")/../lib.sh"
gpu_check "$@"
doctor=$vgpu_doctor
mkdir -p "$out/symlink"
rm -f "$out"/*.ready "$out"/*.bar0
ln -sf "$build/libvgpu-cuda.so" "$out/symlink/libcuda.so.1"
ln -sf "$build/libvgpu-nvml.so" "$out/symlink/libnvidia-ml.so.1"
unset LD_PRELOAD VGPU_VISIBLE_DEVICES VGPU_NAME VGPU_LOG_FILE
export VGPU_MEDIATOR_SOCKET=none
# READY SECONDS: a CUDA tensor, then READY written, then SECONDS of sleep.
torch_prog='import sys, time, torch
torch.zeros(1, device="cuda")
open(sys.argv[1], "w").write("ready")
time.sleep(float(sys.argv[2]))'
failed=0
pids=
trap 'for p in $pids; do kill -9 "$p" 2>/dev/null; done' EXIT

# check NAME FILE TEXT...: FILE holds each TEXT.
check() {
    local name=$1 file=$2 verdict=ok
    shift 2
    for want in "$@"; do grep -qF -- "$want" "$file" || verdict="FAIL (no: $want)"; done
    echo "$name: $verdict"
    [ "$verdict" = ok ] || { failed=1; sed 's/^/    /' "$file"; }
}

# start NAME ENV...: PyTorch in the background with ENV; its pid in $pid once CUDA is up.
start() {
    local name=$1
    shift
    env "$@" python3 -c "$torch_prog" "$out/$name.ready" 120 >"$out/$name.out" 2>&1 &
    pid=$!
    pids="$pids $pid"
    for _ in $(seq 1 600); do [ -s "$out/$name.ready" ] && return 0; sleep 0.1; done
    echo "$name: FAIL (PyTorch did not start: $(tail -3 "$out/$name.out"))"
    failed=1
    return 1
}

# 1. -- COMMAND with --preload: vgpu in front of the real driver, the vGPU from the record.
VGPU_MEMORY_LIMIT=4G VGPU_BAR0="$out/preload.bar0" timeout 300 "$doctor" --preload --timeout 120 -- \
    python3 -c "$torch_prog" "$out/preload.ready" 5 >"$out/preload.txt" 2>&1
check "doctor --preload -- python3 (PyTorch)" "$out/preload.txt" \
    "[ok]      libraries: libcuda: vgpu ($build/libvgpu-cuda.so) in front of the driver (/" \
    "[ok]      vgpu: joined a standalone vGPU, BAR0 $out/preload.bar0: device 0 = GPU 0" "quota 4.00 GiB" \
    "[info]    run: the command exited 0"

# 2. PyTorch without vgpu: the driver mapped alone, and the fix.
if start plain; then
    "$doctor" --json "$pid" >"$out/plain.json" 2>&1
    python3 - "$out/plain.json" >"$out/plain.txt" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
bad = [f for f in d["findings"] if f["level"] == "problem" and f["check"] == "libraries"]
assert bad and "the driver (" in bad[0]["message"] and "vgpu-run -- python3" in bad[0]["fix"], d["findings"]
print("ok")
PY
    check "doctor PID (PyTorch without vgpu)" "$out/plain.txt" "ok"
fi

# 3. The symlink install through LD_LIBRARY_PATH: vgpu without LD_PRELOAD.
if start symlink LD_LIBRARY_PATH="$out/symlink${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" VGPU_MEMORY_LIMIT=4G \
    VGPU_BAR0="$out/symlink.bar0"; then
    "$doctor" "$pid" >"$out/symlink.txt" 2>&1
    check "doctor PID (PyTorch, symlink install)" "$out/symlink.txt" \
        "[ok]      libraries: libcuda: vgpu ($build/libvgpu-cuda.so) in front of the driver (/" \
        "vgpu came in through the library path" "[ok]      vgpu: joined a standalone vGPU, BAR0 $out/symlink.bar0"
fi
echo "reports in $out"
exit $failed
