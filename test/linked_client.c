/* Linked against libcuda.so.1 (DT_NEEDED), as most CUDA programs are: the
 * symlink install must put vgpu in front of the driver for it. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
    Dl_info di;
    char real[PATH_MAX];
    if (!dladdr((void *)cuInit, &di) || !realpath(di.dli_fname, real) || !strstr(real, "libvgpu-cuda")) {
        fprintf(stderr, "FAIL cuInit comes from %s, not vgpu\n", di.dli_fname);
        return 1;
    }
    int count = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&count) != CUDA_SUCCESS || count != 2) {
        fprintf(stderr, "FAIL cuInit/cuDeviceGetCount through vgpu: count %d\n", count);
        return 1;
    }
    printf("ok - linked program reaches the driver through vgpu\n");
    return 0;
}
