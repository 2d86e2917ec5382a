/*
 * Libraries (cuLibrary*): a library file holds an image as a module does
 * (modules.c); a library's kernels are the built-in ones (kernels.c), and
 * it has no managed variable.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <stdlib.h>

struct CUlib_st {
    unsigned magic;
    int alive;
    struct CUmod_st module;
};

/* Libraries are context-independent: no current context needed. */
static CUresult library_new(CUlibrary *library, const void *code)
{
    if (!library)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_image_ok(code))
        return CUDA_ERROR_INVALID_IMAGE;
    struct CUlib_st *l = calloc(1, sizeof *l);
    if (!l)
        return CUDA_ERROR_OUT_OF_MEMORY;
    l->magic = MODULE_MAGIC;
    l->alive = 1;
    l->module.magic = MODULE_MAGIC;
    l->module.alive = 1;
    *library = l;
    return CUDA_SUCCESS;
}

CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions, void **jitOptionsValues,
                           unsigned int numJitOptions, CUlibraryOption *libraryOptions, void **libraryOptionValues,
                           unsigned int numLibraryOptions)
{
    ENTER();
    (void)jitOptions;
    (void)jitOptionsValues;
    (void)numJitOptions;
    (void)libraryOptions;
    (void)libraryOptionValues;
    (void)numLibraryOptions;
    return library_new(library, code);
}

CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
                               void **jitOptionsValues, unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                               void **libraryOptionValues, unsigned int numLibraryOptions)
{
    ENTER();
    (void)jitOptions;
    (void)jitOptionsValues;
    (void)numJitOptions;
    (void)libraryOptions;
    (void)libraryOptionValues;
    (void)numLibraryOptions;
    if (!library || !fileName)
        return CUDA_ERROR_INVALID_VALUE;
    char *image = NULL;
    CUresult r = fake_read_image(fileName, &image);
    if (r == CUDA_SUCCESS)
        r = library_new(library, image);
    free(image);
    return r;
}

static int library_valid(CUlibrary l)
{
    return l && l->magic == MODULE_MAGIC && __atomic_load_n(&l->alive, __ATOMIC_ACQUIRE);
}

CUresult cuLibraryUnload(CUlibrary library)
{
    ENTER();
    if (!library_valid(library) || !__atomic_exchange_n(&library->alive, 0, __ATOMIC_ACQ_REL))
        return CUDA_ERROR_INVALID_HANDLE;
    __atomic_store_n(&library->module.alive, 0, __ATOMIC_RELEASE);
    return CUDA_SUCCESS;
}

CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    ENTER();
    if (!pKernel || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!library_valid(library))
        return CUDA_ERROR_INVALID_HANDLE;
    struct CUfunc_st *k = fake_kernel_by_name(name);
    if (!k)
        return CUDA_ERROR_NOT_FOUND;
    *pKernel = (CUkernel)(void *)k;
    return CUDA_SUCCESS;
}

CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
    ENTER();
    if (!pMod)
        return CUDA_ERROR_INVALID_VALUE;
    if (!library_valid(library))
        return CUDA_ERROR_INVALID_HANDLE;
    if (fake_current_device() < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    *pMod = &library->module;
    return CUDA_SUCCESS;
}

CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    ENTER();
    if (!pFunc)
        return CUDA_ERROR_INVALID_VALUE;
    const struct CUfunc_st *k = fake_kernel_of(kernel);
    if (!k)
        return CUDA_ERROR_INVALID_HANDLE;
    if (fake_current_device() < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    *pFunc = (CUfunction)k;
    return CUDA_SUCCESS;
}

CUresult cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib)
{
    ENTER();
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    if (!library_valid(lib))
        return CUDA_ERROR_INVALID_HANDLE;
    *count = fake_kernel_count();
    return CUDA_SUCCESS;
}

/* At most numKernels of the library's kernels, in kernels.c's order. */
CUresult cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int numKernels, CUlibrary lib)
{
    ENTER();
    if (!kernels || numKernels == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!library_valid(lib))
        return CUDA_ERROR_INVALID_HANDLE;
    for (unsigned i = 0; i < numKernels && i < fake_kernel_count(); i++)
        kernels[i] = (CUkernel)(void *)fake_kernel_at(i);
    return CUDA_SUCCESS;
}

/* A library's managed variable by name: the fake's libraries have none. */
CUresult cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name)
{
    ENTER();
    if (!name || (!dptr && !bytes))
        return CUDA_ERROR_INVALID_VALUE;
    if (!library_valid(library))
        return CUDA_ERROR_INVALID_HANDLE;
    fake_log("cuLibraryGetManaged: no managed variable named \"%.64s\" in the library", name);
    return CUDA_ERROR_NOT_FOUND;
}
