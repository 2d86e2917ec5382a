#!/usr/bin/env bash
# Containers on a real runtime: podman.sh SCENARIO BUILD_DIR
#
# Runs Podman (rootful, crun, cgroupfs) with vgpu's CDI devices
# (docs/guide/containers.md, "A vGPU for a container: CDI") over the fake driver, and checks what
# the container's processes see.  Nothing of the machine's own Podman is
# used or touched: the script re-runs itself in a private mount namespace
# where
#   - /run is a fresh tmpfs (crun's state, /run/containers, /run/libpod),
#     and /run/cdi (= /var/run/cdi, a directory Podman 4.3 reads CDI specs
#     from; it has no --cdi-spec-dir and no cdi_spec_dirs) is this test's
#     own $tmp/cdi; a host /etc/cdi is hidden behind an empty directory;
#   - Podman's storage, run root, tmp dir, network config and hooks
#     directory are in $tmp (containers.conf and storage.conf of its own,
#     through CONTAINERS_CONF and CONTAINERS_STORAGE_CONF);
#   - on a cgroup v1/v2 hybrid whose cgroup2 holds a controller (hugetlb
#     when v1 does not mount it), crun refuses every container ("cgroups in
#     hybrid mode not supported, drop all controllers from cgroupv2", crun
#     1.8 reads /sys/fs/cgroup/unified/cgroup.controllers): an empty file is
#     bound over that file, in this namespace only.  crun then puts each
#     container in its own cgroup of every hierarchy, the unified one too.
# Containers run from an image built here, never downloaded: `podman
# import` of a root file system made of the host's busybox-static, the
# loader and the libraries the programs need, and the test programs.
# (containers/image writes its blob cache under /var/lib/containers/cache,
# which no option moves: a tmpfs covers it in this namespace.)  Each run has a cgroup /vgpu-podman.XXXXXX (the name of its
# $tmp): the containers and conmon are below its containers/ (their
# --cgroup-parent), this script, podman and the mediator in its script/.
# Cleanup kills every process there and removes those cgroups and $tmp, even
# when the scenario fails or is interrupted; the next run removes what a
# SIGKILL left.
#
# Helpers for scenarios: driver_spec (the fake driver, fake.vgpu.dev/gpu=all),
# standalone_spec (vgpu's, by hand) and vgpu_setup_cdi (vgpu-setup cdi's)
# write CDI specs into $cdi; fake_nvidia_nodes makes the device nodes specs
# name; ctr_run / ctr_start run containers; ctr_pid and cgroup_of give a
# container's host pid and its cgroup v2 path; start_mediator runs
# vgpu-mediatord on the host with its socket's directory $tmp/med.
scenario=$1
# shellcheck source=test/common/lib.sh
. "$(dirname "$(realpath "$0")")/../common/lib.sh"
use_build "$(realpath "$2")"
self=$(realpath "$0")

