/*
 * Fake libcuda.so.1: GPUs emulated in host memory, for vgpu's CI tests.
 *
 * Device pointers are real host addresses (anonymous MAP_NORESERVE mappings),
 * so kernels and copies are plain memory operations and a test can "allocate"
 * many GiB without touching RAM. Device memory accounting goes through
 * ../gpu/ (shared with the fake NVML, and with other processes when
 * FAKEGPU_STATE names a file). Every exported cu* function has the exact
 * cuda.h prototype (built with -D__CUDA_API_VERSION_INTERNAL, so versioned and
 * legacy names are declared literally). See ../README.md for the model.
 *
 * Kernels run later, on the device timeline of ../gpu/timeline.c.  Each area
 * of the API has a file of its own (fake_cuda.h lists them); here: cuInit,
 * cuDriverGetVersion, the check every entry point makes and the library's
 * lock.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <pthread.h>

/* Owned by this file: set once by cuInit. */
static int g_initialized;
/* Owned by this file (fake_cuda.h says what it guards). */
pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;

CUresult fake_enter(void)
{
    COUNT_CALL();
    return __atomic_load_n(&g_initialized, __ATOMIC_ACQUIRE) ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult cuInit(unsigned int Flags)
{
    COUNT_CALL();
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    fake_devices_init();
    __atomic_store_n(&g_initialized, 1, __ATOMIC_RELEASE);
    return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *driverVersion)
{
    COUNT_CALL();
    if (!driverVersion)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = FAKEGPU_CUDA_VERSION;
    return CUDA_SUCCESS;
}
