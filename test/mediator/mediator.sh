#!/usr/bin/env bash
# vgpu-mediatord end to end: mediator.sh SCENARIO BUILD_DIR
# (the scenarios' shared steps: mediator_lib.sh)
scenario=$1 build=$2
# shellcheck source=test/mediator/mediator_lib.sh
. "$(dirname "$(realpath "$0")")/mediator_lib.sh"

case $scenario in
admit-by-uid)
    config "[vgpu.a]" "devices = 0" "memory = 2G" "uids = 4242, $me"
    start_mediator
    run admitted 2G
    grep -q "admitted pid .* to vGPU a" "$tmp/med.log" || fail "the mediator did not log the admission"
    ;;

admit-by-gid)
    config "[vgpu.a]" "devices = 0" "memory = 1G" "gids = $my_gid"
    start_mediator
    run admitted 1G
    ;;

refuse-others)
    config "[vgpu.a]" "devices = 0" "memory = 1G" "uids = 4242424" \
           "[vgpu.b]" "devices = 1" "memory = 1G" "uids = $me"
    start_mediator
    VGPU_NAME=a expect_refused "vGPU a does not admit uid $me" "uid 4242424"
    VGPU_NAME=nosuch expect_refused "VGPU_NAME=nosuch" "no such vGPU"
    run admitted 1G # b, the one that admits us
    [ "$(py "s['vgpus'][0]['refused_admissions'], s['mediator']['refused_admissions']")" = "1 2" ] ||
        fail "refusals counted: $(smi_json)"
    stop_mediator TERM
    config "[vgpu.a]" "devices = 0" "memory = 1G" "uids = 4242424"
    start_mediator
    expect_refused "no vGPU admits uid $me"
    # Other users, where this test may become one: with the socket open to
    # everyone, the mediator itself decides, by uid and by a supplementary group.
    other() { env -u FAKEGPU_STATE setpriv --reuid=65534 --regid=65534 "$@"; }
    if [ "$me" != 0 ] || ! command -v setpriv >/dev/null; then
        echo "# not root (or no setpriv): the checks as another user are skipped"
    elif ! setpriv --reuid=65534 --regid=65534 --clear-groups test -r "$build/libvgpu-cuda.so" -a -x "$client"; then
        echo "# uid 65534 cannot reach $build: the checks as another user are skipped"
    else
        chmod 755 "$tmp"
        stop_mediator TERM
        config "[mediator]" "socket_mode = 0666" "[vgpu.a]" "devices = 0" "memory = 1G" "uids = 0" \
               "[vgpu.b]" "devices = 1" "memory = 2G" "gids = 4242"
        start_mediator
        other --clear-groups "$client" refused 2>"$tmp/err" >/dev/null || fail "as uid 65534: $(cat "$tmp/err")"
        grep -q "no vGPU admits uid 65534" "$tmp/err" || fail "uid 65534 was not refused by uid: $(cat "$tmp/err")"
        other --groups=4242 "$client" admitted 2G >"$tmp/out" 2>&1 ||
            fail "uid 65534 with supplementary group 4242 was not admitted to b: $(cat "$tmp/out")"
        grep -q "admitted pid .* uid 65534) to vGPU b" "$tmp/med.log" || fail "no admission by group logged"
    fi
    ;;

quota-from-config)
    # The mediator decides: the environment's settings are ignored.
    config "[vgpu.a]" "devices = 0" "memory = 3G" "uids = $me"
    start_mediator
    VGPU_MEMORY_LIMIT=16G VGPU_BAR0=$tmp/mine.bar0 run admitted 3G
    [ -e "$tmp/mine.bar0" ] && fail "a mediated process created the VGPU_BAR0 file"
    ;;

reclaim-after-kill-9)
    config "[vgpu.a]" "devices = 0" "memory = 4G" "uids = $me"
    start_mediator
    hold 1G a
    [ "$(py "s['vgpus'][0]['devices'][0]['memory_used']")" = $((GiB + OVH)) ] || fail "use before: $(smi_json)"
    run kill-time "$held" a 0 0
    [ "$(py "len(s['processes'])")" = 0 ] || fail "vgpu-smi still lists the killed process"
    ;;

restart-with-live-clients)
    config "[vgpu.a]" "devices = 0" "memory = 4G" "uids = $me"
    start_mediator
    hold 1G a 512M
    stop_mediator KILL # a crash: the socket stays behind
    "$smi" --socket "$tmp/sock" >/dev/null 2>&1 && fail "vgpu-smi answered with no mediator"
    start_mediator
    # Usage is rebuilt from BAR0, not lost.
    [ "$(py "s['vgpus'][0]['devices'][0]['memory_used'], s['processes'][0]['pid']")" = "$((GiB + OVH)) $held" ] ||
        fail "after the restart: $(smi_json)"
    [ "$(py "s['mediator']['start']")" = 2 ] || fail "the start count did not move: $(smi_json)"
    touch "$tmp/a.go" # the process allocates again, and reattaches on the way
    wait_file "$tmp/a.ready.more"
    [ "$(py "s['vgpus'][0]['devices'][0]['memory_used'], s['processes'][0]['user']")" = \
      "$((GiB + 512 * MiB + OVH)) $(id -un)" ] || fail "after reattaching: $(smi_json)"
    grep -q "pid $held .*reattached to vGPU a, slot" "$tmp/med.log" || fail "no reattachment logged"
    run kill-time "$held" a 0 0 # its connection is back: reclaim at once
    ;;

