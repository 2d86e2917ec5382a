#!/usr/bin/env bash
# vgpu-setup on a fake root: setup.sh SCENARIO BUILD_DIR
#
# Each scenario builds a small system under a temp dir: vgpu installed at a
# path that holds the build's libraries both inside it and on this machine
# (so a program run with what vgpu-setup wrote gets vgpu), the fake driver
# in /usr/lib/nvidia with its ld.so.conf entry, and a few services.
# systemctl is a stub that records its arguments; ldconfig is the real one
# (as `ldconfig -r ROOT`) behind a stub that records them too.  Needs root,
# as CI has it: ldconfig -r chroots, and files are given other owners.
scenario=$1 build=$2
# shellcheck source=test/common/lib.sh
. "$(dirname "$(realpath "$0")")/../common/lib.sh"
need_root "ldconfig -r chroots into the fake root"
use_build "$build"
src=$source_dir
setup=$vgpu_setup
fake=$build/test/fake
probe=$build/test/setup/service_probe
temp_dir vgpu-setup
R=$tmp/root
lib=$tmp/lib # vgpu's libdir, in the root and on this machine
fail_logs="$tmp/out $tmp/err" # vgpu-setup's
fail_lines=all
# vgpu-setup itself runs without vgpu (the test environment preloads it).
unset LD_PRELOAD VGPU_SETUP_SYSTEMCTL VGPU_SETUP_LDCONFIG

ldconfig_bin=$(command -v ldconfig || echo /sbin/ldconfig)
mkdir -p "$tmp/bin"
cat >"$tmp/bin/systemctl" <<STUB
#!/bin/sh
echo "systemctl \$*" >>"$tmp/calls"
STUB
cat >"$tmp/bin/ldconfig" <<STUB
#!/bin/sh
echo "ldconfig \$*" >>"$tmp/calls"
exec "$ldconfig_bin" "\$@"
STUB
chmod +x "$tmp/bin/systemctl" "$tmp/bin/ldconfig"

# The fake system.
make_root() {
    mkdir -p "$R/usr/lib/nvidia" "$R/etc/ld.so.conf.d" "$R/etc/systemd/system" "$R/usr/lib/systemd/system" \
        "$R/var/cache/ldconfig" "$R/var/lib" "$R/dev"
    sh "$src/test/setup/install_vgpu.sh" "$build" "$R$lib" "$lib" || fail "cannot install vgpu in the fake root"
    # The driver as its installer lays it out: versioned files, SONAME links, its own loader entry.
    cp "$fake/libcuda.so.1" "$R/usr/lib/nvidia/libcuda.so.580.00"
    cp "$fake/libnvidia-ml.so.1" "$R/usr/lib/nvidia/libnvidia-ml.so.580.00"
    ln -s libcuda.so.580.00 "$R/usr/lib/nvidia/libcuda.so.1"
    ln -s libnvidia-ml.so.580.00 "$R/usr/lib/nvidia/libnvidia-ml.so.1"
    echo /usr/lib/nvidia >"$R/etc/ld.so.conf.d/nvidia.conf"
    echo 'include /etc/ld.so.conf.d/*.conf' >"$R/etc/ld.so.conf"
    touch "$R/dev/nvidiactl" "$R/dev/nvidia-uvm" "$R/dev/nvidia-uvm-tools" "$R/dev/nvidia0" "$R/dev/nvidia1"
    cat >"$R/usr/lib/systemd/system/ollama.service" <<'UNIT'
[Unit]
Description=Ollama Service

[Service]
ExecStart=/usr/local/bin/ollama serve
User=ollama
UNIT
    cat >"$R/usr/lib/systemd/system/worker.service" <<'UNIT'
[Service]
ExecStart=/opt/worker/bin/worker --port 9000
Environment="LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2" \
    "LD_LIBRARY_PATH=/opt/worker/lib"
UNIT
    mkdir -p "$R/etc/systemd/system/worker.service.d"
    printf '[Service]\nEnvironment=HOME=/srv/worker\n' >"$R/etc/systemd/system/worker.service.d/override.conf"
    "$ldconfig_bin" -r "$R" || fail "ldconfig -r cannot build the fake root's cache"
}

