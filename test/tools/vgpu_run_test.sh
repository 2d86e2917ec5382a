#!/bin/bash
# vgpu-run's command-line behaviour.
#
#   vgpu_run_test.sh VGPU_RUN BUILD_DIR STATIC_PROG DYNAMIC_PROG
#
# BUILD_DIR holds libvgpu-cuda.so and libvgpu-nvml.so, and VGPU_RUN must
# find them there by itself (as build/tools/vgpu-run does).  Prints one
# "ok - NAME" or "not ok - NAME" line per case, then the TAP plan; exits 1
# if any failed.
# shellcheck disable=SC2317  # the case_* functions run through check "$@"
# shellcheck source=test/common/lib.sh
. "$(dirname "$(realpath "$0")")/../common/lib.sh"
set -eo pipefail

if [[ $# -ne 4 ]]; then
    echo "usage: $0 VGPU_RUN BUILD_DIR STATIC_PROG DYNAMIC_PROG" >&2
    exit 2
fi
vgpu_run=$1
libdir=$(cd "$2" && pwd -P)
static_prog=$3
dynamic_prog=$4
cuda=$libdir/libvgpu-cuda.so
nvml=$libdir/libvgpu-nvml.so

# The caller's settings must not steer the cases.
unset VGPU_LIB_DIR VGPU_LOG VGPU_TRACE VGPU_MEMORY_LIMIT LD_PRELOAD

temp_dir vgpu-run-test
failed=0
cases=0

# vg STATUS ARGS...: runs vgpu-run ARGS, stdout to $tmp/out and stderr to
# $tmp/err, and fails unless it exits with STATUS.
vg() {
    local want=$1 status=0
    shift
    "$vgpu_run" "$@" >"$tmp/out" 2>"$tmp/err" || status=$?
    if [[ $status -ne $want ]]; then
        echo "vgpu-run $* exited $status, not $want"
        return 1
    fi
}

# has_line FILE LINE: FILE has exactly that line.
has_line() {
    grep -qxF -- "$2" "$1" || { echo "no line '$2' in $(basename "$1"):"; cat "$1"; return 1; }
}

# mentions FILE TEXT: FILE contains TEXT.
mentions() {
    grep -qF -- "$2" "$1" || { echo "'$2' not in $(basename "$1"):"; cat "$1"; return 1; }
}

# Cases run with errexit off (bash ignores it inside an if), so every step
# ends in "|| return 1".
check() {
    local name=$1
    shift
    cases=$((cases + 1))
    if "$@" >"$tmp/log" 2>&1; then
        echo "ok - $name"
    else
        echo "not ok - $name"
        sed 's/^/#   /' "$tmp/log"
        failed=1
    fi
}

case_preload_order() {
    # /old/libvgpu-cuda.so is another copy of vgpu: replaced, not kept.
    LD_PRELOAD="libkeep.so:/old/libvgpu-cuda.so" vg 0 --dry-run -- "$dynamic_prog" || return 1
    has_line "$tmp/out" "LD_PRELOAD=$cuda $nvml libkeep.so" || return 1
    has_line "$tmp/out" "$dynamic_prog" || return 1
}

case_variables() {
    vg 0 --dry-run --trace --log debug --memory 4G -- "$dynamic_prog" || return 1
    has_line "$tmp/out" "VGPU_TRACE=1" || return 1
    has_line "$tmp/out" "VGPU_LOG=debug" || return 1
    has_line "$tmp/out" "VGPU_MEMORY_LIMIT=4G" || return 1
}

case_no_nvml() {
    vg 0 --dry-run --no-nvml -- "$dynamic_prog" || return 1
    has_line "$tmp/out" "LD_PRELOAD=$cuda" || return 1
}

case_bad_log_level() {
    vg 2 --log loud -- "$dynamic_prog" || return 1
    mentions "$tmp/err" "loud" || return 1
}

case_unknown_option() {
    vg 2 --no-such-option -- "$dynamic_prog" || return 1
    mentions "$tmp/err" "--no-such-option" || return 1
}

case_static_refused() {
    vg 126 "$static_prog" || return 1
    mentions "$tmp/err" "statically linked" || return 1
    if grep -qx "static_prog ran" "$tmp/out"; then
        echo "the static program ran"
        return 1
    fi
}

case_allow_static() {
    vg 0 --allow-static "$static_prog" || return 1
    has_line "$tmp/out" "static_prog ran" || return 1
    mentions "$tmp/err" "statically linked" || return 1
}

case_static_interpreter() {
    printf '#!%s\n' "$(cd "$(dirname "$static_prog")" && pwd -P)/$(basename "$static_prog")" >"$tmp/script"
    chmod +x "$tmp/script"
    vg 126 "$tmp/script" || return 1
    mentions "$tmp/err" "statically linked" || return 1
}

case_missing_command() {
    vg 127 vgpu-run-test-no-such-command || return 1
    mentions "$tmp/err" "command not found" || return 1
    vg 127 "$tmp/no-such-file" || return 1
}

case_not_executable() {
    : >"$tmp/plain"
    chmod 644 "$tmp/plain"
    # root may execute nothing without an x bit either, so this holds for root too.
    vg 126 "$tmp/plain" || return 1
}

case_real_run() {
    vg 0 env || return 1
    if ! grep -q '^LD_PRELOAD=.*libvgpu-cuda\.so' "$tmp/out"; then
        echo "no vgpu in env's LD_PRELOAD:"
        grep LD_PRELOAD "$tmp/out"
        return 1
    fi
}

case_empty_lib_dir() {
    mkdir -p "$tmp/empty"
    vg 127 --lib-dir "$tmp/empty" -- "$dynamic_prog" || return 1
    mentions "$tmp/err" "$tmp/empty" || return 1
}

check "dry-run puts both libraries first in LD_PRELOAD, keeping other entries" case_preload_order
check "--trace --log debug --memory 4G set their variables" case_variables
check "--no-nvml preloads only the CUDA library" case_no_nvml
check "a bad --log level exits 2" case_bad_log_level
check "an unknown option exits 2" case_unknown_option
check "a static program is refused with exit 126" case_static_refused
check "--allow-static runs a static program" case_allow_static
check "a script whose interpreter is static is refused" case_static_interpreter
check "a missing command exits 127" case_missing_command
check "a file without execute permission exits 126" case_not_executable
check "a real run gives env vgpu in LD_PRELOAD" case_real_run
check "--lib-dir naming an empty directory exits 127 naming it" case_empty_lib_dir

echo "1..$cases"
exit "$failed"
