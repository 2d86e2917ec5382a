#!/usr/bin/env bash
# vgpu-doctor's findings: doctor.sh SCENARIO BUILD_DIR
#
# Most scenarios build a fake root (a clean vgpu install beside a "driver",
# which is the fake driver of test/fake) and a fake /proc/PID tree in it,
# plant one fault, run `vgpu-doctor --root`, and check that it reports the
# fault and the command that fixes it.  The live scenarios run a real
# process under vgpu on the fake driver (the meson test environment) and
# inspect it.
scenario=$1 build=$2
# shellcheck source=test/common/lib.sh
. "$(dirname "$(realpath "$0")")/../common/lib.sh"
use_build "$build"
doctor=$vgpu_doctor
doctor_client=$build/test/doctor/doctor_client
fake=$build/test/fake
temp_dir vgpu-doctor-test
root=$tmp/root
fail_logs="$tmp/out $tmp/err" # vgpu-doctor's output
fail_lines=all

# The live processes get their settings from each scenario only.
fake_gpu

lib=/usr/lib/x86_64-linux-gnu       # the "driver's" directory
vlib=/usr/local/lib/x86_64-linux-gnu # vgpu's install libdir
vdir=$vlib/vgpu                      # its symlink directory

# A machine with the driver and vgpu installed as documented: the symlink
# directory first in the ld.so configuration, and a cache that agrees.
make_root() {
    mkdir -p "$root$lib" "$root$vdir" "$root/etc/ld.so.conf.d" "$root/proc" "$root/run" \
        "$root/etc/systemd/system" "$root/usr/share/vulkan/icd.d"
    cp "$fake/libcuda.so.1" "$root$lib/libcuda.so.580.00"
    cp "$fake/libnvidia-ml.so.1" "$root$lib/libnvidia-ml.so.580.00"
    ln -s libcuda.so.580.00 "$root$lib/libcuda.so.1"
    ln -s libnvidia-ml.so.580.00 "$root$lib/libnvidia-ml.so.1"
    cp "$build/libvgpu-cuda.so" "$build/libvgpu-nvml.so" "$root$vlib/"
    ln -s ../libvgpu-cuda.so "$root$vdir/libcuda.so.1"
    ln -s ../libvgpu-nvml.so "$root$vdir/libnvidia-ml.so.1"
    echo 'include /etc/ld.so.conf.d/*.conf' >"$root/etc/ld.so.conf"
    echo "$vdir" >"$root/etc/ld.so.conf.d/000-vgpu.conf"
    printf '%s\n' "$vlib" "$lib" >"$root/etc/ld.so.conf.d/x86_64-linux-gnu.conf"
    cache "$vdir" "$lib"
}

# cache DIR...: an ld.so cache listing both libraries of each DIR, in that order.
cache() {
    local args=() d
    for so in libcuda.so.1 libnvidia-ml.so.1; do
        for d in "$@"; do args+=("$so=$d/$so"); done
    done
    python3 "$here/mkcache.py" "$root/etc/ld.so.cache" "${args[@]}"
}

# fake_proc PID PPID MAPPED [VAR=VALUE...]: a process of this uid in the fake
# /proc, running test/client (a dynamic program), with MAPPED ("vgpu":
# vgpu in front of the driver, "driver": the driver alone, "none") and
# the environment given.
fake_proc() {
    local pid=$1 ppid=$2 mapped=$3 p=$root/proc/$1
    shift 3
    mkdir -p "$p/fd"
    printf 'Name:\tserver\nUmask:\t0022\nState:\tS (sleeping)\nPPid:\t%s\nUid:\t%s\t%s\t%s\t%s\nGid:\t%s\t%s\t%s\t%s\nGroups:\t\n' \
        "$ppid" "${UID_OF:-$(id -u)}" "${UID_OF:-$(id -u)}" "${UID_OF:-$(id -u)}" "${UID_OF:-$(id -u)}" \
        "${GID_OF:-$(id -g)}" "${GID_OF:-$(id -g)}" "${GID_OF:-$(id -g)}" "${GID_OF:-$(id -g)}" >"$p/status"
    printf 'server\0--port\0001\0' >"$p/cmdline"
    : >"$p/environ"
    for kv in PATH=/usr/bin "$@"; do printf '%s\0' "$kv" >>"$p/environ"; done
    ln -sfn "$build/test/interpose/interpose_client" "$p/exe"
    {
        echo "55d0c0000000-55d0c0001000 r-xp 00000000 08:01 1 $build/test/interpose/interpose_client"
        if [ "$mapped" = vgpu ] || [ "$mapped" = vgpu-only ]; then
            echo "7f0000000000-7f0000100000 r-xp 00000000 08:01 2 $vlib/libvgpu-cuda.so"
            echo "7f0000100000-7f0000200000 r--p 00100000 08:01 2 $vlib/libvgpu-cuda.so"
            echo "7f0000200000-7f0000300000 r-xp 00000000 08:01 3 $vlib/libvgpu-nvml.so"
        fi
        if [ "$mapped" != none ] && [ "$mapped" != vgpu-only ]; then
            echo "7f0000400000-7f0000500000 r-xp 00000000 08:01 4 $lib/libcuda.so.580.00"
            echo "7f0000500000-7f0000600000 r-xp 00000000 08:01 5 $lib/libnvidia-ml.so.580.00"
        fi
        echo "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]"
    } >"$p/maps"
}

