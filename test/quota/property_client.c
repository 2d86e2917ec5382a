/*
 * The accounting's invariants, as a property: property_client SEED STEPS
 *
 * Run under vgpu, standalone (VGPU_BAR0, VGPU_MEMORY_LIMIT), over the fake
 * driver (TEST_FAKE_LIBCUDA), alone on its fake GPU.  From SEED it takes
 * STEPS random steps through every path that takes device memory (plain,
 * pitched, managed and stream-ordered allocations, pools and their trims,
 * cuMemCreate, 2D, 3D and mipmapped arrays, graphs' allocation nodes and the
 * device's graph memory trims, further contexts, frees of any of them) with
 * sizes up to past the quota, and after every step checks
 * what the accounting promises (docs/design/memory.md, "Invariants"):
 *
 * - free never underflows, and used never passes total: cuMemGetInfo's free
 *   is at most its total, NVML's used at most its total, and NVML's
 *   free + used is its total;
 * - the vGPU's total is its quota, and never more than the GPU's;
 * - what the vGPU counts (cuMemGetInfo, NVML and BAR0 agree on it) is what
 *   the driver itself counts for the process (the fake's own cuMemGetInfo),
 *   but for vgpu's rounding of each allocation up to the driver's 512-byte
 *   unit (the fake counts bytes exactly; its contexts are the sizes vgpu
 *   measured): never less, and less than 512 bytes more per live allocation;
 * - an allocation is refused only when it would pass the quota, and one that
 *   would pass it is refused.
 *
 * A failure prints the seed and step, to run again; PROPERTY_TRACE=1 prints
 * what the vGPU counts beyond the driver after every step.
 */
#define _GNU_SOURCE
#include "test/common/client_util.h"

#include <stdbool.h>

enum kind { PLAIN, PITCHED, MANAGED, ASYNC, POOL, CREATED, ARRAY2D, ARRAY3D, MIPMAPPED, GRAPH, CONTEXT, KINDS };
static const char *const kind_name[KINDS] = { "cuMemAlloc_v2",    "cuMemAllocPitch_v2",      "cuMemAllocManaged",
                                              "cuMemAllocAsync",  "cuMemAllocFromPoolAsync", "cuMemCreate",
                                              "cuArrayCreate_v2", "cuArray3DCreate_v2",      "cuMipmappedArrayCreate",
                                              "cuGraphLaunch",    "cuCtxCreate_v2" };

struct held {
    enum kind kind;
    CUdeviceptr p;
    CUmemGenericAllocationHandle h;
    CUarray a;
    CUmipmappedArray m;
    CUgraphExec g;
    CUcontext c;
};

enum { MAX_HELD = 64 };
static struct held held[MAX_HELD];
static int nheld;
static unsigned seed, rng; /* the walk's seed, and rand_r's state from it */
static int step;
static uint64_t L;
static CUcontext primary;
static CUmemoryPool pool;

/* What the vGPU counts, checked three ways, and what the driver counts. */
struct counts {
    uint64_t vgpu, driver, driver_total;
};

