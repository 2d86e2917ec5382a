# What the gpu suite's scripts share; sourced first by each, as
#     . "$(dirname "$(realpath "$0")")/../lib.sh"
# from a folder of test/gpu/ (after test/common/lib.sh, which it sources).
# shellcheck source=test/common/lib.sh
. "$(dirname "$(realpath "${BASH_SOURCE[0]}")")/../common/lib.sh"
set -o pipefail
gpu_dir=$tests_dir/gpu
clients_dir=$gpu_dir/clients # the real clients the checks run

# gpu_or_skip: exits 77 (meson's skip) where there is no NVIDIA GPU to run on.
gpu_or_skip() {
    command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 || skip "no NVIDIA GPU"
}

# gpu_check BUILD_DIR [OUT_DIR]: what a check starts from: skipped without a
# GPU; $build (resolved) and its programs; $out, OUT_DIR made (a new
# temporary directory without it); $preload, vgpu's two libraries.
gpu_check() {
    gpu_or_skip
    use_build "$(realpath "$1")"
    out=${2:-$(mktemp -d)}
    mkdir -p "$out"
    preload="$build/libvgpu-cuda.so $build/libvgpu-nvml.so"
}

# result_lines FILE: what a client of clients/clients.sh printed as its
# results, the MiB figures (which vary from run to run) masked.
result_lines() {
    grep -E '^(ok|dev|GPU|name|NVIDIA|\[Cuda)' "$1" | sed -E 's/[0-9]+ MiB/N MiB/g' || true
}

# start_mediator CONF SOCKET LOG: vgpu-mediatord in the foreground, in the
# background (its pid in $med), once vgpu-smi gets an answer on SOCKET;
# failing that, prints FAIL with the log's end, ends it and exits 1.
start_mediator() {
    local conf=$1 sock=$2 log=$3
    VGPU_LOG=info "$vgpu_mediatord" --config "$conf" --foreground >"$log" 2>&1 &
    med=$!
    for _ in $(seq 1 200); do "$vgpu_smi" --socket "$sock" >/dev/null 2>&1 && return 0; sleep 0.05; done
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
