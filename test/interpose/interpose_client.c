/*
 * A CUDA/NVML client for the end-to-end tests: `client SCENARIO`.  It loads
 * the driver the way applications do (dlopen("libcuda.so.1"), dlsym) and
 * asserts what a user would observe: results, which library answered, what
 * the log says.  The fake driver (test/fake) stands in for the GPU.
 *
 * Environment: TEST_FAKE_LIBCUDA / TEST_FAKE_NVML = the fake libraries' paths
 * (for their call counters); VGPU_LOG_FILE where a scenario reads the log.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test/common/client_util.h"
#include "test/loadorder/probe.h"

/*
 * The fake driver's own handle if it is loaded, NULL if not.  Through
 * dlmopen, because vgpu's dlopen (rightly) answers an open of the driver's
 * path with vgpu itself; the test needs the library behind vgpu.
 */
static void *fake_loaded(const char *path)
{
    return path ? dlmopen(LM_ID_BASE, path, RTLD_NOW | RTLD_NOLOAD) : NULL;
}

static void *fake_sym(const char *env, const char *name)
{
    void *h = fake_loaded(getenv(env));
    return h ? dlsym(h, name) : NULL;
}

static unsigned long fake_calls(void)
{
    unsigned long (*calls)(void) = (unsigned long (*)(void))fake_sym("TEST_FAKE_LIBCUDA", "fakegpu_calls");
    return calls ? calls() : (unsigned long)-1;
}

static int log_count(const char *needle)
{
    const char *path = getenv("VGPU_LOG_FILE");
    FILE *f = path ? fopen(path, "r") : NULL;
    int n = 0;
    char line[2048];
    while (f && fgets(line, sizeof(line), f))
        n += strstr(line, needle) != NULL;
    if (f)
        fclose(f);
    return n;
}

static void make_current(int ordinal)
{
    CUdevice dev;
    CUcontext ctx;
    CU(F(cuDeviceGet)(&dev, ordinal));
    CU(F(cuDevicePrimaryCtxRetain)(&ctx, dev));
    CU(F(cuCtxSetCurrent)(ctx));
}

/* Allocate, copy, run add_one from a fake module, copy back. */
static void run_kernel_roundtrip(int through_library_api)
{
    enum { N = 256 };
    float host[N];
    for (int i = 0; i < N; i++)
        host[i] = (float)i;
    CUdeviceptr d = 0;
    CU(F(cuMemAlloc_v2)(&d, sizeof(host)));
    CU(F(cuMemcpyHtoD_v2)(d, host, sizeof(host)));
    CUfunction fn = NULL;
    if (through_library_api) {
        CUlibrary lib;
        CUkernel k;
        CU(F(cuLibraryLoadData)(&lib, "fakegpu", NULL, NULL, 0, NULL, NULL, 0));
        CU(F(cuLibraryGetKernel)(&k, lib, "add_one"));
        CU(F(cuKernelGetFunction)(&fn, k));
    } else {
        CUmodule mod;
        CU(F(cuModuleLoadData)(&mod, "fakegpu"));
        CU(F(cuModuleGetFunction)(&fn, mod, "add_one"));
    }
    int n = N;
    void *params[] = { &d, &n };
    CU(F(cuLaunchKernel)(fn, 1, 1, 1, N, 1, 1, 0, NULL, params, NULL));
    CUlaunchConfig cfg = { .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = N, .blockDimY = 1, .blockDimZ = 1 };
    CU(F(cuLaunchKernelEx)(&cfg, fn, params, NULL));
    CU(F(cuCtxSynchronize)());
    CU(F(cuMemcpyDtoH_v2)(host, d, sizeof(host)));
    for (int i = 0; i < N; i++)
        if (host[i] != (float)i + 2.0f) {
            CHECK(0, "kernel result [%d] = %f, want %f", i, host[i], (float)i + 2.0f);
            break;
        }
    CU(F(cuMemFree_v2)(d));
}

