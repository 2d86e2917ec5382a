#!/usr/bin/env bash
# Remote GPUs on the fake driver: remote.sh SCENARIO BUILD_DIR
#
# An executor (build/tools/vgpu-executor) runs under vgpu on the fake GPU, as
# the meson test environment loads it; a guest runs with VGPU_REMOTE naming
# the executor's socket and nothing of the driver's: no VGPU_REAL_LIBCUDA,
# no fake on its library path, only libvgpu-cuda.so preloaded.
scenario=$1 build=$2
# shellcheck source=test/remote/remote_lib.sh
. "$(dirname "$(realpath "$0")")/remote_lib.sh"
remote_test_dir vgpu-remote
execpid=
at_exit '[ -n "$execpid" ] && kill "$execpid"'

# executor [VAR=VALUE...]: the executor, under vgpu on the fake GPU, with those settings.
executor() {
    env VGPU_BAR0="$tmp/host.bar0" VGPU_REMOTE_IMAGE_CACHE="$tmp/images" "$@" "$vgpu_executor" \
        --listen "$tmp/sock" \
        >"$tmp/executor.out" 2>"$tmp/executor.err" &
    execpid=$!
    for _ in $(seq 1 200); do
        [ -S "$tmp/sock" ] && return
        sleep 0.02
    done
    fail "the executor never listened"
}

# guest ARGS...: remote_client with only vgpu's library and the socket.
guest() {
    env -u VGPU_REAL_LIBCUDA -u VGPU_REAL_NVML -u LD_LIBRARY_PATH -u TEST_FAKE_LIBCUDA \
        LD_PRELOAD="$guest_preload" VGPU_REMOTE="$tmp/sock" "$client" "$@"
}

# mediator VGPU-SECTION-LINES...: vgpu-mediatord on $tmp/sock with those vGPUs.
mediator() {
    [ "$me" = 0 ] && open_to_others
    {
        printf '[mediator]\nsocket = %s\nsocket_mode = 0666\nstate_dir = %s\n' "$tmp/sock" "$tmp/state"
        for line in "$@"; do printf '%s\n' "$line"; done
    } >"$tmp/conf"
    start_mediator
}
# The mediator's guests: an executor never runs as root, so where the tests
# run as root the guests are nobody (the fake GPU's state, the temporary
# directory and the mediator's socket open to them).
if [ "$me" = 0 ]; then
    guest_uid=65534
    as_guest="setpriv --reuid=65534 --regid=65534 --clear-groups"
else
    guest_uid=$me
    as_guest=
fi

# used_of NAME: the bytes vGPU NAME's processes hold, as vgpu-smi says.
used_of() {
    env -u LD_PRELOAD "$vgpu_smi" --socket "$tmp/sock" --json | python3 -c "import json, sys
s = json.load(sys.stdin)
print(sum(d['memory_used'] for v in s['vgpus'] if v['name'] == sys.argv[1] for d in v['devices']))" "$1"
}

# mediated_guest NAME ARGS...: remote_client asking the mediator for an executor of vGPU NAME.
mediated_guest() {
    local name=$1
    shift
    $as_guest env -u VGPU_REAL_LIBCUDA -u VGPU_REAL_NVML -u LD_LIBRARY_PATH -u TEST_FAKE_LIBCUDA \
        LD_PRELOAD="$guest_preload" VGPU_REMOTE=mediator VGPU_MEDIATOR_SOCKET="$tmp/sock" VGPU_NAME="$name" \
        "$client" "$@"
}

case $scenario in
shares-hold-for-remote-guests)
    # Two guests of remote vGPUs of 25% and 75% of the fake GPU, each a
    # loop of 200 us kernels: their executors are arbitrated as any
    # processes, so the guests get their shares of the GPU.
    mediator "[vgpu.a]" "devices = 0" "memory = 4G" "compute = 25" "uids = $guest_uid" "remote = yes" \
             "[vgpu.b]" "devices = 0" "memory = 4G" "compute = 75" "uids = $guest_uid" "remote = yes"
    at=$(( $(date +%s%3N) + 1500 ))
    for v in a b; do
        $as_guest env -u VGPU_REAL_LIBCUDA -u VGPU_REAL_NVML -u LD_LIBRARY_PATH -u TEST_FAKE_LIBCUDA \
            LD_PRELOAD="$guest_preload" VGPU_REMOTE=mediator VGPU_MEDIATOR_SOCKET="$tmp/sock" VGPU_NAME=$v \
            "$build/test/compute/compute_client" matmul 4 --start-at "$at" >"$tmp/$v.out" 2>"$tmp/$v.err" &
        eval "pid_$v=\$!"
    done
    wait "$pid_a" || fail "guest a failed"
    wait "$pid_b" || fail "guest b failed"
    a=$(sed -n 's/^workload .* share=\([^ ]*\).*/\1/p' "$tmp/a.out")
    b=$(sed -n 's/^workload .* share=\([^ ]*\).*/\1/p' "$tmp/b.out")
    echo "guest a had $a of the GPU, guest b $b"
    awk -v a="$a" -v b="$b" 'BEGIN { p = a / (a + b); exit !(p >= 0.18 && p <= 0.32 && a + b >= 0.6) }' ||
        fail "guest a had $a and guest b $b of the GPU: want a 25% part of at least 0.6 together"
    ;;

mediator-serves-a-remote-vgpu)
    # The mediator starts an executor for a guest of a vGPU configured
    # remote = yes, admitted to that vGPU like any process: the guest sees
    # its 1 GiB and is refused past it.  A vGPU without remote = yes is
    # refused, saying why.  The executor ends with its guest.
    # As root, a third vGPU names the user its executors run as (daemon),
    # so that a guest running as root may have one.
    far_uids=$guest_uid
    team=()
    if [ "$me" = 0 ]; then
        far_uids="$guest_uid, 0" # root admitted, and still refused an executor
        team=("[vgpu.team]" "devices = 0" "memory = 1G" "compute = 20" "uids = 0, daemon" "remote = yes"
              "executor_user = daemon")
    fi
    mediator "[vgpu.far]" "devices = 0" "memory = 1G" "compute = 40" "uids = $far_uids" "remote = yes" \
             "[vgpu.near]" "devices = 0" "memory = 1G" "compute = 40" "uids = $guest_uid" "${team[@]}"
    mediated_guest far paths >"$tmp/paths.out" 2>"$tmp/paths.err" || fail "the guest's paths failed"
    grep -q "total memory 1073741824" "$tmp/paths.out" || fail "the guest did not see its vGPU's 1 GiB"
    grep -q "elements wrong after the kernel 0" "$tmp/paths.out" || fail "the kernel did not run"
    grep -q "has a remote GPU of vGPU far" "$tmp/med.err" || fail "the mediator did not say it served the guest"
    grep -q "admitted pid [0-9]* (r:remote_client" "$tmp/med.err" ||
        fail "the executor was not admitted to the vGPU under its guest's name (r:remote_client)"
    mediated_guest far quota 2147483648 >"$tmp/big.out" 2>"$tmp/big.err"
    grep -q "cuMemAlloc_v2: 2$" "$tmp/big.out" || fail "2 GiB past the vGPU's 1 GiB was not refused"
    mediated_guest near quota 1048576 >"$tmp/near.out" 2>"$tmp/near.err"
    grep -q "cuInit: 46" "$tmp/near.out" || fail "a guest of a vGPU not offered remotely was not refused"
    grep -q "sets remote = yes" "$tmp/near.err" || fail "the refusal did not say why"
    if [ "$me" = 0 ]; then
        # A guest running as root has no executor: one would be root on the host.
        env -u VGPU_REAL_LIBCUDA -u VGPU_REAL_NVML -u LD_LIBRARY_PATH LD_PRELOAD="$guest_preload" \
            VGPU_REMOTE=mediator VGPU_MEDIATOR_SOCKET="$tmp/sock" VGPU_NAME=far "$client" quota 1048576 \
            >"$tmp/root.out" 2>"$tmp/root.err"
        grep -q "cuInit: 46" "$tmp/root.out" || fail "a guest running as root was given an executor"
        grep -q "an executor never does" "$tmp/root.err" || fail "the guest was not told why root was refused"
    fi
    if [ "$me" = 0 ]; then
        # A guest running as root of a vGPU whose executors run as daemon.
        env -u VGPU_REAL_LIBCUDA -u VGPU_REAL_NVML -u LD_LIBRARY_PATH -u TEST_FAKE_LIBCUDA LD_PRELOAD="$guest_preload" \
            VGPU_REMOTE=mediator VGPU_MEDIATOR_SOCKET="$tmp/sock" VGPU_NAME=team "$client" hold 1048576 \
            >"$tmp/team.out" 2>"$tmp/team.err" &
        teamer=$!
        wait_for held "$tmp/team.out" 10
        grep -q held "$tmp/team.out" || fail "a root guest of a vGPU with executor_user got no executor"
        pgrep -u daemon -f "vgpu-executor --fd" >/dev/null || fail "the executor of vGPU team does not run as daemon"
        kill -9 "$teamer"
        wait "$teamer" 2>/dev/null
    fi
    # A guest killed with what it holds: its executor ends, and the vGPU has
    # the memory back (the time it took is printed; the bound is loose, for
    # a loaded machine).
    $as_guest env -u VGPU_REAL_LIBCUDA -u VGPU_REAL_NVML -u LD_LIBRARY_PATH -u TEST_FAKE_LIBCUDA \
        LD_PRELOAD="$guest_preload" VGPU_REMOTE=mediator VGPU_MEDIATOR_SOCKET="$tmp/sock" VGPU_NAME=far \
        "$client" hold 536870912 >"$tmp/hold.out" 2>"$tmp/hold.err" &
    holder=$!
    wait_for held "$tmp/hold.out" 10
    grep -q held "$tmp/hold.out" || fail "the holding guest never allocated"
    used=$(used_of far)
    [ "$used" -ge 536870912 ] || fail "the vGPU shows $used bytes used while the guest holds 512 MiB"
    # vgpu-smi lists the holder's executor by its guest's command.
    env -u LD_PRELOAD "$vgpu_smi" --socket "$tmp/sock" --json | python3 -c "import json, sys