config-errors)
    # Configs refused: NAME|LINE|BODY|WORDS...  BODY's lines (\n between
    # them) follow the 3-line [mediator] section, so that its first is line
    # 4; --check-config and a start both point at LINE and say each of WORDS.
    refused=(
        "a misspelt key|6|[vgpu.a]\ndevices = 0\nmemroy = 2G\nuids = 0|unknown key memroy"
        "a size of no unit|6|[vgpu.a]\ndevices = 0\nmemory = 2Q\nuids = 0|memory = 2Q|a size"
        "an unknown section|4|[vgpus.a]\ndevices = 0|unknown section [vgpus.a]"
        "a key set twice|6|[vgpu.a]\ndevices = 0\ndevices = 1\nuids = 0|devices is set twice|first at line 5"
        "a GPU that is not there|5|[vgpu.a]\ndevices = 7\nuids = 0|no GPU 7"
        "a vGPU that admits nobody|4|[vgpu.a]\ndevices = 0\nmemory = 1G|vGPU a admits nobody"
        "memory oversubscribed|10|[vgpu.a]\ndevices = 0\nmemory = 10G\nuids = 0\n[vgpu.b]\ndevices = 0, 1\nmemory = 10G\nuids = 0|GPU 0|oversubscribed|a (10.00 GiB, 100%), b (10.00 GiB, 100%)"
        "compute oversubscribed|12|[vgpu.a]\ndevices = 0\nmemory = 4G\ncompute = 60\nuids = 0\n[vgpu.b]\ndevices = 0\nmemory = 4G\ncompute = 60\nuids = 0|oversubscribed|120% of its compute"
        "a key on a header's line|4|[vgpu.a] memory = 1G\ndevices = 0\nuids = 0|[vgpu.a] is followed by|a key goes on a line of its own"
        # vm_channels: 1 to 256, on a remote vGPU whose executors run as a user of their own.
        "vm_channels on a local vGPU|8|[vgpu.a]\ndevices = 0\nuids = 0\nremote = yes\nvm_channels = 4|vm_channels needs remote = yes and an executor_user"
        "vm_pinned without vm_channels|7|[vgpu.a]\ndevices = 0\nuids = 0\nvm_pinned = 64M|vm_pinned applies to a vGPU with vm_channels"
        # Executors' limits (docs/guide/remote.md): on a remote vGPU, a count and a cgroup path.
        "max_executors on a local vGPU|7|[vgpu.a]\ndevices = 0\nuids = 0\nmax_executors = 4|max_executors applies to a vGPU with remote = yes"
        "max_executors of none|8|[vgpu.a]\ndevices = 0\nuids = 0\nremote = yes\nmax_executors = 0|max_executors = 0|1 to 4096"
        "executor_cgroup not a path|8|[vgpu.a]\ndevices = 0\nuids = 0\nremote = yes\nexecutor_cgroup = exec|executor_cgroup = exec: a cgroup v2 path below the root"
        "pinned on a local vGPU|7|[vgpu.a]\ndevices = 0\nuids = 0\npinned = 1G|pinned applies to a vGPU with remote = yes"
        "pinned of nothing|8|[vgpu.a]\ndevices = 0\nuids = 0\nremote = yes\npinned = 0|pinned = 0: the page-locked memory"
        "executor_cgroup above the root|8|[vgpu.a]\ndevices = 0\nuids = 0\nremote = yes\nexecutor_cgroup = /a/../..|a cgroup v2 path below the root"
        "no vm_channels|9|[vgpu.a]\ndevices = 0\nuids = 0, daemon\nremote = yes\nexecutor_user = daemon\nvm_channels = 0|vm_channels = 0: the CUDA and NVML connections"
        # executor_user: a remote vGPU's, an existing user, never root, one the vGPU admits.
        "executor_user on a local vGPU|7|[vgpu.a]\ndevices = 0\nuids = 0\nexecutor_user = daemon|executor_user applies to a vGPU with remote = yes"
        "root as executor_user|8|[vgpu.a]\ndevices = 0\nuids = 0\nremote = yes\nexecutor_user = root|an executor never runs as root"
        "no such executor_user|8|[vgpu.a]\ndevices = 0\nuids = 0\nremote = yes\nexecutor_user = nosuchuser|executor_user: no such user: nosuchuser"
        "an executor_user the vGPU does not admit|8|[vgpu.a]\ndevices = 0\nuids = 0\nremote = yes\nexecutor_user = daemon|its executors run as uid $(id -u daemon), which it does not admit"
    )
    for entry in "${refused[@]}"; do
        IFS='|' read -r -a field <<<"$entry"
        test_case=${field[0]}
        expect_config_error "${field[1]}" "${field[@]:3}" <<<"$(printf '%b' "${field[2]}")"
    done
    test_case="a key before any section" # no [mediator] section before it
    RAW=1 expect_config_error 1 "outside any section" <<<"$(printf 'devices = 0\n[vgpu.a]')"
    # Configs taken: NAME|CONFIG (the whole file).
    taken=(
        "a byte order mark|\xef\xbb\xbf[vgpu.a]\ndevices = 0\nuids = 0"
        "oversubscription allowed|[mediator]\noversubscribe = yes\n[vgpu.a]\ndevices = 0\nmemory = 10G\nuids = 0\n[vgpu.b]\ndevices = 0\nmemory = 10G\nuids = 0"
    )
    for entry in "${taken[@]}"; do
        test_case=${entry%%|*}
        printf '%b\n' "${entry#*|}" >"$conf"
        env -u LD_PRELOAD "$med" --config "$conf" --check-config >"$tmp/out" 2>&1 ||
            fail "a config was refused: $(cat "$tmp/out")"
    done
    ;;

reload-lowers-quota)
    config "[vgpu.a]" "devices = 0" "memory = 4G" "uids = $me"
    start_mediator
    hold 1G a
    config "[vgpu.a]" "devices = 0" "memory = 1G" "uids = $me"
    kill -HUP "$medpid"
    for _ in $(seq 1 500); do grep -q "reloaded" "$tmp/med.log" && break; sleep 0.02; done
    grep -q "vGPU a device 0: quota 1.00 GiB is below the 1.25 GiB its processes hold" "$tmp/med.log" ||
        fail "the lowered quota was not reported"
    run expect-quota-refusal 1M
    kill -0 "$held" || fail "the process holding more than the new quota was stopped"
    [ "$(py "s['vgpus'][0]['devices'][0]['memory_quota']")" = $GiB ] || fail "vgpu-smi: $(smi_json)"
    # A broken config is refused and the running one stays.
    echo "[vgpu.a" >>"$conf"
    kill -HUP "$medpid"
    for _ in $(seq 1 500); do grep -q "reload refused" "$tmp/med.log" && break; sleep 0.02; done
    grep -q "reload refused, the running configuration stays: $conf:8: a section header needs its closing" "$tmp/med.log" ||
        fail "the broken reload was not refused with its line"
    config "[vgpu.a]" "devices = 0" "memory = 4G" "uids = $me"
    kill -HUP "$medpid"
    for _ in $(seq 1 500); do [ "$(py "s['vgpus'][0]['devices'][0]['memory_quota']")" = $((4 * GiB)) ] && break; sleep 0.02; done
    run admitted 4G
    ;;

vgpu-smi)
    config "[vgpu.train]" "devices = 0" "memory = 8G" "compute = 50" "uids = $me" \
           "[vgpu.infer]" "devices = 0, 1" "memory = 4G" "compute = 50" "uids = $me"
    start_mediator
    hold 1G a
    VGPU_NAME=infer "$client" hold 512M "$tmp/b.ready" "$tmp/b.go" >>"$tmp/client.out" 2>&1 &
    pids="$pids $!"
    wait_file "$tmp/b.ready"
    b=$(cat "$tmp/b.ready")
    "$smi" --socket "$tmp/sock" >"$tmp/table" || fail "vgpu-smi failed"
    cat "$tmp/table"
    grep -Eq "^train +0 +Fake GPU 0 .* 1280MiB / 8192MiB +50%" "$tmp/table" || fail "the table lacks train's row"
    grep -Eq "^infer +0 .* 768MiB / 4096MiB" "$tmp/table" || fail "the table lacks infer's row"
    grep -Eq "^train +$held +$(id -un) +mediator_client +0 +1280MiB" "$tmp/table" || fail "the table lacks process $held"
    grep -Eq "^infer +$b .* 768MiB" "$tmp/table" || fail "the table lacks process $b"
    [ "$(py "[(p['vgpu'], p['pid'], p['command'], p['memory'][0]) for p in s['processes']]")" = \
      "[('train', $held, 'mediator_client', $((GiB + OVH))), ('infer', $b, 'mediator_client', $((512 * MiB + OVH)))]" ] ||
        fail "vgpu-smi --json: $(smi_json)"
    timeout 1.5 "$smi" --socket "$tmp/sock" --watch 0.2 >"$tmp/watch"
    [ "$(grep -c "^train " "$tmp/watch")" -ge 3 ] || fail "--watch did not refresh: $(cat "$tmp/watch")"
    ;;

