/*
 * What the end-to-end test clients share (client.c, quota_client.c,
 * mediator_client.c, watch_kill_test.c):
 * checks that count failures instead of stopping, the driver loaded as
 * applications load it, sizes, and files as signals between processes.
 * Each client includes this once, after defining _GNU_SOURCE; the functions
 * are static, and marked unused since no client needs them all.
 */
#pragma once

#include <cuda.h>
#include <ctype.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vgpu/nvml_abi.h"
#include "common/contract/window/bar0.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>

#define MiB (1ull << 20)
#define GiB (1ull << 30)

static atomic_int failures;

#define CHECK(cond, ...)                                                \
    do {                                                                \
        if (!(cond)) {                                                  \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);       \
            fprintf(stderr, __VA_ARGS__);                               \
            fprintf(stderr, "\n");                                      \
            atomic_fetch_add(&failures, 1);                             \
        }                                                               \
    } while (0)

#define CU(call)                                                                \
    do {                                                                        \
        CUresult cu_r_ = (call);                                                \
        CHECK(cu_r_ == CUDA_SUCCESS, "%s returned %d", #call, (int)cu_r_);      \
    } while (0)

#define NV(call)                                                                \
    do {                                                                        \
        nvmlReturn_t nv_r_ = (call);                                            \
        CHECK(nv_r_ == NVML_SUCCESS, "%s returned %d", #call, (int)nv_r_);      \
    } while (0)

/* ---- the driver, as applications load it ---- */

static __attribute__((unused)) void *load(const char *soname)
{
    void *h = dlopen(soname, RTLD_NOW);
    if (!h) {
        fprintf(stderr, "FAIL dlopen %s: %s\n", soname, dlerror());
        exit(1);
    }
    return h;
}

/* libcuda.so.1 as loaded by dlopen; a scenario may set it to a library it
 * loaded itself (by path, as ctypes users do). */
static __attribute__((unused)) void *cuda_handle;
static __attribute__((unused)) void *nvml_handle;

/* name in the library *handle (opened by soname on first use), or exit. */
static __attribute__((unused)) void *lib_sym(void **handle, const char *soname, const char *name)
{
    if (!*handle)
        *handle = load(soname);
    void *p = dlsym(*handle, name);
    if (!p) {
        fprintf(stderr, "FAIL dlsym %s in %s\n", name, soname);
        exit(1);
    }
    return p;
}

#define cuda_sym(name) lib_sym(&cuda_handle, "libcuda.so.1", (name))
#define nvml_sym(name) lib_sym(&nvml_handle, "libnvidia-ml.so.1", (name))
#define F(name) ((__typeof__(&name))cuda_sym(#name))
#define N(name) ((__typeof__(&name))nvml_sym(#name))

/* A symbol of the fake driver behind vgpu (TEST_FAKE_LIBCUDA), reached with
 * dlmopen: vgpu answers dlopen of the driver with itself.  NULL if it is not
 * loaded. */
static __attribute__((unused)) void *fake_driver_sym(const char *name)
{
    const char *path = getenv("TEST_FAKE_LIBCUDA");
    void *h = path ? dlmopen(LM_ID_BASE, path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    return h ? dlsym(h, name) : NULL;
}

/* The vGPU's BAR0 (VGPU_BAR0), mapped read-only and read raw (no vgpu code
 * involved), or exit. */
static __attribute__((unused)) const struct vgpu_bar0 *env_bar0(void)
{
    static const struct vgpu_bar0 *b;
    if (b)
        return b;
    const char *path = getenv("VGPU_BAR0");
    int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0) {
        fprintf(stderr, "FAIL cannot open VGPU_BAR0=%s: %s\n", path ? path : "(unset)", strerror(errno));
        exit(1);
    }
    void *p = mmap(NULL, sizeof(struct vgpu_bar0), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        fprintf(stderr, "FAIL cannot map %s\n", path);
        exit(1);
    }
    b = p;
    CHECK(b->header.magic == VGPU_BAR0_MAGIC, "%s has no BAR0 magic", path);
    return b;
}

/* Which library a function lives in, by its file's real name. */
static __attribute__((unused)) int in_library(const void *fn, const char *prefix)
{
    Dl_info di;
    char real[PATH_MAX];
    if (!dladdr(fn, &di) || !realpath(di.dli_fname, real))
        return 0;
    const char *base = strrchr(real, '/');
    return strncmp(base ? base + 1 : real, prefix, strlen(prefix)) == 0;
}

static __attribute__((unused)) uint64_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (toupper((unsigned char)*end)) {
    case 'K': v *= 1024.0; break;
    case 'M': v *= 1024.0 * 1024; break;
    case 'G': v *= 1024.0 * 1024 * 1024; break;
    default: break;
    }
    return (uint64_t)v;
}

static __attribute__((unused)) double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Waits for a file another process creates; 0, or -1 after timeout seconds. */
static __attribute__((unused)) int wait_file(const char *path, double timeout)
{
    double end = now_s() + timeout;
    while (access(path, F_OK) != 0) {
        if (now_s() > end)
            return -1;
        usleep(5000);
    }
    return 0;
}

/* Creates path holding text, atomically. */
static __attribute__((unused)) void signal_file(const char *path, const char *text)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    CHECK(f != NULL, "cannot write %s", tmp);
    if (!f)
        return;
    fputs(text, f);
    fclose(f);
    CHECK(rename(tmp, path) == 0, "cannot rename %s", tmp);
}
