#!/usr/bin/env bash
# vgpu-device-plugin against a fake kubelet and vgpu-mediatord over the fake
# driver: device_plugin.sh SCENARIO BUILD_DIR PLUGIN FAKE_KUBELET
# (PLUGIN "none": not built, -Dkubernetes; skipped).  The fake kubelet
# (fake-kubelet/) takes commands on a FIFO and writes one JSON line per
# event to $tmp/kubelet.out; events.py waits for and reads them.
set -u
scenario=$1
build=$2
plugin_bin=$3
kubelet_bin=$4
if [ "$plugin_bin" = none ] || [ ! -x "$plugin_bin" ] || [ ! -x "$kubelet_bin" ]; then
    echo "# vgpu-device-plugin is not built (go, protoc and Debian's grpc-go; -Dkubernetes): skipped"
    exit 77
fi
here=$(dirname "$(realpath "$0")")
# shellcheck source=test/mediator/mediator_lib.sh
. "$here/../mediator/mediator_lib.sh"
hook=$build/tools/vgpu-cdi-hook
dp=$tmp/device-plugins # the kubelet's directory
podres=$tmp/pod-resources.sock
out=$tmp/kubelet.out
plugin_pid=
kubelet_pid=

fail() {
    echo "FAIL ($scenario): $*" >&2
    for f in "$tmp/med.log" "$tmp/plugin.log" "$out" "$tmp/kubelet.err"; do
        [ -s "$f" ] && { echo "---- $(basename "$f") ----"; tail -n 40 "$f"; } >&2
    done
    exit 1
}

ev() { python3 "$here/events.py" "$@"; }

# mark: the events so far; wait_event and friends look past the mark given.
mark() { wc -l <"$out"; }

# wait_event FROM EXPR [SECONDS]: the first event after line FROM for which
# the Python expression EXPR (over the event, e) holds; its JSON on stdout.
wait_event() {
    ev wait "$out" "$1" "${3:-60}" "$2" || fail "no event after line $1 where $2"
}

# get JSON EXPR: EXPR over the event e.
get() { ev get "$1" "$2"; }

# kubelet LINE: a command to the fake kubelet.
kubelet() { echo "$*" >&3; }

# ask CMD ARGS...: a command, and its answer (the next event named CMD).
ask() {
    local m
    m=$(mark)
    kubelet "$@"
    wait_event "$m" "e['event'] == '$1'"
}

start_kubelet() {
    mkdir -p "$dp"
    mkfifo "$tmp/ctl"
    exec 3<>"$tmp/ctl"
    "$kubelet_bin" --dir "$dp" --pod-resources "$podres" <"$tmp/ctl" >>"$out" 2>>"$tmp/kubelet.err" &
    kubelet_pid=$!
    pids="$pids $kubelet_pid"
    wait_event 0 "e['event'] == 'listening'" >/dev/null
}

# start_plugin [ARGS...]: the plugin, polling the mediator every 200 ms.
start_plugin() {
    "$plugin_bin" --kubelet-dir "$dp" --pod-resources-socket "$podres" --mediator-socket "$tmp/sock" \
        --poll 200ms "$@" >>"$tmp/plugin.log" 2>&1 &
    plugin_pid=$!
    pids="$pids $plugin_pid"
}

# devices RESOURCE FROM: the summary of the latest list of RESOURCE after
# line FROM that equals WANT, waited for.
wait_devices() {
    local res=$1 from=$2 want=$3
    wait_event "$from" "e['event'] == 'devices' and e['resource'] == '$res' and e['summary'] == '$want'" >/dev/null
}

# registered RESOURCE FROM: waits for RESOURCE's registration and its first list.
registered() {
    local r
    r=$(wait_event "$2" "e['event'] == 'register' and e['resource'] == '$1'")
    [ "$(get "$r" "e['version'], e['endpoint'], e['options']['pre_start_required'], e['options']['get_preferred_allocation_available']")" = \
      "('v1beta1', 'vgpu-${1#vgpu.dev/}.sock', True, True)" ] || fail "registration of $1: $r"
}