metrics)
    config "[vgpu.a]" "devices = 0" "memory = 2G" "compute = 40" "uids = $me"
    start_mediator --metrics 127.0.0.1:0 # any free port: the log says which
    port=$(sed -n 's/.*metrics on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/med.log")
    [ -n "$port" ] || fail "the log does not say where the metrics are"
    hold 1G a
    VGPU_NAME=nosuch "$client" refused >/dev/null 2>&1
    python3 - "$port" <<'EOF' || fail "the metrics page is wrong"
import socket, sys, urllib.request
page = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=5).read().decode()
print(page)
# The DCGM exporter's labels of the GPU, then vgpu's own (never DCGM's device="nvidia0").
labels = ('gpu="0",UUID="GPU-fa4e0000-0000-0000-0000-000000000000",pci_bus_id="00000000:01:00.0",'
          'modelName="Fake GPU 0",Hostname="%s",vgpu="a",vgpu_device="0"' % socket.gethostname())
want = [
    'vgpu_memory_quota_bytes{%s} 2147483648' % labels,
    'vgpu_memory_used_bytes{%s} %d' % (labels, (1 << 30) + (256 << 20)),
    'vgpu_compute_share_percent{%s} 40' % labels,
    'vgpu_compute_mode{%s,vgpu_mode="share"} 1' % labels,
    'vgpu_processes{vgpu="a"} 1',
    'vgpu_mediator_admission_refusals_total 1',
    '# TYPE vgpu_memory_refusals_total counter',
]
missing = [w for w in want if w not in page.splitlines()]
sys.exit("missing: %s" % missing if missing else 0)
EOF
    python3 -c "
import urllib.request, urllib.error, sys
try:
    urllib.request.urlopen('http://127.0.0.1:$port/nothing', timeout=5); sys.exit('no 404')
except urllib.error.HTTPError as e:
    sys.exit(0 if e.code == 404 else 'status %d' % e.code)" || fail "an unknown path is not a 404"
    ;;

protocol-abuse)
    config "[vgpu.a]" "devices = 0" "memory = 2G" "uids = $me"
    start_mediator
    hold 512M a # a connection that must not notice
    python3 - "$tmp/sock" <<'EOF' || fail "a malformed message was not met by closing that connection"
import socket, struct, sys
def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(sys.argv[1]); s.settimeout(5); return s
def closed(s):
    data = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            return data
        data += chunk
frame = lambda t, payload, magic=0x4d504756, version=1: struct.pack("<IHHI", magic, version, t, len(payload)) + payload
cases = {
    "bad magic": b"GET / HTTP/1.0\r\n\r\n",
    "bad version": frame(1, b"\0" * 40, version=9),
    "oversized": struct.pack("<IHHI", 0x4d504756, 1, 1, 1 << 30),
    "short HELLO": frame(1, b"\0" * 12),
    "unterminated name": frame(1, struct.pack("<II", 0, 0xffffffff) + b"x" * 32),
    "unknown type": frame(99, b""),
}
for name, data in cases.items():
    s = conn(); s.sendall(data)
    got = closed(s)  # the mediator must close it...
    code = struct.unpack("<IHHII", got[:16])  # ...having said why, in a version 1 REFUSE
    assert code == (0x4d504756, 1, 3, 496, 3), (name, got[:32])
    print(name, "-> REFUSE:", got[16:120].split(b"\0")[0].decode(), "; closed")
    if name == "bad version":
        assert b"version 9" in got and b"version 1" in got, got[16:120]
s = conn(); s.sendall(frame(4, b""))  # ENTER before HELLO: refused, then closed
got = closed(s)
assert struct.unpack("<I", got[12:16])[0] == 3, got[:40]
print("ENTER before HELLO -> REFUSE", got[16:80].split(b"\0")[0])
EOF
    kill -0 "$medpid" || fail "the mediator died"
    [ "$(py "[(p['pid'], p['memory'][0]) for p in s['processes']]")" = "[($held, $((512 * MiB + OVH)))]" ] ||
        fail "the well-behaved connection was disturbed: $(smi_json)"
    kill -0 "$held" || fail "the well-behaved process died"
    run admitted 2G
    ;;

guest-window)
    # A VM's vGPU: the mediator writes NAME.bar0 for ivshmem; in the guest, vgpu
    # finds it as PCI device 1af4:1110's BAR (here a fake sysfs tree).
    config "[vgpu.vm]" "devices = 1" "memory = 2G" "guest = yes"
    start_mediator
    [ "$(stat -c %s "$state/vm.bar0")" = 262144 ] || fail "vm.bar0 is not a 256 KiB window"
    sys=$tmp/sys/bus/pci/devices
    mkdir -p "$sys/0000:00:03.0" "$sys/0000:00:05.0"
    echo 0x8086 >"$sys/0000:00:03.0/vendor"; echo 0x100e >"$sys/0000:00:03.0/device"
    echo 0x1af4 >"$sys/0000:00:05.0/vendor"; echo 0x1110 >"$sys/0000:00:05.0/device"
    ln -s "$state/vm.bar0" "$sys/0000:00:05.0/resource2"
    export VGPU_SYSFS_ROOT=$tmp/sys VGPU_MEDIATOR_SOCKET=none # no mediator in the guest
    run admitted 2G
    hold 1G g
    export VGPU_MEDIATOR_SOCKET=$tmp/sock
    [ "$(py "s['vgpus'][0]['guest'], s['vgpus'][0]['devices'][0]['memory_used'], s['processes'][0]['pid']")" = \
      "True $((GiB + OVH)) $held" ] || fail "vgpu-smi on the host: $(smi_json)"
    export VGPU_MEDIATOR_SOCKET=none
    kill -9 "$held"
    wait "$held" 2>/dev/null
    run admitted 2G # the guest's next process returns the dead one's memory...
    export VGPU_MEDIATOR_SOCKET=$tmp/sock
    [ "$(py "s['vgpus'][0]['devices'][0]['memory_used'], len(s['processes'])")" = "0 0" ] ||
        fail "the killed guest process's memory did not come back: $(smi_json)"
    export VGPU_MEDIATOR_SOCKET=none
    VGPU_PCI_ID=1af4:9999 run admitted 16G # no such device: no vGPU, the whole (fake) GPU
    ;;

fork-child-without-the-mediator-is-refused-memory)
    # The parent was admitted; the mediator is then killed: a child forked
    # after that cannot take a slot of its own, and is refused memory, with
    # a line that says why.
    config "[vgpu.a]" "devices = 0" "memory = 4G" "uids = $me"
    start_mediator
    VGPU_LOG_FILE=$tmp/fork.log "$client" fork-after-mediator-gone "$tmp/f.ready" "$tmp/f.go" >>"$tmp/client.out" 2>&1 &
    f=$!
    pids="$pids $f"
    wait_file "$tmp/f.ready"
    kill -9 "$medpid"
    wait "$medpid" 2>/dev/null
    medpid=
    touch "$tmp/f.go"
    wait "$f" || fail "the forked child was not refused: $(cat "$tmp/client.out")"
    grep -q "error: after fork: .*; this process is refused GPU memory" "$tmp/fork.log" || fail "no line says why the child was refused: $(cat "$tmp/fork.log")"
    ;;

