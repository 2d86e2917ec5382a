#!/usr/bin/env bash
# The operator's lock (common/operator.h): operator.sh SCENARIO BUILD_DIR
#
# Each scenario runs in a private mount namespace whose /etc is a copy of
# the machine's, with the scenario's /etc/vgpu/vgpu.conf in it: the fixed
# path the libraries read, while the machine's own /etc is never touched.
# Needs root (to own the file as root does, and to plant others' files).
scenario=$1 build=$2
# shellcheck source=test/common/lib.sh
. "$(dirname "$(realpath "$0")")/../common/lib.sh"
need_root "the operator's file must be root's"
if [ -z "${VGPU_TEST_PRIVATE_ETC:-}" ]; then
    need_private_mounts
    etc=$(mktemp -d "${TMPDIR:-/tmp}/vgpu-etc.XXXXXX") || exit 1
    cp -a /etc/. "$etc/" 2>/dev/null
    rm -rf "$etc/vgpu" && install -d -m 755 "$etc/vgpu"
    unshare -m --propagation private env VGPU_TEST_PRIVATE_ETC=1 \
        bash -c 'mount --bind "$0" /etc && exec "$@"' "$etc" bash "$0" "$scenario" "$build"
    rc=$?
    rm -rf "$etc"
    exit $rc
fi

use_build "$build"
med=$vgpu_mediatord
smi=$vgpu_smi
client=$build/test/mediator/mediator_client
fake=$(realpath "$build/test/fake/libcuda.so.1")
fake_nvml=$(realpath "$build/test/fake/libnvidia-ml.so.1")
temp_dir vgpu-op
chmod 755 "$tmp"
fail_logs="$tmp/*.log $tmp/err"
fail_lines=all
fake_gpu shared
OTHER=65534

# operator LINES...: /etc/vgpu/vgpu.conf, as root writes it; the fake driver as the real one.
operator() {
    {
        echo "[vgpu]"
        echo "real_libcuda = $fake"
        echo "real_nvml = $fake_nvml"
        for line in "$@"; do echo "$line"; done
    } >/etc/vgpu/vgpu.conf
    chmod 644 /etc/vgpu/vgpu.conf
}

# mediator NAME MEMORY: a vgpu-mediatord at $tmp/NAME.sock whose one vGPU admits this user.
mediator() {
    mkdir -p "$tmp/$1.state"
    printf '[mediator]\nsocket = %s\nstate_dir = %s\n[vgpu.%s]\ndevices = 0\nmemory = %s\nuids = %s\n' \
        "$tmp/$1.sock" "$tmp/$1.state" "$1" "$2" "$(id -u)" >"$tmp/$1.conf"
    env -u LD_PRELOAD VGPU_LOG=info "$med" --config "$tmp/$1.conf" --foreground >>"$tmp/$1.log" 2>&1 &
    pids="$pids $!"
    for _ in $(seq 1 500); do
        "$smi" --socket "$tmp/$1.sock" >/dev/null 2>&1 && return 0
        sleep 0.02
    done
    fail "mediator $1 did not answer within 10 s"
}

run() {
    "$client" "$@" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/out" "$tmp/err" >&2; fail "mediator_client $* failed"; }
}

# expect_refused WORDS...: no GPU, and one error line holding each of WORDS.
expect_refused() {
    run refused
    n=$(grep -c ': error: ' "$tmp/err")
    [ "$n" -eq 1 ] || fail "$n error lines on stderr, want 1"
    line=$(grep ': error: ' "$tmp/err")
    for want in "$@"; do
        case $line in *"$want"*) ;; *) fail "the refusal does not say \"$want\": $line" ;; esac
    done
}

GiB=1073741824
case $scenario in
environment-cannot-turn-the-mediator-off)
    operator "require = mediator" "mediator_socket = $tmp/op.sock"
    mediator op 2G
    VGPU_MEDIATOR_SOCKET=none VGPU_MEMORY_LIMIT=12G VGPU_BAR0=$tmp/mine.bar0 VGPU_VISIBLE_DEVICES=0,1 \
        VGPU_COMPUTE_SHARE=100% run admitted $((2 * GiB))
    [ ! -e "$tmp/mine.bar0" ] || fail "a standalone BAR0 was made: the environment chose the vGPU"
    ;;
environment-cannot-redirect-the-socket)
    # The user runs a mediator of their own, with a bigger vGPU, and points at it.
    operator "require = mediator" "mediator_socket = $tmp/op.sock"
    mediator op 2G
    mediator mine 12G
    VGPU_MEDIATOR_SOCKET=$tmp/mine.sock run admitted $((2 * GiB))
    ;;
environment-cannot-pick-a-remote-executor)
    # An executor the user started outside any vGPU, named by VGPU_REMOTE:
    # only the mediator may give a remote GPU here.
    operator "require = mediator" "mediator_socket = $tmp/op.sock"
    mediator op 2G
    VGPU_REMOTE=$tmp/mine.sock expect_refused "VGPU_REMOTE=$tmp/mine.sock" "VGPU_REMOTE=mediator" /etc/vgpu/vgpu.conf
    ;;