# vs STATUS ARGS...: runs vgpu-setup on the fake root; stdout to $tmp/out,
# stderr to $tmp/err; fails unless it exits with STATUS.
vs() {
    local want=$1 status=0
    shift
    "$setup" "$@" --root "$R" --libdir "$lib" --systemctl "$tmp/bin/systemctl" --ldconfig "$tmp/bin/ldconfig" \
        >"$tmp/out" 2>"$tmp/err" || status=$?
    [ "$status" -eq "$want" ] || fail "vgpu-setup $* exited $status, not $want"
}

# says FILE TEXT: vgpu-setup's FILE (out or err) contains TEXT.
says() {
    grep -qF -- "$2" "$tmp/$1" || fail "std$1 does not say: $2"
}

# Every file, link and directory under the root but vgpu-setup's own state:
# contents, modes, owners, file times and link targets.
snapshot() {
    (cd "$R" && find . -path ./var/lib/vgpu -prune -o -path ./var/cache -prune -o -path ./etc/ld.so.cache -prune -o \
        \( -type f -printf '%p file %m %U:%G %T@ %s ' -exec sha256sum {} \; \) -o \
        \( -type l -printf '%p link -> %l\n' \) -o \( -type d -printf '%p dir %m\n' \) | sort)
}

dropin() { echo "$R/etc/systemd/system/$1.service.d/vgpu.conf"; }

make_root
case $scenario in

service-enable-then-disable-restores-every-byte)
    snapshot >"$tmp/before"
    vs 0 enable --service worker --memory 2G --compute 30% --compute-mode cap --devices 1
    [ -f "$(dropin worker)" ] || fail "no drop-in at $(dropin worker)"
    grep -q '^Environment="VGPU_MEMORY_LIMIT=2G"$' "$(dropin worker)" || fail "no quota in the drop-in"
    # systemd reads % as a specifier: a literal one is written %%.
    grep -q '^Environment="VGPU_COMPUTE_SHARE=30%%"$' "$(dropin worker)" || fail "no compute share in the drop-in"
    grep -q '^Environment="VGPU_COMPUTE_MODE=cap"$' "$(dropin worker)" || fail "no compute mode in the drop-in"
    grep -qx "systemctl daemon-reload" "$tmp/calls" || fail "enable did not run systemctl daemon-reload"
    vs 0 disable --service worker
    says out "removed it (there was none before)"
    snapshot >"$tmp/after"
    diff "$tmp/before" "$tmp/after" >&2 || fail "the root differs after enable and disable (above)"
    [ "$(grep -c "systemctl daemon-reload" "$tmp/calls")" = 2 ] || fail "disable did not run systemctl daemon-reload"
    ;;

enable-is-idempotent)
    printf '[Service]\nEnvironment=VGPU_LOG=debug\n' >"$tmp/mine"
    install -D -m 640 "$tmp/mine" "$(dropin worker)"
    snapshot >"$tmp/before"
    vs 0 enable --service worker --memory 2G
    cp "$(dropin worker)" "$tmp/first"
    cp -r "$R/var/lib/vgpu/setup" "$tmp/state1"
    vs 0 enable --service worker --memory 2G
    says out "already enabled"
    cmp "$(dropin worker)" "$tmp/first" || fail "the second enable changed the drop-in"
    diff -r "$tmp/state1" "$R/var/lib/vgpu/setup" >&2 || fail "the second enable changed vgpu-setup's record"
    # The copy of what was there first is still the one disable restores.
    vs 0 disable --service worker
    snapshot >"$tmp/after"
    diff "$tmp/before" "$tmp/after" >&2 || fail "two enables and a disable did not restore the root (above)"
    vs 0 enable --system
    vs 0 enable --system
    says out "system: already enabled"
    [ "$(grep -c . "$R/etc/ld.so.conf.d/000-vgpu.conf")" = 4 ] || fail "enable --system twice wrote the entry twice"
    ;;