PRELOAD="LD_PRELOAD=$vlib/libvgpu-cuda.so $vlib/libvgpu-nvml.so"

# doc WANT_STATUS ARGS...: runs vgpu-doctor ARGS; stdout to $tmp/out.
doc() {
    local want=$1 status=0
    shift
    "$doctor" "$@" >"$tmp/out" 2>"$tmp/err" || status=$?
    [ "$status" = "$want" ] || fail "vgpu-doctor $* exited $status, not $want"
}

# says TEXT...: the output holds each TEXT.
says() {
    for want in "$@"; do grep -qF -- "$want" "$tmp/out" || fail "the output does not say: $want"; done
}

# says_not TEXT: the output does not hold TEXT.
says_not() {
    ! grep -qF -- "$1" "$tmp/out" || fail "the output says: $1"
}

# problem CHECK TEXT FIX: a [problem] line of CHECK holding TEXT, whose fix line holds FIX.
finding() {
    local level=$1 check=$2 text=$3 fix=$4
    grep -F -A1 -- "[$level]" "$tmp/out" | grep -F -A1 -- " $check: " | grep -qF -- "$text" ||
        fail "no [$level] $check finding saying: $text"
    grep -F -A1 -- "$text" "$tmp/out" | grep -F -- "fix: " | grep -qF -- "$fix" ||
        fail "the fix of '$text' does not say: $fix"
}
problem() { finding problem "$@"; }
warning() { finding warning "$@"; }

# written FILE: until FILE has something in it (30 s at most).
written() {
    for _ in $(seq 1 3000); do [ -s "$1" ] && return 0; sleep 0.01; done
    fail "timed out waiting for $1"
}

# live NAME SECONDS: runs doctor_client in the background (the test environment's vgpu over the fake
# driver, with the settings exported); its pid in $live once cuInit has returned.
live() {
    "$doctor_client" "$tmp/$1.ready" "$2" >"$tmp/$1.log" 2>&1 &
    live=$!
    pids="$pids $live"
    written "$tmp/$1.ready"
}

case $scenario in
clean-setup)
    make_root
    fake_proc 200 1 vgpu "$PRELOAD" VGPU_MEMORY_LIMIT=4G
    doc 0 --root "$root" 200
    says "No problems found." "[ok]      libraries: libcuda: vgpu ($vlib/libvgpu-cuda.so) in front of the driver" \
        "[ok]      preload: LD_PRELOAD names vgpu" "[ok]      ld.so: the ld.so cache resolves libcuda.so.1 to $vdir/libcuda.so.1 (vgpu)"
    says_not "[problem]"
    ;;

driver-mapped-without-vgpu)
    make_root
    fake_proc 200 1 driver
    doc 1 --root "$root" 200
    problem libraries "libcuda: the driver ($lib/libcuda.so.580.00) is mapped and vgpu is not" \
        "restart it under vgpu: vgpu-run -- server --port"
    problem libraries "libnvidia-ml: the driver ($lib/libnvidia-ml.so.580.00) is mapped and vgpu is not" \
        "sudo vgpu-setup enable --system"
    ;;

hostile-process-text-is-made-safe)
    # A tenant names its process, writes its command line and chooses its
    # program's path: escape sequences, a bell, a carriage return and line
    # breaks of theirs must not reach root's terminal (a cleared screen, a
    # title, fake "[ok]" lines).
    make_root
    fake_proc 400 1 driver
    python3 - "$root/proc/400" "$build/test/interpose/interpose_client" "$tmp" <<'PYEOF' || fail "cannot plant the process"
