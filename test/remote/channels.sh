#!/usr/bin/env bash
# Remote GPUs over channels (docs/guide/vm.md, "A remote vGPU in a VM") on the
# fake driver: channels.sh SCENARIO BUILD_DIR
#
# vgpu-executor --bar serves a file as a VM's ivshmem BAR; a fake sysfs
# tree has an unrelated ivshmem device and one whose resource2 is that file
# (a hard link: the same file); the guest runs with VGPU_REMOTE=pci and
# nothing of the driver's, as remote.sh's guests do.
scenario=$1 build=$2
# shellcheck source=test/remote/remote_lib.sh
. "$(dirname "$(realpath "$0")")/remote_lib.sh"
# On tmpfs: the executor registers the file's pages with the driver, which
# pins no page of a disk's file (docs/guide/vm.md).
remote_test_dir vgpu-channels /dev/shm
suppid=
at_exit '[ -n "$suppid" ] && kill "$suppid"'
unset VGPU_SYSFS_ROOT

# The fake PCI bus: 00:02.0 an ivshmem device of someone else's (a BAR of
# zeros), 00:03.0 the vGPU's, whose BAR is the supervisor's file.
truncate -s 16M "$tmp/vm.bar"
truncate -s 16M "$tmp/other.bar"
for d in 0000:00:02.0 0000:00:03.0; do
    mkdir -p "$tmp/sys/bus/pci/devices/$d"
    echo 0x1af4 >"$tmp/sys/bus/pci/devices/$d/vendor"
    echo 0x1110 >"$tmp/sys/bus/pci/devices/$d/device"
done
ln "$tmp/other.bar" "$tmp/sys/bus/pci/devices/0000:00:02.0/resource2"
ln "$tmp/vm.bar" "$tmp/sys/bus/pci/devices/0000:00:03.0/resource2"

# supervisor ARGS...: vgpu-executor --bar on the file, under vgpu on the fake GPU.
supervisor() {
    env VGPU_BAR0="$tmp/host.bar0" VGPU_NAME=vm1 VGPU_REMOTE_IMAGE_CACHE="$tmp/images" \
        ${SUPERVISOR_LOG:+VGPU_LOG=$SUPERVISOR_LOG} \
        "$vgpu_executor" --bar "${bar_file:-$tmp/vm.bar}" "$@" \
        >"$tmp/supervisor.out" 2>"$tmp/supervisor.err" &
    suppid=$!
    for _ in $(seq 1 250); do
        grep -q "serving" "$tmp/supervisor.err" && return
        sleep 0.02
    done
    fail "the supervisor never served"
}

# guest ARGS...: remote_client with only vgpu's library, its vGPU on the PCI bus.
guest() {
    env -u VGPU_REAL_LIBCUDA -u VGPU_REAL_NVML -u LD_LIBRARY_PATH -u TEST_FAKE_LIBCUDA -u VGPU_NAME \
        LD_PRELOAD="$guest_preload" VGPU_REMOTE=pci VGPU_SYSFS_ROOT="$tmp/sys" "$client" "$@"
}

# states: each channel's state, as the file says (0 free, 1 claimed, 2 serving, ...).
states() {
    python3 - "$tmp/vm.bar" <<'PY'
import struct, sys
b = open(sys.argv[1], 'rb').read()
count, size = struct.unpack_from('<IQ', b, 12)
print(' '.join(str(struct.unpack_from('<Q', b, 4096 + i * size)[0] & 0xff) for i in range(count)))
PY
}

# claimer I: the pid that claimed channel I, as the file says.
claimer() {
    python3 - "$tmp/vm.bar" "$1" <<'PY'
import struct, sys
b = open(sys.argv[1], 'rb').read()
size = struct.unpack_from('<Q', b, 16)[0]
print(struct.unpack_from('<Q', b, 4096 + int(sys.argv[2]) * size)[0] >> 8)
PY
}

# wait_states WANT SECONDS: until the channels' states are WANT.
wait_states() {
    for _ in $(seq 1 $(($2 * 50))); do
        [ "$(states)" = "$1" ] && return 0
        sleep 0.02
    done
    fail "channels are $(states), not $1, after $2 s"
}

# executors: the supervisor's executor processes.
executors() {
    pgrep -P "$suppid" | wc -l
}

