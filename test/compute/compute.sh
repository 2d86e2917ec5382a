#!/usr/bin/env bash
# The compute share end to end on the fake GPU: compute.sh SCENARIO BUILD_DIR
#
# test/compute/compute_client runs under vgpu (the meson test environment) over the fake
# driver, whose device time-slices between processes as a GPU does
# (test/fake/README.md); its `share` is the fraction of the run's wall time
# its kernels had the device.  Standalone tenants name their own BAR0
# (VGPU_BAR0 in the test's temp dir) and arbitrate through this user's page
# for the fake GPU 0 in /dev/shm/vgpu-UID/; mediated ones are given vGPUs
# by a vgpu-mediatord started here.  The bounds are wider than the GPU
# suite's (docs/design/compute.md): a 2-core CI machine runs this, loaded.
scenario=$1 build=$2
# shellcheck source=test/common/lib.sh
. "$(dirname "$(realpath "$0")")/../common/lib.sh"
use_build "$build"
workload=$build/test/compute/compute_client
tool=$build/test/compute/sched_page_test
med=$vgpu_mediatord
temp_dir vgpu-compute
medpid=
at_exit '[ -n "$medpid" ] && kill -CONT "$medpid" && kill -9 "$medpid"'
fail_logs="$tmp/*.out $tmp/*.err $tmp/med.log"
fail_lines=20

fake_gpu shared # one fake GPU for every process of the test
unset VGPU_MEDIATOR_SOCKET
export VGPU_LOG=${COMPUTE_TEST_LOG:-info} # COMPUTE_TEST_LOG=debug: the arbiter's every turn

page() { # this user's page for the fake GPU 0 (once a tenant made it)
    ls /dev/shm/vgpu-$(id -u)/sched-GPU-fa4e0000-0000-0000-0000-000000000000.v* 2>/dev/null | tail -n 1
}

# A failure shows the page too.
on_fail() {
    [ -n "$(page)" ] && "$tool" show "$(page)"
}

field() { # FILE KEY: the value of KEY in a workload's line
    sed -n "s/^workload .* $2=\([^ ]*\).*/\1/p" "$1"
}

within() { # VALUE LO HI
    awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'
}

soon() { # a start time after every tenant's set-up
    echo $(( $(date +%s%3N) + 1500 ))
}

# standalone NAME SHARE MODE WORKLOAD-ARGS...: a tenant with its own vGPU, in
# the background (pid in $last); SHARE "-" for none.
standalone() {
    local name=$1 share=$2 mode=$3
    shift 3
    env VGPU_BAR0="$tmp/$name.bar0" ${share:+$( [ "$share" != - ] && echo VGPU_COMPUTE_SHARE="$share")} \
        ${mode:+$( [ "$mode" != - ] && echo VGPU_COMPUTE_MODE="$mode")} \
        "$workload" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
    last=$!
    pids="$pids $last"
}

# bare NAME WORKLOAD-ARGS...: the workload without vgpu, in the background.
bare() {
    local name=$1
    shift
    env -u LD_PRELOAD "$workload" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
    last=$!
    pids="$pids $last"
}

# mediated NAME WORKLOAD-ARGS...: a tenant of the mediator's vGPU NAME, in the background.
mediated() {
    local name=$1
    shift
    env VGPU_MEDIATOR_SOCKET="$tmp/sock" VGPU_NAME="$name" "$workload" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
    last=$!
    pids="$pids $last"
}

join() { # PID NAME
    wait "$1" || fail "$2 exited with $?"
    grep '^workload' "$tmp/$2.out"
}

# pair_25_75 standalone|mediated A-OPTION B-OPTION: tenants a (25%) and b
# (75%), each its own vGPU (mediated: of a mediator started here), of 4 s of
# matmuls started together, with one more option each ("" for none); joined.
pair_25_75() {
    if [ "$1" = mediated ]; then
        mediator "[vgpu.a]" "devices = 0" "memory = 4G" "compute = 25" "uids = $me" \
                 "[vgpu.b]" "devices = 0" "memory = 4G" "compute = 75" "uids = $me"
        at=$(soon)
        mediated a matmul 4 --start-at "$at" $2; a=$last
        mediated b matmul 4 --start-at "$at" $3; b=$last
    else
        at=$(soon)
        standalone a 25% - matmul 4 --start-at "$at" $2; a=$last
        standalone b 75% - matmul 4 --start-at "$at" $3; b=$last
    fi
    join $a a; join $b b
}

