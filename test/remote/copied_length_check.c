/*
 * What the executor measures of the driver's device layout
 * (vgpu_exec_copied_length, forwarder/remote/executor/cuda/private/export_tables.c): the bytes a
 * function copies into chunks it takes with malloc, exactly, on a heap
 * whose free chunks of that size hold other data; not the chunks' length,
 * whose tail would carry the executor's heap to the guest.  An answer that
 * changes from call to call is not measured (length 0); one whose first
 * chunks are longer than their size class (split from larger free chunks)
 * is; a function's own refusal comes back as its own.  Under a sanitizer's
 * allocator, which does not hand freed chunks back at once, nothing is
 * measured.
 */
#include "forwarder/remote/executor/cuda/calls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What forwarder/remote/executor/cuda/private/export_tables.c calls besides: not reached by vgpu_exec_copied_length. */
int vgpu_exec_reply(struct vgpu_exec *x, int r, const struct iovec *iov, int n)
{
    (void)x, (void)r, (void)iov, (void)n;
    abort();
}

int vgpu_exec_malformed(const char *call, size_t len)
{
    (void)call, (void)len;
    abort();
}

void *vgpu_exec_function_named(struct vgpu_exec *x, const char *name)
{
    (void)x, (void)name;
    abort();
}

int vgpu_exec_reply_cuGetExportTable(struct vgpu_exec *x, int r, const struct vgpu_in_cuGetExportTable *in,
                                     const struct vgpu_out_cuGetExportTable *out)
{
    (void)x, (void)r, (void)in, (void)out;
    abort();
}

static size_t copied;
static int calls;
static int changing;
static int first_split; /* the first answer's chunks longer than their class, as a split chunk is */

/* Like the driver's: two chunks of malloc, `copied` bytes each; the second
 * ends in 0xff then zeros, which neither fill may be taken for. */
static CUresult get(void **first, void **second)
{
    size_t extra = first_split && calls == 0 ? 40 : 0;
    unsigned char *a = malloc(copied + extra), *b = malloc(copied + extra);
    if (!a || !b)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < copied; i++) {
        a[i] = (unsigned char)(i % 7 + (changing ? calls : 0));
        b[i] = i + 2 < copied ? 0xff : 0;
    }
    calls++;
    *first = a;
    *second = b;
    return CUDA_SUCCESS;
}

static CUresult refuses(void **first, void **second)
{
    (void)first, (void)second;
    return CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult release(void *first, void *second)
{
    free(first);
    free(second);
    return CUDA_SUCCESS;
}

/* Leaves the heap's free chunks of every size up to 160 bytes dirty. */
static void dirty_heap(void)
{
    void *p[64];
    for (int i = 0; i < 64; i++) {
        size_t n = 16 + (size_t)(i % 10) * 16;
        p[i] = malloc(n);
        memset(p[i], 0xa5, n);
    }
    for (int i = 0; i < 64; i++)
        free(p[i]);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

int main(void)
{
    int failed = 0;
    static const size_t lengths[] = { 66, 72, 57, 24, 130 };
    for (size_t k = 0; k < sizeof(lengths) / sizeof(lengths[0]); k++) {
        copied = lengths[k];
        dirty_heap();
        size_t n = 0;
        CUresult r = vgpu_exec_copied_length((void *)get, (void *)release, &n);
        int ok = r == CUDA_SUCCESS && n == (SANITIZED ? 0 : copied);
        printf("%s: copies %zu: %d, measured %zu\n", ok ? "ok" : "FAIL", copied, (int)r, n);
        failed |= !ok;
    }
    copied = 66;
    calls = 0;
    first_split = 1;
    size_t m = 0;
    CUresult rs = vgpu_exec_copied_length((void *)get, (void *)release, &m);
    int split_ok = rs == CUDA_SUCCESS && m == (SANITIZED ? 0 : copied);
    printf("%s: first chunks longer than their class: %d, measured %zu\n", split_ok ? "ok" : "FAIL", (int)rs, m);
    failed |= !split_ok;
    first_split = 0;
    changing = 1;
    size_t n = 0;
    CUresult r = vgpu_exec_copied_length((void *)get, (void *)release, &n);
    int ok = r == CUDA_SUCCESS && n == 0;
    printf("%s: an answer that changes: %d, measured %zu\n", ok ? "ok" : "FAIL", (int)r, n);
    /* The driver's own refusal is its own, not a measure's. */
    r = vgpu_exec_copied_length((void *)refuses, (void *)release, &n);
    int refused_ok = r == CUDA_ERROR_NOT_SUPPORTED && n == 0;
    printf("%s: a function that refuses: %d\n", refused_ok ? "ok" : "FAIL", (int)r);
    ok = ok && refused_ok;
    return failed || !ok;
}