s = json.load(sys.stdin)
held = [p for p in s['processes'] if p['vgpu'] == 'far' and p['command'] == 'r:remote_client']
sys.exit(0 if held and sum(held[0]['memory']) >= 536870912 else 1)" ||
        fail "vgpu-smi does not list the guest's executor, holding 512 MiB, as r:remote_client"
    t0=$(date +%s%N)
    kill -9 "$holder"
    for _ in $(seq 1 500); do [ "$(used_of far)" -lt 536870912 ] && break; sleep 0.01; done
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    [ "$(used_of far)" -lt 536870912 ] || fail "the vGPU did not get the killed guest's memory back in 5 s"
    echo "a killed guest's 512 MiB were back in $ms ms"
    # Each executor exits with its guest: none is left once the guests are gone.
    for _ in $(seq 1 250); do
        pgrep -u "$guest_uid" -f "vgpu-executor --fd" >/dev/null || break
        sleep 0.02
    done
    ! pgrep -u "$guest_uid" -f "vgpu-executor --fd" >/dev/null || fail "an executor outlived its guest"
    ;;

executors-count-against-their-guests-caps)
    # A guest that asks for executors (REMOTE) and never says HELLO to them:
    # each executor counts against its guest's user's max_connections_per_uid
    # from its start (4: 4 ready, the rest refused, naming the cap) and its
    # vGPU's max_executors (2 on vGPU two), gives up on its silent guest
    # within 5 s, and then counts no more.  As root, with a cgroup v2
    # hierarchy, the guest runs in a cgroup of its own, and so does each
    # executor: charged where its guest is.
    mediator "max_connections_per_uid = 4" \
             "[vgpu.far]" "devices = 0" "memory = 1G" "compute = 40" "uids = $guest_uid" "remote = yes" \
             "[vgpu.two]" "devices = 0" "memory = 1G" "compute = 40" "uids = $guest_uid" "remote = yes" \
             "max_executors = 2"
    # (the system's Python: the guest's user may not reach the caller's own)
    tenant="$([ -x /usr/bin/python3 ] && echo /usr/bin/python3 || echo python3)"
    tenant="$tenant $(dirname "$(realpath "$0")")/../mediator/mediator_tenant.py"
    cg_mount=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
    cg=
    if [ "$me" = 0 ] && [ -n "$cg_mount" ] && mkdir "$cg_mount/vgpu-remote-test.$$" 2>/dev/null; then
        cg=/vgpu-remote-test.$$
        at_exit 'pkill -9 -u 65534 -f "vgpu-executor --fd"; sleep 0.2; rmdir "$cg_mount$cg"'
    fi
    in_guest_cgroup() {
        if [ -n "$cg" ]; then
            sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg_mount$cg" $as_guest "$@"
        else
            $as_guest "$@"
        fi
    }
    executors_of_guest() { pgrep -u "$guest_uid" -f "vgpu-executor --fd" | wc -l; }
    in_guest_cgroup $tenant "$tmp/sock" remote 12 far "$tmp/go" >"$tmp/far.out" 2>"$tmp/far.err" &
    tenant_pid=$!
    wait_for "refused" "$tmp/far.out" 10
    grep -qx "ready 4" "$tmp/far.out" || fail "the guest's user had other than 4 executors: $(cat "$tmp/far.out")"
    grep -q "uid $guest_uid (.*) has 4 connections to vgpu-mediatord (executors of its guests among them)" \
        "$tmp/far.out" || fail "the refusal did not name the user's cap: $(cat "$tmp/far.out")"
    [ "$(executors_of_guest)" = 4 ] || fail "$(executors_of_guest) executors run for the guest, not 4"
    if [ -n "$cg" ]; then
        for pid in $(pgrep -u "$guest_uid" -f "vgpu-executor --fd"); do
            grep -qx "0::$cg" "/proc/$pid/cgroup" ||
                fail "executor $pid is in $(sed -n 's/^0:://p' "/proc/$pid/cgroup"), not its guest's cgroup $cg"
        done
        grep -q "executor [0-9]* serves it, in cgroup $cg" "$tmp/med.err" || fail "the mediator did not say where"
    fi
    # Silent for 5 s: each executor gives up, and the user's count is free.
    for _ in $(seq 1 400); do [ "$(executors_of_guest)" = 0 ] && break; sleep 0.025; done
    [ "$(executors_of_guest)" = 0 ] || fail "executors of a guest that said no HELLO outlived 10 s"
    grep -q "the guest said no hello within 5 s: closing" "$tmp/med.err" || fail "no executor said why it ended"
    touch "$tmp/go"
    wait "$tenant_pid"
    # A vGPU's max_executors: 2 of vGPU two, the third refused naming it.
    rm -f "$tmp/go"
    in_guest_cgroup $tenant "$tmp/sock" remote 3 two "$tmp/go" >"$tmp/two.out" 2>"$tmp/two.err" &
    tenant_pid=$!
    wait_for "refused" "$tmp/two.out" 10
    grep -qx "ready 2" "$tmp/two.out" || fail "vGPU two had other than 2 executors: $(cat "$tmp/two.out")"
    grep -q "it has 2 executors, its most: .* raises max_executors in \[vgpu.two\]" "$tmp/two.out" ||
        fail "the refusal did not name the vGPU's cap: $(cat "$tmp/two.out")"
    touch "$tmp/go"
    wait "$tenant_pid"
    # And a guest that says its HELLO is served as ever.
    mediated_guest far quota 1048576 >"$tmp/quota.out" 2>"$tmp/quota.err" || true
    grep -q "cuMemAlloc_v2: 0" "$tmp/quota.out" || fail "a guest after them was not served: $(cat "$tmp/quota.err")"
    ;;