/* Through vgpu: the driver's answers arrive, and the entry points are vgpu's. */
static void scenario_basic(void)
{
    CHECK(in_library(F(cuInit), "libvgpu-cuda"), "cuInit is not vgpu's");
    CHECK(in_library(F(cuDeviceGetName), "libvgpu-cuda"), "cuDeviceGetName is not vgpu's");
    CU(F(cuInit)(0));
    int count = 0, version = 0;
    CU(F(cuDeviceGetCount)(&count));
    CHECK(count == 2, "device count %d, want the fake's 2", count);
    CU(F(cuDriverGetVersion)(&version));
    CHECK(version == 13000, "driver version %d", version);
    char name[64] = "";
    CU(F(cuDeviceGetName)(name, sizeof(name), 1));
    CHECK(strcmp(name, "Fake GPU 1") == 0, "device 1 is named '%s'", name);
    make_current(0);
    size_t total = 0, free_bytes = 0;
    CU(F(cuDeviceTotalMem_v2)(&total, 0));
    CHECK(total == 16ull << 30, "total %zu", total);
    CU(F(cuMemGetInfo_v2)(&free_bytes, &total));
    CHECK(free_bytes < total, "free %zu of %zu with a context", free_bytes, total);
    run_kernel_roundtrip(0);
    run_kernel_roundtrip(1);
    CHECK(F(cuMemAlloc_v2)(NULL, 0) != CUDA_SUCCESS, "cuMemAlloc(NULL) succeeded");
}

typedef CUresult (*gpa_v2_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*gpa_v1_fn)(const char *, void **, int, cuuint64_t);

static void *lookup(gpa_v2_fn gpa, const char *name, int version, cuuint64_t flags)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult st = -1;
    CUresult r = gpa(name, &p, version, flags, &st);
    CHECK(r == CUDA_SUCCESS && st == CU_GET_PROC_ADDRESS_SUCCESS && p, "lookup %s@%d: %d/%d", name, version, r,
          (int)st);
    return p;
}

/* The CUDA runtime's path: cuGetProcAddress_v2 -> "cuGetProcAddress" -> everything. */
static void scenario_proc_address(void)
{
    CU(F(cuInit)(0));
    void *fake = fake_loaded(getenv("TEST_FAKE_LIBCUDA"));
    CHECK(fake != NULL, "the fake driver is not loaded");
    gpa_v2_fn gpa = (gpa_v2_fn)F(cuGetProcAddress_v2);

    /* Self-lookup returns vgpu's own, per version. */
    gpa_v2_fn self = (gpa_v2_fn)lookup(gpa, "cuGetProcAddress", 12000, CU_GET_PROC_ADDRESS_DEFAULT);
    CHECK((void *)self == (void *)gpa, "cuGetProcAddress@12000 is not vgpu's cuGetProcAddress_v2");
    void *v1 = lookup(gpa, "cuGetProcAddress", 11030, CU_GET_PROC_ADDRESS_DEFAULT);
    CHECK(v1 == cuda_sym("cuGetProcAddress"), "cuGetProcAddress@11030 is not vgpu's v1");
    /* ...and the pointer it returned keeps answering with hooks. */
    CHECK(lookup(self, "cuMemAlloc", 12000, 0) == cuda_sym("cuMemAlloc_v2"), "cuMemAlloc is not vgpu's _v2 hook");
    CHECK(lookup(self, "cuMemAlloc", 3000, 0) == cuda_sym("cuMemAlloc"), "cuMemAlloc@3000 is not the v1 hook");
    CHECK(lookup(self, "cuLaunchKernel", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) ==
              cuda_sym("cuLaunchKernel_ptsz"),
          "per-thread cuLaunchKernel is not vgpu's _ptsz hook");
    CHECK(lookup(self, "cuLaunchKernelEx", 13000, 0) == cuda_sym("cuLaunchKernelEx"), "cuLaunchKernelEx not hooked");
    CHECK(lookup(self, "cuLibraryLoadData", 13000, 0) == cuda_sym("cuLibraryLoadData"), "cuLibraryLoadData not hooked");

    /* Untouched names come back as the driver's own function: full speed,
     * and the ABI the version asked for (cuCtxGetDevice_v2 takes a context). */
    CHECK(lookup(self, "cuCtxGetDevice", 13000, 0) == dlsym(fake, "cuCtxGetDevice_v2"),
          "cuCtxGetDevice@13000 is not the driver's _v2");
    CHECK(lookup(self, "cuCtxGetDevice", 12000, 0) == dlsym(fake, "cuCtxGetDevice"),
          "cuCtxGetDevice@12000 is not the driver's v1");
    CHECK(lookup(self, "cuMemcpyHtoD", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) ==
              dlsym(fake, "cuMemcpyHtoD_v2_ptds"),
          "per-thread cuMemcpyHtoD is not the driver's _v2_ptds");

    /* A name the driver does not know: its answer, unchanged. */
    void *p = (void *)1;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
    self("cuNoSuchFunction", &p, 13000, 0, &st);
    CHECK(p == NULL && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, "unknown name: %p, status %d", p, (int)st);

    /* The v1 entry point behaves the same. */
    gpa_v1_fn gpa1 = (gpa_v1_fn)v1;
    p = NULL;
    CU(gpa1("cuMemFree", &p, 12000, 0));
    CHECK(p == cuda_sym("cuMemFree_v2"), "v1 lookup of cuMemFree is not vgpu's _v2 hook");

    /* Calls through looked-up pointers work end to end. */
    typedef CUresult (*count_fn)(int *);
    int count = 0;
    CU(((count_fn)lookup(self, "cuDeviceGetCount", 13000, 0))(&count));
    CHECK(count == 2, "count via lookup: %d", count);
}

