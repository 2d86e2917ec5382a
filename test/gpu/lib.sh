# Shared by the gpu suite's scripts (sourced, not run).

# Exits 77 (meson's skip) where there is no NVIDIA GPU to run on.
gpu_or_skip() {
    if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
        echo "SKIP: no NVIDIA GPU"; exit 77
    fi
}

# start_mediator BUILD_DIR CONF SOCKET LOG: vgpu-mediatord in the
# foreground, in the background (its pid in $med), once vgpu-smi gets an
# answer on SOCKET; failing that, prints FAIL with the log's end, ends it
# and exits 1.
start_mediator() {
    local build=$1 conf=$2 sock=$3 log=$4
    VGPU_LOG=info "$build/tools/vgpu-mediatord" --config "$conf" --foreground >"$log" 2>&1 &
    med=$!
    for _ in $(seq 1 200); do "$build/tools/vgpu-smi" --socket "$sock" >/dev/null 2>&1 && return 0; sleep 0.05; done
    echo "FAIL vgpu-mediatord did not come up: $(tail -3 "$log" | tr '\n' ' ')"
    kill -9 "$med" 2>/dev/null
    exit 1
}

# wait_ready FILE PID SECONDS: until the process PID, writing to FILE, says
# "ready"; 1 if it ended or SECONDS passed first.
wait_ready() {
    local file=$1 pid=$2 tenths=$(($3 * 10))
    for _ in $(seq 1 "$tenths"); do
        grep -qs '^ready' "$file" && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    grep -qs '^ready' "$file"
}