page-locked-memory-is-bounded-per-vgpu)
    # A vGPU's pinned = bounds the page-locked memory its executors register
    # of their guests', together, counted by the mediator: with 32 MiB and
    # 8 KiB, a guest holding 1 MiB leaves another no room for a block of 32
    # MiB, whose copies still arrive (through messages), but room for its
    # mapped page; once the first guest is killed, its MiB is the vGPU's
    # again and one block of 32 MiB is shared.
    export VGPU_LOG=debug
    mediator "[vgpu.far]" "devices = 0" "memory = 1G" "compute = 40" "uids = $guest_uid" "remote = yes" \
             "pinned = 33562624"
    mkfifo "$tmp/go"
    $as_guest env -u VGPU_REAL_LIBCUDA -u VGPU_REAL_NVML -u LD_LIBRARY_PATH -u TEST_FAKE_LIBCUDA \
        LD_PRELOAD="$guest_preload" VGPU_REMOTE=mediator VGPU_MEDIATOR_SOCKET="$tmp/sock" VGPU_NAME=far \
        "$client" pinned-kept "$tmp/go" >"$tmp/kept.out" 2>"$tmp/kept.err" &
    keeper=$!
    wait_for held "$tmp/kept.out" 10 || fail "the first guest never held its page-locked MiB"
    mediated_guest far pinned >"$tmp/second.out" 2>"$tmp/second.err" || fail "the second guest failed"
    grep -q "asynchronous copies match" "$tmp/second.out" || fail "the second guest's copies did not match"
    grep -q "would pass its vGPU's pinned = 32 MiB (its guests hold 1 MiB)" "$tmp/med.err" ||
        fail "the second guest's block was not refused for the vGPU's bound"
    ! grep -q "block of 33554432 bytes shared and registered" "$tmp/med.err" || fail "a block passed the bound"
    kill -9 "$keeper"
    wait "$keeper" 2>/dev/null
    for _ in $(seq 1 250); do
        pgrep -u "$guest_uid" -f "vgpu-executor --fd" >/dev/null || break
        sleep 0.02
    done
    mediated_guest far pinned >"$tmp/third.out" 2>"$tmp/third.err" || fail "the third guest failed"
    grep -q "asynchronous copies match" "$tmp/third.out" || fail "the third guest's copies did not match"
    [ "$(grep -c "block of 33554432 bytes shared and registered" "$tmp/med.err")" = 1 ] ||
        fail "the killed guest's MiB did not come back: not one block of 32 MiB shared"
    grep -q "would pass its vGPU's pinned = 32 MiB (its guests hold 32 MiB)" "$tmp/med.err" ||
        fail "the third guest's second block was not refused"
    ;;

ipc-between-guests-matches-a-local-run)
    # Two processes share device memory and an event by IPC handles, as
    # torch.multiprocessing does, and a virtual memory allocation by a
    # POSIX file descriptor, as NCCL does: natively, then as two guests, each
    # through an executor process of its own; the taker sees the giver's
    # bytes and the giver the taker's writes; a process's own handle, a
    # forged one and a handle closed twice are refused alike.
    ipc() { # ipc DIR RUNNER...: the giver and the taker, at once
        local dir=$1; shift
        mkdir -p "$dir"
        "$@" "$build/test/remote/ipc_client" give "$dir" >"$dir/give.out" 2>"$dir/give.err" &
        local giver=$!
        "$@" "$build/test/remote/ipc_client" take "$dir" >"$dir/take.out" 2>"$dir/take.err" ||
            fail "the taker failed: $(tail -1 "$dir/take.err")"
        wait "$giver" || fail "the giver failed: $(tail -1 "$dir/give.err")"
    }
    ipc "$tmp/local" env VGPU_BAR0="$tmp/local.bar0"
    executor
    ipc "$tmp/remote" env -u VGPU_REAL_LIBCUDA -u VGPU_REAL_NVML -u LD_LIBRARY_PATH -u TEST_FAKE_LIBCUDA \
        LD_PRELOAD="$guest_preload" VGPU_REMOTE="$tmp/sock"
    for side in give take; do
        diff "$tmp/local/$side.out" "$tmp/remote/$side.out" >"$tmp/diff.out" ||
            fail "the guests' $side differs from the local run's"
    done
    grep -q "the taker sees the giver's bytes: all" "$tmp/remote/take.out" || fail "the taker did not see the bytes"
    grep -q "its second 0x22 (the taker's write)" "$tmp/remote/give.out" || fail "the giver did not see the write"
    grep -q "the taker sees the giver's shared allocation: 0x33 0x33" "$tmp/remote/take.out" ||
        fail "the taker did not see the allocation shared by a descriptor"
    grep -q "shared allocation's second page holds 0x44" "$tmp/remote/give.out" ||
        fail "the giver did not see the taker's write through the descriptor"
    ;;

paths-match-a-local-run)
    # Every path of the client gives what it gives on the local driver.
    env VGPU_BAR0="$tmp/local.bar0" "$client" paths >"$tmp/local.out" 2>"$tmp/local.err" ||
        fail "the local run failed"
    executor
    guest paths >"$tmp/remote.out" 2>"$tmp/remote.err" || fail "the remote run failed"
    diff "$tmp/local.out" "$tmp/remote.out" >"$tmp/diff.out" || fail "the remote run differs from the local one"
    grep -q "elements wrong after the kernel 0" "$tmp/remote.out" || fail "the kernel did not run remotely"
    grep -q "fakegpu linked 3: kernels.ptx, wrapped" "$tmp/remote.out" || fail "the fatbin wrapper was not linked"
    grep -q "array bytes back from 1024: match" "$tmp/remote.out" || fail "an array's bytes did not come back"
    grep -q "array to device: match" "$tmp/remote.out" || fail "an array's bytes did not reach device memory"
    grep -q "3D box weighs [1-9]" "$tmp/remote.out" || fail "the 3D copies moved nothing"
    grep -q "cuMemcpy3D_v2 of a mipmap level: 801" "$tmp/remote.out" || fail "a mipmap level's copy was not refused"
    grep -q "texture resource type 0, its array the same" "$tmp/remote.out" || fail "a texture's resource changed"
    grep -q "cuTexObjectCreate past the allocation: 1" "$tmp/remote.out" ||
        fail "a texture over more than the allocation was not refused"
    # The guest never loaded a driver: only vgpu.
    guest maps >"$tmp/maps.out" 2>"$tmp/maps.err"
    grep -q libvgpu-cuda "$tmp/maps.out" || fail "vgpu is not in the guest"
    ! grep -q "test/fake/libcuda" "$tmp/maps.out" || fail "the guest loaded the fake driver"
    grep -q "forwarding to the remote CUDA driver" "$tmp/remote.err" || fail "the guest did not say it is remote"
    grep -q "calls go through a shared-memory ring" "$tmp/remote.err" || fail "the guest's calls did not take the ring"
    ;;

conformance-matches-a-local-run)
    # The driver API's conformance client (conformance/): every family a
    # guest carries (the 32-bit forms of CUDA 3.x, streams' attributes,
    # memory operations and captures into a graph, pools, managed memory,
    # batches of copies, names, occupancy, devices' resources, logs,
    # graphs), each call's code and what it read back, give what they give
    # on the local driver.
    conformance=$build/test/remote/conformance_client
    env VGPU_BAR0="$tmp/local.bar0" "$conformance" >"$tmp/local.out" 2>"$tmp/local.err" ||
        fail "the local run failed: $(tail -1 "$tmp/local.err")"
    executor
    env -u VGPU_REAL_LIBCUDA -u VGPU_REAL_NVML -u LD_LIBRARY_PATH -u TEST_FAKE_LIBCUDA \
        LD_PRELOAD="$guest_preload" VGPU_REMOTE="$tmp/sock" "$conformance" >"$tmp/remote.out" 2>"$tmp/remote.err" ||
        fail "the remote run failed: $(tail -1 "$tmp/remote.err")"
    diff "$tmp/local.out" "$tmp/remote.out" >"$tmp/diff.out" ||
        fail "the remote run differs from the local one: $(head -3 "$tmp/diff.out" | tr '\n' ' ')"
    for want in "1D array bytes back: match (sum 6496)" "legacy allocation bytes back: match" \
        "words after the batches: abcd1234 00000000 55667788 11223344 00000007 55aa55aa" \
        "elements wrong after the captured graph 0 (first 2, last 17)" "opportunistic reuse set: 0" \
        "release threshold set: 1048576" "read mostly = 1" "batch device to host: match" \
        "3D batch through the array to the host: match, to the device: match (last 307)" \
        "the retained handle is the mapped one: yes" "add_one's name: add_one" \
        "elements the enumerated kernel filled: 32 of 32" \
        "potential block size with shared memory 512, its least grid 528" "cuDeviceGetLuid: 801" \
        "groups made: 8: 16 16 16 16 16 16 16 16 (4 SMs left, type 1)" \
        'cuModuleGetTexRef: no texture reference named "shadow_map" in the module'; do
        grep -qxF "$want" "$tmp/remote.out" || fail "the guest's run lacks \"$want\""
    done
    grep -q "forwarding to the remote CUDA driver" "$tmp/remote.err" || fail "the guest did not say it is remote"
    ;;