disable-restores-a-file-that-existed-before)
    # A drop-in of the same name, installed by hand from vgpu's template, and an old loader entry that is a link.
    install -D -m 600 "$src/tools/systemd/vgpu-preload.conf.in" "$(dropin ollama)"
    touch -d '2020-01-02 03:04:05.123456789' "$(dropin ollama)"
    chown 12345:54321 "$(dropin ollama)"
    echo /opt/old-vgpu/lib >"$R/etc/old-vgpu.conf"
    ln -s ../old-vgpu.conf "$R/etc/ld.so.conf.d/000-vgpu.conf"
    snapshot >"$tmp/before"
    vs 0 enable --service ollama --mediator
    cmp -s "$(dropin ollama)" "$src/tools/systemd/vgpu-preload.conf.in" && fail "enable left the old drop-in in place"
    vs 0 enable --system
    [ -L "$R/etc/ld.so.conf.d/000-vgpu.conf" ] && fail "enable --system wrote through the old link"
    [ "$(cat "$R/etc/old-vgpu.conf")" = /opt/old-vgpu/lib ] || fail "enable --system changed the old link's target"
    vs 0 disable --service ollama
    says out "put back the file that was there before, byte for byte"
    vs 0 disable --system
    says out "put back the symbolic link that was there before"
    snapshot >"$tmp/after"
    diff "$tmp/before" "$tmp/after" >&2 || fail "the files from before enable are not back as they were (above)"
    ;;

system-enable-writes-ld-so-conf-and-runs-ldconfig)
    vs 0 enable --system
    printf '%s\n' "$lib/vgpu" >"$tmp/want"
    grep -v '^#' "$R/etc/ld.so.conf.d/000-vgpu.conf" | diff "$tmp/want" - >&2 ||
        fail "000-vgpu.conf does not name exactly $lib/vgpu"
    grep -qx "ldconfig -r $R" "$tmp/calls" || fail "ldconfig was not run as ldconfig -r ROOT: $(cat "$tmp/calls")"
    says out "ld.so.cache: libcuda.so.1 -> $lib/vgpu/libcuda.so.1 (vgpu)"
    says out "ld.so.cache: libnvidia-ml.so.1 -> $lib/vgpu/libnvidia-ml.so.1 (vgpu)"
    vs 0 disable --system
    [ -e "$R/etc/ld.so.conf.d/000-vgpu.conf" ] && fail "disable --system left 000-vgpu.conf"
    [ "$(grep -c "ldconfig -r $R" "$tmp/calls")" = 2 ] || fail "disable --system did not run ldconfig"
    says out "ld.so.cache: libcuda.so.1 -> /usr/lib/nvidia/libcuda.so.1 (the driver)"
    ;;

never-touches-driver-files)
    driver_state() {
        (cd "$R" && find usr/lib/nvidia etc/ld.so.conf etc/ld.so.conf.d/nvidia.conf \
            \( -type f -printf '%p %m %U:%G %T@ ' -exec sha256sum {} \; \) -o \( -type l -printf '%p -> %l %T@\n' \) |
            sort)
    }
    driver_state >"$tmp/before"
    printf '[vgpu.a]\ndevices = 0\nuids = 0\n' | install -D /dev/stdin "$R/etc/vgpu/mediatord.conf"
    vs 0 enable --system
    vs 0 enable --service ollama --mediator --vgpu a
    vs 0 enable --service worker --symlink --memory 1G
    vs 0 cdi
    vs 0 status
    vs 0 disable --service ollama
    vs 0 disable --service worker
    vs 0 disable --system
    driver_state >"$tmp/after"
    [ -s "$tmp/before" ] || fail "no driver files to watch"
    diff "$tmp/before" "$tmp/after" >&2 || fail "the driver's files changed (above)"
    ;;