reload() { # CONFIG LINES...: the mediator rereads its file
    config "$@"
    local n
    n=$(grep -c "reloaded" "$tmp/med.log")
    kill -HUP "$medpid"
    for _ in $(seq 1 1500); do [ "$(grep -c "reloaded" "$tmp/med.log")" -gt "$n" ] && return 0; sleep 0.02; done
    fail "the mediator did not reload"
}

# cgroups_here: can this test make cgroups (root, cgroup v2) to bind vGPUs to?
cg_mount=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
cg_base=
cgroups_here() {
    [ "$me" = 0 ] && [ -n "$cg_mount" ] && [ -x "$hook" ] || return 1
    [ -n "$cg_base" ] && return 0
    cg_base=/vgpu-k8s-test.$$
    mkdir "$cg_mount$cg_base" 2>/dev/null || { cg_base=; return 1; }
}
cleanup_all() {
    exec 2>/dev/null
    for p in $pids; do kill -9 "$p"; done
    for p in $pids; do wait "$p"; done
    pids=
    if [ -n "$cg_base" ]; then
        for d in "$cg_mount$cg_base"/*/ "$cg_mount$cg_base"; do [ -d "$d" ] && rmdir "$d"; done
    fi
    cleanup
}
trap cleanup_all EXIT

# bound_container VGPU: a process in a cgroup of its own (a container's),
# and VGPU bound to it by vgpu-cdi-hook, as the runtime does.
bound_container() {
    mkdir -p "$cg_mount$cg_base/$1"
    sh -c 'echo $$ > "$0/cgroup.procs" && exec sleep 600' "$cg_mount$cg_base/$1" &
    local pid=$!
    pids="$pids $pid"
    for _ in $(seq 1 500); do grep -q "^0::$cg_base/$1\$" "/proc/$pid/cgroup" 2>/dev/null && break; sleep 0.01; done
    "$hook" bind --vgpu "$1" --socket "$tmp/sock" --pid "$pid" >"$tmp/hook.out" 2>&1 ||
        fail "vgpu-cdi-hook bind $1: $(cat "$tmp/hook.out")"
}

# (Each vGPU a section makes has its compute share: N of them must fit in a GPU.)
two_classes=("[vgpu.train]" "devices = 0" "memory = 1G" "compute = 25" "containers = 3"
             "[vgpu.infer]" "devices = 1" "memory = 2G" "compute = 50" "containers = 2"
             "[vgpu.host]" "devices = 0" "memory = 1G" "compute = 25" "uids = $me")

case $scenario in
registers-each-class)
    # Two classes, two resources, each with its vGPUs; a vGPU not made for
    # containers (host) is no resource.
    config "${two_classes[@]}"
    start_mediator
    start_kubelet
    start_plugin
    registered vgpu.dev/train 0
    registered vgpu.dev/infer 0
    wait_devices vgpu.dev/train 0 "train-0=Healthy train-1=Healthy train-2=Healthy"
    wait_devices vgpu.dev/infer 0 "infer-0=Healthy infer-1=Healthy"
    o=$(wait_event 0 "e['event'] == 'options' and e['resource'] == 'vgpu.dev/train'")
    [ "$(get "$o" "e['pre_start_required'], e['get_preferred_allocation_available']")" = "(True, True)" ] ||
        fail "GetDevicePluginOptions: $o"
    [ -S "$dp/vgpu-train.sock" ] && [ -S "$dp/vgpu-infer.sock" ] || fail "the plugin's sockets: $(ls "$dp")"
    # Some polls later, still two resources, each registered once.
    sleep 1
    ask echo barrier >/dev/null
    [ "$(ev count "$out" "e['event'] == 'register'")" = 2 ] || fail "registrations: $(grep register "$out")"
    [ -e "$dp/vgpu-host.sock" ] && fail "a socket for the host vGPU"
    grep -q '"summary":"[^"]*host' "$out" && fail "the host vGPU was advertised"
    grep -q "vgpu.dev/train: registered with the kubelet" "$tmp/plugin.log" || fail "no registration logged"
    ;;

preferred-allocation)
    : >"$tmp/xid"
    config "[vgpu.train]" "devices = 0" "memory = 1G" "compute = 25" "containers = 4" \
           "[vgpu.infer]" "devices = 1" "memory = 1G" "compute = 30" "containers = 3"
    FAKENVML_XID_FILE=$tmp/xid start_mediator
    start_kubelet
    start_plugin
    wait_devices vgpu.dev/train 0 "train-0=Healthy train-1=Healthy train-2=Healthy train-3=Healthy"
    # In name order, from what the kubelet offers, must_include first.
    a=$(ask preferred vgpu.dev/train 2 train-3,train-2,train-1,train-0)
    [ "$(get "$a" "e['devices']")" = "['train-0', 'train-1']" ] || fail "preferred: $a"
    a=$(ask preferred vgpu.dev/train 2 train-3,train-2,train-1,train-0 train-3)
    [ "$(get "$a" "e['devices']")" = "['train-3', 'train-0']" ] || fail "preferred with must_include: $a"
    a=$(ask preferred vgpu.dev/train 3 train-2,train-3)
    [ "$(get "$a" "e['devices']")" = "['train-2', 'train-3']" ] || fail "preferred of two offered: $a"
    # A vGPU a container is bound to comes after the free ones.
    if cgroups_here; then
        m=$(mark)
        bound_container train-0
        bound_container train-2
        # The binding moved the generation: a new list.
        wait_event "$m" "e['event'] == 'devices' and e['resource'] == 'vgpu.dev/train'" >/dev/null
        # Until a poll has seen both bindings.
        for _ in $(seq 1 300); do
            a=$(ask preferred vgpu.dev/train 2 train-0,train-1,train-2,train-3)
            [ "$(get "$a" "e['devices']")" = "['train-1', 'train-3']" ] && break
            sleep 0.1
        done
        [ "$(get "$a" "e['devices']")" = "['train-1', 'train-3']" ] || fail "preferred skipping the bound: $a"
        a=$(ask preferred vgpu.dev/train 3 train-0,train-1,train-2,train-3)
        [ "$(get "$a" "e['devices']")" = "['train-1', 'train-3', 'train-0']" ] || fail "preferred, bound last: $a"
    else
        echo "# not root, or no cgroup v2: the bound vGPUs' part is skipped"
    fi
    # An unhealthy vGPU is not preferred.
    m=$(mark)
    echo "1 79" >>"$tmp/xid"
    wait_devices vgpu.dev/infer "$m" "infer-0=Unhealthy infer-1=Unhealthy infer-2=Unhealthy"
    a=$(ask preferred vgpu.dev/infer 1 infer-0,infer-1,infer-2)
    [ "$(get "$a" "e['devices']")" = "[]" ] || fail "preferred an unhealthy vGPU: $a"
    ;;

allocate-gives-the-cdi-device)
    config "${two_classes[@]}"
    start_mediator
    start_kubelet
    start_plugin
    wait_devices vgpu.dev/train 0 "train-0=Healthy train-1=Healthy train-2=Healthy"
    bound=
    if cgroups_here; then
        # train-1 is still bound to the container it had before.
        bound_container train-1
        bound=yes
        grep -q "vGPU train-1: bound to cgroup $cg_base/train-1" "$tmp/med.log" || fail "the hook's binding not logged"
    else
        echo "# not root, or no cgroup v2: the unbinding's part is skipped"
    fi
    a=$(ask allocate vgpu.dev/train train-1 default/pod-a/main)
    [ "$(get "$a" "e['ok'], len(e['containers'])")" = "(True, 1)" ] || fail "Allocate: $a"
    [ "$(get "$a" "e['containers'][0]['cdi_devices']")" = "['vgpu.dev/vgpu=train-1']" ] || fail "cdi_devices: $a"
    [ "$(get "$a" "e['containers'][0]['envs']")" = "{'VGPU_NAME': 'train-1'}" ] || fail "envs: $a"
    [ "$(get "$a" "e['containers'][0]['annotations']")" = \
      "{'cdi.k8s.io/vgpu-device-plugin_train-1': 'vgpu.dev/vgpu=train-1'}" ] || fail "annotations: $a"
    [ "$(get "$a" "e['containers'][0]['mounts'], e['containers'][0]['devices']")" = "(0, 0)" ] ||
        fail "mounts or device nodes given: $a"
    # The BIND it sent: the vGPU left its previous container, for the next.
    if [ -n "$bound" ]; then
        grep -q "vGPU train-1: unbound from cgroup $cg_base/train-1: it waits for its next container" "$tmp/med.log" ||
            fail "Allocate did not unbind train-1"
    fi
    grep -q "vgpu.dev/train: allocated train-1 (CDI device vgpu.dev/vgpu=train-1)" "$tmp/plugin.log" ||
        fail "the allocation not logged"
    # Two containers of one pod in one request: each its vGPU.
    a=$(ask allocate "vgpu.dev/infer" "infer-0;infer-1")
    [ "$(get "$a" "[c['envs']['VGPU_NAME'] for c in e['containers']]")" = "['infer-0', 'infer-1']" ] ||
        fail "two containers: $a"
    # One vGPU per container.
    a=$(ask allocate vgpu.dev/train train-0,train-2)
    [ "$(get "$a" "e['ok'], e['code']")" = "(False, 'InvalidArgument')" ] || fail "two vGPUs for one container: $a"
    case $(get "$a" "e['error']") in *"one vGPU per container"*) ;; *) fail "the refusal does not say why: $a" ;; esac
    ;;

refuses-unknown-and-unhealthy)
    : >"$tmp/xid"
    config "${two_classes[@]}"
    FAKENVML_XID_FILE=$tmp/xid start_mediator
    start_kubelet
    start_plugin
    wait_devices vgpu.dev/train 0 "train-0=Healthy train-1=Healthy train-2=Healthy"
    wait_devices vgpu.dev/infer 0 "infer-0=Healthy infer-1=Healthy"
    a=$(ask allocate vgpu.dev/train train-7)
    [ "$(get "$a" "e['ok'], e['code']")" = "(False, 'NotFound')" ] || fail "an unknown vGPU: $a"
    case $(get "$a" "e['error']") in *'has no device "train-7"'*) ;; *) fail "the refusal does not say what: $a" ;; esac
    a=$(ask allocate vgpu.dev/train infer-0) # another class's
    [ "$(get "$a" "e['ok'], e['code']")" = "(False, 'NotFound')" ] || fail "another class's vGPU: $a"
    a=$(ask prestart vgpu.dev/train train-0,train-9)
    [ "$(get "$a" "e['ok'], e['code']")" = "(False, 'NotFound')" ] || fail "PreStartContainer of an unknown vGPU: $a"
    a=$(ask prestart vgpu.dev/train train-0)
    [ "$(get "$a" "e['ok']")" = True ] || fail "PreStartContainer of a healthy vGPU: $a"
    # GPU 0 falls off the bus: train's vGPUs (on it) are unhealthy, infer's not.
    m=$(mark)
    echo "0 79" >>"$tmp/xid"
    wait_devices vgpu.dev/train "$m" "train-0=Unhealthy train-1=Unhealthy train-2=Unhealthy"
    a=$(ask allocate vgpu.dev/train train-0)
    [ "$(get "$a" "e['ok'], e['code']")" = "(False, 'FailedPrecondition')" ] || fail "an unhealthy vGPU: $a"
    case $(get "$a" "e['error']") in *"train-0 is unhealthy: one of its GPUs had XID 79"*) ;;
        *) fail "the refusal does not say why: $a" ;; esac
    a=$(ask prestart vgpu.dev/train train-0)
    [ "$(get "$a" "e['ok'], e['code']")" = "(False, 'FailedPrecondition')" ] || fail "PreStartContainer, unhealthy: $a"
    a=$(ask allocate vgpu.dev/infer infer-1)
    [ "$(get "$a" "e['ok']")" = True ] || fail "the other GPU's vGPU: $a"
    ev count "$out" "e['event'] == 'devices' and e['resource'] == 'vgpu.dev/infer' and 'Unhealthy' in e['summary']" |
        grep -qx 0 || fail "infer's vGPUs were reported unhealthy"
    ;;

kubelet-restart)
    config "${two_classes[@]}"
    start_mediator
    start_kubelet
    start_plugin
    registered vgpu.dev/train 0
    registered vgpu.dev/infer 0
    wait_devices vgpu.dev/train 0 "train-0=Healthy train-1=Healthy train-2=Healthy"
    # The kubelet starts again: every socket in its directory goes.
    m=$(mark)
    kubelet restart
    r=$(wait_event "$m" "e['event'] == 'restarting'")
    [ "$(get "$r" "sorted(e['removed'])")" = "['kubelet.sock', 'vgpu-infer.sock', 'vgpu-train.sock']" ] ||
        fail "the restart removed: $r"
    registered vgpu.dev/train "$m"
    registered vgpu.dev/infer "$m"
    wait_devices vgpu.dev/train "$m" "train-0=Healthy train-1=Healthy train-2=Healthy"
    wait_devices vgpu.dev/infer "$m" "infer-0=Healthy infer-1=Healthy"
    grep -q "the kubelet restarted" "$tmp/plugin.log" || fail "the restart not logged"
    # The new connection serves: Allocate through it.
    a=$(ask allocate vgpu.dev/train train-2)
    [ "$(get "$a" "e['ok'], e['containers'][0]['envs']['VGPU_NAME']")" = "(True, 'train-2')" ] ||
        fail "Allocate after the restart: $a"
    # Its socket alone removed (by hand, or a kubelet that cleans up): served and registered again.
    m=$(mark)
    rm "$dp/vgpu-infer.sock"
    registered vgpu.dev/infer "$m"
    wait_devices vgpu.dev/infer "$m" "infer-0=Healthy infer-1=Healthy"
    [ -S "$dp/vgpu-infer.sock" ] || fail "no new socket"
    ;;

reload-changes-the-devices)
    config "[vgpu.train]" "devices = 0" "memory = 1G" "compute = 30" "containers = 3"
    start_mediator
    start_kubelet
    start_plugin
    wait_devices vgpu.dev/train 0 "train-0=Healthy train-1=Healthy train-2=Healthy"
    # containers = 3 -> 2, and a class added.
    m=$(mark)
    reload "[vgpu.train]" "devices = 0" "memory = 1G" "compute = 30" "containers = 2" \
           "[vgpu.infer]" "devices = 1" "memory = 1G" "compute = 30" "containers = 1"
    wait_devices vgpu.dev/train "$m" "train-0=Healthy train-1=Healthy"
    registered vgpu.dev/infer "$m"
    wait_devices vgpu.dev/infer "$m" "infer-0=Healthy"
    [ -S "$dp/vgpu-infer.sock" ] || fail "no socket for the new class"
    a=$(ask allocate vgpu.dev/train train-2)
    [ "$(get "$a" "e['ok'], e['code']")" = "(False, 'NotFound')" ] || fail "the removed vGPU was allocated: $a"
    # The class removed: its stream sends an empty list and ends, its socket goes.
    m=$(mark)
    reload "[vgpu.train]" "devices = 0" "memory = 1G" "compute = 30" "containers = 2"
    wait_devices vgpu.dev/infer "$m" ""
    wait_event "$m" "e['event'] == 'stream_end' and e['resource'] == 'vgpu.dev/infer'" >/dev/null
    for _ in $(seq 1 500); do [ -e "$dp/vgpu-infer.sock" ] || break; sleep 0.02; done
    [ -e "$dp/vgpu-infer.sock" ] && fail "the ended class's socket is still there"
    grep -q "class infer is gone from the mediator" "$tmp/plugin.log" || fail "the end not logged"
    # train goes on.
    a=$(ask allocate vgpu.dev/train train-1)
    [ "$(get "$a" "e['ok']")" = True ] || fail "train after the reload: $a"
    ;;

mediator-unreachable)
    config "[vgpu.train]" "devices = 0" "memory = 1G" "compute = 30" "containers = 2"
    start_mediator
    start_kubelet
    start_plugin
    wait_devices vgpu.dev/train 0 "train-0=Healthy train-1=Healthy"
    m=$(mark)
    stop_mediator KILL
    # Three polls later the devices, still listed, are unhealthy.
    wait_devices vgpu.dev/train "$m" "train-0=Unhealthy train-1=Unhealthy"
    grep -q "has not answered 3 polls in a row" "$tmp/plugin.log" || fail "not logged"
    [ "$(grep -c "vgpu-mediatord at $tmp/sock: .*connect" "$tmp/plugin.log")" = 1 ] ||
        fail "the failure is not logged exactly once"
    a=$(ask allocate vgpu.dev/train train-0)
    [ "$(get "$a" "e['code']")" = FailedPrecondition ] || fail "Allocate with the mediator away: $a"
    m=$(mark)
    start_mediator
    wait_devices vgpu.dev/train "$m" "train-0=Healthy train-1=Healthy"
    grep -q "answers again" "$tmp/plugin.log" || fail "the return not logged"
    ;;

bind-refused-is-an-allocate-error)
    # The plugin, polling seldom, still lists a vGPU the mediator removed:
    # Allocate's BIND is refused, and Allocate fails saying so.
    config "[vgpu.train]" "devices = 0" "memory = 1G" "compute = 30" "containers = 3"
    start_mediator
    start_kubelet
    "$plugin_bin" --kubelet-dir "$dp" --pod-resources-socket "$podres" --mediator-socket "$tmp/sock" \
        --poll 1h >>"$tmp/plugin.log" 2>&1 &
    plugin_pid=$!
    pids="$pids $plugin_pid"
    wait_devices vgpu.dev/train 0 "train-0=Healthy train-1=Healthy train-2=Healthy"
    reload "[vgpu.train]" "devices = 0" "memory = 1G" "compute = 30" "containers = 2"
    a=$(ask allocate vgpu.dev/train train-2)
    [ "$(get "$a" "e['ok'], e['code']")" = "(False, 'Unavailable')" ] || fail "Allocate of a removed vGPU: $a"
    case $(get "$a" "e['error']") in *"BIND train-2: vgpu-mediatord has no such vGPU"*) ;;
        *) fail "the refusal does not carry the mediator's reason: $a" ;; esac
    a=$(ask allocate vgpu.dev/train train-1)
    [ "$(get "$a" "e['ok']")" = True ] || fail "a vGPU still there: $a"
    # No mediator at all.
    stop_mediator TERM
    a=$(ask allocate vgpu.dev/train train-0)
    [ "$(get "$a" "e['ok'], e['code']")" = "(False, 'Unavailable')" ] || fail "Allocate with no mediator: $a"
    ;;

metrics-name-the-container)
    config "${two_classes[@]}"
    start_mediator
    start_kubelet
    port=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
    start_plugin --metrics "127.0.0.1:$port"
    wait_devices vgpu.dev/train 0 "train-0=Healthy train-1=Healthy train-2=Healthy"
    wait_devices vgpu.dev/infer 0 "infer-0=Healthy infer-1=Healthy"
    scrape() { python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$port/metrics', timeout=30).read().decode())"; }
    # (The registration is counted once the kubelet's answer is back.)
    for _ in $(seq 1 1500); do
        scrape >"$tmp/m0" 2>/dev/null && grep -q '^vgpu_device_plugin_registrations_total{resource="vgpu.dev/train"}' \
            "$tmp/m0" && break
        sleep 0.02
    done
    grep -q '^vgpu_device_plugin_registrations_total{resource="vgpu.dev/train"} 1$' "$tmp/m0" ||
        fail "registrations: $(cat "$tmp/m0")"
    grep -q '^vgpu_container_' "$tmp/m0" && fail "container metrics before any container: $(cat "$tmp/m0")"
    a=$(ask allocate vgpu.dev/infer infer-1 'team-a/job"1\x/worker')
    [ "$(get "$a" "e['ok']")" = True ] || fail "Allocate: $a"
    scrape >"$tmp/m1" || fail "no scrape"
    host=$(hostname)
    uuid=$(VGPU_MEDIATOR_SOCKET=$tmp/sock "$smi" --socket "$tmp/sock" --json |
           python3 -c "import json,sys; s=json.load(sys.stdin); print([v for v in s['vgpus'] if v['name']=='infer-1'][0]['devices'][0]['uuid'])")
    [ -n "$uuid" ] || fail "no UUID from vgpu-smi"
    labels="namespace=\"team-a\",pod=\"job\\\\\"1\\\\\\\\x\",container=\"worker\",vgpu=\"infer-1\",vgpu_device=\"0\",gpu=\"1\",UUID=\"$uuid\""
    want="vgpu_container_memory_quota_bytes{$labels,modelName=\"[^\"]*\",Hostname=\"$host\"} $((2 * GiB))"
    grep -q "^$want\$" "$tmp/m1" || fail "no line $want in: $(cat "$tmp/m1")"
    grep -q "^vgpu_container_memory_used_bytes{$labels,.*} 0\$" "$tmp/m1" || fail "used: $(cat "$tmp/m1")"
    grep -q "^vgpu_container_processes{$labels,.*} 0\$" "$tmp/m1" || fail "processes: $(cat "$tmp/m1")"
    [ "$(grep -c '^vgpu_container_memory_quota_bytes{' "$tmp/m1")" = 1 ] || fail "other containers: $(cat "$tmp/m1")"
    grep -q '^vgpu_device_plugin_allocations_total{resource="vgpu.dev/infer"} 1$' "$tmp/m1" ||
        fail "allocations: $(cat "$tmp/m1")"
    grep -q '^# TYPE vgpu_device_plugin_allocations_total counter$' "$tmp/m1" || fail "no TYPE line"
    # The pod ends: its metrics go.
    ask forget 'team-a/job"1\x' >/dev/null
    scrape >"$tmp/m2" || fail "no scrape"
    grep -q '^vgpu_container_' "$tmp/m2" && fail "metrics of an ended pod: $(cat "$tmp/m2")"
    ;;

starts-before-the-mediator-and-the-kubelet)
    # Started first (a node's boot): it waits for the mediator, then serves,
    # then registers when the kubelet comes.
    config "${two_classes[@]}"
    mkdir -p "$dp"
    start_plugin
    for _ in $(seq 1 1500); do grep -q "vgpu-mediatord at $tmp/sock: " "$tmp/plugin.log" && break; sleep 0.02; done
    grep -q "vgpu-mediatord at $tmp/sock: " "$tmp/plugin.log" || fail "no mediator: not logged"
    start_mediator
    for _ in $(seq 1 1500); do [ -S "$dp/vgpu-train.sock" ] && break; sleep 0.02; done
    [ -S "$dp/vgpu-train.sock" ] || fail "not serving once the mediator answers"
    grep -q "vgpu.dev/train: no kubelet socket in $dp yet" "$tmp/plugin.log" || fail "no kubelet: not logged"
    start_kubelet
    registered vgpu.dev/train 0
    registered vgpu.dev/infer 0
    wait_devices vgpu.dev/train 0 "train-0=Healthy train-1=Healthy train-2=Healthy"
    a=$(ask allocate vgpu.dev/infer infer-0)
    [ "$(get "$a" "e['ok']")" = True ] || fail "Allocate: $a"
    ;;

sigterm-removes-the-sockets)
    config "${two_classes[@]}"
    start_mediator
    start_kubelet
    start_plugin
    wait_devices vgpu.dev/train 0 "train-0=Healthy train-1=Healthy train-2=Healthy"
    wait_devices vgpu.dev/infer 0 "infer-0=Healthy infer-1=Healthy"
    m=$(mark)
    kill -TERM "$plugin_pid"
    wait "$plugin_pid"
    rc=$?
    [ "$rc" = 0 ] || fail "the plugin exited $rc on SIGTERM"
    [ -e "$dp/vgpu-train.sock" ] || [ -e "$dp/vgpu-infer.sock" ] && fail "sockets left: $(ls "$dp")"
    [ -S "$dp/kubelet.sock" ] || fail "the kubelet's socket was removed"
    wait_event "$m" "e['event'] == 'stream_end' and e['resource'] == 'vgpu.dev/train'" >/dev/null
    ;;

*)
    echo "unknown scenario $scenario" >&2
    exit 2
    ;;
esac
exit 0