answers-kept-in-the-guest-stay-the-drivers)
    # What a guest answers itself (the driver's version, a context's limits,
    # a function's attributes, whether a stream is capturing, a primary
    # context's state) is what the driver answers, after each call that
    # changes it (a limit set here and by another thread, a context of
    # another thread's own, a capture begun and ended, an attribute set, a
    # device reset): the lines equal a local run's.  The calls that crossed
    # are counted, as vgpu-smi --calls shows them while the guest runs and
    # VGPU_TRACE=summary writes them at its exit: a kept answer crosses
    # once a change at most, launches are sent, never waited for, and
    # pageable copies of more than a MiB are staged through page-locked
    # blocks, their bytes in no message.
    answered=$build/test/remote/answered_client
    n=200
    env VGPU_BAR0="$tmp/local.bar0" "$answered" $n </dev/null >"$tmp/local.out" 2>"$tmp/local.err" ||
        fail "the local run failed: $(tail -1 "$tmp/local.err")"
    executor
    mkfifo "$tmp/go"
    env -u VGPU_REAL_LIBCUDA -u VGPU_REAL_NVML -u LD_LIBRARY_PATH -u TEST_FAKE_LIBCUDA VGPU_TRACE=summary \
        LD_PRELOAD="$guest_preload" VGPU_REMOTE="$tmp/sock" "$answered" $n <"$tmp/go" >"$tmp/remote.out" \
        2>"$tmp/remote.err" &
    guestpid=$!
    exec 7>"$tmp/go"
    for _ in $(seq 1 2500); do
        grep -qx done "$tmp/remote.out" && break
        kill -0 "$guestpid" 2>/dev/null || break
        sleep 0.02
    done
    grep -qx done "$tmp/remote.out" || fail "the guest never finished its calls: $(tail -1 "$tmp/remote.err")"
    env -u LD_PRELOAD "$vgpu_smi" --calls "$guestpid" >"$tmp/smi.out" 2>"$tmp/smi.err" ||
        fail "vgpu-smi --calls $guestpid failed: $(cat "$tmp/smi.err")"
    env -u LD_PRELOAD "$vgpu_smi" --calls "$guestpid" --json >"$tmp/smi.json" 2>&1 ||
        fail "vgpu-smi --calls $guestpid --json failed"
    exec 7>&-
    wait "$guestpid" || fail "the remote run failed: $(tail -1 "$tmp/remote.err")"
    diff "$tmp/local.out" "$tmp/remote.out" >"$tmp/diff.out" ||
        fail "the guest's answers differ from the driver's: $(head -4 "$tmp/diff.out" | tr '\n' ' ')"
    for want in "heap after a set 16 MiB" "other thread: its own context current 1, heap 64 MiB" \
        "heap after the other thread's set 32 MiB" "capturing during 1, the legacy stream 0" "capturing after 0" \
        "dynamic shared memory after a set 4096" "primary context active 1, after a reset 0" \
        "dynamic shared memory after sets of 4096 and one of 8192 8192" "dynamic shared memory after it 8192" \
        "heap after a reset 8 MiB" "pageable copies there and back: match" \
        "asynchronous pageable copies: 0 bytes wrong" "cuMemAlloc: found 1, status 0, the same each time 1" \
        "a pageable copy before the reset: match" "pageable copies on the other device's stream: match" \
        "cuNoSuchCall: found 0, status 1, the same each time 1"; do
        grep -qxF "$want" "$tmp/remote.out" || fail "the run lacks \"$want\""
    done
    # crossed NAME FILE: how many calls of NAME crossed, as the summary (or vgpu-smi) says.
    crossed() {
        awk -v name="$1" '$2 == name && $3 == "crossed" { print $4; found = 1 }
            $1 == name { print $2; found = 1 } END { if (!found) print 0 }' "$2" | head -1
    }
    summary=$tmp/summary.out
    grep '^vgpu-calls\[' "$tmp/remote.err" >"$summary" || fail "VGPU_TRACE=summary wrote no summary"
    grep -q "^vgpu-calls\[$guestpid\] CUDA to .* crossed (waited" "$summary" || fail "the summary has no total line"
    [ "$(crossed cuDeviceGetCount "$summary")" = $n ] ||
        fail "cuDeviceGetCount, which is not kept, crossed $(crossed cuDeviceGetCount "$summary") times, not $n"
    [ "$(crossed cuDriverGetVersion "$summary")" = 1 ] || fail "the driver's version crossed more than once"
    # Asked fresh after each change: the first ask, the set, the other thread's set, the reset.
    [ "$(crossed cuCtxGetLimit "$summary")" -le 5 ] ||
        fail "cuCtxGetLimit crossed $(crossed cuCtxGetLimit "$summary") times for 6 rounds of $n asks"
    # Asked first, and after the refused set (a set that succeeds leaves
    # its value known); the sets of the value it had never cross.
    [ "$(crossed cuFuncGetAttribute "$summary")" = 2 ] ||
        fail "a function's attribute crossed $(crossed cuFuncGetAttribute "$summary") times, not twice"
    [ "$(crossed cuFuncSetAttribute "$summary")" = 3 ] ||
        fail "cuFuncSetAttribute crossed $(crossed cuFuncSetAttribute "$summary") times: the sets of the value the attribute had were not answered in the guest"
    # Twice for the client (a context, and after its reset), and for the staged copies after a context changed.
    [ "$(crossed cuCtxGetId "$summary")" -le 4 ] || fail "a context's id crossed $(crossed cuCtxGetId "$summary") times"
    [ "$(crossed cuDeviceGet "$summary")" = 2 ] || fail "a device by its ordinal (0, 1) crossed more than once"
    [ "$(crossed cuGetProcAddress_v2 "$summary")" = 2 ] ||
        fail "the driver's lookup of two names crossed $(crossed cuGetProcAddress_v2 "$summary") times, not twice"
    # Only while the capture was open (two streams asked, $n times each).
    [ "$(crossed cuStreamIsCapturing "$summary")" = $((2 * n)) ] ||
        fail "cuStreamIsCapturing crossed $(crossed cuStreamIsCapturing "$summary") times, not $((2 * n))"
    # The client's launches, and one that keeps a stream busy.
    grep -Eq "^vgpu-calls\[$guestpid\] cuLaunchKernel +crossed +0 .* sent +$((n + 1)) +full " "$summary" ||
        fail "the launches were not all sent without waiting: $(grep cuLaunchKernel "$summary")"
    # Pageable copies of more than a MiB are staged in pieces of 8 MiB
    # through page-locked blocks, not carried in messages.
    [ "$(crossed cuMemcpyHtoD_v2 "$summary")" = 0 ] && [ "$(crossed cuMemcpyDtoH_v2 "$summary")" = 0 ] ||
        fail "a pageable copy of 37 MiB crossed in messages, not staged"
    # Pieces of 8 MiB: 5 for each copy of 37 MiB to the device, one for each of 2 MiB.
    sent=$(awk '$2 == "cuMemcpyHtoDAsync_v2" { print $(NF - 3) }' "$summary")
    [ "${sent:-0}" -ge 12 ] || fail "the copies to the device did not go in pieces: $(grep cuMemcpyHtoDAsync_v2 "$summary")"
    [ "$(crossed cuEventSynchronize "$summary")" -ge 10 ] || fail "the staged pieces were not waited for by events"
    # A copy on a stream whose block holds a piece still on a busy stream
    # asks that piece's event once, finds it not done and goes in messages,
    # waiting for no other stream's work.
    [ "$(crossed cuEventQuery "$summary")" = 1 ] ||
        fail "a piece on another stream was asked $(crossed cuEventQuery "$summary") times, not once"
    [ "$(crossed cuDeviceGetCount "$tmp/smi.out")" = $n ] ||
        fail "vgpu-smi --calls does not show the guest's $n cuDeviceGetCount: $(head -3 "$tmp/smi.out")"
    python3 -c "import json, sys