expect_share() { # NAME LO HI
    local s
    s=$(field "$tmp/$1.out" share)
    within "$s" "$2" "$3" || fail "$1 got $s of the GPU, want $2..$3"
}

# expect_split NAME LO HI NAMES...: NAME's part of what all of NAMES got is
# LO..HI (what the arbiter decides; what the loaded machine lets the fake
# GPU deliver in all is expect_total's).
expect_split() {
    local name=$1 lo=$2 hi=$3 total=0 part
    shift 3
    for w in "$@"; do total=$(awk -v a="$total" -v b="$(field "$tmp/$w.out" share)" 'BEGIN { print a + b }'); done
    part=$(awk -v a="$(field "$tmp/$name.out" share)" -v t="$total" 'BEGIN { print (t > 0 ? a / t : 0) }')
    within "$part" "$lo" "$hi" || fail "$name had $part of what $* got together, want $lo..$hi"
}

expect_total() { # LO HI NAMES...
    local lo=$1 hi=$2 total=0
    shift 2
    for w in "$@"; do total=$(awk -v a="$total" -v b="$(field "$tmp/$w.out" share)" 'BEGIN { print a + b }'); done
    within "$total" "$lo" "$hi" || fail "together $* got $total of the GPU, want $lo..$hi"
}

# mediator VGPU-SECTION-LINES...: starts vgpu-mediatord with those vGPUs
# (and the options in $med_args).
med_args=
write_conf() { # VGPU-SECTION-LINES...
    {
        printf '[mediator]\nsocket = %s\nstate_dir = %s\n' "$tmp/sock" "$tmp/state"
        for line in "$@"; do printf '%s\n' "$line"; done
    } >"$tmp/conf"
}
mediator() {
    write_conf "$@"
    env -u LD_PRELOAD "$med" --config "$tmp/conf" --foreground $med_args >>"$tmp/med.log" 2>&1 &
    medpid=$!
    for _ in $(seq 1 500); do
        [ -S "$tmp/sock" ] && grep -q "serving" "$tmp/med.log" && return 0
        kill -0 "$medpid" 2>/dev/null || fail "the mediator exited"
        sleep 0.02
    done
    fail "the mediator did not start within 10 s"
}

# reload VGPU-SECTION-LINES...: the running mediator's config rewritten, and reloaded.
reload() {
    local n
    n=$(grep -c "reloaded" "$tmp/med.log")
    write_conf "$@"
    kill -HUP "$medpid"
    for _ in $(seq 1 500); do
        [ "$(grep -c "reloaded" "$tmp/med.log")" -gt "$n" ] && return 0
        sleep 0.02
    done
    fail "the mediator did not reload within 10 s"
}

# no_findings: the mediator's watch found no tenant using its GPU out of turn.
no_findings() {
    ! grep "watch: pid" "$tmp/med.log" || fail "the watch reported an honest tenant"
}

me=$(id -u)
# Every scenario starts from a GPU no vGPU of this user has arbitrated: the
# page of the fake GPU 0 is the user's, and would carry the entries of the
# scenarios before (tmpfs hands a later test's BAR0 file an earlier one's
# inode, and with it that vGPU's entry).  These tests run one at a time.
rm -f /dev/shm/vgpu-$(id -u)/sched-GPU-fa4e0000-0000-0000-0000-00000000000[01].v*

case $scenario in
standalone-lone-cap)
    # A hard cap holds on an idle GPU.
    standalone a 30% cap matmul 3; join $last a
    expect_share a 0.22 0.38
    grep -q "a compute share of 30% (a hard cap)" "$tmp/a.err" || fail "no log line names the cap"
    ;;