# Every hierarchy's directory of cgroup $1 (cgroup v2, or each v1 one and the unified one).
cgroup_dirs() {
    for d in /sys/fs/cgroup"$1" /sys/fs/cgroup/*"$1"; do
        [ -d "$d" ] && echo "$d"
    done
}

# kill_cgroup CGROUP: every process in it and below killed, its cgroups removed.
kill_cgroup() {
    local d left
    for d in $(cgroup_dirs "$1"); do
        [ -e "$d/cgroup.kill" ] && echo 1 >"$d/cgroup.kill"
    done
    for _ in $(seq 1 100); do
        left=$(for d in $(cgroup_dirs "$1"); do find "$d" -name cgroup.procs -exec cat {} +; done)
        [ -z "$left" ] && break
        kill -9 $left # one word per pid
        sleep 0.01
    done
    for _ in $(seq 1 100); do
        for d in $(cgroup_dirs "$1"); do find "$d" -depth -type d -exec rmdir {} + ; done
        [ -z "$(cgroup_dirs "$1")" ] && break
        sleep 0.01
    done
}

# ======================================================================
# Outside: checks, the temp dir, the private mount namespace, cleanup.
# ======================================================================
if [ -z "${VGPU_PODMAN_TMP:-}" ]; then
    need_command podman "Debian: apt-get install podman"
    need_root "the test runs rootful Podman in a private mount namespace"
    need_private_mounts
    bb=$(command -v busybox) || skip "no busybox (Debian: busybox-static) to make the container's root file system"
    ldd "$bb" >/dev/null 2>&1 && skip "$bb is not static (Debian: busybox-static)"
    case ${VGPU_TEST_SANITIZE:-none} in
    *thread*) skip "this build has ThreadSanitizer, whose runtime must be preloaded first into the containers' processes" ;;
    esac
    # What a run that was killed (a timeout's SIGKILL) left: its processes,
    # cgroups and temp dir, once the shell that owned them is gone.
    for old in "${TMPDIR:-/tmp}"/vgpu-podman.*; do
        if [ ! -f "$old/owner" ] || kill -0 "$(cat "$old/owner")" 2>/dev/null; then continue; fi
        kill_cgroup "/$(basename "$old")" 2>/dev/null
        rm -rf "$old"
    done
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/vgpu-podman.XXXXXX") || exit 1
    echo $$ >"$tmp/owner"
    chmod 755 "$tmp"
    # This run's cgroup: the script and what it starts in $base/script,
    # containers and their conmon in $base/containers.
    base=/$(basename "$tmp")
    inner=
    cleanup() {
        trap '' INT TERM # a second signal (meson sends one to the group) must not cut it short
        exec 2>/dev/null
        kill_cgroup "$base"
        [ -n "$inner" ] && kill -9 "$inner" && wait "$inner"
        rm -rf "$tmp"
    }
    trap cleanup EXIT
    trap 'exit 1' INT TERM
    # In the background, so that a signal runs cleanup at once.  Its mount
    # namespace ends with its last process, which cleanup kills.
    VGPU_PODMAN_TMP=$tmp VGPU_PODMAN_CGROUP=$base VGPU_PODMAN_BUSYBOX=$bb \
        unshare --mount --propagation private bash "$self" "$@" &
    inner=$!
    wait "$inner"
    rc=$?
    inner=
    exit $rc
fi

# ======================================================================
# Inside the private mount namespace.
# ======================================================================
tmp=$VGPU_PODMAN_TMP
base=$VGPU_PODMAN_CGROUP
cgparent=$base/containers   # the containers' --cgroup-parent (conmon's cgroup too)
cdi=$tmp/cdi         # the CDI spec directory Podman reads here (/run/cdi)
rootfs=$tmp/rootfs   # the containers' root file system, imported as
image=localhost/vgpu-test:latest # this image
client=$build/test/mediator/mediator_client
cuda_lib=$build/libvgpu-cuda.so
nvml_lib=$build/libvgpu-nvml.so
fake_cuda=$build/test/fake/libcuda.so.1
fake_nvml=$build/test/fake/libnvidia-ml.so.1
# The container's driver directory, where the NVIDIA Container Toolkit puts
# the driver's libraries and where vgpu looks for the real ones.
driver_dir=/usr/lib/x86_64-linux-gnu
# meson's test environment preloads vgpu into every process: not into
# podman, conmon and crun.  The containers get only what their specs give.
unset LD_PRELOAD LD_LIBRARY_PATH
unset CONTAINER_HOST CONTAINER_CONNECTION CONTAINERS_REGISTRIES_CONF
GiB=1073741824
# A sanitized build's programs and libraries (test/sanitizers): their
# runtimes are in the root file system (ldd names them), their settings and
# LeakSanitizer's suppressions go into each container.
san_args=()
if [ -n "${VGPU_TEST_SANITIZE:-}" ]; then
    for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS; do
        [ -n "${!v:-}" ] && san_args+=(--env "$v=${!v}")
    done
    supp=$(echo "${LSAN_OPTIONS:-}" | tr ':' '\n' | sed -n 's/^suppressions=//p')
    [ -n "$supp" ] && san_args+=(-v "$(dirname "$supp"):$(dirname "$supp"):ro")
fi

fail_logs="$tmp/*.out $tmp/*.err $tmp/med.log"
fail_lines=40

# This script and all it starts (podman, the mediator) in $base/script, so
# that the outer script's cleanup finds them: in the unified hierarchy (cgroup
# v2 or a hybrid's), else in v1's pids one.
for h in /sys/fs/cgroup /sys/fs/cgroup/unified /sys/fs/cgroup/pids; do
    if [ -e "$h/cgroup.procs" ] && { [ "$h" != /sys/fs/cgroup ] || [ -e "$h/cgroup.controllers" ]; }; then
        mkdir -p "$h$base/script" && echo $$ >"$h$base/script/cgroup.procs" || fail "cannot enter $h$base/script"
        break
    fi
done

# sandbox: this namespace's /run, CDI directories, cgroup2 controllers and
# Podman configuration (see the top of this file).
sandbox() {
    mkdir -p "$cdi" "$tmp/no-cdi" "$tmp/hooks.d" "$tmp/networks" "$tmp/podman-tmp" "$tmp/storage" "$tmp/storage-run"
    mount -t tmpfs -o mode=755,size=64m vgpu-podman-run /run || fail "cannot mount a tmpfs on /run"
    if [ ! -L /var/run ]; then
        mount -t tmpfs -o mode=755,size=64m vgpu-podman-run /var/run || fail "cannot mount a tmpfs on /var/run"
    fi
    mkdir -p /run/cdi && mount --bind "$cdi" /run/cdi || fail "cannot bind $cdi on /run/cdi"
    # containers/image's blob cache, which podman import writes whatever the storage.
    if [ -d /var/lib/containers ]; then
        mount -t tmpfs -o mode=700,size=16m vgpu-podman-cache /var/lib/containers
    else
        mount -t tmpfs -o mode=755,size=16m vgpu-podman-cache /var/lib && mkdir /var/lib/containers
    fi || fail "cannot cover /var/lib/containers with a tmpfs"
    if [ -d /etc/cdi ]; then
        mount --bind "$tmp/no-cdi" /etc/cdi || fail "cannot hide /etc/cdi"
    fi
    local controllers=/sys/fs/cgroup/unified/cgroup.controllers
    if [ -f "$controllers" ] && [ -n "$(cat "$controllers")" ]; then
        : >"$tmp/no-controllers"
        mount --bind "$tmp/no-controllers" "$controllers" || fail "cannot hide $controllers from crun"
    fi
    # The limits Podman can give: crun cannot raise them past its own
    # (no CAP_SYS_RESOURCE in some VMs), and podman lowers its own
    # RLIMIT_NPROC to 32768 while its default for containers is higher.
    local nofile nproc
    nofile=$(ulimit -Hn)
    [ "$nofile" = unlimited ] || [ "$nofile" -gt 1048576 ] && nofile=1048576
    nproc=$(ulimit -Hu)
    [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ] && nproc=32768
    cat >"$tmp/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
log_driver = "k8s-file"
[engine]
cgroup_manager = "cgroupfs"
events_logger = "none"
runtime = "crun"
tmp_dir = "$tmp/podman-tmp"
volume_path = "$tmp/volumes"
hooks_dir = ["$tmp/hooks.d"]
[network]
network_backend = "netavark"
network_config_dir = "$tmp/networks"
EOF
    cat >"$tmp/storage.conf" <<EOF
[storage]
driver = "vfs"
graphroot = "$tmp/storage"
runroot = "$tmp/storage-run"
EOF
    export CONTAINERS_CONF=$tmp/containers.conf CONTAINERS_STORAGE_CONF=$tmp/storage.conf
}

# podman ARGS...: this test's Podman (its storage named on the command line
# too, whatever the configuration files say).
podman() {
    command podman --root "$tmp/storage" --runroot "$tmp/storage-run" --storage-driver vfs \
        --cgroup-manager cgroupfs --events-backend none --tmpdir "$tmp/podman-tmp" "$@"
}

# fake_nvidia_nodes MINOR...: /dev/nvidiactl, /dev/nvidia-uvm,
# /dev/nvidia-uvm-tools and /dev/nvidiaMINOR for each MINOR, where the host
# has none, as character devices of no driver (the fake driver opens none):
# a runtime refuses a spec's device node that does not exist (vgpu-setup
# cdi lists them).  The host's /dev is not touched: this namespace gets a
# tmpfs /dev with the host's entries (its directories bound).
fake_nvidia_nodes() {
    local e n
    mkdir -p "$tmp/dev-host"
    mount --rbind /dev "$tmp/dev-host" && mount -t tmpfs -o mode=755,size=1m vgpu-podman-dev /dev ||
        fail "cannot give this namespace a /dev of its own"
    for e in "$tmp/dev-host"/*; do
        n=/dev/${e##*/}
        if [ -d "$e" ] && [ ! -L "$e" ]; then
            mkdir -p "$n" && mount --rbind "$e" "$n" || fail "cannot bind $n"
        else
            cp -a "$e" "$n" || fail "cannot copy $n"
        fi
    done
    for n in nvidiactl:195:255 nvidia-uvm:511:0 nvidia-uvm-tools:511:1 $(for m in "$@"; do echo "nvidia$m:195:$m"; done); do
        IFS=: read -r e major minor <<<"$n"
        [ -e "/dev/$e" ] || mknod -m 666 "/dev/$e" c "$major" "$minor" || fail "cannot make /dev/$e"
    done
}

