/*
 * A statically linked CUDA program, for test/gpu/watch.sh: no library vgpu
 * could stand in for is loaded when it starts, so it runs without vgpu
 * whatever its environment says, and only the mediator's watch can see it.
 * It loads the driver with dlopen (a static glibc can, where it was built
 * on the machine that runs it), holds 1 GiB and waits to be killed.
 *
 *   gcc -static -o static_alloc static_alloc.c      (watch.sh builds it)
 *   static_alloc [DRIVER]   prints "ready PID" once it holds the memory
 *
 * DRIVER (default libcuda.so.1) is the library to dlopen: built dynamic and
 * given the driver's own file, under LD_PRELOAD, it is the dynamic way past
 * vgpu: vgpu is loaded, and never called.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;

static void *sym(void *h, const char *name)
{
    void *p = dlsym(h, name);
    if (!p)
        fprintf(stderr, "static_alloc: the driver has no %s\n", name);
    return p;
}

int main(int argc, char **argv)
{
    const char *driver = argc > 1 ? argv[1] : "libcuda.so.1";
    void *h = dlopen(driver, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "static_alloc: dlopen %s: %s\n", driver, dlerror());
        return 2;
    }
    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))sym(h, "cuInit");
    CUresult (*device)(CUdevice *, int) = (CUresult(*)(CUdevice *, int))sym(h, "cuDeviceGet");
    CUresult (*retain)(CUcontext *, CUdevice) = (CUresult(*)(CUcontext *, CUdevice))sym(h, "cuDevicePrimaryCtxRetain");
    CUresult (*current)(CUcontext) = (CUresult(*)(CUcontext))sym(h, "cuCtxSetCurrent");
    CUresult (*alloc)(CUdeviceptr *, size_t) = (CUresult(*)(CUdeviceptr *, size_t))sym(h, "cuMemAlloc_v2");
    if (!init || !device || !retain || !current || !alloc)
        return 2;
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr p;
    CUresult r;
    if ((r = init(0)) || (r = device(&dev, 0)) || (r = retain(&ctx, dev)) || (r = current(ctx)) ||
        (r = alloc(&p, 1ull << 30))) {
        fprintf(stderr, "static_alloc: CUDA error %d\n", r);
        return 2;
    }
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    for (;;)
        pause();
}
