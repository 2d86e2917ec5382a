/*
 * What a user of each load order observes, checked the same way whichever
 * way the program reached libcuda.so.1 (test/loadorder/README.md): linked,
 * two levels down, dlopen, cgo.  Python (test/interpose/python_load.py) checks the same.
 *
 * Expectations come from the environment, each checked where set:
 *   TEST_EXPECT_VGPU=1|0  cuInit (and nvmlInit_v2) are, or are not, vgpu's
 *   TEST_EXPECT_COUNT=N   the device count, in CUDA and NVML (0: cuInit fails)
 *   TEST_EXPECT_QUOTA=B   device 0 shows B bytes (cuDeviceTotalMem_v2, the total
 *                         of cuMemGetInfo_v2 and of nvmlDeviceGetMemoryInfo);
 *                         1 MiB allocates, 2 * B fails with CUDA_ERROR_OUT_OF_MEMORY
 *
 * Include once, after _GNU_SOURCE; every function is static.
 */
#pragma once

#include <cuda.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vgpu/nvml_abi.h"

/* The CUDA entry points a probe calls, however the program bound them. */
struct probe_cuda {
    __typeof__(&cuInit) init;
    __typeof__(&cuDeviceGetCount) count;
    __typeof__(&cuDeviceGet) get;
    __typeof__(&cuDeviceTotalMem_v2) total;
    __typeof__(&cuDevicePrimaryCtxRetain) retain;
    __typeof__(&cuCtxSetCurrent) set_current;
    __typeof__(&cuMemGetInfo_v2) mem_info;
    __typeof__(&cuMemAlloc_v2) alloc;
    __typeof__(&cuMemFree_v2) free;
};

/* The same entry points as a program binds them at link time (DT_NEEDED). */
#define PROBE_CUDA_LINKED                                                                               \
    {                                                                                                   \
        cuInit, cuDeviceGetCount, cuDeviceGet, cuDeviceTotalMem_v2, cuDevicePrimaryCtxRetain,           \
            cuCtxSetCurrent, cuMemGetInfo_v2, cuMemAlloc_v2, cuMemFree_v2                               \
    }

static int probe_failures;

#define PROBE_CHECK(cond, ...)                                                  \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "FAIL ");                                           \
            fprintf(stderr, __VA_ARGS__);                                       \
            fprintf(stderr, "\n");                                              \
            probe_failures++;                                                   \
        }                                                                       \
    } while (0)

#define PROBE_CU(call)                                                                  \
    do {                                                                                \
        CUresult probe_r_ = (call);                                                     \
        PROBE_CHECK(probe_r_ == CUDA_SUCCESS, "%s returned %d", #call, (int)probe_r_);  \
    } while (0)

#define PROBE_MiB ((size_t)1 << 20)
#define PROBE_GiB ((size_t)1 << 30)

static __attribute__((unused)) const char *probe_library_of(const void *fn, char *buf, size_t len)
{
    Dl_info di;
    char real[PATH_MAX];
    if (!fn || !dladdr(fn, &di) || !di.dli_fname)
        snprintf(buf, len, "(nowhere)");
    else
        snprintf(buf, len, "%s", realpath(di.dli_fname, real) ? real : di.dli_fname);
    return buf;
}

static __attribute__((unused)) long long probe_env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? atoll(v) : -1;
}

/* Checks what vgpu must show against TEST_EXPECT_*; returns the failures so far. */
static __attribute__((unused)) int probe_cuda(const struct probe_cuda *f)
{
    long long want_vgpu = probe_env("TEST_EXPECT_VGPU"), want_count = probe_env("TEST_EXPECT_COUNT"),
              quota = probe_env("TEST_EXPECT_QUOTA");
    if (!f->init || !f->count || !f->get || !f->total || !f->retain || !f->set_current || !f->mem_info ||
        !f->alloc || !f->free) {
        PROBE_CHECK(0, "libcuda.so.1 lacks the CUDA functions");
        return probe_failures;
    }
    char where[PATH_MAX];
    probe_library_of((const void *)f->init, where, sizeof(where));
    printf("cuInit from %s\n", where);
    if (want_vgpu >= 0)
        PROBE_CHECK((strstr(where, "libvgpu-cuda") != NULL) == (want_vgpu == 1), "cuInit comes from %s", where);
    CUresult r = f->init(0);
    int count = 0; /* none, where cuInit fails */
    if (r == CUDA_SUCCESS)
        r = f->count(&count);
    printf("cuInit/cuDeviceGetCount: %d, %d device(s)\n", (int)r, count);
    if (want_count >= 0)
        PROBE_CHECK(count == want_count, "%d device(s), expected %lld (result %d)", count, want_count, (int)r);
    if (quota < 0 || r != CUDA_SUCCESS)
        return probe_failures;

    CUdevice dev;
    CUcontext ctx;
    size_t total = 0, free_bytes = 0, ctx_total = 0;
    PROBE_CHECK(f->get(&dev, 0) == CUDA_SUCCESS && f->total(&total, dev) == CUDA_SUCCESS, "cuDeviceTotalMem_v2");
    PROBE_CHECK(total == (size_t)quota, "cuDeviceTotalMem_v2 shows %zu bytes, expected the quota %lld", total, quota);
    PROBE_CHECK(f->retain(&ctx, dev) == CUDA_SUCCESS && f->set_current(ctx) == CUDA_SUCCESS, "a context on device 0");
    PROBE_CHECK(f->mem_info(&free_bytes, &ctx_total) == CUDA_SUCCESS, "cuMemGetInfo_v2");
    PROBE_CHECK(ctx_total == (size_t)quota, "cuMemGetInfo_v2 shows a total of %zu bytes, expected the quota %lld",
                ctx_total, quota);
    CUdeviceptr small = 0, big = 0;
    PROBE_CHECK(f->alloc(&small, 1 << 20) == CUDA_SUCCESS, "1 MiB under the quota was refused");
    CUresult past = f->alloc(&big, 2 * (size_t)quota);
    PROBE_CHECK(past == CUDA_ERROR_OUT_OF_MEMORY, "an allocation of twice the quota returned %d, expected %d",
                (int)past, (int)CUDA_ERROR_OUT_OF_MEMORY);
    if (past == CUDA_SUCCESS)
        f->free(big);
    if (small)
        f->free(small);
    printf("quota: total %zu, cuMemGetInfo total %zu, 2x quota -> %d\n", total, ctx_total, (int)past);
    return probe_failures;
}

