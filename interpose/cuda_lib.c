/* libvgpu-cuda.so: what the real CUDA driver is, and what calls return without it. */
#include "forwarder/dispatch.h"

#include <cuda.h>

static void *missing_function(void)
{
    return (void *)(long)CUDA_ERROR_NOT_FOUND;
}

/* The closest code to "no driver": the one a machine without a GPU gives. */
static void *no_driver(void)
{
    return (void *)(long)CUDA_ERROR_NO_DEVICE;
}

const struct vgpu_driver_spec vgpu_cuda_spec = {
    .what = "CUDA driver",
    .soname = "libcuda.so.1",
    .file_prefix = "libcuda.so",
    .init_symbol = "cuInit",
    .override_env = "VGPU_REAL_LIBCUDA",
    .missing_fn = missing_function,
    .nodriver_fn = no_driver,
};
