/*
 * Loads that would bind the driver behind vgpu's back:
 * dlmopen into a new link-map namespace, and a library loaded with
 * RTLD_DEEPBIND that opens the driver itself.  `namespaces SCENARIO`, with
 * vgpu preloaded on a 1 GiB vGPU over the fake's 16 GiB devices
 * (namespaces.sh): an 8 GiB allocation must fail with OUT_OF_MEMORY.
 *
 * Environment: TEST_DRIVER (the real driver's path), TEST_DEEP_LIB (deep.c's
 * library), TEST_EXPECT_QUOTA (bytes).  The program's RUNPATH is $ORIGIN,
 * where deep.c's libraries are built.
 */
#define _GNU_SOURCE
#include "test/loadorder/probe.h"

typedef int (*deep_alloc_fn)(const char *lib, size_t bytes, char *where, size_t len);

static size_t quota(void)
{
    const char *q = getenv("TEST_EXPECT_QUOTA");
    return q ? strtoull(q, NULL, 10) : 0;
}

/* 8 GiB through the library that handle h stands for: refused, and a vGPU's device shown. */
static void refuses_8g(void *h, const char *what)
{
    PROBE_CHECK(h != NULL, "%s: %s", what, dlerror());
    if (!h)
        return;
    struct probe_cuda f = probe_cuda_from(h);
    char from[PATH_MAX];
    PROBE_CHECK(strstr(probe_library_of((const void *)f.init, from, sizeof(from)), "libvgpu-cuda") != NULL,
          "%s: cuInit comes from %s", what, from);
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr p;
    size_t total = 0;
    PROBE_CU(f.init(0));
    PROBE_CU(f.get(&dev, 0));
    PROBE_CU(f.total(&total, dev));
    PROBE_CHECK(total == quota(), "%s: device 0 shows %zu bytes, expected the quota %zu", what, total, quota());
    PROBE_CU(f.retain(&ctx, dev));
    PROBE_CU(f.set_current(ctx));
    CUresult r = f.alloc(&p, 8 * PROBE_GiB);
    PROBE_CHECK(r == CUDA_ERROR_OUT_OF_MEMORY, "%s: 8 GiB on a %zu-byte quota returned %d", what, quota(), (int)r);
    printf("%s: cuInit from %s, device 0 of %zu bytes, 8 GiB -> %d\n", what, from, total, (int)r);
}

static void scenario_dlmopen_soname(void)
{
    refuses_8g(dlmopen(LM_ID_NEWLM, "libcuda.so.1", RTLD_NOW), "dlmopen(LM_ID_NEWLM, libcuda.so.1)");
}

static void scenario_dlmopen_path(void)
{
    const char *driver = getenv("TEST_DRIVER");
    refuses_8g(dlmopen(LM_ID_NEWLM, driver, RTLD_NOW), "dlmopen(LM_ID_NEWLM, the driver's path)");
}

static void scenario_dlmopen_base_path(void)
{
    const char *driver = getenv("TEST_DRIVER");
    refuses_8g(dlmopen(LM_ID_BASE, driver, RTLD_NOW), "dlmopen(LM_ID_BASE, the driver's path)");
}

/* The deep-bound library (path: TEST_DEEP_LIB by default) opens the driver
 * by name and allocates 8 GiB. */
static void deep_from(const char *path, const char *lib, int mode)
{
    void *d = mode == RTLD_DEEPBIND ? dlopen(path, RTLD_NOW | RTLD_DEEPBIND) : dlmopen(LM_ID_NEWLM, path, RTLD_NOW);
    deep_alloc_fn alloc = d ? (deep_alloc_fn)dlsym(d, "deep_alloc") : NULL;
    PROBE_CHECK(alloc != NULL, "cannot load %s: %s", path, dlerror());
    if (!alloc)
        return;
    char where[PATH_MAX + 64] = "";
    int r = alloc(lib, 8 * PROBE_GiB, where, sizeof(where));
    PROBE_CHECK(r == CUDA_ERROR_OUT_OF_MEMORY, "%s opened %s (%s): 8 GiB returned %d", mode ? "deep-bound" : "namespaced",
          lib, where, r);
    printf("%s library, dlopen(%s): %s; 8 GiB -> %d\n", mode ? "deep-bound" : "namespaced", lib, where, r);
}

static void deep(const char *lib, int mode)
{
    deep_from(getenv("TEST_DEEP_LIB"), lib, mode);
}

static void scenario_deepbind_soname(void)
{
    deep("libcuda.so.1", RTLD_DEEPBIND);
}

static void scenario_deepbind_libcuda_so(void)
{
    deep("libcuda.so", RTLD_DEEPBIND);
}

