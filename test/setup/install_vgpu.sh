#!/bin/sh
# Installs the build's vgpu libraries into LIBDIR as `meson install` lays
# them out: libvgpu-cuda.so and libvgpu-nvml.so, and the symlink directory
# LIBDIR/vgpu whose libcuda.so.1 and libnvidia-ml.so.1 are vgpu.  Copies,
# not links to the build: `ldconfig -r ROOT` resolves links inside ROOT.
# Usage: install_vgpu.sh BUILD_DIR LIBDIR...
set -eu
build=$1
shift
for d in "$@"; do
    mkdir -p "$d/vgpu"
    cp "$build/libvgpu-cuda.so" "$build/libvgpu-nvml.so" "$d/"
    ln -sfn ../libvgpu-cuda.so "$d/vgpu/libcuda.so.1"
    ln -sfn ../libvgpu-nvml.so "$d/vgpu/libnvidia-ml.so.1"
done