/* With VGPU_TRACE, lookups of untouched names return tracing stubs that still work. */
static void scenario_trace(void)
{
    CU(F(cuInit)(0));
    gpa_v2_fn gpa = (gpa_v2_fn)F(cuGetProcAddress_v2);
    void *fake = fake_loaded(getenv("TEST_FAKE_LIBCUDA"));
    void *p = lookup(gpa, "cuDriverGetVersion", 13000, 0);
    CHECK(p != dlsym(fake, "cuDriverGetVersion") && in_library(p, "libvgpu-cuda"),
          "traced lookup returned the untraced driver function");
    int version = 0;
    CU(((CUresult(*)(int *))p)(&version));
    CHECK(version == 13000, "version through the stub: %d", version);
    make_current(0);
    CUdeviceptr d;
    CU(F(cuMemAlloc_v2)(&d, 1 << 20));
    CU(F(cuMemFree_v2)(d));
    char name[64];
    CU(F(cuDeviceGetName)(name, sizeof(name), 0));

    CHECK(log_count("cuMemAlloc_v2(1048576 -> 0x") == 1, "no trace line with cuMemAlloc_v2's arguments");
    CHECK(log_count("cuMemFree_v2(0x") == 1, "no trace line for cuMemFree_v2");
    CHECK(log_count("cuDeviceGetName (forwarded)") == 1, "no trace line for the forwarded cuDeviceGetName");
    CHECK(log_count("cuDriverGetVersion (forwarded)") == 1, "no trace line for the looked-up cuDriverGetVersion");
    CHECK(log_count("cuGetProcAddress_v2(\"cuDriverGetVersion\", 13000") == 1, "no trace line for the lookup");
}

/* Loading vgpu calls nothing in the driver; the first call loads it. */
static void scenario_lazy(void)
{
    const char *fake_path = getenv("TEST_FAKE_LIBCUDA");
    CHECK(fake_loaded(fake_path) == NULL, "the driver was loaded before any CUDA call");
    int version = 0;
    CU(F(cuDriverGetVersion)(&version));
    CHECK(fake_loaded(fake_path) != NULL, "the driver was not loaded by the first call");
    CHECK(fake_calls() == 1, "finding the driver made %lu driver calls, want only the application's 1",
          fake_calls());
}

static void *first_call(void *arg)
{
    pthread_barrier_t *b = arg;
    int count = 0;
    pthread_barrier_wait(b);
    if (F(cuInit)(0) != CUDA_SUCCESS || F(cuDeviceGetCount)(&count) != CUDA_SUCCESS || count != 2)
        return (void *)1;
    return NULL;
}

/* 16 threads make the first call at once: all succeed, init happens once. */
static void scenario_threads(void)
{
    enum { T = 16 };
    pthread_t t[T];
    pthread_barrier_t b;
    pthread_barrier_init(&b, NULL, T);
    cuda_sym("cuInit"); /* dlopen before the race; the race is vgpu's init */
    for (int i = 0; i < T; i++)
        pthread_create(&t[i], NULL, first_call, &b);
    int bad = 0;
    for (int i = 0; i < T; i++) {
        void *r;
        pthread_join(t[i], &r);
        bad += r != NULL;
    }
    CHECK(bad == 0, "%d of %d threads failed their first call", bad, T);
    CHECK(log_count("forwarding to the CUDA driver") == 1, "driver resolved %d times",
          log_count("forwarding to the CUDA driver"));
}

static int child_uses_gpu(void)
{
    int count = 0;
    CUdeviceptr d;
    if (F(cuInit)(0) || F(cuDeviceGetCount)(&count) || count != 2)
        return 1;
    make_current(0);
    if (F(cuMemAlloc_v2)(&d, 4096) || F(cuMemFree_v2)(d))
        return 2;
    return failures ? 3 : 0;
}

static void wait_child(pid_t pid, const char *what)
{
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %s: status 0x%x", what, status);
}