fork-child-has-its-own-slot)
    config "[vgpu.a]" "devices = 0" "memory = 4G" "uids = $me"
    start_mediator
    "$client" hold-fork 512M "$tmp/f.ready" >>"$tmp/client.out" 2>&1 &
    pids="$pids $!"
    wait_file "$tmp/f.ready"
    read -r parent child <"$tmp/f.ready"
    pids="$pids $child"
    [ "$(py "sorted((p['pid'], p['memory'][0]) for p in s['processes'])")" = \
      "[($parent, $((512 * MiB + OVH))), ($child, $((512 * MiB)))]" ] || fail "two slots expected: $(smi_json)"
    # The child inherited the parent's connection, and closed it: the parent's end is seen at once.
    run kill-time "$parent" a 0 $((512 * MiB))
    ;;

stopped-mediator-refuses)
    # Stopped (not crashed), the mediator leaves its socket: new processes
    # are refused until it is back, never run without their limits.
    config "[vgpu.a]" "devices = 0" "memory = 1G" "uids = $me"
    start_mediator
    stop_mediator TERM
    [ -S "$tmp/sock" ] || fail "the stopped mediator removed its socket"
    expect_refused "no mediator answers on it" "start vgpu-mediatord"
    # A socket asked for by name must be there; "none" asks for no mediator.
    VGPU_MEDIATOR_SOCKET=$tmp/typo.sock expect_refused "VGPU_MEDIATOR_SOCKET=$tmp/typo.sock: no such socket"
    VGPU_MEDIATOR_SOCKET=none run admitted 16G # no vGPU: the whole (fake) GPU
    start_mediator
    run admitted 1G
    ;;

reload-refuses-a-quota-smaller-than-a-context)
    # A process of a has measured a context on GPU 0 (256 MiB on the fake):
    # a vGPU of 100 MiB there could run nothing, and the reload that adds it
    # is refused, naming the smallest quota that works.
    config "[vgpu.a]" "devices = 0" "memory = 2G" "compute = 50" "uids = $me"
    start_mediator
    hold 512M x
    config "[vgpu.a]" "devices = 0" "memory = 2G" "compute = 50" "uids = $me" \
           "[vgpu.b]" "devices = 0" "memory = 100M" "compute = 50" "uids = $me"
    kill -HUP "$medpid"
    for _ in $(seq 1 500); do grep -q "reload refused" "$tmp/med.log" && break; sleep 0.02; done
    grep -q "reload refused, the running configuration stays: $conf:11: vGPU b: memory = 100.00 MiB is smaller than one CUDA context on GPU 0 (GPU-fa4e0000-0000-0000-0000-000000000000), which takes 256.00 MiB (measured by a process of vGPU a).*at least 256.00 MiB" \
        "$tmp/med.log" || fail "the reload was not refused naming the smallest quota: $(grep 'reload' "$tmp/med.log")"
    [ "$(py "[v['name'] for v in s['vgpus']]")" = "['a']" ] || fail "b was added anyway: $(smi_json)"
    ;;

signals-reach-the-loop-whatever-threads-nvml-starts)
    # The real NVML starts a thread of its own when the mediator first
    # initialises it (to find the GPUs), before the mediator blocks the
    # signals it reads from a signalfd: that thread could take a SIGHUP
    # (lost, or the default action, which ends the daemon) or a SIGTERM
    # (no orderly stop).  On the H100 one reload in a few was lost.  Every
    # thread must block them, and every signal must reach the loop.
    export FAKENVML_INIT_THREAD=1
    config "[vgpu.a]" "devices = 0" "memory = 2G" "uids = $me"
    start_mediator
    threads=0
    for t in /proc/$medpid/task/*; do
        threads=$((threads + 1))
        blk=$(sed -n 's/^SigBlk:[[:space:]]*//p' "$t/status")
        # SIGHUP (1), SIGINT (2) and SIGTERM (15): bits 0, 1 and 14.
        [ $(( 0x$blk & 0x4003 )) = $(( 0x4003 )) ] ||
            fail "thread $(cat "$t/comm") ($t) does not block SIGHUP, SIGINT and SIGTERM (SigBlk $blk)"
    done
    [ "$threads" -ge 2 ] || fail "the fake NVML started no thread in the mediator (it has $threads)"
    for i in $(seq 1 20); do
        before=$(grep -c "reloaded" "$tmp/med.log")
        kill -HUP "$medpid"
        for _ in $(seq 1 250); do [ "$(grep -c "reloaded" "$tmp/med.log")" -gt "$before" ] && break; sleep 0.02; done
        [ "$(grep -c "reloaded" "$tmp/med.log")" -gt "$before" ] || fail "reload $i was lost"
    done
    kill -TERM "$medpid"
    wait "$medpid"
    grep -q "stopping on signal 15" "$tmp/med.log" || fail "SIGTERM did not reach the loop"
    medpid=
    ;;

reload-admission-and-vgpus)
    config "[vgpu.a]" "devices = 0" "memory = 2G" "uids = $me"
    start_mediator
    hold 512M x
    reload() { # LOG-TEXT: sends SIGHUP and waits for one more line holding it
        local before
        before=$(grep -c "$1" "$tmp/med.log")
        kill -HUP "$medpid"
        for _ in $(seq 1 500); do [ "$(grep -c "$1" "$tmp/med.log")" -gt "$before" ] && return; sleep 0.02; done
        fail "no \"$1\" after the reload"
    }
    # Who is admitted changes for the next processes; a new vGPU is there.
    config "[vgpu.a]" "devices = 0" "memory = 2G" "uids = 4242" "[vgpu.b]" "devices = 1" "memory = 1G" "uids = $me"
    reload "reloaded"
    grep -q "vGPU b: added" "$tmp/med.log" || fail "b was not added"
    VGPU_NAME=a expect_refused "vGPU a does not admit uid $me"
    run admitted 1G # into b, the first that admits it now
    kill -0 "$held" || fail "the process in a was stopped by the reload"
    # A busy vGPU's devices do not move: the whole reload is refused.
    config "[vgpu.a]" "devices = 1" "memory = 2G" "compute = 50" "uids = 4242" \
           "[vgpu.b]" "devices = 1" "memory = 1G" "compute = 50" "uids = $me"
    reload "reload refused"
    grep -q "reload refused, the running configuration stays: $conf:5: vGPU a: its devices cannot change while 1 process(es) use it" \
        "$tmp/med.log" || fail "the move of a busy vGPU was not refused with its line"
    [ "$(py "s['vgpus'][0]['devices'][0]['uuid']")" = GPU-fa4e0000-0000-0000-0000-000000000000 ] ||
        fail "a moved anyway: $(smi_json)"
    # A removed vGPU admits nobody, and goes when its last process has.
    config "[vgpu.b]" "devices = 1" "memory = 1G" "uids = $me"
    reload "gone from the config"
    [ "$(py "[(v['name'], v['retired']) for v in s['vgpus']]")" = "[('a', True), ('b', False)]" ] ||
        fail "a is not shown retired: $(smi_json)"
    kill -9 "$held"
    for _ in $(seq 1 300); do [ -e "$state/a.journal" ] || break; sleep 0.01; done
    [ -e "$state/a.journal" ] && fail "a's journal outlived it"
    [ "$(py "[v['name'] for v in s['vgpus']]")" = "['b']" ] || fail "a is still shown: $(smi_json)"
    ;;

