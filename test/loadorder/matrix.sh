#!/usr/bin/env bash
# One cell of the load-order matrix (README.md in this directory): a program
# that reaches libcuda.so.1 one way (CONSUMER), vgpu placed in front of the
# driver one way (PLACEMENT), with or without the driver already loaded.
# Usage: matrix.sh PLACEMENT CONSUMER fresh|driver-loaded BUILD_DIR FAKE_DIR PYTHON PYTHON_LOAD CLIENT LINKED
#                  CHAIN CGO
set -euo pipefail
placement=$1 consumer=$2 driver=$3 build=$4 fake_dir=$5 python=$6 python_load=$7 client=$8 linked=$9
chain=${10} cgo=${11}
case_name="$placement $consumer $driver"
# shellcheck source=test/loadorder/common.sh
. "$(dirname "$(realpath "$0")")/common.sh"
# shellcheck source=test/loadorder/private_etc.sh
. "$here/private_etc.sh"

drv=$tmp/driver
driver_dir "$drv"
symlink_dir "$tmp/vgpu"
quota_env
cuda_lib=libcuda.so.1 nvml_lib=libnvidia-ml.so.1
[ "$placement" = path ] && cuda_lib=$vgpu nvml_lib=$vgpu_nvml

case $consumer in
linked) cmd=("$linked") ;;
two-levels-down) cmd=("$chain") ;;
dlopen-local) cmd=("$client" load-order-local) ;;
dlopen-global) cmd=("$client" load-order-global) ;;
ctypes | ctypes-global | cffi) cmd=("$python" "$python_load" "$consumer" "$cuda_lib") ;;
cgo)
    [ -x "$cgo" ] || skip "no Go toolchain built the cgo consumer (apt-get install golang-go)"
    # Preloaded, vgpu brings the ASan runtime in before the Go runtime starts.
    case $placement in preload | ld-so-preload) ;; *) asan_cannot "$ASAN_IN_GO" ;; esac
    cmd=("$cgo") ;;
*) echo "unknown consumer $consumer"; exit 2 ;;
esac
case $consumer in linked | two-levels-down) ;; *) export TEST_CUDA_LIB=$cuda_lib TEST_NVML_LIB=$nvml_lib ;; esac

if [ "$driver" = driver-loaded ]; then
    export TEST_DRIVER_FIRST=$drv/libcuda.so.1
    if [ -n "${TEST_CUDA_LIB:-}" ] && { [ "$placement" = ld-library-path ] || [ "$placement" = ld-so-cache ]; }; then
        # The loader answers dlopen("libcuda.so.1") with the driver already
        # loaded under that SONAME, so vgpu is never loaded: what the symlink
        # install cannot reach, and LD_PRELOAD can (docs/guide/running.md).
        export TEST_EXPECT_VGPU=0
        unset TEST_EXPECT_QUOTA TEST_NVML_LIB
    fi
fi

set +e
case $placement in
preload)
    LD_PRELOAD="$vgpu $vgpu_nvml" LD_LIBRARY_PATH=$drv "${cmd[@]}" ;;
path)
    LD_LIBRARY_PATH=$drv "${cmd[@]}" ;;
ld-library-path)
    LD_LIBRARY_PATH=$tmp/vgpu:$drv "${cmd[@]}" ;;
ld-so-cache)
    ld_cache "$tmp" "$tmp/ld.so.cache" "$tmp/vgpu" "$drv" || fail "ldconfig could not build the cache"
    private_etc "$tmp" "$tmp/ld.so.cache" "" "${cmd[@]}" ;;
ld-so-preload)
    ld_cache "$tmp" "$tmp/ld.so.cache" "$drv" || fail "ldconfig could not build the cache"
    echo "$tmp/vgpu/libcuda.so.1 $tmp/vgpu/libnvidia-ml.so.1" >"$tmp/ld.so.preload"
    private_etc "$tmp" "$tmp/ld.so.cache" "$tmp/ld.so.preload" "${cmd[@]}" ;;
*)
    echo "unknown placement $placement"; exit 2 ;;
esac
rc=$?
set -e
[ $rc -eq 0 ] || fail "the program's checks failed (exit $rc)"
if [ "${TEST_EXPECT_VGPU:-}" = 1 ]; then
    grep -q "forwarding to the CUDA driver at $(realpath "$drv")/libcuda.so.1 " "$tmp/log" ||
        fail "vgpu did not forward to the driver behind it"
fi
ok
