#!/usr/bin/env bash
# The gpu suite: real CUDA clients (PyTorch, JAX, CuPy, Triton, cuda-python,
# nvidia-smi, pynvml) run without vgpu, under LD_PRELOAD of both libraries
# (with VGPU_TRACE=1), and under the symlink install; their results must be
# the same and the trace must show their calls.  Skips (77) without a GPU.
# Usage: run_clients.sh BUILD_DIR [OUT_DIR] [CLIENT...]
# shellcheck source=test/gpu/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
gpu_check "$@"
shift 2 || shift $#
clients=${*:-torch jax cupy triton cudapy smi pynvml}
mkdir -p "$out/symlink"
ln -sf "$build/libvgpu-cuda.so" "$out/symlink/libcuda.so.1"
ln -sf "$build/libvgpu-nvml.so" "$out/symlink/libnvidia-ml.so.1"
failed=0

for c in $clients; do
    timeout 180 "$clients_dir/clients.sh" "$c" >"$out/$c.plain.txt" 2>&1
    timeout 180 env LD_PRELOAD="$preload" VGPU_TRACE=1 VGPU_LOG=info VGPU_LOG_FILE="$out/$c.trace.log" \
        "$clients_dir/clients.sh" "$c" >"$out/$c.preload.txt" 2>&1
    timeout 180 env LD_LIBRARY_PATH="$out/symlink${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" VGPU_LOG=info \
        VGPU_LOG_FILE="$out/$c.symlink.log" "$clients_dir/clients.sh" "$c" >"$out/$c.symlink.txt" 2>&1
    verdict=ok
    for mode in preload symlink; do
        if ! diff <(result_lines "$out/$c.plain.txt") <(result_lines "$out/$c.$mode.txt") >"$out/$c.$mode.diff"; then
            verdict="FAIL ($mode output differs)"
        fi
    done
    [ -n "$(result_lines "$out/$c.plain.txt")" ] || verdict="FAIL (no result without vgpu)"
    grep -q "forwarding to the" "$out/$c.symlink.log" 2>/dev/null || verdict="FAIL (symlink install did not load vgpu)"
    traced=$(grep -c '^vgpu-trace' "$out/$c.trace.log" 2>/dev/null); traced=${traced:-0}
    [ "$traced" -gt 0 ] || verdict="FAIL (no trace lines)"
    hooked=$(grep -cE '^vgpu-trace\S* (cuMemAlloc|cuMemCreate|cuLaunchKernel|cuLibrary|nvml)\w*\(' "$out/$c.trace.log" 2>/dev/null)
    hooked=${hooked:-0}
    echo "$c: $verdict — $traced traced calls, $hooked through hooks; $(result_lines "$out/$c.preload.txt" | head -3 | tr '\n' ' ')"
    [ "$verdict" = ok ] || failed=1
done
exit $failed
