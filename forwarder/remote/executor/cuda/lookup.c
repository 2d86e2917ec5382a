/*
 * Error strings and the driver's lookup, the executor's side (the guest's:
 * forwarder/remote/guest/cuda/lookup.c; what crosses: docs/design/remote.md).  Each
 * checks its request's length and handles before the driver sees them, and
 * replies itself; a request that does not parse closes the connection.
 */
#define _GNU_SOURCE
#include "forwarder/remote/executor/cuda/calls.h"

#include "common/log.h"
#include "forwarder/remote/transport/wire.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static int error_text(struct vgpu_exec *x, void *fn, const void *req, size_t len, const char *call)
{
    if (len != 8)
        return vgpu_exec_malformed(call, len);
    const char *s = NULL;
    int r = ((CUresult(*)(CUresult, const char **))fn)((CUresult)vgpu_exec_word(req, 0), &s);
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
                 symbol, &p, (int)vgpu_exec_word(req, 0), vgpu_exec_word(req, 1), &status)
           : ((CUresult(*)(const char *, void **, int, cuuint64_t))fn)(symbol, &p, (int)vgpu_exec_word(req, 0), vgpu_exec_word(req, 1));
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
