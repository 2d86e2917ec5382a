#!/bin/sh
# Runs the protocol fuzzer for a bounded time from the seed corpus:
# run.sh FUZZER SEEDS_PY DICT SECONDS.  Fails on any crash it finds.
set -u
fuzzer=$1 seeds=$2 dict=$3 seconds=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/vgpu-fuzz.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
python3 "$seeds" "$work/corpus" || exit 1
cd "$work" || exit 1
"$fuzzer" -max_total_time="$seconds" -dict="$dict" -print_final_stats=1 -max_len=16384 corpus
