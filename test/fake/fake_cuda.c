/*
 * Fake libcuda.so.1: GPUs emulated in host memory, for vgpu's CI tests.
 *
 * Device pointers are real host addresses (anonymous MAP_NORESERVE mappings),
 * so kernels and copies are plain memory operations and a test can "allocate"
 * many GiB without touching RAM. Device memory accounting goes through
 * gpu/ (shared with the fake NVML, and with other processes when
 * FAKEGPU_STATE names a file). Every exported cu* function has the exact
 * cuda.h prototype (built with -D__CUDA_API_VERSION_INTERNAL, so versioned and
 * legacy names are declared literally). See README.md for the model.
 *
 * Kernels run later, on the device timeline of gpu/timeline.c; streams,
 * events, stream capture and graphs are in cuda/streams/ and cuda/graphs/.
 */
#define _GNU_SOURCE
#include <cuda.h>

#include "test/fake/cuda/fake_cuda.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Counters, initialisation, locking                                        */

static unsigned long g_calls;
static unsigned long g_launches;
static int g_initialized;
static unsigned long long g_used[FAKEGPU_MAX_DEVICES]; /* this process */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

unsigned long fakegpu_calls(void);
unsigned long fakegpu_launches(void);
unsigned long long fakegpu_used(int dev);

unsigned long fakegpu_calls(void)
{
    return __atomic_load_n(&g_calls, __ATOMIC_RELAXED);
}

unsigned long fakegpu_launches(void)
{
    return __atomic_load_n(&g_launches, __ATOMIC_RELAXED);
}

/* Device memory this process holds on dev (allocations, contexts, pools). */
unsigned long long fakegpu_used(int dev)
{
    if (dev < 0 || dev >= FAKEGPU_MAX_DEVICES)
        return 0;
    return __atomic_load_n(&g_used[dev], __ATOMIC_RELAXED);
}

#define COUNT_CALL() __atomic_add_fetch(&g_calls, 1, __ATOMIC_RELAXED)