d = json.load(open(sys.argv[1]))
c = {x['name']: x for x in d['libraries'][0]['calls']}
assert d['pid'] == int(sys.argv[2]) and c['cuLaunchKernel']['sent'] == int(sys.argv[3]) + 1, d
assert c['cuDeviceGetCount']['crossed'] == int(sys.argv[3]) and c['cuDeviceGetCount']['wait_ns'] > 0, d" \
        "$tmp/smi.json" "$guestpid" $n || fail "vgpu-smi --calls --json is not the guest's record"
    # A process that is no guest keeps none.
    env -u LD_PRELOAD "$vgpu_smi" --calls $$ >/dev/null 2>"$tmp/smi-none.err" &&
        fail "vgpu-smi --calls found a record in a process that is no guest"
    grep -q "keeps no record of remote calls" "$tmp/smi-none.err" || fail "vgpu-smi --calls did not say why"
    ;;

page-locked-memory-is-shared-with-the-executor)
    # Page-locked blocks are memory the guest shares with its executor, which
    # registers it at the same address: copies name them, their bytes never
    # in a message; every byte still arrives, as on the local driver; a
    # kernel writes a mapped block through its device view, its own address;
    # and a forked child's writes to its copy of a block stay its own.
    env VGPU_BAR0="$tmp/local.bar0" "$client" pinned >"$tmp/local.out" 2>"$tmp/local.err" ||
        fail "the local run failed"
    executor VGPU_LOG=debug
    guest pinned >"$tmp/remote.out" 2>"$tmp/remote.err" || fail "the remote run failed"
    diff "$tmp/local.out" "$tmp/remote.out" >"$tmp/diff.out" || fail "the remote run differs from the local one"
    grep -q "asynchronous copies match" "$tmp/remote.out" || fail "the asynchronous copies did not match"
    grep -q "did not reach the parent" "$tmp/remote.out" || fail "a forked child wrote its parent's block"
    grep -q "the mapped block's device view is its address: yes" "$tmp/remote.out" ||
        fail "a mapped block's device view is not its address"
    grep -q "elements of the mapped block wrong after the kernel: 0" "$tmp/remote.out" ||
        fail "a kernel's writes to a mapped block did not reach the guest"
    [ "$(grep -c "page-locked block of 33554432 bytes shared and registered, its device view at its address" \
        "$tmp/executor.err")" = 2 ] || fail "the executor did not share and register both blocks at their addresses"
    ! grep -q "not shared with the executor" "$tmp/remote.err" || fail "the guest kept a block to itself"
    # The copies named the blocks: a cuMemcpyHtoD_v2 of 32 MiB in messages would be two 16 MiB chunks.
    grep -q "cuMemcpyHtoD_v2 of a shared block" "$tmp/executor.err" || fail "no copy named a shared block"
    ;;

threads-call-at-once-through-the-ring)
    # 8 threads of one guest copy, launch and read back at once, each on its
    # own stream and memory, their messages interleaved on the ring: every
    # element right, as on the local driver.
    env VGPU_BAR0="$tmp/local.bar0" "$client" threads >"$tmp/local.out" 2>"$tmp/local.err" ||
        fail "the local run failed"
    executor
    guest threads >"$tmp/remote.out" 2>"$tmp/remote.err" || fail "the remote run failed"
    diff "$tmp/local.out" "$tmp/remote.out" >"$tmp/diff.out" || fail "the remote run differs from the local one"
    [ "$(grep -c ": 0 elements wrong in 100 rounds" "$tmp/remote.out")" = 8 ] || fail "a thread's elements were wrong"
    grep -q "calls go through a shared-memory ring" "$tmp/remote.err" || fail "the guest's calls did not take the ring"
    ;;

threads-have-lanes-of-their-own)
    # The conformance client's threads (conformance/threads.c): contexts of
    # their own at once, one thread's calls going on while another waits in
    # a synchronize, work one thread enqueued seen whole by another, a call
    # from a thread's last destructor; as locally, each thread on a lane of
    # its own (in the concurrency suite: the lanes under ThreadSanitizer).
    conformance=$build/test/remote/conformance_client
    env VGPU_BAR0="$tmp/local.bar0" "$conformance" threads >"$tmp/local.out" 2>"$tmp/local.err" ||
        fail "the local run failed: $(tail -1 "$tmp/local.err")"
    executor
    env -u VGPU_REAL_LIBCUDA -u VGPU_REAL_NVML -u LD_LIBRARY_PATH -u TEST_FAKE_LIBCUDA \
        LD_PRELOAD="$guest_preload" VGPU_REMOTE="$tmp/sock" "$conformance" threads >"$tmp/remote.out" \
        2>"$tmp/remote.err" || fail "the remote run failed: $(tail -1 "$tmp/remote.err")"
    diff "$tmp/local.out" "$tmp/remote.out" >"$tmp/diff.out" ||
        fail "the remote run differs from the local one: $(head -3 "$tmp/diff.out" | tr '\n' ' ')"
    [ "$(grep -c ": yes$" "$tmp/remote.out")" = 3 ] || fail "a thread's check said no"
    grep -q "a lane of its own" "$tmp/remote.err" || fail "the guest's threads took no lanes"
    ;;

shared-memory-forgeries-are-refused)
    # A guest speaking the protocol by hand: a block whose memory could
    # shrink, or is shorter than said, or overlaps one shared already, or
    # runs out of the executor's window, is refused (801, 801, 1, 1); one
    # in the window is at the same address in the executor, its device view
    # there (one outside it elsewhere); copies name shared bytes only within a block
    # and a device allocation (1), not after UNSHARE (1); a call that is no
    # such copy flagged as one closes the connection (-1).  A module image
    # named by a hash misses unless the executor hashed those bytes itself
    # when they were sent whole; a hash on a call that is no load closes.
    # A fatbin wrapper (whose data pointer a driver follows) is refused as a
    # module's image and a link's input, text with a control character as
    # an image (200), and the executor serves on.
    executor
    "$build/test/remote/raw_guest" "$tmp/sock" >"$tmp/raw.out" 2>"$tmp/raw.err" || fail "raw_guest failed"
    for want in "a window offered: yes" "SHARE unsealed: 801" "SHARE longer than its memory: 801" "SHARE: 0" \
        "its device view is elsewhere: yes" "SHARE in the window: 0" "its device view is its address: yes" \
        "SHARE not on a page: 1" "SHARE across the window's end: 1" \
        "SHARE again, overlapping: 1" "cuMemcpyHtoD_v2 shared: 0" "the device holds the shared bytes: yes (0)" \
        "cuMemcpyDtoH_v2 shared: 0" "the shared memory holds the device's bytes: yes" \
        "shared copy of an address not shared: 1" "shared copy past the block's end: 1" \
        "shared copy past the device allocation: 1" "UNSHARE not shared: 1" "UNSHARE: 0" \
        "shared copy after UNSHARE: 1" "cuCtxSynchronize flagged shared: -1" "an image cache offered: yes" \
        "cuModuleLoadData by the hash of an image never sent: miss" "cuModuleLoadData whole: 0" \
        "cuModuleLoadData by its hash: 0" "cuModuleLoadData by the hash of other bytes: miss" \
        "cuModuleLoadData of a fatbin wrapper: 200" "cuLinkComplete of a fatbin wrapper: 200" \
        "cuModuleLoadData of text with a control character: 200" "cuModuleLoadData after them: 0" \
        "cuTexObjectCreate over memory not the guest's: 1" \
        "cuCtxSynchronize flagged by hash: -1" \
        "a lane lost: the waiting lane ends yes, the first connection is shut yes"; do
        grep -qxF "$want" "$tmp/raw.out" || fail "raw_guest: want \"$want\""
    done
    grep -q "could shrink under the executor" "$tmp/executor.err" || fail "the unsealed block was not logged"
    ! grep -q "could not be kept reserved" "$tmp/executor.err" || fail "a refused block tried a mapping"
    # Of the hello's driver settings, only the driver's own with plain values are taken.
    grep -q "the guest's CUDA_DEVICE_ORDER=PCI_BUS_ID" "$tmp/executor.err" || fail "a driver setting was not taken"
    grep -q 'setting "LD_PRELOAD=/tmp/evil.so" is not one it may give: ignored' "$tmp/executor.err" ||
        fail "a setting that is not the driver's was not refused"
    grep -q 'setting "CUDA_VISIBLE_DEVICES=$(id)" is not one it may give: ignored' "$tmp/executor.err" ||
        fail "a setting with a value that is not plain was not refused"
    grep -q "sent as a copy of shared memory, which it is not: closing" "$tmp/executor.err" ||
        fail "the forged flag was not logged"
    grep -q "cuTexObjectCreate with a device pointer that is none of the guest's allocations" "$tmp/executor.err" ||
        fail "the executor did not check a texture's device memory itself"
    ;;

