/*
 * Kernel launches: cuLaunchKernel, cuLaunchKernelEx and
 * cuLaunchCooperativeKernel.
 *
 * A launch copies the kernel's parameters (as the driver copies
 * kernelParams), checks them, and queues the kernel on its stream: it runs
 * later, on the device timeline.  A fault the device would meet (an address
 * outside every allocation) is returned by the launch itself, at once.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <string.h>

/* Queues the kernel on stream s (see ../streams/streams.c); grid and block are
 * not modelled. */
static CUresult launch(CUfunction f, CUstream s, int ptsz, void **kernelParams, void **extra)
{
    const struct CUfunc_st *k = fake_kernel_of(f);
    if (!k)
        return CUDA_ERROR_INVALID_HANDLE;
    if (fake_current_device() < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!extra == !kernelParams)
        return CUDA_ERROR_INVALID_VALUE;
    /* extra: one buffer of the parameters, each at its offset (cuFuncGetParamInfo's). */
    const char *buffer = NULL;
    size_t buffer_size = 0;
    for (unsigned i = 0; extra && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            buffer = extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1])
            buffer_size = *(const size_t *)extra[i + 1];
        else
            return CUDA_ERROR_INVALID_VALUE;
    }
    if (extra && !buffer)
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_op op = { .run = k->run };
    for (unsigned i = 0; i < k->nargs; i++) {
        size_t offset = 0, size = 0;
        if (kernelParams) {
            memcpy(&op.args[i], kernelParams[i], k->arg_size[i]);
            continue;
        }
        cuFuncGetParamInfo(f, i, &offset, &size);
        if (offset + size > buffer_size)
            return CUDA_ERROR_INVALID_VALUE;
        memcpy(&op.args[i], buffer + offset, size);
    }
    CUresult rc = k->check ? k->check(op.args) : CUDA_SUCCESS;
    if (rc != CUDA_SUCCESS)
        return rc;
    op.ns = k->timed ? op.args[0] : fakegpu_config()->kernel_ns;
    return fake_stream_launch(s, ptsz, &op);
}

static CUresult launch_grid(int ptsz, CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                            unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                            unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
    (void)gridDimX, (void)gridDimY, (void)gridDimZ, (void)blockDimX, (void)blockDimY, (void)blockDimZ,
        (void)sharedMemBytes;
    return launch(f, hStream, ptsz, kernelParams, extra);
}

WITH_PTSZ(cuLaunchKernel, launch_grid,
          (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
           unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
           void **kernelParams, void **extra),
          f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams,
          extra)

static CUresult launch_ex(int ptsz, const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
    if (!config)
        return CUDA_ERROR_INVALID_VALUE;
    return launch(f, config->hStream, ptsz, kernelParams, extra);
}

WITH_PTSZ(cuLaunchKernelEx, launch_ex, (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra),
          config, f, kernelParams, extra)

static CUresult launch_cooperative(int ptsz, CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                   unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                   unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                   void **kernelParams)
{
    return launch_grid(ptsz, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                       kernelParams, NULL);
}

WITH_PTSZ(cuLaunchCooperativeKernel, launch_cooperative,
          (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
           unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
           void **kernelParams),
          f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams)