status-reports-what-is-enabled)
    vs 0 status
    says out "services: none has a vgpu drop-in"
    says out "system: not enabled"
    says out "ld.so.cache: libcuda.so.1 -> /usr/lib/nvidia/libcuda.so.1 (the driver)"
    says out "containers: no CDI spec"
    vs 0 enable --service ollama --mediator --vgpu infer
    vs 0 enable --service worker --memory 2G
    vs 0 enable --system
    install -D -m 644 "$src/tools/systemd/vgpu-preload.conf.in" "$(dropin triton)"
    echo "# a local change" >>"$(dropin worker)"
    vs 0 status
    says out "  ollama.service: $(dropin ollama) (written by vgpu-setup); sets LD_PRELOAD VGPU_MEDIATOR_SOCKET=/run/vgpu/mediator.sock VGPU_NAME=infer OLLAMA_VULKAN=0"
    says out "  worker.service: $(dropin worker) (written by vgpu-setup, changed since)"
    says out "  triton.service: $(dropin triton) (not written by vgpu-setup)"
    says out "system: $R/etc/ld.so.conf.d/000-vgpu.conf names $lib/vgpu (written by vgpu-setup)"
    says out "ld.so.cache: libcuda.so.1 -> $lib/vgpu/libcuda.so.1 (vgpu)"
    says out "ld.so.cache: libnvidia-ml.so.1 -> $lib/vgpu/libnvidia-ml.so.1 (vgpu)"
    ;;

ollama-service-gets-vulkan-off)
    # By its name, by what its ExecStart= runs, and not otherwise.
    printf '[Service]\nExecStart=/opt/models/bin/ollama serve\n' >"$R/usr/lib/systemd/system/llm.service"
    vs 0 enable --service ollama
    grep -qx 'Environment="OLLAMA_VULKAN=0"' "$(dropin ollama)" || fail "ollama.service has no OLLAMA_VULKAN=0"
    says out "OLLAMA_VULKAN=0"
    vs 0 enable --service llm
    grep -qx 'Environment="OLLAMA_VULKAN=0"' "$(dropin llm)" || fail "llm.service (ExecStart=.../ollama) has no OLLAMA_VULKAN=0"
    vs 0 enable --service worker
    grep -q OLLAMA_VULKAN "$(dropin worker)" && fail "worker.service got OLLAMA_VULKAN"
    # And the variable reaches the service's program.
    python3 "$src/test/setup/dropin_run.py" --machine "VGPU_REAL_LIBCUDA=$fake/libcuda.so.1" \
        --machine "VGPU_REAL_NVML=$fake/libnvidia-ml.so.1" --machine VGPU_MEDIATOR_SOCKET=none \
        "$R/usr/lib/systemd/system/ollama.service" "$(dropin ollama)" -- "$probe" >"$tmp/probe" 2>&1 ||
        fail "the probe failed under ollama's drop-in: $(cat "$tmp/probe")"
    grep -qx "OLLAMA_VULKAN=0" "$tmp/probe" || fail "the service's program does not see OLLAMA_VULKAN=0: $(cat "$tmp/probe")"
    ;;

service-keeps-the-units-own-preload-and-library-path)
    vs 0 enable --service worker
    grep -qxF "Environment=\"LD_PRELOAD=$lib/libvgpu-cuda.so $lib/libvgpu-nvml.so /usr/lib/x86_64-linux-gnu/libjemalloc.so.2\"" \
        "$(dropin worker)" || fail "the unit's LD_PRELOAD is not kept after vgpu's: $(grep LD_ "$(dropin worker)")"
    vs 0 enable --service worker --symlink
    grep -qxF "Environment=\"LD_LIBRARY_PATH=$lib/vgpu:/opt/worker/lib\"" "$(dropin worker)" ||
        fail "the unit's LD_LIBRARY_PATH is not kept after vgpu's: $(grep LD_ "$(dropin worker)")"
    grep -q LD_PRELOAD "$(dropin worker)" && fail "--symlink still sets LD_PRELOAD"
    ;;

disable-of-what-was-never-enabled-changes-nothing)
    install -D -m 644 "$src/tools/systemd/vgpu-preload.conf.in" "$(dropin triton)"
    snapshot >"$tmp/before"
    vs 0 disable --service ollama
    says out "ollama.service: vgpu-setup has not enabled it"
    says out "nothing changed"
    vs 0 disable --service triton
    says out "was not written by vgpu-setup: remove it by hand"
    vs 0 disable --system
    says out "system: vgpu-setup has not enabled it"
    snapshot >"$tmp/after"
    diff "$tmp/before" "$tmp/after" >&2 || fail "disable changed files (above)"
    [ -e "$tmp/calls" ] && fail "disable of nothing ran: $(cat "$tmp/calls")"
    ;;