standalone-capture-under-a-cap-holds-and-does-not-wait)
    # PyTorch's and vLLM's CUDA graphs: a capture (global mode) of a stream
    # vgpu keeps markers on, beside a thread that launches, under a cap:
    # vgpu's own queries would break the capture, and its gate would hold
    # launches that run nothing (test/fake/timing_client.c).
    VGPU_BAR0="$tmp/cap.bar0" VGPU_COMPUTE_SHARE=10% VGPU_COMPUTE_MODE=cap \
        "$build/test/fake/timing_client" capture-under-a-compute-share >"$tmp/cap.out" 2>"$tmp/cap.err" ||
        fail "a capture under a 10% cap failed"
    grep -q "a compute share of 10% (a hard cap)" "$tmp/cap.err" || fail "vgpu did not schedule the client"
    cat "$tmp/cap.out"
    ;;

standalone-cap-is-not-charged-for-a-pause)
    # As PyTorch and the benchmarks do: warm up, then pause (here 1.5 s,
    # with the GPU last given to it) before the real work.  The pause is
    # not GPU time: a cap that charged it would owe seconds and get nothing.
    standalone a 30% cap matmul 2 --warm-up-ms 30 --start-at "$(soon)"; join $last a
    expect_share a 0.22 0.40
    ;;

standalone-lone-share-lends-idle-time)
    # Work-conserving (the default): alone, a 30% share gets the GPU.
    standalone a 30% - matmul 2; join $last a
    expect_share a 0.75 1.02
    ;;

standalone-two-tenants-get-25-and-75)
    pair_25_75 standalone "" --stream
    expect_split a 0.18 0.32 a b
    expect_total 0.75 1.02 a b
    ;;

standalone-second-tenant-converges)
    # a runs alone for 1.5 s, then b starts: b gets its 70% at once, and a
    # had the whole GPU before (1.5 s) and 30% after (2.5 s).
    now=$(date +%s%3N)
    standalone a 30% - matmul 5.5 --start-at $((now + 1500)); a=$last
    standalone b 70% - matmul 2.5 --start-at $((now + 4500)) --graph; b=$last
    join $b b; join $a a
    expect_share b 0.55 0.85
    expect_share a 0.40 0.70
    ;;

standalone-launch-bound-loop-is-capped)
    # A loop of tiny kernels, bound by the launch call: a 50% cap halves
    # its rate (it may launch in half the quanta).  Beside it, at the same
    # time so that both see the same load on the machine, the same loop
    # with no share: it is not arbitrated, and sets the pace.  The bound
    # above is the cap's; the one below only says the capped loop still runs
    # in its quanta: a machine busy with other tests takes CPU from whichever
    # loop it likes, and the rate of a CPU-bound launcher follows (0.28 seen
    # on a loaded 2-core CI machine; 0.45-0.5 on an idle one).
    at=$(soon)
    standalone free - - launch 3 --start-at "$at"; free=$last
    standalone capped 50% cap launch 3 --start-at "$at"; capped=$last
    join $free free; join $capped capped
    ratio=$(awk -v c="$(field "$tmp/capped.out" kernels_per_s)" -v b="$(field "$tmp/free.out" kernels_per_s)" \
        'BEGIN { print c / b }')
    within "$ratio" 0.15 0.7 || fail "a 50% cap gave the launch-bound loop $ratio of the rate of one with no share"
    ;;

