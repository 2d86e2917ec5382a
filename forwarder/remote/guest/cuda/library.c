/*
 * Modules and libraries, the guest's side (forwarder/remote/executor/cuda/library.c is
 * the other; what crosses: docs/design/remote.md).  Images travel whole, their
 * extent read from their own headers, or by their SHA-256 where the
 * executor has a cache of them; names travel as strings.  Options
 * that only tune a library's loading are dropped; those that would give the
 * host guest pointers (a table of host functions) are refused; a module's
 * JIT options cross, its log buffers emulated.
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/manual.h"
#include "forwarder/remote/transport/image.h"
#include "forwarder/remote/transport/sha256.h"
#include "forwarder/remote/transport/wire.h"

#include "vgpu_cuda_slots.h"
#include "vgpu_remote_cuda.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SLOT(name) VGPU_CUDA_SLOT_##name
#define MAX_NAME 4096

/* The head's iovecs then [length][image] (n bytes) to slot, the reply
 * read into reply: named by its SHA-256 where the executor keeps a cache
 * of images and the image is large enough to be worth it, whole where the
 * executor has not got it (docs/design/remote.md, "Images cross once"). */
static CUresult send_image(unsigned slot, const struct iovec *head, int nhead, const void *image, size_t n,
                           const struct iovec *reply, int nreply, size_t *got)
{
    struct iovec q[8];
    for (int i = 0; i < nhead; i++)
        q[i] = head[i];
    uint64_t w = n;
    CUresult r = (CUresult)VGPU_REMOTE_MISS;
    if (n >= VGPU_REMOTE_IMAGE_CACHE_MIN && vgpu_remote_image_cache()) {
        uint8_t hash[VGPU_SHA256_BYTES];
        uint64_t hw = sizeof(hash);
        vgpu_sha256(image, n, hash);
        q[nhead] = (struct iovec){ &hw, sizeof(hw) };
        q[nhead + 1] = (struct iovec){ hash, sizeof(hash) };
        r = vgpu_remote_call_flagged(slot, VGPU_REMOTE_BY_HASH, q, nhead + 2, reply, nreply, got);
    }
    if (r != (CUresult)VGPU_REMOTE_MISS)
        return r;
    q[nhead] = (struct iovec){ &w, sizeof(w) };
    q[nhead + 1] = (struct iovec){ (void *)image, n };
    return vgpu_remote_call(slot, q, nhead + 2, reply, nreply, got);
}

/* [length][image] to slot; the handle it returns. */
static CUresult load(unsigned slot, const void *code, uint64_t *handle)
{
    if (!code)
        return CUDA_ERROR_INVALID_VALUE;
    const void *image = vgpu_remote_image_unwrap(code);
    if (!image)
        return vgpu_remote_refuse(slot);
    size_t n = vgpu_remote_image_extent(image, VGPU_REMOTE_MAX_LEN - 64);
    if (!n)
        return CUDA_ERROR_INVALID_IMAGE;
    struct iovec a = { handle, sizeof(*handle) };
    size_t got = 0;
    CUresult r = send_image(slot, NULL, 0, image, n, &a, 1, &got);
    return r == CUDA_SUCCESS && got != sizeof(*handle) ? CUDA_ERROR_UNKNOWN : r;
}

/* [handle][name] to slot; what it returns, n words. */
static CUresult by_name(unsigned slot, uint64_t handle, const char *name, uint64_t *out, unsigned n)
{
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    size_t len = strnlen(name, MAX_NAME);
    if (len == MAX_NAME)
        return CUDA_ERROR_INVALID_VALUE;
    struct iovec q[2] = { { &handle, sizeof(handle) }, { (void *)name, len } }, a = { out, n * sizeof(*out) };
    size_t got = 0;
    CUresult r = vgpu_remote_call(slot, q, 2, &a, 1, &got);
    return r == CUDA_SUCCESS && got != n * sizeof(*out) ? CUDA_ERROR_UNKNOWN : r;
}

CUresult vgpu_remote_guest_cuModuleLoadData(CUmodule *module, const void *image)
{
    if (!module)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t h = 0;
    CUresult r = load(SLOT(cuModuleLoadData), image, &h);
    if (r == CUDA_SUCCESS)
        *module = (CUmodule)(uintptr_t)h;
    return r;
}

/* cuModuleLoadDataEx: the JIT's options cross as [count][option, value]...
 * before the image: plain values as they are, the two log buffers as their
 * sizes (the executor's own buffers receive the logs, which come back).
 * Back: the module, each option's value as the JIT left it (the threads it
 * targeted, the wall time, the logs' lengths; the buffers' own words
 * zero), then the info log and the error log at their sizes.  Options that
 * pass arrays of the guest's pointers (symbols, kernels' names) are
 * refused. */

