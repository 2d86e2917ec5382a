/*
 * A process that holds GPU memory the way a user getting around vgpu
 * would, for test/gpu/mediator/watch.sh; it prints "ready PID" once it holds the
 * memory and waits to be killed.  Three ways to the driver:
 *
 *   static_alloc
 *       built static (gcc -static: a static glibc can dlopen, where it was
 *       built on the machine that runs it): no library vgpu could stand in
 *       for is loaded when it starts, so it runs without vgpu whatever its
 *       environment says.  dlopen of libcuda.so.1, 1 GiB.
 *   static_alloc DRIVER
 *       built dynamic, run under LD_PRELOAD: the driver's own file opened
 *       and called directly, 1 GiB (on r580 no escape: the driver's calls
 *       between its entry points bind to the preloaded vgpu's).
 *   static_alloc --again DRIVER GIB
 *       built dynamic, run under LD_PRELOAD: admitted through libcuda.so.1
 *       (vgpu) with 256 MiB, then the driver's file loaded a second time
 *       with dlmopen(LM_ID_NEWLM), in a link-map namespace where no
 *       preloaded library reaches, and GIB GiB allocated through it.
 *
 * Exit 3 when the second driver will not load or start (nothing is held
 * around vgpu then), 2 on any other failure.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;

/* Opens the driver at path (in a namespace of its own when again), starts
 * it on device 0 and allocates bytes: 0, -1 when it cannot be loaded, -2
 * when it lacks an entry point, else the failing CUresult. */
static int hold(const char *path, bool again, size_t bytes)
{
    void *h = again ? dlmopen(LM_ID_NEWLM, path, RTLD_NOW | RTLD_LOCAL) : dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "static_alloc: %s %s: %s\n", again ? "dlmopen" : "dlopen", path, dlerror());
        return -1;
    }
    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(h, "cuInit");
    CUresult (*device)(CUdevice *, int) = (CUresult(*)(CUdevice *, int))dlsym(h, "cuDeviceGet");
    CUresult (*retain)(CUcontext *, CUdevice) = (CUresult(*)(CUcontext *, CUdevice))dlsym(h, "cuDevicePrimaryCtxRetain");
    CUresult (*current)(CUcontext) = (CUresult(*)(CUcontext))dlsym(h, "cuCtxSetCurrent");
    CUresult (*alloc)(CUdeviceptr *, size_t) = (CUresult(*)(CUdeviceptr *, size_t))dlsym(h, "cuMemAlloc_v2");
    if (!init || !device || !retain || !current || !alloc) {
        fprintf(stderr, "static_alloc: %s lacks a CUDA entry point\n", path);
        return -2;
    }
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr p;
    CUresult r;
    if ((r = init(0)) || (r = device(&dev, 0)) || (r = retain(&ctx, dev)) || (r = current(ctx)) ||
        (r = alloc(&p, bytes)))
        fprintf(stderr, "static_alloc: %s%s: CUDA error %d\n", path, again ? " (loaded again)" : "", r);
    return r;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--again") == 0) {
        if (hold("libcuda.so.1", false, 256ull << 20) != 0)
            return 2;
        int r = hold(argv[2], true, strtoull(argv[3], NULL, 10) << 30);
        if (r != 0)
            return r == -2 ? 2 : 3;
    } else if (argc <= 2) {
        if (hold(argc == 2 ? argv[1] : "libcuda.so.1", false, 1ull << 30) != 0)
            return 2;
    } else {
        fprintf(stderr, "usage: static_alloc [DRIVER] | static_alloc --again DRIVER GIB\n");
        return 2;
    }
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    for (;;)
        pause();
}