# ---- the root file system ----

# copy_with_libs FILE...: each FILE into the root file system at its own
# path, with every library ldd names for it (the loader too).
copy_with_libs() {
    local f lib
    for f in "$@"; do
        for lib in "$f" $(ldd "$f" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }'); do
            [ -e "$rootfs$lib" ] && continue
            mkdir -p "$rootfs$(dirname "$lib")"
            cp -L "$lib" "$rootfs$lib" || fail "cannot copy $lib into the root file system"
        done
    done
}

# make_rootfs: busybox, the loader and C library, the libraries vgpu links
# (an image with glibc and libelf1, docs/guide/containers.md), and the test client
# at its build path.  vgpu's libraries and the driver are not in it: the
# CDI devices bring them.
make_rootfs() {
    mkdir -p "$rootfs"/{bin,dev,proc,sys,tmp,etc,run,var/tmp,"$driver_dir"}
    chmod 1777 "$rootfs/tmp" "$rootfs/var/tmp"
    cp "$VGPU_PODMAN_BUSYBOX" "$rootfs/bin/busybox"
    for a in sh cat grep sed ls readlink sleep echo id env test true false kill wc head; do
        ln -s busybox "$rootfs/bin/$a"
    done
    echo "root:x:0:0:root:/:/bin/sh" >"$rootfs/etc/passwd"
    echo "root:x:0:" >"$rootfs/etc/group"
    copy_with_libs "$client" "$cuda_lib" "$nvml_lib" "$fake_cuda" "$fake_nvml"
    # vgpu's own libraries come from the CDI spec's mounts, not the image.
    rm -f "$rootfs$cuda_lib" "$rootfs$nvml_lib" "$rootfs$fake_cuda" "$rootfs$fake_nvml"
}

