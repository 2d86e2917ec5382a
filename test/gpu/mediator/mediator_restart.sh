#!/usr/bin/env bash
# The gpu suite's check of a mediated window under a hostile co-tenant and a
# mediator crash: a PyTorch process in an 8 GiB vGPU holds 2 GiB; another
# process of the vGPU tries to resize or write what the mediator gave it
# (every attempt must be refused, the PyTorch process must not notice);
# then the mediator is killed (-9) and started again with a 5 GiB quota.
# It must find the window again from the running process (through
# /proc/PID/map_files), the process must reattach on its next allocation
# and take the new quota: 3 GiB more refused, 1 GiB more granted.
# Prints "ok ..." or "FAIL ..." lines.
# Usage: mediator_restart.sh BUILD_DIR [OUT_DIR]   Skips (77) without a GPU.
# shellcheck source=test/gpu/lib.sh
. "$(dirname "$(realpath "$0")")/../lib.sh"
gpu_check "$@"
rm -rf "$out/state"
sock=$out/mediator.sock
conf() { # MEMORY
    printf '[mediator]\nsocket = %s\nstate_dir = %s\n[vgpu.big]\ndevices = 0\nmemory = %s\nuids = %s\n' \
        "$sock" "$out/state" "$1" "$(id -u)" >"$out/mediatord.conf"
}
start() {
    VGPU_LOG=info "$vgpu_mediatord" --config "$out/mediatord.conf" --foreground >>"$out/mediatord.log" 2>&1 &
    med=$!
    for _ in $(seq 1 200); do "$vgpu_smi" --socket "$sock" >/dev/null 2>&1 && return 0; sleep 0.05; done
    echo "FAIL vgpu-mediatord did not come up: $(tail -3 "$out/mediatord.log" | tr '\n' ' ')"
    exit 1
}
check() { # NAME CONDITION-STATUS DETAIL
    if [ "$2" = 0 ]; then echo "ok $1: $3"; else echo "FAIL $1: $3"; fi
}
used_and_quota() {
    "$vgpu_smi" --socket "$sock" --json | python3 -c "import json,sys; s=json.load(sys.stdin)
d=s['vgpus'][0]['devices'][0]; print(d['memory_used'] >> 20, d['memory_quota'] >> 20, [p['pid'] for p in s['processes']])"
}
cat >"$out/holder.py" <<'PY'
import sys, torch
held = []
print("total", torch.cuda.mem_get_info()[1], flush=True)
for line in sys.stdin:
    gib = float(line.split()[1])
    try:
        held.append(torch.empty(int(gib * (1 << 30)), dtype=torch.uint8, device="cuda"))
        print("ok", gib, flush=True)
    except torch.OutOfMemoryError as e:
        e.__traceback__ = None
        print("oom", gib, flush=True)
PY
conf 8G
start
trap 'kill -9 ${med:-} ${T_PID:-} 2>/dev/null' EXIT
coproc T { LD_PRELOAD="$preload" VGPU_MEDIATOR_SOCKET=$sock VGPU_LOG=info \
    VGPU_LOG_FILE=$out/holder.log exec python3 "$out/holder.py" 2>&1; }
T_PID=$T_PID
ask() { echo "alloc $1" >&"${T[1]}"; read -r -t 120 answer <&"${T[0]}"; echo "${answer:-no answer}"; }
read -r -t 120 total <&"${T[0]}"
check "PyTorch sees the 8 GiB vGPU" "$([ "$total" = "total $((8 << 30))" ]; echo $?)" "$total"
a=$(ask 2)
check "PyTorch allocates 2 GiB" "$([ "$a" = "ok 2.0" ]; echo $?)" "$a"
attack=$(python3 "$tests_dir/mediator/mediator_tenant.py" "$sock" truncate 2>&1); rc=$?
check "a co-tenant cannot resize or write its window" $rc "$(echo "$attack" | tr '\n' ';')"
kill -0 "$med" 2>/dev/null; check "the mediator survives the co-tenant" $? "pid $med"
a=$(ask 0.5)
check "PyTorch allocates after the co-tenant's attempts" "$([ "$a" = "ok 0.5" ]; echo $?)" "$a"
before=$(used_and_quota)
kill -9 "$med"; wait "$med" 2>/dev/null
conf 5G
start
after=$(used_and_quota)
check "the restarted mediator finds the process and its use" "$([ "${after#* * }" = "${before#* * }" ] &&
    [ "${after%% *}" = "${before%% *}" ]; echo $?)" "before the crash: $before; after: $after (MiB used, MiB quota, pids)"
grep -q "vGPU big: found again, 1 process(es)" "$out/mediatord.log"
check "its window was taken back from the process" $? "$(grep -h "found again\|cannot be taken back" "$out/mediatord.log" | tail -1)"
a=$(ask 3)
check "after the restart, 3 GiB more is refused by the new 5 GiB quota" "$([ "$a" = "oom 3.0" ]; echo $?)" "$a"
a=$(ask 1)
check "after the restart, 1 GiB more is granted" "$([ "$a" = "ok 1.0" ]; echo $?)" "$a"
grep -q "reattached to vGPU big" "$out/mediatord.log"
check "the process reattached" $? "$(grep -h "reattached" "$out/mediatord.log" | tail -1)"
echo "vgpu-smi after: $(used_and_quota)"