static bool jit_option_carried(CUjit_option o)
{
    return o < CU_JIT_NUM_OPTIONS && o != CU_JIT_GLOBAL_SYMBOL_NAMES && o != CU_JIT_GLOBAL_SYMBOL_ADDRESSES &&
           o != CU_JIT_REFERENCED_KERNEL_NAMES && o != CU_JIT_REFERENCED_VARIABLE_NAMES;
}

/* The size option of log buffer option o's, and the size it names. */
static size_t jit_log_size(unsigned n, const CUjit_option *options, void *const *values, CUjit_option o)
{
    CUjit_option size_option =
        o == CU_JIT_INFO_LOG_BUFFER ? CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES : CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES;
    for (unsigned i = 0; i < n; i++)
        if (options[i] == size_option) {
            size_t v = (size_t)(uintptr_t)values[i];
            return v < VGPU_REMOTE_JIT_LOG ? v : VGPU_REMOTE_JIT_LOG;
        }
    return 0;
}

CUresult vgpu_remote_guest_cuModuleLoadDataEx(CUmodule *module, const void *code, unsigned int n, CUjit_option *options,
                                              void **values)
{
    if (!module || !code || (n && (!options || !values)))
        return CUDA_ERROR_INVALID_VALUE;
    if (n > VGPU_REMOTE_JIT_OPTIONS)
        return vgpu_remote_refuse(SLOT(cuModuleLoadDataEx));
    uint64_t words[1 + 2 * VGPU_REMOTE_JIT_OPTIONS] = { n };
    for (unsigned i = 0; i < n; i++) {
        if (!jit_option_carried(options[i]))
            return vgpu_remote_refuse(SLOT(cuModuleLoadDataEx));
        words[1 + 2 * i] = options[i];
        words[2 + 2 * i] = (uint64_t)(uintptr_t)values[i];
        if (options[i] == CU_JIT_INFO_LOG_BUFFER || options[i] == CU_JIT_ERROR_LOG_BUFFER)
            words[2 + 2 * i] = 0; /* the guest's buffer: never the executor's business */
    }
    const void *image = vgpu_remote_image_unwrap(code);
    if (!image)
        return vgpu_remote_refuse(SLOT(cuModuleLoadDataEx));
    size_t extent = vgpu_remote_image_extent(image, VGPU_REMOTE_MAX_LEN - 64 - sizeof(words));
    if (!extent)
        return CUDA_ERROR_INVALID_IMAGE;
    size_t info = jit_log_size(n, options, values, CU_JIT_INFO_LOG_BUFFER);
    size_t error = jit_log_size(n, options, values, CU_JIT_ERROR_LOG_BUFFER);
    char *logs = calloc(1, info + error + 1);
    if (!logs)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t h = 0, out[VGPU_REMOTE_JIT_OPTIONS];
    struct iovec q = { words, (1 + 2 * (size_t)n) * sizeof(uint64_t) };
    struct iovec a[3] = { { &h, sizeof(h) }, { out, n * sizeof(uint64_t) }, { logs, info + error } };
    size_t got = 0;
    CUresult r = send_image(SLOT(cuModuleLoadDataEx), &q, 1, image, extent, a, 3, &got);
    /* The JIT's outputs and logs come back whether it succeeded or not: a
     * failed compilation's error log is the point of asking for one. */
    if (got == sizeof(h) + n * sizeof(uint64_t) + info + error) {
        for (unsigned i = 0; i < n; i++) {
            if (options[i] == CU_JIT_INFO_LOG_BUFFER || options[i] == CU_JIT_ERROR_LOG_BUFFER) {
                size_t size = options[i] == CU_JIT_INFO_LOG_BUFFER ? info : error;
                if (values[i] && size)
                    memcpy(values[i], logs + (options[i] == CU_JIT_INFO_LOG_BUFFER ? 0 : info), size);
            } else if (options[i] == CU_JIT_THREADS_PER_BLOCK || options[i] == CU_JIT_WALL_TIME ||
                       options[i] == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES ||
                       options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) {
                memcpy(&values[i], &out[i], sizeof(values[i]));
            }
        }
    } else if (r == CUDA_SUCCESS) {
        r = CUDA_ERROR_UNKNOWN;
    }
    free(logs);
    if (r == CUDA_SUCCESS)
        *module = (CUmodule)(uintptr_t)h;
    return r;
}

/* Whether a library option only tunes the loading (dropped), refusing it
 * otherwise. */