# ---- CDI specs ----

# yaml_mount HOST [INSIDE]: a read-only bind mount, as vgpu-setup cdi writes one.
yaml_mount() {
    printf '    - hostPath: "%s"\n      containerPath: "%s"\n      options: ["ro", "nosuid", "nodev", "bind"]\n' \
        "$1" "${2:-$1}"
}

# driver_spec: the driver's part, what the NVIDIA Container Toolkit's spec
# (nvidia.com/gpu=all) gives: here the fake driver's two libraries in the
# container's driver directory, where vgpu finds them.  Kind
# fake.vgpu.dev/gpu, device all.
driver_spec() {
    {
        printf 'cdiVersion: "0.5.0"\nkind: "fake.vgpu.dev/gpu"\ndevices:\n  - name: "all"\n'
        printf '    containerEdits:\n      mounts:\n'
        yaml_mount "$fake_cuda" "$driver_dir/libcuda.so.1" | sed 's/^/    /'
        yaml_mount "$fake_nvml" "$driver_dir/libnvidia-ml.so.1" | sed 's/^/    /'
    } >"$cdi/fake-driver.yaml"
}

# standalone_spec NAME=LIMIT...: vgpu's spec without a mediator, written by
# hand in the shape of `vgpu-setup cdi --standalone`: kind vgpu.dev/vgpu,
# LD_PRELOAD of this build's libraries (mounted at their own paths) and
# VGPU_MEDIATOR_SOCKET=none for every device, and each device NAME's
# VGPU_MEMORY_LIMIT=LIMIT and device nodes (GPU 0's; fake_nvidia_nodes 0
# makes them).  (vgpu-setup cdi --output "$cdi/vgpu.yaml" writes the same
# kind of file from a mediator's config.)
standalone_spec() {
    {
        printf 'cdiVersion: "0.5.0"\nkind: "vgpu.dev/vgpu"\ncontainerEdits:\n  env:\n'
        printf '    - "LD_PRELOAD=%s %s"\n    - "VGPU_MEDIATOR_SOCKET=none"\n  mounts:\n' "$cuda_lib" "$nvml_lib"
        yaml_mount "$cuda_lib"
        yaml_mount "$nvml_lib"
        printf 'devices:\n'
        local d
        for d in "$@"; do
            printf '  - name: "%s"\n    containerEdits:\n      env:\n        - "VGPU_MEMORY_LIMIT=%s"\n' "${d%%=*}" "${d#*=}"
            printf '      deviceNodes:\n'
            printf '        - path: "%s"\n' /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia-uvm-tools /dev/nvidia0
        done
    } >"$cdi/vgpu.yaml"
}

