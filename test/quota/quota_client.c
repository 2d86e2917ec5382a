/*
 * End-to-end checks of the vGPU memory quota: `quota_client SCENARIO [ARGS]`.
 * Loads the driver as applications do (dlopen("libcuda.so.1") /
 * dlopen("libnvidia-ml.so.1"), dlsym), with vgpu preloaded over the fake
 * driver (test/fake), and asserts what a user observes: CUDA's and NVML's
 * figures, OUT_OF_MEMORY past the quota, the BAR0 window, the log.
 * test/quota/quota.sh sets the environment of each scenario and runs the
 * multi-process ones.
 *
 * Environment: VGPU_BAR0 (always set by quota.sh, in a temp dir),
 * VGPU_MEMORY_LIMIT (the quota the scenario expects), FAKEGPU_CTX_OVERHEAD
 * (default 256M), TEST_FAKE_LIBCUDA (the fake's path), VGPU_LOG_FILE.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test/common/client_util.h"
#include "common/contract/window/bar0.h"

/* What the (fake) GPU itself has free for the current context: the quota's refusals must come
 * while it has plenty. */
static uint64_t physical_free(void)
{
    __typeof__(&cuMemGetInfo_v2) real = (__typeof__(&cuMemGetInfo_v2))fake_driver_sym("cuMemGetInfo_v2");
    size_t f = 0, t = 0;
    CHECK(real && real(&f, &t) == CUDA_SUCCESS, "the fake's own cuMemGetInfo_v2");
    return f;
}

/* ---- sizes and settings ---- */

static uint64_t env_size(const char *name, uint64_t fallback)
{
    const char *v = getenv(name);
    return v && *v ? parse_size(v) : fallback;
}

static uint64_t round512(uint64_t v)
{
    return (v + 511) / 512 * 512;
}

/* The quota of this scenario (VGPU_MEMORY_LIMIT as one size) and a context's overhead. */
static uint64_t L, OVH;

static void read_settings(void)
{
    L = env_size("VGPU_MEMORY_LIMIT", 0);
    OVH = env_size("FAKEGPU_CTX_OVERHEAD", 256 * MiB);
}

/* ---- observations ---- */

static uint64_t bar0_used(int dev)
{
    return atomic_load((_Atomic uint64_t *)&env_bar0()->status.device[dev].memory_used);
}

static uint64_t bar0_refusals(int dev)
{
    return atomic_load((_Atomic uint64_t *)&env_bar0()->status.device[dev].refusals);
}

/* What this process holds in BAR0's process table (-1: no slot). */
static int64_t bar0_held_by(int pid, int dev)
{
    const struct vgpu_bar0 *b = env_bar0();
    for (int i = 0; i < VGPU_BAR0_MAX_PROCS; i++) {
        uint64_t o = atomic_load((_Atomic uint64_t *)&b->procs[i].owner);
        if ((o & 0xff) == VGPU_PROC_LIVE && (int)(o >> 8) == pid)
            return (int64_t)atomic_load((_Atomic uint64_t *)&b->procs[i].held[dev]);
    }
    return -1;
}

/* The process table on stderr: what a failed count is made of. */
static void dump_slots(int dev)
{
    const struct vgpu_bar0 *b = env_bar0();
    for (int i = 0; i < VGPU_BAR0_MAX_PROCS; i++) {
        uint64_t o = atomic_load((_Atomic uint64_t *)&b->procs[i].owner);
        if (o)
            fprintf(stderr, "  slot %d: pid %d state %d, holds %llu on device %d, busy %llu\n", i, (int)(o >> 8),
                    (int)(o & 0xff), (unsigned long long)atomic_load((_Atomic uint64_t *)&b->procs[i].held[dev]),
                    dev, (unsigned long long)atomic_load((_Atomic uint64_t *)&b->procs[i].busy));
    }
}

static void nvml_init(void)
{
    static int done;
    if (!done)
        NV(N(nvmlInit_v2)());
    done = 1;
}

static nvmlDevice_t nvml_dev(unsigned index)
{
    nvml_init();
    nvmlDevice_t d = NULL;
    NV(N(nvmlDeviceGetHandleByIndex_v2)(index, &d));
    return d;
}

static nvmlMemory_t nvml_mem(unsigned index)
{
    nvmlMemory_t m = { 0 };
    NV(N(nvmlDeviceGetMemoryInfo)(nvml_dev(index), &m));
    return m;
}

static void cuda_mem(size_t *free_bytes, size_t *total)
{
    *free_bytes = *total = 0;
    CU(F(cuMemGetInfo_v2)(free_bytes, total));
}

/*
 * The vGPU's device dev (current context's device for CUDA) uses `used`
 * bytes: cuMemGetInfo shows the quota and what is left, NVML the quota and
 * used, BAR0 holds it.
 */
static void expect_used_at(int line, int dev, uint64_t used, const char *what)
{
    size_t f, t;
    cuda_mem(&f, &t);
    CHECK(t == L && f == L - used, "line %d, %s: cuMemGetInfo free %zu total %zu, want free %llu (off by %lld) total %llu",
          line, what, f, t, (unsigned long long)(L - used), (long long)(f - (L - used)), (unsigned long long)L);
    nvmlMemory_t m = nvml_mem((unsigned)dev);
    CHECK(m.total == L && m.used == used && m.free == L - used,
          "line %d, %s: NVML total %llu used %llu free %llu, want used %llu (off by %lld)", line, what, m.total, m.used,
          m.free, (unsigned long long)used, (long long)(m.used - used));
    CHECK(bar0_used(dev) == used, "line %d, %s: BAR0 memory_used %llu, want %llu", line, what,
          (unsigned long long)bar0_used(dev), (unsigned long long)used);
}
#define expect_used(used, what) expect_used_at(__LINE__, 0, used, what)

/* Without a current context: NVML and BAR0 only. */
static void expect_used_noctx_at(int line, int dev, uint64_t used, const char *what)
{
    nvmlMemory_t m = nvml_mem((unsigned)dev);
    CHECK(m.used == used, "line %d, %s: NVML used %llu, want %llu (off by %lld)", line, what, m.used,
          (unsigned long long)used, (long long)(m.used - used));
    CHECK(bar0_used(dev) == used, "line %d, %s: BAR0 memory_used %llu, want %llu", line, what,
          (unsigned long long)bar0_used(dev), (unsigned long long)used);
}
#define expect_used_noctx(used, what) expect_used_noctx_at(__LINE__, 0, used, what)

/* A refusal for the quota: OUT_OF_MEMORY, while the GPU itself had room. */
static void expect_refused_at(int line, CUresult r, uint64_t asked, const char *what)
{
    CHECK(r == CUDA_ERROR_OUT_OF_MEMORY, "line %d, %s of %llu: returned %d, want CUDA_ERROR_OUT_OF_MEMORY", line, what,
          (unsigned long long)asked, (int)r);
    uint64_t pf = physical_free();
    CHECK(pf > asked, "line %d, %s: the fake GPU has only %llu free, not the %llu asked: not a quota refusal", line,
          what, (unsigned long long)pf, (unsigned long long)asked);
}
#define expect_refused(r, asked, what) expect_refused_at(__LINE__, r, asked, what)

static int log_count(const char *a, const char *b, const char *c, char *found, size_t len)
{
    const char *path = getenv("VGPU_LOG_FILE");
    FILE *f = path ? fopen(path, "r") : NULL;
    int n = 0;
    char line[2048];
    while (f && fgets(line, sizeof(line), f))
        if (strstr(line, a) && (!b || strstr(line, b)) && (!c || strstr(line, c))) {
            n++;
            if (found)
                snprintf(found, len, "%s", line);
        }
    if (f)
        fclose(f);
    return n;
}

/* ---- setup ---- */

static CUdevice device(int ordinal)
{
    CUdevice d = -1;
    CU(F(cuDeviceGet)(&d, ordinal));
    return d;
}

static CUcontext primary(int ordinal)
{
    CUcontext ctx = NULL;
    CU(F(cuDevicePrimaryCtxRetain)(&ctx, device(ordinal)));
    CU(F(cuCtxSetCurrent)(ctx));
    return ctx;
}

/* cuInit, the primary context of device 0 current, and the quota as the scenario set it;
 * alone: no other process uses the vGPU yet. */
static CUcontext start_in(bool alone)
{
    read_settings();
    CHECK(L > 0, "the scenario needs VGPU_MEMORY_LIMIT");
    CU(F(cuInit)(0));
    CUcontext ctx = primary(0);
    if (alone)
        expect_used(OVH, "a fresh vGPU with one context");
    return ctx;
}

static CUcontext start(void)
{
    return start_in(true);
}

/* ======================================================================
 * What CUDA and NVML show
 * ====================================================================== */

