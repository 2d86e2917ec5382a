#!/usr/bin/env bash
# The vGPU memory quota end to end: quota.sh SCENARIO QUOTA_CLIENT
#
# Runs quota_client (test/quota/quota_client.c) under vgpu over the fake driver
# (the meson test environment: LD_PRELOAD, VGPU_REAL_*), each scenario with
# its own BAR0 and log in a fresh temp dir, never the default /dev/shm path.
# Multi-process scenarios start the processes, synchronise them through
# files, and check exact accounting in between.
scenario=$1 client=$2
# shellcheck source=test/common/lib.sh
. "$(dirname "$(realpath "$0")")/../common/lib.sh"
temp_dir vgpu-quota
fake_gpu
export VGPU_BAR0="$tmp/vgpu.bar0"
export VGPU_LOG_FILE="$tmp/vgpu.log"
fail_logs=$VGPU_LOG_FILE
fail_lines=all

run() {
    "$client" "$@" || fail "quota_client $* failed"
}

# Waits for a background process; fails unless it exited 0.
join() {
    wait "$1" || fail "process $1 ($2) exited with $?"
}

MiB=1048576
GiB=1073741824

# A process refused for its settings: cuInit NO_DEVICE, NVML no device, one
# error line on stderr (no VGPU_LOG_FILE) that contains each of "$@".
expect_refused() {
    unset VGPU_LOG_FILE
    "$client" refused 2>"$tmp/stderr"
    rc=$?
    cat "$tmp/stderr" >&2
    [ $rc -eq 0 ] || fail "quota_client refused failed"
    n=$(grep -c ': error: ' "$tmp/stderr")
    [ "$n" -eq 1 ] || fail "$n error lines on stderr, want 1"
    line=$(grep ': error: ' "$tmp/stderr")
    for want in "$@"; do
        case $line in
        *"$want"*) ;;
        *) fail "the error line does not say \"$want\": $line" ;;
        esac
    done
}

# Windows another user planted: the scenario needs root (to plant them
# with chown) and its own /dev/shm (a tmpfs in a private mount namespace,
# so the machine's is never touched).  Re-runs this script there.
private_shm() {
    need_root "planting another user's files"
    [ -n "${VGPU_TEST_PRIVATE_SHM:-}" ] && return
    need_private_mounts
    trap - EXIT
    rm -rf "$tmp"
    exec unshare -m --propagation private env VGPU_TEST_PRIVATE_SHM=1 \
        sh -c 'mount -t tmpfs -o mode=1777 vgpu-test-shm /dev/shm && exec "$@"' sh "$0" "$scenario" "$client"
}
OTHER=65534 # the uid of "another user"

case $scenario in
view | oom-log)
    export VGPU_MEMORY_LIMIT=4G
    run "$scenario"
    ;;
per-device)
    export VGPU_MEMORY_LIMIT=0:1G,1:2G
    run per-device
    ;;
visible)
    export FAKEGPU_DEVICES=4 VGPU_VISIBLE_DEVICES=2,0
    run visible
    ;;
alloc-* | mem-create | array-* | mipmapped | proc-address | ctx-destroy | primary-reset | procs-many | fork-*)
    export VGPU_MEMORY_LIMIT=2G
    run "$scenario"
    ;;

shared)
    # Two processes of one vGPU (2G): the first holds 1.5G, the second gets
    # what is left after both contexts (128M each here), and no more.
    export VGPU_MEMORY_LIMIT=2G FAKEGPU_CTX_OVERHEAD=128M FAKEGPU_STATE="$tmp/fake.state"
    "$client" hold 1536M "$tmp/a.ready" "$tmp/a.go" & a=$!
    pids="$a"
    wait_file "$tmp/a.ready"
    run shared-second 1536M
    touch "$tmp/a.go"
    join "$a" "the first process"
    run expect-used 0 0
    ;;