dropin-runs-the-service-in-its-vgpu | symlink-dropin-runs-the-service-in-its-vgpu)
    mode=
    [ "$scenario" = symlink-dropin-runs-the-service-in-its-vgpu ] && mode=--symlink
    # A BAR0 path with what systemd quoting must carry: a space, quotes, a % (a specifier unless doubled).
    bar0="$tmp/the \"worker\" %i.bar0"
    vs 0 enable --service worker $mode --memory 1G --devices 1 --bar0 "$bar0"
    # VGPU_REAL_* stand for the machine's loader finding its driver; the unit's own
    # LD_PRELOAD (jemalloc) is not on this machine, so the unit file is not layered in.
    python3 "$src/test/setup/dropin_run.py" --machine "VGPU_REAL_LIBCUDA=$fake/libcuda.so.1" \
        --machine "VGPU_REAL_NVML=$fake/libnvidia-ml.so.1" --machine VGPU_MEDIATOR_SOCKET=none \
        --machine "VGPU_SYSFS_ROOT=$tmp/no-sysfs" \
        "$(dropin worker)" -- "$probe" >"$tmp/probe" 2>&1 || fail "the probe failed: $(cat "$tmp/probe")"
    for line in libcuda=vgpu cuInit=0 devices=1 device0.total=1073741824 device0.pci=0000:02:00.0 "VGPU_BAR0=$bar0"; do
        grep -qxF "$line" "$tmp/probe" || fail "the service's program does not see $line: $(cat "$tmp/probe")"
    done
    [ -f "$bar0" ] || fail "the vGPU's BAR0 is not at $bar0"
    ;;

mediator-dropin-runs-the-service-in-the-mediators-vgpu)
    # The drop-in names the mediator's socket and the vGPU; the mediator decides the rest.
    printf '[mediator]\nsocket = %s\nstate_dir = %s\n[vgpu.big]\ndevices = 0\nmemory = 3G\nuids = 0\n[vgpu.small]\ndevices = 1\nmemory = 1G\nuids = 0\n' \
        "$tmp/med.sock" "$tmp/state" | install -D /dev/stdin "$R/etc/vgpu/mediatord.conf"
    "$vgpu_mediatord" --config "$R/etc/vgpu/mediatord.conf" --foreground >"$tmp/med.log" 2>&1 &
    medpid=$!
    trap 'kill -9 $medpid 2>/dev/null; rm -rf "$tmp"' EXIT
    for _ in $(seq 1 500); do
        "$vgpu_smi" --socket "$tmp/med.sock" >/dev/null 2>&1 && break
        kill -0 "$medpid" 2>/dev/null || fail "the mediator exited: $(cat "$tmp/med.log")"
        sleep 0.02
    done
    vs 0 enable --service worker --mediator --vgpu small
    grep -qx "Wants=vgpu-mediatord.service" "$(dropin worker)" || fail "the drop-in does not pull in the mediator"
    python3 "$src/test/setup/dropin_run.py" --machine "VGPU_REAL_LIBCUDA=$fake/libcuda.so.1" \
        --machine "VGPU_REAL_NVML=$fake/libnvidia-ml.so.1" --machine "VGPU_SYSFS_ROOT=$tmp/no-sysfs" \
        "$(dropin worker)" -- "$probe" >"$tmp/probe" 2>&1 || fail "the probe failed: $(cat "$tmp/probe")"
    for line in libcuda=vgpu cuInit=0 devices=1 device0.total=1073741824 device0.pci=0000:02:00.0; do
        grep -qx "$line" "$tmp/probe" || fail "the service's program does not see $line: $(cat "$tmp/probe")"
    done
    # With the mediator gone, the service is refused rather than run without its limits.
    kill -9 "$medpid"
    wait "$medpid" 2>/dev/null
    python3 "$src/test/setup/dropin_run.py" --machine "VGPU_REAL_LIBCUDA=$fake/libcuda.so.1" \
        --machine "VGPU_REAL_NVML=$fake/libnvidia-ml.so.1" --machine "VGPU_SYSFS_ROOT=$tmp/no-sysfs" \
        "$(dropin worker)" -- "$probe" >"$tmp/probe" 2>&1
    grep -qx "devices=0" "$tmp/probe" || fail "without its mediator the service still sees a GPU: $(cat "$tmp/probe")"
    ;;

