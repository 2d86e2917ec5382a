#!/usr/bin/env bash
# BAR0's accounting under threads, forks and kill -9 (kill_churn_client.c says
# what is tried and checked):
#   kill_churn.sh standalone|mediated BUILD_DIR SECONDS KILL_MS
# The seed is random, and printed first; VGPU_STRESS_SEED=N runs that one
# again (the kills fall on the same moments, the threads' timing differs).
scenario=$1 build=$2 seconds=$3 kill_ms=$4
# shellcheck source=test/mediator/mediator_lib.sh
. "$(dirname "$(realpath "$0")")/../mediator/mediator_lib.sh"
seed=${VGPU_STRESS_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
# A small context, so that 4 of them and every thread's final holding fit the 1 GiB quota.
export FAKEGPU_CTX_OVERHEAD=64M
case $scenario in
standalone)
    export VGPU_MEDIATOR_SOCKET=none VGPU_BAR0=$tmp/vgpu.bar0 VGPU_MEMORY_LIMIT=1G
    vgpu=()
    log=$tmp/vgpu.log ;;
mediated)
    config "[vgpu.stress]" "devices = 0" "memory = 1G" "uids = $me"
    start_mediator
    vgpu=(stress)
    log=$tmp/med.log ;;
*)
    echo "kill_churn.sh: unknown scenario $scenario" >&2; exit 2 ;;
esac
export VGPU_LOG=info VGPU_LOG_FILE=$tmp/vgpu.log
"$build/test/stress/kill_churn_client" "$seconds" "$kill_ms" "$seed" "${vgpu[@]}" ||
    { # Why a process was refused, however early in the run, then the log's end.
      grep -E '^vgpu\[[0-9]+\]: (error|warn): ' "$tmp/vgpu.log" | grep -v 'refused: .* left of its' | tail -n 20 >&2
      grep -v 'refused: .* left of its' "$tmp/vgpu.log" | tail -n 40 >&2; fail "the accounting is not exact (seed $seed)"; }
if [ "$scenario" = mediated ]; then
    kill -0 "$medpid" 2>/dev/null || fail "the mediator died"
fi
# Counters a process killed between its two updates left apart, mended by a rebuild.
echo "$(grep -c 'usage counter corrected' "$log") counter(s) mended by a rebuild"
# Slots a process killed while returning them left half returned, finished by the next reap.
echo "$(grep -c 'left half returned' "$log") slot(s) finished for a process killed returning them"
ok
