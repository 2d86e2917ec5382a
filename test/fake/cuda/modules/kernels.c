/*
 * The built-in kernels (add_one, fill_u32, busy): every module holds them
 * (modules.c, libraries.c), in the order they enumerate them.  A CUkernel
 * is the same object as its CUfunction, so either is accepted by the launch
 * calls (launch.c); their names (cuFuncGetName, cuKernelGetName) and
 * parameters' layouts are here.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <stdint.h>
#include <string.h>

#define KERNEL_MAGIC 0x4e524b46u /* "FKRN" */

/* Argument i of a launch, as the kernel declares it. */
#define ARG(args, i, type) (*(const type *)(const void *)&(args)[i])

/* add_one(float *x, int n) and fill_u32(unsigned *x, unsigned v, int n): n elements of x. */
static CUresult check_elements(CUdeviceptr x, int n, size_t element)
{
    return n <= 0 || fake_range_ok(x, (size_t)n * element) ? CUDA_SUCCESS : CUDA_ERROR_ILLEGAL_ADDRESS;
}

static CUresult check_add_one(const unsigned long long *args)
{
    return check_elements(ARG(args, 0, CUdeviceptr), ARG(args, 1, int), sizeof(float));
}

static void run_add_one(const unsigned long long *args)
{
    float *p = (float *)(uintptr_t)ARG(args, 0, CUdeviceptr);
    for (int i = 0; i < ARG(args, 1, int); i++)
        p[i] += 1.0f;
}

static CUresult check_fill_u32(const unsigned long long *args)
{
    return check_elements(ARG(args, 0, CUdeviceptr), ARG(args, 2, int), sizeof(unsigned));
}

static void run_fill_u32(const unsigned long long *args)
{
    unsigned *p = (unsigned *)(uintptr_t)ARG(args, 0, CUdeviceptr);
    for (int i = 0; i < ARG(args, 2, int); i++)
        p[i] = ARG(args, 1, unsigned);
}

/* Owned by this file, written only in the attributes a program sets
 * (attributes.c): a kernel's CUfunction (and CUkernel) is its entry's address. */
static struct CUfunc_st g_kernels[] = {
    { KERNEL_MAGIC, "add_one", 2, { sizeof(CUdeviceptr), sizeof(int) }, check_add_one, run_add_one, 0, 0, -1 },
    { KERNEL_MAGIC,
      "fill_u32",
      3,
      { sizeof(CUdeviceptr), sizeof(unsigned), sizeof(int) },
      check_fill_u32,
      run_fill_u32,
      0,
      0,
      -1 },
    /* busy(unsigned long long ns): occupies the device for ns. */
    { KERNEL_MAGIC, "busy", 1, { sizeof(unsigned long long) }, NULL, NULL, 1, 0, -1 },
};
#define NKERNELS (sizeof g_kernels / sizeof g_kernels[0])

const struct CUfunc_st *fake_kernel_of(const void *handle)
{
    for (size_t i = 0; i < NKERNELS; i++)
        if (handle == &g_kernels[i])
            return &g_kernels[i];
    return NULL;
}

struct CUfunc_st *fake_kernel_by_name(const char *name)
{
    for (size_t i = 0; name && i < NKERNELS; i++)
        if (strcmp(g_kernels[i].name, name) == 0)
            return &g_kernels[i];
    return NULL;
}

unsigned fake_kernel_count(void)
{
    return NKERNELS;
}

struct CUfunc_st *fake_kernel_at(unsigned i)
{
    return i < NKERNELS ? &g_kernels[i] : NULL;
}

/* A kernel's name, as its module declares it (C linkage: not mangled). */
static CUresult name_of(const char **name, const void *handle)
{
    const struct CUfunc_st *k = fake_kernel_of(handle);
    if (!name || !k)
        return CUDA_ERROR_INVALID_VALUE;
    *name = k->name;
    return CUDA_SUCCESS;
}

CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
    ENTER();
    return name_of(name, hfunc);
}

CUresult cuKernelGetName(const char **name, CUkernel hfunc)
{
    ENTER();
    return name_of(name, hfunc);
}

/* Parameter index of f: where it lies in the parameter buffer (each at its
 * natural alignment) and how long it is; past the last, INVALID_VALUE. */
CUresult cuFuncGetParamInfo(CUfunction f, size_t index, size_t *offset, size_t *size)
{
    ENTER();
    const struct CUfunc_st *k = fake_kernel_of(f);
    if (!k)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!offset || !size || index >= k->nargs)
        return CUDA_ERROR_INVALID_VALUE;
    size_t at = 0;
    for (size_t i = 0;; i++) {
        at = (at + k->arg_size[i] - 1) / k->arg_size[i] * k->arg_size[i];
        if (i == index)
            break;
        at += k->arg_size[i];
    }
    *offset = at;
    *size = k->arg_size[index];
    return CUDA_SUCCESS;
}

/* A library's kernel is the fake's function itself (cuLibraryGetKernel). */
CUresult cuKernelGetParamInfo(CUkernel kernel, size_t index, size_t *offset, size_t *size)
{
    return cuFuncGetParamInfo((CUfunction)(void *)kernel, index, offset, size);
}
