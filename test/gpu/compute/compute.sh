#!/usr/bin/env bash
# The gpu suite's compute-share checks: real frameworks stay
# correct under a share while another vGPU competes for the GPU, and a hard
# cap holds for a CUDA-graph loop as for an eager one.  The throughput table
# is bench/compute.py's (docs/performance.md).
# Usage: compute.sh BUILD_DIR [OUT_DIR]   Skips (77) without a GPU.
# shellcheck source=test/gpu/lib.sh
. "$(dirname "$(realpath "$0")")/../lib.sh"
gpu_check "$@"
bench=$source_dir/bench

# A competitor: its own vGPU, a 50% share, a matmul loop for as long as the checks run.
env LD_PRELOAD="$preload" VGPU_BAR0="$out/rival.bar0" VGPU_COMPUTE_SHARE=50% VGPU_LOG=warn \
    python3 "$bench/compute_worker.py" matmul 600 >"$out/rival.txt" 2>&1 &
rival=$!
trap 'kill -9 $rival 2>/dev/null' EXIT
sleep 8

# The real clients: the same results without vgpu and in a vGPU of 50% beside the rival.
for c in torch jax cupy triton cudapy; do
    timeout 180 "$clients_dir/clients.sh" "$c" >"$out/$c.plain.txt" 2>&1
    timeout 180 env LD_PRELOAD="$preload" VGPU_BAR0="$out/client.bar0" VGPU_COMPUTE_SHARE=50% VGPU_LOG=info \
        VGPU_LOG_FILE="$out/$c.share.log" "$clients_dir/clients.sh" "$c" >"$out/$c.share.txt" 2>&1
    if [ -z "$(result_lines "$out/$c.plain.txt")" ]; then
        echo "FAIL $c: no result without vgpu"
    elif ! diff <(result_lines "$out/$c.plain.txt") <(result_lines "$out/$c.share.txt") >"$out/$c.diff"; then
        echo "FAIL $c under a 50% share beside a rival: its output differs ($out/$c.diff)"
    elif ! grep -q "a compute share of 50%" "$out/$c.share.log"; then
        echo "FAIL $c: vgpu did not schedule it ($out/$c.share.log)"
    else
        echo "ok $c under a 50% share beside a rival: $(result_lines "$out/$c.share.txt" | grep '^ok' | head -1)"
    fi
done
for check in graph threads cudnn context; do
    env LD_PRELOAD="$preload" VGPU_BAR0="$out/client.bar0" VGPU_COMPUTE_SHARE=50% VGPU_LOG_FILE="$out/$check.log" \
        timeout 180 python3 "$clients_dir/compute_clients.py" "$check" >"$out/$check.txt" 2>&1 ||
        echo "FAIL $check exited with $?: $(tail -1 "$out/$check.txt" | cut -c1-200)"
    grep -E '^(ok|FAIL)' "$out/$check.txt"
done
kill -9 $rival 2>/dev/null; wait $rival 2>/dev/null
grep -q '"rate"' "$out/rival.txt" && echo "FAIL the rival ended early: $(tail -1 "$out/rival.txt")"

# A hard cap of 30% holds for a graph-replay loop as for an eager one, alone
# on the GPU.  It bounds GPU time; a matmul's throughput in it is a little
# higher (0.36 on the H100, likely the clocks of a GPU that rests 70% of
# the time: docs/performance.md), so the bound is 0.27..0.40, and
# the two loops within 3 points of each other.
declare -A capped_ratio
for loop in graph matmul; do
    bare=$(timeout 120 python3 "$clients_dir/compute_clients.py" rate $loop 3 | grep rate)
    capped=$(env LD_PRELOAD="$preload" VGPU_BAR0="$out/cap.bar0" VGPU_COMPUTE_SHARE=30% VGPU_COMPUTE_MODE=cap \
        timeout 120 python3 "$clients_dir/compute_clients.py" rate $loop 3 | grep rate)
    ratio=$(python3 -c "import json,sys; print(json.loads(sys.argv[2])['rate'] / json.loads(sys.argv[1])['rate'])" \
        "$bare" "$capped" 2>/dev/null)
    capped_ratio[$loop]=$ratio
    if [ -n "$ratio" ] && python3 -c "import sys; sys.exit(not 0.27 <= float(sys.argv[1]) <= 0.40)" "$ratio"; then
        echo "ok a 30% cap on a $loop loop gives $ratio of its bare rate"
    else
        echo "FAIL a 30% cap on a $loop loop gives ${ratio:-nothing} of its bare rate ($bare / $capped)"
    fi
done
if python3 -c "import sys; sys.exit(not abs(float(sys.argv[1]) - float(sys.argv[2])) <= 0.03)" \
    "${capped_ratio[graph]:-9}" "${capped_ratio[matmul]:-0}" 2>/dev/null; then
    echo "ok the cap holds graph replays as it holds eager launches: ${capped_ratio[graph]} and ${capped_ratio[matmul]}"
else
    echo "FAIL the cap treats graph replays (${capped_ratio[graph]:-?}) and eager launches (${capped_ratio[matmul]:-?}) apart"
fi
