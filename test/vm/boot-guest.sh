#!/bin/bash
# boot-guest.sh: runs a command inside a real QEMU virtual machine that has no GPU, an ivshmem PCI device
# backed by a host file, and this machine's root file system mounted read-only (9p) as its root.
#
#   boot-guest.sh [--kvm] [--mem MiB] [--shm FILE] [--shm-size SIZE] [--share DIR]... [--timeout S] -- COMMAND [ARGS...]
#
# The guest kernel is Debian's (package linux-image-amd64); QEMU is Debian's qemu-system-x86; busybox-static
# builds the initramfs. Install them with: apt-get install -y qemu-system-x86 linux-image-amd64 busybox-static
# The guest sees the ivshmem device as PCI vendor 0x1af4, device 0x1110 (BAR2 = the file, resource2 in sysfs),
# has /proc, /sys and /dev, no network, and no /dev/nvidia*. COMMAND runs chrooted into the host's root (read-only),
# with /tmp a fresh tmpfs; its exit status is this script's. The host file is shared (share=on): what the
# guest writes to BAR2 the host sees in FILE at once, and the other way round.  Each --share DIR is mounted
# read-write at the same path in the guest, over the tmpfs (a test's directory, a build under /tmp).
# On a machine without working nested KVM, leave --kvm out: QEMU's TCG boots the guest in about 7 s on 2 cores.
set -euo pipefail
kvm=0; mem=1024; shm=""; shm_size=1M; timeout=300; shares=()
while [ $# -gt 0 ]; do
  case "$1" in
    --kvm) kvm=1; shift;; --mem) mem=$2; shift 2;; --shm) shm=$2; shift 2;; --shm-size) shm_size=$2; shift 2;;
    --share) shares+=("$(cd "$2" && pwd)"); shift 2;;
    --timeout) timeout=$2; shift 2;; --) shift; break;; *) echo "boot-guest.sh: unknown option $1" >&2; exit 2;;
  esac
done
[ $# -gt 0 ] || { echo "usage: boot-guest.sh [--kvm] [--mem MiB] [--shm FILE] [--shm-size SIZE] [--share DIR]... [--timeout S] -- COMMAND..." >&2; exit 2; }
kernel=$(ls /boot/vmlinuz-* 2>/dev/null | sort -V | tail -1); [ -n "$kernel" ] || { echo "no /boot/vmlinuz-*: apt-get install linux-image-amd64" >&2; exit 2; }
ver=${kernel#/boot/vmlinuz-}; mods=/lib/modules/$ver
command -v qemu-system-x86_64 >/dev/null || { echo "no qemu-system-x86_64: apt-get install qemu-system-x86" >&2; exit 2; }
bb=$(command -v busybox || true); [ -n "$bb" ] && file -L "$bb" 2>/dev/null | grep -q static || bb=/bin/busybox
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
ir=$work/ir; mkdir -p $ir/bin $ir/proc $ir/sys $ir/dev $ir/host $ir/lib/modules/$ver/kernel; cp "$bb" $ir/bin/busybox
cp $mods/modules.* $ir/lib/modules/$ver/
for d in drivers/virtio net/9p fs/9p fs/netfs fs/fscache; do
  [ -d $mods/kernel/$d ] && { mkdir -p $ir/lib/modules/$ver/kernel/$d; cp -r $mods/kernel/$d/. $ir/lib/modules/$ver/kernel/$d/; }
done
{ printf 'exec'; for a in "$@"; do printf " '%s'" "${a//\'/\'\\\'\'}"; done; echo; } > $ir/run.sh  # POSIX quoting
: > $ir/shares; for i in "${!shares[@]}"; do echo "share$i ${shares[$i]}" >> $ir/shares; done
cat > $ir/init <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in virtio_pci 9pnet_virtio 9p; do modprobe $m 2>/dev/null; done
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=524288 host /host || { echo "GUEST-EXIT 125"; poweroff -f; }
mount --bind /proc /host/proc; mount --bind /sys /host/sys; mount --bind /dev /host/dev; mount -t tmpfs tmp /host/tmp
while read tag dir; do mkdir -p /host$dir 2>/dev/null; mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288 $tag /host$dir || { echo "GUEST-EXIT 125"; poweroff -f; }; done < /shares
cp /run.sh /host/tmp/.guest-run.sh; chroot /host /bin/sh -c 'cd / && . /tmp/.guest-run.sh'; echo "GUEST-EXIT $?"
poweroff -f
INIT
chmod +x $ir/init; (cd $ir && find . | cpio -o -H newc 2>/dev/null | gzip -1 > $work/initrd.gz)
dev=()
for i in "${!shares[@]}"; do
  dev+=(-virtfs "local,path=${shares[$i]},mount_tag=share$i,security_model=none,multidevs=remap")
done
if [ -n "$shm" ]; then
  [ -e "$shm" ] || truncate -s "$shm_size" "$shm"
  dev+=(-object "memory-backend-file,id=vgpu0,mem-path=$shm,size=$shm_size,share=on" -device ivshmem-plain,memdev=vgpu0)
fi
accel=tcg; [ $kvm = 1 ] && accel=kvm
timeout "$timeout" qemu-system-x86_64 -accel $accel -m "$mem" -smp 2 -nographic -no-reboot -kernel "$kernel" \
  -initrd $work/initrd.gz -append "console=ttyS0 quiet panic=-1" "${dev[@]}" \
  -virtfs local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap 2>&1 | tr -d '\r' | tee $work/console \
  | sed 's/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1b[A-Za-z]//g' | sed -n '/Booting from ROM/,$p' \
  | sed 's/^.*Booting from ROM\.*//; /^GUEST-EXIT/d; /^$/d'
rc=$(grep -o 'GUEST-EXIT [0-9]*' $work/console | tail -1 | cut -d' ' -f2); exit ${rc:-124}
