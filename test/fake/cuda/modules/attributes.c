/*
 * Functions' and kernels' attributes (cuFuncGetAttribute, cuFuncSetAttribute,
 * cuKernelGetAttribute, cuKernelSetAttribute): fixed ones as an H100's
 * small kernel, and the two a program sets (the dynamic shared memory it
 * may ask, the preferred carveout), kept per built-in kernel.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

/* 227 KiB: what an H100's block may ask of shared memory at most. */
#define SHARED_MAX (227u << 10)

static CUresult get(int *value, CUfunction_attribute attr, const void *handle)
{
    const struct CUfunc_st *k = fake_kernel_of(handle);
    if (!k)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!value || (unsigned)attr >= (unsigned)CU_FUNC_ATTRIBUTE_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    switch (attr) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *value = 16; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *value = 90; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *value = __atomic_load_n(&k->dynamic_smem, __ATOMIC_RELAXED); break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *value = __atomic_load_n(&k->carveout, __ATOMIC_RELAXED); break;
    default: *value = 0;
    }
    return CUDA_SUCCESS;
}

static CUresult set(const void *handle, CUfunction_attribute attr, int value)
{
    struct CUfunc_st *k = (struct CUfunc_st *)fake_kernel_of(handle);
    if (!k)
        return CUDA_ERROR_INVALID_HANDLE;
    if (attr == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES && value >= 0 && (unsigned)value <= SHARED_MAX)
        __atomic_store_n(&k->dynamic_smem, value, __ATOMIC_RELAXED);
    else if (attr == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT && value >= -1 && value <= 100)
        __atomic_store_n(&k->carveout, value, __ATOMIC_RELAXED);
    else
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    ENTER();
    return get(pi, attrib, hfunc);
}

CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    ENTER();
    return set(hfunc, attrib, value);
}

CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev)
{
    ENTER();
    if (dev < 0 || dev >= fake_device_count())
        return CUDA_ERROR_INVALID_DEVICE;
    return get(pi, attrib, kernel);
}

CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev)
{
    ENTER();
    if (dev < 0 || dev >= fake_device_count())
        return CUDA_ERROR_INVALID_DEVICE;
    return set(kernel, attrib, val);
}
