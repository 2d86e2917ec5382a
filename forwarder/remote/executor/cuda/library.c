/*
 * Modules and libraries, the executor's side (the guest's:
 * forwarder/remote/guest/cuda/library.c; what crosses: docs/design/remote.md).  An image
 * is checked against its own headers before the driver reads it; a name is
 * at most 4 KiB; every module, library, function, kernel and global the
 * driver returns becomes the guest's.
 */
#include "forwarder/remote/executor/cuda/calls.h"

#include "common/log.h"
#include "forwarder/remote/transport/image.h"
#include "forwarder/remote/transport/wire.h"
#include "forwarder/remote/executor/image_cache.h"

#include <stdlib.h>
#include <string.h>

#define MAX_NAME 4096

/* A handle the call returns: given to the guest, and replied. */
static int reply_handle(struct vgpu_exec *x, CUresult r, uint64_t h)
{
    if (r == CUDA_SUCCESS)
        vgpu_exec_handle_add(x, h);
    struct iovec v = { &h, r == CUDA_SUCCESS ? sizeof(h) : 0 };
    return vgpu_exec_reply(x, r, &v, 1);
}

/* The image of [length][image]: a copy with a NUL after it (PTX is read as
 * a string, and must not run past what was sent), *extent the bytes its
 * headers span; or, for a call named by hash ([32][hash]), the cache's
 * copy, *extent 0.  NULL, *r the code to reply (VGPU_REMOTE_MISS: the
 * cache has no such image), or VGPU_EXEC_CLOSE when the request is
 * malformed. */
static char *image_of(struct vgpu_exec *x, const void *req, size_t len, const char *call, int *r, size_t *extent)
{
    *extent = 0;
    if (len < 8 || vgpu_exec_word(req, 0) != len - 8 || (x->by_hash && len != 8 + VGPU_SHA256_BYTES)) {
        *r = vgpu_exec_malformed(call, len);
        return NULL;
    }
    if (x->by_hash) {
        size_t n = 0;
        char *image = vgpu_exec_cache_get((const uint8_t *)req + 8, &n);
        /* What the cache holds was checked when it was stored; its extent
         * is checked again against a file that might have been cut. */
        if (image && vgpu_remote_image_extent(image, n) == n) {
            vgpu_debug("executor: %s of an image of %zu bytes from the cache", call, n);
            return image;
        }
        free(image);
        *r = (int)VGPU_REMOTE_MISS;
        return NULL;
    }
    /* An image whose own headers say it is longer than what was sent would
     * have the driver read past it. */
    size_t n = vgpu_remote_image_extent((const char *)req + 8, len - 8);
    char *image = n && n <= len - 8 ? malloc(len - 8 + 1) : NULL;
    if (!image) {
        *r = n && n <= len - 8 ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_IMAGE;
        return NULL;
    }
    *extent = n;
    memcpy(image, (const char *)req + 8, len - 8);
    image[len - 8] = 0;
    vgpu_debug("executor: %s of an image of %zu bytes", call, len - 8);
    return image;
}

/* After the driver loaded an image sent whole ([length][image] at req,
 * extent bytes of it the image's), the image is cached; one it refused is
 * not (image_cache.h). */
static void cache_loaded(const void *req, size_t extent, int r)
{
    if (r == CUDA_SUCCESS && extent >= VGPU_REMOTE_IMAGE_CACHE_MIN)
        vgpu_exec_cache_put((const char *)req + 8, extent);
}

int vgpu_exec_cuModuleLoadData(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    int r;
    size_t extent;
    char *image = image_of(x, req, len, "cuModuleLoadData", &r, &extent);
    if (!image)
        return r == VGPU_EXEC_CLOSE ? r : vgpu_exec_reply(x, r, NULL, 0);
    CUmodule m = NULL;
    r = ((CUresult(*)(CUmodule *, const void *))fn)(&m, image);
    free(image);
    cache_loaded(req, extent, r);
    return reply_handle(x, r, (uint64_t)(uintptr_t)m);
}