guest-devices-are-chosen-among-the-executors)
    # The executor sees the fake's GPU 1 only (its own CUDA_VISIBLE_DEVICES);
    # a guest's CUDA_VISIBLE_DEVICES chooses among what the executor sees:
    # 0 is that GPU, and 0,1 cannot widen it to a second.
    env VGPU_BAR0="$tmp/local.bar0" CUDA_VISIBLE_DEVICES=1 "$client" paths >"$tmp/local.out" 2>"$tmp/local.err" ||
        fail "the local run failed"
    grep -q "^devices 1$" "$tmp/local.out" || fail "the local run does not see one device"
    executor CUDA_VISIBLE_DEVICES=1
    for choice in 0 0,1; do
        CUDA_VISIBLE_DEVICES=$choice guest paths >"$tmp/remote.out" 2>"$tmp/remote.err" ||
            fail "the remote run with CUDA_VISIBLE_DEVICES=$choice failed"
        diff "$tmp/local.out" "$tmp/remote.out" >"$tmp/diff.out" ||
            fail "the guest's CUDA_VISIBLE_DEVICES=$choice was not taken among the executor's devices"
    done
    grep -q "the guest's CUDA_VISIBLE_DEVICES=0,1, among the executor's own: 1$" "$tmp/executor.err" ||
        fail "the executor did not say what it made of the guest's choice"
    ;;

paths-match-a-local-run-over-the-socket)
    # The same over the socket, the ring turned off (VGPU_REMOTE_TRANSPORT=socket).
    env VGPU_BAR0="$tmp/local.bar0" "$client" paths >"$tmp/local.out" 2>"$tmp/local.err" ||
        fail "the local run failed"
    executor
    VGPU_REMOTE_TRANSPORT=socket guest paths >"$tmp/remote.out" 2>"$tmp/remote.err" || fail "the remote run failed"
    diff "$tmp/local.out" "$tmp/remote.out" >"$tmp/diff.out" || fail "the remote run differs from the local one"
    ! grep -q "shared-memory ring" "$tmp/remote.err" || fail "the guest took the ring"
    ;;

guest-in-a-mount-namespace-with-no-driver)
    # The guest in a mount namespace where the fake driver's directory is an
    # empty tmpfs (and any NVIDIA library directory of the machine too): it
    # could not load a driver if it tried.  Its paths still equal a local run.
    need_private_mounts
    env VGPU_BAR0="$tmp/local.bar0" "$client" paths >"$tmp/local.out" 2>"$tmp/local.err" ||
        fail "the local run failed"
    executor
    fakedir=$(dirname "$(realpath "$build/test/fake/libcuda.so.1")")
    hide="mount -t tmpfs none '$fakedir'"
    for d in /usr/local/nvidia /usr/lib/nvidia; do
        [ -d "$d" ] && hide="$hide && mount -t tmpfs none $d"
    done
    env -u VGPU_REAL_LIBCUDA -u VGPU_REAL_NVML -u LD_LIBRARY_PATH -u TEST_FAKE_LIBCUDA \
        LD_PRELOAD="$guest_preload" VGPU_REMOTE="$tmp/sock" \
        unshare -m --propagation private sh -c "$hide && ! ls '$fakedir'/libcuda* 2>/dev/null && \
            ! ls /usr/lib/x86_64-linux-gnu/libcuda.so* 2>/dev/null && exec '$client' paths" \
        >"$tmp/remote.out" 2>"$tmp/remote.err" || fail "the guest in its own mount namespace failed"
    diff "$tmp/local.out" "$tmp/remote.out" >"$tmp/diff.out" || fail "the remote run differs from the local one"
    ;;

the-cuda-runtime-runs-through-an-executor)
    # The toolkit's CUDA runtime in a guest: it starts through the private
    # tables the guest answers, loads its kernels as a library, and every
    # path of runtime_client checks its own results.
    cudart=${3:-}
    [ -f "$cudart" ] || skip "no libcudart.so.13 (the CUDA toolkit's) at '$cudart'"
    executor
    env -u VGPU_REAL_LIBCUDA -u VGPU_REAL_NVML -u LD_LIBRARY_PATH -u TEST_FAKE_LIBCUDA \
        LD_PRELOAD="$guest_preload" VGPU_REMOTE="$tmp/sock" "$build/test/remote/runtime_client" "$cudart" \
        >"$tmp/runtime.out" 2>"$tmp/runtime.err" || fail "the runtime's paths failed remotely"
    grep -q "all ok" "$tmp/runtime.out" || fail "runtime_client did not finish"
    ! grep -q "refused" "$tmp/executor.err" || fail "the executor refused a call of the runtime's"
    ;;

