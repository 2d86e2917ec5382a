/*
 * An admitted process that allocates around vgpu, for test/gpu/watch.sh:
 * the one way past the interposer that a dynamic program under LD_PRELOAD
 * has.  It starts through libcuda.so.1 (vgpu, preloaded: it is admitted to
 * its vGPU and holds 256 MiB there, counted), then loads the driver's own
 * file a second time with dlmopen(LM_ID_NEWLM), in a link-map namespace of
 * its own where no preloaded library reaches, and allocates GIB GiB
 * through that copy: vgpu never sees it, and only the mediator's watch,
 * which reads what the driver counts for the process, can.
 *
 *   gcc -o dlmopen_alloc dlmopen_alloc.c -ldl      (watch.sh builds it)
 *   dlmopen_alloc DRIVER GIB   prints "ready PID" once it holds the memory
 *
 * Exit 3 when the driver cannot be started in the second namespace (then
 * there is nothing to catch), 2 on any other failure.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;

struct driver {
    CUresult (*init)(unsigned);
    CUresult (*device)(CUdevice *, int);
    CUresult (*retain)(CUcontext *, CUdevice);
    CUresult (*current)(CUcontext);
    CUresult (*alloc)(CUdeviceptr *, size_t);
};

static int resolve(void *h, struct driver *d, const char *which)
{
    d->init = (CUresult(*)(unsigned))dlsym(h, "cuInit");
    d->device = (CUresult(*)(CUdevice *, int))dlsym(h, "cuDeviceGet");
    d->retain = (CUresult(*)(CUcontext *, CUdevice))dlsym(h, "cuDevicePrimaryCtxRetain");
    d->current = (CUresult(*)(CUcontext))dlsym(h, "cuCtxSetCurrent");
    d->alloc = (CUresult(*)(CUdeviceptr *, size_t))dlsym(h, "cuMemAlloc_v2");
    if (d->init && d->device && d->retain && d->current && d->alloc)
        return 0;
    fprintf(stderr, "dlmopen_alloc: %s lacks a CUDA entry point\n", which);
    return -1;
}

/* Starts the driver d on device 0 and allocates n bytes: 0, or the failing CUresult. */
static CUresult hold(const struct driver *d, size_t n)
{
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr p;
    CUresult r;
    if ((r = d->init(0)) || (r = d->device(&dev, 0)) || (r = d->retain(&ctx, dev)) || (r = d->current(ctx)))
        return r;
    return d->alloc(&p, n);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: dlmopen_alloc DRIVER GIB\n");
        return 2;
    }
    size_t gib = strtoull(argv[2], NULL, 10);
    struct driver vgpu, own;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h || resolve(h, &vgpu, "libcuda.so.1") != 0)
        return 2;
    CUresult r = hold(&vgpu, 256ull << 20);
    if (r) {
        fprintf(stderr, "dlmopen_alloc: through libcuda.so.1: CUDA error %d\n", r);
        return 2;
    }
    void *second = dlmopen(LM_ID_NEWLM, argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!second) {
        fprintf(stderr, "dlmopen_alloc: dlmopen %s: %s\n", argv[1], dlerror());
        return 3;
    }
    if (resolve(second, &own, argv[1]) != 0)
        return 2;
    if ((r = hold(&own, gib << 30)) != 0) {
        fprintf(stderr, "dlmopen_alloc: the driver in a namespace of its own: CUDA error %d\n", r);
        return 3;
    }
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    for (;;)
        pause();
}