# setup_libdir: $tmp/lib laid out as meson install lays out $libdir, for
# vgpu-setup --libdir: this build's two libraries and the symlink directory
# vgpu/ (libcuda.so.1, libnvidia-ml.so.1 and their .so, relative links).
setup_libdir() {
    mkdir -p "$tmp/lib/vgpu"
    cp "$cuda_lib" "$nvml_lib" "$tmp/lib/" || fail "cannot copy vgpu's libraries to $tmp/lib"
    ln -s ../libvgpu-cuda.so "$tmp/lib/vgpu/libcuda.so.1"
    ln -s ../libvgpu-cuda.so "$tmp/lib/vgpu/libcuda.so"
    ln -s ../libvgpu-nvml.so "$tmp/lib/vgpu/libnvidia-ml.so.1"
    ln -s ../libvgpu-nvml.so "$tmp/lib/vgpu/libnvidia-ml.so"
}

# vgpu_setup_cdi ARGS...: the spec `vgpu-setup cdi ARGS` writes, over the
# libraries of setup_libdir and the fake NVML (VGPU_REAL_NVML), as
# $cdi/vgpu.yaml.
vgpu_setup_cdi() {
    [ -d "$tmp/lib/vgpu" ] || setup_libdir
    "$vgpu_setup" cdi --libdir "$tmp/lib" --output "$cdi/vgpu.yaml" "$@" >"$tmp/setup.out" 2>&1 ||
        fail "vgpu-setup cdi $* failed"
}

# ---- containers ----

# ctr_run [PODMAN-RUN-ARGS...] -- COMMAND...: a container of the root file
# system, in this test's cgroup parent, without network, removed when it
# ends; its output on stdout and stderr, its status returned.
ctr_run() {
    local args=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
    shift
    podman run --rm --network none --cgroup-parent "$cgparent" "${san_args[@]}" "${args[@]}" "$image" "$@"
}

# ctr_start NAME [PODMAN-RUN-ARGS...] -- COMMAND...: the same, detached, named NAME.
ctr_start() {
    local name=$1
    shift
    local args=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
    shift
    podman run -d --name "$name" --network none --cgroup-parent "$cgparent" "${san_args[@]}" "${args[@]}" \
        "$image" "$@" >/dev/null || fail "podman run -d --name $name failed"
}

# ctr_pid NAME: the host's pid of the container's first process.
ctr_pid() {
    podman inspect --format '{{.State.Pid}}' "$1"
}

# cgroup_of PID: its cgroup v2 path (the 0:: line of /proc/PID/cgroup, as the mediator reads it).
cgroup_of() {
    sed -n 's/^0:://p' "/proc/$1/cgroup"
}

# ---- the mediator, on the host (its pid namespace), over the fake NVML ----
medpid=
# start_mediator CONFIG-LINES...: vgpu-mediatord with the [mediator] section
# (socket $tmp/med/sock, a directory to give containers) and these lines.
start_mediator() {
    mkdir -p "$tmp/med" "$tmp/med-state"
    {
        printf '[mediator]\nsocket = %s\nstate_dir = %s\n' "$tmp/med/sock" "$tmp/med-state"
        printf '%s\n' "$@"
    } >"$tmp/med.conf"
    env VGPU_LOG=info "$vgpu_mediatord" --config "$tmp/med.conf" --foreground >>"$tmp/med.log" 2>&1 &
    medpid=$!
    for _ in $(seq 1 500); do
        "$vgpu_smi" --socket "$tmp/med/sock" >/dev/null 2>&1 && return 0
        kill -0 "$medpid" 2>/dev/null || fail "the mediator exited"
        sleep 0.02
    done
    fail "the mediator did not answer within 10 s"
}

# smi_py EXPR: EXPR over vgpu-smi --json (as s), printed.
smi_py() {
    "$vgpu_smi" --socket "$tmp/med/sock" --json | python3 -c "import json,sys; s=json.load(sys.stdin); print($1)"
}


