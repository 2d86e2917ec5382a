#!/usr/bin/env bash
# The gpu suite's check of remote GPUs (docs/remote.md): a guest with
# VGPU_REMOTE and only libvgpu-cuda.so runs test/compute/compute_client (a
# PTX loop of 200 us kernels, and one of 1 us kernels bound by launches)
# through an executor under an 8 GiB vGPU; its kernels are correct and its
# GPU-bound rate is at least 90% of a local run's; it gets 4 GiB and is
# refused 16 GiB; forged handles are refused; it maps no driver.  Prints the
# launch-bound rate beside the local one.  Prints "ok ..." or "FAIL ..." lines.
# Usage: gpu.sh BUILD_DIR [OUT_DIR]   Skips (77) without a GPU; fails when a check printed FAIL.
set -uo pipefail
build=$(realpath "$1"); out=${2:-$(mktemp -d)}
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "SKIP: no NVIDIA GPU"; exit 77
fi
mkdir -p "$out"
compute=$build/test/compute/compute_client remote=$build/test/remote/remote_client
rate() { sed -n 's/^workload .* kernels_per_s=\([^ ]*\).*/\1/p' "$1"; }

LD_PRELOAD="$build/libvgpu-cuda.so $build/libvgpu-nvml.so" VGPU_BAR0=$out/host.bar0 VGPU_MEMORY_LIMIT=8G \
    VGPU_LOG=info "$build/tools/vgpu-executor" --listen "$out/sock" 2>"$out/executor.err" &
executor=$!
trap 'kill $executor 2>/dev/null' EXIT
for _ in $(seq 1 100); do [ -S "$out/sock" ] && break; sleep 0.05; done
guest() { env -u LD_LIBRARY_PATH LD_PRELOAD="$build/libvgpu-cuda.so" VGPU_REMOTE="$out/sock" "$@"; }

exec > >(tee "$out/checks.txt")
for mode in matmul launch; do
    LD_PRELOAD="$build/libvgpu-cuda.so" VGPU_BAR0=$out/local.bar0 "$compute" $mode 3 >"$out/$mode.local" 2>&1
    guest "$compute" $mode 3 >"$out/$mode.remote" 2>&1 || echo "FAIL $mode through the executor: $(tail -1 "$out/$mode.remote")"
    l=$(rate "$out/$mode.local") r=$(rate "$out/$mode.remote")
    echo "$mode: ${r:-?} kernels/s through the executor, ${l:-?} locally"
done
awk -v l="$(rate "$out/matmul.local")" -v r="$(rate "$out/matmul.remote")" 'BEGIN { exit !(l > 0 && r >= 0.9 * l) }' &&
    echo "ok GPU-bound kernels run at least 90% as fast through the executor" ||
    echo "FAIL GPU-bound kernels through the executor ran at $(rate "$out/matmul.remote")/s against $(rate "$out/matmul.local")/s"
guest "$remote" quota 4294967296 >"$out/q4" 2>&1
guest "$remote" quota 17179869184 >"$out/q16" 2>&1
grep -qx "cuMemAlloc_v2: 0" "$out/q4" && grep -qx "cuMemAlloc_v2: 2" "$out/q16" &&
    echo "ok the executor's 8 GiB quota gives 4 GiB and refuses 16 GiB" ||
    echo "FAIL the quota through the executor: $(cat "$out/q4" "$out/q16" | grep cuMemAlloc)"
guest "$remote" forged >"$out/forged" 2>&1
[ "$(grep -c 'forged: 400' "$out/forged")" = 3 ] && echo "ok forged handles are refused" ||
    echo "FAIL forged handles: $(grep forged: "$out/forged")"
guest "$remote" maps >"$out/maps" 2>&1
if grep -v libvgpu-cuda "$out/maps" | grep -q libcuda; then
    echo "FAIL the guest mapped a driver: $(grep libcuda "$out/maps" | sort -u)"
else
    echo "ok the guest maps no driver"
fi
! grep -q '^FAIL' "$out/checks.txt"
