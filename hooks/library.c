/*
 * Context-independent loading (cuLibrary*, cuKernel*), which CUDA 12+
 * runtimes use instead of cuModule*: a CUkernel is launched through the
 * launch hooks like a CUfunction.  These hooks pass through and trace, so
 * a trace shows which library a launched kernel came from.
 */
#include "common/export.h"
#include "common/log.h"
#include "forwarder/dispatch.h"
#include "vgpu_cuda_slots.h"

#include <cuda.h>

VGPU_EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions, void **jitOptionsValues,
                           unsigned int numJitOptions, CUlibraryOption *libraryOptions, void **libraryOptionValues,
                           unsigned int numLibraryOptions)
{
    CUresult r = VGPU_REAL_CUDA(cuLibraryLoadData)(library, code, jitOptions, jitOptionsValues, numJitOptions,
                                                    libraryOptions, libraryOptionValues, numLibraryOptions);
    vgpu_trace("cuLibraryLoadData", r, "%p -> %p", code, r ? NULL : (void *)*library);
    return r;
}

VGPU_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
                               void **jitOptionsValues, unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                               void **libraryOptionValues, unsigned int numLibraryOptions)
{
    CUresult r = VGPU_REAL_CUDA(cuLibraryLoadFromFile)(library, fileName, jitOptions, jitOptionsValues,
                                                        numJitOptions, libraryOptions, libraryOptionValues,
                                                        numLibraryOptions);
    vgpu_trace("cuLibraryLoadFromFile", r, "\"%s\" -> %p", fileName ? fileName : "(null)",
               r ? NULL : (void *)*library);
    return r;
}

VGPU_EXPORT CUresult cuLibraryUnload(CUlibrary library)
{
    CUresult r = VGPU_REAL_CUDA(cuLibraryUnload)(library);
    vgpu_trace("cuLibraryUnload", r, "%p", (void *)library);
    return r;
}

VGPU_EXPORT CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    CUresult r = VGPU_REAL_CUDA(cuLibraryGetKernel)(pKernel, library, name);
    vgpu_trace("cuLibraryGetKernel", r, "%p, \"%s\" -> %p", (void *)library, name ? name : "(null)",
               r ? NULL : (void *)*pKernel);
    return r;
}

VGPU_EXPORT CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    CUresult r = VGPU_REAL_CUDA(cuKernelGetFunction)(pFunc, kernel);
    vgpu_trace("cuKernelGetFunction", r, "%p -> %p", (void *)kernel, r ? NULL : (void *)*pFunc);
    return r;
}
