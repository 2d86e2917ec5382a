# Sourced by test/forwarder/loadpaths.sh and the scripts in test/loadorder/: a temp
# dir removed at exit, an environment holding only what each case sets, and
# the directories a load path is built from.  Needs $case_name, $build and
# $fake_dir.
# shellcheck source=test/common/lib.sh
. "$(dirname "$(realpath "${BASH_SOURCE[0]}")")/../common/lib.sh"
scenario=$case_name
temp_dir vgpu-load
fail_logs=$tmp/log
fail_lines=all
fake=$(realpath "$fake_dir/libcuda.so.1")
vgpu=$(realpath "$build/libvgpu-cuda.so")
vgpu_nvml=$(realpath "$build/libvgpu-nvml.so")
export VGPU_LOG=${TEST_VGPU_LOG:-info} VGPU_LOG_FILE=$tmp/log TEST_FAKE_LIBCUDA=$fake
# Meson's test runner adds build directories to LD_LIBRARY_PATH, which would
# hand every case the fake driver; and no case may meet a developer's mediator.
unset VGPU_REAL_LIBCUDA VGPU_REAL_NVML LD_PRELOAD LD_LIBRARY_PATH CUDA_HOME CUDA_PATH VGPU_MEMORY_LIMIT \
    VGPU_VISIBLE_DEVICES VGPU_BAR0 VGPU_NAME TEST_EXPECT_VGPU TEST_EXPECT_COUNT TEST_EXPECT_QUOTA \
    TEST_DRIVER_FIRST TEST_CUDA_LIB TEST_NVML_LIB
export VGPU_MEDIATOR_SOCKET=none VGPU_SYSFS_ROOT=$tmp/no-sysfs

# A copy of the fake driver in DIR; prints its real path.
copy_fake() { mkdir -p "$1"; cp "$fake" "$1/libcuda.so.1"; realpath "$1/libcuda.so.1"; }

# The fake driver's two libraries in DIR, as a driver is installed.
driver_dir() {
    copy_fake "$1" >/dev/null
    ln -s libcuda.so.1 "$1/libcuda.so"
    cp "$(realpath "$fake_dir/libnvidia-ml.so.1")" "$1/"
    ln -s libnvidia-ml.so.1 "$1/libnvidia-ml.so"
}

# The symlink install in DIR, as meson install lays it out: libcuda.so.1,
# libcuda.so, libnvidia-ml.so.1 and libnvidia-ml.so are vgpu.
symlink_dir() {
    mkdir -p "$1"
    for name in libcuda.so.1 libcuda.so; do ln -s "$vgpu" "$1/$name"; done
    for name in libnvidia-ml.so.1 libnvidia-ml.so; do ln -s "$vgpu_nvml" "$1/$name"; done
}

# A 1 GiB standalone vGPU over the fake's two 16 GiB devices, and what a
# user must then see (test/loadorder/probe.h).
quota_env() {
    export VGPU_MEMORY_LIMIT=1G VGPU_BAR0=$tmp/bar0 TEST_EXPECT_VGPU=1 TEST_EXPECT_COUNT=2 TEST_EXPECT_QUOTA=1073741824
}