/* VGPU_MEMORY_LIMIT=4G: totals are the quota, free/used what the vGPU holds. */
static void scenario_view(void)
{
    read_settings();
    CU(F(cuInit)(0));
    int count = 0;
    CU(F(cuDeviceGetCount)(&count));
    CHECK(count == 2, "device count %d", count);
    for (int i = 0; i < count; i++) {
        size_t total = 0;
        CU(F(cuDeviceTotalMem_v2)(&total, device(i)));
        CHECK(total == 4 * GiB, "cuDeviceTotalMem_v2(%d) = %zu, want 4 GiB", i, total);
        nvmlMemory_t m = nvml_mem((unsigned)i);
        CHECK(m.total == 4 * GiB && m.used == 0, "NVML device %d before any context: total %llu used %llu", i, m.total,
              m.used);
    }
    primary(0);
    size_t f, t;
    cuda_mem(&f, &t);
    CHECK(t == 4 * GiB, "cuMemGetInfo_v2 total %zu", t);
    CHECK(f == 4 * GiB - 256 * MiB, "cuMemGetInfo_v2 free %zu, want 4 GiB - the 256 MiB context (off by %lld)", f,
          (long long)(f - (4 * GiB - 256 * MiB)));
    CHECK(log_count("a context on vGPU device 0 takes 256.00 MiB (measured)", NULL, NULL, NULL, 0) == 1,
          "no log line of the measured context overhead");
    nvmlMemory_t m = nvml_mem(0);
    nvmlMemory_v2_t m2 = { .version = nvmlMemory_v2 };
    NV(N(nvmlDeviceGetMemoryInfo_v2)(nvml_dev(0), &m2));
    CHECK(m.total == 4 * GiB && m.used == 256 * MiB && m.free == f, "NVML total %llu used %llu free %llu", m.total,
          m.used, m.free);
    CHECK(m2.total == m.total && m2.used == m.used && m2.free == m.free, "NVML v2 total %llu used %llu free %llu",
          m2.total, m2.used, m2.free);

    CUdeviceptr p = 0;
    CU(F(cuMemAlloc_v2)(&p, GiB));
    size_t f2, t2;
    cuda_mem(&f2, &t2);
    CHECK(f - f2 == GiB && t2 == t, "1 GiB allocated: CUDA free moved by %lld", (long long)(f - f2));
    nvmlMemory_t a = nvml_mem(0);
    nvmlMemory_v2_t a2 = { .version = nvmlMemory_v2 };
    NV(N(nvmlDeviceGetMemoryInfo_v2)(nvml_dev(0), &a2));
    CHECK(a.used - m.used == GiB && m.free - a.free == GiB && a.total == m.total,
          "1 GiB allocated: NVML used moved by %lld, free by %lld", (long long)(a.used - m.used),
          (long long)(m.free - a.free));
    CHECK(a2.used - m2.used == GiB && m2.free - a2.free == GiB, "1 GiB allocated: NVML v2 used moved by %lld",
          (long long)(a2.used - m2.used));
    /* The other device is untouched. */
    nvmlMemory_t other = nvml_mem(1);
    CHECK(other.total == 4 * GiB && other.used == 0, "NVML device 1: total %llu used %llu", other.total, other.used);
    CU(F(cuMemFree_v2)(p));
    expect_used(256 * MiB, "after the free");
}

/* VGPU_MEMORY_LIMIT=0:1G,1:2G: each device shows and enforces its own. */
static void scenario_per_device(void)
{
    CU(F(cuInit)(0));
    OVH = env_size("FAKEGPU_CTX_OVERHEAD", 256 * MiB);
    const uint64_t quota[2] = { GiB, 2 * GiB };
    for (int i = 0; i < 2; i++) {
        size_t total = 0;
        CU(F(cuDeviceTotalMem_v2)(&total, device(i)));
        CHECK(total == quota[i], "cuDeviceTotalMem_v2(%d) = %zu, want %llu", i, total, (unsigned long long)quota[i]);
        CHECK(nvml_mem((unsigned)i).total == quota[i], "NVML total of %d: %llu", i, nvml_mem((unsigned)i).total);
    }
    CUdeviceptr p0 = 0, p1 = 0, p2 = 0, extra = 0;
    /* Device 0: 1 GiB less the context. */
    L = quota[0];
    primary(0);
    expect_used_at(__LINE__, 0, OVH, "device 0 with a context");
    uint64_t left0 = quota[0] - OVH;
    expect_refused(F(cuMemAlloc_v2)(&p0, left0 + 1), left0 + 1, "device 0: one byte past its quota");
    CU(F(cuMemAlloc_v2)(&p0, left0));
    expect_used_at(__LINE__, 0, quota[0], "device 0 full");
    expect_refused(F(cuMemAlloc_v2)(&extra, 512), 512, "device 0 full: 512 bytes more");

    /* Device 1: its own 2 GiB, untouched by device 0 being full. */
    L = quota[1];
    primary(1);
    expect_used_at(__LINE__, 1, OVH, "device 1 with a context");
    CU(F(cuMemAlloc_v2)(&p1, GiB)); /* more than device 0's whole quota */
    CU(F(cuMemAlloc_v2)(&p2, quota[1] - OVH - GiB));
    expect_used_at(__LINE__, 1, quota[1], "device 1 full");
    expect_refused(F(cuMemAlloc_v2)(&extra, 512), 512, "device 1 full: 512 bytes more");
    CHECK(nvml_mem(0).used == quota[0], "device 0 used %llu after device 1 filled", nvml_mem(0).used);
    CU(F(cuMemFree_v2)(p1));
    CU(F(cuMemFree_v2)(p2));
    expect_used_at(__LINE__, 1, OVH, "device 1 after the frees");
    CU(F(cuMemFree_v2)(p0)); /* frees work from any context */
    L = quota[0];
    primary(0);
    expect_used_at(__LINE__, 0, OVH, "device 0 after the free");
}

