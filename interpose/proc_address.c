/*
 * cuGetProcAddress: the door through which the CUDA runtime (and PyTorch,
 * JAX, CuPy, Triton, cuda-python) reach ~360 driver entry points.
 *
 * The real driver decides what a name means at a cudaVersion and with which
 * flags (cuCtxGetDevice at 13000 is cuCtxGetDevice_v2, which takes a context;
 * with the per-thread flag cuMemcpy is cuMemcpy_ptds).  Every pointer it
 * returns is one of its exported functions, so vgpu maps the pointer back to
 * that exact symbol and hands out its hook for exactly that ABI.  A lookup of
 * "cuGetProcAddress" itself therefore returns these functions again.
 */
#include "common/export.h"
#include "common/log.h"
#include "forwarder/dispatch.h"
#include "vgpu_cuda_slots.h"

#include <cuda.h>

VGPU_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus)
{
    CUresult r = VGPU_REAL_CUDA(cuGetProcAddress_v2)(symbol, pfn, cudaVersion, flags, symbolStatus);
    void *real = r == CUDA_SUCCESS && pfn ? *pfn : NULL;
    if (real)
        *pfn = vgpu_dispatch_wrap(&vgpu_cuda, real);
    vgpu_trace("cuGetProcAddress_v2", r, "\"%s\", %d, 0x%llx -> %p%s", symbol ? symbol : "(null)", cudaVersion,
               (unsigned long long)flags, real ? *pfn : NULL, real && *pfn != real ? " (vgpu)" : "");
    return r;
}

VGPU_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    CUresult r = VGPU_REAL_CUDA(cuGetProcAddress)(symbol, pfn, cudaVersion, flags);
    void *real = r == CUDA_SUCCESS && pfn ? *pfn : NULL;
    if (real)
        *pfn = vgpu_dispatch_wrap(&vgpu_cuda, real);
    vgpu_trace("cuGetProcAddress", r, "\"%s\", %d, 0x%llx -> %p%s", symbol ? symbol : "(null)", cudaVersion,
               (unsigned long long)flags, real ? *pfn : NULL, real && *pfn != real ? " (vgpu)" : "");
    return r;
}
