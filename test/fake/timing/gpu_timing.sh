#!/usr/bin/env bash
# Whether the fake GPU's timing model (test/fake/README.md) is the real
# GPU's: runs the fake suite's multi-process loads on a real GPU, without
# vgpu, with test/compute/compute_client's PTX kernels, and checks what the fake promises
# (a process alone gets the device; two or three processes share it evenly,
# whatever their kernels' lengths; NVML reports it), printing the figures to
# calibrate the fake with (the launch-bound rate, for FAKEGPU_LAUNCH_NS).
# Skips (77) without a GPU.
# Usage: gpu_timing.sh BUILD_DIR [OUT_DIR]
set -uo pipefail
build=$(realpath "$1")
out=${2:-$(mktemp -d)}
mkdir -p "$out"
workload=$build/test/compute/compute_client
client=$build/test/fake/timing_client
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "SKIP: no NVIDIA GPU"; exit 77
fi
unset LD_PRELOAD FAKEGPU_STATE
failed=0
verdict() { # verdict OK|FAIL WHAT
    echo "$1 - $2"
    [ "$1" = ok ] || failed=1
}
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" "$out/$1.out"; }
within() { awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'; }
soon() { echo $(( $(date +%s%3N) + 3000 )); }

# run NAME WORKLOAD-ARGS... in the background; its pid in $last
run() {
    name=$1; shift
    "$workload" "$@" >"$out/$name.out" 2>&1 & last=$!
}
join() { wait "$1" || echo "FAIL - workload $2: $(cat "$out/$2.out")"; echo "  $(cat "$out/$2.out")"; }
share_in() { # share_in NAME LO HI WHAT
    s=$(field "$1" share)
    if within "${s:-0}" "$2" "$3"; then verdict ok "$4: $1 got $s"; else verdict FAIL "$4: $1 got ${s:-nothing}, want $2..$3"; fi
}
total_in() { # total_in LO HI WHAT NAMES...
    lo=$1 hi=$2 what=$3; shift 3
    t=0; for n in "$@"; do t=$(awk -v a="$t" -v b="$(field "$n" share)" 'BEGIN { print a + b }'); done
    if within "$t" "$lo" "$hi"; then verdict ok "$what: together $t"; else verdict FAIL "$what: together $t, want $lo..$hi"; fi
}

echo "== one process: the whole device"
run alone matmul 3; join $last alone
share_in alone 0.90 1.05 "matmul alone"
# The kernel length calibrated alone, for every later process: processes
# that start together would calibrate on a shared GPU.
units=$(field alone units_per_us)
[ -n "$units" ] || { echo "FAIL - no calibration from the first run"; exit 1; }
run() {
    name=$1; shift
    "$workload" "$@" --units-per-us "$units" >"$out/$name.out" 2>&1 & last=$!
}
run graph matmul 3 --graph; join $last graph
share_in graph 0.90 1.05 "graph replay alone"

echo "== two processes, 200 us kernels"
at=$(soon)
run a matmul 4 --start-at "$at"; a=$last
run b matmul 4 --start-at "$at"; b=$last
sleep 5.5
"$client" nvml-shows 75 100 "$a" 30 70 "$b" 30 70 >"$out/nvml-two.txt" 2>&1 && verdict ok "NVML shows two processes" ||
    verdict FAIL "NVML with two processes: $(tr '\n' ' ' <"$out/nvml-two.txt")"
sed 's/^/  /' "$out/nvml-two.txt"
join $a a; join $b b
share_in a 0.30 0.70 "two processes"; share_in b 0.30 0.70 "two processes"; total_in 0.90 1.05 "two processes" a b

echo "== two processes, 50 us against 2 ms kernels"
at=$(soon)
run short matmul 4 --kernel-us 50 --batch 200 --start-at "$at"; a=$last
run long matmul 4 --kernel-us 2000 --batch 5 --start-at "$at"; b=$last
join $a short; join $b long
share_in short 0.30 0.70 "kernel lengths"; share_in long 0.30 0.70 "kernel lengths"
total_in 0.90 1.05 "kernel lengths" short long

echo "== three processes"
at=$(soon)
run p1 matmul 4 --start-at "$at"; a=$last
run p2 matmul 4 --stream --start-at "$at"; b=$last
run p3 matmul 4 --graph --start-at "$at"; c=$last
join $a p1; join $b p2; join $c p3
for n in p1 p2 p3; do share_in $n 0.20 0.47 "three processes"; done
total_in 0.90 1.05 "three processes" p1 p2 p3

echo "== alone, saturated: NVML"
run nvml matmul 4; a=$last
sleep 3
"$client" nvml-shows 75 100 "$a" 75 100 >"$out/nvml-one.txt" 2>&1 && verdict ok "NVML shows a saturated device" ||
    verdict FAIL "NVML with one process: $(tr '\n' ' ' <"$out/nvml-one.txt")"
sed 's/^/  /' "$out/nvml-one.txt"
join $a nvml

echo "== launch-bound loops (for FAKEGPU_LAUNCH_NS; the fake's default is 2000 ns, 500000 launches/s)"
run launch launch 3; join $last launch
run launch_stream launch 3 --stream; join $last launch_stream
echo "  launch-bound: $(field launch kernels_per_s) launches/s on the legacy stream, $(field launch_stream kernels_per_s) on a stream"

exit $failed
