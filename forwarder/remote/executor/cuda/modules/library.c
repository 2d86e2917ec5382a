/*
 * Modules and libraries, the executor's side (the guest's:
 * forwarder/remote/guest/cuda/modules/library.c; the messages: forwarder/remote/spec/
 * cuda.remote).  An image is checked against its own headers before the
 * driver reads it; every module, library and kernel the driver returns
 * becomes the guest's.  A module's functions and globals by name are
 * generated whole from the spec.
 */
#include "forwarder/remote/executor/cuda/calls.h"

#include "common/log.h"
#include "forwarder/remote/transport/image.h"
#include "forwarder/remote/executor/image_cache.h"
#include "forwarder/remote/spec/bounds.h"
#include "forwarder/remote/transport/wire.h"

#include <stdlib.h>
#include <string.h>

/* The image of a load: a copy with a NUL after it (PTX is read as a
 * string, and must not run past what was sent), *extent the bytes its
 * headers span; or, for a call named by hash (32 bytes, its SHA-256), the
 * cache's copy, *extent 0.  NULL, *r the code to reply (VGPU_REMOTE_MISS:
 * the cache has no such image), or VGPU_EXEC_CLOSE when the request is
 * malformed. */
static char *image_of(struct vgpu_exec *x, const void *bytes, size_t n, const char *call, int *r, size_t *extent)
{
    *extent = 0;
    if (x->by_hash) {
        if (n != VGPU_SHA256_BYTES) {
            *r = vgpu_exec_malformed(call, n);
            return NULL;
        }
        size_t size = 0;
        char *image = vgpu_exec_cache_get(bytes, &size);
        /* What the cache holds was checked when it was stored; its extent
         * is checked again against a file that might have been cut. */
        if (image && vgpu_remote_image_extent(image, size) == size) {
            vgpu_debug("executor: %s of an image of %zu bytes from the cache", call, size);
            return image;
        }
        free(image);
        *r = (int)VGPU_REMOTE_MISS;
        return NULL;
    }
    /* An image whose own headers say it is longer than what was sent would
     * have the driver read past it. */
    size_t spans = vgpu_remote_image_extent(bytes, n);
    char *image = spans && spans <= n ? malloc(n + 1) : NULL;
    if (!image) {
        *r = spans && spans <= n ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_IMAGE;
        return NULL;
    }
    *extent = spans;
    memcpy(image, bytes, n);
    image[n] = 0;
    vgpu_debug("executor: %s of an image of %zu bytes", call, n);
    return image;
}

/* After the driver loaded an image sent whole (extent bytes of it the
 * image's), the image is cached; one it refused is not (image_cache.h). */
static void cache_loaded(const void *bytes, size_t extent, int r)
{
    if (r == CUDA_SUCCESS && extent >= VGPU_REMOTE_IMAGE_CACHE_MIN)
        vgpu_exec_cache_put(bytes, extent);
}

int vgpu_exec_cuModuleLoadData(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuModuleLoadData *in)
{
    int r;
    size_t extent;
    char *image = image_of(x, in->image, in->image_size, "cuModuleLoadData", &r, &extent);
    if (!image)
        return r == VGPU_EXEC_CLOSE ? r : vgpu_exec_reply(x, r, NULL, 0);
    struct vgpu_out_cuModuleLoadData out = { 0 };
    r = ((CUresult(*)(CUmodule *, const void *))fn)(&out.module, image);
    free(image);
    cache_loaded(in->image, extent, r);
    return vgpu_exec_reply_cuModuleLoadData(x, r, in, &out);
}

/* The JIT's options (jit.c): back, the module, the options' values as the
 * JIT left them, the info and error logs at their sizes. */
