# What the scripts that test vgpu-mediatord end to end share (mediator.sh,
# watch.sh, and the nvml, cluster, stress and kubernetes suites' scripts):
# sourced with $scenario and $build set, after test/common/lib.sh.  Each scenario
# writes its config into a fresh temp dir (socket, state_dir there too),
# starts the mediator over the fake driver's NVML, and runs
# test/mediator_client under vgpu (the meson test environment: LD_PRELOAD,
# VGPU_REAL_*) against it; vgpu-smi --json is read with python3.
# shellcheck source=test/common/lib.sh
. "$(dirname "$(realpath "${BASH_SOURCE[0]}")")/../common/lib.sh"
use_build "$build"
med=$vgpu_mediatord
smi=$vgpu_smi
client=$build/test/mediator/mediator_client
temp_dir vgpu-med
conf=$tmp/conf
state=$tmp/state
medpid=
at_exit '[ -n "$medpid" ] && kill -9 "$medpid"'
fail_logs=$tmp/med.log
fail_lines=all

export VGPU_MEDIATOR_SOCKET=$tmp/sock
fake_gpu shared # the fake GPU's usage, shared by every process
me=$(id -u)
my_gid=$(id -g)
MiB=1048576
GiB=1073741824
OVH=$((256 * MiB)) # the fake driver's context overhead

# config [VGPU-SECTION-LINES...]: the [mediator] section, then the lines given.
config() {
    {
        printf '[mediator]\nsocket = %s\nstate_dir = %s\n' "$tmp/sock" "$state"
        for line in "$@"; do printf '%s\n' "$line"; done
    } >"$conf"
}

smi_json() {
    "$smi" --socket "$tmp/sock" --json
}

# py EXPR: evaluates EXPR over vgpu-smi's JSON (as s); prints the result.
py() {
    smi_json | python3 -c "import json,sys; s=json.load(sys.stdin); print($1)"
}

tenant() { # ACTION ARGS...: test/mediator/mediator_tenant.py against this mediator
    python3 "$tests_dir/mediator/mediator_tenant.py" "$tmp/sock" "$@"
}

# gone PID: the process has ended (a daemon's zombie, reaped by someone else, counts).
gone() {
    [ ! -e "/proc/$1" ] || grep -q '^[0-9]* (.*) [ZX] ' "/proc/$1/stat" 2>/dev/null
}

# wait_log TEXT [SECONDS]: until the mediator's log holds TEXT.
wait_log() {
    for _ in $(seq 1 $((${2:-10} * 50))); do grep -q -- "$1" "$tmp/med.log" && return 0; sleep 0.02; done
    fail "no \"$1\" in the log"
}

# start_mediator [ARGS...]; $wrap, if set, runs it (e.g. under prlimit); $medlog is its VGPU_LOG.
start_mediator() {
    ${wrap:-} env -u LD_PRELOAD VGPU_LOG="${medlog:-info}" "$med" --config "$conf" --foreground "$@" >>"$tmp/med.log" 2>&1 &
    medpid=$!
    for _ in $(seq 1 500); do
        "$smi" --socket "$tmp/sock" >/dev/null 2>&1 && return 0
        if ! kill -0 "$medpid" 2>/dev/null; then
            wait "$medpid"
            fail "the mediator exited with $?"
        fi
        sleep 0.02
    done
    fail "the mediator did not answer within 10 s"
}

# ended_within SECONDS: whether the mediator, this shell's child, ended
# within SECONDS (past them it is killed).  Its own wait, not /proc: a PID
# the shell reaped may be another process's already (a flood of threads
# wraps a pid_max of 32768 in seconds).
ended_within() {
    (exec >/dev/null 2>&1; sleep "$1"; kill -9 "$medpid") & local dog=$!
    wait "$medpid"
    local rc=$?
    kill "$dog" 2>/dev/null
    wait "$dog" 2>/dev/null
    [ "$rc" -ne 137 ]
}

stop_mediator() { # SIGNAL
    kill "-$1" "$medpid"
    wait "$medpid" 2>/dev/null
    medpid=
}

# run SCENARIO ARGS...: the client must pass; what it says (not vgpu's log) is shown.
run() {
    local out
    out=$("$client" "$@" 2>&1) || { echo "$out" >&2; fail "mediator_client $* failed"; }
    echo "$out" | grep -v '^vgpu\['
}

# expect_refused WORDS...: the client is refused with one error line holding each of WORDS.
expect_refused() {
    "$client" refused >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/out" "$tmp/err" >&2; fail "mediator_client refused failed"; }
    n=$(grep -c ': error: ' "$tmp/err")
    [ "$n" -eq 1 ] || { cat "$tmp/err" >&2; fail "$n error lines on stderr, want 1"; }
    line=$(grep ': error: ' "$tmp/err")
    for want in "$@"; do
        case $line in *"$want"*) ;; *) fail "the refusal does not say \"$want\": $line" ;; esac
    done
}

# hold BYTES NAME [MORE]: a process holding BYTES in the background; its pid in $held.
hold() {
    "$client" hold "$1" "$tmp/$2.ready" "$tmp/$2.go" ${3:+"$3"} >>"$tmp/client.out" 2>&1 &
    pids="$pids $!"
    wait_file "$tmp/$2.ready"
    held=$(cat "$tmp/$2.ready")
}

# expect_config_error LINE WORDS... < CONFIG-BODY: --check-config and a start
# both refuse the file with FILE:LINE: and each of WORDS.  The body follows a
# 3-line [mediator] section (its first line is line 4), unless RAW=1.
expect_config_error() {
    local line=$1; shift
    { [ "${RAW:-}" = 1 ] || printf '[mediator]\nsocket = %s\nstate_dir = %s\n' "$tmp/sock" "$state"; cat; } >"$conf"
    for mode in --check-config --foreground; do
        env -u LD_PRELOAD timeout 10 "$med" --config "$conf" $mode >"$tmp/out" 2>&1
        rc=$?
        [ $rc = 1 ] || fail "vgpu-mediatord $mode exited $rc on a bad config: $(cat "$tmp/out")"
        msg=$(cat "$tmp/out")
        case $msg in *"$conf:$line: "*) ;; *) fail "$mode did not point at $conf:$line: $msg" ;; esac
        for want in "$@"; do
            case $msg in *"$want"*) ;; *) fail "$mode did not say \"$want\": $msg" ;; esac
        done
    done
    echo "refused: $msg"
}