/* fork before and after initialisation: the child works either way. */
static void scenario_fork(void)
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(child_uses_gpu());
    wait_child(pid, "forked before init");

    CU(F(cuInit)(0));
    make_current(0);
    CUdeviceptr d;
    CU(F(cuMemAlloc_v2)(&d, 4096));
    pid = fork();
    if (pid == 0)
        _exit(child_uses_gpu());
    wait_child(pid, "forked after init");
    CU(F(cuMemFree_v2)(d));
}

/* dlopen("libcuda.so") and an absolute path to the real driver reach vgpu. */
static void scenario_dlopen_redirect(void)
{
    void *vgpu_init = cuda_sym("cuInit");
    void *h = dlopen("libcuda.so", RTLD_NOW);
    CHECK(h && dlsym(h, "cuInit") == vgpu_init, "dlopen(\"libcuda.so\") bypassed vgpu");
    const char *fake_path = getenv("TEST_FAKE_LIBCUDA");
    h = dlopen(fake_path, RTLD_NOW);
    CHECK(h && dlsym(h, "cuInit") == vgpu_init, "dlopen(\"%s\") bypassed vgpu", fake_path);
    /* Unrelated libraries are untouched. */
    h = dlopen("libm.so.6", RTLD_NOW);
    CHECK(h && dlsym(h, "cos"), "dlopen(libm.so.6) broke");
}

/* No driver anywhere: calls fail like a machine without a GPU, and say why. */
static void scenario_no_driver(void)
{
    CHECK(F(cuInit)(0) == CUDA_ERROR_NO_DEVICE, "cuInit without a driver");
    char name[32];
    CHECK(F(cuDeviceGetName)(name, sizeof(name), 0) == CUDA_ERROR_NO_DEVICE, "a forwarded call without a driver");
    void *p = (void *)1;
    CHECK(F(cuGetProcAddress_v2)("cuInit", &p, 13000, 0, NULL) == CUDA_ERROR_NO_DEVICE,
          "cuGetProcAddress without a driver");
    CHECK(log_count("no CUDA driver found") == 1, "no single log line explains the missing driver");
}

/* Private export tables pass through untouched. */
static void scenario_export_table(void)
{
    CU(F(cuInit)(0));
    CUuuid id = { { (char)0xfa, 1, 2, 3 } };
    const void *via_vgpu = NULL, *direct = NULL;
    CU(F(cuGetExportTable)(&via_vgpu, &id));
    void *fake = fake_loaded(getenv("TEST_FAKE_LIBCUDA"));
    CU(((__typeof__(&cuGetExportTable))dlsym(fake, "cuGetExportTable"))(&direct, &id));
    CHECK(via_vgpu && via_vgpu == direct, "export table %p, driver's %p", via_vgpu, direct);
}

static void scenario_nvml(void)
{
    CHECK(in_library(N(nvmlInit_v2), "libvgpu-nvml"), "nvmlInit_v2 is not vgpu's");
    CHECK(N(nvmlInit_v2)() == NVML_SUCCESS, "nvmlInit_v2");
    unsigned count = 0;
    CHECK(N(nvmlDeviceGetCount_v2)(&count) == NVML_SUCCESS && count == 2, "nvml count %u", count);
    nvmlDevice_t dev;
    CHECK(N(nvmlDeviceGetHandleByIndex_v2)(0, &dev) == NVML_SUCCESS, "handle");
    char name[96] = "";
    CHECK(N(nvmlDeviceGetName)(dev, name, sizeof(name)) == NVML_SUCCESS && strcmp(name, "Fake GPU 0") == 0,
          "nvml name '%s'", name);
    nvmlMemory_t m;
    CHECK(N(nvmlDeviceGetMemoryInfo)(dev, &m) == NVML_SUCCESS && m.total == 16ull << 30, "nvml total %llu",
          m.total);
    nvmlMemory_v2_t m2 = { .version = nvmlMemory_v2 };
    CHECK(N(nvmlDeviceGetMemoryInfo_v2)(dev, &m2) == NVML_SUCCESS && m2.total == m.total, "nvml v2 total %llu",
          m2.total);
    const void *table = NULL;
    unsigned char id[16] = { 0xfa };
    CHECK(N(nvmlInternalGetExportTable)(&table, id) == NVML_SUCCESS && table, "nvml export table");
    CHECK(strlen(N(nvmlErrorString)(NVML_ERROR_NOT_FOUND)) > 0, "nvmlErrorString");
    CHECK(N(nvmlShutdown)() == NVML_SUCCESS, "nvmlShutdown");
}

