#!/usr/bin/env bash
# The gpu suite's check of what NVML shows a vGPU (docs/reference/nvml.md), as root,
# with pynvml as monitors use it (test/gpu/clients/nvml_clients.py):
#   (1) standalone: vGPU a runs a PyTorch matmul loop, vGPU b holds 1 GiB and
#       runs nothing.  a's utilization is a's load, b's is ~0 while the GPU is
#       busy; per-process samples and compute processes list each vGPU's own;
#   (2) the driver itself, without vgpu, in a PID namespace of its own
#       (unshare): which pid it names a process of that namespace by (the
#       driver translates pids; docs/reference/nvml.md relies on that);
#   (3) mediated: vgpu-mediatord records host pids; pynvml in the
#       container's namespace sees its busy neighbour under the namespace's
#       pid, in the process list and in the utilization samples, and not the
#       host's process of the same vGPU.
# Prints "ok ..."/"FAIL ..." lines and "info ..." lines with what was read.
# Usage: nvml.sh BUILD_DIR [OUT_DIR]   Skips (77) without a GPU.
# shellcheck source=test/gpu/lib.sh
. "$(dirname "$(realpath "$0")")/../lib.sh"
gpu_check "$@"
rm -rf "$out/state" "$out"/*.bar0
unset LD_PRELOAD VGPU_MEDIATOR_SOCKET VGPU_NAME VGPU_BAR0 VGPU_MEMORY_LIMIT VGPU_VISIBLE_DEVICES
clients=$clients_dir/nvml_clients.py
preload="$build/libvgpu-cuda.so:$build/libvgpu-nvml.so" # colons: it goes through env VAR=VALUE lists
bg=
trap 'for p in $bg; do kill -9 $p 2>/dev/null; done' EXIT

# start NAME CMD...: CMD in the background until it prints "ready PID"; that pid in $started.
start() {
    local name=$1; shift
    "$@" >"$out/$name.out" 2>&1 &
    bg="$bg $!"
    wait_ready "$out/$name.out" $! 60
    started=$(sed -n 's/^ready //p' "$out/$name.out")
    [ -n "$started" ] || echo "FAIL $name did not start: $(tail -3 "$out/$name.out" | tr '\n' ' ')"
}

field() { python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }

# (1) standalone
sa="VGPU_MEDIATOR_SOCKET=none VGPU_MEMORY_LIMIT=8G LD_PRELOAD=$preload"
start busy-a env $sa VGPU_BAR0=$out/a.bar0 python3 "$clients" busy 60
busy_a=$started
start idle-b env $sa VGPU_BAR0=$out/b.bar0 python3 "$clients" hold 1024
idle_b=$started
sleep 5
a=$(env $sa VGPU_BAR0=$out/a.bar0 python3 "$clients" ask | tail -1)
b=$(env $sa VGPU_BAR0=$out/b.bar0 python3 "$clients" ask | tail -1)
bare=$(python3 "$clients" ask | tail -1)
echo "info vGPU a: $a"
echo "info vGPU b: $b"
echo "info without vgpu: $bare"
check() { # DESCRIPTION PYTHON-CONDITION (a, b, bare parsed; busy_a, idle_b ints)
    if python3 -c "
import json, sys
a, b, bare = (json.loads(x) for x in sys.argv[1:4])
busy_a, idle_b = int(sys.argv[4]), int(sys.argv[5])
sys.exit(0 if ($2) else 1)" "$a" "$b" "$bare" "${busy_a:-0}" "${idle_b:-0}"; then
        echo "ok $1"
    else
        echo "FAIL $1"
    fi
}
check "the busy vGPU's utilization is its load (>= 50%)" "isinstance(a['util'], int) and a['util'] >= 50"
check "the idle vGPU reads <= 10% while the GPU is busy" "isinstance(b['util'], int) and b['util'] <= 10"
check "without vgpu the GPU reads busy (>= 50%)" "isinstance(bare['util'], int) and bare['util'] >= 50"
check "vGPU a's utilization samples are its busy process's" "a['sampled'] == [busy_a]"
check "vGPU b's samples (if any) are its idle process's, at ~0%" \
    "isinstance(b['sampled'], list) and all(int(p) == idle_b and sm <= 5 for p, sm in b.get('sampled_sm', {}).items())"
check "vGPU a lists its own compute process" "a['compute'] == [busy_a]"
check "vGPU b lists its own compute process" "b['compute'] == [idle_b]"
check "the CPU's GPU set is the vGPU's one device" "a['gpu_set'] == 1"
for p in $bg; do kill -9 "$p" 2>/dev/null; done
bg=

# (2) the driver's own pids in a PID namespace
if ! unshare --pid --fork --kill-child --mount-proc true 2>/dev/null; then
    echo "SKIP (2) and (3): no PID namespace here"
    exit 0
fi
ns=$(unshare --pid --fork --kill-child --mount-proc sh -c '
    python3 "$0" hold 512 >"$1/ns-hold.out" 2>&1 &
    while ! grep -q "^ready" "$1/ns-hold.out"; do sleep 0.1; done
    python3 "$0" ask | tail -1; echo "holder $(sed -n "s/^ready //p" "$1/ns-hold.out")"' "$clients" "$out")
echo "info without vgpu, in a PID namespace: $(echo "$ns" | tr '\n' ' ')"
inner=$(echo "$ns" | sed -n 's/^holder //p')
listed=$(field "$(echo "$ns" | head -1)" compute 2>/dev/null)
[ "$listed" = "[$inner]" ] && echo "ok the driver names the namespace's process by its pid there ($inner)" ||
    echo "info the driver lists $listed in the namespace, whose holder is $inner there (docs/reference/nvml.md assumes the driver translates)"

# (3) mediated
rm -rf "$out/state"
sock=$out/mediator.sock
cat >"$out/mediatord.conf" <<CONF
[mediator]
socket = $sock
state_dir = $out/state
[vgpu.a]
devices = 0
memory = 16G
uids = $(id -u)
CONF
VGPU_LOG=info "$vgpu_mediatord" --config "$out/mediatord.conf" --foreground >"$out/mediatord.log" 2>&1 &
bg="$bg $!"
for _ in $(seq 1 200); do "$vgpu_smi" --socket "$sock" >/dev/null 2>&1 && break; sleep 0.05; done
med="VGPU_MEDIATOR_SOCKET=$sock LD_PRELOAD=$preload"
start host-hold env $med python3 "$clients" hold 512
host=$started
# The container's process stays busy until the host has asked too (the
# namespace's processes end with it): its view is written to ns-view.txt.
rm -f "$out/ns-view.txt" "$out/host-asked"
env $med unshare --pid --fork --kill-child --mount-proc sh -c '
    python3 "$0" busy 30 >"$1/ns-busy.out" 2>&1 &
    while ! grep -q "^ready" "$1/ns-busy.out"; do sleep 0.1; done
    sleep 3
    { python3 "$0" ask | tail -1; echo "busy $(sed -n "s/^ready //p" "$1/ns-busy.out")"; } >"$1/ns-view.tmp"
    mv "$1/ns-view.tmp" "$1/ns-view.txt"
    while [ ! -e "$1/host-asked" ]; do sleep 0.1; done' "$clients" "$out" &
nsjob=$!
for _ in $(seq 1 600); do [ -e "$out/ns-view.txt" ] && break; sleep 0.1; done
hostview=$(env $med python3 "$clients" ask | tail -1)
touch "$out/host-asked"
wait $nsjob
ns=$(cat "$out/ns-view.txt" 2>/dev/null)
echo "info mediated, in a PID namespace (host's process $host): $(echo "$ns" | tr '\n' ' ')"
inner=$(echo "$ns" | sed -n 's/^busy //p')
seen=$(echo "$ns" | head -1)
[ "$(field "$seen" compute)" = "[$inner]" ] && echo "ok the container lists its process by its own pid, not the host's" ||
    echo "FAIL the container lists $(field "$seen" compute 2>&1), want [$inner]"
[ "$(field "$seen" sampled)" = "[$inner]" ] && echo "ok the container's utilization samples are its process's" ||
    echo "FAIL the container's samples are $(field "$seen" sampled 2>&1), want [$inner]"
echo "info mediated, on the host: $hostview"
python3 -c "import json,sys; s=json.loads(sys.argv[1]); sys.exit(0 if len(s['compute']) == 2 and int(sys.argv[2]) in s['compute'] else 1)" \
    "$hostview" "$host" && echo "ok the host lists both processes by the host's pids" ||
    echo "FAIL the host lists $(field "$hostview" compute 2>&1)"
exit 0
