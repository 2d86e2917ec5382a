#!/usr/bin/env bash
# The gpu suite's check of real clients on a remote GPU (docs/design/remote.md):
# PyTorch (a training step in fp32 and one in bf16, inference with a pinned
# copy, a CUDA graph, the quota's torch.OutOfMemoryError, a tensor written by a
# torch.multiprocessing child through IPC, torch.compile in
# its default and reduce-overhead modes), CuPy, cuda-python (NVRTC, the
# driver API, a 2D copy), the driver API as a C program calls it (contexts
# by cuCtxCreate_v4, a cubin from a file; arrays: 1D and 3D copies, a texture
# object sampled by a kernel), JAX, pynvml and nvidia-smi, each run
# twice: natively under an 8 GiB vGPU, and as a guest of an executor under
# the same vGPU, in a mount namespace where /dev holds no NVIDIA device and
# every NVIDIA driver library is an empty file (guest_lib.sh).  Their results must agree
# (numbers within 1e-3).
# Usage: frameworks.sh BUILD_DIR [OUT_DIR] [WORKLOAD...]   Skips (77) without a GPU or without root
# (the mount namespace); prints "ok ..." or "FAIL ..." lines and fails when one is FAIL.
# REMOTE_TRANSPORT=bar: the guests reach their executors through channels of a file in /run standing
# in for a VM's PCI BAR (vgpu-executor --bar, VGPU_REMOTE=bar:FILE), as a VM's guests do.
# shellcheck source=test/gpu/lib.sh
. "$(dirname "$(realpath "$0")")/../../gpu/lib.sh"
# shellcheck source=test/remote/gpu/guest_lib.sh
. "$here/guest_lib.sh"
gpu_check "$@"
out=$(realpath "$out")
shift $(($# < 2 ? $# : 2))
workloads=${*:-torch-train torch-bf16 torch-infer torch-graph torch-oom torch-compile torch-ipc cupy cudapy driver-files driver-arrays jax pynvml
    smi}
need_root "the guests run in a mount namespace of their own"
need_private_mounts
libs=$preload
export PYTHONUNBUFFERED=1

start_executor

run() {  # WORKLOAD native|remote: its output in $out/WORKLOAD.MODE
    local w=$1 mode=$2 cmd
    # nvidia-smi: its summary (whose failure fails the run), then a query compared.
    if [ "$w" = smi ]; then
        cmd=(bash -c 'nvidia-smi >&2 && nvidia-smi --query-gpu=name,memory.total,pci.bus_id,uuid --format=csv,noheader')
    else cmd=(python3 "$here/frameworks.py" "$w"); fi
    if [ "$mode" = native ]; then
        LD_PRELOAD="$libs" VGPU_BAR0=$out/native.bar0 VGPU_MEMORY_LIMIT=8G timeout 300 "${cmd[@]}"
    else
        hidden env -u LD_LIBRARY_PATH LD_PRELOAD="$libs" VGPU_REMOTE="$where" VGPU_LOG=info timeout 300 "${cmd[@]}"
    fi >"$out/$w.$mode" 2>"$out/$w.$mode.err"
}

exec > >(tee "$out/checks.txt")
for w in $workloads; do
    t0=$(date +%s.%N)
    run "$w" native || { echo "FAIL $w natively: $(tail -3 "$out/$w.native.err" | tr '\n' ' ')"; continue; }
    t1=$(date +%s.%N)
    run "$w" remote || { echo "FAIL $w remotely: $(grep -v '^vgpu.*info' "$out/$w.remote.err" | tail -4 | tr '\n' ' ')"; continue; }
    t2=$(date +%s.%N)
    if [ "$w" = smi ]; then
        sed -i 's/^/result /' "$out/$w.native" "$out/$w.remote"
    fi
    if python3 - "$out/$w.native" "$out/$w.remote" <<'P'
import sys
def results(path):
    out = {}
    for line in open(path):
        f = line.split(None, 2)
        if f and f[0] == "result":
            out[f[1]] = f[2].strip() if len(f) > 2 else ""
    return out
a, b = results(sys.argv[1]), results(sys.argv[2])
bad = [k for k in a if k not in b]
for k in a:
    if k in b and a[k] != b[k]:
        try:
            x, y = float(a[k]), float(b[k])
            if abs(x - y) <= 1e-3 * max(abs(x), abs(y), 1e-12):
                continue
        except ValueError:
            pass
        bad.append("%s: %s natively, %s remotely" % (k, a[k], b[k]))
if not a or bad:
    print("; ".join(bad) or "no results")
    sys.exit(1)
P
    then
        secs=$(awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "%.1f s native, %.1f s remote", b - a, c - b }')
        echo "ok $w: the same results through the executor with no driver ($secs)"
    else
        echo "FAIL $w: results differ"
    fi
    grep -h '^ok ' "$out/$w.remote" | sed "s/^ok /ok $w remotely: /"
done
grep -h "not carried\|no private table" "$out"/*.remote.err 2>/dev/null | sed 's/^vgpu\[[0-9]*\]: //' | sort | uniq -c |
    sed 's/^/note: /'
! grep -q '^FAIL' "$out/checks.txt"