standalone-host-bound-pair-keeps-its-speed | mediated-host-bound-pair-keeps-its-speed)
    # Two host-bound tenants (a launch takes 300 us of the host, a kernel
    # 100 us of the device): side by side without vgpu each runs at its own
    # pace, the GPU idle most of the time.  Under shares of 50/50 and 25/75
    # each keeps at least 75% of that pace (exclusive turns gave them half
    # and a quarter: each waited for a GPU that the other left idle).  The
    # pace is the host's, so it is measured again just before each split:
    # a machine that grew busier in between is not taken for vgpu's cost.
    export FAKEGPU_LAUNCH_NS=300000
    load="launch 3 --kernel-us 100 --batch 20"
    if [ "${scenario%%-*}" = mediated ]; then
        mediator "[vgpu.a]" "devices = 0" "memory = 4G" "compute = 50" "uids = $me" \
                 "[vgpu.b]" "devices = 0" "memory = 4G" "compute = 50" "uids = $me"
    fi
    for split in "50 50" "25 75"; do
        set -- $split
        # The mediator is stopped while the bare pair runs: its watch would
        # take them for processes that escaped it.
        [ -n "$medpid" ] && kill -STOP "$medpid"
        at=$(soon)
        bare a0 $load --start-at "$at"; a=$last
        bare b0 $load --start-at "$at"; b=$last
        join $a a0; join $b b0
        [ -n "$medpid" ] && kill -CONT "$medpid"
        pace=$(awk -v a="$(field "$tmp/a0.out" kernels_per_s)" -v b="$(field "$tmp/b0.out" kernels_per_s)" \
            'BEGIN { print (a + b) / 2 }')
        if [ "${scenario%%-*}" = mediated ]; then
            reload "[vgpu.a]" "devices = 0" "memory = 4G" "compute = $1" "uids = $me" \
                   "[vgpu.b]" "devices = 0" "memory = 4G" "compute = $2" "uids = $me"
            at=$(soon)
            mediated a $load --start-at "$at"; a=$last
            mediated b $load --start-at "$at"; b=$last
            # vgpu-smi shows one of them launching beside the other, which
            # leaves the GPU open.
            sleep "$(awk -v at="$at" -v now="$(date +%s%3N)" 'BEGIN { d = (at + 500 - now) / 1000; print (d > 0 ? d : 0) }')"
            seen=
            for _ in $(seq 1 40); do
                "$build/tools/vgpu-smi" --socket "$tmp/sock" --json >"$tmp/smi.json" || fail "vgpu-smi --json failed"
                seen=$(python3 -c "import json, sys
s = json.load(open(sys.argv[1]))
print(' '.join(v['name'] for v in s['vgpus'] if v['devices'][0]['compute_use']['beside_holder']))" "$tmp/smi.json")
                [ -n "$seen" ] && break
                sleep 0.05
            done
            [ -n "$seen" ] || fail "at $1/$2, vgpu-smi never showed a vGPU beside the holder: $(cat "$tmp/smi.json")"
        else
            at=$(soon)
            standalone a "$1%" - $load --start-at "$at"; a=$last
            standalone b "$2%" - $load --start-at "$at"; b=$last
        fi
        join $a a; join $b b
        for w in a b; do
            r=$(awk -v k="$(field "$tmp/$w.out" kernels_per_s)" -v p="$pace" 'BEGIN { print k / p }')
            within "$r" 0.75 2 || fail "at $1/$2, $w ran at $r of its pace without vgpu, want 0.75 or more"
        done
    done
    [ "${scenario%%-*}" = mediated ] && no_findings
    ;;

standalone-busy-tenant-keeps-its-share-beside-a-host-bound-one)
    # A tenant that keeps the GPU busy (75%) beside a host-bound one (25%):
    # in its own turns nobody launches beside it, so it gets its share; in
    # the host-bound one's turns it may, since that one leaves the GPU
    # idle.  The host-bound one runs in its turns.
    at=$(soon)
    standalone busy 75% - matmul 4 --start-at "$at"; busy=$last
    FAKEGPU_LAUNCH_NS=300000 standalone light 25% - launch 4 --kernel-us 100 --batch 20 --start-at "$at"
    light=$last
    join $busy busy; join $light light
    expect_share busy 0.65 1.02
    within "$(field "$tmp/light.out" kernels_per_s)" 300 100000 || fail "the host-bound tenant was starved"
    ;;

