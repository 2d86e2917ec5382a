/*
 * The remote driver's hand-written calls, the guest's side: those whose
 * arguments the signature does not describe (strings, buffers, host
 * memory, a kernel's parameters).  Each names what crosses in docs/remote.md;
 * tools/executor/exec_manual.c is the other side.
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/client.h"
#include "forwarder/remote/guest_manual.h"
#include "forwarder/remote/image.h"
#include "forwarder/remote/wire.h"

#include "vgpu_cuda_slots.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SLOT(name) VGPU_CUDA_SLOT_##name

/* The driver's strings, as the executor gave them: kept for the life of
 * the process, as the driver's own are.  Owned by this file, under
 * strings_lock. */
struct cached_string {
    struct cached_string *next;
    unsigned slot;
    CUresult code;
    char text[];
};
static struct cached_string *strings;
static pthread_mutex_t strings_lock = PTHREAD_MUTEX_INITIALIZER;

/* A child of fork may find either lock held by a thread it does not have;
 * and its executor is another process, whose functions are not the
 * parent's: it starts with no layouts.  Registered at the first call that
 * takes them. */
static pthread_mutex_t params_lock = PTHREAD_MUTEX_INITIALIZER;
static struct layout *layouts;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void child_after_fork(void)
{
    pthread_mutex_init(&strings_lock, NULL);
    pthread_mutex_init(&params_lock, NULL);
    layouts = NULL; /* the parent's: left, not freed */
}

static void register_atfork(void)
{
    pthread_atfork(NULL, NULL, child_after_fork);
}

static CUresult error_text(unsigned slot, CUresult code, const char **out)
{
    pthread_once(&atfork_once, register_atfork);
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&strings_lock);
    for (struct cached_string *s = strings; s; s = s->next)
        if (s->slot == slot && s->code == code) {
            *out = s->text;
            pthread_mutex_unlock(&strings_lock);
            return CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&strings_lock);
    uint64_t w = (uint64_t)code;
    char text[512];
    size_t got = 0;
    struct iovec q = { &w, sizeof(w) }, a = { text, sizeof(text) - 1 };
    CUresult r = vgpu_remote_call(slot, &q, 1, &a, 1, &got);
    if (r != CUDA_SUCCESS) {
        *out = NULL;
        return r;
    }
    text[got] = 0;
    struct cached_string *s = malloc(sizeof(*s) + got + 1);
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->slot = slot;
    s->code = code;
    memcpy(s->text, text, got + 1);
    pthread_mutex_lock(&strings_lock);
    s->next = strings;
    strings = s;
    pthread_mutex_unlock(&strings_lock);
    *out = s->text;
    return CUDA_SUCCESS;
}

CUresult vgpu_remote_guest_cuGetErrorName(CUresult error, const char **pStr)
{
    return error_text(SLOT(cuGetErrorName), error, pStr);
}

CUresult vgpu_remote_guest_cuGetErrorString(CUresult error, const char **pStr)
{
    return error_text(SLOT(cuGetErrorString), error, pStr);
}

CUresult vgpu_remote_guest_cuModuleLoadData(CUmodule *module, const void *image)
{
    if (!module || !image)
        return CUDA_ERROR_INVALID_VALUE;
    size_t n = vgpu_remote_image_extent(image, VGPU_REMOTE_MAX_LEN - 64);
    if (!n)
        return CUDA_ERROR_INVALID_IMAGE;
    uint64_t w = n, h = 0;
    struct iovec q[2] = { { &w, sizeof(w) }, { (void *)image, n } }, a = { &h, sizeof(h) };
    size_t got = 0;
    CUresult r = vgpu_remote_call(SLOT(cuModuleLoadData), q, 2, &a, 1, &got);
    if (r == CUDA_SUCCESS && got != sizeof(h))
        return CUDA_ERROR_UNKNOWN;
    if (r == CUDA_SUCCESS)
        *module = (CUmodule)(uintptr_t)h;
    return r;
}

CUresult vgpu_remote_guest_cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    if (!hfunc || !name)
        return CUDA_ERROR_INVALID_VALUE;
    size_t n = strnlen(name, 4096);
    if (n == 4096)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t w = (uint64_t)(uintptr_t)hmod, h = 0;
    struct iovec q[2] = { { &w, sizeof(w) }, { (void *)name, n } }, a = { &h, sizeof(h) };
    size_t got = 0;
    CUresult r = vgpu_remote_call(SLOT(cuModuleGetFunction), q, 2, &a, 1, &got);
    if (r == CUDA_SUCCESS && got != sizeof(h))
        return CUDA_ERROR_UNKNOWN;
    if (r == CUDA_SUCCESS)
        *hfunc = (CUfunction)(uintptr_t)h;
    return r;
}

