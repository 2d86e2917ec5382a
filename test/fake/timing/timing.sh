#!/bin/sh
# The fake GPU's timing model end to end: timing.sh SCENARIO TIMING_CLIENT WORKLOAD
#
# Runs timing_client (test/fake/timing_client.c) and workload (test/compute/compute_client.c)
# under vgpu over the fake driver (the meson test environment), each scenario
# in a fresh temp dir; processes that share the device share a FAKEGPU_STATE
# there.  The bounds hold on a loaded 2-core machine: the fake's device time
# does not depend on how promptly its threads are scheduled.
set -u

scenario=$1
client=$2
workload=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vgpu-timing.XXXXXX") || exit 1
pids=
cleanup() {
    for p in $pids; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

unset FAKEGPU_STATE FAKEGPU_LAUNCH_NS FAKEGPU_KERNEL_NS FAKEGPU_TIMESLICE_NS FAKEGPU_DEVICES
unset VGPU_VISIBLE_DEVICES VGPU_MEMORY_LIMIT VGPU_BAR0

fail() {
    echo "FAIL ($scenario): $*" >&2
    exit 1
}

# The value of key in a workload's output line.
field() {
    sed -n "s/.* $2=\([^ ]*\).*/\1/p" "$1"
}

# Whether lo <= value <= hi.
within() {
    awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'
}

# workload ARGS... > $tmp/NAME.out in the background; its pid in $last.
start_workload() {
    name=$1
    shift
    "$workload" "$@" > "$tmp/$name.out" & last=$!
    pids="$pids $last"
}

join() {
    wait "$1" || fail "$2 exited with $?: $(cat "$tmp/$2.out" 2>/dev/null)"
    cat "$tmp/$2.out"
}

# Runs workload NAME ARGS... to its end, which must come within LIMIT_MS:
# finish_within LIMIT_MS NAME ARGS...
finish_within() {
    limit=$1
    shift
    begin=$(date +%s%3N)
    start_workload "$@"
    join $last "$1"
    took=$(( $(date +%s%3N) - begin ))
    [ "$took" -lt "$limit" ] || fail "$1 took $took ms, more than $limit"
}

# A start time for processes that begin together: after their set-up.
soon() {
    echo $(( $(date +%s%3N) + 1500 ))
}

expect_share() {
    share=$(field "$tmp/$1.out" share)
    within "$share" "$2" "$3" || fail "$1 got $share of the device, want $2..$3: $(cat "$tmp/$1.out")"
}

# The shares of the named workloads add up to lo..hi.
expect_total() {
    lo=$1 hi=$2
    shift 2
    total=0
    for w in "$@"; do total=$(awk -v a="$total" -v b="$(field "$tmp/$w.out" share)" 'BEGIN { print a + b }'); done
    within "$total" "$lo" "$hi" || fail "together $* got $total of the device, want $lo..$hi"
}

case "$scenario" in
matmul-alone-gets-the-whole-device)
    start_workload a matmul 1.5
    join $last a
    expect_share a 0.75 1.02
    device=$(awk -v d="$(field "$tmp/a.out" device_s)" -v s="$(field "$tmp/a.out" seconds)" 'BEGIN { print d / s }')
    within "$device" 0.75 1.02 || fail "events measured $device of the run as device time"
    ;;

two-processes-share-the-device-evenly)
    export FAKEGPU_STATE="$tmp/fake.state"
    at=$(soon)
    start_workload a matmul 2 --start-at "$at"; a=$last
    start_workload b matmul 2 --start-at "$at"; b=$last
    join $a a; join $b b
    expect_share a 0.30 0.70
    expect_share b 0.30 0.70
    expect_total 0.80 1.02 a b
    ;;

two-processes-share-evenly-whatever-their-kernel-lengths)
    # Kernels of 50 us against kernels of 2 ms: the long ones are preempted
    # at the end of a timeslice, as the GPU does.
    export FAKEGPU_STATE="$tmp/fake.state"
    at=$(soon)
    start_workload short matmul 2 --kernel-us 50 --batch 200 --start-at "$at"; a=$last
    start_workload long matmul 2 --kernel-us 2000 --batch 5 --start-at "$at"; b=$last
    join $a short; join $b long
    expect_share short 0.30 0.70
    expect_share long 0.30 0.70
    expect_total 0.80 1.02 short long
    ;;