warns-when-the-mediator-would-refuse-the-services-user)
    printf '[vgpu.a]\ndevices = 0\nuids = 0\n[vgpu.b]\ndevices = 1\ngids = 0\n' |
        install -D /dev/stdin "$R/etc/vgpu/mediatord.conf"
    printf '[Service]\nExecStart=/bin/true\nUser=nobody\n' >"$R/usr/lib/systemd/system/guest.service"
    vs 0 enable --service guest --mediator
    says err "guest.service's user nobody (uid $(id -u nobody)) is not admitted by any vGPU of $R/etc/vgpu/mediatord.conf"
    vs 0 enable --service worker --mediator --vgpu b # root, admitted by its group
    [ -s "$tmp/err" ] && fail "a warning for a service the mediator admits"
    printf '[vgpu.a]\ndevices = 0\nuids = nobody\n[vgpu.b]\ndevices = 1\ngids = 0\n' >"$R/etc/vgpu/mediatord.conf"
    vs 0 enable --service guest --mediator --vgpu b
    says err "guest.service's user nobody (uid $(id -u nobody)) is not admitted by vGPU b"
    ;;

cdi-spec-validates-against-the-schema)
    printf '[mediator]\nsocket = /run/vgpu/mediator.sock\n[vgpu.train]\ndevices = 0\nmemory = 4G\nuids = 0\n[vgpu.0infer]\ndevices = 1, 0\ngids = 0\n[vgpu.far]\ndevices = 0\nuids = 0\nremote = yes\n[vgpu.pod]\ndevices = 1\nmemory = 1G\ncompute = 25\ncontainers = 2\n' |
        install -D /dev/stdin "$R/etc/vgpu/mediatord.conf"
    vs 0 cdi
    python3 "$src/test/setup/validate_cdi.py" "$src/test/setup/cdi-schema.json" "$R/etc/cdi/vgpu.yaml" ||
        fail "the spec does not validate"
    vs 0 cdi --symlink --output /etc/cdi/vgpu-symlink.yaml
    python3 "$src/test/setup/validate_cdi.py" "$src/test/setup/cdi-schema.json" "$R/etc/cdi/vgpu-symlink.yaml" ||
        fail "the --symlink spec does not validate"
    vs 0 cdi --standalone --memory 8G --compute 25% --devices 1 --vgpu small --output /etc/cdi/vgpu-standalone.yaml
    python3 "$src/test/setup/validate_cdi.py" "$src/test/setup/cdi-schema.json" "$R/etc/cdi/vgpu-standalone.yaml" ||
        fail "the standalone spec does not validate"
    grep -q "VGPU_COMPUTE_SHARE=25%" "$R/etc/cdi/vgpu-standalone.yaml" || fail "the standalone spec has no compute share"
    ;;

cdi-has-one-device-per-vgpu)
    cat >"$tmp/conf" <<'CONF'
[mediator]
socket = /run/vgpu-med/mediator.sock
[vgpu.train]
devices = 0
memory = 4G
uids = 0
[vgpu.infer]
devices = 1, GPU-fa4e0000-0000-0000-0000-000000000000
memory = 2G
gids = 0
[vgpu.vm1]
devices = 1
guest = yes
[vgpu.far]
devices = 0
memory = 1G
uids = 0
remote = yes
[vgpu.pod]
devices = 1
memory = 1G
compute = 25
containers = 2
CONF
    install -D "$tmp/conf" "$R/etc/vgpu/mediatord.conf"
    vs 0 cdi --hook /opt/vgpu/bin/vgpu-cdi-hook
    says out "--device vgpu.dev/vgpu=train"
    says out "--device vgpu.dev/vgpu=infer"
    says out "--device vgpu.dev/vgpu=far"
    says err "vGPU vm1 is a VM's (guest = yes), not a container's: left out of the spec"
    python3 - "$R/etc/cdi/vgpu.yaml" "$lib" >"$tmp/check" 2>&1 <<'PY' || fail "$(cat "$tmp/check")"
