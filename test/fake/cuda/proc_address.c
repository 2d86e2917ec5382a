/*
 * Entry-point lookup (cuGetProcAddress, _v2): a base name means the
 * versioned export of the CUDA version asked for; the address is this
 * library's own export.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

struct versioned_name {
    const char *base;
    int since; /* cudaVersion from which `name` is what base means */
    const char *name;
};

/* For a base name, the entries are ordered newest first. */
static const struct versioned_name g_versions[] = {
    { "cuMemAlloc", 3020, "cuMemAlloc_v2" },
    { "cuMemFree", 3020, "cuMemFree_v2" },
    { "cuMemGetInfo", 3020, "cuMemGetInfo_v2" },
    { "cuMemAllocPitch", 3020, "cuMemAllocPitch_v2" },
    { "cuDeviceTotalMem", 3020, "cuDeviceTotalMem_v2" },
    { "cuMemcpyHtoD", 3020, "cuMemcpyHtoD_v2" },
    { "cuMemcpyDtoH", 3020, "cuMemcpyDtoH_v2" },
    { "cuMemcpyDtoD", 3020, "cuMemcpyDtoD_v2" },
    { "cuMemsetD8", 3020, "cuMemsetD8_v2" },
    { "cuMemsetD32", 3020, "cuMemsetD32_v2" },
    { "cuArrayCreate", 3020, "cuArrayCreate_v2" },
    { "cuArray3DCreate", 3020, "cuArray3DCreate_v2" },
    { "cuArrayGetDescriptor", 3020, "cuArrayGetDescriptor_v2" },
    { "cuMemGetAddressRange", 3020, "cuMemGetAddressRange_v2" },
    { "cuMemAllocHost", 3020, "cuMemAllocHost_v2" },
    { "cuCtxDestroy", 4000, "cuCtxDestroy_v2" },
    { "cuCtxPushCurrent", 4000, "cuCtxPushCurrent_v2" },
    { "cuCtxPopCurrent", 4000, "cuCtxPopCurrent_v2" },
    { "cuStreamDestroy", 4000, "cuStreamDestroy_v2" },
    { "cuEventDestroy", 4000, "cuEventDestroy_v2" },
    { "cuDevicePrimaryCtxRelease", 11000, "cuDevicePrimaryCtxRelease_v2" },
    { "cuDevicePrimaryCtxReset", 11000, "cuDevicePrimaryCtxReset_v2" },
    { "cuDevicePrimaryCtxSetFlags", 11000, "cuDevicePrimaryCtxSetFlags_v2" },
    { "cuDeviceGetUuid", 11040, "cuDeviceGetUuid_v2" },
    { "cuCtxCreate", 12050, "cuCtxCreate_v4" },
    { "cuCtxCreate", 11040, "cuCtxCreate_v3" },
    { "cuCtxCreate", 3020, "cuCtxCreate_v2" },
    { "cuGetProcAddress", 12000, "cuGetProcAddress_v2" },
    { "cuCtxGetDevice", 13000, "cuCtxGetDevice_v2" },
    { "cuCtxSynchronize", 13000, "cuCtxSynchronize_v2" },
    { "cuMemcpyHtoDAsync", 3020, "cuMemcpyHtoDAsync_v2" },
    { "cuMemcpyDtoHAsync", 3020, "cuMemcpyDtoHAsync_v2" },
    { "cuMemcpyDtoDAsync", 3020, "cuMemcpyDtoDAsync_v2" },
    { "cuStreamBeginCapture", 10010, "cuStreamBeginCapture_v2" },
    { "cuStreamGetCaptureInfo", 12030, "cuStreamGetCaptureInfo_v3" },
    { "cuStreamGetCaptureInfo", 11030, "cuStreamGetCaptureInfo_v2" },
    { "cuGraphInstantiate", 12000, "cuGraphInstantiateWithFlags" },
    { "cuGraphInstantiate", 11000, "cuGraphInstantiate_v2" },
    { "cuEventElapsedTime", 12080, "cuEventElapsedTime_v2" },
};

/* Owned by this file: this library's own handle, set once (g_self_once). */
static void *g_self;
static pthread_once_t g_self_once = PTHREAD_ONCE_INIT;

/* Our own handle. Not dlopen(our path, RTLD_NOLOAD): vgpu interposes dlopen
 * and answers any "libcuda.so*" path with itself. In glibc a link_map is a
 * valid dlsym handle, and dladdr1 gives ours without opening anything. */
static void open_self(void)
{
    Dl_info info;
    struct link_map *lm = NULL;
    if (dladdr1((void *)&open_self, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm)
        g_self = lm;
}

/* Address of this library's own export called name, or NULL. */
static void *own_symbol(const char *name)
{
    pthread_once(&g_self_once, open_self);
    if (!g_self)
        return NULL;
    void *p = dlsym(g_self, name);
    /* Only our own definitions count, not one found in a dependency. */
    Dl_info mine, found;
    if (!p || !dladdr((void *)&open_self, &mine) || !dladdr(p, &found) || mine.dli_fbase != found.dli_fbase)
        return NULL;
    return p;
}

static void *resolve_proc(const char *symbol, int version, cuuint64_t flags)
{
    if (strncmp(symbol, "cu", 2) != 0 || strlen(symbol) > 200)
        return NULL;
    if (version > FAKEGPU_CUDA_VERSION)
        version = FAKEGPU_CUDA_VERSION;

    const char *chosen = symbol;
    for (size_t i = 0; i < sizeof g_versions / sizeof g_versions[0]; i++)
        if (strcmp(g_versions[i].base, symbol) == 0 && version >= g_versions[i].since) {
            chosen = g_versions[i].name;
            break;
        }

    if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
        static const char *const suffixes[] = { "_ptds", "_ptsz" };
        for (size_t i = 0; i < 2; i++) {
            char name[256];
            snprintf(name, sizeof name, "%s%s", chosen, suffixes[i]);
            void *p = own_symbol(name);
            if (p)
                return p;
        }
    }
    return own_symbol(chosen);
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    COUNT_CALL();
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = resolve_proc(symbol, cudaVersion, flags);
    return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus)
{
    COUNT_CALL();
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = resolve_proc(symbol, cudaVersion, flags);
    if (symbolStatus)
        *symbolStatus = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_SUCCESS;
}
