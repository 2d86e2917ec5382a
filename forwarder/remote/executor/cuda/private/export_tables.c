/*
 * The driver's private tables, the executor's side: the functions of them
 * whose answers only the host's driver has (the guest's side:
 * forwarder/remote/guest/cuda/private/device_layout.c; what crosses: docs/design/remote.md,
 * "The runtime's private tables").  One is served: cuBLASLt's device
 * layout (function 4 of table 1734dc26-...).
 *
 * That function copies two descriptions of the current context's device
 * into memory it takes with malloc, and does not say how many bytes it
 * copied.  The chunks malloc gives are longer than asked (up to 23
 * bytes), and what lies past the copy is whatever the executor's heap held
 * there: it must not cross.  So the executor learns the length once per
 * device: it calls the function twice on chunks it has just freed and
 * filled, with zeros and then with 0xff, and the length is where both
 * fills begin; after that it sends that many bytes of each answer.  It
 * checks that the driver took exactly the chunks it filled (glibc's
 * allocator hands back the latest freed chunk of a size first) and that
 * both answers agree; where not (another allocator, such as a sanitizer's),
 * the function is refused, logged once.  No answer sends more than its
 * chunks hold.
 */
#define _GNU_SOURCE
#include "forwarder/remote/executor/cuda/calls.h"

#include "common/log.h"
#include "forwarder/remote/spec/private_tables.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

/* More chunks than glibc's per-thread cache keeps of one size (7): taken
 * first, so that the two filled ones are the first it hands out. */
#define HOLD 8

typedef CUresult (*layout_fn)(void **, void **);
typedef CUresult (*free_fn)(void *, void *);

/* Calls get on two chunks of room bytes filled with fill; the bytes it
 * gave back in out (room each), and *ours: whether they are those chunks. */
static CUresult filled_call(layout_fn get, free_fn release, size_t room, int fill, uint8_t *out, bool *ours)
{
    void *hold[HOLD];
    for (int i = 0; i < HOLD; i++)
        hold[i] = malloc(room);
    void *z0 = malloc(room), *z1 = malloc(room);
    /* Their addresses, taken before they are freed, to compare with the
     * driver's chunks (GCC warns of any use of a freed pointer's value). */
    uintptr_t p0 = (uintptr_t)z0, p1 = (uintptr_t)z1;
    __asm__("" : "+r"(p0), "+r"(p1));
    if (z0 && z1) {
        memset(z0, fill, room);
        memset(z1, fill, room);
        /* Kept: a compiler drops stores to memory that is freed next. */
        __asm__ volatile("" : : "r"(z0), "r"(z1) : "memory");
    }
    free(z0);
    free(z1);
    void *a = NULL, *b = NULL;
    CUresult r = get(&a, &b);
    for (int i = 0; i < HOLD; i++)
        free(hold[i]);
    if (r != CUDA_SUCCESS)
        return r;
    uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;
    *ours = p0 && p1 && ((pa == p1 && pb == p0) || (pa == p0 && pb == p1));
    if (*ours) {
        memcpy(out, a, room);
        memcpy(out + room, b, room);
    }
    release(a, b);
    return CUDA_SUCCESS;
}

CUresult vgpu_exec_copied_length(void *get_fn, void *release_fn, size_t *length)
{
    layout_fn get = (layout_fn)get_fn;
    free_fn release = (free_fn)release_fn;
    *length = 0;
    void *a = NULL, *b = NULL;
    CUresult r = get(&a, &b);
    if (r != CUDA_SUCCESS)
        return r;
    /* The chunks' room: that of malloc's size class for the copies, or
     * more where a chunk came split from a larger free one; the class is
     * the largest room at most the smaller chunk's that the driver takes
     * back filled. */
    size_t room = malloc_usable_size(a) < malloc_usable_size(b) ? malloc_usable_size(a) : malloc_usable_size(b);
    release(a, b);
    if (room == 0 || room > VGPU_REMOTE_DEVICE_LAYOUT_MAX)
        return CUDA_SUCCESS; /* not measured */
    uint8_t *zeros = malloc(2 * room), *ones = malloc(2 * room);
    bool ours0 = false, ours1 = false;
    if (!zeros || !ones)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    for (; r == CUDA_SUCCESS && !ours0 && room >= 2 * sizeof(void *); room -= 2 * sizeof(void *))
        if ((r = filled_call(get, release, room, 0x00, zeros, &ours0)) == CUDA_SUCCESS && ours0)
            break;
    if (r == CUDA_SUCCESS && ours0)
        r = filled_call(get, release, room, 0xff, ones, &ours1);
    if (r == CUDA_SUCCESS && !(ours0 && ours1))
        vgpu_debug("executor: the driver did not take the filled chunks");
    if (r == CUDA_SUCCESS && ours0 && ours1) {
        /* out holds the first answer, then the second, whichever chunk
         * each landed in: the length is where both fills begin in both. */
        size_t n = room;
        for (; n > 0; n--) {
            size_t i = n - 1;
            if (zeros[i] || zeros[room + i] || ones[i] != 0xff || ones[room + i] != 0xff)
                break;
        }
        if (n > 0 && memcmp(zeros, ones, n) == 0 && memcmp(zeros + room, ones + room, n) == 0)
            *length = n;
        else
            vgpu_debug("executor: the driver's two answers differ in their first %zu bytes", n);
    }
    free(zeros);
    free(ones);
    return r;
}