# ======================================================================
sandbox
make_rootfs
tar -C "$rootfs" -c . | podman import - "$image" >/dev/null || fail "podman import of $rootfs failed"
driver_spec

case $scenario in
standalone-device-gives-its-memory-limit)
    # Two vGPUs of one spec: each container sees its own device's quota, in
    # CUDA and NVML, and is refused past it (the fake GPU has 16 GiB).
    fake_nvidia_nodes 0
    standalone_spec small=1G large=3G
    ctr_run --device fake.vgpu.dev/gpu=all --device vgpu.dev/vgpu=small --env VGPU_LOG=info -- "$client" admitted 1G \
        >"$tmp/small.out" 2>&1 || fail "the container with vgpu.dev/vgpu=small failed"
    grep -q "^ok - admitted" "$tmp/small.out" || fail "no ok from the client in vgpu.dev/vgpu=small"
    grep -q "joined vGPU .* memory limit 1.00 GiB" "$tmp/small.out" &&
        grep -q "forwarding to the CUDA driver at $driver_dir/libcuda.so.1" "$tmp/small.out" ||
        fail "vgpu's log in the container does not show the 1 GiB vGPU over the driver of fake.vgpu.dev/gpu"
    ctr_run --device fake.vgpu.dev/gpu=all --device vgpu.dev/vgpu=large -- "$client" admitted 3G \
        >"$tmp/large.out" 2>&1 || fail "the container with vgpu.dev/vgpu=large failed"
    # The spec's environment, and nothing of the host's.
    ctr_run --device fake.vgpu.dev/gpu=all --device vgpu.dev/vgpu=small -- sh -c \
        'echo "LD_PRELOAD=$LD_PRELOAD"; echo "VGPU_MEMORY_LIMIT=$VGPU_MEMORY_LIMIT"; echo "VGPU_MEDIATOR_SOCKET=$VGPU_MEDIATOR_SOCKET"
         for n in nvidiactl nvidia-uvm nvidia-uvm-tools nvidia0; do test -c /dev/$n && echo "node $n"; done' \
        >"$tmp/env.out" 2>&1 || fail "the environment probe failed"
    grep -qx "LD_PRELOAD=$cuda_lib $nvml_lib" "$tmp/env.out" &&
        grep -qx "VGPU_MEMORY_LIMIT=1G" "$tmp/env.out" && grep -qx "VGPU_MEDIATOR_SOCKET=none" "$tmp/env.out" ||
        fail "the container's environment is not the spec's: $(cat "$tmp/env.out")"
    [ "$(grep -c '^node ' "$tmp/env.out")" = 4 ] || fail "the container lacks the spec's device nodes: $(cat "$tmp/env.out")"
    # Without vgpu's device the program sees the whole (fake) GPU.
    ctr_run --device fake.vgpu.dev/gpu=all -- "$client" admitted 16G >"$tmp/none.out" 2>&1 ||
        fail "the container without vgpu's device did not see the fake GPU's 16 GiB"
    grep -h -v '^vgpu\[' "$tmp/small.out" "$tmp/large.out"
    ;;

vgpu-setup-standalone-spec-gives-its-memory-limit)
    # The spec vgpu-setup cdi --standalone writes, as is: its libraries and
    # symlink directory mounted at their paths, GPU 0 by UUID, its device nodes.
    fake_nvidia_nodes 0
    vgpu_setup_cdi --standalone --devices 0 --memory 2G --vgpu train
    ctr_run --device fake.vgpu.dev/gpu=all --device vgpu.dev/vgpu=train --env VGPU_LOG=info -- "$client" admitted 2G \
        >"$tmp/train.out" 2>&1 || fail "the container with vgpu-setup's vgpu.dev/vgpu=train failed"
    grep -q "joined vGPU .* memory limit 2.00 GiB" "$tmp/train.out" ||
        fail "vgpu's log in the container does not show the 2 GiB vGPU"
    grep -v '^vgpu\[' "$tmp/train.out"
    ;;