case $scenario in
paths-match-a-local-run)
    # Every path of the client gives what it gives on the local driver,
    # through a channel of the PCI BAR; the channel is free again after.
    env VGPU_BAR0="$tmp/local.bar0" "$client" paths >"$tmp/local.out" 2>"$tmp/local.err" ||
        fail "the local run failed"
    supervisor --channels 4
    guest paths >"$tmp/remote.out" 2>"$tmp/remote.err" || fail "the remote run failed"
    diff "$tmp/local.out" "$tmp/remote.out" >"$tmp/diff.out" || fail "the remote run differs from the local one"
    grep -q "elements wrong after the kernel 0" "$tmp/remote.out" || fail "the kernel did not run remotely"
    grep -q 'vGPU "vm1" is PCI device 0000:00:03.0' "$tmp/remote.err" || fail "the guest did not find its vGPU's device"
    grep -q "channel 0 of vGPU" "$tmp/remote.err" || fail "the guest did not take a channel"
    wait_states "0 0 0 0" 5
    [ "$(executors)" = 0 ] || fail "an executor outlived its guest"
    guest maps >"$tmp/maps.out" 2>"$tmp/maps.err"
    ! grep -q "test/fake/libcuda" "$tmp/maps.out" || fail "the guest loaded the fake driver"
    ;;

conformance-matches-a-local-run)
    # The driver API's conformance client (remote.sh's scenario of the same)
    # through a channel of the PCI BAR: what it prints is the local run's.
    # Not its threads: a channel is one connection, its threads' calls one
    # at a time (docs/design/remote.md, "Lanes").
    conformance=$build/test/remote/conformance_client
    families=(legacy streams memory queries graphs)
    env VGPU_BAR0="$tmp/local.bar0" "$conformance" "${families[@]}" >"$tmp/local.out" 2>"$tmp/local.err" ||
        fail "the local run failed: $(tail -1 "$tmp/local.err")"
    supervisor --channels 4
    env -u VGPU_REAL_LIBCUDA -u VGPU_REAL_NVML -u LD_LIBRARY_PATH -u TEST_FAKE_LIBCUDA -u VGPU_NAME \
        LD_PRELOAD="$guest_preload" VGPU_REMOTE=pci VGPU_SYSFS_ROOT="$tmp/sys" "$conformance" "${families[@]}" \
        >"$tmp/remote.out" 2>"$tmp/remote.err" || fail "the remote run failed: $(tail -1 "$tmp/remote.err")"
    diff "$tmp/local.out" "$tmp/remote.out" >"$tmp/diff.out" ||
        fail "the remote run differs from the local one: $(head -3 "$tmp/diff.out" | tr '\n' ' ')"
    grep -q "channel 0 of vGPU" "$tmp/remote.err" || fail "the guest did not take a channel"
    wait_states "0 0 0 0" 5
    ;;

page-locked-memory-lies-in-the-bulk)
    # A channel's bulk, past its ring, is memory the guest and the executor
    # both map, at the same address: the guest's page-locked blocks lie
    # there, registered by the executor, so that copies name them and carry
    # no bytes, and a kernel writes a mapped block through its own address,
    # as over the host's shared memory (remote.sh's scenario of the same).
    truncate -s 256M "$tmp/vm.bar"
    env VGPU_BAR0="$tmp/local.bar0" "$client" pinned >"$tmp/local.out" 2>"$tmp/local.err" ||
        fail "the local run failed"
    SUPERVISOR_LOG=debug supervisor --channels 2
    guest pinned >"$tmp/remote.out" 2>"$tmp/remote.err" || fail "the remote run failed"
    diff "$tmp/local.out" "$tmp/remote.out" >"$tmp/diff.out" || fail "the remote run differs from the local one"
    grep -q "page-locked memory comes from the channel's" "$tmp/remote.err" || fail "the guest did not map its bulk"
    grep -q "the mapped block's device view is its address: yes" "$tmp/remote.out" ||
        fail "a mapped block's device view is not its address"
    grep -q "elements of the mapped block wrong after the kernel: 0" "$tmp/remote.out" ||
        fail "a kernel's writes to a mapped block did not reach the guest"
    grep -q "did not reach the parent" "$tmp/remote.out" || fail "a forked child wrote its parent's block"
    [ "$(grep -c "page-locked block of 33554432 bytes shared and registered, its device view at its address" \
        "$tmp/supervisor.err")" = 2 ] || fail "the executor did not register both blocks at their addresses"
    grep -q "cuMemcpyHtoD_v2 of a shared block" "$tmp/supervisor.err" || fail "no copy named a shared block"
    ! grep -q "not shared with the executor" "$tmp/remote.err" || fail "the guest kept a block to itself"
    ;;