standalone-cap-stays-capped-beside-a-host-bound-holder | mediated-cap-stays-capped-beside-a-host-bound-holder)
    # A busy tenant capped at 20% beside a host-bound one (80%, a share)
    # that leaves the GPU idle most of its turns: the GPU opens to share
    # mode only, so the cap still bounds the busy one's time (it would
    # take most of the GPU if it were let in).
    if [ "${scenario%%-*}" = mediated ]; then
        mediator "[vgpu.capped]" "devices = 0" "memory = 4G" "compute = 20" "compute_mode = cap" "uids = $me" \
                 "[vgpu.light]" "devices = 0" "memory = 4G" "compute = 80" "uids = $me"
        at=$(soon)
        mediated capped matmul 4 --start-at "$at"; capped=$last
        FAKEGPU_LAUNCH_NS=300000 mediated light launch 4 --kernel-us 100 --batch 20 --start-at "$at"
    else
        at=$(soon)
        standalone capped 20% cap matmul 4 --start-at "$at"; capped=$last
        FAKEGPU_LAUNCH_NS=300000 standalone light 80% - launch 4 --kernel-us 100 --batch 20 --start-at "$at"
    fi
    light=$last
    join $capped capped; join $light light
    expect_share capped 0.1 0.3
    within "$(field "$tmp/light.out" kernels_per_s)" 300 100000 || fail "the host-bound tenant was starved"
    [ "${scenario%%-*}" = mediated ] && no_findings
    ;;

standalone-graph-tenant-keeps-its-queued-work-in-its-turns)
    # A 75% tenant replays CUDA graphs of 10 ms (50 kernels of 200 us)
    # beside a 25% one of single kernels.  A graph queued at the end of a
    # turn runs on into the next: it is charged to whoever queued it, and a
    # launch that waited for room in its queue checks its turn again.  The
    # 25% tenant had 0.20 before, its turns shortened by the graphs.
    pair_25_75 standalone "" --graph
    expect_split a 0.215 0.30 a b
    expect_total 0.75 1.02 a b
    ;;

mediated-graph-tenant-keeps-its-queued-work-in-its-turns)
    # The same under the mediator, the 25% tenant the one with graphs: it
    # had 0.30 before, its graphs running on into the other's turns.
    pair_25_75 mediated --graph ""
    expect_split a 0.20 0.285 a b
    expect_total 0.75 1.02 a b
    no_findings
    ;;

standalone-decode-pair-keeps-its-split | mediated-decode-pair-keeps-its-split)
    # Decode-like tenants at 25/75: a token is 32 kernels of 50 us, each
    # launch 30 us of the host, then a synchronize.  The GPU runs behind
    # the host while it launches: a holder keeps the GPU busy though its
    # thread waits only 40% of the time, and must not be taken for one that
    # leaves it idle (the other would run beside it, uncharged).  The 25%
    # tenant had 0.33-0.48 of the pair on the H100 before, and on the fake
    # GPU 0.34-0.39.
    export FAKEGPU_LAUNCH_NS=30000
    pair_25_75 "${scenario%%-*}" "--sync-each --kernel-us 50 --batch 32" "--sync-each --kernel-us 50 --batch 32"
    expect_split a 0.18 0.30 a b
    expect_total 0.75 1.02 a b
    [ "${scenario%%-*}" = mediated ] && no_findings
    ;;

standalone-dead-waiters-hold-nothing)
    # A vGPU whose process was killed while its threads waited leaves their
    # count in the page: once given the GPU and launching nothing, it is
    # no longer wanting, and the live tenant has the GPU.
    standalone ghost 50% - matmul 0.3; join $last ghost
    "$tool" add-waiting "$(page)" "$tmp/ghost.bar0" 3 || fail "could not forge the ghost's waiters"
    standalone a 50% - matmul 3; join $last a
    expect_share a 0.75 1.02
    ;;

standalone-tenant-back-after-a-minute-gets-the-gpu)
    # A capped vGPU whose processes have been gone a minute, while another
    # vGPU ran last: its entry in the page is stale.  Its next process takes
    # the entry again and must be given the GPU.  It waited for ever on the
    # H100 (bench/compute.py, a cap's second loop): its first step dropped
    # the stale entry it had just taken, and the thread it counted waiting
    # stayed in the dropped slot, so the entry it took anew never wanted the GPU.
    standalone a 30% cap matmul 0.3; join $last a
    standalone b 50% - matmul 0.3; join $last b
    "$tool" age "$(page)" "$tmp/a.bar0" 120 || fail "could not age a's entry"
    standalone a 30% cap matmul 2; a=$last
    (exec >/dev/null 2>&1; sleep 20; kill -9 $a) & dog=$!
    join $a a
    kill $dog 2>/dev/null
    expect_share a 0.22 0.38
    ;;

