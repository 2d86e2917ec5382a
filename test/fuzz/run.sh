#!/bin/sh
# Runs a fuzzer for a bounded time from its seed corpus:
# run.sh FUZZER SEEDS_PY DICT SECONDS OUT_DIR [SEED_ARGS...].  Fails on any
# crash it finds; the input that crashed it stays in OUT_DIR (crash-*) to
# reproduce with `FUZZER OUT_DIR/crash-...`.
set -u
fuzzer=$1 seeds=$2 dict=$3 seconds=$4 out=$5
shift 5
mkdir -p "$out" || exit 1
rm -rf "$out/corpus" && python3 "$seeds" "$out/corpus" "$@" || exit 1
# libFuzzer exits 77 on a finding by default, which meson takes for a skip.
"$fuzzer" -max_total_time="$seconds" -dict="$dict" -print_final_stats=1 -max_len=16384 \
    -error_exitcode=1 -timeout_exitcode=1 -artifact_prefix="$out/" "$out/corpus"