missing-mediator-refused)
    operator "require = mediator" "mediator_socket = $tmp/op.sock"
    VGPU_MEDIATOR_SOCKET=none VGPU_MEMORY_LIMIT=12G expect_refused \
        "the operator requires vgpu-mediatord" /etc/vgpu/vgpu.conf "$tmp/op.sock" "is missing"
    ;;
environment-cannot-swap-the-driver)
    # A "driver" of the user's own (any copy a user could write could lie
    # about what it allocates), named by VGPU_REAL_LIBCUDA or LD_LIBRARY_PATH.
    operator "require = mediator" "mediator_socket = $tmp/op.sock"
    mediator op 2G
    mkdir -p "$tmp/mine" && cp "$fake" "$tmp/mine/libcuda.so.1" && chown -R $OTHER "$tmp/mine"
    VGPU_LOG=info VGPU_LOG_FILE=$tmp/client.log VGPU_REAL_LIBCUDA=$tmp/mine/libcuda.so.1 \
        LD_LIBRARY_PATH=$tmp/mine:${LD_LIBRARY_PATH:-} run admitted $((2 * GiB))
    grep -q "forwarding to the CUDA driver at $fake " "$tmp/client.log" || fail "not forwarded to the operator's driver"
    ;;
operator-driver-must-be-roots)
    operator "require = mediator" "mediator_socket = $tmp/op.sock"
    mkdir -p "$tmp/mine" && cp "$fake" "$tmp/mine/libcuda.so.1" && chown -R $OTHER "$tmp/mine"
    sed -i "s|^real_libcuda = .*|real_libcuda = $tmp/mine/libcuda.so.1|" /etc/vgpu/vgpu.conf
    mediator op 2G
    VGPU_LOG=info VGPU_LOG_FILE=$tmp/client.log "$client" refused >/dev/null 2>&1
    grep -q "not root's" "$tmp/client.log" || fail "a driver file root does not own was used"
    ;;
untrusted-settings-refused)
    operator "require = none"
    chown $OTHER /etc/vgpu/vgpu.conf
    VGPU_MEMORY_LIMIT=1G expect_refused /etc/vgpu/vgpu.conf "owned by uid $OTHER, not root"
    chown 0 /etc/vgpu/vgpu.conf && chmod 666 /etc/vgpu/vgpu.conf
    VGPU_MEMORY_LIMIT=1G expect_refused /etc/vgpu/vgpu.conf "writable by group or others (mode 0666)"
    chmod 644 /etc/vgpu/vgpu.conf && chmod 777 /etc/vgpu
    VGPU_MEMORY_LIMIT=1G expect_refused /etc/vgpu/vgpu.conf "is in /etc/vgpu, which is writable by group or others"
    ;;
malformed-settings-refused)
    operator "require = maybe"
    VGPU_MEMORY_LIMIT=1G expect_refused /etc/vgpu/vgpu.conf "line 4: require = maybe: expected mediator"
    ;;
ambiguous-or-empty-settings-fail-closed)
    # Whichever of two settings won, an operator reading the file could
    # take the other; an empty or half-written file (an editor's save cut
    # short) is no lock lifted.  Each is refused, as a file that does not parse.
    operator "require = mediator" "mediator_socket = $tmp/op.sock" "require = none"
    VGPU_MEDIATOR_SOCKET=none VGPU_MEMORY_LIMIT=1G expect_refused /etc/vgpu/vgpu.conf \
        "line 6: require is set twice (first at line 4)"
    operator "require = mediator" "[vgpu]" "require = none"
    VGPU_MEDIATOR_SOCKET=none VGPU_MEMORY_LIMIT=1G expect_refused /etc/vgpu/vgpu.conf \
        "line 5: a second [vgpu] section (the first at line 1)"
    : >/etc/vgpu/vgpu.conf
    VGPU_MEDIATOR_SOCKET=none VGPU_MEMORY_LIMIT=1G expect_refused /etc/vgpu/vgpu.conf \
        "says no require = (mediator, guest-window or none)"
    printf '[vgpu]\nreal_libcuda = %s\n' "$fake" >/etc/vgpu/vgpu.conf
    VGPU_MEDIATOR_SOCKET=none VGPU_MEMORY_LIMIT=1G expect_refused /etc/vgpu/vgpu.conf "says no require ="
    ;;
require-none-leaves-the-environment-to-decide)
    operator "require = none"
    VGPU_MEDIATOR_SOCKET=none VGPU_MEMORY_LIMIT=1G VGPU_BAR0=$tmp/mine.bar0 run admitted $GiB
    ;;
*)
    echo "operator.sh: unknown scenario $scenario" >&2
    exit 2
    ;;
esac
ok