import sys, yaml
spec = yaml.safe_load(open(sys.argv[1]))
lib = sys.argv[2]
assert spec["kind"] == "vgpu.dev/vgpu", spec["kind"]
devs = {d["name"]: d["containerEdits"] for d in spec["devices"]}
assert list(devs) == ["train", "infer", "far", "pod-0", "pod-1"], list(devs)
# A vGPU made for containers: the runtime's hook binds it to the container's cgroup.
for i in (0, 1):
    assert devs[f"pod-{i}"]["env"] == [f"VGPU_NAME=pod-{i}"], devs[f"pod-{i}"]
    assert devs[f"pod-{i}"]["hooks"] == [{"hookName": "createRuntime", "path": "/opt/vgpu/bin/vgpu-cdi-hook",
                                         "args": ["vgpu-cdi-hook", "bind", "--vgpu", f"pod-{i}", "--socket",
                                                  "/run/vgpu-med/mediator.sock"]}], devs[f"pod-{i}"]
assert "hooks" not in devs["train"], devs["train"]
control = ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]
assert devs["train"]["env"] == ["VGPU_NAME=train"], devs["train"]
assert [n["path"] for n in devs["train"]["deviceNodes"]] == control + ["/dev/nvidia0"], devs["train"]
assert devs["infer"]["env"] == ["VGPU_NAME=infer"], devs["infer"]
assert [n["path"] for n in devs["infer"]["deviceNodes"]] == control + ["/dev/nvidia1", "/dev/nvidia0"], devs["infer"]
# A remote vGPU's container holds no NVIDIA device: /dev/nvidiactl is /dev/null, without device access.
assert devs["far"]["env"] == ["VGPU_NAME=far"], devs["far"]
assert "deviceNodes" not in devs["far"], devs["far"]
assert devs["far"]["mounts"] == [{"hostPath": "/dev/null", "containerPath": "/dev/nvidiactl",
                                  "options": ["ro", "nosuid", "nodev", "bind"]}], devs["far"]
common = spec["containerEdits"]
assert common["env"] == [f"LD_PRELOAD={lib}/libvgpu-cuda.so {lib}/libvgpu-nvml.so",
                         "VGPU_MEDIATOR_SOCKET=/run/vgpu-med/mediator.sock"], common["env"]
assert "deviceNodes" not in common, common
mounts = {m["hostPath"]: m for m in common["mounts"]}
for path in (f"{lib}/libvgpu-cuda.so", f"{lib}/libvgpu-nvml.so", f"{lib}/vgpu", "/run/vgpu-med"):
    assert path in mounts, (path, list(mounts))
    assert mounts[path]["containerPath"] == path and "ro" in mounts[path]["options"], mounts[path]
PY
    # Standalone: the GPUs by UUID, since a container that sees one GPU numbers it 0.
    vs 0 cdi --standalone --memory 8G --devices 1 --output -
    python3 - "$tmp/out" >"$tmp/check" 2>&1 <<'PY' || fail "$(cat "$tmp/check")"
import sys, yaml
spec = yaml.safe_load(open(sys.argv[1]))
(dev,) = spec["devices"]
assert dev["name"] == "standalone", dev
assert dev["containerEdits"]["env"] == ["VGPU_VISIBLE_DEVICES=GPU-fa4e0000-0000-0000-0000-000000000001",
                                        "VGPU_MEMORY_LIMIT=8G"], dev
assert "VGPU_MEDIATOR_SOCKET=none" in spec["containerEdits"]["env"], spec["containerEdits"]
assert [n["path"] for n in dev["containerEdits"]["deviceNodes"]] == ["/dev/nvidiactl", "/dev/nvidia-uvm",
                                                                   "/dev/nvidia-uvm-tools", "/dev/nvidia1"], dev
PY
    ;;