CUresult fake_enter(void)
{
    COUNT_CALL();
    return __atomic_load_n(&g_initialized, __ATOMIC_ACQUIRE) ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

void fake_count_launch(void)
{
    __atomic_add_fetch(&g_launches, 1, __ATOMIC_RELAXED);
}

#define LOCK() pthread_mutex_lock(&g_lock)
#define UNLOCK() pthread_mutex_unlock(&g_lock)

/*
 * CUDA_VISIBLE_DEVICES, read once at cuInit as the real driver does: CUdevice
 * k is physical device g_visible[k].  Entries are indexes or (prefixes of)
 * GPU-... UUIDs; as with the driver, the list ends at the first entry that
 * names no device (or one already listed).  Written once by read_visible()
 * under g_visible_once, read-only afterwards.
 */
static int g_visible[FAKEGPU_MAX_DEVICES];
static int g_nvisible;
static pthread_once_t g_visible_once = PTHREAD_ONCE_INIT;

static int visible_entry(const char *e, int physical)
{
    if (*e >= '0' && *e <= '9') {
        char *end;
        long k = strtol(e, &end, 10);
        return *end == '\0' && k < physical ? (int)k : -1;
    }
    int match = -1;
    for (int d = 0; d < physical; d++) {
        char uuid[48];
        fakegpu_device_uuid_string(d, uuid);
        if (strncasecmp(uuid, e, strlen(e)) == 0) {
            if (match >= 0)
                return -1; /* ambiguous prefix */
            match = d;
        }
    }
    return match;
}

static void read_visible(void)
{
    int physical = fakegpu_config()->devices;
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    if (!cvd) {
        for (int d = 0; d < physical; d++)
            g_visible[d] = d;
        g_nvisible = physical;
        return;
    }
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", cvd);
    for (char *save = NULL, *e = strtok_r(buf, ",", &save); e && g_nvisible < physical;
         e = strtok_r(NULL, ",", &save)) {
        while (*e == ' ')
            e++;
        int d = visible_entry(e, physical);
        for (int k = 0; d >= 0 && k < g_nvisible; k++)
            if (g_visible[k] == d)
                d = -1;
        if (d < 0)
            break;
        g_visible[g_nvisible++] = d;
    }
}

static int device_count(void)
{
    return g_nvisible;
}

static int valid_device(CUdevice dev)
{
    return dev >= 0 && dev < device_count();
}

/* The physical device (identity, shared accounting) of a valid CUdevice. */
static int phys(CUdevice dev)
{
    return g_visible[dev];
}

int fake_physical_device(int dev)
{
    return phys(dev);
}

static unsigned long long total_memory(void)
{
    return fakegpu_config()->memory;
}

/* Takes bytes of device memory; -1 when the device is full. */
/* What a device reports of its SMs (as an H100: cuCtxSetLimit's stack is per resident thread). */
#define THREADS_PER_SM 2048
#define SM_COUNT 132

static int charge(int dev, unsigned long long bytes)
{
    if (bytes == 0)
        return 0;
    if (fakegpu_state_charge(phys(dev), bytes) != 0)
        return -1;
    __atomic_add_fetch(&g_used[dev], bytes, __ATOMIC_RELAXED);
    return 0;
}

static void uncharge(int dev, unsigned long long bytes)
{
    if (bytes == 0)
        return;
    fakegpu_state_uncharge(phys(dev), bytes);
    __atomic_sub_fetch(&g_used[dev], bytes, __ATOMIC_RELAXED);
}

CUresult cuInit(unsigned int Flags)
{
    COUNT_CALL();
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_once(&g_visible_once, read_visible);
    __atomic_store_n(&g_initialized, 1, __ATOMIC_RELEASE);
    return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *driverVersion)
{
    COUNT_CALL();
    if (!driverVersion)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = FAKEGPU_CUDA_VERSION;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */

struct error_text {
    CUresult code;
    const char *name;
    const char *text;
};

#define E(code, text) { code, #code, text }
static const struct error_text g_errors[] = {
    E(CUDA_SUCCESS, "no error"),
    E(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    E(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    E(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    E(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
    E(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
    E(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    E(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
    E(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    E(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context already current"),
    E(CUDA_ERROR_FILE_NOT_FOUND, "file not found"),
    E(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    E(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    E(CUDA_ERROR_NOT_READY, "device not ready"),
    E(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"),
    E(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
    E(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    E(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
    E(CUDA_ERROR_UNKNOWN, "unknown error"),
};
#undef E

static const struct error_text *find_error(CUresult error)
{
    for (size_t i = 0; i < sizeof g_errors / sizeof g_errors[0]; i++)
        if (g_errors[i].code == error)
            return &g_errors[i];
    return NULL;
}

CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    COUNT_CALL();
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    const struct error_text *e = find_error(error);
    *pStr = e ? e->text : NULL;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    COUNT_CALL();
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    const struct error_text *e = find_error(error);
    *pStr = e ? e->name : NULL;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ------------------------------------------------------------------------ */
/* Devices                                                                  */

CUresult cuDeviceGetCount(int *count)
{
    ENTER();
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = device_count();
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    ENTER();
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(ordinal))
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    ENTER();
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "Fake GPU %d", phys(dev));
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    ENTER();
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *bytes = (size_t)total_memory();
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
    ENTER();
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    unsigned long long total = total_memory();
    *bytes = total > UINT_MAX ? UINT_MAX : (unsigned int)total;
    return CUDA_SUCCESS;
}

static CUresult device_uuid(CUuuid *uuid, CUdevice dev)
{
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    fakegpu_device_uuid(phys(dev), (unsigned char *)uuid->bytes);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    ENTER();
    return device_uuid(uuid, dev);
}

CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    ENTER();
    return device_uuid(uuid, dev);
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    ENTER();
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *pi = (int)fakegpu_device_pci_bus(phys(dev)); break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *pi = 0; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *pi = 0; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *pi = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *pi = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *pi = SM_COUNT; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *pi = THREADS_PER_SM; break;
    default: *pi = 0; break;
    }
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    ENTER();
    if (!pciBusId || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%04x:%02x:%02x.0", 0u, fakegpu_device_pci_bus(phys(dev)), 0u);
    if (n >= len)
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(pciBusId, buf, (size_t)n + 1);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
    ENTER();
    if (!dev || !pciBusId)
        return CUDA_ERROR_INVALID_VALUE;
    int index = fakegpu_device_from_pci_bus_id(pciBusId);
    for (int k = 0; index >= 0 && k < device_count(); k++)
        if (phys(k) == index) {
            *dev = k;
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_INVALID_DEVICE; /* no such GPU, or hidden by CUDA_VISIBLE_DEVICES */
}

/* ------------------------------------------------------------------------ */
/* Contexts                                                                 */

#define CTX_MAGIC 0x43545846u /* "FXTC" */

/* Context limits (cuCtxSetLimit) that reserve device memory, and their defaults. */
enum { LIMIT_STACK, LIMIT_PRINTF, LIMIT_HEAP, LIMITS };
static const size_t limit_default[LIMITS] = { 1024, 1u << 20, 8u << 20 };

struct CUctx_st {
    unsigned magic;
    int device;
    int refcount; /* primary: retain count; created: 1 while alive */
    int primary;
    int alive;
    unsigned flags;
    size_t limit[LIMITS];               /* 0: the default */
    unsigned long long limit_charged;   /* device memory its limits reserve beyond the defaults */
};

/* Primary contexts live forever so their handles stay stable, as in the
 * real driver; created contexts are marked dead (never freed) on destroy so
 * a stale handle is detected instead of read after free. */
static struct CUctx_st g_primary[FAKEGPU_MAX_DEVICES];

#define CTX_STACK_MAX 64
static __thread CUcontext tl_stack[CTX_STACK_MAX];
static __thread int tl_depth;

static int ctx_valid(CUcontext ctx)
{
    return ctx && ctx->magic == CTX_MAGIC && __atomic_load_n(&ctx->alive, __ATOMIC_ACQUIRE);
}

static CUcontext current_ctx(void)
{
    return tl_depth > 0 ? tl_stack[tl_depth - 1] : NULL;
}

/* Device of the current context, or -1. */
static int current_device(void)
{
    CUcontext ctx = current_ctx();
    return ctx_valid(ctx) ? ctx->device : -1;
}

int fake_current_device(void)
{
    return current_device();
}

/* Drops every occurrence of ctx from this thread's stack. */
static void forget_ctx(CUcontext ctx)
{
    int j = 0;
    for (int i = 0; i < tl_depth; i++)
        if (tl_stack[i] != ctx)
            tl_stack[j++] = tl_stack[i];
    tl_depth = j;
}

/*
 * A device's contexts in this process: the first takes ctx_overhead (the
 * driver's per-process state comes with it), each further one ctx_extra,
 * as the H100 shows.  Called with g_lock held; 0, or -1 when out of memory.
 */
static int g_live_contexts[FAKEGPU_MAX_DEVICES];

static int context_added_locked(int dev)
{
    const struct fakegpu_config *c = fakegpu_config();
    if (charge(dev, g_live_contexts[dev] ? c->ctx_extra : c->ctx_overhead) != 0)
        return -1;
    g_live_contexts[dev]++;
    return 0;
}

static void free_context_allocs_locked(struct CUctx_st *ctx);

static void context_gone_locked(struct CUctx_st *ctx)
{
    const struct fakegpu_config *c = fakegpu_config();
    int dev = ctx->device;
    free_context_allocs_locked(ctx);
    uncharge(dev, ctx->limit_charged);
    ctx->limit_charged = 0;
    memset(ctx->limit, 0, sizeof(ctx->limit));
    uncharge(dev, --g_live_contexts[dev] ? c->ctx_extra : c->ctx_overhead);
}

static void init_primary_locked(int dev)
{
    struct CUctx_st *c = &g_primary[dev];
    if (c->magic != CTX_MAGIC) {
        c->magic = CTX_MAGIC;
        c->device = dev;
        c->primary = 1;
    }
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    ENTER();
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    CUresult rc = CUDA_SUCCESS;
    LOCK();
    init_primary_locked(dev);
    struct CUctx_st *c = &g_primary[dev];
    if (c->refcount == 0) {
        if (context_added_locked(dev) != 0)
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        else
            __atomic_store_n(&c->alive, 1, __ATOMIC_RELEASE);
    }
    if (rc == CUDA_SUCCESS) {
        c->refcount++;
        *pctx = c;
    }
    UNLOCK();
    return rc;
}

/* Called with g_lock held. */
static void primary_destroy_locked(int dev)
{
    struct CUctx_st *c = &g_primary[dev];
    if (c->refcount > 0 || c->alive) {
        c->refcount = 0;
        __atomic_store_n(&c->alive, 0, __ATOMIC_RELEASE);
        context_gone_locked(c);
    }
}

static CUresult primary_release(CUdevice dev)
{
    if (!valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    fake_timeline_drain(dev); /* its memory may go: no kernel may still use it */
    CUresult rc = CUDA_SUCCESS;
    LOCK();
    struct CUctx_st *c = &g_primary[dev];
    if (c->refcount <= 0)
        rc = CUDA_ERROR_INVALID_CONTEXT;
    else if (--c->refcount == 0)
        primary_destroy_locked(dev);
    UNLOCK();
    return rc;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    ENTER();
    return primary_release(dev);
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    ENTER();
    return primary_release(dev);
}

static CUresult primary_reset(CUdevice dev)
{
    if (!valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    fake_timeline_drain(dev);
    LOCK();
    primary_destroy_locked(dev);
    UNLOCK();
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    ENTER();
    return primary_reset(dev);
}

CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    ENTER();
    return primary_reset(dev);
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    ENTER();
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    LOCK();
    *flags = g_primary[dev].flags;
    *active = g_primary[dev].refcount > 0;
    UNLOCK();
    return CUDA_SUCCESS;
}

static CUresult primary_set_flags(CUdevice dev, unsigned int flags)
{
    if (!valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    LOCK();
    init_primary_locked(dev);
    g_primary[dev].flags = flags;
    UNLOCK();
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    ENTER();
    return primary_set_flags(dev, flags);
}

CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    ENTER();
    return primary_set_flags(dev, flags);
}

static CUresult push_ctx(CUcontext ctx)
{
    if (tl_depth >= CTX_STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    tl_stack[tl_depth++] = ctx;
    return CUDA_SUCCESS;
}

static CUresult ctx_create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (tl_depth >= CTX_STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct CUctx_st *c = calloc(1, sizeof *c);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    LOCK();
    int full = context_added_locked(dev);
    UNLOCK();
    if (full) {
        free(c);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    c->magic = CTX_MAGIC;
    c->device = dev;
    c->refcount = 1;
    c->flags = flags;
    c->alive = 1;
    push_ctx(c);
    *pctx = c;
    return CUDA_SUCCESS;
}

CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    ENTER();
    return ctx_create(pctx, flags, dev);
}

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    ENTER();
    return ctx_create(pctx, flags, dev);
}

CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
                        CUdevice dev)
{
    ENTER();
    (void)ctxCreateParams;
    return ctx_create(pctx, flags, dev);
}

static CUresult ctx_destroy(CUcontext ctx)
{
    if (!ctx_valid(ctx) || ctx->primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    fake_timeline_drain(ctx->device);
    LOCK();
    int was_alive = __atomic_exchange_n(&ctx->alive, 0, __ATOMIC_ACQ_REL);
    if (was_alive)
        context_gone_locked(ctx);
    UNLOCK();
    if (!was_alive)
        return CUDA_ERROR_INVALID_CONTEXT;
    forget_ctx(ctx);
    return CUDA_SUCCESS;
}

CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    ENTER();
    return ctx_destroy(ctx);
}

CUresult cuCtxDestroy(CUcontext ctx)
{
    ENTER();
    return ctx_destroy(ctx);
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    ENTER();
    if (ctx && !ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!ctx) {
        if (tl_depth > 0)
            tl_depth--;
    } else if (tl_depth > 0) {
        tl_stack[tl_depth - 1] = ctx;
    } else {
        push_ctx(ctx);
    }
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    ENTER();
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = current_ctx();
    return CUDA_SUCCESS;
}

static CUresult ctx_push(CUcontext ctx)
{
    if (!ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    return push_ctx(ctx);
}

static CUresult ctx_pop(CUcontext *pctx)
{
    if (tl_depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    CUcontext c = tl_stack[--tl_depth];
    if (pctx)
        *pctx = c;
    return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    ENTER();
    return ctx_push(ctx);
}

CUresult cuCtxPushCurrent(CUcontext ctx)
{
    ENTER();
    return ctx_push(ctx);
}

CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    ENTER();
    return ctx_pop(pctx);
}

CUresult cuCtxPopCurrent(CUcontext *pctx)
{
    ENTER();
    return ctx_pop(pctx);
}

static CUresult ctx_device(CUdevice *device, CUcontext ctx)
{
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (!ctx)
        ctx = current_ctx();
    if (!ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    *device = ctx->device;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device)
{
    ENTER();
    return ctx_device(device, NULL);
}

CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    ENTER();
    return ctx_device(device, ctx);
}

/* Defined with the memory pools: gives cached pool memory back down to each
 * pool's release threshold (what a synchronisation does). */
static void trim_pools_to_threshold(int dev);

/* Every stream of the device: this process's whole queue there. */
static CUresult ctx_synchronize(CUcontext ctx)
{
    if (!ctx)
        ctx = current_ctx();
    if (!ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    CUresult rc = fake_capture_unsafe_call();
    if (rc != CUDA_SUCCESS)
        return rc;
    fake_timeline_drain(ctx->device);
    trim_pools_to_threshold(ctx->device);
    return CUDA_SUCCESS;
}

/* The device memory a context's limits reserve beyond their defaults: a
 * stack for every thread the device can hold at once, the printf FIFO and
 * the malloc heap. */
static unsigned long long limits_reserve(const size_t limit[LIMITS])
{
    unsigned long long bytes = 0;
    for (int k = 0; k < LIMITS; k++) {
        size_t v = limit[k] ? limit[k] : limit_default[k];
        if (v > limit_default[k])
            bytes += (v - limit_default[k]) * (k == LIMIT_STACK ? (unsigned long long)SM_COUNT * THREADS_PER_SM : 1);
    }
    return bytes;
}

static int limit_index(CUlimit limit)
{
    switch (limit) {
    case CU_LIMIT_STACK_SIZE: return LIMIT_STACK;
    case CU_LIMIT_PRINTF_FIFO_SIZE: return LIMIT_PRINTF;
    case CU_LIMIT_MALLOC_HEAP_SIZE: return LIMIT_HEAP;
    default: return -1;
    }
}

CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
    ENTER();
    CUcontext ctx = current_ctx();
    if (!ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    int k = limit_index(limit);
    if (k < 0)
        return limit <= CU_LIMIT_PERSISTING_L2_CACHE_SIZE ? CUDA_SUCCESS : CUDA_ERROR_UNSUPPORTED_LIMIT;
    size_t want[LIMITS];
    memcpy(want, ctx->limit, sizeof(want));
    want[k] = k == LIMIT_STACK ? (value + 15) / 16 * 16 : value; /* the driver rounds the stack up */
    CUresult rc = CUDA_SUCCESS;
    LOCK();
    unsigned long long now = limits_reserve(want);
    if (now > ctx->limit_charged && charge(ctx->device, now - ctx->limit_charged) != 0)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    else {
        if (now < ctx->limit_charged)
            uncharge(ctx->device, ctx->limit_charged - now);
        ctx->limit_charged = now;
        memcpy(ctx->limit, want, sizeof(want));
    }
    UNLOCK();
    return rc;
}

CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
    ENTER();
    CUcontext ctx = current_ctx();
    if (!pvalue)
        return CUDA_ERROR_INVALID_VALUE;
    if (!ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    int k = limit_index(limit);
    *pvalue = k < 0 ? 0 : ctx->limit[k] ? ctx->limit[k] : limit_default[k];
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void)
{
    ENTER();
    return ctx_synchronize(NULL);
}

CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    ENTER();
    return ctx_synchronize(ctx);
}

/* ------------------------------------------------------------------------ */
/* Allocation tracking                                                      */

enum alloc_kind {
    A_DEVICE,  /* cuMemAlloc*, cuMemAllocPitch*, cuMemAllocManaged */
    A_POOL,    /* stream-ordered allocation, belongs to a pool */
    A_HOST,    /* cuMemAllocHost: not device memory, not counted */
    A_RESERVE, /* cuMemAddressReserve: PROT_NONE address range */
    A_MAPPED,  /* cuMemMap: part of a reservation backed by a handle */
    A_REGISTERED, /* cuMemHostRegister: the caller's memory, not counted */
};

struct CUmemPoolHandle_st;
struct vmm_handle;

struct alloc {
    uintptr_t base;
    size_t size;
    int dev;
    enum alloc_kind kind;
    struct CUmemPoolHandle_st *pool;
    struct vmm_handle *handle;
    struct CUctx_st *ctx; /* A_DEVICE: the context it was made in; freed with it */
    struct alloc *next;
};

static struct alloc *g_allocs; /* under g_lock */

#define GRANULARITY (2ULL << 20)

static void *map_bytes(size_t size, int prot, int low32)
{
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
#ifdef MAP_32BIT
    if (low32)
        flags |= MAP_32BIT;
#else
    (void)low32;
#endif
    void *p = mmap(NULL, size, prot, flags, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static struct alloc *track(void *p, size_t size, int dev, enum alloc_kind kind,
                           struct CUmemPoolHandle_st *pool, struct vmm_handle *handle)
{
    struct alloc *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->base = (uintptr_t)p;
    a->size = size;
    a->dev = dev;
    a->kind = kind;
    a->pool = pool;
    a->handle = handle;
    LOCK();
    a->next = g_allocs;
    g_allocs = a;
    UNLOCK();
    return a;
}

/* Unlinks the record of a kind in mask starting exactly at base. */
static struct alloc *untrack_locked(uintptr_t base, unsigned kind_mask)
{
    for (struct alloc **pp = &g_allocs; *pp; pp = &(*pp)->next) {
        struct alloc *a = *pp;
        if (a->base == base && (kind_mask & (1u << a->kind))) {
            *pp = a->next;
            return a;
        }
    }
    return NULL;
}

static struct alloc *find_containing_locked(uintptr_t p, size_t n, unsigned kind_mask)
{
    for (struct alloc *a = g_allocs; a; a = a->next)
        if ((kind_mask & (1u << a->kind)) && p >= a->base && n <= a->size &&
            p - a->base <= a->size - n)
            return a;
    return NULL;
}

#define ACCESSIBLE ((1u << A_DEVICE) | (1u << A_POOL) | (1u << A_HOST) | (1u << A_MAPPED) | (1u << A_REGISTERED))

/* Whether [p, p+n) lies inside memory the fake handed out. */
static int range_ok(CUdeviceptr p, size_t n)
{
    if (!p)
        return 0;
    LOCK();
    int ok = find_containing_locked((uintptr_t)p, n ? n : 1, ACCESSIBLE) != NULL;
    UNLOCK();
    return ok;
}

/*
 * Freed device mappings of up to 64 MiB, kept for an allocation of the same
 * size: a real driver hands freed addresses out again, and an alloc+free
 * benchmark then measures the driver's bookkeeping, not mmap.  Guarded by
 * g_lock.
 */
#define SPARE_MAPPINGS 32
#define SPARE_MAX_BYTES (64u << 20)
static struct {
    void *p;
    size_t size;
} g_spare[SPARE_MAPPINGS];
static int g_nspare;

static void *spare_take(size_t size, int low32)
{
    void *p = NULL;
    LOCK();
    for (int i = 0; i < g_nspare && !p; i++)
        if (g_spare[i].size == size && (!low32 || (uintptr_t)g_spare[i].p + size <= 0xffffffffu)) {
            p = g_spare[i].p;
            g_spare[i] = g_spare[--g_nspare];
        }
    UNLOCK();
    return p;
}

static void unmap_or_keep(void *p, size_t size)
{
    LOCK();
    int kept = size <= SPARE_MAX_BYTES && g_nspare < SPARE_MAPPINGS;
    if (kept)
        g_spare[g_nspare++] = (__typeof__(g_spare[0])){ p, size };
    UNLOCK();
    if (!kept)
        munmap(p, size);
}

static CUresult device_alloc(CUdeviceptr *dptr, size_t size, int dev, int low32)
{
    if (!dptr || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (charge(dev, size) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    void *p = spare_take(size, low32);
    if (!p)
        p = map_bytes(size, PROT_READ | PROT_WRITE, low32);
    struct alloc *a = p ? track(p, size, dev, A_DEVICE, NULL, NULL) : NULL;
    if (!a) {
        if (p)
            munmap(p, size);
        uncharge(dev, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    a->ctx = current_ctx();
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

/* A context is gone: what was allocated in it goes too, as the driver frees
 * it.  Called with g_lock held. */
static void free_context_allocs_locked(struct CUctx_st *ctx)
{
    for (struct alloc **pp = &g_allocs; *pp;) {
        struct alloc *a = *pp;
        if (a->kind != A_DEVICE || a->ctx != ctx) {
            pp = &a->next;
            continue;
        }
        *pp = a->next;
        uncharge(a->dev, a->size);
        munmap((void *)a->base, a->size);
        free(a);
    }
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    ENTER();
    return device_alloc(dptr, bytesize, current_device(), 0);
}

CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
    ENTER();
    if (!dptr)
        return CUDA_ERROR_INVALID_VALUE;
    CUdeviceptr p = 0;
    CUresult rc = device_alloc(&p, bytesize, current_device(), 1);
    if (rc == CUDA_SUCCESS)
        *dptr = (CUdeviceptr_v1)p;
    return rc;
}

static CUresult alloc_pitch(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                            unsigned elem)
{
    if (!dptr || !pitch || width == 0 || height == 0 || (elem != 4 && elem != 8 && elem != 16))
        return CUDA_ERROR_INVALID_VALUE;
    size_t p = (width + 511) & ~(size_t)511;
    if (height > SIZE_MAX / p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = device_alloc(dptr, p * height, current_device(), 0);
    if (rc == CUDA_SUCCESS)
        *pitch = p;
    return rc;
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes)
{
    ENTER();
    return alloc_pitch(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
}

CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch, unsigned int WidthInBytes,
                         unsigned int Height, unsigned int ElementSizeBytes)
{
    ENTER();
    if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0 ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
        return CUDA_ERROR_INVALID_VALUE;
    size_t pitch = ((size_t)WidthInBytes + 511) & ~(size_t)511;
    CUdeviceptr p = 0;
    CUresult rc = device_alloc(&p, pitch * Height, current_device(), 1);
    if (rc == CUDA_SUCCESS) {
        *dptr = (CUdeviceptr_v1)p;
        *pPitch = (unsigned int)pitch;
    }
    return rc;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    ENTER();
    (void)flags;
    return device_alloc(dptr, bytesize, current_device(), 0);
}

static void pool_return_block(struct alloc *a); /* with the pools */

/* Called once the kernels that might use ptr are done. */
static CUresult mem_free(CUdeviceptr ptr)
{
    if (!ptr)
        return CUDA_SUCCESS;
    LOCK();
    struct alloc *a = untrack_locked((uintptr_t)ptr, (1u << A_DEVICE) | (1u << A_POOL));
    UNLOCK();
    if (!a)
        return CUDA_ERROR_INVALID_VALUE;
    if (a->kind == A_POOL) {
        munmap((void *)a->base, a->size);
        pool_return_block(a);
    } else {
        unmap_or_keep((void *)a->base, a->size);
        uncharge(a->dev, a->size);
    }
    free(a);
    return CUDA_SUCCESS;
}

/* As the driver's, a synchronous free waits for the device. */
CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    ENTER();
    fake_timeline_drain_all();
    return mem_free(dptr);
}

CUresult cuMemFree(CUdeviceptr_v1 dptr)
{
    ENTER();
    fake_timeline_drain_all();
    return mem_free(dptr);
}

static CUresult mem_info(unsigned long long *free_b, unsigned long long *total)
{
    int dev = current_device();
    if (dev < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    unsigned long long t = total_memory();
    unsigned long long used = fakegpu_state_device_used(phys(dev));
    *total = t;
    *free_b = used < t ? t - used : 0;
    return CUDA_SUCCESS;
}

CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
    ENTER();
    if (!free || !total)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned long long f, t;
    CUresult rc = mem_info(&f, &t);
    if (rc == CUDA_SUCCESS) {
        *free = (size_t)f;
        *total = (size_t)t;
    }
    return rc;
}

CUresult cuMemGetInfo(unsigned int *free, unsigned int *total)
{
    ENTER();
    if (!free || !total)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned long long f, t;
    CUresult rc = mem_info(&f, &t);
    if (rc == CUDA_SUCCESS) {
        *free = f > UINT_MAX ? UINT_MAX : (unsigned int)f;
        *total = t > UINT_MAX ? UINT_MAX : (unsigned int)t;
    }
    return rc;
}

static CUresult alloc_host(void **pp, size_t size)
{
    if (!pp || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    void *p = map_bytes(size, PROT_READ | PROT_WRITE, 0);
    if (!p || !track(p, size, -1, A_HOST, NULL, NULL)) {
        if (p)
            munmap(p, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *pp = p;
    return CUDA_SUCCESS;
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    ENTER();
    return alloc_host(pp, bytesize);
}

CUresult cuMemAllocHost(void **pp, unsigned int bytesize)
{
    ENTER();
    return alloc_host(pp, bytesize);
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    ENTER();
    (void)Flags; /* host memory either way: the fake's device reads any */
    return alloc_host(pp, bytesize);
}

CUresult cuMemFreeHost(void *p)
{
    ENTER();
    LOCK();
    struct alloc *a = untrack_locked((uintptr_t)p, 1u << A_HOST);
    UNLOCK();
    if (!a)
        return CUDA_ERROR_INVALID_VALUE;
    munmap((void *)a->base, a->size);
    free(a);
    return CUDA_SUCCESS;
}

/* Registered host memory: remembered, so that a range is registered once
 * and unregistered once, as the driver's is; the fake copies from and to
 * any host memory alike.  The driver wants a context current. */
CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    ENTER();
    (void)Flags;
    if (!p || !bytesize)
        return CUDA_ERROR_INVALID_VALUE;
    if (fake_current_device() < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    LOCK();
    int known = find_containing_locked((uintptr_t)p, 1, 1u << A_REGISTERED) != NULL;
    UNLOCK();
    if (known)
        return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    return track(p, bytesize, -1, A_REGISTERED, NULL, NULL) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
    return cuMemHostRegister_v2(p, bytesize, Flags);
}

/* Page-locked or registered host memory's device view: its own address,
 * as with unified addressing. */
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    ENTER();
    if (!pdptr || Flags)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    int known = find_containing_locked((uintptr_t)p, 1, (1u << A_REGISTERED) | (1u << A_HOST)) != NULL;
    UNLOCK();
    if (!known)
        return CUDA_ERROR_INVALID_VALUE;
    *pdptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

CUresult cuMemHostUnregister(void *p)
{
    ENTER();
    LOCK();
    struct alloc *a = untrack_locked((uintptr_t)p, 1u << A_REGISTERED);
    UNLOCK();
    free(a);
    return a ? CUDA_SUCCESS : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

static CUresult address_range(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    LOCK();
    struct alloc *a = find_containing_locked((uintptr_t)dptr, 1, ACCESSIBLE);
    uintptr_t base = a ? a->base : 0;
    size_t size = a ? a->size : 0;
    UNLOCK();
    if (!a)
        return CUDA_ERROR_NOT_FOUND;
    if (pbase)
        *pbase = (CUdeviceptr)base;
    if (psize)
        *psize = size;
    return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    ENTER();
    return address_range(pbase, psize, dptr);
}

/* A pointer's attributes: for device memory (cuMemAlloc*, a pool's) its
 * type, device, context and range; for page-locked host memory its type
 * and range; for any other pointer zeros.  Unknown attributes:
 * INVALID_VALUE. */
static CUresult pointer_attribute(CUpointer_attribute attr, CUdeviceptr ptr, void *data, int single)
{
    LOCK();
    struct alloc *a = find_containing_locked((uintptr_t)ptr, 1, ACCESSIBLE);
    struct alloc copy = a ? *a : (struct alloc){ 0 };
    UNLOCK();
    if (single && !a)
        return CUDA_ERROR_INVALID_VALUE;
    int device = a && copy.kind != A_HOST;
    unsigned u = 0;
    unsigned long long w = 0;
    int wide = 0;
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        u = !a ? 0 : device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        u = device ? (unsigned)copy.dev : (unsigned)-1;
        break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        break;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        u = a != NULL;
        break;
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        wide = 1, w = (uintptr_t)(device ? copy.ctx : NULL);
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        wide = 1, w = a ? ptr : 0;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        wide = 1, w = copy.base;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        wide = 1, w = copy.size;
        break;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (wide)
        memcpy(data, &w, sizeof(w));
    else
        memcpy(data, &u, sizeof(u));
    return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    ENTER();
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    return pointer_attribute(attribute, ptr, data, 1);
}

CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes, void **data,
                                CUdeviceptr ptr)
{
    ENTER();
    if (!numAttributes || !attributes || !data)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < numAttributes; i++) {
        CUresult rc = data[i] ? pointer_attribute(attributes[i], ptr, data[i], 0) : CUDA_SUCCESS;
        if (rc != CUDA_SUCCESS)
            return rc;
    }
    return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange(CUdeviceptr_v1 *pbase, unsigned int *psize, CUdeviceptr_v1 dptr)
{
    ENTER();
    CUdeviceptr b;
    size_t s;
    CUresult rc = address_range(&b, &s, dptr);
    if (rc == CUDA_SUCCESS) {
        if (pbase)
            *pbase = (CUdeviceptr_v1)b;
        if (psize)
            *psize = s > UINT_MAX ? UINT_MAX : (unsigned int)s;
    }
    return rc;
}

/* ---- copies and memset: device pointers are host addresses ----
 * The synchronous ones wait for everything queued on the devices first (the
 * legacy stream they run on waits for every other stream). */

static CUresult copy_htod(CUdeviceptr dst, const void *src, size_t n)
{
    if (n == 0)
        return CUDA_SUCCESS;
    if (!src || !range_ok(dst, n))
        return CUDA_ERROR_INVALID_VALUE;
    memcpy((void *)(uintptr_t)dst, src, n);
    return CUDA_SUCCESS;
}

static CUresult copy_dtoh(void *dst, CUdeviceptr src, size_t n)
{
    if (n == 0)
        return CUDA_SUCCESS;
    if (!dst || !range_ok(src, n))
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}

static CUresult copy_dtod(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    if (n == 0)
        return CUDA_SUCCESS;
    if (!range_ok(dst, n) || !range_ok(src, n))
        return CUDA_ERROR_INVALID_VALUE;
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}

static CUresult set_d8(CUdeviceptr dst, unsigned char v, size_t n)
{
    if (n == 0)
        return CUDA_SUCCESS;
    if (!range_ok(dst, n))
        return CUDA_ERROR_INVALID_VALUE;
    memset((void *)(uintptr_t)dst, v, n);
    return CUDA_SUCCESS;
}

static CUresult set_d32(CUdeviceptr dst, unsigned int v, size_t n)
{
    if (n == 0)
        return CUDA_SUCCESS;
    if ((dst & 3) || n > SIZE_MAX / 4 || !range_ok(dst, n * 4))
        return CUDA_ERROR_INVALID_VALUE;
    unsigned int *p = (unsigned int *)(uintptr_t)dst;
    for (size_t i = 0; i < n; i++)
        p[i] = v;
    return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    ENTER();
    fake_timeline_drain_all();
    return copy_htod(dstDevice, srcHost, ByteCount);
}

CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    ENTER();
    fake_timeline_drain_all();
    return copy_htod(dstDevice, srcHost, ByteCount);
}

CUresult cuMemcpyHtoD(CUdeviceptr_v1 dstDevice, const void *srcHost, unsigned int ByteCount)
{
    ENTER();
    fake_timeline_drain_all();
    return copy_htod(dstDevice, srcHost, ByteCount);
}

CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    ENTER();
    fake_timeline_drain_all();
    return copy_dtoh(dstHost, srcDevice, ByteCount);
}

CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    ENTER();
    fake_timeline_drain_all();
    return copy_dtoh(dstHost, srcDevice, ByteCount);
}

CUresult cuMemcpyDtoH(void *dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount)
{
    ENTER();
    fake_timeline_drain_all();
    return copy_dtoh(dstHost, srcDevice, ByteCount);
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    ENTER();
    fake_timeline_drain_all();
    return copy_dtod(dstDevice, srcDevice, ByteCount);
}

CUresult cuMemcpyDtoD(CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice, unsigned int ByteCount)
{
    ENTER();
    fake_timeline_drain_all();
    return copy_dtod(dstDevice, srcDevice, ByteCount);
}

/* Unified addressing: either side may be host memory. */
static CUresult copy_any(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    if (n == 0)
        return CUDA_SUCCESS;
    if (!dst || !src)
        return CUDA_ERROR_INVALID_VALUE;
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    ENTER();
    fake_timeline_drain_all();
    return copy_any(dst, src, ByteCount);
}

CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    ENTER();
    fake_timeline_drain_all();
    return set_d8(dstDevice, uc, N);
}

CUresult cuMemsetD8(CUdeviceptr_v1 dstDevice, unsigned char uc, unsigned int N)
{
    ENTER();
    fake_timeline_drain_all();
    return set_d8(dstDevice, uc, N);
}

CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    ENTER();
    fake_timeline_drain_all();
    return set_d32(dstDevice, ui, N);
}

CUresult cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    ENTER();
    fake_timeline_drain_all();
    return set_d32(dstDevice, ui, N);
}

CUresult cuMemsetD32(CUdeviceptr_v1 dstDevice, unsigned int ui, unsigned int N)
{
    ENTER();
    fake_timeline_drain_all();
    return set_d32(dstDevice, ui, N);
}

/* 2D memsets of bytes, row by row. */
CUresult cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height)
{
    ENTER();
    fake_timeline_drain_all();
    for (size_t y = 0; y < Height; y++) {
        CUresult r = set_d8(dstDevice + y * dstPitch, uc, Width);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}

/* Stream-ordered copies and memsets are done by the host at once, after
 * what their stream queued before them: later work on the stream is queued
 * after the call returns, so stream order holds. */
static CUresult htod_async(int ptsz, CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
    CUresult rc = fake_stream_before_host_op(s, ptsz);
    return rc == CUDA_SUCCESS ? copy_htod(dst, src, n) : rc;
}

static CUresult dtoh_async(int ptsz, void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    CUresult rc = fake_stream_before_host_op(s, ptsz);
    return rc == CUDA_SUCCESS ? copy_dtoh(dst, src, n) : rc;
}

static CUresult dtod_async(int ptsz, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    CUresult rc = fake_stream_before_host_op(s, ptsz);
    return rc == CUDA_SUCCESS ? copy_dtod(dst, src, n) : rc;
}

static CUresult any_async(int ptsz, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    CUresult rc = fake_stream_before_host_op(s, ptsz);
    return rc == CUDA_SUCCESS ? copy_any(dst, src, n) : rc;
}

static CUresult d8_async(int ptsz, CUdeviceptr dst, unsigned char v, size_t n, CUstream s)
{
    CUresult rc = fake_stream_before_host_op(s, ptsz);
    return rc == CUDA_SUCCESS ? set_d8(dst, v, n) : rc;
}

static CUresult d32_async(int ptsz, CUdeviceptr dst, unsigned int v, size_t n, CUstream s)
{
    CUresult rc = fake_stream_before_host_op(s, ptsz);
    return rc == CUDA_SUCCESS ? set_d32(dst, v, n) : rc;
}

WITH_PTSZ(cuMemcpyHtoDAsync_v2, htod_async,
          (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream),
          dstDevice, srcHost, ByteCount, hStream)
WITH_PTSZ(cuMemcpyDtoHAsync_v2, dtoh_async,
          (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),
          dstHost, srcDevice, ByteCount, hStream)
WITH_PTSZ(cuMemcpyDtoDAsync_v2, dtod_async,
          (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),
          dstDevice, srcDevice, ByteCount, hStream)
WITH_PTSZ(cuMemcpyAsync, any_async, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream),
          dst, src, ByteCount, hStream)
WITH_PTSZ(cuMemsetD8Async, d8_async, (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream),
          dstDevice, uc, N, hStream)
WITH_PTSZ(cuMemsetD32Async, d32_async, (CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream),
          dstDevice, ui, N, hStream)

/* 2D copies between host memory and device addresses, row by row; arrays
 * and unified addresses are not emulated (CUDA_ERROR_NOT_SUPPORTED).  A
 * pitch shorter than the width is refused, as the driver refuses it. */
static CUresult copy_2d(const CUDA_MEMCPY2D *c)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    if (!c->WidthInBytes || !c->Height)
        return CUDA_SUCCESS;
    int sh = c->srcMemoryType == CU_MEMORYTYPE_HOST, dh = c->dstMemoryType == CU_MEMORYTYPE_HOST;
    if ((!sh && c->srcMemoryType != CU_MEMORYTYPE_DEVICE) || (!dh && c->dstMemoryType != CU_MEMORYTYPE_DEVICE))
        return CUDA_ERROR_NOT_SUPPORTED;
    if (c->srcPitch < c->WidthInBytes || c->dstPitch < c->WidthInBytes)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t y = 0; y < c->Height; y++) {
        size_t so = (c->srcY + y) * c->srcPitch + c->srcXInBytes, d = (c->dstY + y) * c->dstPitch + c->dstXInBytes;
        const char *sp = sh ? (const char *)c->srcHost + so : NULL;
        char *dp = dh ? (char *)c->dstHost + d : NULL;
        CUresult r;
        if (sh && dh)
            r = (memmove(dp, sp, c->WidthInBytes), CUDA_SUCCESS);
        else if (sh)
            r = copy_htod(c->dstDevice + d, sp, c->WidthInBytes);
        else if (dh)
            r = copy_dtoh(dp, c->srcDevice + so, c->WidthInBytes);
        else
            r = copy_dtod(c->dstDevice + d, c->srcDevice + so, c->WidthInBytes);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}

CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy)
{
    ENTER();
    fake_timeline_drain_all();
    return copy_2d(pCopy);
}

CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *pCopy)
{
    ENTER();
    fake_timeline_drain_all();
    return copy_2d(pCopy);
}

static CUresult copy_2d_async(int ptsz, const CUDA_MEMCPY2D *c, CUstream s)
{
    CUresult rc = fake_stream_before_host_op(s, ptsz);
    return rc == CUDA_SUCCESS ? copy_2d(c) : rc;
}

WITH_PTSZ(cuMemcpy2DAsync_v2, copy_2d_async, (const CUDA_MEMCPY2D *pCopy, CUstream hStream), pCopy, hStream)

/* ------------------------------------------------------------------------ */
/* Stream-ordered allocation and memory pools                               */
/*
 * A pool's reserved memory = used (live blocks) + cached (freed blocks it
 * keeps). Both are charged to the device. A freed block's bytes stay cached
 * until cuMemPoolTrimTo or a synchronisation trims the pool down to its
 * release threshold; new allocations reuse cached bytes first.
 */

#define POOL_MAGIC 0x4c4f4f50u /* "POOL" */

struct CUmemPoolHandle_st {
    unsigned magic;
    int alive;
    int is_default;
    int dev;
    unsigned long long threshold;
    unsigned long long used, cached;
    unsigned long long used_high, reserved_high;
    struct CUmemPoolHandle_st *next;
};

static struct CUmemPoolHandle_st g_default_pools[FAKEGPU_MAX_DEVICES];
static struct CUmemPoolHandle_st *g_device_pool[FAKEGPU_MAX_DEVICES]; /* NULL = default */
static struct CUmemPoolHandle_st *g_pools;                            /* created ones */

static struct CUmemPoolHandle_st *default_pool_locked(int dev)
{
    struct CUmemPoolHandle_st *p = &g_default_pools[dev];
    if (p->magic != POOL_MAGIC) {
        p->magic = POOL_MAGIC;
        p->alive = 1;
        p->is_default = 1;
        p->dev = dev;
    }
    return p;
}

static int pool_valid(struct CUmemPoolHandle_st *p)
{
    return p && p->magic == POOL_MAGIC && p->alive;
}

/* Called with g_lock held. */
static void pool_trim_locked(struct CUmemPoolHandle_st *p, unsigned long long keep)
{
    unsigned long long reserved = p->used + p->cached;
    if (reserved <= keep || p->cached == 0)
        return;
    unsigned long long release = reserved - keep;
    if (release > p->cached)
        release = p->cached;
    p->cached -= release;
    uncharge(p->dev, release);
}

void fake_trim_pools(int dev)
{
    trim_pools_to_threshold(dev);
}

static void trim_pools_to_threshold(int dev)
{
    LOCK();
    for (int d = 0; d < FAKEGPU_MAX_DEVICES; d++)
        if ((dev < 0 || d == dev) && g_default_pools[d].magic == POOL_MAGIC)
            pool_trim_locked(&g_default_pools[d], g_default_pools[d].threshold);
    for (struct CUmemPoolHandle_st *p = g_pools; p; p = p->next)
        if (p->alive && (dev < 0 || p->dev == dev))
            pool_trim_locked(p, p->threshold);
    UNLOCK();
}

static void pool_return_block(struct alloc *a)
{
    struct CUmemPoolHandle_st *p = a->pool;
    LOCK();
    p->used -= a->size < p->used ? a->size : p->used;
    if (p->alive)
        p->cached += a->size;
    else
        uncharge(p->dev, a->size);
    UNLOCK();
}

static CUresult pool_alloc(CUdeviceptr *dptr, size_t size, struct CUmemPoolHandle_st *p)
{
    if (!dptr || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    if (!pool_valid(p)) {
        UNLOCK();
        return CUDA_ERROR_INVALID_VALUE;
    }
    unsigned long long reuse = p->cached < size ? p->cached : size;
    if (charge(p->dev, size - reuse) != 0) {
        UNLOCK();
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    p->cached -= reuse;
    p->used += size;
    if (p->used > p->used_high)
        p->used_high = p->used;
    if (p->used + p->cached > p->reserved_high)
        p->reserved_high = p->used + p->cached;
    UNLOCK();

    void *mem = map_bytes(size, PROT_READ | PROT_WRITE, 0);
    if (!mem || !track(mem, size, p->dev, A_POOL, p, NULL)) {
        if (mem)
            munmap(mem, size);
        LOCK();
        p->used -= size;
        p->cached += reuse;
        UNLOCK();
        uncharge(p->dev, size - reuse);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *dptr = (CUdeviceptr)(uintptr_t)mem;
    return CUDA_SUCCESS;
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t size, CUstream s)
{
    int dev = fake_stream_device(s);
    if (dev < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    LOCK();
    struct CUmemPoolHandle_st *p = g_device_pool[dev] ? g_device_pool[dev] : default_pool_locked(dev);
    UNLOCK();
    return pool_alloc(dptr, size, p);
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    ENTER();
    return alloc_async(dptr, bytesize, hStream);
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    ENTER();
    return alloc_async(dptr, bytesize, hStream);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                 CUstream hStream)
{
    ENTER();
    (void)hStream;
    return pool_alloc(dptr, bytesize, pool);
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream)
{
    ENTER();
    (void)hStream;
    return pool_alloc(dptr, bytesize, pool);
}

/* After what the stream queued: no kernel of it may still use the block. */
static CUresult free_async(int ptsz, CUdeviceptr dptr, CUstream s)
{
    CUresult rc = fake_stream_before_host_op(s, ptsz);
    return rc == CUDA_SUCCESS ? mem_free(dptr) : rc;
}

WITH_PTSZ(cuMemFreeAsync, free_async, (CUdeviceptr dptr, CUstream hStream), dptr, hStream)

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    ENTER();
    if (!pool || !poolProps || poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(poolProps->location.id))
        return CUDA_ERROR_INVALID_DEVICE;
    struct CUmemPoolHandle_st *p = calloc(1, sizeof *p);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    p->magic = POOL_MAGIC;
    p->alive = 1;
    p->dev = poolProps->location.id;
    LOCK();
    p->next = g_pools;
    g_pools = p;
    UNLOCK();
    *pool = p;
    return CUDA_SUCCESS;
}

CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    ENTER();
    LOCK();
    CUresult rc = CUDA_SUCCESS;
    if (!pool_valid(pool) || pool->is_default) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else {
        pool_trim_locked(pool, 0);
        pool->alive = 0; /* stays allocated: live blocks still point at it */
        for (int d = 0; d < FAKEGPU_MAX_DEVICES; d++)
            if (g_device_pool[d] == pool)
                g_device_pool[d] = NULL;
    }
    UNLOCK();
    return rc;
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    ENTER();
    LOCK();
    CUresult rc = pool_valid(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS)
        pool_trim_locked(pool, minBytesToKeep);
    UNLOCK();
    return rc;
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    ENTER();
    if (!pool_out)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    LOCK();
    *pool_out = default_pool_locked(dev);
    UNLOCK();
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    ENTER();
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    LOCK();
    *pool = g_device_pool[dev] ? g_device_pool[dev] : default_pool_locked(dev);
    UNLOCK();
    return CUDA_SUCCESS;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    ENTER();
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult rc = pool_valid(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) {
        switch (attr) {
        case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
            pool->threshold = *(cuuint64_t *)value;
            break;
        case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
            pool->used_high = pool->used;
            break;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
            pool->reserved_high = pool->used + pool->cached;
            break;
        case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
            break;
        default:
            rc = CUDA_ERROR_INVALID_VALUE;
            break;
        }
    }
    UNLOCK();
    return rc;
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    ENTER();
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    /* What a pool holds now is not a capture's to say: on the H100 (r580) a
     * capture of a cuMemAllocAsync broke when vgpu read the pool's
     * reserve around it, and held without those reads. */
    if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT || attr == CU_MEMPOOL_ATTR_USED_MEM_CURRENT) {
        CUresult unsafe = fake_capture_unsafe_call();
        if (unsafe != CUDA_SUCCESS)
            return unsafe;
    }
    LOCK();
    CUresult rc = pool_valid(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) {
        switch (attr) {
        case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
            *(cuuint64_t *)value = pool->threshold;
            break;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
            *(cuuint64_t *)value = pool->used + pool->cached;
            break;
        case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
            *(cuuint64_t *)value = pool->used;
            break;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
            *(cuuint64_t *)value = pool->reserved_high;
            break;
        case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
            *(cuuint64_t *)value = pool->used_high;
            break;
        case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
            *(int *)value = 1;
            break;
        default:
            rc = CUDA_ERROR_INVALID_VALUE;
            break;
        }
    }
    UNLOCK();
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Virtual memory management                                                */

#define VMM_MAGIC 0x484d4d56u /* "VMMH" */

struct vmm_handle {
    unsigned magic;
    int alive;
    size_t size;
    int dev;
    CUmemAllocationProp prop;
};

static struct vmm_handle *vmm_get(CUmemGenericAllocationHandle h)
{
    struct vmm_handle *v = (struct vmm_handle *)(uintptr_t)h;
    return v && v->magic == VMM_MAGIC && __atomic_load_n(&v->alive, __ATOMIC_ACQUIRE) ? v : NULL;
}

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option)
{
    ENTER();
    (void)option;
    if (!granularity || !prop)
        return CUDA_ERROR_INVALID_VALUE;
    *granularity = GRANULARITY;
    return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long flags)
{
    ENTER();
    (void)flags;
    /* Device memory is charged to its device; host memory (a host location)
     * to no device. */
    int host = prop && prop->location.type == CU_MEM_LOCATION_TYPE_HOST;
    if (!handle || !prop || size == 0 || size % GRANULARITY != 0 ||
        (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE && !host))
        return CUDA_ERROR_INVALID_VALUE;
    if (!host && !valid_device(prop->location.id))
        return CUDA_ERROR_INVALID_DEVICE;
    struct vmm_handle *v = calloc(1, sizeof *v);
    if (!v)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (!host && charge(prop->location.id, size) != 0) {
        free(v);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    v->magic = VMM_MAGIC;
    v->alive = 1;
    v->size = size;
    v->dev = host ? -1 : prop->location.id;
    v->prop = *prop;
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)v;
    return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    ENTER();
    struct vmm_handle *v = vmm_get(handle);
    if (!v || !__atomic_exchange_n(&v->alive, 0, __ATOMIC_ACQ_REL))
        return CUDA_ERROR_INVALID_VALUE;
    if (v->dev >= 0)
        uncharge(v->dev, v->size); /* the handle object is kept: stale use is detected */
    return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags)
{
    ENTER();
    (void)addr;
    (void)flags;
    if (!ptr || size == 0 || size % GRANULARITY != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (alignment < GRANULARITY)
        alignment = GRANULARITY;
    if (alignment & (alignment - 1))
        return CUDA_ERROR_INVALID_VALUE;
    size_t span = size + alignment;
    uint8_t *raw = map_bytes(span, PROT_NONE, 0);
    if (!raw)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uintptr_t base = ((uintptr_t)raw + alignment - 1) & ~(uintptr_t)(alignment - 1);
    if (base > (uintptr_t)raw)
        munmap(raw, base - (uintptr_t)raw);
    uintptr_t end = (uintptr_t)raw + span;
    if (end > base + size)
        munmap((void *)(base + size), end - (base + size));
    if (!track((void *)base, size, -1, A_RESERVE, NULL, NULL)) {
        munmap((void *)base, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *ptr = (CUdeviceptr)base;
    return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    ENTER();
    fake_timeline_drain_all(); /* no queued kernel may touch the range after */
    LOCK();
    struct alloc *a = untrack_locked((uintptr_t)ptr, 1u << A_RESERVE);
    if (a && a->size != size) {
        a->next = g_allocs; /* wrong size: put it back */
        g_allocs = a;
        a = NULL;
    }
    /* Mappings left inside the range go with it. */
    for (struct alloc **pp = &g_allocs; a && *pp;) {
        struct alloc *m = *pp;
        if (m->kind == A_MAPPED && m->base >= a->base && m->base < a->base + a->size) {
            *pp = m->next;
            free(m);
        } else {
            pp = &m->next;
        }
    }
    UNLOCK();
    if (!a)
        return CUDA_ERROR_INVALID_VALUE;
    munmap((void *)a->base, a->size);
    free(a);
    return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags)
{
    ENTER();
    (void)flags;
    struct vmm_handle *v = vmm_get(handle);
    if (!v || size == 0 || offset > v->size || size > v->size - offset)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    int ok = find_containing_locked((uintptr_t)ptr, size, 1u << A_RESERVE) != NULL &&
             find_containing_locked((uintptr_t)ptr, 1, 1u << A_MAPPED) == NULL;
    UNLOCK();
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    if (mprotect((void *)(uintptr_t)ptr, size, PROT_READ | PROT_WRITE) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!track((void *)(uintptr_t)ptr, size, v->dev, A_MAPPED, NULL, v))
        return CUDA_ERROR_OUT_OF_MEMORY;
    return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    ENTER();
    fake_timeline_drain_all(); /* no queued kernel may touch the range after */
    LOCK();
    struct alloc *a = untrack_locked((uintptr_t)ptr, 1u << A_MAPPED);
    UNLOCK();
    if (!a)
        return CUDA_ERROR_INVALID_VALUE;
    (void)size;
    /* Drop the contents and make the range inaccessible again. */
    mmap((void *)a->base, a->size, PROT_NONE,
         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    free(a);
    return CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    ENTER();
    if (!desc || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    int ok = find_containing_locked((uintptr_t)ptr, size, 1u << A_RESERVE) != NULL &&
             find_containing_locked((uintptr_t)ptr, 1, 1u << A_MAPPED) != NULL;
    UNLOCK();
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
                                                CUmemGenericAllocationHandle handle)
{
    ENTER();
    struct vmm_handle *v = vmm_get(handle);
    if (!prop || !v)
        return CUDA_ERROR_INVALID_VALUE;
    *prop = v->prop;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Arrays                                                                   */

#define ARRAY_MAGIC 0x59415241u /* "ARAY" */

struct CUarray_st {
    unsigned magic;
    int alive;
    int dev;
    unsigned long long bytes;
    CUDA_ARRAY3D_DESCRIPTOR desc;
};

struct CUmipmappedArray_st {
    unsigned magic;
    int alive;
    int dev;
    unsigned long long bytes;
};

static unsigned format_bytes(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 2;
    default:
        return 4;
    }
}

static unsigned long long level_bytes(size_t w, size_t h, size_t d, const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
    return (unsigned long long)w * (h ? h : 1) * (d ? d : 1) * desc->NumChannels *
           format_bytes(desc->Format);
}

static CUresult array_create(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
    if (!pHandle || !desc || desc->Width == 0 || desc->NumChannels == 0 ||
        desc->NumChannels > 4)
        return CUDA_ERROR_INVALID_VALUE;
    int dev = current_device();
    if (dev < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    struct CUarray_st *a = calloc(1, sizeof *a);
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    a->bytes = level_bytes(desc->Width, desc->Height, desc->Depth, desc);
    if (charge(dev, a->bytes) != 0) {
        free(a);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    a->magic = ARRAY_MAGIC;
    a->alive = 1;
    a->dev = dev;
    a->desc = *desc;
    *pHandle = a;
    return CUDA_SUCCESS;
}

CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    ENTER();
    if (!pAllocateArray)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_ARRAY3D_DESCRIPTOR d = { .Width = pAllocateArray->Width, .Height = pAllocateArray->Height,
                                  .Format = pAllocateArray->Format,
                                  .NumChannels = pAllocateArray->NumChannels };
    return array_create(pHandle, &d);
}

CUresult cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR_v1 *pAllocateArray)
{
    ENTER();
    if (!pAllocateArray)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_ARRAY3D_DESCRIPTOR d = { .Width = pAllocateArray->Width, .Height = pAllocateArray->Height,
                                  .Format = pAllocateArray->Format,
                                  .NumChannels = pAllocateArray->NumChannels };
    return array_create(pHandle, &d);
}

CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    ENTER();
    return array_create(pHandle, pAllocateArray);
}

CUresult cuArray3DCreate(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1 *pAllocateArray)
{
    ENTER();
    if (!pAllocateArray)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_ARRAY3D_DESCRIPTOR d = { .Width = pAllocateArray->Width, .Height = pAllocateArray->Height,
                                  .Depth = pAllocateArray->Depth, .Format = pAllocateArray->Format,
                                  .NumChannels = pAllocateArray->NumChannels,
                                  .Flags = pAllocateArray->Flags };
    return array_create(pHandle, &d);
}

static int array_valid(CUarray a)
{
    return a && a->magic == ARRAY_MAGIC && __atomic_load_n(&a->alive, __ATOMIC_ACQUIRE);
}

CUresult cuArrayDestroy(CUarray hArray)
{
    ENTER();
    if (!array_valid(hArray) || !__atomic_exchange_n(&hArray->alive, 0, __ATOMIC_ACQ_REL))
        return CUDA_ERROR_INVALID_HANDLE;
    uncharge(hArray->dev, hArray->bytes);
    return CUDA_SUCCESS;
}

CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR *pArrayDescriptor, CUarray hArray)
{
    ENTER();
    if (!pArrayDescriptor)
        return CUDA_ERROR_INVALID_VALUE;
    if (!array_valid(hArray))
        return CUDA_ERROR_INVALID_HANDLE;
    pArrayDescriptor->Width = hArray->desc.Width;
    pArrayDescriptor->Height = hArray->desc.Height;
    pArrayDescriptor->Format = hArray->desc.Format;
    pArrayDescriptor->NumChannels = hArray->desc.NumChannels;
    return CUDA_SUCCESS;
}

CUresult cuArrayGetDescriptor(CUDA_ARRAY_DESCRIPTOR_v1 *pArrayDescriptor, CUarray hArray)
{
    ENTER();
    if (!pArrayDescriptor)
        return CUDA_ERROR_INVALID_VALUE;
    if (!array_valid(hArray))
        return CUDA_ERROR_INVALID_HANDLE;
    pArrayDescriptor->Width = (unsigned int)hArray->desc.Width;
    pArrayDescriptor->Height = (unsigned int)hArray->desc.Height;
    pArrayDescriptor->Format = hArray->desc.Format;
    pArrayDescriptor->NumChannels = hArray->desc.NumChannels;
    return CUDA_SUCCESS;
}

CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                unsigned int numMipmapLevels)
{
    ENTER();
    const CUDA_ARRAY3D_DESCRIPTOR *d = pMipmappedArrayDesc;
    if (!pHandle || !d || d->Width == 0 || d->NumChannels == 0 || d->NumChannels > 4 ||
        numMipmapLevels == 0)
        return CUDA_ERROR_INVALID_VALUE;
    int dev = current_device();
    if (dev < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    unsigned long long bytes = 0;
    size_t w = d->Width, h = d->Height, z = d->Depth;
    for (unsigned i = 0; i < numMipmapLevels; i++) {
        bytes += level_bytes(w, h, z, d);
        w = w > 1 ? w / 2 : 1;
        h = h > 1 ? h / 2 : h; /* 0 (1D) stays 0, i.e. 1 */
        z = z > 1 ? z / 2 : z;
    }
    struct CUmipmappedArray_st *m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (charge(dev, bytes) != 0) {
        free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    m->magic = ARRAY_MAGIC;
    m->alive = 1;
    m->dev = dev;
    m->bytes = bytes;
    *pHandle = m;
    return CUDA_SUCCESS;
}

CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
    ENTER();
    struct CUmipmappedArray_st *m = hMipmappedArray;
    if (!m || m->magic != ARRAY_MAGIC || !__atomic_exchange_n(&m->alive, 0, __ATOMIC_ACQ_REL))
        return CUDA_ERROR_INVALID_HANDLE;
    uncharge(m->dev, m->bytes);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Modules, libraries, kernels                                              */
/*
 * A module image (or library file) is a NUL-terminated string starting with
 * "fakegpu". Every module holds the same built-in kernels. A CUkernel is the
 * same object as its CUfunction, so either is accepted by the launch calls.
 *
 * A launch copies the kernel's parameters (as the driver copies
 * kernelParams), checks them, and queues the kernel on its stream: it runs
 * later, on the device timeline.  A fault the device would meet (an address
 * outside every allocation) is returned by the launch itself, at once.
 */

#define MODULE_MAGIC 0x444f4d46u /* "FMOD" */
#define KERNEL_MAGIC 0x4e524b46u /* "FKRN" */
#define IMAGE_TAG "fakegpu"

struct CUfunc_st {
    unsigned magic;
    const char *name;
    unsigned nargs;
    unsigned char arg_size[FAKE_MAX_ARGS];
    CUresult (*check)(const unsigned long long *args); /* at launch; NULL: anything goes */
    void (*run)(const unsigned long long *args);       /* on the device; NULL: it only takes time */
    int timed; /* args[0] is its device time in ns; else it takes FAKEGPU_KERNEL_NS */
};

struct CUmod_st {
    unsigned magic;
    int alive;
};

struct CUlib_st {
    unsigned magic;
    int alive;
    struct CUmod_st module;
};

/* Argument i of a launch, as the kernel declares it. */
#define ARG(args, i, type) (*(const type *)(const void *)&(args)[i])

/* add_one(float *x, int n) and fill_u32(unsigned *x, unsigned v, int n): n elements of x. */
static CUresult check_elements(CUdeviceptr x, int n, size_t element)
{
    return n <= 0 || range_ok(x, (size_t)n * element) ? CUDA_SUCCESS : CUDA_ERROR_ILLEGAL_ADDRESS;
}

static CUresult check_add_one(const unsigned long long *args)
{
    return check_elements(ARG(args, 0, CUdeviceptr), ARG(args, 1, int), sizeof(float));
}

static void run_add_one(const unsigned long long *args)
{
    float *p = (float *)(uintptr_t)ARG(args, 0, CUdeviceptr);
    for (int i = 0; i < ARG(args, 1, int); i++)
        p[i] += 1.0f;
}

static CUresult check_fill_u32(const unsigned long long *args)
{
    return check_elements(ARG(args, 0, CUdeviceptr), ARG(args, 2, int), sizeof(unsigned));
}

static void run_fill_u32(const unsigned long long *args)
{
    unsigned *p = (unsigned *)(uintptr_t)ARG(args, 0, CUdeviceptr);
    for (int i = 0; i < ARG(args, 2, int); i++)
        p[i] = ARG(args, 1, unsigned);
}

static struct CUfunc_st g_kernels[] = {
    { KERNEL_MAGIC, "add_one", 2, { sizeof(CUdeviceptr), sizeof(int) }, check_add_one, run_add_one, 0 },
    { KERNEL_MAGIC, "fill_u32", 3, { sizeof(CUdeviceptr), sizeof(unsigned), sizeof(int) }, check_fill_u32,
      run_fill_u32, 0 },
    /* busy(unsigned long long ns): occupies the device for ns. */
    { KERNEL_MAGIC, "busy", 1, { sizeof(unsigned long long) }, NULL, NULL, 1 },
};
#define NKERNELS (sizeof g_kernels / sizeof g_kernels[0])

static const struct CUfunc_st *kernel_of(const void *handle)
{
    for (size_t i = 0; i < NKERNELS; i++)
        if (handle == &g_kernels[i])
            return &g_kernels[i];
    return NULL;
}

static struct CUfunc_st *kernel_by_name(const char *name)
{
    for (size_t i = 0; name && i < NKERNELS; i++)
        if (strcmp(g_kernels[i].name, name) == 0)
            return &g_kernels[i];
    return NULL;
}

static int image_ok(const void *image)
{
    return image && strncmp((const char *)image, IMAGE_TAG, strlen(IMAGE_TAG)) == 0;
}

static int module_valid(CUmodule m)
{
    return m && m->magic == MODULE_MAGIC && __atomic_load_n(&m->alive, __ATOMIC_ACQUIRE);
}

static CUresult module_load(CUmodule *module, const void *image)
{
    if (!module)
        return CUDA_ERROR_INVALID_VALUE;
    if (current_device() < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!image_ok(image))
        return CUDA_ERROR_INVALID_IMAGE;
    struct CUmod_st *m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    m->magic = MODULE_MAGIC;
    m->alive = 1;
    *module = m;
    return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    ENTER();
    return module_load(module, image);
}

/* The JIT's options as a driver answers them: the info log says what was
 * loaded, the error log why an image was not; the logs' sizes become what
 * was written, the wall time 1.5 ms, the threads a block 128. */
CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                            CUjit_option *options, void **optionValues)
{
    ENTER();
    if (numOptions && (!options || !optionValues))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = module_load(module, image);
    char *info = NULL, *error = NULL;
    size_t info_size = 0, error_size = 0;
    for (unsigned i = 0; i < numOptions; i++) {
        if (options[i] == CU_JIT_INFO_LOG_BUFFER)
            info = optionValues[i];
        else if (options[i] == CU_JIT_ERROR_LOG_BUFFER)
            error = optionValues[i];
        else if (options[i] == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
            info_size = (size_t)(uintptr_t)optionValues[i];
        else if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            error_size = (size_t)(uintptr_t)optionValues[i];
    }
    int wrote_info = 0, wrote_error = 0;
    if (info && info_size)
        wrote_info = snprintf(info, info_size, "fakegpu jit: %s", r == CUDA_SUCCESS ? "loaded" : "nothing");
    if (error && error_size && r != CUDA_SUCCESS)
        wrote_error = snprintf(error, error_size, "fakegpu jit: not an image (%d)", (int)r);
    for (unsigned i = 0; i < numOptions; i++) {
        if (options[i] == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
            optionValues[i] = (void *)(uintptr_t)(wrote_info > 0 ? (size_t)wrote_info + 1 : 0);
        else if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            optionValues[i] = (void *)(uintptr_t)(wrote_error > 0 ? (size_t)wrote_error + 1 : 0);
        else if (options[i] == CU_JIT_WALL_TIME) {
            float ms = 1.5f;
            memcpy(&optionValues[i], &ms, sizeof(ms));
        } else if (options[i] == CU_JIT_THREADS_PER_BLOCK)
            optionValues[i] = (void *)(uintptr_t)128;
    }
    return r;
}

CUresult cuModuleUnload(CUmodule hmod)
{
    ENTER();
    if (!module_valid(hmod) || !__atomic_exchange_n(&hmod->alive, 0, __ATOMIC_ACQ_REL))
        return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS; /* kept allocated: stale handles are detected */
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    ENTER();
    if (!hfunc || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!module_valid(hmod))
        return CUDA_ERROR_INVALID_HANDLE;
    struct CUfunc_st *k = kernel_by_name(name);
    if (!k)
        return CUDA_ERROR_NOT_FOUND;
    *hfunc = k;
    return CUDA_SUCCESS;
}

/* Parameter index of f: where it lies in the parameter buffer (each at its
 * natural alignment) and how long it is; past the last, INVALID_VALUE. */
CUresult cuFuncGetParamInfo(CUfunction f, size_t index, size_t *offset, size_t *size)
{
    ENTER();
    const struct CUfunc_st *k = kernel_of(f);
    if (!k)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!offset || !size || index >= k->nargs)
        return CUDA_ERROR_INVALID_VALUE;
    size_t at = 0;
    for (size_t i = 0;; i++) {
        at = (at + k->arg_size[i] - 1) / k->arg_size[i] * k->arg_size[i];
        if (i == index)
            break;
        at += k->arg_size[i];
    }
    *offset = at;
    *size = k->arg_size[index];
    return CUDA_SUCCESS;
}

/* A library's kernel is the fake's function itself (cuLibraryGetKernel). */
CUresult cuKernelGetParamInfo(CUkernel kernel, size_t index, size_t *offset, size_t *size)
{
    return cuFuncGetParamInfo((CUfunction)(void *)kernel, index, offset, size);
}

/* Libraries are context-independent: no current context needed. */
static CUresult library_new(CUlibrary *library, const void *code)
{
    if (!library)
        return CUDA_ERROR_INVALID_VALUE;
    if (!image_ok(code))
        return CUDA_ERROR_INVALID_IMAGE;
    struct CUlib_st *l = calloc(1, sizeof *l);
    if (!l)
        return CUDA_ERROR_OUT_OF_MEMORY;
    l->magic = MODULE_MAGIC;
    l->alive = 1;
    l->module.magic = MODULE_MAGIC;
    l->module.alive = 1;
    *library = l;
    return CUDA_SUCCESS;
}

CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                           void **jitOptionsValues, unsigned int numJitOptions,
                           CUlibraryOption *libraryOptions, void **libraryOptionValues,
                           unsigned int numLibraryOptions)
{
    ENTER();
    (void)jitOptions;
    (void)jitOptionsValues;
    (void)numJitOptions;
    (void)libraryOptions;
    (void)libraryOptionValues;
    (void)numLibraryOptions;
    return library_new(library, code);
}

CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
                               void **jitOptionsValues, unsigned int numJitOptions,
                               CUlibraryOption *libraryOptions, void **libraryOptionValues,
                               unsigned int numLibraryOptions)
{
    ENTER();
    (void)jitOptions;
    (void)jitOptionsValues;
    (void)numJitOptions;
    (void)libraryOptions;
    (void)libraryOptionValues;
    (void)numLibraryOptions;
    if (!library || !fileName)
        return CUDA_ERROR_INVALID_VALUE;
    int fd = open(fileName, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return CUDA_ERROR_FILE_NOT_FOUND;
    char buf[64] = { 0 };
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n < 0)
        return CUDA_ERROR_FILE_NOT_FOUND;
    return library_new(library, buf);
}

static int library_valid(CUlibrary l)
{
    return l && l->magic == MODULE_MAGIC && __atomic_load_n(&l->alive, __ATOMIC_ACQUIRE);
}

CUresult cuLibraryUnload(CUlibrary library)
{
    ENTER();
    if (!library_valid(library) || !__atomic_exchange_n(&library->alive, 0, __ATOMIC_ACQ_REL))
        return CUDA_ERROR_INVALID_HANDLE;
    __atomic_store_n(&library->module.alive, 0, __ATOMIC_RELEASE);
    return CUDA_SUCCESS;
}

CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    ENTER();
    if (!pKernel || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!library_valid(library))
        return CUDA_ERROR_INVALID_HANDLE;
    struct CUfunc_st *k = kernel_by_name(name);
    if (!k)
        return CUDA_ERROR_NOT_FOUND;
    *pKernel = (CUkernel)(void *)k;
    return CUDA_SUCCESS;
}

CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
    ENTER();
    if (!pMod)
        return CUDA_ERROR_INVALID_VALUE;
    if (!library_valid(library))
        return CUDA_ERROR_INVALID_HANDLE;
    if (current_device() < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    *pMod = &library->module;
    return CUDA_SUCCESS;
}

CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    ENTER();
    if (!pFunc)
        return CUDA_ERROR_INVALID_VALUE;
    const struct CUfunc_st *k = kernel_of(kernel);
    if (!k)
        return CUDA_ERROR_INVALID_HANDLE;
    if (current_device() < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    *pFunc = (CUfunction)k;
    return CUDA_SUCCESS;
}

/* Queues the kernel on stream s (see fake_streams.c); grid and block are
 * not modelled. */
static CUresult launch(CUfunction f, CUstream s, int ptsz, void **kernelParams, void **extra)
{
    const struct CUfunc_st *k = kernel_of(f);
    if (!k)
        return CUDA_ERROR_INVALID_HANDLE;
    if (current_device() < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!extra == !kernelParams)
        return CUDA_ERROR_INVALID_VALUE;
    /* extra: one buffer of the parameters, each at its offset (cuFuncGetParamInfo's). */
    const char *buffer = NULL;
    size_t buffer_size = 0;
    for (unsigned i = 0; extra && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            buffer = extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1])
            buffer_size = *(const size_t *)extra[i + 1];
        else
            return CUDA_ERROR_INVALID_VALUE;
    }
    if (extra && !buffer)
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_op op = { .run = k->run };
    for (unsigned i = 0; i < k->nargs; i++) {
        size_t offset = 0, size = 0;
        if (kernelParams) {
            memcpy(&op.args[i], kernelParams[i], k->arg_size[i]);
            continue;
        }
        cuFuncGetParamInfo(f, i, &offset, &size);
        if (offset + size > buffer_size)
            return CUDA_ERROR_INVALID_VALUE;
        memcpy(&op.args[i], buffer + offset, size);
    }
    CUresult rc = k->check ? k->check(op.args) : CUDA_SUCCESS;
    if (rc != CUDA_SUCCESS)
        return rc;
    op.ns = k->timed ? op.args[0] : fakegpu_config()->kernel_ns;
    return fake_stream_launch(s, ptsz, &op);
}

static CUresult launch_grid(int ptsz, CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                            unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                            unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                            void **kernelParams, void **extra)
{
    (void)gridDimX, (void)gridDimY, (void)gridDimZ, (void)blockDimX, (void)blockDimY,
        (void)blockDimZ, (void)sharedMemBytes;
    return launch(f, hStream, ptsz, kernelParams, extra);
}

WITH_PTSZ(cuLaunchKernel, launch_grid,
          (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
           unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
           unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra),
          f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
          kernelParams, extra)

static CUresult launch_ex(int ptsz, const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                          void **extra)
{
    if (!config)
        return CUDA_ERROR_INVALID_VALUE;
    return launch(f, config->hStream, ptsz, kernelParams, extra);
}

WITH_PTSZ(cuLaunchKernelEx, launch_ex,
          (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra),
          config, f, kernelParams, extra)

static CUresult launch_cooperative(int ptsz, CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                   unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                   unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                   void **kernelParams)
{
    return launch_grid(ptsz, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                       sharedMemBytes, hStream, kernelParams, NULL);
}

WITH_PTSZ(cuLaunchCooperativeKernel, launch_cooperative,
          (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
           unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
           unsigned int sharedMemBytes, CUstream hStream, void **kernelParams),
          f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
          kernelParams)

/* ------------------------------------------------------------------------ */
/* Entry-point lookup                                                       */

struct versioned_name {
    const char *base;
    int since; /* cudaVersion from which `name` is what base means */
    const char *name;
};

/* For a base name, the entries are ordered newest first. */
static const struct versioned_name g_versions[] = {
    { "cuMemAlloc", 3020, "cuMemAlloc_v2" },
    { "cuMemFree", 3020, "cuMemFree_v2" },
    { "cuMemGetInfo", 3020, "cuMemGetInfo_v2" },
    { "cuMemAllocPitch", 3020, "cuMemAllocPitch_v2" },
    { "cuDeviceTotalMem", 3020, "cuDeviceTotalMem_v2" },
    { "cuMemcpyHtoD", 3020, "cuMemcpyHtoD_v2" },
    { "cuMemcpyDtoH", 3020, "cuMemcpyDtoH_v2" },
    { "cuMemcpyDtoD", 3020, "cuMemcpyDtoD_v2" },
    { "cuMemsetD8", 3020, "cuMemsetD8_v2" },
    { "cuMemsetD32", 3020, "cuMemsetD32_v2" },
    { "cuArrayCreate", 3020, "cuArrayCreate_v2" },
    { "cuArray3DCreate", 3020, "cuArray3DCreate_v2" },
    { "cuArrayGetDescriptor", 3020, "cuArrayGetDescriptor_v2" },
    { "cuMemGetAddressRange", 3020, "cuMemGetAddressRange_v2" },
    { "cuMemAllocHost", 3020, "cuMemAllocHost_v2" },
    { "cuCtxDestroy", 4000, "cuCtxDestroy_v2" },
    { "cuCtxPushCurrent", 4000, "cuCtxPushCurrent_v2" },
    { "cuCtxPopCurrent", 4000, "cuCtxPopCurrent_v2" },
    { "cuStreamDestroy", 4000, "cuStreamDestroy_v2" },
    { "cuEventDestroy", 4000, "cuEventDestroy_v2" },
    { "cuDevicePrimaryCtxRelease", 11000, "cuDevicePrimaryCtxRelease_v2" },
    { "cuDevicePrimaryCtxReset", 11000, "cuDevicePrimaryCtxReset_v2" },
    { "cuDevicePrimaryCtxSetFlags", 11000, "cuDevicePrimaryCtxSetFlags_v2" },
    { "cuDeviceGetUuid", 11040, "cuDeviceGetUuid_v2" },
    { "cuCtxCreate", 12050, "cuCtxCreate_v4" },
    { "cuCtxCreate", 3020, "cuCtxCreate_v2" },
    { "cuGetProcAddress", 12000, "cuGetProcAddress_v2" },
    { "cuCtxGetDevice", 13000, "cuCtxGetDevice_v2" },
    { "cuCtxSynchronize", 13000, "cuCtxSynchronize_v2" },
    { "cuMemcpyHtoDAsync", 3020, "cuMemcpyHtoDAsync_v2" },
    { "cuMemcpyDtoHAsync", 3020, "cuMemcpyDtoHAsync_v2" },
    { "cuMemcpyDtoDAsync", 3020, "cuMemcpyDtoDAsync_v2" },
    { "cuStreamBeginCapture", 10010, "cuStreamBeginCapture_v2" },
    { "cuStreamGetCaptureInfo", 12030, "cuStreamGetCaptureInfo_v3" },
    { "cuStreamGetCaptureInfo", 11030, "cuStreamGetCaptureInfo_v2" },
    { "cuGraphInstantiate", 12000, "cuGraphInstantiateWithFlags" },
    { "cuGraphInstantiate", 11000, "cuGraphInstantiate_v2" },
    { "cuEventElapsedTime", 12080, "cuEventElapsedTime_v2" },
};

static void *g_self;
static pthread_once_t g_self_once = PTHREAD_ONCE_INIT;

/* Our own handle. Not dlopen(our path, RTLD_NOLOAD): vgpu interposes dlopen
 * and answers any "libcuda.so*" path with itself. In glibc a link_map is a
 * valid dlsym handle, and dladdr1 gives ours without opening anything. */
static void open_self(void)
{
    Dl_info info;
    struct link_map *lm = NULL;
    if (dladdr1((void *)&open_self, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm)
        g_self = lm;
}

/* Address of this library's own export called name, or NULL. */
static void *own_symbol(const char *name)
{
    pthread_once(&g_self_once, open_self);
    if (!g_self)
        return NULL;
    void *p = dlsym(g_self, name);
    /* Only our own definitions count, not one found in a dependency. */
    Dl_info mine, found;
    if (!p || !dladdr((void *)&open_self, &mine) || !dladdr(p, &found) ||
        mine.dli_fbase != found.dli_fbase)
        return NULL;
    return p;
}

static void *resolve_proc(const char *symbol, int version, cuuint64_t flags)
{
    if (strncmp(symbol, "cu", 2) != 0 || strlen(symbol) > 200)
        return NULL;
    if (version > FAKEGPU_CUDA_VERSION)
        version = FAKEGPU_CUDA_VERSION;

    const char *chosen = symbol;
    for (size_t i = 0; i < sizeof g_versions / sizeof g_versions[0]; i++)
        if (strcmp(g_versions[i].base, symbol) == 0 && version >= g_versions[i].since) {
            chosen = g_versions[i].name;
            break;
        }

    if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
        static const char *const suffixes[] = { "_ptds", "_ptsz" };
        for (size_t i = 0; i < 2; i++) {
            char name[256];
            snprintf(name, sizeof name, "%s%s", chosen, suffixes[i]);
            void *p = own_symbol(name);
            if (p)
                return p;
        }
    }
    return own_symbol(chosen);
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    COUNT_CALL();
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = resolve_proc(symbol, cudaVersion, flags);
    return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus)
{
    COUNT_CALL();
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = resolve_proc(symbol, cudaVersion, flags);
    if (symbolStatus)
        *symbolStatus = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_SUCCESS;
}

/* Tensor maps: the fake's "encoding" packs what it was given into the
 * descriptor's words (the address, then a word per value and array element,
 * until the 16 are full), so that two encodings of the same values are the
 * same and of different ones differ.  The driver's checks it keeps: a rank
 * of 1 to 5 (3 to 5 for im2col), a 16-byte aligned address, arrays given. */
struct map_words {
    CUtensorMap *map;
    unsigned n;
};

static void map_put(struct map_words *m, uint64_t v)
{
    if (m->n < CU_TENSOR_MAP_NUM_QWORDS)
        m->map->opaque[m->n++] = v;
}

static CUresult map_start(struct map_words *m, CUtensorMap *map, cuuint32_t rank, unsigned min_rank, void *address,
                          const cuuint64_t *dim, const cuuint64_t *strides, const cuuint32_t *element_strides)
{
    if (!map || rank < min_rank || rank > 5 || !address || ((uintptr_t)address & 15) || !dim || !element_strides ||
        (rank > 1 && !strides))
        return CUDA_ERROR_INVALID_VALUE;
    memset(map, 0, sizeof(*map));
    *m = (struct map_words){ map, 0 };
    map_put(m, (uint64_t)(uintptr_t)address);
    for (cuuint32_t i = 0; i < rank; i++)
        map_put(m, dim[i] ^ (uint64_t)element_strides[i] << 48);
    for (cuuint32_t i = 0; i + 1 < rank; i++)
        map_put(m, strides[i]);
    return CUDA_SUCCESS;
}

CUresult cuTensorMapEncodeTiled(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
                                void *globalAddress, const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
                                const cuuint32_t *boxDim, const cuuint32_t *elementStrides,
                                CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill)
{
    ENTER();
    struct map_words m;
    CUresult r = map_start(&m, tensorMap, tensorRank, 1, globalAddress, globalDim, globalStrides, elementStrides);
    if (r != CUDA_SUCCESS || !boxDim)
        return r != CUDA_SUCCESS ? r : CUDA_ERROR_INVALID_VALUE;
    for (cuuint32_t i = 0; i < tensorRank; i++)
        map_put(&m, boxDim[i]);
    map_put(&m, (uint64_t)tensorDataType | (uint64_t)interleave << 8 | (uint64_t)swizzle << 16 |
                    (uint64_t)l2Promotion << 24 | (uint64_t)oobFill << 32);
    return CUDA_SUCCESS;
}

CUresult cuTensorMapEncodeIm2col(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
                                 void *globalAddress, const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
                                 const int *pixelBoxLowerCorner, const int *pixelBoxUpperCorner,
                                 cuuint32_t channelsPerPixel, cuuint32_t pixelsPerColumn,
                                 const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
                                 CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
                                 CUtensorMapFloatOOBfill oobFill)
{
    ENTER();
    struct map_words m;
    CUresult r = map_start(&m, tensorMap, tensorRank, 3, globalAddress, globalDim, globalStrides, elementStrides);
    if (r != CUDA_SUCCESS || !pixelBoxLowerCorner || !pixelBoxUpperCorner)
        return r != CUDA_SUCCESS ? r : CUDA_ERROR_INVALID_VALUE;
    for (cuuint32_t i = 0; i + 2 < tensorRank; i++)
        map_put(&m, (uint64_t)(uint32_t)pixelBoxLowerCorner[i] << 32 | (uint32_t)pixelBoxUpperCorner[i]);
    map_put(&m, (uint64_t)channelsPerPixel << 32 | pixelsPerColumn);
    map_put(&m, (uint64_t)tensorDataType | (uint64_t)interleave << 8 | (uint64_t)swizzle << 16 |
                    (uint64_t)l2Promotion << 24 | (uint64_t)oobFill << 32);
    return CUDA_SUCCESS;
}

CUresult cuTensorMapEncodeIm2colWide(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
                                     cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim,
                                     const cuuint64_t *globalStrides, int pixelBoxLowerCornerWidth,
                                     int pixelBoxUpperCornerWidth, cuuint32_t channelsPerPixel,
                                     cuuint32_t pixelsPerColumn, const cuuint32_t *elementStrides,
                                     CUtensorMapInterleave interleave, CUtensorMapIm2ColWideMode mode,
                                     CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
                                     CUtensorMapFloatOOBfill oobFill)
{
    ENTER();
    struct map_words m;
    CUresult r = map_start(&m, tensorMap, tensorRank, 3, globalAddress, globalDim, globalStrides, elementStrides);
    if (r != CUDA_SUCCESS)
        return r;
    map_put(&m, (uint64_t)(uint32_t)pixelBoxLowerCornerWidth << 32 | (uint32_t)pixelBoxUpperCornerWidth);
    map_put(&m, (uint64_t)channelsPerPixel << 32 | pixelsPerColumn);
    map_put(&m, (uint64_t)tensorDataType | (uint64_t)interleave << 8 | (uint64_t)swizzle << 16 |
                    (uint64_t)l2Promotion << 24 | (uint64_t)oobFill << 32 | (uint64_t)mode << 40);
    return CUDA_SUCCESS;
}

CUresult cuTensorMapReplaceAddress(CUtensorMap *tensorMap, void *globalAddress)
{
    ENTER();
    if (!tensorMap || !globalAddress || ((uintptr_t)globalAddress & 15))
        return CUDA_ERROR_INVALID_VALUE;
    tensorMap->opaque[0] = (uint64_t)(uintptr_t)globalAddress;
    return CUDA_SUCCESS;
}

/* cuBLASLt's private table (1734dc26-...), as r580 lays it out: its size
 * and 16 functions.  Function 4 copies two descriptions of the current
 * context's device (66 bytes each, as an H100's; the second ends in zeros,
 * as the H100's does) into memory taken with malloc, which function 13
 * frees; the others are not emulated. */
#define FAKE_LAYOUT_BYTES 66
static CUresult layout_get(void **first, void **second)
{
    CUdevice dev;
    CUresult r = ctx_device(&dev, NULL);
    if (r != CUDA_SUCCESS)
        return r;
    unsigned char *a = malloc(FAKE_LAYOUT_BYTES), *b = malloc(FAKE_LAYOUT_BYTES);
    if (!a || !b) {
        free(a);
        free(b);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (int i = 0; i < FAKE_LAYOUT_BYTES; i++) {
        a[i] = (unsigned char)(i % 8 + dev);
        b[i] = i < FAKE_LAYOUT_BYTES - 4 ? (unsigned char)(0xf0 + i / 16 + dev) : 0;
    }
    *first = a;
    *second = b;
    return CUDA_SUCCESS;
}

static CUresult layout_free(void *first, void *second)
{
    free(first);
    free(second);
    return CUDA_SUCCESS;
}

static CUresult layout_unknown(void)
{
    return CUDA_ERROR_NOT_SUPPORTED;
}

#define LU (const void *)layout_unknown
static const void *const cublaslt_table[17] = {
    (const void *)sizeof(cublaslt_table), LU, LU, LU, (const void *)layout_get, LU, LU, LU, LU, LU, LU, LU, LU,
    (const void *)layout_free, LU, LU, LU,
};
static const unsigned char cublaslt_id[16] = { 0x17, 0x34, 0xdc, 0x26, 0x80, 0x0d, 0x47, 0x45,
                                               0x87, 0x26, 0xc0, 0xf1, 0xe7, 0xdd, 0x8b, 0xca };

CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
    COUNT_CALL();
    if (!ppExportTable || !pExportTableId)
        return CUDA_ERROR_INVALID_VALUE;
    if (memcmp(pExportTableId->bytes, cublaslt_id, sizeof(cublaslt_id)) == 0) {
        *ppExportTable = cublaslt_table;
        return CUDA_SUCCESS;
    }
    const void *t = fakegpu_export_table((const unsigned char *)pExportTableId->bytes);
    if (!t)
        return CUDA_ERROR_INVALID_VALUE;
    *ppExportTable = t;
    return CUDA_SUCCESS;
}