static void uuid_text(const CUuuid *u, char *out, size_t len)
{
    const unsigned char *b = (const unsigned char *)u->bytes;
    snprintf(out, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
             b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static int parse_bus_id(const char *s, unsigned v[4])
{
    return sscanf(s, "%x:%x:%x.%x", &v[0], &v[1], &v[2], &v[3]) == 4;
}

static const char *fake_uuid(int physical, char *buf, size_t len)
{
    snprintf(buf, len, "GPU-fa4e0000-0000-0000-0000-%012x", physical);
    return buf;
}

/* FAKEGPU_DEVICES=4, VGPU_VISIBLE_DEVICES=2,0: CUDA and NVML show GPUs 2 and 0, numbered alike. */
static void scenario_visible(void)
{
    CU(F(cuInit)(0));
    nvml_init();
    int count = 0;
    unsigned ncount = 0, ncount1 = 0;
    CU(F(cuDeviceGetCount)(&count));
    NV(N(nvmlDeviceGetCount_v2)(&ncount));
    NV(N(nvmlDeviceGetCount)(&ncount1));
    CHECK(count == 2 && ncount == 2 && ncount1 == 2, "counts: CUDA %d, NVML %u / %u, want 2", count, ncount, ncount1);
    const int physical[2] = { 2, 0 };
    for (int k = 0; k < 2 && k < count; k++) {
        CUuuid cu;
        char cuda_uuid[64], nvml_uuid[96] = "", want[64], cuda_bus[64] = "", name[64] = "";
        CU(F(cuDeviceGetUuid_v2)(&cu, device(k)));
        uuid_text(&cu, cuda_uuid, sizeof(cuda_uuid));
        CU(F(cuDeviceGetPCIBusId)(cuda_bus, sizeof(cuda_bus), device(k)));
        CU(F(cuDeviceGetName)(name, sizeof(name), device(k)));
        nvmlDevice_t h = nvml_dev((unsigned)k);
        NV(N(nvmlDeviceGetUUID)(h, nvml_uuid, sizeof(nvml_uuid)));
        nvmlPciInfo_t pci;
        NV(N(nvmlDeviceGetPciInfo_v3)(h, &pci));
        fake_uuid(physical[k], want, sizeof(want));
        CHECK(strcasecmp(cuda_uuid, nvml_uuid) == 0, "ordinal %d: CUDA UUID %s, NVML index %d UUID %s", k, cuda_uuid, k,
              nvml_uuid);
        CHECK(strcasecmp(cuda_uuid, want) == 0, "ordinal %d is %s (%s), want GPU %d (%s)", k, cuda_uuid, name,
              physical[k], want);
        unsigned a[4] = { 0 }, b[4] = { 1 };
        CHECK(parse_bus_id(cuda_bus, a) && parse_bus_id(pci.busId, b) && memcmp(a, b, sizeof(a)) == 0,
              "ordinal %d: CUDA PCI bus id %s, NVML index %d %s", k, cuda_bus, k, pci.busId);
        CHECK(a[1] == (unsigned)physical[k] + 1, "ordinal %d on PCI bus %u, want %d", k, a[1], physical[k] + 1);
        char want_name[32];
        snprintf(want_name, sizeof(want_name), "Fake GPU %d", physical[k]);
        CHECK(strcmp(name, want_name) == 0, "ordinal %d is named %s, want %s", k, name, want_name);
        unsigned idx = 99;
        NV(N(nvmlDeviceGetIndex)(h, &idx));
        CHECK(idx == (unsigned)k, "nvmlDeviceGetIndex of index %d's handle: %u", k, idx);
    }
    nvmlDevice_t h = NULL;
    CHECK(N(nvmlDeviceGetHandleByIndex_v2)(2, &h) != NVML_SUCCESS, "nvmlDeviceGetHandleByIndex_v2(2) succeeded");
    CHECK(N(nvmlDeviceGetHandleByIndex)(2, &h) != NVML_SUCCESS, "nvmlDeviceGetHandleByIndex(2) succeeded");
    char u[64];
    nvmlReturn_t r = N(nvmlDeviceGetHandleByUUID)(fake_uuid(1, u, sizeof(u)), &h);
    CHECK(r == NVML_ERROR_NOT_FOUND, "nvmlDeviceGetHandleByUUID(GPU 1, hidden) returned %d", (int)r);
    r = N(nvmlDeviceGetHandleByPciBusId_v2)("00000000:02:00.0", &h);
    CHECK(r == NVML_ERROR_NOT_FOUND, "nvmlDeviceGetHandleByPciBusId_v2(GPU 1, hidden) returned %d", (int)r);
    unsigned idx = 99;
    NV(N(nvmlDeviceGetHandleByUUID)(fake_uuid(2, u, sizeof(u)), &h));
    NV(N(nvmlDeviceGetIndex)(h, &idx));
    CHECK(idx == 0, "nvmlDeviceGetIndex(GPU 2) = %u, want 0", idx);
    NV(N(nvmlDeviceGetHandleByPciBusId_v2)("00000000:01:00.0", &h));
    NV(N(nvmlDeviceGetIndex)(h, &idx));
    CHECK(idx == 1, "nvmlDeviceGetIndex(GPU 0 by PCI bus id) = %u, want 1", idx);
}

/* ======================================================================
 * Every allocation path, past the quota
 * ====================================================================== */

/* A path that takes linear device memory: alloc(bytes) and its free. */
typedef CUresult (*lin_alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*lin_free_fn)(CUdeviceptr);

/*
 * (a) an allocation within the quota is counted (rounded to 512 B), (b) one
 * past what is left is refused while the GPU has room, (c) the quota can be
 * filled exactly and no further, (d) freeing gives everything back.
 */
static void linear_path(const char *what, lin_alloc_fn alloc, lin_free_fn release, bool fill)
{
    start();
    const uint64_t S = 100 * MiB + 1;
    CUdeviceptr p = 0, q = 0, extra = 0;
    CU(alloc(&p, S));
    expect_used(OVH + round512(S), what);
    uint64_t left = L - OVH - round512(S);
    expect_refused(alloc(&q, left + 1), left + 1, what);
    expect_refused(alloc(&q, left + 64 * MiB), left + 64 * MiB, what);
    expect_used(OVH + round512(S), "after the refusals");
    if (fill) {
        CU(alloc(&q, left));
        expect_used(L, "the quota filled exactly");
        expect_refused(alloc(&extra, 1), 1, "one byte past a full quota");
        CU(release(q));
    }
    CU(release(p));
    expect_used(OVH, "after the frees");
}

static CUresult legacy_alloc(CUdeviceptr *p, size_t bytes)
{
    CUdeviceptr_v1 v = 0;
    CUresult r = F(cuMemAlloc)(&v, (unsigned)bytes);
    *p = v;
    return r;
}

static CUresult legacy_free(CUdeviceptr p)
{
    return F(cuMemFree)((CUdeviceptr_v1)p);
}

static CUresult managed_alloc(CUdeviceptr *p, size_t bytes)
{
    return F(cuMemAllocManaged)(p, bytes, CU_MEM_ATTACH_GLOBAL);
}

static void scenario_alloc_v2(void)
{
    linear_path("cuMemAlloc_v2", F(cuMemAlloc_v2), F(cuMemFree_v2), true);
}

static void scenario_alloc_legacy(void)
{
    /* 32-bit addresses: the fake maps them below 2 GiB, where a quota-sized block may not fit. */
    linear_path("cuMemAlloc (32-bit)", legacy_alloc, legacy_free, false);
}

static void scenario_alloc_managed(void)
{
    linear_path("cuMemAllocManaged", managed_alloc, F(cuMemFree_v2), true);
}

typedef CUresult (*gpa_v2_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static void *proc_address(const char *name, int version, cuuint64_t flags)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult st = -1;
    CUresult r = ((gpa_v2_fn)F(cuGetProcAddress_v2))(name, &p, version, flags, &st);
    CHECK(r == CUDA_SUCCESS && st == CU_GET_PROC_ADDRESS_SUCCESS && p, "cuGetProcAddress_v2(%s, %d): %d/%d", name,
          version, (int)r, (int)st);
    CHECK(p && in_library(p, "libvgpu-cuda"), "cuGetProcAddress_v2(%s, %d) is not vgpu's", name, version);
    return p;
}

/* The CUDA runtime's route: pointers from cuGetProcAddress_v2 are bound by the quota too. */
static void scenario_proc_address(void)
{
    CU(F(cuInit)(0));
    lin_alloc_fn alloc = (lin_alloc_fn)proc_address("cuMemAlloc", 13000, CU_GET_PROC_ADDRESS_DEFAULT);
    lin_free_fn release = (lin_free_fn)proc_address("cuMemFree", 13000, CU_GET_PROC_ADDRESS_DEFAULT);
    if (!alloc || !release)
        return;
    linear_path("cuMemAlloc via cuGetProcAddress_v2", alloc, release, true);
    /* The per-thread-stream route to stream-ordered memory as well. */
    typedef CUresult (*async_fn)(CUdeviceptr *, size_t, CUstream);
    async_fn async = (async_fn)proc_address("cuMemAllocAsync", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    CUdeviceptr q = 0;
    if (async)
        expect_refused(async(&q, L, NULL), L, "cuMemAllocAsync (per-thread) via cuGetProcAddress_v2");
    expect_used(OVH, "after the per-thread refusal");
}

/* cuMemAllocPitch_v2 counts pitch * height, and the padding is within the quota too. */
static void scenario_alloc_pitch(void)
{
    start();
    CUdeviceptr p = 0, q = 0, filler = 0;
    size_t pitch = 0, pitch2 = 0;
    const size_t W = 1000, H = 1000;
    CU(F(cuMemAllocPitch_v2)(&p, &pitch, W, H, 4));
    CHECK(pitch >= W, "pitch %zu", pitch);
    uint64_t counted = round512((uint64_t)pitch * H);
    expect_used(OVH + counted, "cuMemAllocPitch_v2 counts pitch * height");
    uint64_t left = L - OVH - counted;
    expect_refused(F(cuMemAllocPitch_v2)(&q, &pitch2, 1 * MiB, left / MiB + 1, 4), (left / MiB + 1) * MiB,
                   "cuMemAllocPitch_v2 past what is left");
    expect_used(OVH + counted, "after the refusal");
    /* Leave room for width * height, not for pitch * height: the padding must not pass the quota. */
    if (pitch > W) {
        CU(F(cuMemAlloc_v2)(&filler, left - round512(W * H)));
        expect_used(L - round512(W * H), "the quota filled but for width * height");
        CUresult r = F(cuMemAllocPitch_v2)(&q, &pitch2, W, H, 4);
        expect_refused(r, (uint64_t)pitch * H, "cuMemAllocPitch_v2 whose padded rows do not fit");
        if (r == CUDA_SUCCESS)
            F(cuMemFree_v2)(q);
        expect_used(L - round512(W * H), "after the padded refusal");
        CU(F(cuMemFree_v2)(filler));
    }
    CU(F(cuMemFree_v2)(p));
    expect_used(OVH, "after the frees");
}

/* ---- stream-ordered: counted by what the pool reserves ---- */

typedef CUresult (*async_alloc_fn)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*async_free_fn)(CUdeviceptr, CUstream);
typedef CUresult (*pool_alloc_fn)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);

static uint64_t reserve_of(CUmemoryPool pool)
{
    cuuint64_t v = 0;
    CU(F(cuMemPoolGetAttribute)(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v));
    return v;
}

static void async_path(const char *what, async_alloc_fn alloc, async_free_fn release)
{
    start();
    CUmemoryPool pool = NULL;
    CU(F(cuDeviceGetMemPool)(&pool, device(0)));
    CHECK(reserve_of(pool) == 0, "the device's pool starts with a reserve");
    const uint64_t S = 100 * MiB + 1000;
    CUdeviceptr p = 0, q = 0;
    CU(alloc(&p, S, NULL));
    uint64_t reserve = reserve_of(pool);
    CHECK(reserve >= S, "pool reserve %llu after %llu", (unsigned long long)reserve, (unsigned long long)S);
    expect_used(OVH + reserve, "a stream-ordered allocation counts the pool's reserve");
    uint64_t left = L - OVH - reserve;
    expect_refused(alloc(&q, left + MiB, NULL), left + MiB, what);
    expect_used(OVH + reserve, "after the refusal");
    CU(release(p, NULL));
    expect_used(OVH + reserve, "a freed block stays in the pool's reserve");
    /* The idle reserve is reused: the quota can be filled exactly through the pool. */
    CU(alloc(&q, L - OVH, NULL));
    CHECK(reserve_of(pool) == L - OVH, "pool reserve %llu", (unsigned long long)reserve_of(pool));
    expect_used(L, "the quota filled through the pool");
    CU(release(q, NULL));
    CU(F(cuMemPoolTrimTo)(pool, 0));
    CHECK(reserve_of(pool) == 0, "pool reserve %llu after a trim to 0", (unsigned long long)reserve_of(pool));
    expect_used(OVH, "cuMemPoolTrimTo(pool, 0) returns the reserve");
}

static void scenario_alloc_async(void)
{
    async_path("cuMemAllocAsync", F(cuMemAllocAsync), F(cuMemFreeAsync));
}

static void scenario_alloc_async_ptsz(void)
{
    async_path("cuMemAllocAsync_ptsz", F(cuMemAllocAsync_ptsz), F(cuMemFreeAsync_ptsz));
}

static void pool_path(const char *what, pool_alloc_fn alloc, async_free_fn release)
{
    start();
    CUmemPoolProps props = { .allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                             .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = device(0) } };
    CUmemoryPool pool = NULL;
    CU(F(cuMemPoolCreate)(&pool, &props));
    const uint64_t S = 64 * MiB + 3;
    CUdeviceptr p = 0, q = 0;
    CU(alloc(&p, S, pool, NULL));
    uint64_t reserve = reserve_of(pool);
    CHECK(reserve >= S, "pool reserve %llu", (unsigned long long)reserve);
    expect_used(OVH + reserve, "an allocation from a created pool counts its reserve");
    uint64_t left = L - OVH - reserve;
    expect_refused(alloc(&q, left + MiB, pool, NULL), left + MiB, what);
    expect_used(OVH + reserve, "after the refusal");
    CU(release(p, NULL));
    expect_used(OVH + reserve, "a freed block stays in the pool's reserve");
    CU(F(cuMemPoolDestroy)(pool));
    expect_used(OVH, "cuMemPoolDestroy returns the reserve");
}

static void scenario_alloc_from_pool(void)
{
    pool_path("cuMemAllocFromPoolAsync", F(cuMemAllocFromPoolAsync), F(cuMemFreeAsync));
}

static void scenario_alloc_from_pool_ptsz(void)
{
    pool_path("cuMemAllocFromPoolAsync_ptsz", F(cuMemAllocFromPoolAsync_ptsz), F(cuMemFreeAsync_ptsz));
}

/* ---- virtual memory management ---- */