restart-keeps-a-removed-vgpu)
    # Removed from the config across a restart, a vGPU with a live process is
    # found again, retired: its process stays counted and watched.
    config "[vgpu.a]" "devices = 0" "memory = 2G" "uids = $me" "[vgpu.b]" "devices = 1" "memory = 1G" "uids = $me"
    start_mediator
    hold 512M x
    stop_mediator TERM
    config "[vgpu.b]" "devices = 1" "memory = 1G" "uids = $me"
    start_mediator
    [ "$(py "[(v['name'], v['retired'], v['processes']) for v in s['vgpus']]")" = "[('b', False, 0), ('a', True, 1)]" ] ||
        fail "a is not kept, retired: $(smi_json)"
    kill -9 "$held"
    for _ in $(seq 1 300); do [ -e "$state/a.journal" ] || break; sleep 0.01; done
    [ -e "$state/a.journal" ] && fail "a was not removed once its process died"
    # A vGPU whose running process uses other GPUs than a new config gives it stops the start.
    VGPU_NAME=b "$client" hold 256M "$tmp/y.ready" "$tmp/y.go" >>"$tmp/client.out" 2>&1 &
    pids="$pids $!"
    wait_file "$tmp/y.ready"
    stop_mediator TERM
    config "[vgpu.b]" "devices = 0" "memory = 1G" "uids = $me"
    env -u LD_PRELOAD "$med" --config "$conf" --foreground >"$tmp/out" 2>&1 && fail "it started with b moved"
    grep -q "$conf:5: vGPU b: its 1 running process(es) use other GPUs" "$tmp/out" ||
        fail "the refusal does not say why: $(cat "$tmp/out")"
    ;;

survives-a-client-truncating-its-window)
    # A tenant resizes or writes what it was given, every way its
    # descriptors allow: the mediator and the vGPU's other processes go on.
    config "[vgpu.a]" "devices = 0" "memory = 4G" "uids = $me"
    start_mediator
    hold 512M a 256M
    tenant truncate >"$tmp/attack" 2>&1
    attack=$?
    cat "$tmp/attack"
    "$smi" --socket "$tmp/sock" >/dev/null 2>&1 || fail "vgpu-smi gets no answer after the attack"
    kill -0 "$medpid" 2>/dev/null || fail "the mediator died: $(wait "$medpid"; echo "exit $?")"
    touch "$tmp/a.go" # the vGPU's other process allocates again
    for _ in $(seq 1 500); do [ -e "$tmp/a.ready.more" ] || ! kill -0 "$held" 2>/dev/null && break; sleep 0.02; done
    [ -e "$tmp/a.ready.more" ] || fail "the vGPU's other process did not allocate after the attack: $(cat "$tmp/client.out")"
    run admitted 4G # and new processes are admitted
    [ $attack = 0 ] || fail "a tenant could resize or write its window: $(grep WORKED "$tmp/attack")"
    # A restart finds the window again, with the process's use.
    stop_mediator KILL
    start_mediator
    [ "$(py "s['vgpus'][0]['devices'][0]['memory_used'], [p['pid'] for p in s['processes']]")" = \
      "$((768 * MiB + OVH)) [$held]" ] || fail "after the restart: $(smi_json)"
    ;;

daemonized-stops-on-sigterm-within-1s)
    # Started as a user starts it outside systemd: no --foreground.
    config "[vgpu.a]" "devices = 0" "memory = 2G" "uids = $me"
    env -u LD_PRELOAD VGPU_LOG=info VGPU_LOG_FILE="$tmp/med.log" "$med" --config "$conf" ||
        fail "vgpu-mediatord exited $? starting in the background"
    wait_log "serving"
    medpid=$(sed -n 's/^vgpu-mediatord\[\([0-9]*\)\]: info: vgpu-mediatord .* serving .*/\1/p' "$tmp/med.log")
    [ -n "$medpid" ] || fail "the log does not say which process serves"
    "$smi" --socket "$tmp/sock" >/dev/null || fail "the daemon does not answer"
    kill -TERM "$medpid"
    for _ in $(seq 1 50); do gone "$medpid" && break; sleep 0.02; done
    gone "$medpid" || fail "still running 1 s after SIGTERM ($(grep -E 'ShdPnd|SigBlk' "/proc/$medpid/status" | tr '\n' ' '))"
    medpid=
    ;;

daemonized-reloads-on-sighup)
    config "[vgpu.a]" "devices = 0" "memory = 2G" "uids = $me"
    env -u LD_PRELOAD VGPU_LOG=info VGPU_LOG_FILE="$tmp/med.log" "$med" --config "$conf" ||
        fail "vgpu-mediatord exited $? starting in the background"
    wait_log "serving"
    medpid=$(sed -n 's/^vgpu-mediatord\[\([0-9]*\)\]: info: vgpu-mediatord .* serving .*/\1/p' "$tmp/med.log")
    config "[vgpu.a]" "devices = 0" "memory = 1G" "uids = $me"
    kill -HUP "$medpid"
    wait_log "reloaded" 1
    [ "$(py "s['vgpus'][0]['devices'][0]['memory_quota']")" = $GiB ] || fail "the reload did not apply: $(smi_json)"
    ;;

out-of-descriptors-keeps-serving-and-stops-on-sigterm)
    # 64 descriptors, and a limit on connections the operator set above
    # what they allow: a tenant that opens connections as fast as it can
    # runs the mediator out of descriptors.
    config "max_connections = 100000" "[vgpu.a]" "devices = 0" "memory = 2G" "uids = $me"
    wrap="prlimit --nofile=64:64" start_mediator
    tenant flood 4 >"$tmp/flood" 2>&1 &
    flood=$!
    pids="$pids $flood"
    sleep 1.5 # out of descriptors by now, and the flood goes on
    ticks() { awk '{ print $14 + $15 }' "/proc/$medpid/stat"; }
    lines() { grep -c "out of file descriptors" "$tmp/med.log"; }
    t0=$(ticks) l0=$(lines) ms0=$(date +%s%3N)
    sleep 2
    t1=$(ticks) l1=$(lines) ms=$(($(date +%s%3N) - ms0))
    refused=$(tail -n +"$((l0 + 1))" <(grep "out of file descriptors" "$tmp/med.log") | head -n "$((l1 - l0))" |
              sed -n 's/.*(\([0-9]*\) refused in the last second).*/\1/p' | awk '{ n += $1 } END { print n + 0 }')
    wait "$flood"
    cat "$tmp/flood"
    echo "in $ms ms out of descriptors: $((t1 - t0)) ticks of CPU, $((l1 - l0)) log line(s), $refused refused"
    # Refusing costs CPU in proportion to the flood (tens of microseconds a
    # connection under a sanitizer); a spinning loop takes CPU with nothing
    # refused (57 ticks a second before the fix, none refused, with 41k log
    # lines).  The bound: a twentieth of a core, and 100 us a refusal.
    [ $((t1 - t0)) -le $((ms / 200 + refused / 100)) ] ||
        fail "the mediator spun: $((t1 - t0)) ticks of CPU in $ms ms, refusing $refused connections"
    [ "$refused" -gt 0 ] || fail "no refusal was logged in $ms ms of the flood"
    [ $((l1 - l0)) -le $((ms / 1000 + 1)) ] || fail "$((l1 - l0)) log lines about it in $ms ms; at most one a second"
    grep -q "refused with a reason [1-9]" "$tmp/flood" || fail "no refused connection was told why"
    grep -q "reason: .*out of file descriptors" "$tmp/flood" || fail "the refusal does not say why: $(cat "$tmp/flood")"
    run admitted 2G # the flood's connections are closed: it serves again
    tenant flood 5 >/dev/null 2>&1 &
    pids="$pids $!"
    sleep 1.5
    kill -TERM "$medpid"
    # A liveness bound, not a speed: the flood (and a sanitizer) on a busy
    # 2-core machine has made the last second's refusals outlast 1 s.
    ended_within 10 || fail "still running 10 s after SIGTERM while out of descriptors"
    medpid=
    ;;

