/*
 * cuGetExportTable for a remote GPU: the driver's private tables, answered
 * in the guest.
 *
 * The CUDA runtime (libcudart) does not start without them: it asks the
 * driver for tables of undocumented functions by UUID, loads its modules
 * through one, keeps its per-context state in another, and checks the
 * driver's identity with a keyed hash through a third.  Their functions
 * take guest pointers (callbacks, buffers, the runtime's own structures),
 * so no table can be carried to the host as it stands; each table the
 * runtimes of CUDA 12 and 13 use is emulated here with the public driver
 * calls the remote driver carries (docs/design/remote.md, "The runtime's private
 * tables").  The layouts are the runtime's, as open driver
 * reimplementations document them: slot 0 of most tables holds the table's
 * size in bytes.
 *
 * cuBLASLt's table is device_layout.c's, NVRTC's compute cache
 * compile_cache.c's.  Any other UUID answers
 * CUDA_ERROR_NOT_FOUND, logged once: the runtime treats the tables it can
 * do without as absent.
 */
#include "common/log.h"
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/spec/private_tables.h"
#include "forwarder/remote/guest/cuda/manual.h"
#include "forwarder/remote/guest/cuda/private/hmac_md2.h"

#include "vgpu_cuda_slots.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the runtime's interface (6bd5fb6c-...): modules and the primary context ---- */

static CUresult module_from_fatbin(CUmodule *module, const void *fatbin)
{
    return vgpu_remote_guest_cuModuleLoadData(module, fatbin);
}

/* The same, with options this emulation does not know: refused unless absent. */
static CUresult module_from_fatbin_ext(CUmodule *module, const void *fatbin, void *a, void *b, unsigned c)
{
    if (a || b || c)
        return vgpu_remote_refuse(VGPU_CUDA_SLOT_cuGetExportTable);
    return module_from_fatbin(module, fatbin);
}

static CUresult module_from_fatbin_ext2(const void *fatbin, CUmodule *module, void *a, void *b, unsigned c)
{
    return module_from_fatbin_ext(module, fatbin, a, b, c);
}

static CUresult primary_context(CUcontext *ctx, CUdevice dev)
{
    return VGPU_REMOTE_CUDA(cuDevicePrimaryCtxRetain)(ctx, dev);
}

static void ignore_size(size_t n)
{
    (void)n;
}

static CUresult succeed(void)
{
    return CUDA_SUCCESS;
}

static const void *const runtime_interface[13] = {
    (const void *)sizeof(runtime_interface),
    (const void *)module_from_fatbin,
    (const void *)primary_context,
    NULL,
    NULL,
    NULL,
    (const void *)module_from_fatbin_ext,
    (const void *)ignore_size,
    (const void *)module_from_fatbin_ext2,
    NULL,
    NULL,
    NULL,
    (const void *)succeed, /* loads the JIT compilers: nothing to load here */
};

/* ---- tools' hooks (42d85a81-..., a094798c-...): no tool is attached ---- */

static uintptr_t none0(void)
{
    return 0;
}

static uintptr_t none1(const void *a)
{
    (void)a;
    return 0;
}

static uintptr_t none2(const void *a, const void *b)
{
    (void)a, (void)b;
    return 0;
}

/* Two buffers the runtime's callback layer reads its tool settings from:
 * zeroed, no tool.  Owned by these tables; never written. */
static unsigned char tools_buffer_a[1024], tools_buffer_b[14];

static void tools_buffer_1(void **p, size_t *n)
{
    if (p)
        *p = tools_buffer_a;
    if (n)
        *n = sizeof(tools_buffer_a);
}

static void tools_buffer_2(void **p, size_t *n)
{
    if (p)
        *p = tools_buffer_b;
    if (n)
        *n = sizeof(tools_buffer_b);
}

/* The calling thread's context, which cuBLASLt keys its kernels by. */
static CUresult current_context(CUcontext *ctx)
{
    if (!ctx)
        return CUDA_ERROR_INVALID_VALUE;
    return VGPU_REMOTE_CUDA(cuCtxGetCurrent)(ctx);
}

static const void *const tools_tls[4] = {
    (const void *)sizeof(tools_tls),
    (const void *)none0,
    (const void *)current_context,
    (const void *)none1,
};