pid-namespaces-share-a-bar0)
    # A process in another PID namespace joins the vGPU (a container given
    # the same BAR0 file): it cannot see the first process's pid, and must
    # not take it for dead and return its memory.  Each keeps its own fake
    # driver state (the fake's shared state assumes one PID namespace).
    ns="unshare --pid --fork --mount-proc"
    if ! $ns true 2>/dev/null; then
        ns="unshare --user --map-root-user --pid --fork --mount-proc"
        $ns true 2>/dev/null || skip "no new PID namespace here (unshare refused)"
    fi
    export VGPU_MEMORY_LIMIT=4G
    "$client" hold 1G "$tmp/a.ready" "$tmp/a.go" & a=$!
    pids="$a"
    wait_file "$tmp/a.ready"
    $ns "$client" expect-used $((GiB + 256 * MiB)) 1 || fail "the process in another PID namespace reaped the first"
    run expect-used $((GiB + 256 * MiB)) 1
    touch "$tmp/a.go"
    join "$a" "the first process"
    run expect-used 0 0
    ;;

reclaim)
    # A process holding 1G is killed with SIGKILL: another process of the
    # vGPU, already running, sees the bytes return within 1.5 s.
    export VGPU_MEMORY_LIMIT=4G FAKEGPU_STATE="$tmp/fake.state"
    "$client" hold 1G "$tmp/a.ready" "$tmp/a.go" & a=$!
    pids="$a"
    wait_file "$tmp/a.ready"
    "$client" reclaim-watch 1G "$tmp/b.ready" "$tmp/b.go" & b=$!
    pids="$a $b"
    wait_file "$tmp/b.ready"
    kill -9 "$a"
    wait "$a" 2>/dev/null
    touch "$tmp/b.go"
    join "$b" "the watching process"
    run expect-used 0 0
    ;;

property-*)
    # The accounting's invariants through a random walk of every path
    # (property_client.c); the seed is the scenario's suffix.
    export VGPU_MEMORY_LIMIT=1G FAKEGPU_CTX_EXTRA=192M
    "$(dirname "$client")/property_client" "${scenario#property-}" 1500 ||
        fail "the accounting's invariants broke (seed ${scenario#property-})"
    ;;
graph-memory)
    export VGPU_MEMORY_LIMIT=1G
    run graph-memory
    ;;
context-too-big)
    # A 100 MiB quota, a 256 MiB context (the fake's): the first process
    # measures the context and is refused it, and so is the next, which
    # knows the size beforehand; each says the smallest quota that works.
    export VGPU_MEMORY_LIMIT=100M
    for who in first second; do
        run context-too-big
        grep -q "error: .*memory quota of 100.00 MiB is smaller than one CUDA context on this GPU, which takes 256.00 MiB (measured).* at least 256.00 MiB .*(VGPU_MEMORY_LIMIT)" "$VGPU_LOG_FILE" ||
            fail "the $who process did not name the smallest quota"
        : >"$VGPU_LOG_FILE"
    done
    ;;
contexts)
    export VGPU_MEMORY_LIMIT=2G FAKEGPU_CTX_EXTRA=192M
    run contexts
    ;;
ctx-limits)
    export VGPU_MEMORY_LIMIT=2G
    run ctx-limits
    ;;
counters-rebuilt-when-idle)
    # An idle vGPU whose counters say 4 EiB used by 7 processes (a stray
    # write, or processes killed between two updates): the next process
    # finds them rebuilt from the slots (nothing), and the whole quota free.
    export VGPU_MEMORY_LIMIT=2G
    run view-quiet
    run poke-counters $((1 << 62)) 7
    run alloc-v2
    run expect-used 0 0
    ;;
counters-rebuilt-with-a-live-process)
    # 100M counted that no live process holds (one killed between its two
    # updates): rebuilt to what the live process holds, no more, no less.
    export VGPU_MEMORY_LIMIT=4G FAKEGPU_STATE="$tmp/fake.state"
    "$client" hold 1G "$tmp/a.ready" "$tmp/a.go" & a=$!
    pids="$a"
    wait_file "$tmp/a.ready"
    run poke-counters +$((100 * MiB)) 5
    run expect-rebuilt $((GiB + 256 * MiB)) 1
    touch "$tmp/a.go"
    join "$a" "the holding process"
    run expect-used 0 0
    ;;