static void scenario_nvml_no_driver(void)
{
    CHECK(N(nvmlInit_v2)() == NVML_ERROR_LIBRARY_NOT_FOUND, "nvmlInit_v2 without NVML");
    unsigned count = 7;
    CHECK(N(nvmlDeviceGetCount_v2)(&count) == NVML_ERROR_LIBRARY_NOT_FOUND, "count without NVML");
    const char *s = N(nvmlErrorString)(NVML_ERROR_LIBRARY_NOT_FOUND);
    CHECK(s && strstr(s, "Not Found"), "nvmlErrorString without NVML: %s", s ? s : "(null)");
}

/* Which real driver vgpu forwards to (for the pathfinder tests): the log says. */
static void scenario_which_driver(void)
{
    int version = 0;
    CU(F(cuDriverGetVersion)(&version));
    const char *want = getenv("TEST_EXPECT_DRIVER");
    char line[512];
    snprintf(line, sizeof(line), "forwarding to the CUDA driver at %s ", want ? want : "?");
    CHECK(log_count(line) == 1, "vgpu did not forward to %s", want ? want : "?");
}

/*
 * vgpu loaded after the driver (a program that opened the driver itself, then
 * vgpu by path, as ctypes users do): the copy already in the process is the
 * one vgpu forwards to.
 */
static void scenario_already_loaded(void)
{
    const char *path = getenv("TEST_PRELOADED_DRIVER"), *vgpu = getenv("TEST_VGPU_LIBCUDA");
    CHECK(path && dlopen(path, RTLD_NOW | RTLD_LOCAL) != NULL, "cannot load %s", path ? path : "(unset)");
    cuda_handle = vgpu ? dlopen(vgpu, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!cuda_handle) {
        fprintf(stderr, "FAIL cannot load vgpu from TEST_VGPU_LIBCUDA\n");
        exit(1);
    }
    CHECK(in_library(cuda_sym("cuDriverGetVersion"), "libvgpu-cuda"), "cuDriverGetVersion is not vgpu's");
    scenario_which_driver();
}

/*
 * The load-order matrix's C dlopen consumer (test/loadorder/matrix.sh): opens
 * TEST_CUDA_LIB (default libcuda.so.1) and, where set, TEST_NVML_LIB with
 * RTLD_LOCAL or RTLD_GLOBAL, and checks them against TEST_EXPECT_*.
 */
static void load_order(int scope)
{
    probe_open_driver_first();
    const char *cuda = getenv("TEST_CUDA_LIB"), *nvml = getenv("TEST_NVML_LIB");
    cuda = cuda && *cuda ? cuda : "libcuda.so.1";
    void *h = dlopen(cuda, RTLD_NOW | scope);
    CHECK(h != NULL, "dlopen(%s): %s", cuda, dlerror());
    if (h) {
        struct probe_cuda f = probe_cuda_from(h);
        probe_cuda(&f);
    }
    void *n = nvml && *nvml ? dlopen(nvml, RTLD_NOW | scope) : NULL;
    CHECK(!nvml || !*nvml || n, "dlopen(%s): %s", nvml, dlerror());
    if (n)
        probe_nvml(n);
    CHECK(probe_failures == 0, "%d check(s) of the load order failed", probe_failures);
}

static void scenario_load_order_local(void)
{
    load_order(RTLD_LOCAL);
}

static void scenario_load_order_global(void)
{
    load_order(RTLD_GLOBAL);
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*run)(void);
    } scenarios[] = {
        { "basic", scenario_basic },
        { "proc-address", scenario_proc_address },
        { "trace", scenario_trace },
        { "lazy", scenario_lazy },
        { "threads", scenario_threads },
        { "fork", scenario_fork },
        { "dlopen-redirect", scenario_dlopen_redirect },
        { "no-driver", scenario_no_driver },
        { "export-table", scenario_export_table },
        { "nvml", scenario_nvml },
        { "nvml-no-driver", scenario_nvml_no_driver },
        { "which-driver", scenario_which_driver },
        { "already-loaded", scenario_already_loaded },
        { "load-order-local", scenario_load_order_local },
        { "load-order-global", scenario_load_order_global },
    };
    for (size_t i = 0; argc == 2 && i < sizeof(scenarios) / sizeof(*scenarios); i++)
        if (strcmp(argv[1], scenarios[i].name) == 0) {
            scenarios[i].run();
            if (failures)
                return 1;
            printf("ok - %s\n", argv[1]);
            return 0;
        }
    fprintf(stderr, "usage: client SCENARIO\n");
    return 2;
}
