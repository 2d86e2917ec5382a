# What the gpu suite's checks of real clients on a remote GPU share (frameworks.sh,
# cuda_samples.sh); sourced by each after test/gpu/lib.sh, as
#     . "$here/guest_lib.sh"
# and used once gpu_check has set $out, $preload and the build's programs: an executor
# under an 8 GiB vGPU, and hidden, which runs a command as a guest with no driver.

# start_executor [STDOUT]: vgpu-executor in the background, under an 8 GiB vGPU (its pid in
# $executor, its log in $out/executor.err, its standard output, where a guest's kernels'
# printf and assert messages go, in STDOUT, else the caller's), ended at exit; $where is
# what a guest's VGPU_REMOTE names to reach it: its socket, $out/sock, or with
# REMOTE_TRANSPORT=bar, channels of a file on a tmpfs of its own standing in for a VM's
# PCI BAR (vgpu-executor --bar, VGPU_REMOTE=bar:FILE), as a VM's guests reach theirs.
start_executor() {
    where=$out/sock
    serve=(--listen "$out/sock")
    if [ "${REMOTE_TRANSPORT:-}" = bar ]; then
        # 8 channels of 256 MiB (streams of 4 MiB, the rest page-locked memory) on a tmpfs of its own: the
        # driver pins no file of a disk's file system (docs/guide/vm.md).
        mkdir -p "$out/bar-fs" && mount -t tmpfs -o size=3g none "$out/bar-fs" || { echo "FAIL: no tmpfs for the BAR"; exit 1; }
        bar=$out/bar-fs/vm.bar
        truncate -s 2G "$bar"
        where=bar:$bar
        serve=(--bar "$bar" --channels 8)
    fi
    if [ $# -gt 0 ]; then exec 3>"$1"; else exec 3>&1; fi
    LD_PRELOAD="$preload" VGPU_BAR0=$out/host.bar0 VGPU_MEMORY_LIMIT=8G VGPU_LOG=${EXECUTOR_LOG:-info} \
        "$vgpu_executor" "${serve[@]}" 2>"$out/executor.err" >&3 3>&- &
    executor=$!
    exec 3>&-
    trap 'kill $executor 2>/dev/null; [ -n "${bar:-}" ] && rm -f "$bar" && umount "$out/bar-fs"' EXIT
    for _ in $(seq 1 100); do [ -S "$out/sock" ] || grep -q serving "$out/executor.err" && break; sleep 0.05; done
}

# hidden CMD...: CMD with no NVIDIA device in /dev and every NVIDIA driver
# library (libcuda, libcudadebugger, libnvidia-*) an empty file, as a
# container without the GPU has; the CUDA toolkit's libraries (libcudart,
# which JAX's plugin loads) are not the driver's and stay.  /dev/nvidiactl
# is /dev/null that cannot be opened, as a remote vGPU's CDI device has it
# (docs/guide/containers.md).
hidden() {
    unshare -m --propagation private bash -c '
        set -e
        h=$1; shift
        mkdir -p "$h/dev"; : >"$h/empty"
        mount --bind /dev "$h/dev"
        mount -t tmpfs none /dev
        for n in null zero full random urandom tty; do : >/dev/$n; mount --bind "$h/dev/$n" /dev/$n; done
        mkdir /dev/shm /dev/pts; mount -t tmpfs none /dev/shm
        ln -s /proc/self/fd /dev/fd; ln -s /proc/self/fd/1 /dev/stdout; ln -s /proc/self/fd/2 /dev/stderr
        # /dev/nvidiactl as a remote vGPU'"'"'s CDI device gives it: /dev/null, no device access.
        : >/dev/nvidiactl; mount --bind "$h/dev/null" /dev/nvidiactl; mount -o remount,bind,ro,nodev /dev/nvidiactl
        umount -l "$h/dev"
        for f in $(ldconfig -p | awk "/(libcuda\.so|libcudadebugger|libnvidia-)[^ ]*/ { print \$NF }"); do
            r=$(readlink -f "$f"); [ -f "$r" ] && mount --bind "$h/empty" "$r"
        done
        [ "$(echo /dev/nvidia*)" = /dev/nvidiactl ] && ! cat /dev/nvidiactl 2>/dev/null
        exec "$@"' hidden "$out/hide" "$@"
}