import os, sys
p, client, tmp = sys.argv[1], sys.argv[2], sys.argv[3]
evil = "ev\x1b[2J\x1b]0;owned\x07il\r\n[ok]      all: nothing wrong here\n\u202e"
status = open(p + "/status").read().replace("Name:\tserver", "Name:\t" + evil.replace("\n", " "))
open(p + "/status", "w").write(status)
open(p + "/cmdline", "w").write(evil + "\0--port\0" + "1\x9b2J\0")
prog = os.path.join(tmp, "bin\x1b[2J\n[ok] x")
os.symlink(client, prog)
os.remove(p + "/exe")
os.symlink(prog, p + "/exe")
PYEOF
    doc 1 --root "$root" 400
    cat "$tmp/out"
    python3 - "$tmp/out" <<'PYEOF' || fail "the tenant's text reached the terminal as it was"
import sys
out = open(sys.argv[1], "rb").read()
bad = [b for b in (b"\x1b", b"\x07", b"\r", b"\xc2\x9b", "\u202e".encode()) if b in out]
fake = [l for l in out.split(b"\n") if l.startswith(b"[ok]") and b"nothing wrong" in l or l.startswith(b"[ok] x")]
if bad or fake:
    sys.exit("found %r and lines %r" % (bad, fake))
PYEOF
    says "vgpu-doctor: process 400 (ev?[2J?]0;owned?il? [ok]      all: nothing wrong here ?, uid" \
         "[ok]      program: $tmp/bin?[2J?[ok] x is dynamically linked"
    ;;

preload-dropped-by-parent)
    make_root
    fake_proc 300 1 none "$PRELOAD"
    fake_proc 301 300 driver OLLAMA_HOST=127.0.0.1
    doc 1 --root "$root" 301
    problem preload "LD_PRELOAD did not reach this process: its parent, process 300 (server), has LD_PRELOAD=$vlib/libvgpu-cuda.so" \
        "sudo vgpu-setup enable --system"
    says "echo $vdir | sudo tee /etc/ld.so.conf.d/000-vgpu.conf && sudo ldconfig"
    ;;

preload-entry-missing)
    make_root
    fake_proc 200 1 driver "LD_PRELOAD=/opt/vgpu/libvgpu-cuda.so"
    doc 1 --root "$root" 200
    problem preload "LD_PRELOAD names /opt/vgpu/libvgpu-cuda.so, which does not exist" "vgpu-run -- server"
    ;;

preload-ignored-in-secure-execution)
    make_root
    fake_proc 200 1 driver "$PRELOAD"
    # auxv: AT_SECURE (23) = 1, then AT_NULL.
    python3 -c 'import struct,sys; sys.stdout.buffer.write(struct.pack("<4Q", 23, 1, 0, 0))' >"$root/proc/200/auxv"
    doc 1 --root "$root" 200
    problem preload "secure-execution mode" "sudo vgpu-setup enable --system"
    ;;

static-binary)
    make_root
    fake_proc 200 1 none
    ln -sfn "$build/test/tools/static_client" "$root/proc/200/exe"
    doc 1 --root "$root" 200
    problem program "$build/test/tools/static_client is statically linked" "use a dynamically linked build of $build/test/tools/static_client"
    ;;

stale-symlink)
    make_root
    fake_proc 200 1 vgpu "$PRELOAD"
    ln -sfn libnvidia-ml.so.570.00 "$root$lib/libnvidia-ml.so.1" # the driver was upgraded, its link left behind
    doc 1 --root "$root" 200
    problem ld.so "$lib/libnvidia-ml.so.1 is a stale link to libnvidia-ml.so.570.00, which does not exist" \
        "sudo rm $lib/libnvidia-ml.so.1 && sudo ldconfig"
    ;;

symlink-to-driver-where-vgpu-meant)
    make_root
    fake_proc 200 1 vgpu "$PRELOAD"
    ln -sfn "$lib/libcuda.so.1" "$root$vdir/libcuda.so.1" # absolute: followed inside the root
    doc 1 --root "$root" 200
    problem ld.so "$vdir/libcuda.so.1 points at the driver ($lib/libcuda.so.580.00) in a directory meant for vgpu" \
        "sudo ln -sfn ../libvgpu-cuda.so $vdir/libcuda.so.1 && sudo ldconfig"
    ;;