lost-channel-keeps-its-page-locked-memory-private)
    # A guest whose executor is killed lets its channel go at its next call;
    # its page-locked memory, which lay in the channel's bulk, becomes its
    # own private memory first: the next process on the channel writes
    # its own blocks at the same addresses, and the first one's bytes stay.
    truncate -s 256M "$tmp/vm.bar"
    supervisor --channels 1
    mkfifo "$tmp/go"
    (guest pinned-kept "$tmp/go" >"$tmp/kept.out" 2>"$tmp/kept.err") &
    g=$!
    wait_for held "$tmp/kept.out"
    grep -q held "$tmp/kept.out" || fail "the first guest never held its page-locked memory"
    grep -q "page-locked memory comes from the channel's" "$tmp/kept.err" || fail "the first guest had no bulk"
    kill -9 "$(pgrep -P "$suppid")"
    echo go >"$tmp/go"
    wait_for "cuMemAlloc_v2" "$tmp/kept.out"
    grep -q "cuMemAlloc_v2: 46" "$tmp/kept.out" || fail "the first guest's call after its executor was killed did not fail"
    wait_states "0" 5
    guest pinned >"$tmp/next.out" 2>"$tmp/next.err" || fail "the next guest failed"
    grep -q "page-locked memory comes from the channel's" "$tmp/next.err" || fail "the next guest had no bulk"
    echo go >"$tmp/go"
    wait "$g"
    grep -q "its page-locked bytes kept: yes" "$tmp/kept.out" ||
        fail "the next process on the channel wrote the first one's page-locked memory"
    ;;

hidden-processes-are-not-taken-for-dead)
    # A guest whose /proc hides other users' processes (hidepid=2, systemd's
    # ProtectProc=) cannot read a claimer's start time: it must not take
    # that claimer for dead and abandon its channel.
    need_root "guests of two users"
    chmod 755 "$tmp" && chmod 666 "$tmp/vm.bar"
    supervisor --channels 2
    setpriv --reuid=daemon --regid=daemon --clear-groups env -u VGPU_REAL_LIBCUDA -u VGPU_REAL_NVML -u LD_LIBRARY_PATH \
        -u TEST_FAKE_LIBCUDA -u VGPU_NAME LD_PRELOAD="$guest_preload" VGPU_REMOTE=pci VGPU_SYSFS_ROOT="$tmp/sys" \
        "$client" hold 1048576 >"$tmp/held.out" 2>"$tmp/held.err" &
    wait_for held "$tmp/held.out"
    grep -q held "$tmp/held.out" || fail "the first guest never held its memory"
    unshare -m sh -c 'mount -t proc -o hidepid=2 proc /proc && exec "$@"' hidden \
        setpriv --reuid=nobody --regid=nogroup --clear-groups env -u VGPU_REAL_LIBCUDA -u VGPU_REAL_NVML \
        -u LD_LIBRARY_PATH -u TEST_FAKE_LIBCUDA -u VGPU_NAME LD_PRELOAD="$guest_preload" VGPU_REMOTE=pci \
        VGPU_SYSFS_ROOT="$tmp/sys" "$client" quota 1048576 >"$tmp/hidden.out" 2>"$tmp/hidden.err" ||
        { grep -q "cuInit" "$tmp/hidden.out" || skip "no procfs with hidepid here"; }
    grep -q "cuMemAlloc_v2: 0" "$tmp/hidden.out" || fail "the second guest was not served"
    ! grep -q "is gone" "$tmp/hidden.err" || fail "the second guest took the hidden first one for dead"
    [ "$(states)" = "2 0" ] || fail "channels are $(states): the first guest lost its channel"
    kill -9 "$(claimer 0)"
    ;;

file-on-a-disk-shares-no-page-locked-memory)
    # A file on a disk's file system: the driver could not pin its pages, so
    # the supervisor says so and its executors offer no bulk; the guest's
    # page-locked memory stays its own, and its paths are still a local run's.
    disk=$build/test/remote
    [ "$(stat -f -c %T "$disk")" != tmpfs ] || skip "the build is on tmpfs"
    env VGPU_BAR0="$tmp/local.bar0" "$client" paths >"$tmp/local.out" 2>"$tmp/local.err" ||
        fail "the local run failed"
    rm "$tmp/sys/bus/pci/devices/0000:00:03.0/resource2" "$tmp/vm.bar"
    bar=$(mktemp "$disk/vm.bar.XXXXXX")
    truncate -s 16M "$bar"
    ln -s "$bar" "$tmp/sys/bus/pci/devices/0000:00:03.0/resource2"
    bar_file=$bar supervisor --channels 4
    guest paths >"$tmp/remote.out" 2>"$tmp/remote.err"
    rc=$?
    rm -f "$bar"
    [ $rc = 0 ] || fail "the remote run failed"
    diff "$tmp/local.out" "$tmp/remote.out" >"$tmp/diff.out" || fail "the remote run differs from the local one"
    grep -q "is not on tmpfs" "$tmp/supervisor.err" || fail "the supervisor did not say why"
    grep -q "page-locked memory is not shared with the executor" "$tmp/remote.err" ||
        fail "the guest did not say its page-locked memory stays its own"
    ;;

