/* The library that links libcuda.so.1, two levels below the program, as
 * ggml's CUDA backend is (program -> libggml -> libggml-cuda -> libcuda). */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((visibility("default"))) int chain_bottom_probe(char *driver, size_t driver_len, int *count,
                                                          size_t *total)
{
    Dl_info di;
    char real[PATH_MAX];
    if (!dladdr((void *)cuInit, &di) || !realpath(di.dli_fname, real))
        return -1;
    snprintf(driver, driver_len, "%s", real);
    CUdevice dev;
    CUresult r = cuInit(0);
    if (r == CUDA_SUCCESS)
        r = cuDeviceGetCount(count);
    if (r == CUDA_SUCCESS)
        r = cuDeviceGet(&dev, 0);
    if (r == CUDA_SUCCESS)
        r = cuDeviceTotalMem_v2(total, dev);
    return (int)r;
}