vgpu-dir-after-driver-in-ld-so-conf)
    make_root
    fake_proc 200 1 none
    mv "$root/etc/ld.so.conf.d/000-vgpu.conf" "$root/etc/ld.so.conf.d/zz-vgpu.conf"
    cache "$lib" "$vdir"
    doc 1 --root "$root" 200
    problem ld.so "vgpu's directory $vdir (listed in /etc/ld.so.conf.d/zz-vgpu.conf) comes after the driver's $lib (listed in /etc/ld.so.conf.d/x86_64-linux-gnu.conf)" \
        "sudo mv /etc/ld.so.conf.d/zz-vgpu.conf /etc/ld.so.conf.d/000-vgpu.conf && sudo ldconfig"
    ;;

ld-so-cache-older-than-conf)
    make_root
    fake_proc 200 1 none
    cache "$lib" # before vgpu's entry was added
    doc 1 --root "$root" 200
    problem ld.so "the ld.so cache resolves libcuda.so.1 to $lib/libcuda.so.1 (the driver), though the configuration puts vgpu's directory first" \
        "sudo ldconfig"
    ;;

service-dropin-without-preload)
    make_root
    mkdir -p "$root/etc/systemd/system/ollama.service.d"
    printf '[Service]\nEnvironment="OLLAMA_HOST=0.0.0.0"\n' >"$root/etc/systemd/system/ollama.service.d/override.conf"
    doc 1 --root "$root" --service ollama
    problem service "ollama.service's drop-ins in /etc/systemd/system/ollama.service.d set neither LD_PRELOAD" \
        "sudo vgpu-setup enable --service ollama && sudo systemctl restart ollama"
    ;;

service-without-dropin)
    make_root
    doc 1 --root "$root" --service llama-server
    problem service "llama-server.service has no drop-in" "sudo vgpu-setup enable --service llama-server"
    ;;

service-dropin-with-preload)
    make_root
    mkdir -p "$root/etc/systemd/system/ollama.service.d"
    printf '[Service]\nEnvironment="LD_PRELOAD=%s %s" "OLLAMA_VULKAN=0"\n' "$vlib/libvgpu-cuda.so" \
        "$vlib/libvgpu-nvml.so" >"$root/etc/systemd/system/ollama.service.d/vgpu.conf"
    doc 0 --root "$root" --service ollama.service
    says "[ok]      service: ollama.service's drop-in brings vgpu in: LD_PRELOAD=$vlib/libvgpu-cuda.so $vlib/libvgpu-nvml.so"
    ;;

socket-without-mediator)
    make_root
    mkdir -p "$root/run/vgpu"
    # Bound, never listened on, closed: what a mediator that died leaves behind.
    python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.close()' \
        "$root/run/vgpu/mediator.sock"
    fake_proc 200 1 vgpu "$PRELOAD"
    doc 1 --root "$root" 200
    problem mediator "/run/vgpu/mediator.sock is a socket, but no mediator answers on it" \
        "sudo systemctl start vgpu-mediatord"
    ;;

operator-requires-mediator)
    # /etc/vgpu/vgpu.conf requires the mediator: the process's
    # VGPU_MEDIATOR_SOCKET=none is ignored, and the operator's socket is missing.
    need_root "the operator's file must be root's"
    make_root
    mkdir -p "$root/etc/vgpu"
    printf '[vgpu]\nrequire = mediator\nmediator_socket = /run/vgpu/op.sock\n' >"$root/etc/vgpu/vgpu.conf"
    fake_proc 200 1 vgpu "$PRELOAD" VGPU_MEDIATOR_SOCKET=none
    doc 1 --root "$root" 200
    says "the operator requires vgpu-mediatord at /run/vgpu/op.sock (/etc/vgpu/vgpu.conf); the process's VGPU_MEDIATOR_SOCKET=none is ignored"
    problem mediator "the operator's mediator_socket = /run/vgpu/op.sock, which does not exist" \
        "sudo systemctl start vgpu-mediatord"
    chmod 666 "$root/etc/vgpu/vgpu.conf"
    doc 1 --root "$root" 200
    problem operator "writable by group or others (mode 0666)" "sudo chown root:root /etc/vgpu/vgpu.conf"
    ;;