forged-slot-blocks-no-reload-or-restart)
    # A tenant writes a live slot for pid 1 into its vGPU's process table.
    config "[vgpu.a]" "devices = 0" "memory = 2G" "uids = $me" "[vgpu.b]" "devices = 1" "memory = 1G" "uids = $me"
    start_mediator
    hold 256M x # a process of a: it keeps the window alive across the restart
    tenant forge 5 1 || fail "the tenant could not forge a slot"
    [ "$(py "[p['pid'] for p in s['processes']]")" = "[$held]" ] || fail "a forged slot is listed: $(smi_json)"
    stop_mediator KILL
    start_mediator
    [ "$(py "[p['pid'] for p in s['processes']]")" = "[$held]" ] ||
        fail "after a restart, a forged slot is listed: $(smi_json)"
    kill -9 "$held"
    wait "$held" 2>/dev/null
    for _ in $(seq 1 100); do [ "$(py "len(s['processes'])")" = 0 ] && break; sleep 0.02; done
    # Nobody uses a: its devices move, and once removed it goes.
    config "[vgpu.a]" "devices = 1" "memory = 2G" "compute = 50" "uids = $me" \
           "[vgpu.b]" "devices = 1" "memory = 1G" "compute = 50" "uids = $me"
    kill -HUP "$medpid"
    wait_log "reload"
    grep -q "reload refused" "$tmp/med.log" && fail "the forged slot blocked the reload: $(grep 'reload refused' "$tmp/med.log")"
    [ "$(py "s['vgpus'][0]['devices'][0]['uuid']")" = GPU-fa4e0000-0000-0000-0000-000000000001 ] ||
        fail "a did not move: $(smi_json)"
    config "[vgpu.b]" "devices = 1" "memory = 1G" "uids = $me"
    kill -HUP "$medpid"
    for _ in $(seq 1 150); do [ "$(py "[v['name'] for v in s['vgpus']]")" = "['b']" ] && break; sleep 0.02; done
    [ "$(py "[v['name'] for v in s['vgpus']]")" = "['b']" ] || fail "the forged slot keeps a removed vGPU: $(smi_json)"
    ;;

jammed-slot-keeps-no-counter-wrong)
    # A tenant marks a slot it was not given busy, and adds 1G to its
    # vGPU's usage counter: the mediator still mends the counter.
    config "[vgpu.a]" "devices = 0" "memory = 4G" "uids = $me"
    start_mediator
    hold 1G a
    tenant jam 5 $GiB || fail "the tenant could not write its window"
    for _ in $(seq 1 150); do
        [ "$(py "s['vgpus'][0]['devices'][0]['memory_used']")" = $((GiB + OVH)) ] && break
        sleep 0.02
    done
    [ "$(py "s['vgpus'][0]['devices'][0]['memory_used']")" = $((GiB + OVH)) ] ||
        fail "the counter was not mended within 3 s of the jam: $(smi_json)"
    grep -q "usage counter corrected" "$tmp/med.log" || fail "the mediator logged no correction"
    ;;

caps-connections-per-uid)
    config "max_connections_per_uid = 8" "[vgpu.a]" "devices = 0" "memory = 2G" "uids = $me"
    start_mediator
    tenant connections 9 "$tmp/conns.go" >"$tmp/conns" 2>&1 &
    tpid=$!
    pids="$pids $tpid"
    for _ in $(seq 1 500); do grep -q "^refused" "$tmp/conns" && break; sleep 0.02; done
    cat "$tmp/conns"
    grep -q "^admitted 8$" "$tmp/conns" || fail "not 8 connections admitted"
    grep -q "^refused: uid $me ($(id -un)) has 8 connections to vgpu-mediatord, the most one user may have.*max_connections_per_uid" \
        "$tmp/conns" || fail "the 9th connection was not refused with the cap and how to raise it"
    # A process of that user is told the same, in its one error line.
    expect_refused "has 8 connections to vgpu-mediatord, the most one user may have" "max_connections_per_uid"
    touch "$tmp/conns.go"
    wait "$tpid"
    sleep 0.2 # the mediator sees the connections close
    run admitted 2G # once the tenant's connections close, its user connects again
    ;;

caps-connections-in-all)
    config "max_connections = 4" "[vgpu.a]" "devices = 0" "memory = 2G" "uids = $me"
    start_mediator
    tenant connections 5 "$tmp/conns.go" >"$tmp/conns" 2>&1 &
    pids="$pids $!"
    for _ in $(seq 1 500); do grep -q "^refused" "$tmp/conns" && break; sleep 0.02; done
    cat "$tmp/conns"
    grep -q "^admitted 4$" "$tmp/conns" || fail "not 4 connections admitted"
    grep -q "^refused: vgpu-mediatord has 4 connections, its most.*max_connections" "$tmp/conns" ||
        fail "the 5th connection was not refused with the cap and how to raise it"
    expect_refused "vgpu-mediatord has 4 connections, its most" "raises max_connections"
    ;;

one-pid-cannot-take-every-slot)
    config "[vgpu.a]" "devices = 0" "memory = 2G" "uids = $me"
    start_mediator
    tenant slots 6 >"$tmp/slots" 2>&1 || fail "the tenant failed: $(cat "$tmp/slots")"
    cat "$tmp/slots"
    grep -q "^entered 4$" "$tmp/slots" || fail "one process took other than 4 slots"
    grep -q "^refused: pid [0-9]* (python3) holds 4 process slots of vGPU a, the most one process may" "$tmp/slots" ||
        fail "the 5th slot was not refused saying why"
    run admitted 2G
    ;;

unreadable-config-is-refused-not-empty)
    # A directory, then (on reload) an empty file: refused, never 0 vGPUs.
    rm -f "$conf"
    mkdir "$conf"
    for mode in --check-config --foreground; do
        env -u LD_PRELOAD timeout 10 "$med" --config "$conf" $mode >"$tmp/out" 2>&1
        rc=$?
        [ $rc = 1 ] || fail "vgpu-mediatord $mode exited $rc on a directory: $(cat "$tmp/out")"
        grep -q "$conf: .*not a regular file (a directory)" "$tmp/out" || fail "$mode on a directory: $(cat "$tmp/out")"
    done
    rmdir "$conf"
    config "[vgpu.a]" "devices = 0" "memory = 2G" "uids = $me"
    start_mediator
    : >"$conf"
    kill -HUP "$medpid"
    wait_log "reload refused"
    grep -q "reload refused, the running configuration stays: $conf: defines no vGPU" "$tmp/med.log" ||
        fail "the empty file was not refused saying why"
    rm -f "$conf"
    mkdir "$conf"
    kill -HUP "$medpid"
    wait_log "reload refused.*not a regular file"
    [ "$(py "[v['name'] for v in s['vgpus']]")" = "['a']" ] || fail "vGPU a is gone: $(smi_json)"
    run admitted 2G
    ;;