/* [count][option, value]... then [length][image] (forwarder/remote/guest/cuda/
 * library.c says what crosses): the module, the options' values as the JIT
 * left them (the log buffers' own words zero: they are the executor's),
 * the info and error logs at their sizes, zeroed past what the JIT wrote.
 * Options that pass arrays of pointers are refused. */
int vgpu_exec_cuModuleLoadDataEx(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    if (len < 8 || vgpu_exec_word(req, 0) > VGPU_REMOTE_JIT_OPTIONS || len < (1 + 2 * vgpu_exec_word(req, 0)) * 8)
        return vgpu_exec_malformed("cuModuleLoadDataEx", len);
    unsigned n = (unsigned)vgpu_exec_word(req, 0);
    CUjit_option options[VGPU_REMOTE_JIT_OPTIONS];
    void *values[VGPU_REMOTE_JIT_OPTIONS];
    size_t info = 0, error = 0;
    for (unsigned i = 0; i < n; i++) {
        uint64_t o = vgpu_exec_word(req, 1 + 2 * i), v = vgpu_exec_word(req, 2 + 2 * i);
        if (o >= CU_JIT_NUM_OPTIONS || o == CU_JIT_GLOBAL_SYMBOL_NAMES || o == CU_JIT_GLOBAL_SYMBOL_ADDRESSES ||
            o == CU_JIT_REFERENCED_KERNEL_NAMES || o == CU_JIT_REFERENCED_VARIABLE_NAMES)
            return vgpu_exec_reply(x, CUDA_ERROR_NOT_SUPPORTED, NULL, 0);
        if (o == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
            info = v < VGPU_REMOTE_JIT_LOG ? v : VGPU_REMOTE_JIT_LOG;
        if (o == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            error = v < VGPU_REMOTE_JIT_LOG ? v : VGPU_REMOTE_JIT_LOG;
        options[i] = (CUjit_option)o;
        values[i] = (void *)(uintptr_t)(o == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES    ? info
                                        : o == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES ? error
                                                                                  : v);
    }
    size_t head = (1 + 2 * (size_t)n) * 8;
    int r;
    size_t extent;
    char *image = image_of(x, (const char *)req + head, len - head, "cuModuleLoadDataEx", &r, &extent);
    if (!image)
        return r == VGPU_EXEC_CLOSE ? r : vgpu_exec_reply(x, r, NULL, 0);
    char *logs = calloc(1, info + error + 1);
    if (!logs) {
        free(image);
        return vgpu_exec_reply(x, CUDA_ERROR_OUT_OF_MEMORY, NULL, 0);
    }
    for (unsigned i = 0; i < n; i++)
        if (options[i] == CU_JIT_INFO_LOG_BUFFER || options[i] == CU_JIT_ERROR_LOG_BUFFER)
            values[i] = options[i] == CU_JIT_INFO_LOG_BUFFER ? (info ? logs : NULL) : (error ? logs + info : NULL);
    CUmodule m = NULL;
    r = ((CUresult(*)(CUmodule *, const void *, unsigned, CUjit_option *, void **))fn)(&m, image, n, options, values);
    free(image);
    cache_loaded((const char *)req + head, extent, r);
    if (r == CUDA_SUCCESS)
        vgpu_exec_handle_add(x, (uint64_t)(uintptr_t)m);
    uint64_t h = (uint64_t)(uintptr_t)m, out[VGPU_REMOTE_JIT_OPTIONS];
    for (unsigned i = 0; i < n; i++) {
        bool buffer = options[i] == CU_JIT_INFO_LOG_BUFFER || options[i] == CU_JIT_ERROR_LOG_BUFFER;
        out[i] = 0;
        if (!buffer)
            memcpy(&out[i], &values[i], sizeof(out[i]));
    }
    if (info)
        logs[info - 1] = 0; /* the JIT's text ends within its buffer */
    if (error)
        logs[info + error - 1] = 0;
    struct iovec v[3] = { { &h, sizeof(h) }, { out, n * sizeof(uint64_t) }, { logs, info + error } };
    int sent = vgpu_exec_reply(x, r, v, 3);
    free(logs);
    return sent;
}

/* No options cross: the guest refuses those it cannot drop (docs/design/remote.md).
 * The image is the executor's copy, freed after the call, so never
 * "preserved". */
int vgpu_exec_cuLibraryLoadData(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    int r;
    size_t extent;
    char *image = image_of(x, req, len, "cuLibraryLoadData", &r, &extent);
    if (!image)
        return r == VGPU_EXEC_CLOSE ? r : vgpu_exec_reply(x, r, NULL, 0);
    CUlibrary l = NULL;
    r = ((CUresult(*)(CUlibrary *, const void *, CUjit_option *, void **, unsigned, CUlibraryOption *, void **,
                      unsigned))fn)(&l, image, NULL, NULL, 0, NULL, NULL, 0);
    free(image);
    cache_loaded(req, extent, r);
    return reply_handle(x, r, (uint64_t)(uintptr_t)l);
}

/* [handle][name]: the name, NUL-ended, in name; false when malformed or
 * the handle is not the guest's (*r: what to return). */
static bool named(struct vgpu_exec *x, const void *req, size_t len, const char *call, char *name, int *r)
{
    if (len < 8 || len - 8 >= MAX_NAME) {
        *r = vgpu_exec_malformed(call, len);
        return false;
    }
    uint64_t h = vgpu_exec_word(req, 0);
    if (!h || !vgpu_exec_handle_known(x, h, false)) {
        *r = vgpu_exec_reply(x, CUDA_ERROR_INVALID_HANDLE, NULL, 0);
        return false;
    }
    memcpy(name, (const char *)req + 8, len - 8);
    name[len - 8] = 0;
    return true;
}

int vgpu_exec_cuModuleGetFunction(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    char name[MAX_NAME];
    int r;
    if (!named(x, req, len, "cuModuleGetFunction", name, &r))
        return r;
    CUfunction f = NULL;
    r = ((CUresult(*)(CUfunction *, CUmodule, const char *))fn)(&f, (CUmodule)(uintptr_t)vgpu_exec_word(req, 0), name);
    return reply_handle(x, r, (uint64_t)(uintptr_t)f);
}

int vgpu_exec_cuLibraryGetKernel(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    char name[MAX_NAME];
    int r;
    if (!named(x, req, len, "cuLibraryGetKernel", name, &r))
        return r;
    CUkernel k = NULL;
    r = ((CUresult(*)(CUkernel *, CUlibrary, const char *))fn)(&k, (CUlibrary)(uintptr_t)vgpu_exec_word(req, 0), name);
    if (r == CUDA_SUCCESS)
        vgpu_exec_kernel_add(x, (uint64_t)(uintptr_t)k, vgpu_exec_word(req, 0));
    return reply_handle(x, r, (uint64_t)(uintptr_t)k);
}

/* A global's address and size.  Its memory is the module's, which the
 * driver's address ranges cover, so the guest's copies reach it. */
static int reply_global(struct vgpu_exec *x, CUresult r, CUdeviceptr p, size_t n)
{
    uint64_t w[2] = { p, n };
    struct iovec v = { w, r == CUDA_SUCCESS ? sizeof(w) : 0 };
    return vgpu_exec_reply(x, r, &v, 1);
}

int vgpu_exec_cuModuleGetGlobal_v2(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    char name[MAX_NAME];
    int r;
    if (!named(x, req, len, "cuModuleGetGlobal_v2", name, &r))
        return r;
    CUdeviceptr p = 0;
    size_t n = 0;
    r = ((CUresult(*)(CUdeviceptr *, size_t *, CUmodule, const char *))fn)(
        &p, &n, (CUmodule)(uintptr_t)vgpu_exec_word(req, 0), name);
    return reply_global(x, r, p, n);
}

int vgpu_exec_cuLibraryGetGlobal(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    char name[MAX_NAME];
    int r;
    if (!named(x, req, len, "cuLibraryGetGlobal", name, &r))
        return r;
    CUdeviceptr p = 0;
    size_t n = 0;
    r = ((CUresult(*)(CUdeviceptr *, size_t *, CUlibrary, const char *))fn)(
        &p, &n, (CUlibrary)(uintptr_t)vgpu_exec_word(req, 0), name);
    return reply_global(x, r, p, n);
}