user-not-admitted)
    # Root and the mediator's own user see every vGPU in STATUS: the process
    # must be someone else, which only root can arrange.
    need_root "to run the mediator and ask as another user"
    make_root
    mkdir -p "$root/run/vgpu" "$tmp/state"
    chmod 755 "$tmp" # a root doctor asks as the process's user, who must reach the socket
    printf '[mediator]\nsocket = %s\nsocket_mode = 0666\nstate_dir = %s\n[vgpu.train]\ndevices = 0\nmemory = 1G\nuids = 4242\n' \
        "$root/run/vgpu/mediator.sock" "$tmp/state" >"$tmp/med.conf"
    env -u LD_PRELOAD "$vgpu_mediatord" --config "$tmp/med.conf" --foreground >"$tmp/med.log" 2>&1 &
    pids="$pids $!"
    for _ in $(seq 1 500); do [ -S "$root/run/vgpu/mediator.sock" ] && break; sleep 0.02; done
    uid=65534
    UID_OF=$uid GID_OF=$uid fake_proc 200 1 vgpu "$PRELOAD"
    doc 1 --root "$root" 200
    problem mediator "no vGPU of vgpu-mediatord at /run/vgpu/mediator.sock admits uid $uid" \
        "add uid $uid to uids = (or one of its groups to gids =)"
    ;;

vulkan-icd-visible)
    make_root
    printf '{ "file_format_version": "1.0.1", "ICD": { "library_path": "libGLX_nvidia.so.0", "api_version": "1.4.312" } }\n' \
        >"$root/usr/share/vulkan/icd.d/nvidia_icd.json"
    fake_proc 200 1 vgpu "$PRELOAD" VGPU_MEMORY_LIMIT=8G
    doc 1 --root "$root" 200
    warning vulkan "NVIDIA's Vulkan driver is visible to it (/usr/share/vulkan/icd.d/nvidia_icd.json)" "OLLAMA_VULKAN=0"
    ;;

json-output-parses)
    make_root
    fake_proc 200 1 driver
    doc 1 --root "$root" --json 200
    python3 - "$tmp/out" <<'PY' || fail "the JSON does not say what the text says"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["process"]["pid"] == 200 and d["process"]["name"] == "server", d["process"]
bad = [f for f in d["findings"] if f["level"] == "problem"]
assert d["problems"] == len(bad) >= 2, d
assert all(f["fix"] for f in bad), bad
assert any(f["check"] == "libraries" and "vgpu-run -- server" in f["fix"] for f in bad), bad
assert all(f["fix"] is None for f in d["findings"] if f["level"] in ("ok", "info"))
assert d["vgpu"] is None
PY
    ;;

usage-errors)
    doc 2
    doc 2 not-a-pid
    doc 2 --timeout 0 -- true
    doc 2 --preload 1
    doc 2 --no-such-option 1
    says_not "[ok]"
    doc 2 --root "$tmp" 999999 # no such process
    grep -qF "no process 999999" "$tmp/err" || fail "a missing process is not named"
    ;;

refusal-reason-of-live-process)
    VGPU_MEMORY_LIMIT=lots live refused 60
    doc 1 "$live"
    problem vgpu "vgpu refused this process, which sees no GPU: VGPU_MEMORY_LIMIT=lots" \
        "fix what the reason names, then restart the process"
    ;;

standalone-vgpu-of-live-process)
    VGPU_MEMORY_LIMIT=2G VGPU_VISIBLE_DEVICES=1 VGPU_BAR0=$tmp/team.bar0 live joined 60
    doc 0 "$live"
    says "[ok]      vgpu: joined a standalone vGPU, BAR0 $tmp/team.bar0: device 0 = GPU 1 (GPU-fa4e0000-0000-0000-0000-000000000001), quota 2.00 GiB of 16.00 GiB"
    doc 0 --json "$live"
    python3 - "$tmp/out" "$tmp/team.bar0" <<'PY' || fail "the JSON record is not the vGPU"
import json, sys
r = json.load(open(sys.argv[1]))["vgpu"]
assert r["mode"] == "on" and r["source"] == "standalone" and r["bar0"] == sys.argv[2], r
assert [d["memory_quota"] for d in r["devices"]] == [2 << 30], r
PY
    ;;

