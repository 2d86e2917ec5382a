#!/usr/bin/env bash
# What NVML shows a vGPU, end to end on the fake GPU: nvml.sh SCENARIO BUILD_DIR
#
# test/nvml_client asks NVML as nvidia-smi and pynvml do, under vgpu (the
# meson test environment) over the fake driver, while other processes hold
# memory (test/quota_client hold, test/mediator_client hold) or keep the
# fake GPU busy (test/compute/compute_client).  Standalone vGPUs name their BAR0 in the
# test's temp dir; the mediated scenario starts a vgpu-mediatord here
# (test/mediator/mediator_lib.sh).  PID namespaces come from unshare(1), as a
# container's do; where the kernel refuses them the scenario is skipped (77).
scenario=$1 build=$2
# shellcheck source=test/mediator/mediator_lib.sh
. "$(dirname "$(realpath "$0")")/../mediator/mediator_lib.sh"
nvml=$build/test/nvml/nvml_client
quota=$build/test/quota/quota_client
workload=$build/test/compute/compute_client
export VGPU_LOG=info

standalone() { # the environment's vGPUs, not a mediator's
    export VGPU_MEDIATOR_SOCKET=none VGPU_MEMORY_LIMIT=4G
}

ask() { # [VAR=VALUE...] nvml_client ARGS...: must pass
    env "$@" >"$tmp/ask.out" 2>&1 || { cat "$tmp/ask.out" >&2; fail "nvml_client: $*"; }
    grep -v '^vgpu\[' "$tmp/ask.out"
}

# in_pid_ns CMD...: becomes CMD in a PID namespace of its own with its own
# /proc, as a container's processes are (a user namespace too where this is
# not root).  Run it in the background or a subshell: killing unshare kills
# everything in the namespace (--kill-child).
in_pid_ns() {
    if [ "$(id -u)" = 0 ]; then
        exec unshare --pid --fork --kill-child --mount-proc "$@"
    else
        exec unshare --user --map-root-user --pid --fork --kill-child --mount-proc "$@"
    fi
}

need_pid_ns() {
    (in_pid_ns true) 2>"$tmp/unshare.err" && return 0
    skip "this kernel or user cannot make a PID namespace: $(cat "$tmp/unshare.err")"
}

# descendant PID COMM: the pid of PID's descendant named COMM.
descendant() {
    local p
    for p in $(cat "/proc/$1/task/$1/children" 2>/dev/null); do
        if grep -qx "$2" "/proc/$p/comm" 2>/dev/null; then echo "$p"; return 0; fi
        descendant "$p" "$2" && return 0
    done
    return 1
}

# holder VGPU NAME BYTES: a standalone process of vGPU VGPU holding BYTES; its pid in $held.
holder() {
    VGPU_BAR0=$tmp/$1.bar0 "$quota" hold "$3" "$tmp/$2.ready" "$tmp/go" >>"$tmp/client.out" 2>&1 &
    pids="$pids $!"
    wait_file "$tmp/$2.ready"
    held=$(cat "$tmp/$2.ready")
}

busy() { # VGPU NAME: a process of vGPU VGPU keeping the fake GPU busy for 6 s; its pid in $busy
    VGPU_BAR0=$tmp/$1.bar0 "$workload" matmul 6 >"$tmp/$2.out" 2>&1 &
    busy=$!
    pids="$pids $busy"
}

case $scenario in
utilization-is-the-vgpus-own)
    # vGPU a keeps the GPU busy, vGPU b holds memory and runs nothing.
    standalone
    busy a w
    holder b idle 256M
    sleep 2 # a second of samples
    ask VGPU_BAR0="$tmp/a.bar0" "$nvml" util 60 100
    ask VGPU_BAR0="$tmp/b.bar0" "$nvml" util 0 10
    # The GPU itself is busy: what vGPU b reads is its own, not the GPU's.
    ask -u VGPU_MEMORY_LIMIT "$nvml" util 60 100
    ;;
process-utilization-lists-only-the-vgpus-processes)
    # a and b each keep the GPU busy (half each); c runs nothing.
    standalone
    busy a wa
    a=$busy
    busy b wb
    b=$busy
    holder c idle 256M
    sleep 2
    ask VGPU_BAR0="$tmp/a.bar0" "$nvml" proc-util "$a"
    ask VGPU_BAR0="$tmp/b.bar0" "$nvml" proc-util "$b"
    ask VGPU_BAR0="$tmp/c.bar0" "$nvml" proc-util
    ask -u VGPU_MEMORY_LIMIT "$nvml" proc-util "$a" "$b"
    ;;
processes-of-every-kind-list-only-the-vgpus)
    standalone
    holder a a1 512M
    a1=$held
    holder a a2 256M
    a2=$held
    holder b b1 256M
    b1=$held
    ask VGPU_BAR0="$tmp/a.bar0" "$nvml" procs "$a1" "$a2"
    ask VGPU_BAR0="$tmp/b.bar0" "$nvml" procs "$b1"
    ;;
mediated-pids-named-as-each-caller-sees-them)
    # The mediator records the host's pids.  A caller in a container sees its
    # neighbour there under its own pid for it, and not the host's process,
    # which its namespace does not hold; a caller on the host sees both under
    # the host's pids.  (Standalone vGPUs must not span PID namespaces: their
    # processes reap each other by pid, docs/design/memory.md.)
    need_pid_ns
    config "[vgpu.a]" "devices = 0" "memory = 4G" "uids = $me"
    start_mediator
    hold 512M host
    outside=$held
    in_pid_ns sh -c '"$0" hold 256M "$1/c.ready" "$1/go" >>"$1/client.out" 2>&1 &
        while [ ! -e "$1/c.ready" ]; do sleep 0.01; done
        "$2" compute-procs "$(cat "$1/c.ready")" >"$1/ns.out" 2>&1
        echo $? >"$1/ns.rc"
        while [ ! -e "$1/go" ]; do sleep 0.01; done' "$client" "$tmp" "$nvml" &
    ns=$!
    pids="$pids $ns"
    wait_file "$tmp/ns.rc"
    [ "$(cat "$tmp/ns.rc")" = 0 ] || { cat "$tmp/ns.out" >&2; fail "nvml_client in the container"; }
    inside=$(descendant "$ns" mediator_client) || fail "no holder in the container"
    ask "$nvml" compute-procs "$outside" "$inside"
    ;;
topology-answers-within-the-vgpu)
    standalone
    export FAKEGPU_DEVICES=4 VGPU_VISIBLE_DEVICES=1,2 VGPU_BAR0=$tmp/a.bar0
    ask "$nvml" topology
    ;;
handle-outside-the-vgpu-refused)
    standalone
    export FAKEGPU_DEVICES=4 VGPU_VISIBLE_DEVICES=1,2 VGPU_BAR0=$tmp/a.bar0
    ask "$nvml" foreign-handle
    ;;
*)
    echo "unknown scenario $scenario" >&2
    exit 2
    ;;
esac
touch "$tmp/go"
ok
