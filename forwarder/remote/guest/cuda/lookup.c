/*
 * Error strings and the driver's lookup (cuGetProcAddress), the guest's
 * side; forwarder/remote/executor/cuda/lookup.c is the other (the messages:
 * forwarder/remote/spec/cuda.remote).
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/manual.h"

#include "vgpu_cuda_slots.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SLOT(name) VGPU_CUDA_SLOT_##name

static int fetch_text(unsigned slot, uint32_t code, char *buf, size_t size)
{
    struct vgpu_in_cuGetErrorName in = { .error = (CUresult)code };
    struct vgpu_out_cuGetErrorName out = { .tail = buf, .tail_size = size };
    int r = vgpu_remote_call_cuGetErrorName(slot, 0, &in, &out);
    if (r == CUDA_SUCCESS && out.str != buf)
        memmove(buf, out.str, strlen(out.str) + 1);
    return r;
}

static CUresult error_text(unsigned slot, CUresult code, const char **out)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    *out = NULL;
    int r = vgpu_remote_text(slot, (uint32_t)code, fetch_text, out);
    return r == -1 ? CUDA_ERROR_OUT_OF_MEMORY : (CUresult)r;
}

CUresult vgpu_remote_guest_cuGetErrorName(CUresult error, const char **pStr)
{
    return error_text(SLOT(cuGetErrorName), error, pStr);
}

CUresult vgpu_remote_guest_cuGetErrorString(CUresult error, const char **pStr)
{
    return error_text(SLOT(cuGetErrorString), error, pStr);
}

/* The calls the guest answers itself, whatever the host's driver has: by
 * the name asked for, the version from which (and whether per-thread
 * streams are asked for) it is the exported one named. */
static const struct {
    const char *name;
    int since;
    bool per_thread;
    const char *is;
} guest_answered[] = {
    { "cuMemAllocHost", 3020, false, "cuMemAllocHost_v2" },
    { "cuMemAllocHost", 0, false, "cuMemAllocHost" },
    { "cuMemHostAlloc", 0, false, "cuMemHostAlloc" },
    { "cuMemFreeHost", 0, false, "cuMemFreeHost" },
    { "cuMemHostRegister", 6050, false, "cuMemHostRegister_v2" },
    { "cuMemHostRegister", 0, false, "cuMemHostRegister" },
    { "cuMemHostUnregister", 0, false, "cuMemHostUnregister" },
    { "cuMemHostGetFlags", 0, false, "cuMemHostGetFlags" },
    { "cuMemHostGetDevicePointer", 3020, false, "cuMemHostGetDevicePointer_v2" },
    { "cuLaunchHostFunc", 0, true, "cuLaunchHostFunc_ptsz" },
    { "cuLaunchHostFunc", 0, false, "cuLaunchHostFunc" },
    { "cuStreamAddCallback", 0, true, "cuStreamAddCallback_ptsz" },
    { "cuStreamAddCallback", 0, false, "cuStreamAddCallback" },
};

static bool answered_here(const char *symbol, int version, cuuint64_t flags, void **pfn,
                          CUdriverProcAddressQueryResult *status)
{
    bool per_thread = flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    for (size_t i = 0; i < sizeof(guest_answered) / sizeof(guest_answered[0]); i++)
        if (strcmp(symbol, guest_answered[i].name) == 0 && version >= guest_answered[i].since &&
            (per_thread || !guest_answered[i].per_thread)) {
            *pfn = vgpu_cuda.remote[vgpu_dispatch_slot(&vgpu_cuda, guest_answered[i].is)];
            if (status)
                *status = CU_GET_PROC_ADDRESS_SUCCESS;
            return true;
        }
    return false;
}

/* The lookups answered, kept for the process's life: the host driver's
 * answer to a name at a version and flags does not change, and each
 * runtime and library of a process asks its few hundred names (cuDNN again
 * for each plan it builds).  A table hashed by name, under kept_lock; a
 * child of fork starts empty (its executor is another process). */