static const void *const tools_callbacks[7] = {
    (const void *)sizeof(tools_callbacks),
    (const void *)none2,
    (const void *)tools_buffer_1,
    (const void *)none2,
    (const void *)none2,
    (const void *)none2,
    (const void *)tools_buffer_2,
};

/* ---- context-local storage (c693336e-...): the runtime's state per context ---- */

/* Values by (context, key), for the life of the process: a context's
 * values are not destroyed with it (the runtime's destructors take its
 * own structures; it frees them itself when it tears down).  Owned by
 * this file, under cls_lock. */
struct cls_value {
    struct cls_value *next;
    CUcontext ctx;
    void *key, *value;
};
static struct cls_value *cls_values;
static pthread_mutex_t cls_lock = PTHREAD_MUTEX_INITIALIZER;

static void cls_child_after_fork(void)
{
    pthread_mutex_init(&cls_lock, NULL);
}

static pthread_once_t cls_once = PTHREAD_ONCE_INIT;

static void cls_register_atfork(void)
{
    pthread_atfork(NULL, NULL, cls_child_after_fork);
}

static CUresult cls_context(CUcontext *ctx)
{
    pthread_once(&cls_once, cls_register_atfork);
    return *ctx ? CUDA_SUCCESS : VGPU_REMOTE_CUDA(cuCtxGetCurrent)(ctx);
}

static struct cls_value **cls_find(CUcontext ctx, void *key)
{
    struct cls_value **at = &cls_values;
    while (*at && ((*at)->ctx != ctx || (*at)->key != key))
        at = &(*at)->next;
    return at;
}