/* Function 4 of cuBLASLt's table: the length, the first, the second. */
static int device_layout(struct vgpu_exec *x, void *get, void *release, const struct vgpu_in_cuGetExportTable *in)
{
    CUdevice dev = 0;
    void *ctx_device = vgpu_exec_function_named(x, "cuCtxGetDevice");
    CUresult r = ctx_device ? ((CUresult(*)(CUdevice *))ctx_device)(&dev) : CUDA_ERROR_NOT_SUPPORTED;
    if (r != CUDA_SUCCESS)
        return vgpu_exec_reply(x, r, NULL, 0);
    if (dev < 0 || dev >= VGPU_EXEC_MAX_DEVICES)
        return vgpu_exec_reply(x, CUDA_ERROR_NOT_SUPPORTED, NULL, 0);
    if (__atomic_load_n(&x->s->layout_length[dev], __ATOMIC_RELAXED) == 0) { /* lanes may measure at once, alike */
        size_t n = 0;
        r = vgpu_exec_copied_length(get, release, &n);
        if (r != CUDA_SUCCESS)
            return vgpu_exec_reply(x, r, NULL, 0);
        if (!n)
            vgpu_warn("executor: the driver's device layout (cuBLASLt's private table) cannot be measured with this "
                      "allocator: refused to the guest (docs/design/remote.md)");
        __atomic_store_n(&x->s->layout_length[dev], n ? (int)n : -1, __ATOMIC_RELAXED);
    }
    int length = __atomic_load_n(&x->s->layout_length[dev], __ATOMIC_RELAXED);
    if (length < 0)
        return vgpu_exec_reply(x, CUDA_ERROR_NOT_SUPPORTED, NULL, 0);
    uint64_t n = (uint64_t)length;
    void *a = NULL, *b = NULL;
    r = ((layout_fn)get)(&a, &b);
    if (r != CUDA_SUCCESS)
        return vgpu_exec_reply(x, r, NULL, 0);
    /* Never more than the chunks hold: an answer shorter than the one
     * measured (another driver, another context) is measured again. */
    if (n > malloc_usable_size(a) || n > malloc_usable_size(b)) {
        ((free_fn)release)(a, b);
        __atomic_store_n(&x->s->layout_length[dev], 0, __ATOMIC_RELAXED);
        return vgpu_exec_reply(x, CUDA_ERROR_NOT_SUPPORTED, NULL, 0);
    }
    struct vgpu_out_cuGetExportTable out = { .size = n, .first = a, .second = b };
    int sent = vgpu_exec_reply_cuGetExportTable(x, r, in, &out);
    ((free_fn)release)(a, b);
    return sent;
}

int vgpu_exec_cuGetExportTable(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuGetExportTable *in)
{
    static const uint8_t cublaslt[16] = VGPU_REMOTE_CUBLASLT_TABLE;
    if (memcmp(&in->id, cublaslt, sizeof(cublaslt)) != 0 || in->index != VGPU_REMOTE_DEVICE_LAYOUT)
        return vgpu_exec_reply(x, CUDA_ERROR_NOT_SUPPORTED, NULL, 0);
    const void *const *table = NULL;
    CUresult r = ((CUresult(*)(const void *const **, const void *))fn)(&table, &in->id);
    if (r == CUDA_SUCCESS && (!table || (uintptr_t)table[0] < VGPU_REMOTE_CUBLASLT_SLOTS * sizeof(void *) ||
                              !table[VGPU_REMOTE_DEVICE_LAYOUT] || !table[VGPU_REMOTE_DEVICE_LAYOUT_FREE]))
        r = CUDA_ERROR_NOT_SUPPORTED;
    if (r != CUDA_SUCCESS)
        return vgpu_exec_reply(x, r, NULL, 0);
    return device_layout(x, (void *)table[VGPU_REMOTE_DEVICE_LAYOUT], (void *)table[VGPU_REMOTE_DEVICE_LAYOUT_FREE],
                         in);
}
