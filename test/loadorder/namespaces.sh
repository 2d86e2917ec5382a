#!/usr/bin/env bash
# dlmopen and RTLD_DEEPBIND under a 1 GiB vGPU (namespaces.c):
#   namespaces.sh CASE BUILD_DIR FAKE_DIR PROGRAM DEEP_LIB DEEP_NOW_LIB
# CASE is a scenario of namespaces.c on a standalone vGPU, or
# mediator-SCENARIO on one from a vgpu-mediatord.  DEEP_LIB and DEEP_NOW_LIB
# are deep.c bound lazily, and at load time (the deepbind-* scenarios).
set -euo pipefail
case_name=$1 build=$2 fake_dir=$3 program=$4 deep=$5 deep_now=$6
# shellcheck source=test/loadorder/common.sh
. "$(dirname "$(realpath "$0")")/common.sh"
case $case_name in
dlmopen-base-path) ;;
*dlmopen-*) asan_cannot "a new link-map namespace (dlmopen LM_ID_NEWLM) gets its own copy of every library vgpu needs, the ASan runtime too, and a second ASan runtime cannot map its shadow memory where the first's already is" ;;
esac

drv=$tmp/driver
driver_dir "$drv"
quota_env
export LD_PRELOAD="$vgpu $vgpu_nvml" LD_LIBRARY_PATH=$drv TEST_DRIVER=$drv/libcuda.so.1 TEST_DEEP_LIB=$deep
# Exact figures: no context overhead on the fake GPU.
export FAKEGPU_CTX_OVERHEAD=0
scenario=$case_name
case $case_name in deepbind-*) TEST_DEEP_LIB=$deep_now ;; esac

case $case_name in
mediator-*)
    scenario=${case_name#mediator-}
    printf '[mediator]\nsocket = %s\nstate_dir = %s\n[vgpu.a]\ndevices = 0\nmemory = 1G\nuids = %s\n' \
        "$tmp/sock" "$tmp/state" "$(id -u)" >"$tmp/conf"
    env -u LD_PRELOAD -u VGPU_LOG_FILE "$build/tools/vgpu-mediatord" --config "$tmp/conf" --foreground >"$tmp/med.log" 2>&1 &
    medpid=$!
    trap 'exec 2>/dev/null; kill -9 $medpid; rm -rf "$tmp"' EXIT
    for _ in $(seq 1 500); do
        "$build/tools/vgpu-smi" --socket "$tmp/sock" >/dev/null 2>&1 && break
        kill -0 $medpid 2>/dev/null || { cat "$tmp/med.log"; fail "the mediator exited"; }
        sleep 0.02
    done
    "$build/tools/vgpu-smi" --socket "$tmp/sock" >/dev/null 2>&1 || fail "the mediator did not answer within 10 s"
    export VGPU_MEDIATOR_SOCKET=$tmp/sock
    unset VGPU_MEMORY_LIMIT VGPU_BAR0
    ;;
esac

"$program" "$scenario" || fail "$scenario"
if [ -n "${medpid:-}" ]; then
    # One process, two connections: one per copy of vgpu.
    admitted=$(grep -o "admitted pid [0-9]*" "$tmp/med.log" | sort | uniq -c | sort -rn | head -1 | awk '{print $1}')
    [ "${admitted:-0}" = 2 ] || { cat "$tmp/med.log"; fail "the mediator did not admit both copies of one process"; }
fi
ok