containers-get-cgroups-of-their-own)
    # The mediator admits by cgroup (cgroups = in its config): each
    # container must have its own cgroup v2 path below the parent it is
    # given, as /proc/PID/cgroup shows it on the host.
    ctr_start one -- sleep 60
    ctr_start two -- sleep 60
    p1=$(ctr_pid one) p2=$(ctr_pid two)
    c1=$(cgroup_of "$p1") c2=$(cgroup_of "$p2")
    echo "one: pid $p1, cgroup $c1"
    echo "two: pid $p2, cgroup $c2"
    case $c1 in "$cgparent"/libpod-*) ;; *) fail "container one's cgroup is $c1, not below $cgparent" ;; esac
    case $c2 in "$cgparent"/libpod-*) ;; *) fail "container two's cgroup is $c2, not below $cgparent" ;; esac
    [ "$c1" != "$c2" ] || fail "both containers are in $c1"
    [ "$(podman exec one sh -c 'sed -n "s/^0:://p" /proc/self/cgroup')" = "$c1" ] ||
        fail "a process podman exec starts is not in its container's cgroup"
    ;;

vgpu-setup-spec-gives-each-container-its-vgpu)
    # The whole path, as on a host: the mediator's config makes a vGPU for
    # each container (containers = 1 in two classes); vgpu-setup cdi writes
    # the spec from it, used as is; Podman runs each device's hook, which
    # binds the vGPU to the container's cgroup before its program runs.  The
    # containers run as root, which no vGPU's uids name: they are admitted
    # by their cgroups, each to its own vGPU, and refused past its quota.
    FAKEGPU_STATE=$tmp/fake/state
    mkdir -p "$tmp/fake"
    export FAKEGPU_STATE
    start_mediator "[vgpu.small]" "devices = 0" "memory = 1G" "compute = 40" "containers = 1" \
                   "[vgpu.large]" "devices = 0" "memory = 3G" "compute = 40" "containers = 1"
    fake_nvidia_nodes 0
    vgpu_setup_cdi --config "$tmp/med.conf" --hook "$vgpu_cdi_hook"
    grep -q 'hookName: createRuntime' "$cdi/vgpu.yaml" || fail "the spec has no hook: $(cat "$cdi/vgpu.yaml")"
    share=(--device fake.vgpu.dev/gpu=all -v "$tmp/fake:$tmp/fake" --env FAKEGPU_STATE="$FAKEGPU_STATE")
    ctr_run "${share[@]}" --device vgpu.dev/vgpu=small-0 -- "$client" admitted 1G >"$tmp/small.out" 2>&1 ||
        fail "the container with vgpu.dev/vgpu=small-0 failed: $(tail -5 "$tmp/small.out")"
    ctr_run "${share[@]}" --device vgpu.dev/vgpu=large-0 -- "$client" admitted 3G >"$tmp/large.out" 2>&1 ||
        fail "the container with vgpu.dev/vgpu=large-0 failed: $(tail -5 "$tmp/large.out")"
    for v in small-0 large-0; do
        bound=$(sed -n "s/.*vGPU $v: bound to cgroup \([^ ,]*\).*/\1/p" "$tmp/med.log" | tail -1)
        case $bound in "$cgparent"/libpod-*) ;; *) fail "vGPU $v is not bound to a container's cgroup: '$bound'" ;; esac
        grep -q "admitted pid .* (mediator_client, uid 0) to vGPU $v" "$tmp/med.log" ||
            fail "no admission of the container's client to $v"
    done
    # One container a vGPU: while one holds small-0, another given small-0
    # does not start (its hook is refused), and the one there is admitted to
    # small-0 alone, whatever VGPU_NAME says.
    ctr_start held "${share[@]}" --device vgpu.dev/vgpu=small-0 -- sleep 60
    # (podman exec gives its process the container's configured environment,
    # not what CDI added to its first process's: the spec's, named again)
    podman exec --env VGPU_NAME=large-0 --env LD_PRELOAD="$tmp/lib/libvgpu-cuda.so $tmp/lib/libvgpu-nvml.so" \
        --env VGPU_MEDIATOR_SOCKET="$tmp/med/sock" held "$client" refused >"$tmp/other.out" 2>&1 ||
        fail "VGPU_NAME=large-0 in small-0's container was not refused: $(tail -5 "$tmp/other.out")"
    grep -q "vGPU large-0 does not admit cgroup $cgparent/libpod-" "$tmp/other.out" ||
        fail "the refusal of VGPU_NAME=large-0: $(grep error "$tmp/other.out")"
    ctr_run "${share[@]}" --device vgpu.dev/vgpu=small-0 -- true >"$tmp/second.out" 2>&1 &&
        fail "a second container started with small-0 while the first runs"
    # crun says only that the hook failed; the mediator's log says why.
    grep -q "error executing hook .*vgpu-cdi-hook" "$tmp/second.out" ||
        fail "the second container did not fail at its hook: $(tail -5 "$tmp/second.out")"
    grep -q "refused pid .* (vgpu-cdi-hook, uid 0): BIND small-0: it is the container's of cgroup $cgparent/libpod-.*, which still runs" \
        "$tmp/med.log" || fail "the mediator does not say why the second container was refused"
    podman rm -f held >/dev/null
    # The same container with the mediator's socket but without a vGPU's
    # device: its root is admitted nowhere.
    ctr_run "${share[@]}" -v "$tmp/med:$tmp/med:ro" -v "$tmp/lib:$tmp/lib:ro" \
        --env LD_PRELOAD="$tmp/lib/libvgpu-cuda.so $tmp/lib/libvgpu-nvml.so" \
        --env VGPU_MEDIATOR_SOCKET="$tmp/med/sock" -- "$client" refused >"$tmp/none.out" 2>&1 ||
        fail "the container without a vGPU's device was not refused: $(tail -5 "$tmp/none.out")"
    grep -q "no vGPU admits uid 0 .*cgroup $cgparent/libpod-" "$tmp/none.out" ||
        fail "the refusal does not name the container's cgroup: $(grep error "$tmp/none.out")"
    grep -h -v '^vgpu\[' "$tmp/small.out" "$tmp/large.out"
    ;;

