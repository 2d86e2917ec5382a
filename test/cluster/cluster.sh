#!/usr/bin/env bash
# Containers told apart by their cgroups (docs/guide/containers.md): cluster.sh SCENARIO BUILD_DIR.
# A vGPU's cgroups =, the vGPUs containers = makes, bound by vgpu-cdi-hook
# (BIND), what the device plugin reads of them (CLUSTER), and the GPUs' health.
# Needs root and a writable cgroup v2 hierarchy (else skipped, 77).
scenario=$1 build=$2
# shellcheck source=test/mediator/mediator_lib.sh
. "$(dirname "$(realpath "$0")")/../mediator/mediator_lib.sh"
hook=$vgpu_cdi_hook

need_root "the test makes cgroups"
cg_mount=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
own=$(sed -n 's/^0:://p' /proc/self/cgroup)
[ -n "$cg_mount" ] && [ -n "$own" ] || skip "no cgroup v2 hierarchy"
# Test cgroups beside ours, as /proc/PID/cgroup names them.
base=/vgpu-test.$$
mkdir "$cg_mount$base" 2>/dev/null || skip "cannot make a cgroup in $cg_mount"
# At exit, the processes in the test cgroups end before the cgroups go.
remove_cgroups() {
    for p in $pids; do kill -9 "$p"; done
    for p in $pids; do wait "$p"; done
    pids=
    for d in "$cg_mount$base"/*/ "$cg_mount$base"; do [ -d "$d" ] && rmdir "$d"; done
}
at_exit remove_cgroups

# cgroup NAME: makes $base/NAME; prints its path.
cgroup() { mkdir -p "$cg_mount$base/$1" && echo "$base/$1"; }

# in_cg CGROUP CMD...: CMD, run in CGROUP.
in_cg() {
    local cg=$1; shift
    sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg_mount$cg" "$@"
}

# sleeper CGROUP: a process that stays in CGROUP (a container's first); its pid in $sleeper.
sleeper() {
    sh -c 'echo $$ > "$0/cgroup.procs" && exec sleep 600' "$cg_mount$1" &
    sleeper=$!
    pids="$pids $sleeper"
    for _ in $(seq 1 500); do grep -q "^0::$1\$" "/proc/$sleeper/cgroup" 2>/dev/null && return 0; sleep 0.01; done
    fail "pid $sleeper did not enter $1"
}

# in_run CGROUP SCENARIO ARGS...: run, in CGROUP.
in_run() {
    local cg=$1 out; shift
    out=$(in_cg "$cg" "$client" "$@" 2>&1) || { echo "$out" >&2; fail "mediator_client $* in $cg failed"; }
}

# in_refused CGROUP WORDS...: the client in CGROUP is refused, saying each of WORDS.
in_refused() {
    local cg=$1; shift
    in_cg "$cg" "$client" refused >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/out" "$tmp/err" >&2; fail "refused failed"; }
    line=$(grep ': error: ' "$tmp/err")
    for want in "$@"; do
        case $line in *"$want"*) ;; *) fail "the refusal in $cg does not say \"$want\": $line" ;; esac
    done
}

query() { python3 "$here/cluster_query.py" "$tmp/sock" "$@"; }

# record NAME FIELD: a field of vGPU NAME's CLUSTER record.
record() {
    query cluster | python3 -c "import json,sys; r=[v for v in json.load(sys.stdin)['vgpus'] if v['name']=='$1']; print(r[0]['$2'] if r else 'none')"
}

case $scenario in
admit-by-cgroup)
    # The cgroup decides, whatever the uid: a process of root in b's cgroup
    # gets b (2G), although a's uids = names root; and b alone.
    config "[vgpu.a]" "devices = 0" "memory = 1G" "compute = 50" "uids = $me" \
           "[vgpu.b]" "devices = 0" "memory = 2G" "compute = 50" "cgroups = $base/b/"
    b=$(cgroup b); deeper=$(cgroup b/inner); other=$(cgroup other)
    start_mediator
    run admitted 1G
    in_run "$b" admitted 2G
    in_run "$deeper" admitted 2G # below it: a container's own sub-cgroups
    in_run "$other" admitted 1G  # not b's: by uid
    VGPU_NAME=a in_refused "$b" "vGPU a does not admit cgroup $b" "another vGPU's"
    grep -q "admitted pid .* to vGPU b" "$tmp/med.log" || fail "no admission to b logged"
    # A cgroup whose name only starts like b's is not below it.
    mkdir "$cg_mount${b}x"
    in_run "${b}x" admitted 1G
    rmdir "$cg_mount${b}x"
    ;;

containers-bound-by-the-hook)
    config "[vgpu.train]" "devices = 0" "memory = 1G" "compute = 50" "containers = 2" \
           "[vgpu.host]" "devices = 1" "memory = 3G" "uids = $me"
    c1=$(cgroup c1); c2=$(cgroup c2)
    start_mediator
    [ "$(record train-0 class) $(record train-1 memory) $(record train-2 name)" = "train $GiB none" ] ||
        fail "CLUSTER: $(query cluster)"
    [ "$(record train-0 flags) $(record host flags)" = "1 0" ] || fail "flags: $(query cluster)"
    # Not bound yet: a container's process is admitted by uid, never to a container's vGPU.
    in_run "$c1" admitted 3G
    VGPU_NAME=train-0 in_refused "$c1" "vGPU train-0 does not admit uid" "the container it is given to"
    gen=$(query cluster | python3 -c "import json,sys; print(json.load(sys.stdin)['generation'])")
    # The runtime's hook, with the OCI state on its standard input.
    sleeper "$c1"
    printf '{"ociVersion":"1.0.2","id":"c1","status":"created","pid":%d,"bundle":"/b","annotations":{"pid":"1"}}' \
        "$sleeper" | "$hook" bind --vgpu train-0 --socket "$tmp/sock" || fail "the hook failed"
    [ "$(record train-0 flags)" = 3 ] || fail "train-0 not shown bound: $(query cluster)"
    [ "$(query cluster | python3 -c "import json,sys; print(json.load(sys.stdin)['generation'])")" != "$gen" ] ||
        fail "the generation did not move with the binding"
    in_run "$c1" admitted 1G
    VGPU_NAME=host in_refused "$c1" "vGPU host does not admit cgroup $c1"
    in_run "$c2" admitted 3G # another container, not bound: still by uid
    # One vGPU a container: the second binding of c1 is refused, and said.
    "$hook" bind --vgpu train-1 --socket "$tmp/sock" --pid "$sleeper" 2>"$tmp/err" && fail "c1 bound twice"
    grep -q "vgpu-cdi-hook: vGPU train-1 for pid $sleeper: .*cgroup $c1 is vGPU train-0's" "$tmp/err" ||
        fail "the hook's refusal: $(cat "$tmp/err")"
    "$hook" bind --vgpu host --socket "$tmp/sock" --pid "$sleeper" 2>"$tmp/err" && fail "host bound"
    grep -q "not made for containers" "$tmp/err" || fail "binding a host vGPU: $(cat "$tmp/err")"
    echo '{"id":"x"}' | "$hook" bind --vgpu train-1 --socket "$tmp/sock" 2>"$tmp/err" && fail "bound without a pid"
    grep -q "no container pid in the OCI state" "$tmp/err" || fail "no pid: $(cat "$tmp/err")"
    # The binding survives a restart of the mediator (its journal).
    stop_mediator TERM
    start_mediator
    [ "$(record train-0 flags)" = 3 ] || fail "train-0's binding lost in a restart: $(query cluster)"
    in_run "$c1" admitted 1G
    # The device plugin's Allocate: the vGPU goes to its next container.
    [ "$(query bind train-0 0)" = "" ] || fail "unbinding"
    [ "$(record train-0 flags)" = 1 ] || fail "train-0 still bound: $(query cluster)"
    in_run "$c1" admitted 3G
    ;;

bind-only-from-the-host)
    config "[vgpu.train]" "devices = 0" "memory = 1G" "containers = 1"
    c1=$(cgroup c1)
    start_mediator
    sleeper "$c1"
    # Root in a container (its own mount and PID namespaces) may not bind.
    if unshare --mount --pid --fork true 2>/dev/null; then
        unshare --mount --pid --fork python3 "$here/cluster_query.py" "$tmp/sock" bind train-0 "$sleeper" >"$tmp/out" &&
            fail "root in a container bound a vGPU: $(cat "$tmp/out")"
        grep -q "refused: BIND is taken from root in the host's PID and mount namespaces alone" "$tmp/out" ||
            fail "the refusal in a container: $(cat "$tmp/out")"
        # A pod in the host's PID namespace (its own mount namespace: the device
        # plugin's) may take a vGPU back from its container, not give itself one.
        unshare --mount python3 "$here/cluster_query.py" "$tmp/sock" bind train-0 "$sleeper" >"$tmp/out" &&
            fail "root in another mount namespace bound a vGPU: $(cat "$tmp/out")"
        grep -q "refused: BIND is taken from root in the host's PID and mount namespaces alone" "$tmp/out" ||
            fail "the refusal in another mount namespace: $(cat "$tmp/out")"
        "$hook" bind --vgpu train-0 --socket "$tmp/sock" --pid "$sleeper" || fail "the hook as root"
        [ "$(record train-0 flags)" = 3 ] || fail "train-0 not bound: $(query cluster)"
        [ "$(unshare --mount python3 "$here/cluster_query.py" "$tmp/sock" bind train-0 0)" = "" ] ||
            fail "the device plugin's unbinding from its own mount namespace was refused"
        [ "$(record train-0 flags)" = 1 ] || fail "train-0 still bound: $(query cluster)"
    else
        echo "# unshare does not run here: the container's case is skipped"
    fi
    if command -v setpriv >/dev/null; then
        chmod 755 "$tmp" && sed -i 's/^\[mediator\]$/&\nsocket_mode = 0666/' "$conf" || fail "cannot open the socket"
        stop_mediator TERM
        start_mediator
        setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 "$here/cluster_query.py" "$tmp/sock" bind train-0 \
            "$sleeper" >"$tmp/out" && fail "uid 65534 bound a vGPU"
        grep -q "refused: BIND is taken from root" "$tmp/out" || fail "as uid 65534: $(cat "$tmp/out")"
        # Nor can a process move itself into a bound cgroup: cgroup.procs is root's.
        "$hook" bind --vgpu train-0 --socket "$tmp/sock" --pid "$sleeper" || fail "the hook as root"
        setpriv --reuid=65534 --regid=65534 --clear-groups sh -c 'echo $$ > "$0/cgroup.procs"' "$cg_mount$c1" \
            2>/dev/null && fail "uid 65534 moved itself into a container's cgroup"
    else
        echo "# no setpriv: the checks as another user are skipped"
    fi
    # A process in the root cgroup (of the mediator's cgroup namespace) is no container.
    sh -c 'echo $$ > "$0/cgroup.procs" && exec sleep 600' "$cg_mount" &
    rooted=$!
    pids="$pids $rooted"
    for _ in $(seq 1 500); do grep -qx "0::/" "/proc/$rooted/cgroup" && break; sleep 0.01; done
    [ "$(query bind train-0 "$rooted")" = "refused: BIND train-0: pid $rooted is in the root cgroup, which holds every process: a container has a cgroup of its own" ] ||
        fail "a process of the root cgroup bound: $(query bind train-0 "$rooted")"
    ;;

xid-marks-unhealthy)
    : >"$tmp/xid"
    config "[vgpu.train]" "devices = 0" "memory = 1G" "compute = 50" "containers = 2" \
           "[vgpu.infer]" "devices = 1" "memory = 1G" "containers = 1"
    FAKENVML_XID_FILE=$tmp/xid start_mediator
    [ "$(record train-0 flags) $(record infer-0 flags)" = "1 1" ] || fail "not healthy at start: $(query cluster)"
    gen=$(query cluster | python3 -c "import json,sys; print(json.load(sys.stdin)['generation'])")
    echo "0 43" >>"$tmp/xid" # an application's own fault: the GPU is fine
    echo "1 43" >>"$tmp/xid"
    echo "0 79" >>"$tmp/xid" # fallen off the bus
    for _ in $(seq 1 500); do [ "$(record train-1 xid)" = 79 ] && break; sleep 0.02; done
    [ "$(record train-0 flags) $(record train-1 flags) $(record train-0 xid)" = "5 5 79" ] ||
        fail "GPU 0's vGPUs not unhealthy: $(query cluster)"
    [ "$(record infer-0 flags) $(record infer-0 xid)" = "1 0" ] || fail "GPU 1's vGPU: $(query cluster)"
    [ "$(query cluster | python3 -c "import json,sys; print(json.load(sys.stdin)['generation'])")" != "$gen" ] ||
        fail "the generation did not move with the health"
    grep -q "GPU 0 had XID 79" "$tmp/med.log" || fail "the XID not logged"
    ;;

one-container-a-vgpu)
    # A vGPU whose container still runs is not bound to another; once its
    # cgroup is empty it is.  A vGPU the config drops keeps its container:
    # admitted nowhere, not by its uid elsewhere.
    config "[vgpu.train]" "devices = 0" "memory = 1G" "compute = 30" "containers = 2" \
           "[vgpu.host]" "devices = 1" "memory = 3G" "uids = $me"
    c1=$(cgroup c1); c2=$(cgroup c2)
    start_mediator
    sleeper "$c1"; first=$sleeper
    sleeper "$c2"; second=$sleeper
    "$hook" bind --vgpu train-0 --socket "$tmp/sock" --pid "$first" || fail "binding c1"
    "$hook" bind --vgpu train-0 --socket "$tmp/sock" --pid "$second" 2>"$tmp/err" && fail "train-0 bound to c2 while c1 runs"
    grep -q "it is the container's of cgroup $c1, which still runs" "$tmp/err" || fail "the refusal: $(cat "$tmp/err")"
    kill "$first"
    wait "$first" 2>/dev/null
    "$hook" bind --vgpu train-0 --socket "$tmp/sock" --pid "$second" || fail "train-0 not bound to c2 once c1 ended"
    in_run "$c2" admitted 1G
    # train-1 for c1 again; then the class shrinks to one vGPU: train-1 retires.
    sleeper "$c1"
    "$hook" bind --vgpu train-1 --socket "$tmp/sock" --pid "$sleeper" || fail "binding train-1"
    in_run "$c1" admitted 1G
    config "[vgpu.train]" "devices = 0" "memory = 1G" "compute = 30" "containers = 1" \
           "[vgpu.host]" "devices = 1" "memory = 3G" "uids = $me"
    kill -HUP "$medpid"
    wait_log "reloaded"
    in_refused "$c1" "no vGPU admits uid $me"
    in_run "$c2" admitted 1G # train-0's container goes on
    ;;

connections-are-capped-per-vgpu)
    # Containers all run as root: one container's connections count
    # against its vGPU's cap, not against root's everywhere.
    config "max_connections_per_uid = 3" \
           "[vgpu.train]" "devices = 0" "memory = 1G" "compute = 30" "containers = 1" \
           "[vgpu.host]" "devices = 1" "memory = 3G" "uids = $me"
    c1=$(cgroup c1)
    start_mediator
    sleeper "$c1"
    "$hook" bind --vgpu train-0 --socket "$tmp/sock" --pid "$sleeper" || fail "binding c1"
    in_cg "$c1" python3 "$here/../mediator/mediator_tenant.py" "$tmp/sock" connections 4 "$tmp/go" >"$tmp/conns" 2>&1 &
    tpid=$!
    pids="$pids $tpid"
    for _ in $(seq 1 500); do grep -q "^refused" "$tmp/conns" && break; sleep 0.02; done
    grep -q "^admitted 3$" "$tmp/conns" || fail "not 3 connections admitted: $(cat "$tmp/conns")"
    grep -q "^refused: uid $me (.*) has 3 connections to vgpu-mediatord from the cgroup of vGPU train-0" "$tmp/conns" ||
        fail "the 4th connection of the container: $(cat "$tmp/conns")"
    run admitted 3G # root on the host is not held back by the container
    "$hook" bind --vgpu train-0 --socket "$tmp/sock" --pid "$sleeper" || fail "the hook was held back by the container"
    touch "$tmp/go"
    ;;

mediator-in-its-own-cgroup-namespace)
    # From a cgroup namespace of its own the mediator reads other cgroups
    # as paths with "..": it cannot tell a container, so it admits no one
    # while a vGPU admits by cgroup, and says why.
    command -v unshare >/dev/null && unshare --cgroup true 2>/dev/null || skip "no unshare --cgroup"
    config "[vgpu.train]" "devices = 0" "memory = 1G" "compute = 30" "containers = 1" \
           "[vgpu.host]" "devices = 1" "memory = 3G" "uids = $me"
    med_cg=$(cgroup mediator); c1=$(cgroup c1)
    echo $$ >"$cg_mount$med_cg/cgroup.procs"
    wrap="unshare --cgroup" start_mediator
    echo $$ >"$cg_mount$own/cgroup.procs"
    in_refused "$c1" "this one's cannot be told" "cgroup namespace of its own"
    ;;

config-errors)
    expect_config_error 7 "containers = makes vGPUs that each admit the one container" <<'CONF'
[vgpu.train]
devices = 0
uids = 0
containers = 2
CONF
    expect_config_error 6 'cgroups: "/" is not a cgroup below the root' <<'CONF'
[vgpu.train]
devices = 0
cgroups = /
CONF
    expect_config_error 6 "containers = 100: how many containers" "1 to 64" <<'CONF'
[vgpu.train]
devices = 0
containers = 100
CONF
    expect_config_error 7 "vGPU t-0 is defined twice" "one by containers =" <<'CONF'
[vgpu.t-0]
devices = 0
uids = 0
[vgpu.t]
devices = 1
containers = 2
CONF
    expect_config_error 6 "vGPU abcdefghijklmnopqrstuvwxyz1234's are named" <<'CONF'
[vgpu.abcdefghijklmnopqrstuvwxyz1234]
devices = 0
containers = 3
CONF
    # A class is a Kubernetes resource and CDI devices: names a kubelet refuses are refused here.
    expect_config_error 6 "becomes the Kubernetes resource vgpu.dev/_edge" "begin and end with a letter or a digit" <<'CONF'
[vgpu._edge]
devices = 0
containers = 2
CONF
    expect_config_error 6 "the CDI devices vgpu.dev/vgpu=edge.-N" <<'CONF'
[vgpu.edge.]
devices = 0
containers = 2
CONF
    ;;

*)
    echo "unknown scenario $scenario" >&2
    exit 2
    ;;
esac
echo "ok ($scenario)"