standalone-tenant-idle-a-minute-gets-the-gpu-again)
    # A long-lived process (a server, a notebook) idle for over a minute
    # while another vGPU of the user ran: its entry went stale and was
    # dropped.  When it launches again it must take an entry and be given
    # the GPU.  It waited for ever on the H100 (bench runs of long-lived
    # processes): the thread counted itself waiting in the dropped entry,
    # then took the same slot anew, which cleared the count, so the vGPU
    # never wanted the GPU.
    # a's entry is aged and dropped before it launches again: its start is
    # far enough off for a machine that is busy with something else.
    now=$(date +%s%3N)
    standalone a 30% cap matmul 2 --warm-up-ms 30 --start-at $((now + 6000)); a=$last
    for _ in $(seq 1 500); do [ -n "$(page)" ] && "$tool" show "$(page)" | grep -q " mode 1 " && break; sleep 0.02; done
    [ -n "$(page)" ] || fail "a made no page of the arbiter's"
    sleep 0.5 # warmed up, its entry idle
    "$tool" age "$(page)" "$tmp/a.bar0" 120 || fail "could not age a's entry"
    standalone b 50% - matmul 0.3; join $last b # its steps drop a's stale entry
    "$tool" show "$(page)" | grep -q "$(stat -c %i "$tmp/a.bar0") share" && fail "a's stale entry was not dropped"
    (exec >/dev/null 2>&1; sleep 20; kill -9 $a) & dog=$!
    join $a a
    kill $dog 2>/dev/null
    expect_share a 0.22 0.40
    ;;

standalone-share-then-cap-on-one-vgpu)
    # A vGPU's next process with other settings (the same BAR0 file, so
    # the same entry in the page): a cap that follows a work-conserving run
    # holds from its start, owing nothing of the time the share ran.  The
    # arbiter counted that time against a cap's budget, and the capped
    # process got nothing for seconds.
    standalone a 30% - matmul 2; join $last a
    expect_share a 0.75 1.02
    standalone a 30% cap matmul 2; join $last a
    expect_share a 0.22 0.40
    ;;

standalone-lone-tenant-meets-a-newcomer)
    # A vGPU of 25% uses the idle GPU alone for 6 s and stops; a vGPU of
    # 75% starts, and a second later the first vGPU's next process: it gets
    # its share, not a wait while the newcomer catches up with what it did
    # alone (0.3% for seconds, before the arbiter kept a floor of virtual time).
    standalone a 25% - matmul 6; join $last a
    sleep 0.2
    standalone b 75% - matmul 5; b=$last
    sleep 1
    standalone a 25% - matmul 3; a=$last
    join $a a; join $b b
    expect_share a 0.15 0.40
    ;;

mediated-lone-tenant-meets-a-newcomer)
    # The same under vgpu-mediatord.
    mediator "[vgpu.a]" "devices = 0" "memory = 4G" "compute = 25" "uids = $me" \
             "[vgpu.b]" "devices = 0" "memory = 4G" "compute = 75" "uids = $me"
    mediated a matmul 6; join $last a
    sleep 0.2
    mediated b matmul 5; b=$last
    sleep 1
    mediated a matmul 3; a=$last
    join $a a; join $b b
    expect_share a 0.15 0.40
    no_findings
    ;;

mediated-two-tenants-get-25-and-75)
    pair_25_75 mediated "" --graph
    expect_split a 0.18 0.32 a b
    expect_total 0.75 1.02 a b
    grep -q "compute shares are arbitrated" "$tmp/med.log" || fail "the mediator did not say it arbitrates"
    no_findings
    ;;

mediated-lone-cap)
    mediator "[vgpu.a]" "devices = 0" "memory = 4G" "compute = 30" "compute_mode = cap" "uids = $me"
    mediated a matmul 3; join $last a
    expect_share a 0.22 0.38
    no_findings
    ;;