guest-killed-is-reaped)
    # A guest killed with kill -9 holds its channel until another guest
    # process finds it dead (at once) or its heartbeat stands still for
    # the supervisor's timeout (here 2 s): either way its executor ends.
    supervisor --channels 2 --timeout 2
    guest hold 268435456 >"$tmp/held.out" 2>"$tmp/held.err" &
    held=$!
    wait_for held "$tmp/held.out"
    grep -q held "$tmp/held.out" || fail "the guest never held its memory"
    [ "$(states)" = "2 0" ] || fail "channels are $(states), want 2 0 while the guest holds"
    sleep 2.5 # its heartbeat keeps it past the timeout
    [ "$(states)" = "2 0" ] || fail "a live guest lost its channel"
    pid=$(claimer 0)
    kill -9 "$pid" || fail "channel 0's claimer $pid is not the guest"
    wait "$held" 2>/dev/null
    guest quota 1048576 >"$tmp/next.out" 2>"$tmp/next.err" || fail "the next guest failed"
    grep -q "channel 0's process $pid is gone" "$tmp/next.err" || fail "the next guest did not find the dead one"
    wait_states "0 0" 5
    [ "$(executors)" = 0 ] || fail "the dead guest's executor lives on"
    # No other guest: the heartbeat alone.
    guest hold 268435456 >"$tmp/held2.out" 2>"$tmp/held2.err" &
    held=$!
    wait_for held "$tmp/held2.out"
    kill -9 "$(claimer 0)"
    wait "$held" 2>/dev/null
    [ "$(states)" = "2 0" ] || fail "channels are $(states) just after the kill"
    wait_states "0 0" 10
    [ "$(executors)" = 0 ] || fail "the dead guest's executor lives on after its timeout"
    ;;

executor-gone-gives-errors)
    # The executor of a guest's channel killed: the guest's next call fails
    # at once, saying why, and the channel comes back for others.
    supervisor --channels 2
    mkfifo "$tmp/go"
    (guest two-calls "$tmp/go" >"$tmp/gone.out" 2>"$tmp/gone.err") &
    g=$!
    for _ in $(seq 1 250); do [ "$(states)" = "2 0" ] && break; sleep 0.02; done
    kill -9 "$(pgrep -P "$suppid")"
    wait_states "5 0" 5
    echo go >"$tmp/go"
    timeout 20 tail --pid="$g" -f /dev/null
    wait "$g"
    grep -q "went away" "$tmp/gone.err" || fail "the guest did not say its executor went away"
    grep -q "second: 46" "$tmp/gone.out" || fail "the guest's call after the executor was killed did not fail (46)"
    wait_states "0 0" 5
    guest quota 1048576 >"$tmp/after.out" 2>"$tmp/after.err" || fail "no guest was served after"
    ;;

all-channels-in-use)
    # One channel, held: the next guest is refused at once, saying why.
    supervisor --channels 1
    guest hold 1048576 >"$tmp/held.out" 2>"$tmp/held.err" &
    held=$!
    wait_for held "$tmp/held.out"
    timeout 20 env -u VGPU_REAL_LIBCUDA -u LD_LIBRARY_PATH LD_PRELOAD="$guest_preload" VGPU_REMOTE=pci \
        VGPU_SYSFS_ROOT="$tmp/sys" "$client" quota 1048576 >"$tmp/refused.out" 2>"$tmp/refused.err"
    [ $? -ne 124 ] || fail "the second guest hung"
    grep -q 'all 1 channels of vGPU "vm1" are in use' "$tmp/refused.err" || fail "the second guest was not told why"
    kill -9 "$(claimer 0)"
    ;;