three-processes-get-a-third-each)
    export FAKEGPU_STATE="$tmp/fake.state"
    at=$(soon)
    start_workload a matmul 2 --start-at "$at"; a=$last
    start_workload b matmul 2 --stream --start-at "$at"; b=$last
    start_workload c matmul 2 --graph --start-at "$at"; c=$last
    join $a a; join $b b; join $c c
    for w in a b c; do expect_share $w 0.20 0.47; done
    expect_total 0.80 1.02 a b c
    ;;

launch-bound-loop-runs-at-one-launch-per-FAKEGPU_LAUNCH_NS)
    export FAKEGPU_LAUNCH_NS=20000
    "$client" "$scenario" || fail "timing_client $scenario"
    ;;

nvml-reports-a-saturated-device)
    export FAKEGPU_STATE="$tmp/fake.state"
    start_workload a matmul 3.5; a=$last
    sleep 2.2
    "$client" nvml-shows 75 100 "$a" 75 100 || fail "timing_client nvml-shows"
    join $a a
    ;;

nvml-reports-two-processes-half-each)
    export FAKEGPU_STATE="$tmp/fake.state"
    at=$(soon)
    start_workload a matmul 4 --start-at "$at"; a=$last
    start_workload b matmul 4 --start-at "$at"; b=$last
    sleep 3.7
    "$client" nvml-shows 75 100 "$a" 30 70 "$b" 30 70 || fail "timing_client nvml-shows"
    join $a a; join $b b
    ;;

nvml-reports-an-idle-device)
    export FAKEGPU_STATE="$tmp/fake.state"
    "$client" nvml-idle-device || fail "timing_client nvml-idle-device"
    ;;

turn-of-a-dead-holder-is-skipped)
    # One process runs a 60 s kernel alone (it holds the device) and is
    # killed; it stays a zombie meanwhile.  The next one gets the device.
    export FAKEGPU_STATE="$tmp/fake.state"
    start_workload holder matmul 60 --kernel-us 60000000 --batch 1; holder=$last
    sleep 1
    kill -9 "$holder"
    finish_within 5000 next matmul 0.5
    wait "$holder" 2>/dev/null
    expect_share next 0.75 1.02
    ;;

turn-of-a-dead-waiter-is-skipped)
    # Without preemption, a process waiting behind two 1 s kernels is
    # killed; the one queued after it gets the device when they end.
    export FAKEGPU_STATE="$tmp/fake.state" FAKEGPU_TIMESLICE_NS=100000000000
    start_workload holder matmul 0.5 --kernel-us 1000000 --batch 1; holder=$last
    sleep 0.5
    start_workload waiter matmul 5; waiter=$last
    sleep 0.5
    kill -9 "$waiter"
    finish_within 6000 next matmul 0.5
    join $holder holder
    ;;

exit-with-work-queued-ends-at-once)
    start=$(date +%s%3N)
    "$client" exit-with-work-queued || fail "timing_client exit-with-work-queued"
    took=$(( $(date +%s%3N) - start ))
    [ "$took" -lt 3000 ] || fail "a process that left 10 s of kernels queued took $took ms to exit"
    ;;

graph-without-kernels-takes-one-kernel-time)
    export FAKEGPU_KERNEL_NS=20000000
    "$client" "$scenario" || fail "timing_client $scenario"
    ;;

async-alloc-in-a-capture-under-a-quota)
    VGPU_MEMORY_LIMIT=1G VGPU_BAR0=$tmp/bar0 "$client" async-alloc-in-a-capture ||
        fail "timing_client async-alloc-in-a-capture"
    ;;
*)
    "$client" "$scenario" || fail "timing_client $scenario"
    ;;
esac
echo "ok - $scenario"