int vgpu_exec_cuModuleLoadDataEx(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuModuleLoadDataEx *in)
{
    struct vgpu_exec_jit j;
    int r = vgpu_exec_jit_options(&j, in->numOptions, in->options, in->values);
    if (r != CUDA_SUCCESS) {
        vgpu_exec_jit_free(&j);
        return vgpu_exec_reply(x, r, NULL, 0);
    }
    size_t extent;
    char *image = image_of(x, in->image, in->image_size, "cuModuleLoadDataEx", &r, &extent);
    if (!image) {
        vgpu_exec_jit_free(&j);
        return r == VGPU_EXEC_CLOSE ? r : vgpu_exec_reply(x, r, NULL, 0);
    }
    CUmodule m = NULL;
    r = ((CUresult(*)(CUmodule *, const void *, unsigned, CUjit_option *, void **))fn)(&m, image, j.n, j.options,
                                                                                       j.values);
    free(image);
    cache_loaded(in->image, extent, r);
    uint64_t left[VGPU_REMOTE_JIT_OPTIONS];
    vgpu_exec_jit_left(&j, left);
    struct vgpu_out_cuModuleLoadDataEx out = { .module = m, .values = left, .logs = j.logs,
                                               .logs_size = j.info + j.error };
    int sent = vgpu_exec_reply_cuModuleLoadDataEx(x, r, in, &out);
    vgpu_exec_jit_free(&j);
    return sent;
}

/* No options cross: the guest refuses those it cannot drop (docs/design/remote.md).
 * The image is the executor's copy, freed after the call, so never
 * "preserved". */
int vgpu_exec_cuLibraryLoadData(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuModuleLoadData *in)
{
    int r;
    size_t extent;
    char *image = image_of(x, in->image, in->image_size, "cuLibraryLoadData", &r, &extent);
    if (!image)
        return r == VGPU_EXEC_CLOSE ? r : vgpu_exec_reply(x, r, NULL, 0);
    CUlibrary l = NULL;
    r = ((CUresult(*)(CUlibrary *, const void *, CUjit_option *, void **, unsigned, CUlibraryOption *, void **,
                      unsigned))fn)(&l, image, NULL, NULL, 0, NULL, NULL, 0);
    free(image);
    cache_loaded(in->image, extent, r);
    struct vgpu_out_cuModuleLoadData out = { .module = (CUmodule)l };
    return vgpu_exec_reply_cuModuleLoadData(x, r, in, &out);
}

/* A library's kernel: the guest's handle, which ends with its library. */
int vgpu_exec_cuLibraryGetKernel(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuLibraryGetKernel *in)
{
    struct vgpu_out_cuLibraryGetKernel out = { 0 };
    int r = ((CUresult(*)(CUkernel *, CUlibrary, const char *))fn)(&out.pKernel, in->library, in->name);
    if (r == CUDA_SUCCESS)
        vgpu_exec_kernel_add(x, (uint64_t)(uintptr_t)out.pKernel, (uint64_t)(uintptr_t)in->library);
    return vgpu_exec_reply_cuLibraryGetKernel(x, r, in, &out);
}

/* Every kernel of the library, each the guest's as cuLibraryGetKernel's. */
int vgpu_exec_cuLibraryEnumerateKernels(struct vgpu_exec *x, void *fn,
                                        const struct vgpu_in_cuLibraryEnumerateKernels *in)
{
    CUkernel *kernels = calloc(in->numKernels ? in->numKernels : 1, sizeof(*kernels));
    if (!kernels)
        return vgpu_exec_reply(x, CUDA_ERROR_OUT_OF_MEMORY, NULL, 0);
    int r = ((CUresult(*)(CUkernel *, unsigned, CUlibrary))fn)(kernels, in->numKernels, in->lib);
    for (unsigned i = 0; r == CUDA_SUCCESS && i < in->numKernels; i++)
        if (kernels[i])
            vgpu_exec_kernel_add(x, (uint64_t)(uintptr_t)kernels[i], (uint64_t)(uintptr_t)in->lib);
    struct vgpu_out_cuLibraryEnumerateKernels out = { .kernels = kernels };
    int sent = vgpu_exec_reply_cuLibraryEnumerateKernels(x, r, in, &out);
    free(kernels);
    return sent;
}
