#!/usr/bin/env bash
# The load-order matrix's real-client half, on a GPU (test/loadorder/README.md
# has the fake-driver half): each load path (LD_PRELOAD; the symlink
# directory through LD_LIBRARY_PATH, through an ld.so.conf.d entry in the
# ld.so cache, and through /etc/ld.so.preload, the last two in a private
# mount namespace), with and without the real driver already loaded, times
# each client: a C program that reaches libcuda.so.1 two levels down (built
# here from test/chain/), Python ctypes with RTLD_LOCAL and RTLD_GLOBAL,
# PyTorch, CuPy, cuda-python and the cgo program.  Every cell runs a 4 GiB
# standalone vGPU and prints "ok CELL ...", "FAIL CELL why" or "skip CELL why";
# exit 1 on any FAIL, 77 without a GPU.
#
# Usage: loadorder.sh BUILD_DIR [OUT_DIR]
#   TEST_CGO=BUILD_DIR/test/loadorder/loadorder_cgo runs the Go cells (built
#   where Go is; skipped without it).
# shellcheck source=test/gpu/lib.sh
. "$(dirname "$(realpath "$0")")/../lib.sh"
gpu_check "$@"
src=$source_dir
# shellcheck source=test/loadorder/private_etc.sh
. "$tests_dir/loadorder/private_etc.sh"
out=$(realpath "$out")
temp_dir vgpu-loadorder
start=$SECONDS

vgpu=$build/libvgpu-cuda.so vgpu_nvml=$build/libvgpu-nvml.so
driver=$(ldconfig -p | awk '$1 == "libcuda.so.1" && /x86-64/ { print $NF; exit }')
driver=$(realpath "${driver:-/nonexistent}" 2>/dev/null)
gpus=$(nvidia-smi -L | grep -c '^GPU')
quota=$((4 << 30))
echo "# real driver $driver (from the ld.so cache), $gpus GPU(s), vgpu from $build"
[ -f "$driver" ] || { echo "FAIL setup: no libcuda.so.1 in the ld.so cache"; exit 1; }
mkdir -p "$tmp/vgpu" "$tmp/chain"
for name in libcuda.so.1 libcuda.so; do ln -s "$vgpu" "$tmp/vgpu/$name"; done # as meson install lays it out
for name in libnvidia-ml.so.1 libnvidia-ml.so; do ln -s "$vgpu_nvml" "$tmp/vgpu/$name"; done

# What a user's environment would hold, less anything of vgpu's or the tests'.
unset LD_PRELOAD VGPU_REAL_LIBCUDA VGPU_REAL_NVML VGPU_BAR0 VGPU_MEMORY_LIMIT VGPU_VISIBLE_DEVICES VGPU_NAME \
    TEST_DRIVER_FIRST TEST_CUDA_LIB TEST_NVML_LIB
# LD_LIBRARY_PATH comes before the ld.so cache: a directory on it that holds
# the driver (the image's /usr/local/nvidia/lib64, and /usr/local/nvidia/lib,
# whose libcuda.so.1 is a link to it) keeps the driver under the cache
# install, as docs/guide/running.md says; the ld.so.conf.d cells run without them.
cache_llp=
for d in $(echo "${LD_LIBRARY_PATH:-}" | tr ':' ' '); do
    if [ -e "$d/libcuda.so.1" ] || [ -e "$d/libnvidia-ml.so.1" ]; then
        echo "# LD_LIBRARY_PATH holds $d, which has the driver: the ld.so.conf.d cells run without it"
    else
        cache_llp=${cache_llp:+$cache_llp:}$d
    fi
done

# program -> libvgpuchain_middle -> libvgpuchain_bottom -> libcuda.so.1, as
# ggml's CUDA backend; linked against vgpu for the symbols only (no RUNPATH
# to any libcuda.so.1).
cflags=(-O2 -I"$src" -I"$src/include" -I/usr/local/cuda/include -D__CUDA_API_VERSION_INTERNAL)
if ! { gcc -shared -fPIC "${cflags[@]}" "$src/test/interpose/chain/bottom.c" "$vgpu" -ldl -o "$tmp/chain/libvgpuchain_bottom.so" &&
       gcc -shared -fPIC "$src/test/interpose/chain/middle.c" -L"$tmp/chain" -lvgpuchain_bottom -Wl,-rpath,'$ORIGIN' \
           -o "$tmp/chain/libvgpuchain_middle.so" &&
       gcc "${cflags[@]}" "$src/test/interpose/chain/client.c" -L"$tmp/chain" -lvgpuchain_middle -Wl,-rpath,'$ORIGIN' \
           -Wl,--allow-shlib-undefined -ldl -o "$tmp/chain/chain_program"; } >"$out/chain-build.txt" 2>&1; then
    echo "FAIL setup: the chain program does not build: $(head -3 "$out/chain-build.txt")"; exit 1
fi

