# What every test script opens with; sourced first, as
#     . "$(dirname "$(realpath "$0")")/../common/lib.sh"
# (a suite's own library, such as mediator/mediator_lib.sh, sources it
# itself).  It gives the script's folder, the test tree and the source
# tree; the build's programs; skips (exit 77, meson's skip) where the
# machine lacks what a test needs; a temporary directory that goes at exit
# with the processes the test started; the fake driver's environment; and
# fail and ok.
set -u

here=$(dirname "$(realpath "$0")")                                # the script's folder
tests_dir=$(dirname "$(dirname "$(realpath "${BASH_SOURCE[0]}")")") # test/
source_dir=$(dirname "$tests_dir")                                # the source tree
test_name=$(basename "$0" .sh)

# ---- the build ----

# use_build DIR: $build (DIR made absolute, its links kept: the path vgpu's
# libraries are preloaded from), and the build's programs.
use_build() {
    build=$(cd "$1" && pwd) || exit 1
    vgpu_mediatord=$build/tools/vgpu-mediatord
    vgpu_smi=$build/tools/vgpu-smi
    vgpu_executor=$build/tools/vgpu-executor
    vgpu_setup=$build/tools/vgpu-setup
    vgpu_doctor=$build/tools/vgpu-doctor
    vgpu_run=$build/tools/vgpu-run
    vgpu_cdi_hook=$build/tools/vgpu-cdi-hook
}

# ---- skips: what a test needs and the machine may lack ----

# skip WHY...: the test is skipped (meson counts exit 77 as a skip).
skip() {
    echo "SKIP: $*"
    exit 77
}

# need_root WHY...: skipped unless root.
need_root() {
    [ "$(id -u)" = 0 ] || skip "needs root: $*"
}

# need_command COMMAND [HOW-TO-GET-IT]: skipped where COMMAND is not on $PATH.
need_command() {
    command -v "$1" >/dev/null || skip "no $1${2:+ ($2)}"
}

# need_private_mounts: skipped where unshare -m is refused (a private mount
# namespace needs root, or a user namespace of its own).
need_private_mounts() {
    unshare -m --propagation private true 2>/dev/null || skip "unshare -m is refused here: run as root"
}

# asan_cannot WHY...: skipped in a build with AddressSanitizer (meson sets
# VGPU_TEST_SANITIZE, test/sanitizers/meson.build), saying WHY; elsewhere, nothing.
asan_cannot() {
    case ${VGPU_TEST_SANITIZE:-none} in
    *address*) skip "this build has AddressSanitizer (-Db_sanitize=$VGPU_TEST_SANITIZE), and $*" ;;
    esac
}

# Why, for asan_cannot: the ASan runtime (a dependency of every sanitized
# library, the fake driver's too) loaded by dlopen into a Go program that
# is already running.
ASAN_IN_GO="its runtime cannot be loaded into a Go program that is already running (dlopen of a sanitized library): the Go runtime's heap lies where ASan's shadow memory must go (\"Shadow memory range interleaves with an existing memory mapping\"); the cells that preload vgpu into Go run"

# ---- the test's temporary directory, and what goes with it at exit ----

pids=       # processes the test started: killed (-9) at exit
exit_steps=() # commands run at exit, before those are killed

# at_exit COMMAND: COMMAND (a line of shell) runs at exit, after those given before it.
at_exit() {
    exit_steps+=("$*")
}

# temp_dir NAME [PARENT]: $tmp, a new directory NAME.XXXXXX in PARENT
# ($TMPDIR or /tmp), removed at exit; a signal ends the test as a failure.
temp_dir() {
    tmp=$(mktemp -d "${2:-${TMPDIR:-/tmp}}/$1.XXXXXX") || exit 1
    trap cleanup EXIT
    trap 'exit 1' INT TERM
}

cleanup() {
    set +e           # every step, whatever the one before it did
    exec 2>/dev/null # not the shell's "Killed" for each
    local step p
    for step in ${exit_steps[@]+"${exit_steps[@]}"}; do eval "$step"; done
    for p in $pids; do kill -9 "$p"; done
    rm -rf "$tmp"
}

# ---- the fake driver ----

# fake_gpu [shared]: nothing of the caller's vGPU or fake GPU settings
# steers the test; with shared, every process of the test sees one fake
# GPU, its state in $tmp/fake.state (without it, each process has its own).
fake_gpu() {
    unset VGPU_MEMORY_LIMIT VGPU_VISIBLE_DEVICES VGPU_BAR0 VGPU_NAME VGPU_LOG_FILE VGPU_COMPUTE_SHARE \
        VGPU_COMPUTE_MODE VGPU_REMOTE VGPU_PCI_ID FAKEGPU_STATE FAKEGPU_DEVICES FAKEGPU_MEMORY FAKEGPU_CTX_OVERHEAD \
        FAKEGPU_LAUNCH_NS FAKEGPU_KERNEL_NS FAKEGPU_TIMESLICE_NS
    [ "${1:-}" = shared ] && export FAKEGPU_STATE=$tmp/fake.state
    return 0
}

# ---- the verdict ----

fail_logs=    # files (globs) whose ends a failure shows: "$tmp/*.out $tmp/*.err"
fail_lines=30 # how many of their last lines; all: every line
test_case=    # the case of the scenario that runs, where it has several

# fail WHY...: the test fails: "FAIL (SCENARIO: CASE): WHY" on stderr, then
# the ends of the logs in $fail_logs and what on_fail (where a script
# defines one) prints.
fail() {
    echo "FAIL (${scenario:-$test_name}${test_case:+: $test_case}): $*" >&2
    local f lines=$fail_lines
    [ "$lines" = all ] && lines=+1
    for f in $fail_logs; do
        [ -s "$f" ] && { echo "---- $f ----"; tail -n "$lines" "$f"; } >&2
    done
    if declare -F on_fail >/dev/null; then on_fail >&2; fi
    exit 1
}

# ok [WHAT...]: "ok - SCENARIO", or "ok - SCENARIO: WHAT".
ok() {
    echo "ok - ${scenario:-$test_name}${1:+: $*}"
}

# ---- waiting ----

# wait_file FILE [SECONDS]: until FILE exists (30 s at most, then the test fails).
wait_file() {
    local _
    for _ in $(seq 1 $((${2:-30} * 100))); do
        [ -e "$1" ] && return 0
        sleep 0.01
    done
    fail "timed out waiting for $1"
}

# wait_for PATTERN FILE [SECONDS]: until FILE has a line of PATTERN, for at
# most SECONDS (5); its status says whether it came.
wait_for() {
    local _
    for _ in $(seq 1 $((${3:-5} * 50))); do
        grep -q -- "$1" "$2" 2>/dev/null && return 0
        sleep 0.02
    done
    return 1
}