/* Copies go in chunks, each a call: no message is longer than VGPU_REMOTE_CHUNK. */
CUresult vgpu_remote_guest_cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
    if (n && !src)
        return CUDA_ERROR_INVALID_VALUE;
    size_t done = 0;
    do {
        size_t c = n - done < VGPU_REMOTE_CHUNK ? n - done : VGPU_REMOTE_CHUNK;
        uint64_t w[2] = { dst + done, c };
        struct iovec q[2] = { { w, sizeof(w) }, { (char *)src + done, c } };
        CUresult r = vgpu_remote_call(SLOT(cuMemcpyHtoD_v2), q, 2, NULL, 0, NULL);
        if (r != CUDA_SUCCESS)
            return r;
        done += c;
    } while (done < n);
    return CUDA_SUCCESS;
}

CUresult vgpu_remote_guest_cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
    if (n && !dst)
        return CUDA_ERROR_INVALID_VALUE;
    size_t done = 0;
    do {
        size_t c = n - done < VGPU_REMOTE_CHUNK ? n - done : VGPU_REMOTE_CHUNK, got = 0;
        uint64_t w[2] = { src + done, c };
        struct iovec q = { w, sizeof(w) }, a = { (char *)dst + done, c };
        CUresult r = vgpu_remote_call(SLOT(cuMemcpyDtoH_v2), &q, 1, &a, 1, &got);
        if (r != CUDA_SUCCESS)
            return r;
        if (got != c)
            return CUDA_ERROR_UNKNOWN;
        done += c;
    } while (done < n);
    return CUDA_SUCCESS;
}

/* A kernel's parameters, learnt once per function from the executor
 * (cuFuncGetParamInfo): how many and how long each is.  Owned by this
 * file, under params_lock; functions are few and live as long as their
 * module, so the list only grows. */
#define MAX_PARAMS 256
struct layout {
    struct layout *next;
    CUfunction f;
    unsigned n;
    uint32_t size[];
};
static CUresult layout_of(CUfunction f, const struct layout **out)
{
    pthread_once(&atfork_once, register_atfork);
    pthread_mutex_lock(&params_lock);
    for (struct layout *l = layouts; l; l = l->next)
        if (l->f == f) {
            *out = l;
            pthread_mutex_unlock(&params_lock);
            return CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&params_lock);
    uint32_t size[MAX_PARAMS];
    unsigned n = 0;
    for (; n < MAX_PARAMS; n++) {
        /* cuFuncGetParamInfo(f, n, &offset, &size), as its generated stub sends it. */
        uint64_t in[3] = { 0, (uint64_t)(uintptr_t)f, n }, got[2];
        CUresult r = vgpu_remote_call_words(SLOT(cuFuncGetParamInfo), in, 3, got, 2);
        if (r == CUDA_ERROR_INVALID_VALUE)
            break; /* past the last parameter */
        if (r != CUDA_SUCCESS)
            return r;
        if (got[1] > 4096)
            return CUDA_ERROR_INVALID_VALUE;
        size[n] = (uint32_t)got[1];
    }
    if (n == MAX_PARAMS)
        return CUDA_ERROR_INVALID_VALUE; /* more parameters than a launch may carry */
    struct layout *l = malloc(sizeof(*l) + n * sizeof(uint32_t));
    if (!l)
        return CUDA_ERROR_OUT_OF_MEMORY;
    l->f = f;
    l->n = n;
    memcpy(l->size, size, n * sizeof(uint32_t));
    pthread_mutex_lock(&params_lock);
    l->next = layouts;
    layouts = l;
    pthread_mutex_unlock(&params_lock);
    *out = l;
    return CUDA_SUCCESS;
}

CUresult vgpu_remote_guest_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                          unsigned bz, unsigned shmem, CUstream stream, void **params, void **extra)
{
    if (extra)
        return vgpu_remote_refuse(SLOT(cuLaunchKernel)); /* CU_LAUNCH_PARAM_* buffers: not carried yet */
    const struct layout *l;
    CUresult r = layout_of(f, &l);
    if (r != CUDA_SUCCESS)
        return r;
    if (l->n && !params)
        return CUDA_ERROR_INVALID_VALUE;
    /* Words: f, the grid, the block, shared memory, stream, the count; then
     * each parameter's size, then their bytes, each padded to 8. */
    uint64_t head[10 + MAX_PARAMS];
    head[0] = (uint64_t)(uintptr_t)f;
    head[1] = gx, head[2] = gy, head[3] = gz, head[4] = bx, head[5] = by, head[6] = bz, head[7] = shmem;
    head[8] = (uint64_t)(uintptr_t)stream;
    head[9] = l->n;
    size_t bytes = 0;
    for (unsigned i = 0; i < l->n; i++) {
        head[10 + i] = l->size[i];
        bytes += (l->size[i] + 7) & ~7u;
    }
    char *packed = calloc(1, bytes ? bytes : 1);
    if (!packed)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (unsigned i = 0, at = 0; i < l->n; at += (l->size[i] + 7) & ~7u, i++)
        memcpy(packed + at, params[i], l->size[i]);
    struct iovec q[2] = { { head, (10 + l->n) * sizeof(uint64_t) }, { packed, bytes } };
    r = vgpu_remote_send(SLOT(cuLaunchKernel), q, 2);
    free(packed);
    return r;
}