status-record-one-sealed-descriptor)
    # NVML joins first (no slot), CUDA then takes a slot: the record is
    # replaced behind the one descriptor, and nobody can write it.
    WAITER_NVML_FIRST=1 VGPU_MEMORY_LIMIT=1G VGPU_BAR0=$tmp/r.bar0 live nvml-first 60
    python3 - "$live" <<'PY' >"$tmp/out" 2>&1 || fail "the status record is not one sealed descriptor"
import os, sys
fd = "/proc/%s/fd" % sys.argv[1]
links = [n for n in os.listdir(fd) if os.readlink(os.path.join(fd, n)) == "/memfd:vgpu-status (deleted)"]
assert len(links) == 1, "%d vgpu-status descriptors" % len(links)
path = os.path.join(fd, links[0])
text = open(path).read()
assert text.startswith("vgpu-status 1\n") and "\nmode on\n" in text, text
assert "\nslot -1\n" not in text, "the record was not replaced when CUDA took its slot:\n" + text
try:
    with open(path, "r+b") as f:
        f.write(b"x")
    raise AssertionError("the record could be written")
except PermissionError:
    pass
PY
    ;;

command-mode)
    # --preload brings vgpu in, as vgpu-run would; the client exits by itself.
    env -u LD_PRELOAD VGPU_MEMORY_LIMIT=1G VGPU_BAR0="$tmp/cmd.bar0" \
        "$doctor" --preload --timeout 20 -- "$doctor_client" - 0.5 >"$tmp/out" 2>"$tmp/err"
    status=$?
    [ $status = 0 ] || fail "vgpu-doctor -- doctor_client exited $status"
    says "[ok]      preload: LD_PRELOAD names vgpu: $build/libvgpu-cuda.so $build/libvgpu-nvml.so" \
        "[ok]      vgpu: joined a standalone vGPU, BAR0 $tmp/cmd.bar0" "[info]    run: the command exited 0"
    ;;

remote-socket-missing)
    # A remote guest whose executor's socket is not in its file system.
    make_root
    fake_proc 200 1 vgpu-only "$PRELOAD" VGPU_REMOTE=/run/vgpu/remote.sock
    doc 1 --root "$root" 200
    problem remote "VGPU_REMOTE=/run/vgpu/remote.sock, which is no socket in the process's file system" \
        "vgpu-executor --listen /run/vgpu/remote.sock"
    says_not "vgpu: no status record"
    ;;

remote-guest-of-live-process)
    # A live remote guest (no driver, only libvgpu-cuda.so) of an executor on the fake GPU.
    env VGPU_BAR0="$tmp/host.bar0" VGPU_REMOTE_IMAGE_CACHE="$tmp/images" "$vgpu_executor" --listen "$tmp/sock" \
        >"$tmp/exec.log" 2>&1 &
    pids="$pids $!"
    for _ in $(seq 1 500); do [ -S "$tmp/sock" ] && break; sleep 0.02; done
    guest_preload=
    for l in ${LD_PRELOAD:-}; do case $l in *libvgpu-nvml.so) ;; *) guest_preload="$guest_preload $l" ;; esac; done
    env -u VGPU_REAL_LIBCUDA -u VGPU_REAL_NVML -u LD_LIBRARY_PATH -u TEST_FAKE_LIBCUDA LD_PRELOAD="$guest_preload" \
        VGPU_REMOTE="$tmp/sock" "$doctor_client" "$tmp/remote.ready" 60 >"$tmp/remote.log" 2>&1 &
    live=$!
    pids="$pids $live"
    written "$tmp/remote.ready"
    [ "$(cat "$tmp/remote.ready")" = 0 ] || fail "the guest's cuInit returned $(cat "$tmp/remote.ready")"
    doc 0 "$live"
    says "[ok]      remote: a remote GPU: the process's CUDA calls go to the executor at $tmp/sock" \
        "libcuda: vgpu ($build/libvgpu-cuda.so) is loaded, with no driver: its GPU is remote"
    says_not "[problem]"
    ;;

command-mode-timeout)
    # A command that never uses CUDA is inspected at the timeout and stopped.
    env -u LD_PRELOAD "$doctor" --timeout 0.5 -- sleep 30 >"$tmp/out" 2>"$tmp/err"
    says "[info]    run: the command ran until the timeout and was stopped" "preload: LD_PRELOAD is not set"
    ;;

*)
    echo "unknown scenario $scenario" >&2
    exit 2
    ;;
esac
exit 0