half-reaped-slot-finished)
    # A process of the vGPU killed halfway through returning a dead
    # process's slot leaves it reaping, in its own name: the next reap
    # finishes it, and the counters are rebuilt to what the live process
    # holds (they could not be while a slot said reaping).
    export VGPU_LOG=info VGPU_MEMORY_LIMIT=4G FAKEGPU_STATE="$tmp/fake.state"
    "$client" hold 1G "$tmp/a.ready" "$tmp/a.go" & a=$!
    pids="$a"
    wait_file "$tmp/a.ready"
    run poke-half-reaped $((300 * MiB)) $((200 * MiB))
    run expect-rebuilt $((GiB + 256 * MiB)) 1
    grep -q 'left half returned by a process that died returning it' "$VGPU_LOG_FILE" ||
        fail "finishing the slot was not logged"
    touch "$tmp/a.go"
    join "$a" "the holding process"
    run expect-used 0 0
    ;;

threads)
    # 32 threads of one process churn against a 1G quota.
    export VGPU_MEMORY_LIMIT=1G
    run churn 32 0
    run expect-used 0 0
    ;;

processes)
    # 4 processes of 8 threads each churn on one 2G vGPU (their contexts
    # take 1G of it; each process alone keeps ~512M live), then hold a known
    # amount: BAR0 holds exactly that plus 4 contexts; all of it returns
    # when they exit.
    export VGPU_MEMORY_LIMIT=2G FAKEGPU_STATE="$tmp/fake.state"
    for i in 0 1 2 3; do
        "$client" churn 8 $i "$tmp/c$i.ready" "$tmp/go" & pids="$pids $!"
    done
    for i in 0 1 2 3; do wait_file "$tmp/c$i.ready.armed"; done
    touch "$tmp/go.start" # all four churn at once
    total=0 refusals=0
    for i in 0 1 2 3; do
        wait_file "$tmp/c$i.ready"
        read -r held refused <"$tmp/c$i.ready"
        total=$((total + held)) refusals=$((refusals + refused))
    done
    echo "the four processes met the quota $refusals times"
    [ "$refusals" -gt 0 ] || fail "together the processes never reached the quota"
    run expect-used $((total + 4 * 256 * MiB)) 4
    touch "$tmp/go"
    i=0
    for p in $pids; do
        join "$p" "churn process $i"
        i=$((i + 1))
    done
    run expect-used 0 0
    ;;

procs-list)
    # vGPU x: processes a (1G) and b (512M); vGPU y on the same GPU: c
    # (256M).  NVML in each lists only its own, with what they hold.
    export VGPU_MEMORY_LIMIT=4G FAKEGPU_STATE="$tmp/fake.state"
    x="$tmp/x.bar0" y="$tmp/y.bar0"
    VGPU_BAR0=$x "$client" hold 1G "$tmp/a.ready" "$tmp/go" & a=$!
    pids="$a"
    wait_file "$tmp/a.ready"
    VGPU_BAR0=$x "$client" hold 512M "$tmp/b.ready" "$tmp/go" & b=$!
    pids="$pids $b"
    wait_file "$tmp/b.ready"
    VGPU_BAR0=$y "$client" hold 256M "$tmp/c.ready" "$tmp/go" & c=$!
    pids="$pids $c"
    wait_file "$tmp/c.ready"
    ovh=$((256 * MiB))
    VGPU_BAR0=$x run procs-list "$a:$((GiB + ovh))" "$b:$((512 * MiB + ovh))"
    VGPU_BAR0=$y run procs-list "$c:$((256 * MiB + ovh))"
    touch "$tmp/go"
    join "$a" a
    join "$b" b
    join "$c" c
    VGPU_BAR0=$x run procs-list
    ;;

refused-memory-limit)
    export VGPU_MEMORY_LIMIT=abc
    expect_refused VGPU_MEMORY_LIMIT abc
    [ -e "$VGPU_BAR0" ] && fail "a refused setting created the BAR0 file"
    ;;
refused-visible-devices)
    export VGPU_VISIBLE_DEVICES=5
    expect_refused VGPU_VISIBLE_DEVICES "GPU 5"
    ;;
refused-corrupt-bar0)
    head -c 172032 /dev/urandom >"$VGPU_BAR0"
    cp "$VGPU_BAR0" "$tmp/orig"
    expect_refused "not a vgpu BAR0" "$VGPU_BAR0"
    cmp -s "$VGPU_BAR0" "$tmp/orig" || fail "the refused BAR0 file was modified"
    ;;