mediated-reload-turns-a-share-into-a-cap-and-back)
    # systemctl reload with another compute_mode: the vGPU's processes get
    # the new setting at once, the cap owing nothing of the time its share
    # ran before (on the H100 a share turned into a 10% cap was owed for
    # half a minute, and its process given nothing meanwhile).
    mediator "[vgpu.a]" "devices = 0" "memory = 4G" "compute = 30" "uids = $me"
    mediated a matmul 2; join $last a
    expect_share a 0.75 1.02
    reload "[vgpu.a]" "devices = 0" "memory = 4G" "compute = 30" "compute_mode = cap" "uids = $me"
    mediated a matmul 2; join $last a
    expect_share a 0.22 0.40
    reload "[vgpu.a]" "devices = 0" "memory = 4G" "compute = 30" "uids = $me"
    mediated a matmul 2; join $last a
    expect_share a 0.75 1.02
    no_findings
    ;;

mediated-lone-share-lends-idle-time)
    mediator "[vgpu.a]" "devices = 0" "memory = 4G" "compute = 30" "uids = $me" "[vgpu.b]" "devices = 0" "memory = 4G" "compute = 70" "uids = $me"
    mediated a matmul 2; join $last a
    expect_share a 0.75 1.02
    ;;

mediated-tenant-cannot-set-its-own-share)
    # The mediator's config decides: a tenant's own VGPU_COMPUTE_SHARE (a
    # cap of 10% it would like to put on itself, or one it would like to
    # lift) is ignored, and it says so.
    mediator "[vgpu.a]" "devices = 0" "memory = 4G" "compute = 30" "compute_mode = cap" "uids = $me"
    VGPU_COMPUTE_SHARE=100% VGPU_COMPUTE_MODE=share mediated a matmul 3; join $last a
    expect_share a 0.22 0.38
    grep -q "VGPU_COMPUTE_SHARE and VGPU_COMPUTE_MODE are ignored: vgpu-mediatord" "$tmp/a.err" ||
        fail "the tenant did not say that its own share is ignored"
    ;;

mediated-forged-grant-lifts-no-cap)
    # A tenant of a 10% cap writes its vGPU's grant for 2 s, no workload
    # running, and leaves: the grant is the mediator's to write (on the
    # first page, which tenants map read-only), so its next, ordinary
    # process is still capped.
    mediator "[vgpu.a]" "devices = 0" "memory = 4G" "compute = 10" "compute_mode = cap" "uids = $me"
    python3 "$(dirname "$(realpath "$0")")/../mediator/mediator_tenant.py" "$tmp/sock" grant 2 >"$tmp/forger.out" 2>&1 ||
        fail "the forger failed: $(cat "$tmp/forger.out")"
    mediated a matmul 3; join $last a
    expect_share a 0.03 0.2
    ;;

guest-forged-grant-lasts-a-millisecond)
    # A VM writes every byte of its window, its grant too: one it wrote
    # itself, with no turn given, is undone at the mediator's next
    # arbitration, and its next process is capped.
    mediator "[vgpu.vm]" "devices = 0" "memory = 4G" "compute = 10" "compute_mode = cap" "guest = yes"
    python3 - "$tmp/state/vm.bar0" <<'PYEOF' || fail "cannot write the VM's grant"
import mmap, os, struct, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
w = mmap.mmap(fd, 262144)
version = struct.unpack_from("<I", w, 8)[0]
at = 0x1000 + 64 + 32 if version <= 3 else 0xC00  # device 0's grant, by layout
end = time.monotonic() + 2
while time.monotonic() < end:
    w[at:at + 4] = struct.pack("<I", 1)
    time.sleep(0.0005)