static CUresult cls_put(CUcontext ctx, void *key, void *value, void (*dtor)(CUcontext, void *, void *))
{
    (void)dtor;
    CUresult r = cls_context(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&cls_lock);
    struct cls_value **at = cls_find(ctx, key);
    if (!*at) {
        *at = calloc(1, sizeof(**at));
        if (!*at) {
            pthread_mutex_unlock(&cls_lock);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        (*at)->ctx = ctx;
        (*at)->key = key;
    }
    (*at)->value = value;
    pthread_mutex_unlock(&cls_lock);
    return CUDA_SUCCESS;
}

static CUresult cls_delete(CUcontext ctx, void *key)
{
    CUresult r = cls_context(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&cls_lock);
    struct cls_value **at = cls_find(ctx, key), *v = *at;
    if (v)
        *at = v->next;
    pthread_mutex_unlock(&cls_lock);
    free(v);
    return v ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult cls_get(void **value, CUcontext ctx, void *key)
{
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = cls_context(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&cls_lock);
    struct cls_value *v = *cls_find(ctx, key);
    if (v)
        *value = v->value;
    pthread_mutex_unlock(&cls_lock);
    return v ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* This table has no size slot. */
static const void *const context_storage[4] = {
    (const void *)cls_put,
    (const void *)cls_delete,
    (const void *)cls_get,
    NULL,
};

/* ---- contexts' identities (21318c60-...): cuBLASLt's kernel registry ---- */

static CUresult not_offered(void)
{
    return CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult context_id(CUcontext ctx, unsigned long long *id)
{
    return VGPU_REMOTE_CUDA(cuCtxGetId)(ctx, id);
}

/* The driver's table is longer; the runtime's libraries call slot 4 (a
 * context's unique id, as cuCtxGetId gives it) and cope with the others
 * refusing. */
static const void *const context_identity[5] = {
    (const void *)sizeof(context_identity),
    (const void *)not_offered,
    (const void *)not_offered,
    (const void *)not_offered,
    (const void *)context_id,
};

/* ---- contexts made past the public calls, the driver's heap: not offered ---- */

static CUresult no_bypass(CUcontext *ctx, unsigned flags, CUdevice dev)
{
    (void)ctx, (void)flags, (void)dev;
    return CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult no_heap_alloc(const void **p, size_t n, size_t align)
{
    (void)p, (void)n, (void)align;
    return CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult no_heap_free(const void *p, size_t *n)
{
    (void)p, (void)n;
    return CUDA_ERROR_NOT_SUPPORTED;
}

static const void *const context_bypass[2] = { (const void *)sizeof(context_bypass), (const void *)no_bypass };
static const void *const heap_access[3] = {
    (const void *)sizeof(heap_access),
    (const void *)no_heap_alloc,
    (const void *)no_heap_free,
};

/* ---- devices' extra attributes (b10541e1-...) ---- */

static CUresult attribute_wide(CUdevice dev, unsigned attribute, int unused, size_t (*out)[2])
{
    (void)unused;
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    int v = 0;
    CUresult r = VGPU_REMOTE_CUDA(cuDeviceGetAttribute)(&v, (CUdevice_attribute)attribute, dev);
    if (r == CUDA_SUCCESS)
        (*out)[0] = (size_t)v, (*out)[1] = 0;
    return r;
}

static CUresult device_flag(unsigned char *out, CUdevice dev)
{
    (void)dev;
    if (out)
        *out = 0;
    return CUDA_SUCCESS;
}

/* 26 slots; the runtime calls the two filled. */
static const void *const device_extra[26] = {
    [0] = (const void *)sizeof(device_extra),
    [5] = (const void *)attribute_wide,
    [13] = (const void *)device_flag,
};

/* ---- the integrity check (d4082055-...) ---- */

static const void *const integrity[3];

/* What the runtime hashes, as it lays it out. */
struct integrity_input {
    uint32_t driver_version, version, pid, thread;
    const void *runtime_table, *integrity_table, *function;
    uint64_t unix_seconds;
};
struct integrity_device {
    CUuuid uuid;
    int32_t pci_domain, pci_bus, pci_device;
};
#define MAX_HASHED_DEVICES 64

/* The runtime's key (the HMAC's), as the runtime holds it. */
static const uint8_t integrity_key[16] = {
    0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52, 0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f,
};

static CUresult integrity_check(unsigned version, uint64_t unix_seconds, uint64_t (*out)[2]);

static CUresult integrity_devices(struct integrity_device *dev, int *count)
{
    CUresult r = VGPU_REMOTE_CUDA(cuDeviceGetCount)(count);
    if (r != CUDA_SUCCESS)
        return r;
    if (*count > MAX_HASHED_DEVICES)
        return CUDA_ERROR_NOT_SUPPORTED;
    for (int i = 0; i < *count; i++) {
        CUdevice d;
        memset(&dev[i], 0, sizeof(dev[i]));
        if ((r = VGPU_REMOTE_CUDA(cuDeviceGet)(&d, i)) != CUDA_SUCCESS ||
            (r = VGPU_REMOTE_CUDA(cuDeviceGetUuid_v2)(&dev[i].uuid, d)) != CUDA_SUCCESS ||
            (r = VGPU_REMOTE_CUDA(cuDeviceGetAttribute)(&dev[i].pci_domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, d)) !=
                CUDA_SUCCESS ||
            (r = VGPU_REMOTE_CUDA(cuDeviceGetAttribute)(&dev[i].pci_bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d)) !=
                CUDA_SUCCESS ||
            (r = VGPU_REMOTE_CUDA(cuDeviceGetAttribute)(&dev[i].pci_device, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, d)) !=
                CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}

/* HMAC-MD2 over what the runtime can compute too: the driver's version,
 * the check's, the process and thread, the two tables and this function's
 * addresses, the time, and each device's UUID and PCI address. */
static CUresult integrity_check(unsigned version, uint64_t unix_seconds, uint64_t (*out)[2])
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    int driver = 0, count = 0;
    struct integrity_device dev[MAX_HASHED_DEVICES];
    CUresult r = VGPU_REMOTE_CUDA(cuDriverGetVersion)(&driver);
    if (r == CUDA_SUCCESS)
        r = integrity_devices(dev, &count);
    if (r != CUDA_SUCCESS)
        return r;
    struct integrity_input in = {
        .driver_version = (uint32_t)driver,
        .version = version,
        .pid = (uint32_t)getpid(),
        .thread = (uint32_t)(uintptr_t)pthread_self(),
        .runtime_table = runtime_interface,
        .integrity_table = integrity,
        .function = (const void *)integrity_check,
        .unix_seconds = unix_seconds,
    };
    struct vgpu_hmac_part parts[2] = { { &in, sizeof(in) }, { dev, (size_t)count * sizeof(dev[0]) } };
    uint8_t mac[16];
    vgpu_hmac_md2(integrity_key, parts, 2, mac);
    memcpy(&(*out)[0], mac, 8);
    memcpy(&(*out)[1], mac + 8, 8);
    return CUDA_SUCCESS;
}

static const void *const integrity[3] = { (const void *)sizeof(integrity), (const void *)integrity_check, NULL };

/* ---- context checks (263e8860-...) ---- */

static CUresult context_check(CUcontext ctx, unsigned *a, const void **b)
{
    (void)ctx;
    if (a)
        *a = 0;
    if (b)
        *b = NULL;
    return CUDA_SUCCESS;
}

static unsigned context_check_3(void)
{
    return 0;
}

static const void *const context_checks[4] = {
    (const void *)sizeof(context_checks),
    NULL,
    (const void *)context_check,
    (const void *)context_check_3,
};

/* ---- the lookup ---- */

static const struct {
    uint8_t uuid[16];
    const void *const *table;
} tables[] = {
    { { 0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9 },
      runtime_interface },
    { { 0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc }, tools_tls },
    { { 0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66 },
      tools_callbacks },
    { { 0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93 },
      context_storage },
    { { 0x0c, 0xa5, 0x0b, 0x8c, 0x10, 0x04, 0x92, 0x9a, 0x89, 0xa7, 0xd0, 0xdf, 0x10, 0xe7, 0x72, 0x86 },
      context_bypass },
    { { 0x19, 0x5b, 0xcb, 0xf4, 0xd6, 0x7d, 0x02, 0x4a, 0xac, 0xc5, 0x1d, 0x29, 0xce, 0xa6, 0x31, 0xae }, heap_access },
    { { 0xb1, 0x05, 0x41, 0xe1, 0xf7, 0xc7, 0xc7, 0x4a, 0x9f, 0x64, 0xf2, 0x23, 0xbe, 0x99, 0xf1, 0xe2 },
      device_extra },
    { { 0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2 }, integrity },
    { { 0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e },
      context_checks },
    { { 0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8, 0xf2 },
      context_identity },
    { VGPU_REMOTE_CUBLASLT_TABLE, vgpu_remote_cublaslt_table },
    { { 0xda, 0x91, 0x51, 0xd3, 0x3a, 0xe6, 0xcc, 0x41, 0xa5, 0xc0, 0x4f, 0x26, 0xd5, 0x33, 0xe3, 0x28 },
      vgpu_remote_compile_cache_table },
};

/* UUIDs asked for and not known, logged once each.  Owned by this file,
 * under unknown_lock. */
#define MAX_UNKNOWN 32
static uint8_t unknown[MAX_UNKNOWN][16];
static unsigned unknown_count;
static pthread_mutex_t unknown_lock = PTHREAD_MUTEX_INITIALIZER;

static void note_unknown(const uint8_t *id)
{
    pthread_mutex_lock(&unknown_lock);
    for (unsigned i = 0; i < unknown_count; i++)
        if (memcmp(unknown[i], id, 16) == 0) {
            pthread_mutex_unlock(&unknown_lock);
            return;
        }
    if (unknown_count < MAX_UNKNOWN)
        memcpy(unknown[unknown_count++], id, 16);
    pthread_mutex_unlock(&unknown_lock);
    vgpu_info("remote GPU: no private table %02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x "
              "in the guest: not found (docs/design/remote.md)",
              id[0], id[1], id[2], id[3], id[4], id[5], id[6], id[7], id[8], id[9], id[10], id[11], id[12], id[13],
              id[14], id[15]);
}

CUresult vgpu_remote_guest_cuGetExportTable(const void **table, const CUuuid *id)
{
    if (!table || !id)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
        if (memcmp(tables[i].uuid, id->bytes, 16) == 0) {
            *table = tables[i].table;
            return CUDA_SUCCESS;
        }
    *table = NULL;
    note_unknown((const uint8_t *)id->bytes);
    return CUDA_ERROR_NOT_FOUND;
}
