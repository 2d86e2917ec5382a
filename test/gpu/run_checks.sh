#!/usr/bin/env bash
# Runs quota.sh and fails when any check printed FAIL (77 passes through).
out=$(bash "$(dirname "$0")/quota.sh" "$@"); rc=$?
echo "$out"
[ $rc = 77 ] && exit 77
echo "$out" | grep -q '^FAIL' && exit 1
exit $rc
