#!/usr/bin/env bash
# The gpu suite's Ollama checks, with a 4 GiB quota on GPU 0:
# - the Ollama-style server of test/ollama (Go: built where Go is, and
#   carried; OLLAMA_STANDIN names it) and its runner (built here with gcc
#   against the toolkit's libcuda stub) under LD_PRELOAD, vgpu-run, the
#   symlink directory on LD_LIBRARY_PATH and in the ld.so cache (a private
#   mount namespace), and the previous versions' free memory by UUID;
# - when GGML_SRC names a ggml source tree (github.com/ggml-org/ggml),
#   ggml's own CUDA backend, built here, under the symlink install:
#   test-backend-ops -b CUDA0 -o ADD must pass and show the quota.
# Usage: [OLLAMA_STANDIN=PATH] [GGML_SRC=DIR] ollama.sh BUILD_DIR [OUT_DIR]
# Prints ok/FAIL/SKIP lines; skips (77) without a GPU, or with neither.
# shellcheck source=test/gpu/lib.sh
. "$(dirname "$(realpath "$0")")/../lib.sh"
gpu_check "$@"
out_dir=$out
standins=$tests_dir/ollama
server=${OLLAMA_STANDIN:-$build/test/ollama/ollama-standin}
[ -x "$server" ] || [ -n "${GGML_SRC:-}" ] ||
    skip "no Ollama-style server ($server; build it with Go elsewhere and name it in OLLAMA_STANDIN) and no GGML_SRC"
mkdir -p "$out_dir/symlink" "$out_dir/lib/cuda_v13"
ln -sf "$build/libvgpu-cuda.so" "$out_dir/symlink/libcuda.so.1"
ln -sf "$build/libvgpu-nvml.so" "$out_dir/symlink/libnvidia-ml.so.1"
cuda_home=${CUDA_HOME:-/usr/local/cuda}