# run_cell PLACEMENT CLIENT DRIVER: one cell, its output in $out/CELL.txt, its verdict in $out/CELL.verdict.
run_cell() {
    local placement=$1 client=$2 drv=$3
    local cell=$placement/$client/$drv name=${placement}_${client}_${drv}
    local work=$tmp/$name log=$out/$name.log txt=$out/$name.txt
    mkdir -p "$work"
    rm -f "$log"
    local -a cmd env=(VGPU_MEMORY_LIMIT=4G VGPU_BAR0="$work/bar0" VGPU_MEDIATOR_SOCKET=none VGPU_LOG=info
        VGPU_LOG_FILE="$log" TEST_EXPECT_VGPU=1 TEST_EXPECT_COUNT="$gpus" TEST_EXPECT_QUOTA=$quota)
    case $client in
    chain) cmd=(timeout 150 "$tmp/chain/chain_program") ;;
    ctypes-local) cmd=(timeout 150 python3 "$src/test/interpose/python_load.py" ctypes libcuda.so.1) ;;
    ctypes-global) cmd=(timeout 150 python3 "$src/test/interpose/python_load.py" ctypes-global libcuda.so.1) ;;
    torch | cupy | cudapy) cmd=(timeout 150 python3 "$clients_dir/loadorder_clients.py" "$client") ;;
    cgo)
        if [ ! -x "${TEST_CGO:-}" ]; then
            echo "skip $cell: no TEST_CGO (build/test/loadorder/loadorder_cgo, built where Go is)" >"$out/$name.verdict"
            return
        fi
        cmd=(timeout 150 "$(realpath "$TEST_CGO")") ;;
    esac
    case $client in ctypes-* | cgo) env+=(TEST_NVML_LIB=libnvidia-ml.so.1) ;; esac
    local keeps=
    if [ "$drv" = driver-loaded ]; then
        env+=(TEST_DRIVER_FIRST="$driver")
        if [ "$client" != chain ] && { [ "$placement" = ld-library-path ] || [ "$placement" = ld-so-cache ]; }; then
            # The loader answers libcuda.so.1 with the driver already loaded
            # under that SONAME: vgpu is never loaded (docs/guide/running.md).
            keeps=1
            env=(VGPU_LOG_FILE="$log" TEST_EXPECT_VGPU=0 TEST_EXPECT_COUNT="$gpus" TEST_DRIVER_FIRST="$driver")
        fi
    fi
    # Each cell runs in a subshell of its own (run_cell ... &): its exports stay there.
    export "${env[@]}"
    case $placement in
    preload) export LD_PRELOAD="$vgpu $vgpu_nvml" ;;
    ld-library-path) export LD_LIBRARY_PATH="$tmp/vgpu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;;
    ld-so-cache)
        export LD_LIBRARY_PATH="$cache_llp"
        ld_cache "$work" "$work/ld.so.cache" "$tmp/vgpu" "include /etc/ld.so.conf" >"$work/ldconfig.txt" 2>&1 ||
            { echo "FAIL $cell: ldconfig: $(head -1 "$work/ldconfig.txt")" >"$out/$name.verdict"; return; }
        cmd=(private_etc "$work" "$work/ld.so.cache" "" "${cmd[@]}") ;;
    ld-so-preload)
        echo "$tmp/vgpu/libcuda.so.1 $tmp/vgpu/libnvidia-ml.so.1" >"$work/ld.so.preload"
        cmd=(private_etc "$work" "" "$work/ld.so.preload" "${cmd[@]}") ;;
    esac
    ("${cmd[@]}") >"$txt" 2>&1
    local rc=$?
    local why=
    if [ $rc = 77 ]; then
        echo "skip $cell: $(grep -m1 SKIP "$txt")" >"$out/$name.verdict"
        return
    fi
    [ $rc = 0 ] || why="exit $rc: $(grep -m1 -E 'FAIL|Error|error' "$txt" || tail -1 "$txt")"
    if [ -z "$why" ] && [ -z "$keeps" ] && ! grep -q "forwarding to the CUDA driver at $driver " "$log" 2>/dev/null; then
        why="vgpu did not log forwarding to $driver"
    fi
    if [ -n "$why" ]; then
        echo "FAIL $cell: $why" >"$out/$name.verdict"
    else
        echo "ok $cell${keeps:+ (keeps the driver, as documented)}: $(grep -E '^(cuInit from|quota:|NVML|torch:|cupy:|cudapy:)' "$txt" | paste -sd';' -)" \
            >"$out/$name.verdict"
    fi
}

clients="chain ctypes-local ctypes-global torch cupy cudapy cgo"
failed=0
for placement in preload ld-library-path ld-so-cache ld-so-preload; do
    for drv in fresh driver-loaded; do
        # A group's clients run together: they share the GPU, each with its own vGPU.
        for client in $clients; do run_cell "$placement" "$client" "$drv" & done
        wait
        for client in $clients; do
            v=$(cat "$out/${placement}_${client}_${drv}.verdict" 2>/dev/null || echo "FAIL $placement/$client/$drv: no verdict")
            echo "$v"
            case $v in FAIL*) failed=1 ;; esac
        done
    done
done
echo "# $((SECONDS - start)) s; outputs and vgpu logs in $out"
exit $failed