refused-foreign-bar0)
    echo "not a BAR0, someone's notes" >"$VGPU_BAR0"
    cp "$VGPU_BAR0" "$tmp/orig"
    export VGPU_MEMORY_LIMIT=2G
    expect_refused "not a vgpu BAR0" "$VGPU_BAR0"
    cmp -s "$VGPU_BAR0" "$tmp/orig" || fail "the refused BAR0 file was modified"
    ;;

default-bar0-private-dir)
    # No VGPU_BAR0: the window is in a directory of this user's own,
    # /dev/shm/vgpu-UID (mode 0700), never one /dev/shm file others can plant.
    private_shm
    unset VGPU_BAR0
    export VGPU_MEMORY_LIMIT=4G
    run view-quiet
    dir=/dev/shm/vgpu-$(id -u)
    [ "$(stat -c '%u %a %F' "$dir")" = "$(id -u) 700 directory" ] || fail "$dir is $(stat -c '%u %a %F' "$dir")"
    [ "$(stat -c '%u %a %s' "$dir/all.bar0")" = "$(id -u) 600 172032" ] ||
        fail "$dir/all.bar0 is $(stat -c '%u %a %s' "$dir/all.bar0" 2>&1)"
    VGPU_BAR0=$dir/all.bar0 run view # the window the default made, with its quota
    ;;
foreign-private-dir-is-passed-over)
    # Another user made /dev/shm/vgpu-UID first (world-writable, theirs),
    # and vgpu-UID.1 too.  Neither is used (their owner could rewrite this
    # user's limits), and neither blocks this user: its windows go in
    # vgpu-UID.2, made 0700, which its next process finds again.
    private_shm
    unset VGPU_BAR0
    export VGPU_MEMORY_LIMIT=4G
    dir=/dev/shm/vgpu-$(id -u)
    install -d -o $OTHER -m 0777 "$dir" "$dir.1"
    VGPU_LOG_FILE=$tmp/log run view-quiet
    grep -q "warn: $dir, where this user's vGPU windows would live, is a directory of uid $OTHER (mode 0777), not this user's (uid $(id -u)): another user made it first, and it is never used; this user's are in $dir.2 instead" \
        "$tmp/log" || fail "the passed-over directory was not said: $(cat "$tmp/log")"
    [ -z "$(ls -A "$dir")$(ls -A "$dir.1")" ] || fail "something was written into another user's directory"
    [ "$(stat -c '%u %a %F' "$dir.2")" = "$(id -u) 700 directory" ] || fail "$dir.2 is $(stat -c '%u %a %F' "$dir.2")"
    [ "$(stat -c '%u %a %s' "$dir.2/all.bar0")" = "$(id -u) 600 172032" ] || fail "no window in $dir.2"
    rmdir "$dir.1" # the squatter's name comes free: the one in use is still found first
    VGPU_LOG_FILE=$tmp/log2 run view-quiet
    grep -q "this user's are in $dir.2 instead" "$tmp/log2" || fail "a later process went elsewhere: $(cat "$tmp/log2")"
    [ ! -e "$dir.1" ] || fail "a later process made $dir.1"
    VGPU_BAR0=$dir.2/all.bar0 run view # the window the default made, with its quota
    rmdir "$dir" # vgpu-UID itself comes free: processes stay where the others are
    VGPU_LOG_FILE=$tmp/log3 run view-quiet
    [ ! -e "$dir" ] || fail "a later process made $dir while $dir.2 holds the user's windows"
    # Every numbered name taken by another user: one no one can guess.
    rm -rf "$dir.2"
    install -d -o $OTHER -m 0777 "$dir"
    for i in $(seq 1 64); do install -d -o $OTHER -m 0777 "$dir.$i"; done
    VGPU_LOG_FILE=$tmp/log4 run view-quiet
    made=$(ls -d "$dir".* | grep -v "\.[0-9]*$")
    [ "$(stat -c '%u %a' "$made")" = "$(id -u) 700" ] || fail "no directory of the user's own: $(ls -ld "$dir".* | tail -3)"
    grep -q "this user's are in $made instead" "$tmp/log4" || fail "the unguessable name was not said: $(cat "$tmp/log4")"
    ;;
