/*
 * wake_cost: what a synchronous driver call costs its caller after it has
 * been idle a while, for bench/remote.py's sides: natively, and as a remote
 * guest, whose executor sleeps once it has waited VGPU_REMOTE_SPIN_US for a
 * call (docs/design/remote.md, "Waiting").  A program paced by Python makes
 * its calls tens of microseconds apart.
 *
 *   wake_cost [CALLS]
 *
 * Loads the driver as applications do (dlopen("libcuda.so.1")), then for
 * each gap (0, 10, 30, 60, 100, 300 and 1000 µs, and 10 ms) makes CALLS
 * calls (default 400) of cuDeviceGetCount (an answer a guest does not keep:
 * a round trip), each after the CPU has been busy (not asleep) for the gap,
 * as a program computing between its calls is.  Prints one JSON line:
 * {"wake_us_GAP": the median call's µs, "wake_p90_us_GAP": the 90th
 * percentile's, ...}.  Exit status 1 when a call fails.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 400;
    if (n <= 0) {
        fprintf(stderr, "usage: wake_cost [CALLS]\n");
        return 2;
    }
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!driver) {
        fprintf(stderr, "wake_cost: %s\n", dlerror());
        return 1;
    }
    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(driver, "cuInit");
    CUresult (*count)(int *) = (CUresult(*)(int *))dlsym(driver, "cuDeviceGetCount");
    int devices = 0;
    if (!init || !count || init(0) != CUDA_SUCCESS || count(&devices) != CUDA_SUCCESS) {
        fprintf(stderr, "wake_cost: cuInit or cuDeviceGetCount failed\n");
        return 1;
    }
    static const int gaps[] = { 0, 10, 30, 60, 100, 300, 1000, 10000 };
    double *took = malloc((size_t)n * sizeof(*took));
    if (!took)
        return 1;
    printf("{");
    for (size_t g = 0; g < sizeof(gaps) / sizeof(gaps[0]); g++) {
        for (long i = 0; i < n; i++) {
            for (double until = now_us() + gaps[g]; now_us() < until;)
                ;
            double t = now_us();
            if (count(&devices) != CUDA_SUCCESS) {
                fprintf(stderr, "wake_cost: cuDeviceGetCount failed\n");
                return 1;
            }
            took[i] = now_us() - t;
        }
        qsort(took, (size_t)n, sizeof(*took), by_value);
        printf("%s\"wake_us_%d\": %.3f, \"wake_p90_us_%d\": %.3f", g ? ", " : "", gaps[g], took[n / 2], gaps[g],
               took[n * 9 / 10]);
    }
    printf("}\n");
    free(took);
    return 0;
}