/* The executor looks the name up in its driver and says which exported
 * function it found; the guest hands out the remote driver's function of
 * that slot (the interposer's hook then wraps it as it would a local
 * driver's).  None found: success and NULL, as the driver says it. */
static CUresult proc_address(unsigned slot, const char *symbol, void **pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status)
{
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    size_t n = strnlen(symbol, 256);
    if (n == 256)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t w[2] = { (uint64_t)(uint32_t)version, flags }, st = 0;
    char name[257] = { 0 };
    size_t got = 0;
    struct iovec q[2] = { { w, sizeof(w) }, { (void *)symbol, n } },
                 a[2] = { { &st, sizeof(st) }, { name, sizeof(name) - 1 } };
    CUresult r = vgpu_remote_call(slot, q, 2, a, 2, &got);
    if (status)
        *status = (CUdriverProcAddressQueryResult)st;
    if (r != CUDA_SUCCESS) {
        *pfn = NULL;
        return r;
    }
    int found = got > sizeof(st) ? vgpu_dispatch_slot(&vgpu_cuda, name) : -1;
    *pfn = found < 0 ? NULL : vgpu_cuda.remote[found];
    if (found < 0 && status && st == CU_GET_PROC_ADDRESS_SUCCESS)
        *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_SUCCESS;
}

CUresult vgpu_remote_guest_cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                               CUdriverProcAddressQueryResult *status)
{
    return proc_address(SLOT(cuGetProcAddress_v2), symbol, pfn, version, flags, status);
}

CUresult vgpu_remote_guest_cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    return proc_address(SLOT(cuGetProcAddress), symbol, pfn, version, flags, NULL);
}

/* Page-locked host memory, answered in the guest: the guest's memory can
 * never be the host GPU's to reach, so it is plain memory here, which the
 * copies carry as they carry any (docs/remote.md).  The blocks handed out
 * are remembered, so that cuMemFreeHost refuses any other pointer, as the
 * driver does.  Owned by this file, under host_lock. */
struct host_block {
    struct host_block *next;
    void *p;
};
static struct host_block *host_blocks;
static pthread_mutex_t host_lock = PTHREAD_MUTEX_INITIALIZER;

static CUresult host_alloc(void **pp, size_t n)
{
    if (!pp || !n)
        return CUDA_ERROR_INVALID_VALUE;
    struct host_block *b = malloc(sizeof(*b));
    void *p = NULL;
    if (!b || posix_memalign(&p, 4096, n) != 0) {
        free(b);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    b->p = p;
    pthread_mutex_lock(&host_lock);
    b->next = host_blocks;
    host_blocks = b;
    pthread_mutex_unlock(&host_lock);
    *pp = p;
    return CUDA_SUCCESS;
}

CUresult vgpu_remote_guest_cuMemAllocHost_v2(void **pp, size_t n)
{
    return host_alloc(pp, n);
}

CUresult vgpu_remote_guest_cuMemAllocHost(void **pp, unsigned int n)
{
    return host_alloc(pp, n);
}

CUresult vgpu_remote_guest_cuMemHostAlloc(void **pp, size_t n, unsigned int flags)
{
    if (flags & CU_MEMHOSTALLOC_DEVICEMAP)
        return vgpu_remote_refuse(SLOT(cuMemHostAlloc)); /* a device's view of guest memory: none */
    return host_alloc(pp, n);
}

CUresult vgpu_remote_guest_cuMemFreeHost(void *p)
{
    pthread_mutex_lock(&host_lock);
    struct host_block **at = &host_blocks;
    while (*at && (*at)->p != p)
        at = &(*at)->next;
    struct host_block *b = *at;
    if (b)
        *at = b->next;
    pthread_mutex_unlock(&host_lock);
    if (!b)
        return CUDA_ERROR_INVALID_VALUE;
    free(b->p);
    free(b);
    return CUDA_SUCCESS;
}
