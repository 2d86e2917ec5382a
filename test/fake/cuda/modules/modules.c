/*
 * Modules: an image is a NUL-terminated string starting with "fakegpu", in
 * memory or a file's bytes, or a fatbin wrapper (nvcc's, magic 0x466243b1)
 * whose data pointer the fake follows to one, as a driver does; every
 * module holds the same built-in kernels (kernels.c), and no global
 * variable, texture or surface reference.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define IMAGE_TAG "fakegpu"

#define WRAPPER_MAGIC 0x466243b1u

int fake_image_ok(const void *image)
{
    const struct {
        unsigned magic, version;
        const void *data, *prelinked;
    } *wrapper = image;
    unsigned magic = WRAPPER_MAGIC;
    if (image && strnlen(image, sizeof(magic)) == sizeof(magic) && memcmp(image, &magic, sizeof(magic)) == 0)
        image = wrapper->data;
    return image && strncmp((const char *)image, IMAGE_TAG, strlen(IMAGE_TAG)) == 0;
}

static int module_valid(CUmodule m)
{
    return m && m->magic == MODULE_MAGIC && __atomic_load_n(&m->alive, __ATOMIC_ACQUIRE);
}

static CUresult module_load(CUmodule *module, const void *image)
{
    if (!module)
        return CUDA_ERROR_INVALID_VALUE;
    if (fake_current_device() < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!fake_image_ok(image))
        return CUDA_ERROR_INVALID_IMAGE;
    struct CUmod_st *m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    m->magic = MODULE_MAGIC;
    m->alive = 1;
    *module = m;
    return CUDA_SUCCESS;
}

CUresult fake_read_image(const char *path, char **image)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return CUDA_ERROR_FILE_NOT_FOUND;
    struct stat st;
    char *bytes = NULL;
    size_t got = 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (bytes = malloc((size_t)st.st_size + 1)))
        while (got < (size_t)st.st_size) {
            ssize_t n = read(fd, bytes + got, (size_t)st.st_size - got);
            if (n <= 0)
                break;
            got += (size_t)n;
        }
    close(fd);
    if (!bytes || got != (size_t)st.st_size) {
        free(bytes);
        return CUDA_ERROR_FILE_NOT_FOUND;
    }
    bytes[got] = 0;
    *image = bytes;
    return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    ENTER();
    return module_load(module, image);
}

CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
    ENTER();
    if (!module || !fname)
        return CUDA_ERROR_INVALID_VALUE;
    char *image = NULL;
    CUresult r = fake_read_image(fname, &image);
    if (r == CUDA_SUCCESS)
        r = module_load(module, image);
    free(image);
    return r;
}

/* A fat binary is an image like any other here. */
CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
    ENTER();
    return module_load(module, fatCubin);
}

/* The JIT's options as a driver answers them: the info log says what was
 * loaded, the error log why an image was not; the logs' sizes become what
 * was written, the wall time 1.5 ms, the threads a block 128. */
CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions, CUjit_option *options,
                            void **optionValues)
{
    ENTER();
    if (numOptions && (!options || !optionValues))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = module_load(module, image);
    char *info = NULL, *error = NULL;
    size_t info_size = 0, error_size = 0;
    for (unsigned i = 0; i < numOptions; i++) {
        if (options[i] == CU_JIT_INFO_LOG_BUFFER)
            info = optionValues[i];
        else if (options[i] == CU_JIT_ERROR_LOG_BUFFER)
            error = optionValues[i];
        else if (options[i] == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
            info_size = (size_t)(uintptr_t)optionValues[i];
        else if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            error_size = (size_t)(uintptr_t)optionValues[i];
    }
    int wrote_info = 0, wrote_error = 0;
    if (info && info_size)
        wrote_info = snprintf(info, info_size, "fakegpu jit: %s", r == CUDA_SUCCESS ? "loaded" : "nothing");
    if (error && error_size && r != CUDA_SUCCESS)
        wrote_error = snprintf(error, error_size, "fakegpu jit: not an image (%d)", (int)r);
    for (unsigned i = 0; i < numOptions; i++) {
        if (options[i] == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
            optionValues[i] = (void *)(uintptr_t)(wrote_info > 0 ? (size_t)wrote_info + 1 : 0);
        else if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            optionValues[i] = (void *)(uintptr_t)(wrote_error > 0 ? (size_t)wrote_error + 1 : 0);
        else if (options[i] == CU_JIT_WALL_TIME) {
            float ms = 1.5f;
            memcpy(&optionValues[i], &ms, sizeof(ms));
        } else if (options[i] == CU_JIT_THREADS_PER_BLOCK)
            optionValues[i] = (void *)(uintptr_t)128;
    }
    return r;
}

CUresult cuModuleUnload(CUmodule hmod)
{
    ENTER();
    if (!module_valid(hmod) || !__atomic_exchange_n(&hmod->alive, 0, __ATOMIC_ACQ_REL))
        return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS; /* kept allocated: stale handles are detected */
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    ENTER();
    if (!hfunc || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!module_valid(hmod))
        return CUDA_ERROR_INVALID_HANDLE;
    struct CUfunc_st *k = fake_kernel_by_name(name);
    if (!k)
        return CUDA_ERROR_NOT_FOUND;
    *hfunc = k;
    return CUDA_SUCCESS;
}

CUresult cuModuleGetFunctionCount(unsigned int *count, CUmodule mod)
{
    ENTER();
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    if (!module_valid(mod))
        return CUDA_ERROR_INVALID_HANDLE;
    *count = fake_kernel_count();
    return CUDA_SUCCESS;
}

/* At most numFunctions of the module's functions, in kernels.c's order. */
CUresult cuModuleEnumerateFunctions(CUfunction *functions, unsigned int numFunctions, CUmodule mod)
{
    ENTER();
    if (!functions || numFunctions == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!module_valid(mod))
        return CUDA_ERROR_INVALID_HANDLE;
    for (unsigned i = 0; i < numFunctions && i < fake_kernel_count(); i++)
        functions[i] = fake_kernel_at(i);
    return CUDA_SUCCESS;
}

/* A module's symbol by name, of a kind the fake's modules have none of:
 * CUDA_ERROR_NOT_FOUND, logged as the driver logs it. */
static CUresult module_symbol(CUmodule hmod, const char *name, const char *call, const char *kind)
{
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!module_valid(hmod))
        return CUDA_ERROR_INVALID_HANDLE;
    fake_log("%s: no %s named \"%.64s\" in the module", call, kind, name);
    return CUDA_ERROR_NOT_FOUND;
}

CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name)
{
    ENTER();
    (void)dptr, (void)bytes;
    return module_symbol(hmod, name, "cuModuleGetGlobal", "global variable");
}

/* The 32-bit form of CUDA 3.x: cuModuleGetGlobal_v2's answer, narrowed (an
 * address or size past 32 bits is CUDA_ERROR_INVALID_VALUE). */
CUresult cuModuleGetGlobal(CUdeviceptr_v1 *dptr, unsigned int *bytes, CUmodule hmod, const char *name)
{
    ENTER();
    (void)dptr, (void)bytes;
    return module_symbol(hmod, name, "cuModuleGetGlobal", "global variable");
}

/* Texture references (deprecated, gone from CUDA 12's runtime): none. */
CUresult cuModuleGetTexRef(CUtexref *pTexRef, CUmodule hmod, const char *name)
{
    ENTER();
    if (!pTexRef)
        return CUDA_ERROR_INVALID_VALUE;
    return module_symbol(hmod, name, "cuModuleGetTexRef", "texture reference");
}
