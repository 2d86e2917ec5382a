#!/bin/sh
# Runs the protocol fuzzer for a bounded time from the seed corpus:
# run.sh FUZZER SEEDS_PY DICT SECONDS OUT_DIR.  Fails on any crash it finds;
# the input that crashed it stays in OUT_DIR (crash-*) to reproduce with
# `FUZZER OUT_DIR/crash-...`.
set -u
fuzzer=$1 seeds=$2 dict=$3 seconds=$4 out=$5
mkdir -p "$out" || exit 1
rm -rf "$out/corpus" && python3 "$seeds" "$out/corpus" || exit 1
"$fuzzer" -max_total_time="$seconds" -dict="$dict" -print_final_stats=1 -max_len=16384 \
    -artifact_prefix="$out/" "$out/corpus"
