#!/usr/bin/env bash
# Runs one of the gpu suite's check scripts and fails when any check printed
# FAIL; a skip (77) passes through.
# Usage: run_checks.sh SCRIPT BUILD_DIR OUT_DIR
#   SCRIPT: its path under test/gpu/ (memory/quota.sh), or its name alone (quota.sh).
gpu=$(dirname "$(realpath "$0")")
script=$1
shift
[ -f "$gpu/$script" ] || script=$(cd "$gpu" && ls -- */"$script" 2>/dev/null | head -n 1)
out=$(bash "$gpu/$script" "$@"); rc=$?
echo "$out"
[ $rc = 77 ] && exit 77
echo "$out" | grep -q '^FAIL' && exit 1
exit $rc