static void scenario_mem_create(void)
{
    start();
    CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                 .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = device(0) } };
    size_t gran = 0;
    CU(F(cuMemGetAllocationGranularity)(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CHECK(gran > 0 && gran % 512 == 0, "granularity %zu", gran);
    if (!gran)
        return;
    CUmemGenericAllocationHandle h = 0, g = 0, extra = 0;
    const uint64_t S = 32 * gran;
    CU(F(cuMemCreate)(&h, S, &prop, 0));
    expect_used(OVH + S, "cuMemCreate");
    uint64_t left = L - OVH - S;
    uint64_t past = (left / gran + 1) * gran;
    expect_refused(F(cuMemCreate)(&g, past, &prop, 0), past, "cuMemCreate past what is left");
    expect_used(OVH + S, "after the refusal");
    if (left % gran == 0) {
        CU(F(cuMemCreate)(&g, left, &prop, 0));
        expect_used(L, "the quota filled with cuMemCreate");
        expect_refused(F(cuMemCreate)(&extra, gran, &prop, 0), gran, "cuMemCreate on a full quota");
        /* Host memory is not the vGPU's: not refused on a full quota, not counted. */
        CUmemAllocationProp host = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                     .location = { .type = CU_MEM_LOCATION_TYPE_HOST, .id = 0 } };
        CU(F(cuMemCreate)(&extra, S, &host, 0));
        expect_used(L, "a host-memory cuMemCreate on a full quota");
        CU(F(cuMemRelease)(extra));
        expect_used(L, "after releasing the host memory");
        CU(F(cuMemRelease)(g));
    }
    CU(F(cuMemRelease)(h));
    expect_used(OVH, "cuMemRelease gives it back");
}

/* ---- arrays: their footprint from the descriptor ---- */

static void scenario_array_2d(void)
{
    start();
    CUDA_ARRAY_DESCRIPTOR d = { .Width = 1001, .Height = 999, .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 1 };
    CUarray a = NULL, b = NULL;
    CU(F(cuArrayCreate_v2)(&a, &d));
    uint64_t bytes = round512(1001ull * 999);
    expect_used(OVH + bytes, "cuArrayCreate_v2");
    CUDA_ARRAY_DESCRIPTOR big = { .Width = 32768, .Height = 16384, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1 };
    expect_refused(F(cuArrayCreate_v2)(&b, &big), 2 * GiB, "a 2 GiB cuArrayCreate_v2");
    CUDA_ARRAY_DESCRIPTOR rgba = { .Width = 4096, .Height = 1000, .Format = CU_AD_FORMAT_HALF, .NumChannels = 4 };
    CU(F(cuArrayCreate_v2)(&b, &rgba));
    expect_used(OVH + bytes + round512(4096ull * 1000 * 8), "a second cuArrayCreate_v2");
    CU(F(cuArrayDestroy)(a));
    CU(F(cuArrayDestroy)(b));
    expect_used(OVH, "cuArrayDestroy gives them back");
}

static void scenario_array_3d(void)
{
    start();
    CUDA_ARRAY3D_DESCRIPTOR d = { .Width = 255, .Height = 129, .Depth = 33, .Format = CU_AD_FORMAT_HALF, .NumChannels = 2 };
    CUarray a = NULL, b = NULL;
    CU(F(cuArray3DCreate_v2)(&a, &d));
    uint64_t bytes = round512(255ull * 129 * 33 * 4);
    expect_used(OVH + bytes, "cuArray3DCreate_v2");
    CUDA_ARRAY3D_DESCRIPTOR big = { .Width = 1024, .Height = 1024, .Depth = 512, .Format = CU_AD_FORMAT_FLOAT,
                                    .NumChannels = 1 };
    expect_refused(F(cuArray3DCreate_v2)(&b, &big), 2 * GiB, "a 2 GiB cuArray3DCreate_v2");
    expect_used(OVH + bytes, "after the refusal");
    CU(F(cuArrayDestroy)(a));
    expect_used(OVH, "cuArrayDestroy gives it back");
}

static void scenario_mipmapped(void)
{
    start();
    CUDA_ARRAY3D_DESCRIPTOR d = { .Width = 1000, .Height = 600, .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 4 };
    const unsigned levels = 5;
    uint64_t bytes = 0;
    for (unsigned l = 0, w = 1000, h = 600; l < levels; l++, w = w > 1 ? w / 2 : 1, h = h > 1 ? h / 2 : 1)
        bytes += (uint64_t)w * h * 4;
    CUmipmappedArray m = NULL, n = NULL;
    CU(F(cuMipmappedArrayCreate)(&m, &d, levels));
    expect_used(OVH + round512(bytes), "cuMipmappedArrayCreate counts every level");
    CUDA_ARRAY3D_DESCRIPTOR big = { .Width = 32768, .Height = 16384, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1 };
    expect_refused(F(cuMipmappedArrayCreate)(&n, &big, 2), 2 * GiB + GiB / 2, "a 2.5 GiB cuMipmappedArrayCreate");
    expect_used(OVH + round512(bytes), "after the refusal");
    CU(F(cuMipmappedArrayDestroy)(m));
    expect_used(OVH, "cuMipmappedArrayDestroy gives it back");
}

/* ---- contexts ---- */

/* cuCtxDestroy returns the context's allocations and, with it the last context, its overhead. */
static void scenario_ctx_destroy(void)
{
    read_settings();
    CU(F(cuInit)(0));
    expect_used_noctx(0, "no context yet");
    CUcontext ctx = NULL;
    CU(F(cuCtxCreate_v2)(&ctx, 0, device(0)));
    expect_used(OVH, "cuCtxCreate_v2");
    CUdeviceptr p = 0, q = 0;
    CU(F(cuMemAlloc_v2)(&p, GiB));
    CU(F(cuMemAllocManaged)(&q, 10 * MiB + 7, CU_MEM_ATTACH_GLOBAL));
    expect_used(OVH + GiB + round512(10 * MiB + 7), "allocations in the created context");
    CU(F(cuCtxDestroy_v2)(ctx));
    expect_used_noctx(0, "cuCtxDestroy_v2 returns the allocations and the overhead");
    /* All of it can be taken again. */
    CU(F(cuCtxCreate_v2)(&ctx, 0, device(0)));
    CU(F(cuMemAlloc_v2)(&p, L - OVH));
    expect_used(L, "the whole quota in a new context");
    CU(F(cuCtxDestroy_v2)(ctx));
    expect_used_noctx(0, "the second cuCtxDestroy_v2");

    /* With the primary context alive, destroying another returns only what was allocated in it. */
    CUcontext prim = primary(0);
    CUdeviceptr r = 0;
    CU(F(cuMemAlloc_v2)(&r, 256 * MiB));
    CU(F(cuCtxCreate_v2)(&ctx, 0, device(0)));
    CU(F(cuMemAlloc_v2)(&p, 512 * MiB));
    expect_used(2 * OVH + 768 * MiB, "allocations in two contexts");
    CU(F(cuCtxDestroy_v2)(ctx));
    CU(F(cuCtxSetCurrent)(prim));
    expect_used(OVH + 256 * MiB, "cuCtxDestroy_v2 with the primary context alive");
    CU(F(cuMemFree_v2)(r));
    expect_used(OVH, "after the free");
}

/* What the (fake) driver itself holds for this process on device dev. */
static uint64_t driver_holds(int dev)
{
    unsigned long long (*used)(int) = (unsigned long long (*)(int))fake_driver_sym("fakegpu_used");
    CHECK(used != NULL, "the fake's fakegpu_used");
    return used ? used(dev) : 0;
}

#define expect_driver_agrees(what)                                                                                 \
    CHECK(driver_holds(0) == bar0_used(0), "%s: the driver holds %llu, the vGPU counts %llu (off by %lld)", what, \
          (unsigned long long)driver_holds(0), (unsigned long long)bar0_used(0),                                 \
          (long long)(bar0_used(0) - driver_holds(0)))

/*
 * Every context takes device memory: the first on a device 256M (the
 * driver's per-process state comes with it), each further one 192M
 * (FAKEGPU_CTX_OVERHEAD, FAKEGPU_CTX_EXTRA; the H100 takes about 500M and
 * 524M).  Each is counted, measured once per GPU and then claimed before
 * it is made; a context that does not fit is refused.  VGPU_MEMORY_LIMIT=2G.
 */
static void scenario_contexts(void)
{
    read_settings();
    const uint64_t extra = env_size("FAKEGPU_CTX_EXTRA", OVH);
    CU(F(cuInit)(0));
    CUcontext prim = primary(0), a = NULL, b = NULL, c = NULL;
    expect_used(OVH, "the primary context");
    CU(F(cuCtxCreate_v2)(&a, 0, device(0)));
    expect_used(OVH + extra, "a second context (measured)");
    expect_driver_agrees("two contexts");
    CU(F(cuCtxCreate_v2)(&b, 0, device(0)));
    expect_used(OVH + 2 * extra, "a third context (claimed)");
    expect_driver_agrees("three contexts");
    /* Fill the quota to less than a context's worth. */
    CUdeviceptr p = 0;
    CU(F(cuMemAlloc_v2)(&p, L - OVH - 2 * extra - extra / 2));
    CUresult r = F(cuCtxCreate_v2)(&c, 0, device(0));
    expect_refused(r, extra, "a context past the quota");
    CU(F(cuCtxSetCurrent)(b));
    expect_used(L - extra / 2, "after the refused context");
    expect_driver_agrees("after the refused context");
    CU(F(cuMemFree_v2)(p));
    /* Whichever goes first, what is left is counted as the driver holds it. */
    CU(F(cuDevicePrimaryCtxRelease_v2)(device(0)));
    CU(F(cuCtxSetCurrent)(a));
    expect_used(OVH + extra, "two created contexts left");
    expect_driver_agrees("two created contexts left");
    CU(F(cuCtxDestroy_v2)(a));
    CU(F(cuCtxSetCurrent)(b));
    expect_used(OVH, "one context left");
    expect_driver_agrees("one context left");
    CU(F(cuCtxDestroy_v2)(b));
    expect_used_noctx(0, "no context left");
    (void)prim;
}

static size_t ctx_limit(CUlimit which)
{
    size_t v = 0;
    CU(F(cuCtxGetLimit)(&v, which));
    return v;
}

/*
 * Context limits reserve device memory no allocation reports: the stack
 * for every thread the GPU can hold at once (on an H100, 64 KiB of stack
 * takes 16.6 GiB), the malloc heap and the printf FIFO.  They are counted,
 * and refused past the quota.  VGPU_MEMORY_LIMIT=2G; 132 SMs of 2048 threads.
 */