/* NVML from a handle to libnvidia-ml.so.1, against the same expectations. */
static __attribute__((unused)) int probe_nvml(void *h)
{
    __typeof__(&nvmlInit_v2) init = (__typeof__(init))dlsym(h, "nvmlInit_v2");
    __typeof__(&nvmlDeviceGetCount_v2) count = (__typeof__(count))dlsym(h, "nvmlDeviceGetCount_v2");
    __typeof__(&nvmlDeviceGetHandleByIndex_v2) by_index = (__typeof__(by_index))dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
    __typeof__(&nvmlDeviceGetMemoryInfo) memory = (__typeof__(memory))dlsym(h, "nvmlDeviceGetMemoryInfo");
    if (!init || !count || !by_index || !memory) {
        PROBE_CHECK(0, "libnvidia-ml.so.1 lacks the NVML functions");
        return probe_failures;
    }
    long long want_vgpu = probe_env("TEST_EXPECT_VGPU"), want_count = probe_env("TEST_EXPECT_COUNT"),
              quota = probe_env("TEST_EXPECT_QUOTA");
    char where[PATH_MAX];
    probe_library_of((const void *)init, where, sizeof(where));
    printf("nvmlInit_v2 from %s\n", where);
    if (want_vgpu >= 0)
        PROBE_CHECK((strstr(where, "libvgpu-nvml") != NULL) == (want_vgpu == 1), "nvmlInit_v2 comes from %s", where);
    unsigned n = 0;
    nvmlDevice_t dev;
    nvmlMemory_t mem = { 0 };
    nvmlReturn_t r = init();
    if (r == NVML_SUCCESS)
        r = count(&n);
    if (want_count >= 0)
        PROBE_CHECK(r == NVML_SUCCESS && n == want_count, "NVML: %u device(s), expected %lld (result %d)", n,
                    want_count, (int)r);
    if (quota >= 0 && r == NVML_SUCCESS) {
        PROBE_CHECK(by_index(0, &dev) == NVML_SUCCESS && memory(dev, &mem) == NVML_SUCCESS, "NVML memory info");
        PROBE_CHECK(mem.total == (unsigned long long)quota, "NVML shows a total of %llu bytes, expected the quota %lld",
                    mem.total, quota);
    }
    printf("NVML: %u device(s), device 0 total %llu\n", n, mem.total);
    return probe_failures;
}

/* The CUDA entry points from a dlopen handle; NULL members where absent. */
static __attribute__((unused)) struct probe_cuda probe_cuda_from(void *h)
{
    struct probe_cuda f = {
        (__typeof__(f.init))dlsym(h, "cuInit"),
        (__typeof__(f.count))dlsym(h, "cuDeviceGetCount"),
        (__typeof__(f.get))dlsym(h, "cuDeviceGet"),
        (__typeof__(f.total))dlsym(h, "cuDeviceTotalMem_v2"),
        (__typeof__(f.retain))dlsym(h, "cuDevicePrimaryCtxRetain"),
        (__typeof__(f.set_current))dlsym(h, "cuCtxSetCurrent"),
        (__typeof__(f.mem_info))dlsym(h, "cuMemGetInfo_v2"),
        (__typeof__(f.alloc))dlsym(h, "cuMemAlloc_v2"),
        (__typeof__(f.free))dlsym(h, "cuMemFree_v2"),
    };
    return f;
}

/* Opens the real driver first (TEST_DRIVER_FIRST=path), as a program that
 * probed the driver by its path before reaching libcuda.so.1 would. */
static __attribute__((unused)) void probe_open_driver_first(void)
{
    const char *path = getenv("TEST_DRIVER_FIRST");
    if (path && *path && !dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
        fprintf(stderr, "FAIL cannot open %s: %s\n", path, dlerror());
        exit(1);
    }
}