refuses-bad-arguments-with-a-clear-message)
    printf '[vgpu.train]\ndevices = 0\nuids = 0\n' >"$R/etc/med.conf"
    printf '[mediator]\nsocket = /run/med.sock\n[vgpu.a]\ndevices = 0\nuids = 0\n' >"$R/etc/med-in-run.conf"
    snapshot >"$tmp/before"
    # refused STATUS "ARGS" "WHAT IT MUST SAY"
    refused() {
        local want=$1 args=$2 text=$3 status=0
        # shellcheck disable=SC2086  # ARGS are words
        "$setup" $args >"$tmp/out" 2>"$tmp/err" || status=$?
        [ "$status" -eq "$want" ] || fail "vgpu-setup $args exited $status, not $want"
        grep -qF -- "$text" "$tmp/err" || fail "vgpu-setup $args does not say: $text"
    }
    common="--root $R --libdir $lib --systemctl $tmp/bin/systemctl --ldconfig $tmp/bin/ldconfig"
    refused 2 "" "no command given; commands: enable, disable, status, cdi"
    refused 2 "frobnicate $common" "unknown command 'frobnicate'"
    refused 2 "enable $common" "enable takes --service NAME or --system"
    refused 2 "enable --service a --system $common" "enable takes --service NAME or --system, not both"
    refused 2 "enable --service ollama --memory 20X $common" "VGPU_MEMORY_LIMIT=20X: not a size"
    refused 2 "enable --service ollama --devices 0,zero $common" "\"zero\" is not a GPU index or a GPU-... UUID"
    refused 2 "enable --service ollama --mediator --memory 4G $common" "--memory with --mediator: the mediator's config decides"
    refused 2 "enable --service ollama --compute 130% $common" "VGPU_COMPUTE_SHARE=130%"
    refused 2 "enable --service ollama --compute-mode fair $common" "VGPU_COMPUTE_MODE=fair: expected share"
    refused 2 "enable --service ollama --mediator --compute 30% $common" "--compute with --mediator: the mediator's config decides"
    refused 2 "enable --system --memory 4G $common" "--memory does not apply to enable --system"
    refused 2 "enable --service ollama --log loud $common" "--log loud: error, warn, info or debug"
    refused 2 "enable --service ollama.timer $common" "is a timer unit; name the .service it starts"
    refused 2 "enable --service ../../etc/passwd $common" "not a systemd service name"
    refused 2 "enable --service ollama --bar0 rel/path $common" "--bar0 rel/path: an absolute path"
    refused 2 "enable --service ollama --vgpu a/b $common" "--vgpu a/b: a vGPU name is 1 to 31 letters"
    refused 2 "disable --service ollama --memory 4G $common" "--memory does not apply to disable"
    refused 2 "status --memory 4G $common" "--memory does not apply to status"
    refused 2 "cdi --memory 4G $common" "--memory does not apply to cdi (--memory, --compute, --compute-mode, --devices and --vgpu go with --standalone)"
    refused 2 "cdi --standalone $common" "cdi --standalone needs --devices LIST"
    refused 2 "enable --service ollama --root $tmp/nowhere" "--root $tmp/nowhere: not a directory"
    refused 2 "enable --service ollama --service x $common" "--service is given twice"
    refused 1 "enable --service olama $common" "there is no unit olama.service in $R/etc/systemd/system"
    refused 1 "enable --service ollama --root $R --libdir /opt/none" "$R/opt/none/libvgpu-cuda.so is not vgpu's library"
    refused 1 "enable --service ollama --mediator --vgpu trian --config /etc/med.conf $common" "--vgpu trian: $R/etc/med.conf has no [vgpu.trian]; it has train"
    refused 1 "cdi $common" "$R/etc/vgpu/mediatord.conf: No such file or directory"
    refused 1 "cdi --standalone --devices 7 $common" "no GPU 7 on this machine: it has 2"
    refused 1 "cdi --config /etc/med-in-run.conf $common" "the mediator's socket /run/med.sock is in /run, which a container cannot be given"
    snapshot >"$tmp/after"
    diff "$tmp/before" "$tmp/after" >&2 || fail "a refused command changed files (above)"
    ;;

*)
    echo "setup.sh: unknown scenario $scenario" >&2
    exit 2
    ;;
esac
ok