static void scenario_ctx_limits(void)
{
    const uint64_t threads = 132 * 2048;
    start();
    CU(F(cuCtxSetLimit)(CU_LIMIT_STACK_SIZE, 2048));
    expect_used(OVH + (2048 - 1024) * threads, "a 2 KiB stack");
    expect_driver_agrees("a 2 KiB stack");
    CUresult r = F(cuCtxSetLimit)(CU_LIMIT_STACK_SIZE, 8192);
    expect_refused(r, (8192 - 2048) * threads, "an 8 KiB stack past the quota");
    CHECK(ctx_limit(CU_LIMIT_STACK_SIZE) == 2048, "the refused stack size took effect: %zu",
          ctx_limit(CU_LIMIT_STACK_SIZE));
    expect_used(OVH + (2048 - 1024) * threads, "after the refused stack");
    /* The driver rounds 2000 up to 2000 + 0 (a multiple of 16): counted as the driver set it. */
    CU(F(cuCtxSetLimit)(CU_LIMIT_STACK_SIZE, 2001));
    expect_used(OVH + (2016 - 1024) * threads, "a 2001-byte stack, rounded up to 2016");
    expect_driver_agrees("the rounded stack");
    CU(F(cuCtxSetLimit)(CU_LIMIT_MALLOC_HEAP_SIZE, 72 * MiB));
    CU(F(cuCtxSetLimit)(CU_LIMIT_PRINTF_FIFO_SIZE, 9 * MiB));
    expect_used(OVH + (2016 - 1024) * threads + 64 * MiB + 8 * MiB, "a 72 MiB heap and a 9 MiB printf FIFO");
    expect_driver_agrees("heap and FIFO");
    CU(F(cuCtxSetLimit)(CU_LIMIT_STACK_SIZE, 1024));
    expect_used(OVH + 72 * MiB, "the stack back to its default");
    expect_driver_agrees("the stack back to its default");
    CU(F(cuCtxSetLimit)(CU_LIMIT_STACK_SIZE, 4096));
    CU(F(cuDevicePrimaryCtxReset_v2)(device(0)));
    expect_used_noctx(0, "the context reset: its limits' memory is back");
    CHECK(driver_holds(0) == 0, "the driver still holds %llu", (unsigned long long)driver_holds(0));
}

/* cuDevicePrimaryCtxReset (and a release to zero) returns the primary context's allocations. */
static void scenario_primary_reset(void)
{
    start();
    CUdeviceptr p = 0, q = 0;
    CU(F(cuMemAlloc_v2)(&p, GiB));
    CU(F(cuMemAllocPitch_v2)(&q, &(size_t){ 0 }, 4096, 1000, 4));
    expect_used(OVH + GiB + round512(4096 * 1000), "allocations in the primary context");
    CU(F(cuDevicePrimaryCtxReset_v2)(device(0)));
    expect_used_noctx(0, "cuDevicePrimaryCtxReset_v2 returns them and the overhead");
    primary(0);
    CU(F(cuMemAlloc_v2)(&p, L - OVH));
    expect_used(L, "the whole quota after the reset");
    CU(F(cuDevicePrimaryCtxReset)(device(0)));
    expect_used_noctx(0, "cuDevicePrimaryCtxReset (v1)");
    primary(0);
    CU(F(cuMemAlloc_v2)(&p, 512 * MiB));
    expect_used(OVH + 512 * MiB, "allocated again");
    CU(F(cuDevicePrimaryCtxRelease_v2)(device(0)));
    expect_used_noctx(0, "cuDevicePrimaryCtxRelease_v2 to zero");
}

/* ---- the refusal, as the log tells it ---- */

static void scenario_oom_log(void)
{
    start();
    CUdeviceptr p = 0;
    expect_refused(F(cuMemAlloc_v2)(&p, 5 * GiB), 5 * GiB, "5 GiB on a 4 GiB quota");
    char line[2048] = "";
    const char *path = getenv("VGPU_BAR0");
    int n = log_count("refused", NULL, NULL, line, sizeof(line));
    CHECK(n == 1, "%d log lines about a refusal, want 1", n);
    CHECK(strstr(line, path) != NULL, "the refusal line does not name the vGPU %s: %s", path, line);
    CHECK(strstr(line, "5.00 GiB") != NULL, "the refusal line does not say 5.00 GiB was asked: %s", line);
    CHECK(strstr(line, "3.75 GiB left") != NULL, "the refusal line does not say 3.75 GiB was left: %s", line);
    CHECK(strstr(line, ": info: ") != NULL, "the refusal line is not at info level: %s", line);
    CHECK(bar0_refusals(0) == 1, "BAR0 counts %llu refusals", (unsigned long long)bar0_refusals(0));
    expect_used(OVH, "after the refusal");
}

/* ======================================================================
 * Several processes (driven by quota.sh)
 * ====================================================================== */

/* hold BYTES READY GO: allocate BYTES, say so in READY, wait for GO, free, exit. */
static void scenario_hold(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: hold BYTES READY GO\n");
        exit(2);
    }
    start_in(false); /* other processes may hold memory of this vGPU */
    uint64_t bytes = parse_size(argv[2]);
    CUdeviceptr p = 0;
    CU(F(cuMemAlloc_v2)(&p, bytes));
    if (atomic_load(&failures))
        return;
    char text[64];
    snprintf(text, sizeof(text), "%d\n", (int)getpid());
    signal_file(argv[3], text);
    CHECK(wait_file(argv[4], 60) == 0, "no %s within 60 s", argv[4]);
    CU(F(cuMemFree_v2)(p));
}

/* shared-second A_BYTES: another process holds A_BYTES (and its context) on this vGPU. */
static void scenario_shared_second(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: shared-second A_BYTES\n");
        exit(2);
    }
    read_settings();
    uint64_t a = parse_size(argv[2]);
    CU(F(cuInit)(0));
    primary(0);
    uint64_t used = a + 2 * OVH;
    CHECK(used < L, "the scenario leaves nothing to share");
    expect_used(used, "the first process's bytes and both contexts");
    uint64_t left = L - used;
    CUdeviceptr p = 0, q = 0;
    expect_refused(F(cuMemAlloc_v2)(&q, left + 512), left + 512, "512 bytes past what the first process left");
    CU(F(cuMemAlloc_v2)(&p, left));
    expect_used(L, "the second process took what was left");
    expect_refused(F(cuMemAlloc_v2)(&q, 1), 1, "one byte on a full shared quota");
    CHECK(bar0_held_by(getpid(), 0) == (int64_t)(left + OVH), "this process holds %lld in BAR0, want %llu",
          (long long)bar0_held_by(getpid(), 0), (unsigned long long)(left + OVH));
    CU(F(cuMemFree_v2)(p));
    expect_used(used, "after the free");
}

/* reclaim-watch A_BYTES READY GO: another process holds A_BYTES; after GO (it was killed), its
 * bytes come back within 1.5 s, and can be allocated. */
static void scenario_reclaim_watch(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: reclaim-watch A_BYTES READY GO\n");
        exit(2);
    }
    read_settings();
    uint64_t a = parse_size(argv[2]);
    CU(F(cuInit)(0));
    primary(0);
    expect_used(a + 2 * OVH, "the other process's bytes and both contexts");
    signal_file(argv[3], "ready\n");
    if (wait_file(argv[4], 60) != 0) {
        CHECK(0, "no %s within 60 s", argv[4]);
        return;
    }
    double t0 = now_s(), seen = -1, seen_nvml = -1;
    while (now_s() - t0 < 5 && (seen < 0 || seen_nvml < 0)) {
        size_t f, t;
        cuda_mem(&f, &t);
        if (seen < 0 && f == L - OVH)
            seen = now_s() - t0;
        if (seen_nvml < 0 && nvml_mem(0).used == OVH)
            seen_nvml = now_s() - t0;
        usleep(10000);
    }
    printf("returned after %.3f s (cuMemGetInfo), %.3f s (NVML)\n", seen, seen_nvml);
    CHECK(seen >= 0 && seen <= 1.5, "cuMemGetInfo saw the killed process's bytes back after %.3f s (want <= 1.5)",
          seen);
    CHECK(seen_nvml >= 0 && seen_nvml <= 1.5, "NVML saw the killed process's bytes back after %.3f s", seen_nvml);
    expect_used(OVH, "the killed process's bytes and context returned");
    CUdeviceptr p = 0;
    CU(F(cuMemAlloc_v2)(&p, L - OVH));
    expect_used(L, "the reclaimed bytes allocated");
    CU(F(cuMemFree_v2)(p));
}

/* expect-used BYTES [PROCESSES]: BAR0 (read raw) and NVML say the vGPU uses BYTES on device 0. */
static void scenario_expect_used(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: expect-used BYTES [PROCESSES]\n");
        exit(2);
    }
    uint64_t want = strtoull(argv[2], NULL, 10);
    CHECK(bar0_used(0) == want, "BAR0 memory_used %llu, want %llu (off by %lld)", (unsigned long long)bar0_used(0),
          (unsigned long long)want, (long long)(bar0_used(0) - want));
    if (argc > 3) {
        unsigned procs = atomic_load((_Atomic uint32_t *)&env_bar0()->status.processes);
        CHECK(procs == (unsigned)atoi(argv[3]), "BAR0 has %u live processes, want %s", procs, argv[3]);
    }
    nvmlMemory_t m = nvml_mem(0);
    CHECK(m.used == want, "NVML used %llu, want %llu", m.used, (unsigned long long)want);
    if (atomic_load(&failures))
        dump_slots(0);
}

/*
 * poke-counters USED PROCESSES: writes device 0's memory_used (a value, or
 * +DELTA) and the live-process count straight into BAR0, as a process
 * killed between two updates, or a stray write, leaves them.
 */
static void scenario_poke_counters(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: poke-counters USED|+DELTA PROCESSES\n");
        exit(2);
    }
    const char *path = getenv("VGPU_BAR0");
    int fd = open(path, O_RDWR | O_CLOEXEC);
    struct vgpu_bar0 *b = fd >= 0 ? mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (fd >= 0)
        close(fd);
    if (b == MAP_FAILED) {
        CHECK(0, "cannot map %s read-write", path);
        return;
    }
    uint64_t v = strtoull(argv[2] + (argv[2][0] == '+'), NULL, 10);
    if (argv[2][0] == '+')
        atomic_fetch_add(&b->status.device[0].memory_used, v);
    else
        atomic_store(&b->status.device[0].memory_used, v);
    atomic_store(&b->status.processes, (uint32_t)atoi(argv[3]));
    munmap(b, sizeof(*b));
}

