/*
 * launch_cost: what an asynchronous launch costs its caller, from C (no
 * interpreter between the program and the driver), for bench/remote.py's
 * sides: natively, and as a remote guest.
 *
 *   launch_cost [LAUNCHES]
 *
 * Loads the driver as applications do (dlopen("libcuda.so.1"): vgpu where it
 * is preloaded) and an empty kernel from PTX (sm_90); then, 21 times, times
 * a burst of LAUNCHES launches of it on the legacy stream (default 1000:
 * few enough that neither the GPU's queue nor a guest's ring fills, which
 * would time the GPU's launch rate instead) and synchronizes apart.
 * Prints one JSON line: {"launch_issue_c_us": the median burst's µs a
 * launch}.  Exit status 1 when a call fails.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                          ".visible .entry empty()\n{\n    ret;\n}\n";

static void *driver;

static void *sym(const char *name)
{
    void *p = dlsym(driver, name);
    if (!p) {
        fprintf(stderr, "launch_cost: the driver has no %s\n", name);
        exit(1);
    }
    return p;
}

#define F(name) ((__typeof__(&name))sym(#name))
#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        CUresult r_ = (call);                                                                                          \
        if (r_ != CUDA_SUCCESS) {                                                                                      \
            fprintf(stderr, "launch_cost: %s returned %d\n", #call, (int)r_);                                          \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000;
    if (n <= 0) {
        fprintf(stderr, "usage: launch_cost [LAUNCHES]\n");
        return 2;
    }
    driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!driver) {
        fprintf(stderr, "launch_cost: %s\n", dlerror());
        return 1;
    }
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn;
    CHECK(F(cuInit)(0));
    CHECK(F(cuDeviceGet)(&dev, 0));
    CHECK(F(cuDevicePrimaryCtxRetain)(&ctx, dev));
    CHECK(F(cuCtxSetCurrent)(ctx));
    CHECK(F(cuModuleLoadData)(&mod, ptx));
    CHECK(F(cuModuleGetFunction)(&fn, mod, "empty"));
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                       void **, void **) = F(cuLaunchKernel);
    for (int i = 0; i < 2000; i++)
        CHECK(launch(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    CHECK(F(cuCtxSynchronize)());
    enum { BURSTS = 21 };
    double us[BURSTS];
    for (int b = 0; b < BURSTS; b++) {
        double t0 = now_s();
        for (long i = 0; i < n; i++)
            CHECK(launch(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
        us[b] = (now_s() - t0) / (double)n * 1e6;
        CHECK(F(cuCtxSynchronize)());
    }
    qsort(us, BURSTS, sizeof(*us), by_value);
    printf("{\"launch_issue_c_us\": %.4f}\n", us[BURSTS / 2]);
    return 0;
}