mediator-admits-a-container-by-its-cgroup)
    # The mediator on the host, its socket's directory mounted into the
    # container: the container's process connects, the mediator reads its
    # host pid (SO_PEERCRED) and that pid's cgroup, and admits it to the
    # vGPU of its cgroup parent.
    FAKEGPU_STATE=$tmp/fake/state
    mkdir -p "$tmp/fake" "$tmp/sync"
    export FAKEGPU_STATE
    start_mediator "[vgpu.ctr]" "devices = 0" "memory = 2G" "cgroups = $cgparent" \
                   "[vgpu.host]" "devices = 1" "memory = 1G" "uids = 0"
    {
        printf 'cdiVersion: "0.5.0"\nkind: "vgpu.dev/vgpu"\ncontainerEdits:\n  env:\n'
        printf '    - "LD_PRELOAD=%s %s"\n    - "VGPU_MEDIATOR_SOCKET=%s"\n  mounts:\n' "$cuda_lib" "$nvml_lib" "$tmp/med/sock"
        yaml_mount "$cuda_lib"
        yaml_mount "$nvml_lib"
        printf '    - hostPath: "%s"\n      containerPath: "%s"\n      options: ["ro", "nosuid", "nodev", "rbind"]\n' \
            "$tmp/med" "$tmp/med"
        printf 'devices:\n  - name: "ctr"\n    containerEdits:\n      env:\n        - "VGPU_NAME=ctr"\n'
    } >"$cdi/vgpu.yaml"
    ctr_start held --device fake.vgpu.dev/gpu=all --device vgpu.dev/vgpu=ctr \
        -v "$tmp/fake:$tmp/fake" -v "$tmp/sync:$tmp/sync" --env FAKEGPU_STATE="$FAKEGPU_STATE" \
        -- "$client" hold $GiB "$tmp/sync/ready" "$tmp/sync/go"
    wait_file "$tmp/sync/ready"
    inside=$(cat "$tmp/sync/ready")
    host_pid=$(ctr_pid held)
    cg=$(cgroup_of "$host_pid")
    echo "the client: pid $inside in the container, $host_pid on the host, cgroup $cg"
    [ "$inside" != "$host_pid" ] || fail "the container has no pid namespace of its own"
    grep "admitted pid $host_pid .*to vGPU ctr" "$tmp/med.log" ||
        fail "the mediator did not log the admission of host pid $host_pid to vGPU ctr"
    [ "$(smi_py "[(p['vgpu'], p['pid']) for p in s['processes']]")" = "[('ctr', $host_pid)]" ] ||
        fail "vgpu-smi does not list host pid $host_pid in vGPU ctr: $("$vgpu_smi" --socket "$tmp/med/sock")"
    touch "$tmp/sync/go"
    [ "$(podman wait held)" = 0 ] || fail "the client in the container failed: $(podman logs held 2>&1 | tail -20)"
    ;;

*)
    fail "no scenario $scenario"
    ;;
esac
ok