# What expect.sh checks against: the vGPU is GPU 0, with its own PCI id.
layer=$((256 << 20))
quota=$((4 << 30))
gpu0=$(LD_PRELOAD= nvidia-smi --query-gpu=pci.bus_id,uuid --format=csv,noheader -i 0)
pci=${gpu0%%,*}
pci=$(tr 'A-F' 'a-f' <<<"${pci: -12}") # CUDA's 0000:xx:00.0 of NVML's 00000000:XX:00.0
uuid=${gpu0##*, }
vgpu_pci=("$pci")
whole_pci=$pci
whole= # the runner reports the driver's figure; nvidia-smi's MiB are not exact enough to compare
standalone=(VGPU_MEMORY_LIMIT=4G VGPU_VISIBLE_DEVICES=0 VGPU_MEDIATOR_SOCKET=none VGPU_LOG=info)
# Where this machine's driver is found only through LD_LIBRARY_PATH (some
# containers), the server keeps it, and a worker with a fresh environment
# finds no driver at all: then there is nothing to check in that worker.
machine_llp=${LD_LIBRARY_PATH:-}
driver_in_cache=0
ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 ' && driver_in_cache=1

# ---- the stand-ins, against the real driver's API ----
stub=$cuda_home/lib64/stubs
[ -f "$stub/libcuda.so" ] || stub=$cuda_home/targets/x86_64-linux/lib/stubs
standins_built=0
if [ -x "$server" ]; then
    cc=(gcc -O2 -fPIC -I"$standins" -I"$cuda_home/include")
    if "${cc[@]}" -shared -o "$out_dir/lib/libggml-base.so" "$standins/ggml_base.c" &&
        "${cc[@]}" -shared -o "$out_dir/lib/libggml.so" "$standins/ggml.c" -L"$out_dir/lib" -lggml-base -ldl &&
        "${cc[@]}" -shared -o "$out_dir/lib/cuda_v13/libggml-cuda.so" "$standins/cuda_v13/ggml_cuda.c" \
            -L"$out_dir/lib" -lggml-base -L"$stub" -lcuda -ldl -Wl,-rpath,'$ORIGIN/..' &&
        "${cc[@]}" -o "$out_dir/lib/ollama-runner" "$standins/runner.c" -L"$out_dir/lib/cuda_v13" -lggml-cuda \
            -Wl,-rpath,'$ORIGIN/cuda_v13:$ORIGIN' -Wl,--allow-shlib-undefined >"$out_dir/standins.log" 2>&1; then
        standins_built=1
    else
        echo "FAIL the ggml stand-ins and the runner do not build against $cuda_home: $(tail -n 3 "$out_dir/standins.log")"
    fi
fi

# cell NAME [--previous] -- COMMAND-PREFIX...: runs the server from an
# environment of PATH, HOME and the machine's LD_LIBRARY_PATH, behind
# COMMAND-PREFIX (env assignments, vgpu-run, unshare), then checks what it
# and its runners saw.
cell() {
    local name=$1 args=()
    shift
    while [ "$1" != -- ]; do args+=("$1"); shift; done
    shift
    env -i PATH="$PATH" HOME="$out_dir" ${machine_llp:+LD_LIBRARY_PATH="$machine_llp"} "$@" "$server" serve --lib-dir "$out_dir/lib" \
        --lib-dir "$out_dir/lib/cuda_v13" --runner "$out_dir/lib/ollama-runner" --layer-mib $((layer >> 20)) \
        "${args[@]}" >"$out_dir/$name.out" 2>"$out_dir/$name.err"
    (
        cell=$name out=$out_dir/$name.out
        show() { echo "    (output in $out_dir/$name.out, vgpu's log in $out_dir/$name.err)"; }
        . "$standins/expect.sh"
        expect_vgpu_discovery
        expect_runner_in_vgpu ollama
        # Its environment built from scratch: no LD_PRELOAD, no settings.
        if [ $driver_in_cache = 1 ]; then expect_runner_outside scratch
        else echo "SKIP $name: the scratch runner (the driver is not in the ld.so cache, so it finds none)"; fi
        if [ ${#args[@]} -gt 0 ]; then
            l=$(line "discover pass=1 index=0")
            want "device 0" "$l" uuid "$uuid"
            want "device 0" "$l" prev_source nvml
            want "device 0" "$l" prev_total $quota
            within "device 0: free memory by NVML" "$(field "$l" prev_free)"
            [ $failed = 0 ] && ok "free memory from NVML by UUID is within the quota"
        fi
        [ $failed = 0 ] || show
    )
}

if [ $standins_built = 1 ]; then
    cell preload -- LD_PRELOAD="$preload" VGPU_BAR0="$out_dir/preload.bar0" \
        "${standalone[@]}"
    cell vgpu-run -- "$vgpu_run" --memory 4G --devices 0 --bar0 "$out_dir/vgpu-run.bar0" --socket none --
    cell symlink-dir -- LD_LIBRARY_PATH="$out_dir/symlink${machine_llp:+:$machine_llp}" VGPU_BAR0="$out_dir/symlink.bar0" \
        "${standalone[@]}"
    cell previous-by-uuid --previous -- LD_PRELOAD="$preload" \
        VGPU_BAR0="$out_dir/previous.bar0" "${standalone[@]}"
    # The symlink directory first in the ld.so cache, as an ld.so.conf.d entry
    # puts it; then the machine's LD_LIBRARY_PATH, which this cell unsets.
    { echo "$out_dir/symlink"; tr ':' '\n' <<<"$machine_llp"; echo "include /etc/ld.so.conf"; } >"$out_dir/ld.so.conf"
    if ldconfig -X -f "$out_dir/ld.so.conf" -C "$out_dir/ld.so.cache" 2>/dev/null &&
        unshare -m --propagation private mount --bind "$out_dir/ld.so.cache" /etc/ld.so.cache 2>/dev/null; then
        driver_in_cache=1 cell ld-so-conf-d -- unshare -m --propagation private sh -c 'mount --bind "$0" /etc/ld.so.cache && exec "$@"' \
            "$out_dir/ld.so.cache" env -u LD_LIBRARY_PATH VGPU_BAR0="$out_dir/ldso.bar0" "${standalone[@]}"
    else
        echo "SKIP ld-so-conf-d: no private mount namespace here (unshare -m refused)"
    fi
fi

# ---- ggml's own CUDA backend: test-backend-ops -> libggml -> libggml-cuda -> libcuda.so.1 ----
if [ -n "${GGML_SRC:-}" ]; then
    if cmake -B "$out_dir/ggml" -S "$GGML_SRC" -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90-real \
        -DGGML_CUDA_FA=OFF -DGGML_CUDA_NCCL=OFF >"$out_dir/ggml-build.log" 2>&1 &&
        cmake --build "$out_dir/ggml" -j16 >>"$out_dir/ggml-build.log" 2>&1; then
        tbo=$out_dir/ggml/bin/test-backend-ops
        needed=$(find "$out_dir/ggml" -name 'libggml-cuda.so*' -type f -exec readelf -d {} \; 2>/dev/null |
            sed -n 's/.*Shared library: \[\(libcuda\.so[^]]*\)\].*/\1/p' | head -1)
        [ "$needed" = libcuda.so.1 ] && echo "ok ggml: libggml-cuda.so links libcuda.so.1" ||
            echo "FAIL ggml: libggml-cuda.so does not link libcuda.so.1 ('$needed'): the symlink install is not what reaches it"
        timeout 300 env LD_PRELOAD= "$tbo" -b CUDA0 -o ADD >"$out_dir/ggml-plain.txt" 2>&1
        timeout 300 env LD_PRELOAD= LD_LIBRARY_PATH="$out_dir/symlink${machine_llp:+:$machine_llp}" VGPU_BAR0="$out_dir/ggml.bar0" \
            VGPU_LOG_FILE="$out_dir/ggml.log" "${standalone[@]}" "$tbo" -b CUDA0 -o ADD >"$out_dir/ggml.txt" 2>&1
        rc=$?
        memory=$(grep -m1 'Device memory:' "$out_dir/ggml.txt" | sed 's/^ *//')
        [ $rc = 0 ] && grep -q 'backends passed' "$out_dir/ggml.txt" &&
            echo "ok ggml: test-backend-ops -b CUDA0 -o ADD passes under the symlink install: $(grep -m1 'backends passed' "$out_dir/ggml.txt")" ||
            echo "FAIL ggml: test-backend-ops -b CUDA0 -o ADD exited $rc under the symlink install: $(tail -n 3 "$out_dir/ggml.txt" | tr '\n' ' ')"
        case $memory in
        "Device memory: 4096 MB"*) echo "ok ggml: CUDA0 shows the quota: $memory (without vgpu: $(grep -m1 'Device memory:' "$out_dir/ggml-plain.txt" | sed 's/^ *//'))" ;;
        *) echo "FAIL ggml: CUDA0 does not show the 4096 MB quota: '$memory'" ;;
        esac
        grep -q "forwarding to the CUDA driver" "$out_dir/ggml.log" 2>/dev/null ||
            echo "FAIL ggml: vgpu was not loaded (no 'forwarding to the CUDA driver' in $out_dir/ggml.log)"
    else
        echo "FAIL ggml: the CUDA backend did not build: $(tail -n 5 "$out_dir/ggml-build.log" | tr '\n' ' ')"
    fi
fi
exit 0