struct kept_lookup {
    struct kept_lookup *next;
    int version;
    cuuint64_t flags;
    int slot; /* -1: none */
    CUdriverProcAddressQueryResult status;
    char symbol[];
};
#define KEPT_BUCKETS 1024
static struct kept_lookup *kept[KEPT_BUCKETS];
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t kept_once = PTHREAD_ONCE_INIT;

static void kept_child_after_fork(void)
{
    pthread_mutex_init(&kept_lock, NULL);
    memset(kept, 0, sizeof(kept)); /* the parent's entries: left, not freed */
}

static void kept_register_atfork(void)
{
    pthread_atfork(NULL, NULL, kept_child_after_fork);
}

static unsigned bucket_of(const char *symbol, int version, cuuint64_t flags)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)(unsigned)version ^ (flags << 32);
    for (const unsigned char *p = (const unsigned char *)symbol; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return (unsigned)(h % KEPT_BUCKETS);
}

static bool kept_lookup(const char *symbol, int version, cuuint64_t flags, int *slot,
                        CUdriverProcAddressQueryResult *status)
{
    pthread_once(&kept_once, kept_register_atfork);
    unsigned b = bucket_of(symbol, version, flags);
    pthread_mutex_lock(&kept_lock);
    const struct kept_lookup *k = kept[b];
    while (k && (k->version != version || k->flags != flags || strcmp(k->symbol, symbol) != 0))
        k = k->next;
    if (k) {
        *slot = k->slot;
        *status = k->status;
    }
    pthread_mutex_unlock(&kept_lock);
    return k != NULL;
}

static void keep_lookup(const char *symbol, int version, cuuint64_t flags, int slot,
                        CUdriverProcAddressQueryResult status)
{
    size_t n = strlen(symbol) + 1;
    struct kept_lookup *k = malloc(sizeof(*k) + n);
    if (!k)
        return; /* asked again next time */
    k->version = version;
    k->flags = flags;
    k->slot = slot;
    k->status = status;
    memcpy(k->symbol, symbol, n);
    unsigned b = bucket_of(symbol, version, flags);
    pthread_mutex_lock(&kept_lock);
    k->next = kept[b];
    kept[b] = k;
    pthread_mutex_unlock(&kept_lock);
}

/* The executor looks the name up in its driver and says which exported
 * function it found; the guest hands out the remote driver's function of
 * that slot (the interposer's hook then wraps it as it would a local
 * driver's), and keeps the answer.  None found: success and NULL, as the
 * driver says it. */
static CUresult proc_address(unsigned slot, const char *symbol, void **pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status)
{
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    if (answered_here(symbol, version, flags, pfn, status))
        return CUDA_SUCCESS;
    int found;
    CUdriverProcAddressQueryResult said;
    if (kept_lookup(symbol, version, flags, &found, &said)) {
        *pfn = found < 0 ? NULL : vgpu_cuda.remote[found];
        if (status)
            *status = said;
        return CUDA_SUCCESS;
    }
    struct vgpu_in_cuGetProcAddress_v2 in = { .cudaVersion = version, .flags = flags, .symbol = symbol };
    char name[VGPU_OUT_cuGetProcAddress_v2_name_MAX];
    struct vgpu_out_cuGetProcAddress_v2 out = { .tail = name, .tail_size = sizeof(name) };
    /* The status comes back whatever the driver returned (a name it does
     * not know, at this version), or, with no reply, stays as it was. */
    out.symbolStatus = status ? *status : CU_GET_PROC_ADDRESS_SUCCESS;
    CUresult r = (CUresult)vgpu_remote_call_cuGetProcAddress_v2(slot, 0, &in, &out);
    if (status)
        *status = out.symbolStatus;
    if (r != CUDA_SUCCESS) {
        *pfn = NULL;
        return r;
    }
    found = *out.name ? vgpu_dispatch_slot(&vgpu_cuda, out.name) : -1;
    *pfn = found < 0 ? NULL : vgpu_cuda.remote[found];
    said = out.symbolStatus;
    if (found < 0 && said == CU_GET_PROC_ADDRESS_SUCCESS)
        said = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (status)
        *status = said;
    keep_lookup(symbol, version, flags, found, said);
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
