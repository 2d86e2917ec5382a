/*
 * The remote driver's hand-written calls, the executor's side (the guest's:
 * forwarder/remote/guest_manual.c; what crosses: docs/remote.md).  Each
 * checks its request's length and handles before the driver sees them, and
 * replies itself; a request that does not parse closes the connection.
 */
#define _GNU_SOURCE
#include "tools/executor/exec_manual.h"

#include "common/log.h"
#include "forwarder/remote/image.h"
#include "forwarder/remote/wire.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static uint64_t word(const void *req, unsigned i)
{
    uint64_t w;
    memcpy(&w, (const char *)req + i * sizeof(w), sizeof(w));
    return w;
}

static int error_text(struct vgpu_exec *x, void *fn, const void *req, size_t len, const char *call)
{
    if (len != 8)
        return vgpu_exec_malformed(call, len);
    const char *s = NULL;
    int r = ((CUresult(*)(CUresult, const char **))fn)((CUresult)word(req, 0), &s);
    struct iovec v = { (void *)s, r == CUDA_SUCCESS && s ? strnlen(s, 511) : 0 };
    return vgpu_exec_reply(x, r, &v, 1);
}

int vgpu_exec_cuGetErrorName(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return error_text(x, fn, req, len, "cuGetErrorName");
}

int vgpu_exec_cuGetErrorString(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return error_text(x, fn, req, len, "cuGetErrorString");
}

/* A handle the call returns: given to the guest, and replied. */
static int reply_handle(struct vgpu_exec *x, CUresult r, uint64_t h)
{
    if (r == CUDA_SUCCESS)
        vgpu_exec_handle_add(x, h);
    struct iovec v = { &h, r == CUDA_SUCCESS ? sizeof(h) : 0 };
    return vgpu_exec_reply(x, r, &v, 1);
}

int vgpu_exec_cuModuleLoadData(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    if (len < 8 || word(req, 0) != len - 8)
        return vgpu_exec_malformed("cuModuleLoadData", len);
    /* An image whose own headers say it is longer than what was sent would
     * have the driver read past it. */
    size_t extent = vgpu_remote_image_extent((const char *)req + 8, len - 8);
    if (!extent || extent > len - 8)
        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_IMAGE, NULL, 0);
    /* The image as the guest sent it, with a NUL after it: PTX is read as a
     * string, and must not run past what was sent. */
    char *image = malloc(len - 8 + 1);
    if (!image)
        return vgpu_exec_reply(x, CUDA_ERROR_OUT_OF_MEMORY, NULL, 0);
    memcpy(image, (const char *)req + 8, len - 8);
    image[len - 8] = 0;
    CUmodule m = NULL;
    int r = ((CUresult(*)(CUmodule *, const void *))fn)(&m, image);
    free(image);
    return reply_handle(x, r, (uint64_t)(uintptr_t)m);
}

int vgpu_exec_cuModuleGetFunction(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    if (len < 8 || len - 8 >= 4096)
        return vgpu_exec_malformed("cuModuleGetFunction", len);
    uint64_t mod = word(req, 0);
    if (!mod || !vgpu_exec_handle_known(x, mod, false))
        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_HANDLE, NULL, 0);
    char name[4096];
    memcpy(name, (const char *)req + 8, len - 8);
    name[len - 8] = 0;
    CUfunction f = NULL;
    int r = ((CUresult(*)(CUfunction *, CUmodule, const char *))fn)(&f, (CUmodule)(uintptr_t)mod, name);
    return reply_handle(x, r, (uint64_t)(uintptr_t)f);
}

int vgpu_exec_cuMemcpyHtoD_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    if (len < 16 || word(req, 1) != len - 16)
        return vgpu_exec_malformed("cuMemcpyHtoD_v2", len);
    if (len > 16 && !vgpu_exec_device_range(x, word(req, 0), len - 16, "cuMemcpyHtoD_v2"))
        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_VALUE, NULL, 0);
    int r = ((CUresult(*)(CUdeviceptr, const void *, size_t))fn)(word(req, 0), (const char *)req + 16, len - 16);
    return vgpu_exec_reply(x, r, NULL, 0);
}