fifo-config-does-not-block)
    rm -f "$conf"
    mkfifo "$conf"
    env -u LD_PRELOAD timeout 5 "$med" --config "$conf" --check-config >"$tmp/out" 2>&1
    rc=$?
    [ $rc = 1 ] || fail "--check-config of a FIFO exited $rc: $(cat "$tmp/out")"
    grep -q "$conf: .*not a regular file (a FIFO)" "$tmp/out" || fail "a FIFO config: $(cat "$tmp/out")"
    rm -f "$conf"
    config "[vgpu.a]" "devices = 0" "memory = 2G" "uids = $me"
    start_mediator
    rm -f "$conf"
    mkfifo "$conf"
    kill -HUP "$medpid"
    wait_log "reload refused.*not a regular file (a FIFO)" 2
    timeout 1 "$smi" --socket "$tmp/sock" >/dev/null || fail "the mediator does not answer after a FIFO reload"
    ;;

refuses-a-config-others-may-write)
    # Whoever may write the config decides every vGPU: --check-config, a
    # start and a reload agree in refusing one owned by another user, one
    # others may write, and one in a directory another user owns.
    config "[vgpu.a]" "devices = 0" "memory = 2G" "uids = $me"
    refused() { # WORDS...: --check-config and a start refuse it, saying each of WORDS
        for mode in --check-config --foreground; do
            env -u LD_PRELOAD timeout 10 "$med" --config "$1" $mode >"$tmp/out" 2>&1
            rc=$?
            [ $rc = 1 ] || fail "vgpu-mediatord $mode took (exit $rc) $1: $(cat "$tmp/out")"
            for want in "${@:2}"; do
                grep -qF -- "$want" "$tmp/out" || fail "$mode does not say \"$want\": $(cat "$tmp/out")"
            done
        done
        echo "refused: $(cat "$tmp/out")"
    }
    chmod 0666 "$conf"
    refused "$conf" "$conf: the config is writable by group or others (mode 0666)" "chmod go-w $conf"
    chmod 0644 "$conf"
    if [ "$me" = 0 ]; then
        chown 65534 "$conf"
        refused "$conf" "$conf: the config is owned by uid 65534, neither root nor vgpu-mediatord's own (uid 0)"
        chown 0 "$conf"
        mkdir -m 0755 "$tmp/theirs" && cp "$conf" "$tmp/theirs/conf" && chown 65534 "$tmp/theirs"
        refused "$tmp/theirs/conf" "the config is in $tmp/theirs, which uid 65534 owns"
        ln -s "$tmp/theirs/conf" "$tmp/link.conf" # a link of root's to it: the file's directory still counts
        refused "$tmp/link.conf" "the config is in $tmp/theirs, which uid 65534 owns"
    fi
    chmod 0777 "$tmp" # a directory on its way others may write, not sticky
    refused "$conf" "the config is in $tmp, which group or others may write (mode 0777)"
    chmod 0700 "$tmp"
    start_mediator
    chmod 0666 "$conf"
    kill -HUP "$medpid"
    wait_log "reload refused.*writable by group or others"
    run admitted 2G # the running configuration stays
    ;;

refuses-foreign-owned-state-dir)
    config "[vgpu.a]" "devices = 0" "memory = 2G" "uids = $me"
    refused_start() { # WORDS...: a start is refused, saying each of WORDS
        env -u LD_PRELOAD timeout 10 "$med" --config "$conf" --foreground >"$tmp/out" 2>&1
        rc=$?
        [ $rc = 1 ] || fail "vgpu-mediatord started (exit $rc) with: $*: $(cat "$tmp/out")"
        for want in "$@"; do grep -qF -- "$want" "$tmp/out" || fail "the refusal does not say \"$want\": $(cat "$tmp/out")"; done
        echo "refused: $(cat "$tmp/out")"
    }
    if [ "$me" = 0 ]; then
        # Its own directory, in one another user owns: they could swap it.
        mkdir -m 0755 "$tmp/theirs" && chown 65534 "$tmp/theirs"
        printf '[mediator]\nsocket = %s\nstate_dir = %s\n[vgpu.a]\ndevices = 0\nmemory = 2G\nuids = 0\n' \
            "$tmp/sock" "$tmp/theirs/state" >"$conf"
        mkdir -m 0755 "$tmp/theirs/state"
        refused_start "$tmp/theirs/state: the state_dir is in $tmp/theirs, which uid 65534 owns"
        config "[vgpu.a]" "devices = 0" "memory = 2G" "uids = $me"
    fi
    mkdir -m 0777 "$state"
    refused_start "state_dir $state" "mode 0777" "chmod go-w $state"
    chmod 0755 "$state"
    if [ "$me" = 0 ]; then
        chown 65534 "$state"
        refused_start "state_dir $state" "owned by uid 65534" "chown 0 $state"
        chown 0 "$state"
    fi
    mv "$state" "$tmp/real-state"
    ln -s "$tmp/real-state" "$state"
    refused_start "state_dir $state" "symbolic link"
    rm "$state"
    mv "$tmp/real-state" "$state"
    start_mediator # the same directory, its own again: taken
    stop_mediator TERM
    # A file in it that is not the mediator's: refused, named.
    if [ "$me" = 0 ]; then
        chown 65534 "$state/a.journal"
        refused_start "$state/a.journal" "owned by uid 65534"
        chown 0 "$state/a.journal"
    fi
    chmod 0666 "$state/a.journal"
    refused_start "$state/a.journal" "mode 0666"
    ;;

non-reading-clients-do-not-stall-admission)
    config "[vgpu.a]" "devices = 0" "memory = 2G" "uids = $me"
    start_mediator
    tenant deaf 50 >"$tmp/deaf" 2>&1 || fail "the tenant failed: $(cat "$tmp/deaf")"
    cat "$tmp/deaf"
    ms=$(sed -n 's/^admitted in \([0-9]*\)\..* ms$/\1/p' "$tmp/deaf")
    # Deaf clients are dropped after 10 s (MED_STALL_MS): a process that waited
    # half of that waited on them.  How fast is the machine's; printed above.
    [ -n "$ms" ] && [ "$ms" -lt 5000 ] || fail "a new process waited ${ms:-?} ms to be admitted behind 50 deaf clients"
    ;;