nvrtc-compiles-are-kept-by-the-guest)
    # NVRTC's compute cache (the private table da9151d3-...) in the guest:
    # an entry stored is read back by the next process with the same bytes;
    # a key that differs in any input misses; an entry changed, cut short,
    # replaced by a link or by a FIFO is not read; CUDA_CACHE_DISABLE=1
    # keeps nothing; a folder others may write, another user's, or a link,
    # is not used; the folder
    # stays under CUDA_CACHE_MAXSIZE, the entries read least recently
    # removed first; with no CUDA_CACHE_PATH the entries go to the user's
    # cache folder.  Then NVRTC itself: its second compile of a program,
    # in another process, is read back, the PTX the same.
    executor
    cc=$tmp/cc/vgpu-nvrtc
    cache() {  # cache COMMAND SOURCE [SIZE] [VAR=VALUE...]: the client as a guest
        local cmd=$1 src=$2 size=${3:-4096}
        shift 3 2>/dev/null || shift $#
        env -u VGPU_REAL_LIBCUDA -u VGPU_REAL_NVML -u LD_LIBRARY_PATH -u TEST_FAKE_LIBCUDA \
            LD_PRELOAD="$guest_preload" VGPU_REMOTE="$tmp/sock" VGPU_LOG=debug CUDA_CACHE_PATH="$tmp/cc" "$@" \
            "$build/test/remote/compile_cache_client" "$cmd" "$src" "$size" 2>>"$tmp/cache.err"
    }
    expect() {  # expect WANT COMMAND...: the command's line is WANT
        local got
        got=$("${@:2}") || fail "'${*:2}' failed: $(tail -1 "$tmp/cache.err")"
        [ "$got" = "$1" ] || fail "'${*:2}' said '$got', not '$1'"
    }
    entry_of() {  # the newest entry
        ls -t "$cc" | head -1
    }
    expect miss cache lookup a
    expect stored cache store a
    [ "$(stat -c %a "$cc")" = 700 ] || fail "the cache's folder is not the user's alone: $(stat -c %a "$cc")"
    a=$(entry_of)
    [ "$(stat -c %a "$cc/$a")" = 600 ] || fail "an entry is not the user's alone: $(stat -c %a "$cc/$a")"
    expect hit cache lookup a
    expect "variants missed" cache variants b 100000
    expect hit cache lookup b 100000
    cp "$cc/$a" "$tmp/a.entry"
    printf '\xff' | dd of="$cc/$a" bs=1 seek=200 conv=notrunc status=none
    expect miss cache lookup a
    head -c 300 "$tmp/a.entry" >"$cc/$a"
    expect miss cache lookup a
    rm "$cc/$a" && ln -s "$tmp/a.entry" "$cc/$a"
    expect miss cache lookup a
    rm "$cc/$a" && mkfifo "$cc/$a"
    expect miss cache lookup a # (opened without waiting for a writer)
    rm "$cc/$a" && cp "$tmp/a.entry" "$cc/$a"
    expect hit cache lookup a
    count=$(ls "$cc" | wc -l)
    expect stored cache store c 4096 CUDA_CACHE_DISABLE=1
    expect miss cache lookup c 4096 CUDA_CACHE_DISABLE=1
    expect miss cache lookup a 4096 CUDA_CACHE_DISABLE=1
    [ "$(ls "$cc" | wc -l)" = "$count" ] || fail "CUDA_CACHE_DISABLE=1 and an entry was stored"
    expect miss cache lookup c
    chmod 777 "$cc"
    expect miss cache lookup a
    grep -q "writable by others: not used" "$tmp/cache.err" || fail "a folder others may write was used unannounced"
    chmod 700 "$cc"
    mv "$cc" "$tmp/cc/real" && ln -s real "$cc"
    expect miss cache lookup a
    grep -q "is a link: not used" "$tmp/cache.err" || fail "a cache folder that is a link was used unannounced"
    rm "$cc" && mv "$tmp/cc/real" "$cc"
    if [ "$me" = 0 ]; then
        chown 65534 "$cc"
        expect miss cache lookup a
        chown 0 "$cc"
    fi
    expect hit cache lookup a
    # 8 KiB entries under a bound of 5 (each removal down to 4): the oldest
    # go, the one read goes last.
    for i in 0 1 2 3; do
        expect stored cache store "d$i" 8192
        sleep 0.05 # the files' times apart, on a filesystem that keeps them to a tick
    done
    expect hit cache lookup d0 8192
    sleep 0.05
    for i in 4 5 6 7; do
        expect stored cache store "d$i" 8192 CUDA_CACHE_MAXSIZE=45000
        sleep 0.05
    done
    total=$(find "$cc" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
    [ "$total" -le 45000 ] || fail "the cache holds $total bytes, over CUDA_CACHE_MAXSIZE=45000"
    for i in 0 4 5 6 7; do expect hit cache lookup "d$i" 8192; done
    for i in 1 2 3; do expect miss cache lookup "d$i" 8192; done
    # With CUDA_CACHE_PATH empty: $XDG_CACHE_HOME/vgpu/nvrtc, else ~/.cache/vgpu/nvrtc.
    expect stored cache store e 4096 CUDA_CACHE_PATH= XDG_CACHE_HOME="$tmp/xdg"
    [ "$(ls "$tmp/xdg/vgpu/nvrtc" | wc -l)" = 1 ] || fail "no entry under \$XDG_CACHE_HOME/vgpu/nvrtc"
    expect stored cache store e 4096 CUDA_CACHE_PATH= XDG_CACHE_HOME= HOME="$tmp/home"
    [ "$(ls "$tmp/home/.cache/vgpu/nvrtc" | wc -l)" = 1 ] || fail "no entry under ~/.cache/vgpu/nvrtc"
    # NVRTC itself, which the toolkit has beside the runtime.
    [ -f "${3:-}" ] || { echo "no CUDA toolkit (no '${3:-}'): NVRTC's own compiles not run"; exit 0; }
    nvrtc=$(ls "$(dirname "$3")"/libnvrtc.so.1[23] 2>/dev/null | tail -1)
    [ -n "$nvrtc" ] || fail "the toolkit beside $3 has no libnvrtc.so.12 or .13"
    for run in 1 2; do
        env -u VGPU_REAL_LIBCUDA -u VGPU_REAL_NVML -u LD_LIBRARY_PATH -u TEST_FAKE_LIBCUDA VGPU_LOG=debug \
            LD_PRELOAD="$guest_preload" VGPU_REMOTE="$tmp/sock" CUDA_CACHE_PATH="$tmp/nv" \
            "$build/test/remote/compile_cache_client" nvrtc "$nvrtc" >"$tmp/nvrtc$run.out" 2>"$tmp/nvrtc$run.err" ||
            fail "NVRTC failed in the guest: $(tail -1 "$tmp/nvrtc$run.err")"
    done
    grep -q "compute cache: miss" "$tmp/nvrtc1.err" && grep -q "compute cache: stored" "$tmp/nvrtc1.err" ||
        fail "NVRTC's first compile was not stored"
    grep -q "compute cache: hit" "$tmp/nvrtc2.err" || fail "NVRTC's second compile was not read back"
    env -u LD_PRELOAD "$build/test/remote/compile_cache_client" nvrtc "$nvrtc" >"$tmp/nvrtc0.out" 2>"$tmp/nvrtc0.err" ||
        fail "NVRTC failed with no driver: $(tail -1 "$tmp/nvrtc0.err")"
    for run in 1 2; do
        cmp -s "$tmp/nvrtc0.out" "$tmp/nvrtc$run.out" || fail "NVRTC's output in the guest differs (run $run)"
    done
    ;;

cublaslt-device-layout-matches-a-local-run)
    # cuBLASLt's private table in a guest: function 4's descriptions of the
    # device are the host driver's bytes, as a local run gets them; function
    # 13 frees them; a function not known refuses (801).  An executor built
    # with a sanitizer cannot measure them (its allocator does not hand
    # freed chunks back at once) and says so: the guest is refused.
    env VGPU_BAR0="$tmp/local.bar0" "$client" layout >"$tmp/local.out" 2>"$tmp/local.err" ||
        fail "the local run failed"
    grep -qx "function 1: 801" "$tmp/local.out" || fail "the fake's unknown function did not refuse"
    executor
    if guest layout >"$tmp/remote.out" 2>"$tmp/remote.err"; then
        diff "$tmp/local.out" "$tmp/remote.out" >"$tmp/diff.out" || fail "the remote layout differs from the local one"
    else
        grep -q "cannot be measured with this allocator" "$tmp/executor.err" ||
            fail "the guest was refused the layout without the executor saying why"
        ldd "$vgpu_executor" | grep -Eq "lib[at]san" ||
            fail "an executor without a sanitizer could not measure the layout"
        grep -qx "layout: 801" "$tmp/remote.out" || fail "the refusal is not CUDA_ERROR_NOT_SUPPORTED"
    fi
    ;;

launch-errors-come-back-at-the-next-synchronize)
    # A launch is sent without waiting for its answer: the driver's refusal
    # (ILLEGAL_ADDRESS, 700, at once on a local driver) comes back from the
    # next synchronizing call, once, and from no call that does not synchronize.
    env VGPU_BAR0="$tmp/local.bar0" "$client" late-error >"$tmp/local.out" 2>"$tmp/local.err"
    grep -q "cuLaunchKernel: 700" "$tmp/local.out" || fail "the local driver did not refuse the launch"
    executor
    guest late-error >"$tmp/remote.out" 2>"$tmp/remote.err"
    for want in "cuLaunchKernel: 0" "cuDeviceGetCount: 0" "cuCtxSynchronize: 700" "cuCtxSynchronize again: 0"; do
        grep -qx "$want" "$tmp/remote.out" || fail "remotely, want \"$want\""
    done
    ;;

