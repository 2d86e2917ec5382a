/* libvgpu-nvml.so: what the real NVML is, and what calls return without it. */
#include "forwarder/dispatch.h"

#include "vgpu/nvml_abi.h"

static void *missing_function(void)
{
    return (void *)(long)NVML_ERROR_FUNCTION_NOT_FOUND;
}

static void *no_driver(void)
{
    return (void *)(long)NVML_ERROR_LIBRARY_NOT_FOUND;
}

const struct vgpu_driver_spec vgpu_nvml_spec = {
    .what = "NVML library",
    .soname = "libnvidia-ml.so.1",
    .file_prefix = "libnvidia-ml.so",
    .init_symbol = "nvmlInit_v2",
    .override_env = "VGPU_REAL_NVML",
    .missing_fn = missing_function,
    .nodriver_fn = no_driver,
};
