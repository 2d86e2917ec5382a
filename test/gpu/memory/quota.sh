#!/usr/bin/env bash
# The gpu suite's memory-quota checks: PyTorch (also with expandable
# segments), JAX, CuPy and cuda-python in a vGPU with a 4 GiB quota each see
# 4 GiB, get their own out-of-memory error past it, and stay under it in the
# driver's own per-process figures; two processes sharing one BAR0 stay
# under it together; nvidia-smi under vgpu shows the quota.
# Usage: quota.sh BUILD_DIR [OUT_DIR]   Skips (77) without a GPU.
# shellcheck source=test/gpu/lib.sh
. "$(dirname "$(realpath "$0")")/../lib.sh"
gpu_check "$@"
quota=$((4 << 30))
export LD_PRELOAD="$preload" VGPU_MEMORY_LIMIT=4G VGPU_LOG=info
failed=0
run() { # CLIENT[@TAG] [VAR=VALUE...]
    local name=$1 client=${1%%@*}; shift
    env "$@" VGPU_BAR0="$out/$name.bar0" VGPU_LOG_FILE="$out/$name.log" \
        timeout 150 python3 "$clients_dir/quota_clients.py" "$client" $quota >"$out/$name.txt" 2>&1
    local rc=$?
    grep -E '^(ok|FAIL)' "$out/$name.txt"
    [ $rc = 0 ] || echo "FAIL $name exited with $rc: $(tail -1 "$out/$name.txt" | cut -c1-200)"
}
for c in torch jax cupy cudapy contexts; do run "$c"; done
# The stack limit past the quota, and within a larger one (16.6 GiB for 64 KiB on an H100).
run contexts@8G VGPU_MEMORY_LIMIT=8G
quota=$((24 << 30))
run contexts@24G VGPU_MEMORY_LIMIT=24G
quota=$((4 << 30))
run torch-expandable PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True

# Two processes in one vGPU: together they stay under the quota.
shared=$out/shared.bar0
# exec: the coprocesses are Python itself, so the trap's kill reaches them.
coproc A { HOLD_MAX=$((2 << 30)) VGPU_BAR0=$shared VGPU_LOG_FILE=$out/shared-a.log exec python3 "$clients_dir/quota_clients.py" hold $quota 2>&1; }
A_PID=$A_PID
trap 'kill -9 ${A_PID:-} ${B_PID:-} 2>/dev/null' EXIT
read -r a_line <&"${A[0]}"
coproc B { VGPU_BAR0=$shared VGPU_LOG_FILE=$out/shared-b.log exec python3 "$clients_dir/quota_clients.py" hold $quota 2>&1; }
B_PID=$B_PID
read -r b_line <&"${B[0]}"
real=$(LD_PRELOAD= nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits)
# The two are the only compute processes now.
sum=$(echo "$real" | awk -F, '{s+=$2} END {print s+0}')
echo "A: $a_line; B: $b_line; driver: $(echo "$real" | tr '\n' ' ')" >"$out/shared.txt"
if [ "$sum" -gt 0 ] && [ "$sum" -le 4096 ]; then
    echo "ok two processes in one vGPU: $a_line + $b_line, the driver counts $sum MiB for both"
else
    echo "FAIL two processes in one vGPU: the driver counts $sum MiB (A: $a_line; B: $b_line; $real)"
fi
a_in=${A[1]}; b_in=${B[1]}
echo >&"$a_in"; echo >&"$b_in"; wait

# nvidia-smi through vgpu shows the vGPU.
smi_total=$(VGPU_BAR0=$out/smi.bar0 nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
if [ "${smi_total// /}" = 4096 ]; then echo "ok nvidia-smi under vgpu shows 4096 MiB total"
else echo "FAIL nvidia-smi under vgpu shows '$smi_total' MiB total"; fi