restart-with-a-lower-quota-reaches-running-processes)
    # Limits live in the window's first page, which each mediator start
    # makes anew: a running process takes the new one when it reattaches.
    config "[vgpu.a]" "devices = 0" "memory = 4G" "uids = $me"
    start_mediator
    "$client" hold-refused 1G "$tmp/a.ready" "$tmp/a.go" 1G >>"$tmp/client.out" 2>&1 &
    held=$!
    pids="$pids $held"
    wait_file "$tmp/a.ready"
    stop_mediator KILL
    config "[vgpu.a]" "devices = 0" "memory = 1G" "uids = $me"
    start_mediator
    touch "$tmp/a.go"
    for _ in $(seq 1 500); do [ -e "$tmp/a.ready.more" ] || ! kill -0 "$held" 2>/dev/null && break; sleep 0.02; done
    [ -e "$tmp/a.ready.more" ] || fail "the running process did not see the new quota: $(cat "$tmp/client.out")"
    grep -q "pid $held .*reattached to vGPU a" "$tmp/med.log" || fail "no reattachment logged"
    ;;

forged-epoch-drops-no-slot)
    # A tenant moves its window's epoch as a restart would: the vGPU's other
    # processes, still connected, must not give up their slots for it.
    config "[vgpu.a]" "devices = 0" "memory = 4G" "uids = $me"
    start_mediator
    hold 512M a 256M
    tenant epoch 99 || fail "the tenant could not write the epoch"
    touch "$tmp/a.go" # it allocates, and sees the epoch moved
    wait_file "$tmp/a.ready.more"
    [ "$(py "[(p['pid'], p['memory'][0]) for p in s['processes']]")" = "[($held, $((768 * MiB + OVH)))]" ] ||
        fail "the process lost its slot to a forged epoch: $(smi_json)"
    grep -q "refused pid $held" "$tmp/med.log" && fail "the process was refused: $(grep "refused pid" "$tmp/med.log")"
    run kill-time "$held" a 0 0 # its connection still speaks for it
    ;;

guest-breaking-its-window-stops-nothing)
    # A VM writes every byte of its window: a header broken, registers that
    # claim 1000 devices.  vgpu-smi, a restart and the guest's next process
    # all go on.
    config "[vgpu.vm]" "devices = 1" "memory = 2G" "guest = yes" "[vgpu.a]" "devices = 0" "memory = 1G" "uids = $me"
    start_mediator
    python3 - "$state/vm.bar0" <<'PYEOF' || fail "cannot write the VM's window"
import struct, sys
with open(sys.argv[1], "r+b") as f:
    f.seek(0x100)
    f.write(struct.pack("<I", 1000))  # config.device_count
    f.seek(0x100 + 256 + 48)
    f.write(struct.pack("<Q", 1 << 50))  # device 0's memory_limit
PYEOF
    [ "$(py "[(v['name'], len(v['devices']), v['devices'][0]['memory_quota']) for v in s['vgpus']]")" = \
      "[('vm', 1, $((2 * GiB))), ('a', 1, $GiB)]" ] || fail "vgpu-smi took the VM's word: $(smi_json)"
    printf '\0\0\0\0\0\0\0\0' | dd of="$state/vm.bar0" bs=1 seek=0 conv=notrunc status=none # the magic
    stop_mediator TERM
    start_mediator
    grep -q "vGPU vm: the header of $state/vm.bar0 is broken" "$tmp/med.log" || fail "the broken header was not said"
    sys=$tmp/sys/bus/pci/devices
    mkdir -p "$sys/0000:00:05.0"
    echo 0x1af4 >"$sys/0000:00:05.0/vendor"; echo 0x1110 >"$sys/0000:00:05.0/device"
    ln -s "$state/vm.bar0" "$sys/0000:00:05.0/resource2"
    VGPU_SYSFS_ROOT=$tmp/sys VGPU_MEDIATOR_SOCKET=none run admitted 2G
    run admitted 1G
    ;;

guest-truncating-its-window-retires-only-its-vgpu)
    # A VM's group may write its window, and so truncate it.  The mediator,
    # which writes it every millisecond for a compute share, must not die of
    # it: that vGPU alone is retired, the others go on, and a reload and a
    # restart make the window whole again.
    config "[vgpu.vm]" "devices = 1" "memory = 2G" "compute = 50" "guest = yes" \
           "[vgpu.a]" "devices = 0" "memory = 1G" "uids = $me"
    start_mediator
    truncate -s 0 "$state/vm.bar0"
    for _ in $(seq 1 8); do
        smi_json >/dev/null || fail "vgpu-smi failed after the VM's window was truncated"
        sleep 0.25
    done
    kill -0 "$medpid" 2>/dev/null || fail "the mediator died when the VM's window was truncated"
    wait_log "vGPU vm: its window $state/vm.bar0 shrank (to 0 bytes)"
    [ "$(grep -c "its window $state/vm.bar0 shrank" "$tmp/med.log")" = 1 ] || fail "the retirement was said more than once"
    [ "$(py "[(v['name'], v['window_lost'], v['processes']) for v in s['vgpus']]")" = \
      "[('vm', True, 0), ('a', False, 0)]" ] || fail "vgpu-smi after the truncation: $(smi_json)"
    "$smi" --socket "$tmp/sock" | grep -q "^vm (VM, window lost)" || fail "vgpu-smi does not show the lost window"
    run admitted 1G # another vGPU goes on
    kill -HUP "$medpid"
    wait_log "vGPU vm: its window is whole again"
    [ "$(py "s['vgpus'][0]['window_lost']")" = False ] || fail "the window is still shown lost: $(smi_json)"
    [ "$(stat -c %s "$state/vm.bar0")" = 262144 ] || fail "the reload did not size the window again"
    sys=$tmp/sys/bus/pci/devices
    mkdir -p "$sys/0000:00:05.0"
    echo 0x1af4 >"$sys/0000:00:05.0/vendor"; echo 0x1110 >"$sys/0000:00:05.0/device"
    ln -s "$state/vm.bar0" "$sys/0000:00:05.0/resource2"
    VGPU_SYSFS_ROOT=$tmp/sys VGPU_MEDIATOR_SOCKET=none run admitted 2G # the VM's window works again
    # Cut short (its process table gone), then a restart: the window is made
    # its size again, not refused, and every vGPU is served.
    truncate -s 4096 "$state/vm.bar0"
    wait_log "its window $state/vm.bar0 shrank (to 4096 bytes)"
    stop_mediator TERM
    start_mediator
    grep -q "vGPU vm: $state/vm.bar0 was 4096 bytes, not a VM's window (262144): someone who may write it resized it" \
        "$tmp/med.log" || fail "the restart did not say it sized the window again"
    VGPU_SYSFS_ROOT=$tmp/sys VGPU_MEDIATOR_SOCKET=none run admitted 2G
    run admitted 1G
    ;;

removes-an-older-mediators-window-files)
    # An older mediator kept a host vGPU's window in two files; nothing can
    # be taken back from them: they go, said once, and the vGPU starts anew.
    config "[vgpu.a]" "devices = 0" "memory = 2G" "uids = $me"
    mkdir -m 0755 "$state"
    head -c 4096 /dev/zero >"$state/a.config"
    head -c 4096 /dev/zero >"$state/a.status"
    start_mediator
    grep -q "vGPU a: removed $state/a.config and .status, an older vgpu-mediatord's window" "$tmp/med.log" ||
        fail "the old files' removal was not said"
    [ -e "$state/a.config" ] || [ -e "$state/a.status" ] && fail "the old files are still there"
    run admitted 2G
    ;;

*)
    echo "mediator.sh: unknown scenario $scenario" >&2
    exit 2
    ;;
esac
ok