/*
 * poke-half-reaped HELD LOST: leaves a free slot of BAR0 as a process of the
 * vGPU that died halfway through returning a dead process's memory leaves
 * it: reaping, in the name of a pid that is gone, still holding HELD, and
 * the counters still counting HELD + LOST and the process (LOST: what the
 * dead reaper took out of the slot but not off the counters).
 */
static void scenario_poke_half_reaped(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: poke-half-reaped HELD LOST\n");
        exit(2);
    }
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    waitpid(dead, NULL, 0);
    const char *path = getenv("VGPU_BAR0");
    int fd = open(path, O_RDWR | O_CLOEXEC);
    struct vgpu_bar0 *b = fd >= 0 ? mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (fd >= 0)
        close(fd);
    struct stat ns;
    if (b == MAP_FAILED || stat("/proc/self/ns/pid", &ns) != 0) {
        CHECK(0, "cannot map %s read-write", path);
        return;
    }
    int slot = 0;
    while (slot < VGPU_BAR0_MAX_PROCS && atomic_load(&b->procs[slot].owner) != 0)
        slot++;
    CHECK(slot < VGPU_BAR0_MAX_PROCS, "no free slot in %s", path);
    if (slot < VGPU_BAR0_MAX_PROCS) {
        uint64_t held = strtoull(argv[2], NULL, 10), lost = strtoull(argv[3], NULL, 10);
        struct vgpu_bar0_proc *p = &b->procs[slot];
        p->pid_ns = ns.st_ino;
        atomic_store(&p->held[0], held);
        atomic_fetch_add(&b->status.device[0].memory_used, held + lost);
        atomic_store(&p->owner, VGPU_BAR0_OWNER(dead, VGPU_PROC_REAPING));
        printf("slot %d: reaping in the name of pid %d (gone), holding %llu, %llu more counted\n", slot, (int)dead,
               (unsigned long long)held, (unsigned long long)lost);
    }
    munmap(b, sizeof(*b));
}

/* expect-rebuilt BYTES PROCESSES: once a process joins, the counters are
 * what the live processes hold, whatever they said before. */
static void scenario_expect_rebuilt(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: expect-rebuilt BYTES PROCESSES\n");
        exit(2);
    }
    nvml_init(); /* joins the vGPU */
    uint64_t want = strtoull(argv[2], NULL, 10);
    CHECK(bar0_used(0) == want, "BAR0 memory_used %llu, want %llu (off by %lld)", (unsigned long long)bar0_used(0),
          (unsigned long long)want, (long long)(bar0_used(0) - want));
    unsigned procs = atomic_load((_Atomic uint32_t *)&env_bar0()->status.processes);
    CHECK(procs == (unsigned)atoi(argv[3]), "BAR0 counts %u live processes, want %s", procs, argv[3]);
    CHECK(nvml_mem(0).used == want, "NVML used %llu, want %llu", nvml_mem(0).used, (unsigned long long)want);
}

/* procs-list [PID:BYTES...]: NVML lists exactly these processes of this vGPU. */
static void check_process_list(int version, int argc, char **argv)
{
    nvmlDevice_t dev = nvml_dev(0);
    unsigned want = (unsigned)(argc - 2), n = 0;
    nvmlReturn_t r;
    if (version == 1)
        r = N(nvmlDeviceGetComputeRunningProcesses)(dev, &n, NULL);
    else
        r = N(nvmlDeviceGetComputeRunningProcesses_v3)(dev, &n, NULL);
    CHECK(n == want && r == (want ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS),
          "v%d sizing call: %d, count %u, want %u", version, (int)r, n, want);
    nvmlProcessInfo_t list[64];
    nvmlProcessInfo_v1_t list1[64];
    n = 64;
    if (version == 1)
        NV(N(nvmlDeviceGetComputeRunningProcesses)(dev, &n, list1));
    else
        NV(N(nvmlDeviceGetComputeRunningProcesses_v3)(dev, &n, list));
    CHECK(n == want, "v%d lists %u processes, want %u", version, n, want);
    for (unsigned i = 0; i < n && i < 64; i++) {
        unsigned pid = version == 1 ? list1[i].pid : list[i].pid;
        unsigned long long used = version == 1 ? list1[i].usedGpuMemory : list[i].usedGpuMemory;
        bool found = false;
        for (int k = 2; k < argc; k++) {
            unsigned wpid = 0;
            unsigned long long wbytes = 0;
            sscanf(argv[k], "%u:%llu", &wpid, &wbytes);
            if (wpid == pid) {
                found = true;
                CHECK(used == wbytes, "v%d: process %u holds %llu, want %llu", version, pid, used, wbytes);
            }
        }
        CHECK(found, "v%d lists process %u, which is not the vGPU's", version, pid);
    }
}

static void scenario_procs_list(int argc, char **argv)
{
    check_process_list(3, argc, argv);
    check_process_list(1, argc, argv);
    unsigned long long sum = 0;
    for (int k = 2; k < argc; k++) {
        unsigned wpid = 0;
        unsigned long long wbytes = 0;
        sscanf(argv[k], "%u:%llu", &wpid, &wbytes);
        sum += wbytes;
    }
    CHECK(nvml_mem(0).used == sum, "NVML used %llu, the listed processes hold %llu", nvml_mem(0).used, sum);
}

/* This process's start time, as /proc/PID/stat's field 22 gives it. */
static uint64_t own_start_time(void)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    for (int field = 2; p && field < 22; field++)
        p = strchr(p + 1, ' ');
    return p ? strtoull(p + 1, NULL, 10) : 0;
}

/*
 * More processes than fit a small buffer: 300 processes of the vGPU hold
 * memory on device 0 (slots planted for this live process, so no reaper
 * frees them).  Every NVML process query sizes, then lists all of them.
 */
static void scenario_procs_many(void)
{
    enum { PLANTED = 299, MANY = PLANTED + 1 };
    start();
    const char *path = getenv("VGPU_BAR0");
    int fd = open(path, O_RDWR | O_CLOEXEC);
    struct vgpu_bar0 *b = fd >= 0 ? mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (fd >= 0)
        close(fd);
    if (b == MAP_FAILED) {
        CHECK(0, "cannot map %s read-write", path);
        return;
    }
    int planted[PLANTED], np = 0;
    for (int i = 0; i < VGPU_BAR0_MAX_PROCS && np < PLANTED; i++) {
        if (atomic_load(&b->procs[i].owner) != 0)
            continue;
        b->procs[i].start_time = own_start_time();
        atomic_store(&b->procs[i].held[0], MiB);
        atomic_store(&b->procs[i].owner, VGPU_BAR0_OWNER(getpid(), VGPU_PROC_LIVE));
        planted[np++] = i;
    }
    nvmlDevice_t dev = nvml_dev(0);
    for (int version = 1; version <= 3; version++) {
        unsigned count = 0;
        nvmlReturn_t r = version == 1   ? N(nvmlDeviceGetComputeRunningProcesses)(dev, &count, NULL)
                         : version == 2 ? N(nvmlDeviceGetComputeRunningProcesses_v2)(dev, &count, NULL)
                                        : N(nvmlDeviceGetComputeRunningProcesses_v3)(dev, &count, NULL);
        CHECK(r == NVML_ERROR_INSUFFICIENT_SIZE && count == MANY,
              "v%d sizing query: returned %d with count %u, want INSUFFICIENT_SIZE and %d", version, (int)r, count,
              MANY);
        nvmlProcessInfo_t *infos = calloc(MANY, sizeof(*infos));
        count = MANY;
        r = version == 1   ? N(nvmlDeviceGetComputeRunningProcesses)(dev, &count, (nvmlProcessInfo_v1_t *)infos)
            : version == 2 ? N(nvmlDeviceGetComputeRunningProcesses_v2)(dev, &count, (nvmlProcessInfo_v2_t *)infos)
                           : N(nvmlDeviceGetComputeRunningProcesses_v3)(dev, &count, infos);
        CHECK(r == NVML_SUCCESS && count == MANY, "v%d with room for %d: returned %d with count %u", version, MANY,
              (int)r, count);
        unsigned long long sum = 0;
        for (unsigned k = 0; r == NVML_SUCCESS && k < count; k++)
            sum += version == 1 ? ((nvmlProcessInfo_v1_t *)infos)[k].usedGpuMemory : infos[k].usedGpuMemory;
        CHECK(sum == OVH + PLANTED * MiB, "v%d: the listed processes hold %llu, want %llu", version, sum,
              (unsigned long long)(OVH + PLANTED * MiB));
        free(infos);
    }
    for (int k = 0; k < np; k++) {
        atomic_store(&b->procs[planted[k]].held[0], 0);
        atomic_store(&b->procs[planted[k]].owner, 0);
    }
    munmap(b, sizeof(*b));
}

/*
 * A fork child counts in its parent's vGPU, whatever became of the BAR0
 * file's name meanwhile; when it cannot, it is refused memory, never let
 * through uncounted.  VGPU_MEMORY_LIMIT=2G: the parent holds 512M and its
 * context; then the BAR0 file is unlinked, and the child (closing every
 * descriptor it inherited, with close_all) allocates.
 */