int vgpu_exec_cuMemcpyDtoH_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    if (len != 16 || word(req, 1) > VGPU_REMOTE_CHUNK)
        return vgpu_exec_malformed("cuMemcpyDtoH_v2", len);
    size_t n = word(req, 1);
    if (n && !vgpu_exec_device_range(x, word(req, 0), n, "cuMemcpyDtoH_v2"))
        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_VALUE, NULL, 0);
    void *buf = malloc(n ? n : 1);
    if (!buf)
        return vgpu_exec_reply(x, CUDA_ERROR_OUT_OF_MEMORY, NULL, 0);
    int r = ((CUresult(*)(void *, CUdeviceptr, size_t))fn)(buf, word(req, 0), n);
    struct iovec v = { buf, r == CUDA_SUCCESS ? n : 0 };
    int sent = vgpu_exec_reply(x, r, &v, 1);
    free(buf);
    return sent;
}

int vgpu_exec_cuLaunchKernel(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    if (len < 80 || word(req, 9) > VGPU_EXEC_MAX_PARAMS || len < (10 + word(req, 9)) * 8)
        return vgpu_exec_malformed("cuLaunchKernel", len);
    unsigned n = (unsigned)word(req, 9);
    size_t at = (10 + n) * 8;
    void *params[VGPU_EXEC_MAX_PARAMS];
    for (unsigned i = 0; i < n; i++) {
        uint64_t size = word(req, 10 + i);
        size_t padded = (size + 7) & ~(size_t)7;
        if (size > 4096 || at + padded > len)
            return vgpu_exec_malformed("cuLaunchKernel", len);
        params[i] = (char *)req + at; /* 8-aligned: the request buffer is malloc's, each parameter padded to 8 */
        at += padded;
    }
    if (at != len)
        return vgpu_exec_malformed("cuLaunchKernel", len);
    uint64_t f = word(req, 0), stream = word(req, 8);
    if (!f || !vgpu_exec_handle_known(x, f, false) || !vgpu_exec_handle_known(x, stream, true))
        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_HANDLE, NULL, 0);
    /* The driver reads f's parameters at their own sizes: they must be what was sent. */
    uint64_t sizes[VGPU_EXEC_MAX_PARAMS];
    for (unsigned i = 0; i < n; i++)
        sizes[i] = word(req, 10 + i);
    if (!vgpu_exec_params_match(x, f, n, sizes))
        return vgpu_exec_reply(x, CUDA_ERROR_INVALID_VALUE, NULL, 0);
    int r = ((CUresult(*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                          void **, void **))fn)((CUfunction)(uintptr_t)f, (unsigned)word(req, 1),
                                                (unsigned)word(req, 2), (unsigned)word(req, 3), (unsigned)word(req, 4),
                                                (unsigned)word(req, 5), (unsigned)word(req, 6), (unsigned)word(req, 7),
                                                (CUstream)(uintptr_t)stream, params, NULL);
    return vgpu_exec_reply(x, r, NULL, 0);
}

/* cuGetProcAddress (v1 and v2): the name of the exported function the
 * driver's lookup found, which the guest maps to its own slot; none when
 * it found nothing (success, as the driver says it: a NULL function).  A
 * pointer that is not exactly an exported function's is not found. */
static int proc_address(struct vgpu_exec *x, void *fn, const void *req, size_t len, bool v2)
{
    if (len < 16 || len - 16 > 255)
        return vgpu_exec_malformed(v2 ? "cuGetProcAddress_v2" : "cuGetProcAddress", len);
    char symbol[256];
    memcpy(symbol, (const char *)req + 16, len - 16);
    symbol[len - 16] = 0;
    void *p = NULL;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    CUresult r =
        v2 ? ((CUresult(*)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *))fn)(
                 symbol, &p, (int)word(req, 0), word(req, 1), &status)
           : ((CUresult(*)(const char *, void **, int, cuuint64_t))fn)(symbol, &p, (int)word(req, 0), word(req, 1));
    Dl_info info;
    const char *name = "";
    if (r == CUDA_SUCCESS && p) {
        if (dladdr(p, &info) && info.dli_saddr == p && info.dli_sname)
            name = info.dli_sname;
        else
            status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    }
    uint64_t st = (uint64_t)status;
    struct iovec v[2] = { { &st, sizeof(st) }, { (void *)name, strnlen(name, 256) } };
    return vgpu_exec_reply(x, r, v, 2);
}

int vgpu_exec_cuGetProcAddress_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return proc_address(x, fn, req, len, true);
}

int vgpu_exec_cuGetProcAddress(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    return proc_address(x, fn, req, len, false);
}