static void scenario_deepbind_path(void)
{
    deep(getenv("TEST_DRIVER"), RTLD_DEEPBIND);
}

/* vgpu makes a deep-bound load itself: the name is still found, and
 * $ORIGIN expanded, as for this program (whose RUNPATH is $ORIGIN). */
static void scenario_deepbind_runpath(void)
{
    deep_from("libvgpudeepnow.so", "libcuda.so", RTLD_DEEPBIND);
}

static void scenario_deepbind_origin(void)
{
    deep_from("$ORIGIN/libvgpudeepnow.so", "libcuda.so", RTLD_DEEPBIND);
}

static void scenario_dlmopen_library(void)
{
    deep("libcuda.so.1", 0);
}

static void expect_free(const struct probe_cuda *f, size_t want, const char *what)
{
    size_t free_bytes = 0, total = 0;
    PROBE_CU(f->mem_info(&free_bytes, &total));
    PROBE_CHECK(free_bytes == want, "%s: cuMemGetInfo_v2 shows %zu MiB free, expected %zu MiB", what, free_bytes / PROBE_MiB,
          want / PROBE_MiB);
}

/*
 * vgpu's copy in a new namespace and the one in the base namespace count
 * into one vGPU, exactly: every allocation of either is bounded by what
 * both hold.  (The script sets the fake's context overhead to 0.)
 */
static void scenario_dlmopen_shared(void)
{
    void *bh = dlopen("libcuda.so.1", RTLD_NOW), *nh = dlmopen(LM_ID_NEWLM, "libcuda.so.1", RTLD_NOW);
    PROBE_CHECK(bh && nh, "cannot open libcuda.so.1 in both namespaces: %s", dlerror());
    if (!bh || !nh)
        return;
    struct probe_cuda b = probe_cuda_from(bh), n = probe_cuda_from(nh);
    PROBE_CHECK(b.init != n.init, "both namespaces have the same copy of vgpu");
    const struct probe_cuda *both[] = { &b, &n };
    for (int i = 0; i < 2; i++) {
        CUdevice dev;
        CUcontext ctx;
        PROBE_CU(both[i]->init(0));
        PROBE_CU(both[i]->get(&dev, 0));
        PROBE_CU(both[i]->retain(&ctx, dev));
        PROBE_CU(both[i]->set_current(ctx));
    }
    size_t q = quota();
    CUdeviceptr b1 = 0, b2 = 0, n1 = 0;
    PROBE_CU(b.alloc(&b1, 600 * PROBE_MiB));
    PROBE_CHECK(n.alloc(&n1, 600 * PROBE_MiB) == CUDA_ERROR_OUT_OF_MEMORY, "the new namespace's copy went past the quota");
    PROBE_CU(n.alloc(&n1, 400 * PROBE_MiB));
    PROBE_CHECK(b.alloc(&b2, 100 * PROBE_MiB) == CUDA_ERROR_OUT_OF_MEMORY, "the base copy went past the quota");
    expect_free(&b, q - 1000 * PROBE_MiB, "base, with 600 + 400 MiB held");
    expect_free(&n, q - 1000 * PROBE_MiB, "new namespace, with 600 + 400 MiB held");
    PROBE_CU(n.free(n1));
    PROBE_CU(b.alloc(&b2, 100 * PROBE_MiB));
    expect_free(&b, q - 700 * PROBE_MiB, "base, with 600 + 100 MiB held");
    PROBE_CU(b.free(b1));
    PROBE_CU(b.free(b2));
    expect_free(&n, q, "new namespace, with nothing held");
    printf("two copies of vgpu, one vGPU: 600 + 400 MiB of %zu MiB, each refused past it\n", q / PROBE_MiB);
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*run)(void);
    } scenarios[] = {
        { "dlmopen-soname", scenario_dlmopen_soname },
        { "dlmopen-path", scenario_dlmopen_path },
        { "dlmopen-base-path", scenario_dlmopen_base_path },
        { "dlmopen-library", scenario_dlmopen_library },
        { "dlmopen-shared", scenario_dlmopen_shared },
        { "deepbind-soname", scenario_deepbind_soname },
        { "deepbind-libcuda-so", scenario_deepbind_libcuda_so },
        { "deepbind-path", scenario_deepbind_path },
        { "deepbind-runpath", scenario_deepbind_runpath },
        { "deepbind-origin", scenario_deepbind_origin },
    };
    for (size_t i = 0; argc == 2 && i < sizeof(scenarios) / sizeof(*scenarios); i++)
        if (strcmp(argv[1], scenarios[i].name) == 0) {
            scenarios[i].run();
            if (probe_failures)
                return 1;
            printf("ok - %s\n", argv[1]);
            return 0;
        }
    fprintf(stderr, "usage: namespaces SCENARIO\n");
    return 2;
}