static void fork_after_unlink(bool close_all)
{
    start();
    CUdeviceptr p = 0;
    CU(F(cuMemAlloc_v2)(&p, 512 * MiB));
    const char *path = getenv("VGPU_BAR0");
    int status_pipe[2];
    CHECK(pipe(status_pipe) == 0, "pipe");
    CHECK(unlink(path) == 0, "unlink %s", path);
    pid_t child = fork();
    if (child == 0) {
        close(status_pipe[0]);
        if (close_all)
            for (int fd = 3; fd < 1024; fd++)
                if (fd != status_pipe[1])
                    close(fd);
        CUdeviceptr a = 0, b = 0;
        uint64_t left = L - OVH - 512 * MiB; /* the parent's context and allocation */
        CUresult ra = F(cuMemAlloc_v2)(&a, left);
        CUresult rb = F(cuMemAlloc_v2)(&b, 512);
        char verdict;
        if (!close_all) /* counted in the parent's window: all that is left, and not a byte more */
            verdict = ra == CUDA_SUCCESS && rb == CUDA_ERROR_OUT_OF_MEMORY ? 'y' : 'n';
        else /* nothing to count in: refused */
            verdict = ra == CUDA_ERROR_OUT_OF_MEMORY && rb == CUDA_ERROR_OUT_OF_MEMORY ? 'y' : 'n';
        if (verdict == 'n')
            fprintf(stderr, "FAIL child: %s: allocating what is left returned %d, 512 bytes more %d\n",
                    close_all ? "descriptors closed" : "same window", (int)ra, (int)rb);
        if (write(status_pipe[1], &verdict, 1) != 1)
            _exit(2);
        _exit(0);
    }
    close(status_pipe[1]);
    char verdict = 'n';
    CHECK(read(status_pipe[0], &verdict, 1) == 1 && verdict == 'y', "the child's allocations (above)");
    int st = 0;
    waitpid(child, &st, 0);
    CHECK(access(path, F_OK) != 0, "the child made a new BAR0 file at %s: a second quota", path);
    if (close_all)
        CHECK(log_count("after fork", "refused", NULL, NULL, 0) >= 1, "no log line says why the child was refused");
    CU(F(cuMemFree_v2)(p));
}

static void scenario_fork_bar0_unlinked(void)
{
    fork_after_unlink(false);
}

static void scenario_fork_rejoin_fails(void)
{
    fork_after_unlink(true);
}

/* ======================================================================
 * Concurrency: churn NTHREADS ID [READY GO]  (with READY GO: one of several
 * processes; all start at GO.start, and each writes "HOLDING REFUSALS" to READY)
 * ====================================================================== */

struct churner {
    pthread_t thread;
    CUcontext ctx;
    unsigned seed;
    uint64_t hold;      /* bytes asked for the final allocation */
    CUdeviceptr held;
    unsigned long allocs, refusals;
};

static atomic_bool churn_done;
/* The churners of one process start together and fill together: threads
 * that ran one after another on a loaded machine would never meet. */
static pthread_barrier_t churn_barrier;

static void *churn(void *arg)
{
    struct churner *c = arg;
    CU(F(cuCtxSetCurrent)(c->ctx));
    CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                 .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 } };
    enum { LIVE = 4, ROUNDS = 1500 };
    struct {
        int kind; /* 0 none, 1 cuMemAlloc_v2, 2 cuMemAllocManaged, 3 cuMemCreate */
        CUdeviceptr p;
        CUmemGenericAllocationHandle h;
    } live[LIVE] = { { 0 } };
    pthread_barrier_wait(&churn_barrier);
    for (int i = 0; i < ROUNDS; i++) {
        int k = rand_r(&c->seed) % LIVE;
        if (live[k].kind) {
            CU(live[k].kind == 3 ? F(cuMemRelease)(live[k].h) : F(cuMemFree_v2)(live[k].p));
            live[k].kind = 0;
            continue;
        }
        int kind = 1 + rand_r(&c->seed) % 3;
        size_t bytes = 1 + (size_t)rand_r(&c->seed) % (32 * MiB);
        CUresult r;
        if (kind == 1)
            r = F(cuMemAlloc_v2)(&live[k].p, bytes);
        else if (kind == 2)
            r = F(cuMemAllocManaged)(&live[k].p, bytes, CU_MEM_ATTACH_GLOBAL);
        else
            r = F(cuMemCreate)(&live[k].h, (bytes / (2 * MiB) + 1) * 2 * MiB, &prop, 0);
        if (r == CUDA_SUCCESS) {
            live[k].kind = kind;
            c->allocs++;
        } else {
            CHECK(r == CUDA_ERROR_OUT_OF_MEMORY, "churn: allocation returned %d", (int)r);
            c->refusals++;
        }
    }
    /* Then every thread, still holding its live set, takes 32 MiB at a time
     * until the quota says no: the churn reaches the quota whatever the
     * scheduler made of the rounds above. */
    pthread_barrier_wait(&churn_barrier);
    enum { FILL = 64 };
    CUdeviceptr fill[FILL];
    int filled = 0;
    CUresult fr = CUDA_SUCCESS;
    while (filled < FILL && (fr = F(cuMemAlloc_v2)(&fill[filled], 32 * MiB)) == CUDA_SUCCESS) {
        filled++;
        c->allocs++;
    }
    if (filled < FILL) {
        CHECK(fr == CUDA_ERROR_OUT_OF_MEMORY, "fill: allocation returned %d", (int)fr);
        c->refusals++;
    }
    pthread_barrier_wait(&churn_barrier);
    for (int f = 0; f < filled; f++)
        CU(F(cuMemFree_v2)(fill[f]));
    for (int k = 0; k < LIVE; k++)
        if (live[k].kind)
            CU(live[k].kind == 3 ? F(cuMemRelease)(live[k].h) : F(cuMemFree_v2)(live[k].p));
    /* The final holding; others may still churn near the quota, so retry. */
    double end = now_s() + 30;
    CUresult r;
    while ((r = F(cuMemAlloc_v2)(&c->held, c->hold)) == CUDA_ERROR_OUT_OF_MEMORY && now_s() < end) {
        c->refusals++;
        usleep(1000);
    }
    CHECK(r == CUDA_SUCCESS, "the final %llu-byte allocation returned %d", (unsigned long long)c->hold, (int)r);
    return NULL;
}

/* Samples BAR0's count while the threads churn: it never passes the quota. */
static void *monitor(void *arg)
{
    (void)arg;
    uint64_t peak = 0;
    while (!atomic_load(&churn_done)) {
        uint64_t u = bar0_used(0);
        peak = u > peak ? u : peak;
    }
    CHECK(peak <= L, "BAR0 memory_used reached %llu, past the %llu quota", (unsigned long long)peak,
          (unsigned long long)L);
    printf("peak use %llu of %llu\n", (unsigned long long)peak, (unsigned long long)L);
    return NULL;
}

static void scenario_churn(int argc, char **argv)
{
    if (argc != 4 && argc != 6) {
        fprintf(stderr, "usage: churn NTHREADS ID [READY GO]\n");
        exit(2);
    }
    int nthreads = atoi(argv[2]), id = atoi(argv[3]);
    bool alone = argc == 4;
    if (nthreads < 1 || nthreads > 64) {
        fprintf(stderr, "churn: 1 to 64 threads\n");
        exit(2);
    }
    CUcontext ctx = start_in(alone);
    if (!alone) {
        /* All the processes churn at once: each says it is armed, then
         * waits for the common start (GO.start). */
        char armed[PATH_MAX], start[PATH_MAX];
        snprintf(armed, sizeof(armed), "%s.armed", argv[4]);
        snprintf(start, sizeof(start), "%s.start", argv[5]);
        signal_file(armed, "armed\n");
        CHECK(wait_file(start, 60) == 0, "no %s within 60 s", start);
    }
    uint64_t refusals0 = bar0_refusals(0);
    struct churner c[64];
    uint64_t holding = 0;
    for (int t = 0; t < nthreads; t++) {
        c[t] = (struct churner){ .ctx = ctx, .seed = (unsigned)(id * 1000 + t + 1),
                                 .hold = (uint64_t)(id * nthreads + t + 1) * MiB + 100 };
        holding += round512(c[t].hold);
    }
    pthread_barrier_init(&churn_barrier, NULL, (unsigned)nthreads);
    pthread_t mon;
    if (alone)
        pthread_create(&mon, NULL, monitor, NULL);
    for (int t = 0; t < nthreads; t++)
        pthread_create(&c[t].thread, NULL, churn, &c[t]);
    unsigned long allocs = 0, refusals = 0;
    for (int t = 0; t < nthreads; t++) {
        pthread_join(c[t].thread, NULL);
        allocs += c[t].allocs;
        refusals += c[t].refusals;
    }
    atomic_store(&churn_done, true);
    if (alone)
        pthread_join(mon, NULL);
    printf("process %d: %lu allocations, %lu refusals, holding %llu\n", id, allocs, refusals,
           (unsigned long long)holding);
    CHECK(allocs > 0, "the churn allocated nothing");
    if (alone) {
        CHECK(refusals > 0, "the churn never reached the quota (%lu allocations, %lu refusals)", allocs, refusals);
        CHECK(bar0_refusals(0) - refusals0 == refusals, "BAR0 counts %llu refusals, the threads saw %lu",
              (unsigned long long)(bar0_refusals(0) - refusals0), refusals);
        expect_used(OVH + holding, "after 32 threads churned");
        CHECK(bar0_held_by(getpid(), 0) == (int64_t)(OVH + holding), "this process's BAR0 slot holds %lld, want %llu",
              (long long)bar0_held_by(getpid(), 0), (unsigned long long)(OVH + holding));
        for (int t = 0; t < nthreads; t++)
            CU(F(cuMemFree_v2)(c[t].held));
        expect_used(OVH, "after the final frees");
        return;
    }
    /* What it holds, and how often the quota said no: the processes together must have met it. */
    char text[64];
    snprintf(text, sizeof(text), "%llu %lu\n", (unsigned long long)holding, refusals);
    signal_file(argv[4], text);
    CHECK(wait_file(argv[5], 60) == 0, "no %s within 60 s", argv[5]);
    /* Exits holding it all: leaving the vGPU returns it. */
}

/* ======================================================================
 * Refused settings, and none at all
 * ====================================================================== */

/* A process whose vGPU settings are wrong sees no device, in CUDA and in NVML. */
static void scenario_refused(void)
{
    CUresult r = F(cuInit)(0);
    CHECK(r == CUDA_ERROR_NO_DEVICE, "cuInit returned %d, want CUDA_ERROR_NO_DEVICE", (int)r);
    nvmlReturn_t n = N(nvmlInit_v2)();
    CHECK(n == NVML_SUCCESS, "nvmlInit_v2 returned %d", (int)n);
    unsigned count = 7, count1 = 7;
    NV(N(nvmlDeviceGetCount_v2)(&count));
    NV(N(nvmlDeviceGetCount)(&count1));
    CHECK(count == 0 && count1 == 0, "NVML device count %u / %u, want 0", count, count1);
    nvmlDevice_t d;
    CHECK(N(nvmlDeviceGetHandleByIndex_v2)(0, &d) != NVML_SUCCESS, "nvmlDeviceGetHandleByIndex_v2(0) succeeded");
    NV(N(nvmlShutdown)());
}

