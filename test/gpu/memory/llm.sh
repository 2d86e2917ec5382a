#!/usr/bin/env bash
# The LLM stacks' checks (clients/llm_clients.py says what each does):
# PyTorch's expandable segments from worker threads, graphs' memory nodes
# (cuda-python and PyTorch's cudaMallocAsync backend), NCCL on one GPU and
# vLLM-style start-up profiling (also under CUDA_VISIBLE_DEVICES=0 and =UUID),
# each in a vGPU with an 8 GiB quota; after each, the driver's own count of
# the process stayed under the quota (nvidia-smi, sampled while it ran).
# Usage: llm.sh BUILD_DIR [OUT_DIR]   Skips (77) without a GPU.
# shellcheck source=test/gpu/lib.sh
. "$(dirname "$(realpath "$0")")/../lib.sh"
gpu_check "$@"
quota=$((8 << 30))
uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1)
export LD_PRELOAD="$preload" VGPU_MEMORY_LIMIT=8G VGPU_LOG=info

# CHECK[@TAG] [VAR=VALUE...]: runs a check; prints its lines, and whether the
# driver ever counted more than the quota for it.
run() {
    local name=$1 check=${1%%@*}; shift
    # env execs python3: $! is the pid the driver lists (a timeout in between would not be).
    env "$@" VGPU_BAR0="$out/$name.bar0" VGPU_LOG_FILE="$out/$name.log" \
        python3 "$clients_dir/llm_clients.py" "$check" $quota >"$out/$name.txt" 2>&1 &
    local pid=$! peak=0 now end=$((SECONDS + 300))
    while kill -0 $pid 2>/dev/null; do
        [ $SECONDS -gt $end ] && { echo "FAIL $name: still running after 300 s"; kill -9 $pid; }
        now=$(LD_PRELOAD= nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null |
              awk -F', *' -v p=$pid '$1 == p { print $2 }')
        [ -n "$now" ] && [ "$now" -gt "$peak" ] && peak=$now
        sleep 0.2
    done
    wait $pid; local rc=$?
    grep -E '^(ok|FAIL)' "$out/$name.txt" | sed "s/^\(ok\|FAIL\) /\1 $name: /"
    [ $rc = 0 ] || echo "FAIL $name exited with $rc: $(tail -1 "$out/$name.txt" | cut -c1-200)"
    # The driver's figure includes what vgpu counts as the context's; 2 % for its rounding.
    if [ "$peak" = 0 ]; then
        echo "FAIL $name: the driver never listed pid $pid with memory (nvidia-smi --query-compute-apps)"
    elif [ "$peak" -le $(( (quota >> 20) * 102 / 100 )) ]; then
        echo "ok $name: the driver counted at most $peak MiB for the process (quota $((quota >> 20)) MiB)"
    else
        echo "FAIL $name: the driver counted $peak MiB for the process, past the $((quota >> 20)) MiB quota"
    fi
}
run expandable
run graph-nodes
run torch-graph
run nccl
run vllm
run vllm@index CUDA_VISIBLE_DEVICES=0
run vllm@uuid CUDA_VISIBLE_DEVICES="$uuid"