static struct counts observe(void)
{
    size_t f = 0, t = 0;
    CU(F(cuMemGetInfo_v2)(&f, &t));
    CHECK(t == L, "seed %u step %d: cuMemGetInfo total %zu, want the quota %llu", seed, step, t, (unsigned long long)L);
    CHECK(f <= t, "seed %u step %d: cuMemGetInfo free %zu past its total %zu (an underflow)", seed, step, f, t);
    nvmlDevice_t d;
    nvmlMemory_t m = { 0 };
    NV(N(nvmlDeviceGetHandleByIndex_v2)(0, &d));
    NV(N(nvmlDeviceGetMemoryInfo)(d, &m));
    CHECK(m.total == L && m.used <= m.total && m.free + m.used == m.total,
          "seed %u step %d: NVML total %llu used %llu free %llu", seed, step, m.total, m.used, m.free);
    uint64_t in_bar0 = atomic_load((_Atomic uint64_t *)&env_bar0()->status.device[0].memory_used);
    CHECK(m.used == t - f && in_bar0 == m.used, "seed %u step %d: used %llu (cuMemGetInfo), %llu (NVML), %llu (BAR0)",
          seed, step, (unsigned long long)(t - f), m.used, (unsigned long long)in_bar0);
    __typeof__(&cuMemGetInfo_v2) real = (__typeof__(&cuMemGetInfo_v2))fake_driver_sym("cuMemGetInfo_v2");
    size_t pf = 0, pt = 0;
    CHECK(real && real(&pf, &pt) == CUDA_SUCCESS, "the fake's own cuMemGetInfo_v2");
    CHECK(L <= pt, "seed %u step %d: the vGPU's total %llu is past the GPU's %zu", seed, step, (unsigned long long)L,
          pt);
    return (struct counts){ .vgpu = t - f, .driver = pt - pf, .driver_total = pt };
}

static void check_counts(const char *what)
{
    struct counts c = observe();
    if (getenv("PROPERTY_TRACE"))
        fprintf(stderr, "step %d %s: vgpu - driver = %lld, %d live\n", step, what, (long long)(c.vgpu - c.driver),
                nheld);
    CHECK(c.vgpu >= c.driver && c.vgpu - c.driver < 512 * (uint64_t)(nheld + 1),
          "seed %u step %d, after %s: the vGPU counts %llu, the driver %llu (off by %lld, %d allocations live)", seed,
          step, what, (unsigned long long)c.vgpu, (unsigned long long)c.driver, (long long)(c.vgpu - c.driver), nheld);
}

static uint64_t rnd(uint64_t n)
{
    return n ? ((uint64_t)rand_r(&rng) << 31 ^ (uint64_t)rand_r(&rng)) % n : 0;
}

static CUresult make(enum kind k, uint64_t bytes, struct held *out)
{
    *out = (struct held){ .kind = k };
    size_t pitch;
    switch (k) {
    case PLAIN: return F(cuMemAlloc_v2)(&out->p, bytes);
    case PITCHED: return F(cuMemAllocPitch_v2)(&out->p, &pitch, 1000 + rnd(3000), bytes / 4000 + 1, 4);
    case MANAGED: return F(cuMemAllocManaged)(&out->p, bytes, CU_MEM_ATTACH_GLOBAL);
    case ASYNC: return F(cuMemAllocAsync)(&out->p, bytes, NULL);
    case POOL: return F(cuMemAllocFromPoolAsync)(&out->p, bytes, pool, NULL);
    case CREATED: {
        CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                     .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 } };
        return F(cuMemCreate)(&out->h, (bytes / (2 * MiB) + 1) * 2 * MiB, &prop, 0);
    }
    case ARRAY2D: {
        CUDA_ARRAY_DESCRIPTOR d = {
            .Width = 256 + rnd(4096), .Height = bytes / 16384 + 1, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4
        };
        return F(cuArrayCreate_v2)(&out->a, &d);
    }
    case ARRAY3D: {
        CUDA_ARRAY3D_DESCRIPTOR d = { .Width = 64 + rnd(512),
                                      .Height = 64,
                                      .Depth = bytes / (512 * 64 * 4) + 1,
                                      .Format = CU_AD_FORMAT_UNSIGNED_INT8,
                                      .NumChannels = 4 };
        return F(cuArray3DCreate_v2)(&out->a, &d);
    }
    case MIPMAPPED: {
        CUDA_ARRAY3D_DESCRIPTOR d = {
            .Width = 1024, .Height = bytes / 8192 + 1, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 2
        };
        return F(cuMipmappedArrayCreate)(&out->m, &d, 1 + (unsigned)rnd(4));
    }
    case GRAPH: {
        /* A graph whose allocation node takes bytes, launched: the device's
         * graph memory reserve grows to it, and stays until trimmed. */
        CUgraph g;
        CU(F(cuGraphCreate)(&g, 0));
        CUDA_MEM_ALLOC_NODE_PARAMS p = { .poolProps = { .allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                                                        .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 } },
                                         .bytesize = bytes };
        CUgraphNode node;
        CU(F(cuGraphAddMemAllocNode)(&node, g, NULL, 0, &p));
        CU(F(cuGraphInstantiateWithFlags)(&out->g, g, 0));
        CU(F(cuGraphDestroy)(g));
        CUresult r = F(cuGraphLaunch)(out->g, NULL);
        CU(F(cuStreamSynchronize)(NULL));
        if (r != CUDA_SUCCESS)
            CU(F(cuGraphExecDestroy)(out->g));
        return r;
    }
    case CONTEXT: {
        CUresult r = F(cuCtxCreate_v2)(&out->c, 0, 0);
        CU(F(cuCtxSetCurrent)(primary)); /* the walk goes on in the primary context */
        return r;
    }
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

