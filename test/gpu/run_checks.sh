#!/usr/bin/env bash
# Runs one of the gpu suite's check scripts (quota.sh, mediator.sh) and fails
# when any check printed FAIL; a skip (77) passes through.
# Usage: run_checks.sh SCRIPT BUILD_DIR OUT_DIR
script=$1; shift
out=$(bash "$(dirname "$0")/$script" "$@"); rc=$?
echo "$out"
[ $rc = 77 ] && exit 77
echo "$out" | grep -q '^FAIL' && exit 1
exit $rc
