#!/usr/bin/env bash
# How vgpu gets loaded, and how it finds the real driver behind itself.
# Usage: loadpaths.sh CASE BUILD_DIR FAKE_DIR CLIENT LINKED_CLIENT CHAIN_PROGRAM HIDE_DLOPEN_LIB
set -euo pipefail
case_name=$1 build=$2 fake_dir=$3 client=$4 linked=$5 chain=$6 hide_dlopen=$7
# shellcheck source=test/loadorder/common.sh
. "$(dirname "$(realpath "$0")")/../loadorder/common.sh"

case $case_name in
symlink-install)
    # vgpu installed as libcuda.so.1 in a directory searched before the driver's.
    mkdir -p "$tmp/vgpu"
    ln -s "$vgpu" "$tmp/vgpu/libcuda.so.1"
    LD_LIBRARY_PATH=$tmp/vgpu:$fake_dir TEST_EXPECT_VGPU=1 TEST_EXPECT_COUNT=2 "$linked" || fail "linked program"
    LD_LIBRARY_PATH=$tmp/vgpu:$fake_dir "$client" basic || fail "dlopen program"
    ;;
symlink-install-two-levels-down)
    # program -> library -> library -> libcuda.so.1 (ggml's CUDA backend): the C
    # library comes before vgpu in the load order.  This crashed on the first
    # CUDA call, vgpu's lookup of the C library's dlopen having found nothing.
    mkdir -p "$tmp/vgpu"
    ln -s "$vgpu" "$tmp/vgpu/libcuda.so.1"
    LD_LIBRARY_PATH=$tmp/vgpu:$fake_dir TEST_EXPECT_VGPU=1 TEST_EXPECT_COUNT=2 \
        "$chain" || fail "the chained program without a vGPU"
    (quota_env && LD_LIBRARY_PATH=$tmp/vgpu:$fake_dir "$chain") || fail "the chained program does not see its quota"
    grep -q "forwarding to the CUDA driver at $(realpath "$fake_dir")/libcuda.so.1" "$tmp/log" ||
        fail "vgpu did not forward to the driver behind it"
    ;;
hidden-dlopen)
    # A library ahead of vgpu hides the C library's dlopen: no crash, no
    # device, and one error line that says so.
    driver_dir "$tmp/driver"
    LD_PRELOAD="$hide_dlopen $vgpu $vgpu_nvml" LD_LIBRARY_PATH=$tmp/driver TEST_EXPECT_VGPU=1 TEST_EXPECT_COUNT=0 \
        "$linked" || fail "the linked program, with dlopen hidden"
    [ "$(grep -c "error: the C library's dlopen (GLIBC_2.34 or GLIBC_2.2.5) is in neither" "$tmp/log")" = 1 ] ||
        fail "not one error line about the hidden dlopen"
    grep -q "no CUDA driver found" "$tmp/log" || fail "no line saying that no driver was found"
    ;;
symlink-install-libcuda-so)
    # A program that opens "libcuda.so", as numba does first, gets vgpu from
    # the symlink directory, not the driver's libcuda.so behind it.
    symlink_dir "$tmp/vgpu"
    driver_dir "$tmp/driver"
    (quota_env && LD_LIBRARY_PATH=$tmp/vgpu:$tmp/driver TEST_CUDA_LIB=libcuda.so TEST_NVML_LIB=libnvidia-ml.so \
        "$client" load-order-local) || fail "dlopen(\"libcuda.so\") through the symlink directory"
    ;;
preload-after-the-driver)
    # The driver preloaded ahead of vgpu holds the SONAME; vgpu's dlopen
    # still answers libcuda.so.1 with itself, and forwards to that driver.
    driver_dir "$tmp/driver"
    (quota_env && LD_PRELOAD="$tmp/driver/libcuda.so.1 $vgpu $vgpu_nvml" LD_LIBRARY_PATH=$tmp/driver \
        TEST_NVML_LIB=libnvidia-ml.so.1 "$client" load-order-global) || fail "dlopen(\"libcuda.so.1\") after the driver"
    grep -q "forwarding to the CUDA driver at $(realpath "$tmp/driver")/libcuda.so.1 " "$tmp/log" ||
        fail "vgpu did not forward to the preloaded driver"
    ;;
refuses-itself)
    # Renamed copies of vgpu (no symlink to see through) ahead of the driver.
    mkdir -p "$tmp/a" "$tmp/b"
    cp "$vgpu" "$tmp/a/libcuda.so.1"
    cp "$vgpu" "$tmp/b/libcuda.so"
    want=$(copy_fake "$tmp/c")
    LD_LIBRARY_PATH=$tmp/a:$tmp/b:$tmp/c TEST_EXPECT_DRIVER=$want TEST_FAKE_LIBCUDA=$want \
        "$client" which-driver || fail "forwarded to the wrong library"
    ;;
override-wins)
    want=$(copy_fake "$tmp/forced")
    other=$(copy_fake "$tmp/other")
    LD_PRELOAD=$vgpu LD_LIBRARY_PATH=$tmp/other VGPU_REAL_LIBCUDA=$want TEST_EXPECT_DRIVER=$want \
        TEST_FAKE_LIBCUDA=$want "$client" which-driver || fail "VGPU_REAL_LIBCUDA ignored"
    ;;
loaded-copy-wins)
    want=$(copy_fake "$tmp/loaded")
    copy_fake "$tmp/path" >/dev/null
    LD_LIBRARY_PATH=$tmp/path TEST_VGPU_LIBCUDA=$vgpu TEST_PRELOADED_DRIVER=$want TEST_EXPECT_DRIVER=$want \
        TEST_FAKE_LIBCUDA=$want "$client" already-loaded || fail "the already-loaded driver was not used"
    ;;
ld-library-path)
    want=$(copy_fake "$tmp/llp")
    LD_PRELOAD=$vgpu LD_LIBRARY_PATH=$tmp/llp TEST_EXPECT_DRIVER=$want TEST_FAKE_LIBCUDA=$want \
        "$client" which-driver || fail "LD_LIBRARY_PATH not searched"
    ;;
cuda-home)
    want=$(copy_fake "$tmp/cuda/lib64")
    LD_PRELOAD=$vgpu CUDA_HOME=$tmp/cuda TEST_EXPECT_DRIVER=$want TEST_FAKE_LIBCUDA=$want \
        "$client" which-driver || fail "CUDA_HOME not searched"
    ;;
refuses-stub)
    # The toolkit's link-time stub is never taken for a driver.
    copy_fake "$tmp/cuda/lib64/stubs" >/dev/null
    LD_PRELOAD=$vgpu LD_LIBRARY_PATH=$tmp/cuda/lib64/stubs "$client" no-driver || fail "a stub was used"
    grep -q "link-time stub" "$tmp/log" || fail "the log does not say the stub was refused"
    ;;
no-driver)
    if ldconfig -p 2>/dev/null | grep -q 'libcuda.so'; then
        skip "this machine has a CUDA driver"
    fi
    LD_PRELOAD=$vgpu "$client" no-driver || fail "missing driver"
    grep -q "Set VGPU_REAL_LIBCUDA" "$tmp/log" || fail "the log line does not say what to do"
    ;;
bad-override)
    LD_PRELOAD=$vgpu VGPU_REAL_LIBCUDA=$tmp/nonexistent.so "$client" no-driver || fail "bad override"
    grep -q "VGPU_REAL_LIBCUDA=$tmp/nonexistent.so (no such file)" "$tmp/log" || fail "log does not name the bad path"
    ;;
*)
    echo "unknown case $case_name"; exit 2 ;;
esac
ok