nvml-through-an-executor-matches-a-local-run)
    # NVML through an executor under a 1 GiB vGPU: the same devices, names,
    # UUIDs, PCI bus ids and driver version as a local NVML under the same
    # vGPU, its memory the vGPU's; a handle it was never given is refused
    # (NVML_ERROR_INVALID_ARGUMENT, 2).
    nvml_client=$build/test/remote/remote_nvml_client
    env VGPU_BAR0="$tmp/local.bar0" VGPU_MEMORY_LIMIT=1G "$nvml_client" >"$tmp/local.out" 2>"$tmp/local.err" ||
        fail "the local run failed"
    executor VGPU_MEMORY_LIMIT=1G
    env -u VGPU_REAL_LIBCUDA -u VGPU_REAL_NVML -u LD_LIBRARY_PATH -u TEST_FAKE_LIBCUDA \
        LD_PRELOAD="$guest_preload $build/libvgpu-nvml.so" VGPU_REMOTE="$tmp/sock" "$nvml_client" forged \
        >"$tmp/remote.out" 2>"$tmp/remote.err" || fail "the remote run failed"
    grep -v "^forged" "$tmp/remote.out" | diff "$tmp/local.out" - >"$tmp/diff.out" ||
        fail "NVML through the executor differs from a local run"
    grep -q "memory 0 total 1073741824" "$tmp/remote.out" || fail "NVML did not show the vGPU's 1 GiB"
    grep -qx "forged handle: 2" "$tmp/remote.out" || fail "a forged device handle was not refused"
    grep -q "forwarding to the remote NVML library" "$tmp/remote.err" || fail "NVML did not say it is remote"
    ;;

quota-holds-for-a-guest)
    # The executor's vGPU has a quota of 1 GiB: the guest is refused past it.
    executor VGPU_MEMORY_LIMIT=1G
    guest quota 536870912 >"$tmp/small.out" 2>"$tmp/small.err"
    grep -q "cuMemAlloc_v2: 0" "$tmp/small.out" || fail "512 MiB within a 1 GiB quota was refused"
    guest quota 2147483648 >"$tmp/big.out" 2>"$tmp/big.err"
    grep -q "cuMemAlloc_v2: 2$" "$tmp/big.out" || fail "2 GiB past a 1 GiB quota was not refused (out of memory, 2)"
    ;;

forged-handles-are-refused)
    # Handles the guest was never given are refused before the driver sees
    # them (400: CUDA_ERROR_INVALID_HANDLE), and device pointers that are
    # none of its allocations (1: CUDA_ERROR_INVALID_VALUE), a call no guest may
    # make is refused (801: CUDA_ERROR_NOT_SUPPORTED) and a private table the
    # guest does not answer is not found (500), the executor serving on.
    executor
    guest forged >"$tmp/forged.out" 2>"$tmp/forged.err"
    for call in cuStreamSynchronize cuCtxSetCurrent cuLaunchKernel; do
        grep -q "$call forged: 400" "$tmp/forged.out" || fail "$call with a forged handle was not refused"
    done
    grep -q "cuMemsetD32_v2 past the allocation: 1$" "$tmp/forged.out" ||
        fail "a memset running past the guest's allocation was not refused (1)"
    grep -q "refused (and any more such, unsaid): 0x[0-9a-f]*, 4194304 bytes" "$tmp/executor.err" ||
        fail "the executor did not refuse the memset past the allocation itself, by its length"
    for call in cuMemsetD32_v2 cuMemcpyHtoD_v2 cuMemcpyDtoH_v2 cuMemcpy2D_v2; do
        grep -q "$call forged pointer: 1$" "$tmp/forged.out" ||
            fail "$call with a pointer that is none of the guest's allocations was not refused (1)"
    done
    grep -q "cuMemsetD32_v2 with a device pointer that is none of the guest's allocations: refused" \
        "$tmp/executor.err" || fail "the executor did not refuse the forged pointer itself"
    grep -q "cuMemcpyDtoHAsync_v2 captured: 900" "$tmp/forged.out" ||
        fail "a copy to the guest on a stream being captured was not refused (900)"
    grep -q "cuCtxSynchronize after the captured copies: 900" "$tmp/forged.out" ||
        fail "a copy from the guest on a stream being captured was not refused (900, at the next synchronize)"
    grep -q "on a stream being captured: refused" "$tmp/executor.err" ||
        fail "the executor did not refuse the captured copy itself"
    grep -q "cuModuleLoadDataEx with symbols: 801" "$tmp/forged.out" ||
        fail "a JIT option passing the guest's pointers was not refused (801)"
    grep -q "cuIpcGetMemHandle forged pointer: 1" "$tmp/forged.out" ||
        fail "an IPC handle of memory not the guest's was not refused (1)"
    grep -q "cuCheckpointProcessLock: 801" "$tmp/forged.out" || fail "cuCheckpointProcessLock was not refused"
    grep -q "cuCheckpointProcessLock is not carried: a checkpoint acts on host processes" "$tmp/forged.err" ||
        fail "the refusal was not logged with its reason"
    grep -q "cuGetExportTable unknown: 500" "$tmp/forged.out" || fail "an unknown private table was found (want 500)"
    grep -q "no private table 00000000-" "$tmp/forged.err" || fail "the unknown private table was not logged"
    guest paths >"$tmp/after.out" 2>"$tmp/after.err" || fail "the executor did not serve on after the forgery"
    ;;

module-images-cross-once)
    # Images of 64 KiB or more cross once: a guest names an image by its
    # SHA-256, and sends it whole only when the executor's cache has not
    # got it, which it then stores under the hash it computed itself.  A
    # first guest sends its 256 KiB image once and names it twice more; a
    # second sends it never.  Without a cache, every load sends it whole;
    # a cache directory others may write is refused, said.
    executor VGPU_LOG=debug
    guest images >"$tmp/first.out" 2>"$tmp/first.err" || fail "the first guest failed"
    guest images >"$tmp/second.out" 2>"$tmp/second.err" || fail "the second guest failed"
    whole=$(grep -c "of an image of 262144 bytes$" "$tmp/executor.err")
    cached=$(grep -c "of an image of 262144 bytes from the cache" "$tmp/executor.err")
    [ "$whole" = 1 ] && [ "$cached" = 5 ] ||
        fail "the image crossed whole $whole times and from the cache $cached times: want 1 and 5"
    want=$(python3 -c "import hashlib; print(hashlib.sha256(b'fakegpu ' + b'x' * (256 * 1024 - 9) + b'\0').hexdigest())")
    [ -f "$tmp/images/$want" ] || fail "the cache holds no file named by the image's SHA-256: $(ls "$tmp/images")"
    [ "$(stat -c %a "$tmp/images")" = 700 ] || fail "the cache's directory is not the executor's alone"
    kill "$execpid"
    wait "$execpid" 2>/dev/null
    rm -f "$tmp/sock"
    executor VGPU_LOG=debug VGPU_REMOTE_IMAGE_CACHE=off
    guest images >"$tmp/off.out" 2>"$tmp/off.err" || fail "the guest failed with no cache"
    [ "$(grep -c "of an image of 262144 bytes$" "$tmp/executor.err")" = 3 ] ||
        fail "without a cache, the image did not cross whole at each load"
    diff "$tmp/first.out" "$tmp/off.out" >"$tmp/diff.out" || fail "the guest saw a cached image differently"
    kill "$execpid"
    wait "$execpid" 2>/dev/null
    rm -f "$tmp/sock"
    mkdir -m 777 "$tmp/open"
    executor VGPU_LOG=debug VGPU_REMOTE_IMAGE_CACHE="$tmp/open"
    guest images >"$tmp/open.out" 2>"$tmp/open.err" || fail "the guest failed with a refused cache"
    grep -q "is not a directory of this user's alone" "$tmp/executor.err" || fail "a cache others may write was not refused"
    [ -z "$(ls "$tmp/open")" ] || fail "the executor stored images where others may write"
    ;;

executor-gone-gives-errors)
    # The executor killed: the guest's next call fails cleanly, with no hang.
    executor
    guest quota 1048576 >"$tmp/first.out" 2>&1 || fail "the first guest failed"
    kill -9 "$execpid"
    wait "$execpid" 2>/dev/null
    execpid=
    timeout 20 env -u VGPU_REAL_LIBCUDA -u VGPU_REAL_NVML -u LD_LIBRARY_PATH LD_PRELOAD="$guest_preload" \
        VGPU_REMOTE="$tmp/sock" "$client" quota 1048576 >"$tmp/gone.out" 2>"$tmp/gone.err"
    [ $? -ne 124 ] || fail "the guest hung"
    grep -q "cannot connect to the executor" "$tmp/gone.err" || fail "the guest did not say why"
    ;;

*)
    echo "unknown scenario $scenario" >&2
    exit 2
    ;;
esac
ok
