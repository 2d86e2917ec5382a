/*
 * What the real libraries are (for the pathfinder) and what calls return
 * without them.  Both libraries carry both specs: libvgpu-cuda opens the
 * driver's NVML too, for what the vGPU backend must know of the GPUs.
 */
#include "forwarder/specs.h"

#include <cuda.h>

#include "vgpu/nvml_abi.h"

static void *cuda_missing_function(void)
{
    return (void *)(long)CUDA_ERROR_NOT_FOUND;
}

/* The closest code to "no driver": the one a machine without a GPU gives. */
static void *cuda_no_driver(void)
{
    return (void *)(long)CUDA_ERROR_NO_DEVICE;
}

const struct vgpu_driver_spec vgpu_cuda_spec = {
    .what = "CUDA driver",
    .soname = "libcuda.so.1",
    .file_prefix = "libcuda.so",
    .init_symbol = "cuInit",
    .override_env = "VGPU_REAL_LIBCUDA",
    .missing_fn = cuda_missing_function,
    .nodriver_fn = cuda_no_driver,
};

static void *nvml_missing_function(void)
{
    return (void *)(long)NVML_ERROR_FUNCTION_NOT_FOUND;
}

static void *nvml_no_driver(void)
{
    return (void *)(long)NVML_ERROR_LIBRARY_NOT_FOUND;
}

const struct vgpu_driver_spec vgpu_nvml_spec = {
    .what = "NVML library",
    .soname = "libnvidia-ml.so.1",
    .file_prefix = "libnvidia-ml.so",
    .init_symbol = "nvmlInit_v2",
    .override_env = "VGPU_REAL_NVML",
    .missing_fn = nvml_missing_function,
    .nodriver_fn = nvml_no_driver,
};