PYEOF
    sys=$tmp/sys/bus/pci/devices
    mkdir -p "$sys/0000:00:05.0"
    echo 0x1af4 >"$sys/0000:00:05.0/vendor"; echo 0x1110 >"$sys/0000:00:05.0/device"
    ln -s "$tmp/state/vm.bar0" "$sys/0000:00:05.0/resource2"
    env VGPU_SYSFS_ROOT="$tmp/sys" VGPU_MEDIATOR_SOCKET=none "$workload" matmul 3 >"$tmp/vm.out" 2>"$tmp/vm.err" &
    last=$!; pids="$pids $last"
    join $last vm
    expect_share vm 0.03 0.2
    ;;

mediated-stopped-mediator-lets-launches-go)
    # The mediator stops arbitrating (SIGSTOP): within a second the capped
    # tenant launches unscheduled, and says so once.
    mediator "[vgpu.a]" "devices = 0" "memory = 4G" "compute = 20" "compute_mode = cap" "uids = $me"
    mediated a matmul 5; a=$last
    sleep 1.5
    kill -STOP "$medpid"
    join $a a
    kill -CONT "$medpid"
    expect_share a 0.45 1.02
    [ "$(grep -c "has not arbitrated vGPU device 0's GPU" "$tmp/a.err")" = 1 ] ||
        fail "the tenant did not say once that its launches go ahead unscheduled"
    ;;

mediated-views-show-shares-held-time-and-utilization)
    # Two busy tenants of 25% and 75% vGPUs on GPU 0, and an idle vGPU on
    # GPU 1 whose process launches nothing: vgpu-smi and the metrics show
    # each one's share and mode, the GPU time the arbiter charged it
    # growing, what it held and used over the last second, and each
    # process's utilization as the (fake) driver samples it.
    med_args="--metrics 127.0.0.1:0"
    mediator "[vgpu.a]" "devices = 0" "memory = 4G" "compute = 25" "uids = $me" \
             "[vgpu.b]" "devices = 0" "memory = 4G" "compute = 75" "uids = $me" \
             "[vgpu.idle]" "devices = 1" "memory = 1G" "compute = 50" "compute_mode = cap" "uids = $me"
    env VGPU_MEDIATOR_SOCKET="$tmp/sock" VGPU_NAME=idle "$build/test/mediator/mediator_client" hold 64M "$tmp/idle.ready" \
        "$tmp/idle.go" >"$tmp/idle.out" 2>"$tmp/idle.err" &
    idle=$!
    pids="$pids $idle"
    at=$(soon)
    mediated a matmul 30 --start-at "$at"; a=$last
    mediated b matmul 30 --start-at "$at" --stream; b=$last
    for _ in $(seq 1 500); do [ -s "$tmp/idle.ready" ] && break; sleep 0.02; done
    # Two whole intervals into the run, and 1.5 s later, while both still run.
    sleep "$(awk -v at="$at" -v now="$(date +%s%3N)" 'BEGIN { d = (at + 2500 - now) / 1000; print (d > 0 ? d : 0) }')"
    "$build/tools/vgpu-smi" --socket "$tmp/sock" --json >"$tmp/first.json" || fail "vgpu-smi --json failed"
    sleep 1.5
    "$build/tools/vgpu-smi" --socket "$tmp/sock" --json >"$tmp/second.json" || fail "vgpu-smi --json failed"
    port=$(sed -n 's/.*metrics on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/med.log")
    python3 -c "import sys, urllib.request
sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$port/metrics', timeout=5).read().decode())" \
        >"$tmp/metrics.txt" || fail "no metrics page"
    "$build/tools/vgpu-smi" --socket "$tmp/sock" >"$tmp/table.txt" || fail "vgpu-smi failed"
    kill -0 "$a" && kill -0 "$b" || fail "a tenant ended before the views were read: the machine is too slow for this test"
    # What is shown is all this asks of the tenants: they need not run to their end.
    kill -9 "$a" "$b"
    touch "$tmp/idle.go"
    wait "$idle" || fail "the idle vGPU's process exited with $?"
    cat "$tmp/table.txt"
    python3 "$(dirname "$0")/compute_views_check.py" "$tmp" "$a" "$b" "$idle" ||
        fail "the views are wrong (above)"
    ;;

*)
    echo "unknown scenario $scenario" >&2
    exit 2
    ;;
esac
ok