/* A quota smaller than one context: the context is refused, whether it is
 * the GPU's first (measured only once made, then undone) or a later
 * process's, and the vGPU never holds more than its quota. */
static void scenario_context_too_big(void)
{
    CU(F(cuInit)(0));
    CUcontext ctx = NULL;
    CUresult r = F(cuDevicePrimaryCtxRetain)(&ctx, 0);
    CHECK(r == CUDA_ERROR_OUT_OF_MEMORY, "cuDevicePrimaryCtxRetain returned %d, want CUDA_ERROR_OUT_OF_MEMORY", (int)r);
    CHECK(bar0_used(0) == 0, "BAR0 memory_used %llu after the refusal, want 0", (unsigned long long)bar0_used(0));
    r = F(cuCtxCreate_v2)(&ctx, 0, 0);
    CHECK(r == CUDA_ERROR_OUT_OF_MEMORY, "cuCtxCreate_v2 returned %d, want CUDA_ERROR_OUT_OF_MEMORY", (int)r);
    CUcontext current = (CUcontext)1;
    CU(F(cuCtxGetCurrent)(&current));
    CHECK(current == NULL, "a refused context was left current (%p)", (void *)current);
    CHECK(bar0_used(0) == 0, "BAR0 memory_used %llu after the refusals, want 0", (unsigned long long)bar0_used(0));
    /* What NVML shows stays inside the quota: used never past total. */
    NV(N(nvmlInit_v2)());
    nvmlDevice_t d;
    NV(N(nvmlDeviceGetHandleByIndex_v2)(0, &d));
    nvmlMemory_t m;
    NV(N(nvmlDeviceGetMemoryInfo)(d, &m));
    CHECK(m.used <= m.total && m.free <= m.total, "NVML total %llu used %llu free %llu", m.total, m.used, m.free);
}

/* A graph that allocates (allocation nodes) and the device's graph memory
 * reserve behind them: counted, claimed before a launch, given back by a trim. */
static CUgraphExec graph_allocating(uint64_t bytes, bool v2)
{
    CUgraph g;
    CU(F(cuGraphCreate)(&g, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS p = { .poolProps = { .allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                                                    .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 } },
                                     .bytesize = bytes };
    CUgraphNode alloc, release;
    CU(F(cuGraphAddMemAllocNode)(&alloc, g, NULL, 0, &p));
    CU(F(cuGraphAddMemFreeNode)(&release, g, &alloc, 1, p.dptr));
    CUgraphExec x;
    if (v2)
        CU(F(cuGraphInstantiate_v2)(&x, g, NULL, NULL, 0));
    else
        CU(F(cuGraphInstantiateWithFlags)(&x, g, 0));
    CU(F(cuGraphDestroy)(g));
    return x;
}

static void scenario_graph_memory(void)
{
    start();
    CUgraphExec a = graph_allocating(300 * MiB, false);
    expect_used(OVH, "a graph instantiated, not launched");
    CU(F(cuGraphLaunch)(a, NULL));
    CU(F(cuStreamSynchronize)(NULL));
    expect_used(OVH + 300 * MiB, "the graph memory reserve after a launch");
    CU(F(cuGraphLaunch)(a, NULL));
    expect_used(OVH + 300 * MiB, "the reserve reused by the next launch");
    /* A bigger graph grows the reserve by the difference only. */
    CUgraphExec b = graph_allocating(600 * MiB, true);
    CU(F(cuGraphLaunch)(b, NULL));
    expect_used(OVH + 600 * MiB, "the reserve grown to the bigger graph's");
    /* One that would take the vGPU past its quota is refused before the driver has it. */
    CUgraphExec c = graph_allocating(L - OVH + MiB, false);
    expect_refused(F(cuGraphLaunch)(c, NULL), L - OVH + MiB - 600 * MiB, "a graph past the quota");
    expect_used(OVH + 600 * MiB, "after the refused launch");
    /* The reserve counts against plain allocations too. */
    CUdeviceptr p = 0;
    expect_refused(F(cuMemAlloc_v2)(&p, L - OVH - 600 * MiB + MiB), L - OVH - 600 * MiB + MiB,
                   "an allocation past what the graph reserve left");
    CU(F(cuDeviceGraphMemTrim)(device(0)));
    expect_used(OVH, "cuDeviceGraphMemTrim gives the reserve back");
    CU(F(cuMemAlloc_v2)(&p, L - OVH - 600 * MiB + MiB));
    CU(F(cuMemFree_v2)(p));
    CU(F(cuGraphExecDestroy)(a));
    CU(F(cuGraphExecDestroy)(b));
    CU(F(cuGraphExecDestroy)(c));
    expect_used(OVH, "after the graphs were destroyed");
}

/* Joins the vGPU the environment describes, making its window, and leaves. */
static void scenario_view_quiet(void)
{
    CU(F(cuInit)(0));
    int count = 0;
    CU(F(cuDeviceGetCount)(&count));
    CHECK(count > 0, "no device");
}

/* No VGPU_* at all: vgpu is loaded but only forwards; the GPU's own figures. */
static void scenario_no_settings(void)
{
    CHECK(in_library(F(cuInit), "libvgpu-cuda") && in_library(N(nvmlInit_v2), "libvgpu-nvml"),
          "vgpu is not the loaded driver");
    CU(F(cuInit)(0));
    int count = 0;
    CU(F(cuDeviceGetCount)(&count));
    CHECK(count == 2, "count %d", count);
    for (int i = 0; i < count; i++) {
        size_t t = 0;
        CU(F(cuDeviceTotalMem_v2)(&t, device(i)));
        CHECK(t == 16 * GiB, "cuDeviceTotalMem_v2(%d) = %zu, want the GPU's 16 GiB", i, t);
        CHECK(nvml_mem((unsigned)i).total == 16 * GiB, "NVML total %llu", nvml_mem((unsigned)i).total);
    }
    primary(0);
    size_t f, t;
    cuda_mem(&f, &t);
    CHECK(t == 16 * GiB && f == 16 * GiB - 256 * MiB, "cuMemGetInfo_v2 free %zu total %zu", f, t);
    CUdeviceptr p = 0;
    CU(F(cuMemAlloc_v2)(&p, 12 * GiB));
    cuda_mem(&f, &t);
    CHECK(f == 4 * GiB - 256 * MiB, "free %zu after 12 GiB", f);
    CU(F(cuMemFree_v2)(p));
    unsigned n = 0;
    NV(N(nvmlDeviceGetCount_v2)(&n));
    CHECK(n == 2, "NVML count %u", n);
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*run)(void);
        void (*run_args)(int, char **);
    } scenarios[] = {
        { "view", scenario_view, NULL },
        { "per-device", scenario_per_device, NULL },
        { "visible", scenario_visible, NULL },
        { "alloc-v2", scenario_alloc_v2, NULL },
        { "alloc-legacy", scenario_alloc_legacy, NULL },
        { "alloc-pitch", scenario_alloc_pitch, NULL },
        { "alloc-managed", scenario_alloc_managed, NULL },
        { "alloc-async", scenario_alloc_async, NULL },
        { "alloc-async-ptsz", scenario_alloc_async_ptsz, NULL },
        { "alloc-from-pool", scenario_alloc_from_pool, NULL },
        { "alloc-from-pool-ptsz", scenario_alloc_from_pool_ptsz, NULL },
        { "mem-create", scenario_mem_create, NULL },
        { "array-2d", scenario_array_2d, NULL },
        { "array-3d", scenario_array_3d, NULL },
        { "mipmapped", scenario_mipmapped, NULL },
        { "proc-address", scenario_proc_address, NULL },
        { "ctx-destroy", scenario_ctx_destroy, NULL },
        { "contexts", scenario_contexts, NULL },
        { "ctx-limits", scenario_ctx_limits, NULL },
        { "primary-reset", scenario_primary_reset, NULL },
        { "oom-log", scenario_oom_log, NULL },
        { "refused", scenario_refused, NULL },
        { "context-too-big", scenario_context_too_big, NULL },
        { "graph-memory", scenario_graph_memory, NULL },
        { "view-quiet", scenario_view_quiet, NULL },
        { "no-settings", scenario_no_settings, NULL },
        { "hold", NULL, scenario_hold },
        { "shared-second", NULL, scenario_shared_second },
        { "reclaim-watch", NULL, scenario_reclaim_watch },
        { "expect-used", NULL, scenario_expect_used },
        { "procs-list", NULL, scenario_procs_list },
        { "procs-many", scenario_procs_many, NULL },
        { "poke-counters", NULL, scenario_poke_counters },
        { "expect-rebuilt", NULL, scenario_expect_rebuilt },
        { "poke-half-reaped", NULL, scenario_poke_half_reaped },
        { "fork-bar0-unlinked", scenario_fork_bar0_unlinked, NULL },
        { "fork-rejoin-fails", scenario_fork_rejoin_fails, NULL },
        { "churn", NULL, scenario_churn },
    };
    for (size_t i = 0; argc >= 2 && i < sizeof(scenarios) / sizeof(*scenarios); i++)
        if (strcmp(argv[1], scenarios[i].name) == 0) {
            if (scenarios[i].run)
                scenarios[i].run();
            else
                scenarios[i].run_args(argc, argv);
            fflush(stdout);
            if (atomic_load(&failures)) {
                fprintf(stderr, "quota_client %s (pid %d): %d check(s) failed\n", argv[1], (int)getpid(),
                        atomic_load(&failures));
                return 1;
            }
            printf("ok - %s\n", argv[1]);
            return 0;
        }
    fprintf(stderr, "usage: quota_client SCENARIO [ARGS]\n");
    return 2;
}
