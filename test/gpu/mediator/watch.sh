#!/usr/bin/env bash
# The gpu suite's check of the mediator's watch (docs/guide/mediator.md, "Watch"),
# as root: vgpu-mediatord with enforce = kill for unadmitted processes, and
# one vGPU of 4 GiB on GPU 0.
#   (1) PyTorch with LD_PRELOAD unset allocates 1 GiB: killed within 2 s of
#       the driver listing it;
#   (2) a statically linked CUDA program (built here: gcc -static of
#       static_alloc.c, which dlopens libcuda.so.1; failing that, nvcc with
#       the runtime static and -Xlinker -static): the same, where one can
#       use the driver at all (r580: none can; said as "info");
#   (2b) a dynamic program that opens the driver by its file under vgpu:
#       admitted and counted all the same;
#   (3) a PyTorch process admitted to the vGPU, under its quota, runs
#       through it all and is never reported;
#   (4) an admitted process whose module declares 6 GiB of __device__
#       arrays (not counted by vgpu: docs/design/memory.md), over the vGPU's
#       4 GiB: killed (the vGPU's enforce = kill) within 2 s of its holding
#       them, as over its quota;
#   (5) an admitted process that loads the driver a second time
#       (static_alloc.c --again: dlmopen, where LD_PRELOAD does not reach)
#       to allocate 5 GiB around vgpu:
#       caught the same way, where the driver starts a second time at all
#       (r580: it does not; said as "info").
# Prints "ok ..." or "FAIL ..." lines with the times measured, and which
# static build ran.
# Usage: watch.sh BUILD_DIR [OUT_DIR]   Skips (77) without a GPU.
# shellcheck source=test/gpu/lib.sh
. "$(dirname "$(realpath "$0")")/../lib.sh"
gpu_check "$@"
rm -rf "$out/state"
unset LD_PRELOAD VGPU_MEDIATOR_SOCKET VGPU_NAME
sock=$out/mediator.sock
cat >"$out/mediatord.conf" <<CONF
[mediator]
socket = $sock
state_dir = $out/state
watch_interval = 500ms
enforce = kill
[vgpu.a]
devices = 0
memory = 4G
uids = $(id -u)
enforce = kill
CONF
start_mediator "$out/mediatord.conf" "$sock" "$out/mediatord.log"
adm=
trap 'kill -9 $med $adm 2>/dev/null' EXIT
clients=$clients_dir/watch_clients.py

# (3) first, so that it runs through the rest.
LD_PRELOAD="$preload" VGPU_MEDIATOR_SOCKET=$sock VGPU_LOG_FILE=$out/admitted.log \
    python3 "$clients" torch-hold >"$out/admitted.out" 2>&1 &
adm=$!
wait_ready "$out/admitted.out" "$adm" 60 ||
    echo "FAIL the admitted PyTorch process did not start: $(tail -3 "$out/admitted.out")"

# (1)
python3 "$clients" caught "PyTorch with LD_PRELOAD unset, 1 GiB" 2000 -- env -u LD_PRELOAD python3 "$clients" torch-hold

# (2) A static program, built here (a static glibc's dlopen wants the
# machine's own libraries); the first build that runs on the GPU is timed.
static_ran=no
try_static() { # HOW BINARY: "caught" for a build that came out static
    local how=$1 bin=$2
    if readelf -l "$bin" 2>/dev/null | grep -q INTERP; then
        echo "# $how: not a static program (it has an ELF interpreter); not counted"
        return
    fi
    python3 "$clients" caught "static CUDA program ($how)" 2000 --may-not-run -- "$bin"
    [ $? = 3 ] || static_ran=yes
}
if gcc -static -O2 -o "$out/static_alloc" "$clients_dir/static_alloc.c" >"$out/static-gcc.log" 2>&1; then
    try_static "gcc -static, dlopen of libcuda.so.1" "$out/static_alloc"
else
    echo "# gcc -static failed: $(grep -v warning "$out/static-gcc.log" | tail -2 | tr '\n' ' ')"
fi
if [ $static_ran = no ] && command -v nvcc >/dev/null; then
    for flags in "-Xlinker -static" "-Xcompiler -static"; do
        [ $static_ran = no ] || break
        # shellcheck disable=SC2086 # the flags are two words each
        if nvcc -cudart static $flags -o "$out/static_alloc_nvcc" "$clients_dir/static_alloc.cu" >"$out/static-nvcc.log" 2>&1; then
            try_static "nvcc -cudart static $flags" "$out/static_alloc_nvcc"
        else
            echo "# nvcc -cudart static $flags failed: $(tail -2 "$out/static-nvcc.log" | tr '\n' ' ')"
        fi
    done
fi
# A static program that cannot start the driver holds nothing, and there is
# nothing to catch (r580: cuInit answers 304 in a static glibc's dlopen, and
# nvcc's fully static build crashes in it: bench/results/2026-11-23-9c2504d-compute-llm-nvml-views-watch.md).
[ $static_ran = yes ] || echo "info no statically linked CUDA program could use the driver here (see the lines above)"