static bool options_droppable(unsigned njit, const CUlibraryOption *opt, unsigned nlib)
{
    if (njit) /* JIT options: log buffers and outputs among them; none carried */
        return false;
    for (unsigned i = 0; i < nlib; i++)
        if (!opt || opt[i] != CU_LIBRARY_BINARY_IS_PRESERVED) /* the executor keeps no image anyway */
            return false;
    return true;
}

CUresult vgpu_remote_guest_cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                             void **jitOptionsValues, unsigned int numJitOptions,
                                             CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                             unsigned int numLibraryOptions)
{
    (void)jitOptions, (void)jitOptionsValues, (void)libraryOptionValues;
    if (!library)
        return CUDA_ERROR_INVALID_VALUE;
    if (!options_droppable(numJitOptions, libraryOptions, numLibraryOptions))
        return vgpu_remote_refuse(SLOT(cuLibraryLoadData));
    uint64_t h = 0;
    CUresult r = load(SLOT(cuLibraryLoadData), code, &h);
    if (r == CUDA_SUCCESS)
        *library = (CUlibrary)(uintptr_t)h;
    return r;
}

CUresult vgpu_remote_guest_cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    if (!hfunc)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t h = 0;
    CUresult r = by_name(SLOT(cuModuleGetFunction), (uint64_t)(uintptr_t)hmod, name, &h, 1);
    if (r == CUDA_SUCCESS)
        *hfunc = (CUfunction)(uintptr_t)h;
    return r;
}

/* The kernels of libraries this process was given, which launches take as
 * functions but whose parameters cuKernelGetParamInfo says, each with its
 * library: they go when it is unloaded (their addresses may come back as
 * functions').  Owned by this file, under kernels_lock. */
struct kernel {
    struct kernel *next;
    CUkernel k;
    CUlibrary library;
};
static struct kernel *kernels;
static pthread_mutex_t kernels_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t kernels_once = PTHREAD_ONCE_INIT;

static void kernels_after_fork(void)
{
    pthread_mutex_init(&kernels_lock, NULL);
    kernels = NULL; /* the parent's executor's: the child's has other handles (left, not freed) */
}

static void kernels_register_atfork(void)
{
    pthread_atfork(NULL, NULL, kernels_after_fork);
}

bool vgpu_remote_is_kernel(const void *f)
{
    pthread_once(&kernels_once, kernels_register_atfork);
    pthread_mutex_lock(&kernels_lock);
    const struct kernel *k = kernels;
    while (k && (const void *)k->k != f)
        k = k->next;
    pthread_mutex_unlock(&kernels_lock);
    return k != NULL;
}

CUresult vgpu_remote_guest_cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    if (!pKernel)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t h = 0;
    CUresult r = by_name(SLOT(cuLibraryGetKernel), (uint64_t)(uintptr_t)library, name, &h, 1);
    if (r != CUDA_SUCCESS)
        return r;
    CUkernel k = (CUkernel)(uintptr_t)h;
    if (!vgpu_remote_is_kernel(k)) {
        struct kernel *e = malloc(sizeof(*e));
        if (!e)
            return CUDA_ERROR_OUT_OF_MEMORY;
        e->k = k;
        e->library = library;
        pthread_mutex_lock(&kernels_lock);
        e->next = kernels;
        kernels = e;
        pthread_mutex_unlock(&kernels_lock);
    }
    *pKernel = k;
    return CUDA_SUCCESS;
}

static CUresult global(unsigned slot, CUdeviceptr *dptr, size_t *bytes, uint64_t handle, const char *name)
{
    uint64_t w[2];
    CUresult r = by_name(slot, handle, name, w, 2);
    if (r == CUDA_SUCCESS) {
        if (dptr)
            *dptr = w[0];
        if (bytes)
            *bytes = w[1];
    }
    return r;
}

CUresult vgpu_remote_guest_cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name)
{
    return global(SLOT(cuModuleGetGlobal_v2), dptr, bytes, (uint64_t)(uintptr_t)hmod, name);
}

CUresult vgpu_remote_guest_cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name)
{
    return global(SLOT(cuLibraryGetGlobal), dptr, bytes, (uint64_t)(uintptr_t)library, name);
}

/* A library's unloading ends its kernels. */
CUresult vgpu_remote_wrapped_cuLibraryUnload(CUlibrary library)
{
    CUresult r = vgpu_remote_carried_cuLibraryUnload(library);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_once(&kernels_once, kernels_register_atfork);
    pthread_mutex_lock(&kernels_lock);
    for (struct kernel **at = &kernels; *at;) {
        struct kernel *e = *at;
        if (e->library == library) {
            *at = e->next;
            free(e);
        } else {
            at = &e->next;
        }
    }
    pthread_mutex_unlock(&kernels_lock);
    return r;
}
