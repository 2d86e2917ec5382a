/*
 * Modules and libraries, the executor's side (the guest's:
 * forwarder/remote/cuda/library.c; what crosses: docs/remote.md).  An image
 * is checked against its own headers before the driver reads it; a name is
 * at most 4 KiB; every module, library, function, kernel and global the
 * driver returns becomes the guest's.
 */
#include "tools/executor/exec_manual.h"

#include "forwarder/remote/image.h"

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
 * a string, and must not run past what was sent); or NULL, *r the code to
 * reply, or VGPU_EXEC_CLOSE when the request is malformed. */
static char *image_of(const void *req, size_t len, const char *call, int *r)
{
    if (len < 8 || vgpu_exec_word(req, 0) != len - 8) {
        *r = vgpu_exec_malformed(call, len);
        return NULL;
    }
    /* An image whose own headers say it is longer than what was sent would
     * have the driver read past it. */
    size_t extent = vgpu_remote_image_extent((const char *)req + 8, len - 8);
    char *image = extent && extent <= len - 8 ? malloc(len - 8 + 1) : NULL;
    if (!image) {
        *r = extent && extent <= len - 8 ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_IMAGE;
        return NULL;
    }
    memcpy(image, (const char *)req + 8, len - 8);
    image[len - 8] = 0;
    return image;
}

int vgpu_exec_cuModuleLoadData(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    int r;
    char *image = image_of(req, len, "cuModuleLoadData", &r);
    if (!image)
        return r == VGPU_EXEC_CLOSE ? r : vgpu_exec_reply(x, r, NULL, 0);
    CUmodule m = NULL;
    r = ((CUresult(*)(CUmodule *, const void *))fn)(&m, image);
    free(image);
    return reply_handle(x, r, (uint64_t)(uintptr_t)m);
}

/* No options cross: the guest refuses those it cannot drop (docs/remote.md).
 * The image is the executor's copy, freed after the call, so never
 * "preserved". */
int vgpu_exec_cuLibraryLoadData(struct vgpu_exec *x, void *fn, const void *req, size_t len)
{
    int r;
    char *image = image_of(req, len, "cuLibraryLoadData", &r);
    if (!image)
        return r == VGPU_EXEC_CLOSE ? r : vgpu_exec_reply(x, r, NULL, 0);
    CUlibrary l = NULL;
    r = ((CUresult(*)(CUlibrary *, const void *, CUjit_option *, void **, unsigned, CUlibraryOption *, void **,
                      unsigned))fn)(&l, image, NULL, NULL, 0, NULL, NULL, 0);
    free(image);
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
