#!/usr/bin/env bash
# The gpu suite's check of remote GPUs (docs/design/remote.md): a guest with
# VGPU_REMOTE and only libvgpu-cuda.so runs test/compute/compute_client (a
# PTX loop of 200 us kernels, and one of 1 us kernels bound by launches)
# through an executor under an 8 GiB vGPU; its kernels are correct and its
# GPU-bound rate is at least 90% of a local run's; it gets 4 GiB and is
# refused 16 GiB; forged handles are refused; it maps no driver.  Prints the
# launch-bound rate beside the local one.  Where it runs as root, two guests
# of a mediator's remote vGPUs of 25% and 75% (as nobody: an executor never
# runs as root) run the GPU-bound loop at once and get their shares.
# Prints "ok ..." or "FAIL ..." lines.
# Usage: gpu.sh BUILD_DIR [OUT_DIR]   Skips (77) without a GPU; fails when a check printed FAIL.
# shellcheck source=test/gpu/lib.sh
. "$(dirname "$(realpath "$0")")/../../gpu/lib.sh"
gpu_check "$@"
compute=$build/test/compute/compute_client remote=$build/test/remote/remote_client
rate() { sed -n 's/^workload .* kernels_per_s=\([^ ]*\).*/\1/p' "$1"; }

LD_PRELOAD="$build/libvgpu-cuda.so $build/libvgpu-nvml.so" VGPU_BAR0=$out/host.bar0 VGPU_MEMORY_LIMIT=8G \
    VGPU_LOG=info "$vgpu_executor" --listen "$out/sock" 2>"$out/executor.err" &
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
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    # Everything the guests and their executors (nobody) reach is open to them: the
    # mediator's socket and state in a directory of their own under /tmp.
    med_dir=$(mktemp -d /tmp/vgpu-remote-shares.XXXXXX) && chmod 755 "$med_dir"
    printf '[mediator]\nsocket = %s\nsocket_mode = 0666\nstate_dir = %s\n%s\n' "$med_dir/sock" "$med_dir/state" \
        "[vgpu.a]
devices = 0
memory = 8G
compute = 25
uids = 65534
remote = yes
[vgpu.b]
devices = 0
memory = 8G
compute = 75
uids = 65534
remote = yes" >"$out/med.conf"
    env -u LD_PRELOAD "$vgpu_mediatord" --config "$out/med.conf" --foreground >"$out/med.err" 2>&1 &
    med=$!
    for _ in $(seq 1 200); do grep -q serving "$out/med.err" 2>/dev/null && break; sleep 0.05; done
    at=$(( $(date +%s%3N) + 3000 ))
    for v in a b; do
        setpriv --reuid=65534 --regid=65534 --clear-groups env -u LD_LIBRARY_PATH LD_PRELOAD="$build/libvgpu-cuda.so" \
            VGPU_REMOTE=mediator VGPU_MEDIATOR_SOCKET="$med_dir/sock" VGPU_NAME=$v \
            "$compute" matmul 6 --start-at "$at" >"$out/share.$v" 2>&1 &
        eval "g_$v=\$!"
    done
    wait "$g_a"; wait "$g_b"
    kill "$med" 2>/dev/null
    rm -rf "$med_dir"
    a=$(sed -n 's/^workload .* share=\([^ ]*\).*/\1/p' "$out/share.a")
    b=$(sed -n 's/^workload .* share=\([^ ]*\).*/\1/p' "$out/share.b")
    echo "remote guests of 25% and 75%: ${a:-?} and ${b:-?} of the GPU ($(rate "$out/share.a") and $(rate "$out/share.b") kernels/s)"
    awk -v a="${a:-0}" -v b="${b:-0}" 'BEGIN { p = a / (a + b + 1e-9); exit !(p >= 0.20 && p <= 0.30 && a + b >= 0.9) }' &&
        echo "ok two remote guests keep their shares of 25% and 75%" ||
        echo "FAIL two remote guests of 25% and 75% had ${a:-?} and ${b:-?}: $(tail -n 2 "$out/share.a" "$out/share.b" "$out/med.err" | tr '\n' ' ')"
fi
! grep -q '^FAIL' "$out/checks.txt"