# (2b) The dynamic way around vgpu that a static program cannot take: vgpu
# preloaded, the driver opened by its own file and called directly.  It is
# no escape: the driver's own calls between its entry points bind to the
# preloaded vgpu's, so vgpu admits the process and counts what it holds
# (H100, r580: admitted to vGPU a, 1.51 GiB returned at its end).
driver=$(realpath "$(ldconfig -p | awk '$1 == "libcuda.so.1" && /x86-64/ { print $NF; exit }')" 2>/dev/null)
if gcc -O2 -o "$out/bypath_alloc" "$clients_dir/static_alloc.c" -ldl >"$out/bypath-gcc.log" 2>&1 && [ -f "$driver" ]; then
    env LD_PRELOAD="$preload" VGPU_MEDIATOR_SOCKET=$sock \
        "$out/bypath_alloc" "$driver" >"$out/bypath.out" 2>&1 &
    bp=$!
    wait_ready "$out/bypath.out" $bp 30
    sleep 1 # two readings of the watch
    held=$("$vgpu_smi" --socket "$sock" --json | python3 -c "import json, sys
s = json.load(sys.stdin)
print(sum(p['memory'][0] for p in s['processes'] if p['pid'] == $bp) >> 20)")
    kill -9 $bp 2>/dev/null; wait $bp 2>/dev/null
    if grep -q "admitted pid $bp " "$out/mediatord.log" && [ "${held:-0}" -ge 1024 ] &&
        ! grep -q "watch: pid $bp " "$out/mediatord.log"; then
        echo "ok a program that opens the driver by its file ($driver) under vgpu is admitted and counted: $held MiB"
    else
        echo "FAIL the program that opens the driver by its file: admitted: $(grep -c "admitted pid $bp " \
            "$out/mediatord.log"), counted ${held:-?} MiB, watch: $(grep "watch: pid $bp " "$out/mediatord.log" | head -1)"
    fi
else
    echo "FAIL the by-path program did not build, or no driver in the ld.so cache: $(tail -2 "$out/bypath-gcc.log")"
fi

# (4) and (5): admitted processes over their vGPU's quota, by allocations vgpu never saw.
over_lines() { grep -c "over the vGPU's quota" "$out/mediatord.log"; }
over_quota() { # NAME RC BEFORE: RC is caught's exit status for it, BEFORE over_lines before it ran
    case $2 in
    0) [ "$(over_lines)" -gt "$3" ] && echo "ok $1: killed as over its vGPU's quota" ||
        echo "FAIL $1 was killed, but not as over its vGPU's quota: $(grep "watch:" "$out/mediatord.log" | tail -1)" ;;
    3) echo "info $1 held nothing around vgpu here (the line above): nothing to catch" ;;
    esac
}
if gcc -O2 -o "$out/global_alloc" "$clients_dir/global_alloc.c" -ldl >"$out/global-gcc.log" 2>&1; then
    n=$(over_lines)
    python3 "$clients" caught "an admitted process with 6 GiB of module globals in a 4 GiB vGPU" 2000 --from-ready -- \
        env LD_PRELOAD="$preload" VGPU_MEDIATOR_SOCKET=$sock \
        "$out/global_alloc" 6
    over_quota "the process with module globals" $? "$n"
else
    echo "FAIL the module-globals program did not build: $(tail -2 "$out/global-gcc.log")"
fi
if [ -x "$out/bypath_alloc" ] && [ -f "$driver" ]; then
    n=$(over_lines)
    python3 "$clients" caught "an admitted process holding 5 GiB around vgpu (dlmopen) in a 4 GiB vGPU" 2000 \
        --may-not-run --from-ready -- env LD_PRELOAD="$preload" \
        VGPU_MEDIATOR_SOCKET=$sock "$out/bypath_alloc" --again "$driver" 5
    over_quota "the process that loads the driver again" $? "$n"
fi # (else said at (2b))

# (3) The admitted process: alive, listed in its vGPU, never found by the watch.
sleep 1 # two more readings
json=$("$vgpu_smi" --socket "$sock" --json)
python3 - "$json" "$adm" <<'PY'
import json, sys
s, pid = json.loads(sys.argv[1]), int(sys.argv[2])
mine = [p for p in s["processes"] if p["pid"] == pid]
found = [p for p in s["watch"]["processes"] if p["pid"] == pid]
print(("ok " if mine and not found else "FAIL ") + "the admitted PyTorch process is in vGPU a (%s MiB of its 4096 MiB) "
      "and the watch lists %d finding(s) of it, after %d readings" %
      ([p["memory"][0] >> 20 for p in mine], len(found), s["watch"]["readings"]))
PY
if grep -q "watch: pid $adm " "$out/mediatord.log"; then
    echo "FAIL the watch reported the admitted process: $(grep "watch: pid $adm " "$out/mediatord.log" | head -1)"
elif ! kill -0 "$adm" 2>/dev/null; then
    echo "FAIL the admitted process died: $(tail -3 "$out/admitted.out")"
else
    echo "ok the watch never reported the admitted process, and it runs"
fi
nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader >"$out/nvidia-smi.csv" 2>&1
echo "# the watch's log:"
grep "watch:" "$out/mediatord.log" | sed 's/^/#   /'