static void release(struct held *x)
{
    switch (x->kind) {
    case ASYNC:
    case POOL:
        CU(F(cuMemFreeAsync)(x->p, NULL));
        CU(F(cuStreamSynchronize)(NULL));
        break;
    case CREATED: CU(F(cuMemRelease)(x->h)); break;
    case ARRAY2D:
    case ARRAY3D: CU(F(cuArrayDestroy)(x->a)); break;
    case MIPMAPPED: CU(F(cuMipmappedArrayDestroy)(x->m)); break;
    case GRAPH: CU(F(cuGraphExecDestroy)(x->g)); break;
    case CONTEXT:
        CU(F(cuCtxDestroy_v2)(x->c));
        CU(F(cuCtxSetCurrent)(primary));
        break;
    default: CU(F(cuMemFree_v2)(x->p));
    }
}

/* ---- the walk's moves: each step draws r in [0, 100) and takes the first
 * move whose condition r meets ---- */

static CUdevice dev;
static unsigned long made[KINDS], refused[KINDS];

static bool free_when(uint64_t r)
{
    return nheld && (r < 40 || nheld == MAX_HELD);
}

/* One of the live allocations, any kind, freed. */
static void free_one(uint64_t r)
{
    (void)r;
    int i = (int)rnd((uint64_t)nheld);
    enum kind k = held[i].kind;
    release(&held[i]);
    held[i] = held[--nheld];
    char what[64];
    snprintf(what, sizeof(what), "a free of a %s", kind_name[k]);
    check_counts(what);
}

static bool trim_when(uint64_t r)
{
    return r < 45;
}

/* Trim the pools: their idle reserve goes back, and stops counting. */
static void trim(uint64_t r)
{
    (void)r;
    CUmemoryPool dflt;
    CU(F(cuDeviceGetMemPool)(&dflt, dev));
    if (rnd(4))
        CU(F(cuMemPoolTrimTo)(rnd(2) ? pool : dflt, rnd(2) ? 0 : rnd(64 * MiB)));
    else
        CU(F(cuDeviceGraphMemTrim)(dev));
    check_counts("a trim");
}

static bool always(uint64_t r)
{
    (void)r;
    return true;
}

/* A refusal: out of memory, the count unmoved, and justified where the size
 * counted is the size asked (rounded to 512 bytes): it did not fit what was
 * left.  (A pool's growth may be less than asked; an array's size is the
 * driver's to choose.) */
static void check_refusal(enum kind k, uint64_t bytes, CUresult res, uint64_t before, uint64_t after)
{
    CHECK(res == CUDA_ERROR_OUT_OF_MEMORY, "seed %u step %d: %s of %llu returned %d", seed, step, kind_name[k],
          (unsigned long long)bytes, (int)res);
    CHECK(after == before, "seed %u step %d: a refused %s moved the count from %llu to %llu", seed, step, kind_name[k],
          (unsigned long long)before, (unsigned long long)after);
    CHECK((k != PLAIN && k != MANAGED) || before + (bytes + 511) / 512 * 512 > L,
          "seed %u step %d: %s of %llu refused with %llu of %llu used", seed, step, kind_name[k],
          (unsigned long long)bytes, (unsigned long long)before, (unsigned long long)L);
}