refused-bar0-of-another-user)
    # VGPU_BAR0 names a file another user made (a valid window, mode 0666):
    # its owner could rewrite this vGPU's limits.
    need_root "planting another user's files"
    export VGPU_MEMORY_LIMIT=2G
    run view-quiet
    chown $OTHER "$VGPU_BAR0" && chmod 0666 "$VGPU_BAR0"
    cp "$VGPU_BAR0" "$tmp/orig"
    expect_refused "$VGPU_BAR0" "owned by uid $OTHER"
    cmp -s "$VGPU_BAR0" "$tmp/orig" || fail "another user's BAR0 file was modified"
    ;;
refused-unreadable-bar0-of-another-user)
    need_root "planting another user's files"
    export VGPU_MEMORY_LIMIT=2G
    : >"$VGPU_BAR0"
    chown $OTHER "$VGPU_BAR0" && chmod 0000 "$VGPU_BAR0"
    expect_refused "$VGPU_BAR0" "owned by uid $OTHER"
    [ ! -s "$VGPU_BAR0" ] || fail "another user's empty file was written"
    ;;
refused-bar0-symlink)
    export VGPU_MEMORY_LIMIT=2G
    VGPU_BAR0=$tmp/target.bar0 "$client" view-quiet || fail "making the target window"
    ln -s "$tmp/target.bar0" "$VGPU_BAR0"
    cp "$tmp/target.bar0" "$tmp/orig"
    expect_refused "$VGPU_BAR0" "symbolic link"
    cmp -s "$tmp/target.bar0" "$tmp/orig" || fail "the symlink's target was modified"
    ;;
refused-bar0-fifo)
    # A FIFO must neither hang the process nor be taken for a window.
    export VGPU_MEMORY_LIMIT=2G
    mkfifo "$VGPU_BAR0"
    started=$(date +%s)
    expect_refused "$VGPU_BAR0" "not a regular file"
    [ $(($(date +%s) - started)) -lt 10 ] || fail "took $(($(date +%s) - started)) s"
    ;;
refused-bar0-writable-by-others)
    export VGPU_MEMORY_LIMIT=2G
    run view-quiet
    chmod 0666 "$VGPU_BAR0"
    expect_refused "$VGPU_BAR0" "writable by other users" "chmod 600"
    ;;
refused-bar0-oversized)
    export VGPU_MEMORY_LIMIT=2G
    run view-quiet
    truncate -s +4096 "$VGPU_BAR0"
    expect_refused "$VGPU_BAR0" "176128 bytes"
    ;;
refused-bar0-truncated)
    export VGPU_MEMORY_LIMIT=2G
    run view-quiet
    truncate -s 8192 "$VGPU_BAR0"
    cp "$VGPU_BAR0" "$tmp/orig"
    expect_refused "$VGPU_BAR0" "8192 bytes"
    cmp -s "$VGPU_BAR0" "$tmp/orig" || fail "the truncated BAR0 file was modified"
    ;;

no-settings)
    # No vGPU setting at all (the fake is found on LD_LIBRARY_PATH): the
    # GPU's own figures, and no BAR0 file appears under /dev/shm.
    default="/dev/shm/vgpu-$(id -u)-all.bar0"
    existed=no
    [ -e "$default" ] && existed=yes
    ls /dev/shm 2>/dev/null | grep '^vgpu-' | sort >"$tmp/shm.before"
    for v in $(env | sed -n 's/^\(VGPU_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
    # Still none of this machine's own: no mediator, no PCI windows.
    export VGPU_MEDIATOR_SOCKET=none VGPU_SYSFS_ROOT=$tmp/no-sysfs
    "$client" no-settings || fail "quota_client no-settings failed"
    ls /dev/shm 2>/dev/null | grep '^vgpu-' | sort >"$tmp/shm.after"
    [ $existed = no ] && [ -e "$default" ] && fail "$default was created"
    new=$(comm -13 "$tmp/shm.before" "$tmp/shm.after")
    [ -z "$new" ] || fail "files appeared under /dev/shm: $new"
    ;;

*)
    echo "quota.sh: unknown scenario $scenario" >&2
    exit 2
    ;;
esac
pids=
ok