mediator-serves-a-vms-channels)
    # A remote vGPU with vm_channels = 2 (vm_pinned = 4M): the mediator makes
    # its file, of an ivshmem BAR's size, and starts its supervisor as the executor_user;
    # the VM's guest (the fake sysfs's BAR is the file) is admitted to the
    # vGPU through its executor, sees its 1 GiB and is refused past it.  A
    # restarted mediator leaves the running supervisor serving; a reload
    # without vm_channels removes the file, and the supervisor ends.
    user=$(id -un)
    if [ "$me" = 0 ]; then
        user=daemon
        open_to_others
    fi
    conf() {
        printf '[mediator]\nsocket = %s\nsocket_mode = 0666\nstate_dir = %s\n' "$tmp/sock" "$tmp/state"
        printf '[vgpu.vm1]\ndevices = 0\nmemory = 1G\nuids = %s\nremote = yes\nexecutor_user = %s\n' "$user" "$user"
        [ "$1" = 0 ] || printf 'vm_channels = %s\nvm_pinned = 4M\n' "$1"
    }
    conf 2 >"$tmp/conf"
    start_mediator
    # 2 channels of 4 MiB streams each way and 4 MiB of page-locked memory: 32 MiB.
    [ "$(stat -c %s "$tmp/state/vm1.channels")" = 33554432 ] || fail "the channels file is not 32 MiB for 2 channels"
    rm "$tmp/sys/bus/pci/devices/0000:00:03.0/resource2"
    ln "$tmp/state/vm1.channels" "$tmp/sys/bus/pci/devices/0000:00:03.0/resource2"
    sup=
    for _ in $(seq 1 250); do
        sup=$(pgrep -u "$user" -f "vgpu-executor --bar-fd 3 --channels 2")
        [ -n "$sup" ] && break
        sleep 0.02
    done
    [ -n "$sup" ] || fail "no supervisor runs as $user"
    guest paths >"$tmp/paths.out" 2>"$tmp/paths.err" || fail "the guest's paths failed"
    grep -q "total memory 1073741824" "$tmp/paths.out" || fail "the guest did not see its vGPU's 1 GiB"
    grep -q "admitted pid [0-9]* (r:remote_client" "$tmp/med.err" ||
        fail "the guest's executor was not admitted to the vGPU under its guest's name"
    guest quota 2147483648 >"$tmp/big.out" 2>"$tmp/big.err"
    grep -q "cuMemAlloc_v2: 2$" "$tmp/big.out" || fail "2 GiB past the vGPU's 1 GiB was not refused"
    # A restart: the supervisor of before serves on, the new one steps aside.
    kill "$medpid"
    wait "$medpid" 2>/dev/null
    start_mediator
    sleep 0.5
    [ "$(pgrep -u "$user" -f "vgpu-executor --bar-fd 3 --channels 2")" = "$sup" ] ||
        fail "the supervisor changed over a mediator restart"
    guest quota 1048576 >"$tmp/again.out" 2>"$tmp/again.err" || fail "no guest was served after the restart"
    # A reload without vm_channels: the file goes, and its supervisor (the
    # fake sysfs's link let go first: QEMU's mapping is no link).
    rm "$tmp/sys/bus/pci/devices/0000:00:03.0/resource2"
    conf 0 >"$tmp/conf"
    kill -HUP "$medpid"
    for _ in $(seq 1 250); do
        [ ! -e "$tmp/state/vm1.channels" ] && ! kill -0 "$sup" 2>/dev/null && break
        sleep 0.02
    done
    [ ! -e "$tmp/state/vm1.channels" ] || fail "the reload left the channels file"
    ! kill -0 "$sup" 2>/dev/null || fail "the supervisor outlived its file"
    ;;

forged-states-are-survived)
    # A guest that writes nonsense into the channels' control words: the
    # supervisor starts no executor for it, frees what it cannot read once
    # no heartbeat moves, and goes on serving.
    supervisor --channels 3 --timeout 1
    python3 - "$tmp/vm.bar" <<'PY'
import mmap, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDWR)
m = mmap.mmap(fd, 0)
size = struct.unpack_from('<Q', m, 16)[0]
struct.pack_into('<Q', m, 4096 + 0 * size, 0xdeadbeef07)   # a state that is none
struct.pack_into('<Q', m, 4096 + 1 * size, 0x1234502)      # serving, with no executor
struct.pack_into('<Q', m, 4096 + 2 * size, 0x100)          # a pid with no state
PY
    wait_states "0 0 0" 5
    [ "$(executors)" = 0 ] || fail "the supervisor started an executor for a forged state"
    guest paths >"$tmp/after.out" 2>"$tmp/after.err" || fail "no guest was served after the forgery"
    kill -0 "$suppid" || fail "the supervisor died"
    ;;

*)
    echo "unknown scenario $scenario" >&2
    exit 2
    ;;
esac
ok
