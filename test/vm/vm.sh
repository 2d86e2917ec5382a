#!/usr/bin/env bash
# A real VM with no GPU (QEMU, ivshmem; boot-guest.sh): vm.sh SCENARIO BUILD_DIR
#
# Skips (77) without QEMU, a kernel in /boot or busybox-static.  QEMU's TCG
# boots the guest in seconds without nested KVM (the CI machine's kind).
scenario=$1 build=$2
# shellcheck source=test/common/lib.sh
. "$(dirname "$(realpath "$0")")/../common/lib.sh"
use_build "$build"
client=$build/test/remote/remote_client
for c in qemu-system-x86_64 busybox; do
    need_command $c "apt-get install qemu-system-x86 linux-image-amd64 busybox-static"
done
ls /boot/vmlinuz-* >/dev/null 2>&1 || skip "no kernel in /boot (apt-get install linux-image-amd64)"
# On tmpfs, as the BAR's file is to be (docs/guide/vm.md).
temp_dir vgpu-vm /dev/shm
chmod 755 "$tmp"
suppid=
at_exit '[ -n "$suppid" ] && kill "$suppid"'
fail_logs="$tmp/*.out $tmp/*.err $tmp/*.log"
fake_gpu shared
unset VGPU_SYSFS_ROOT

case $scenario in
remote-guest-runs-over-its-pci-bar)
    # The host's vgpu-executor --bar serves a file; the VM has it as its
    # ivshmem device's BAR and no GPU, driver or socket.  In the guest, vgpu
    # finds the device in /sys/bus/pci/devices: two processes at once print
    # what a local run prints; page-locked memory lies in the BAR, which
    # the executor registers (a kernel writes a mapped block through its
    # own address); a /sys made read-only, as a systemd sandbox
    # makes it, is used through the BAR made writable alone
    # (ReadWritePaths=), and refused with the fix said without it; a user
    # with no access to the BAR is told of the udev rule.
    env VGPU_BAR0="$tmp/local.bar0" "$client" paths >"$tmp/local.out" 2>"$tmp/local.err" ||
        fail "the local run failed"
    env VGPU_BAR0="$tmp/local.bar0" "$client" pinned >"$tmp/local-pinned.out" 2>"$tmp/local-pinned.err" ||
        fail "the local run of pinned failed"
    truncate -s 256M "$tmp/vm.bar"
    env VGPU_BAR0="$tmp/host.bar0" VGPU_NAME=vm1 VGPU_REMOTE_IMAGE_CACHE="$tmp/images" \
        "$vgpu_executor" --bar "$tmp/vm.bar" --channels 3 \
        >"$tmp/supervisor.log" 2>&1 &
    suppid=$!
    cat >"$tmp/guest.sh" <<GUEST
run() { env -i PATH=/usr/bin:/bin LD_PRELOAD=$build/libvgpu-cuda.so VGPU_REMOTE=pci VGPU_LOG=info "\$@"; }
run $client paths >$tmp/vm-a.out 2>$tmp/vm-a.err & a=\$!
run $client paths >$tmp/vm-b.out 2>$tmp/vm-b.err; echo \$? >$tmp/vm-b.rc
wait \$a; echo \$? >$tmp/vm-a.rc
run $client pinned >$tmp/vm-pinned.out 2>$tmp/vm-pinned.err; echo \$? >$tmp/vm-pinned.rc
unshare -m sh -c 'mount -o remount,ro,bind /sys && exec env -i LD_PRELOAD=$build/libvgpu-cuda.so VGPU_REMOTE=pci $client quota 1048576' >$tmp/ro.out 2>$tmp/ro.err
for d in /sys/bus/pci/devices/*; do [ "\$(cat \$d/vendor)/\$(cat \$d/device)" = 0x1af4/0x1110 ] && res=\$d/resource2; done
unshare -m sh -c "mount --bind \$res \$res && mount -o remount,ro,bind /sys && exec env -i LD_PRELOAD=$build/libvgpu-cuda.so VGPU_REMOTE=pci $client quota 1048576" >$tmp/rw.out 2>$tmp/rw.err
setpriv --reuid=65534 --regid=65534 --clear-groups env -i LD_PRELOAD=$build/libvgpu-cuda.so VGPU_REMOTE=pci $client quota 1048576 >$tmp/nobody.out 2>$tmp/nobody.err
ls /dev/nvidia* >$tmp/devices.out 2>&1
exit 0
GUEST
    shares=(--share "$tmp")
    case $build/ in "$tmp"/*) ;; /tmp/*) shares+=(--share "$build") ;; esac
    # The source tree too, where the build is outside it and under /tmp.
    "$here/boot-guest.sh" --shm "$tmp/vm.bar" --shm-size 256M "${shares[@]}" --timeout 240 -- sh "$tmp/guest.sh" \
        >"$tmp/boot.log" 2>&1 || fail "the VM did not run (exit $?)"
    for g in a b; do
        [ "$(cat "$tmp/vm-$g.rc" 2>/dev/null)" = 0 ] || fail "guest process $g failed"
        diff "$tmp/local.out" "$tmp/vm-$g.out" >"$tmp/diff.out" || fail "guest process $g's run differs from the local one"
        grep -q 'vGPU "vm1" is PCI device' "$tmp/vm-$g.err" || fail "guest process $g did not find its PCI device"
    done
    [ "$(cat "$tmp/vm-pinned.rc" 2>/dev/null)" = 0 ] || fail "the guest's page-locked memory run failed"
    diff "$tmp/local-pinned.out" "$tmp/vm-pinned.out" >"$tmp/diff.out" ||
        fail "the guest's page-locked memory run differs from the local one"
    grep -q "page-locked memory comes from the channel's" "$tmp/vm-pinned.err" ||
        fail "the guest's page-locked memory was not the channel's bulk"
    grep -q "cuMemAlloc_v2: 0" "$tmp/rw.out" || fail "a guest with /sys read-only but its BAR writable was not served"
    grep -q "ReadWritePaths=" "$tmp/ro.err" || fail "a guest with /sys read-only was not told how to fix it"
    grep -q "udev rule" "$tmp/nobody.err" || fail "a user with no access to the BAR was not told of the udev rule"
    grep -q "No such file" "$tmp/devices.out" || fail "the guest has an NVIDIA device"
    ;;

*)
    echo "unknown scenario $scenario" >&2
    exit 2
    ;;
esac
ok