/* An allocation of any kind (contexts 1 step in 20), mostly small, at
 * times past what is left: made within the quota, or refused for it. */
static void allocate(uint64_t r)
{
    enum kind k = (enum kind)rnd(KINDS - (r < 95));
    uint64_t bytes = 1 + (rnd(8) ? rnd(64 * MiB) : rnd(L));
    uint64_t before = observe().vgpu;
    CUresult res = make(k, bytes, &held[nheld]);
    uint64_t after = observe().vgpu;
    if (res == CUDA_SUCCESS) {
        made[k]++;
        nheld++;
        CHECK(after <= L, "seed %u step %d: %s made, and the vGPU holds %llu of %llu", seed, step, kind_name[k],
              (unsigned long long)after, (unsigned long long)L);
    } else {
        refused[k]++;
        check_refusal(k, bytes, res, before, after);
    }
    check_counts(kind_name[k]);
}

static const struct {
    const char *name;
    bool (*when)(uint64_t r);
    void (*take)(uint64_t r);
} moves[] = {
    { "a free", free_when, free_one },
    { "a trim", trim_when, trim },
    { "an allocation", always, allocate },
};

static void start(void)
{
    const char *limit = getenv("VGPU_MEMORY_LIMIT");
    L = limit ? parse_size(limit) : 0;
    CHECK(L > 0, "the test needs VGPU_MEMORY_LIMIT");
    CU(F(cuInit)(0));
    CU(F(cuDeviceGet)(&dev, 0));
    CU(F(cuDevicePrimaryCtxRetain)(&primary, dev));
    CU(F(cuCtxSetCurrent)(primary));
    NV(N(nvmlInit_v2)());
    CUmemPoolProps props = { .allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                             .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 } };
    CU(F(cuMemPoolCreate)(&pool, &props));
}

/* Everything freed and trimmed: the counts agree at the end too. */
static void finish(void)
{
    while (nheld > 0)
        release(&held[--nheld]);
    CU(F(cuMemPoolDestroy)(pool));
    CUmemoryPool dflt;
    CU(F(cuDeviceGetMemPool)(&dflt, dev));
    CU(F(cuMemPoolTrimTo)(dflt, 0));
    CU(F(cuDeviceGraphMemTrim)(dev));
    check_counts("the last free");
}

/* What the walk made and had refused, by kind; a walk that never met the
 * quota proves little about refusals. */
static void report(void)
{
    unsigned long all_made = 0, all_refused = 0;
    for (int k = 0; k < KINDS; k++) {
        printf("%-24s %5lu made %5lu refused\n", kind_name[k], made[k], refused[k]);
        all_made += made[k];
        all_refused += refused[k];
    }
    CHECK(all_refused > 0 && all_made > 0, "seed %u: %lu made, %lu refused: the walk never met the quota", seed,
          all_made, all_refused);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: property_client SEED STEPS\n");
        return 2;
    }
    rng = seed = (unsigned)strtoul(argv[1], NULL, 10);
    int steps = atoi(argv[2]);
    start();
    const char *last = "the start";
    for (step = 0; step < steps && !atomic_load(&failures); step++) {
        uint64_t r = rnd(100);
        size_t m = 0;
        while (!moves[m].when(r))
            m++;
        last = moves[m].name;
        moves[m].take(r);
    }
    if (!atomic_load(&failures))
        last = "the end (the last free, the counts by kind)";
    finish();
    report();
    if (atomic_load(&failures)) {
        fprintf(stderr, "property_client: seed %u failed at step %d, %s (run again: property_client %u %d)\n", seed,
                step, last, seed, steps);
        return 1;
    }
    printf("ok - seed %u, %d steps\n", seed, steps);
    return 0;
}
