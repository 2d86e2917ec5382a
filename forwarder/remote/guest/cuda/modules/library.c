/*
 * Modules and libraries, the guest's side (forwarder/remote/executor/cuda/
 * library.c is the other; the messages: forwarder/remote/spec/cuda.remote).
 * Images travel whole, their extent read from their own headers, or by
 * their SHA-256 where the executor has a cache of them; a module or a
 * library loaded from a file is the file's bytes, read in the guest (the
 * path is the guest's), sent as an image in memory is.  Options that only
 * tune a library's loading are dropped; those that would give the host
 * guest pointers (a table of host functions) are refused; a module's JIT
 * options cross, its log buffers emulated.  A module's functions and
 * globals by name are generated whole from the spec.
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/manual.h"
#include "forwarder/remote/spec/bounds.h"
#include "forwarder/remote/transport/image.h"
#include "forwarder/remote/transport/sha256.h"
#include "forwarder/remote/transport/wire.h"

#include "vgpu_cuda_slots.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SLOT(name) VGPU_CUDA_SLOT_##name

/* A load's image sent by the call send (its message's own, with *image set
 * by it), named by its SHA-256 where the executor keeps a cache of images
 * and the image is large enough to be worth it, whole where the executor
 * has not got it (docs/design/remote.md, "Images cross once"). */
typedef CUresult (*image_call)(unsigned slot, uint32_t flags, const void *image, size_t n, void *ctx);

static CUresult send_image(unsigned slot, const void *image, size_t n, image_call send, void *ctx)
{
    CUresult r = (CUresult)VGPU_REMOTE_MISS;
    if (n >= VGPU_REMOTE_IMAGE_CACHE_MIN && vgpu_remote_image_cache()) {
        uint8_t hash[VGPU_SHA256_BYTES];
        vgpu_sha256(image, n, hash);
        r = send(slot, VGPU_REMOTE_BY_HASH, hash, sizeof(hash), ctx);
    }
    return r == (CUresult)VGPU_REMOTE_MISS ? send(slot, 0, image, n, ctx) : r;
}

/* The image a load names, and its extent from its own headers: 0 and
 * *image, or the code to return. */
static CUresult image_of(unsigned slot, const void *code, size_t room, const void **image, size_t *n)
{
    if (!code)
        return CUDA_ERROR_INVALID_VALUE;
    *image = vgpu_remote_image_unwrap(code);
    if (!*image)
        return vgpu_remote_refuse_why(slot, "its image is not one the host's driver can be sent");
    *n = vgpu_remote_image_extent(*image, room);
    return *n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_IMAGE;
}

static CUresult load_call(unsigned slot, uint32_t flags, const void *image, size_t n, void *ctx)
{
    struct vgpu_in_cuModuleLoadData in = { .image = image, .image_size = n };
    return (CUresult)vgpu_remote_call_cuModuleLoadData(slot, flags, &in, ctx);
}

CUresult vgpu_remote_read_file(unsigned slot, const char *path, size_t max, char **bytes, size_t *n)
{
    if (!path)
        return CUDA_ERROR_INVALID_VALUE;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return CUDA_ERROR_FILE_NOT_FOUND;
    struct stat st;
    CUresult r = CUDA_SUCCESS;
    char *b = NULL;
    size_t size = 0, got = 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        r = CUDA_ERROR_FILE_NOT_FOUND;
    else if ((uint64_t)st.st_size > max)
        r = vgpu_remote_refuse_why(slot, "its file is larger than a message carries");
    else if (!(b = malloc((size = (size_t)st.st_size) + 1)))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    while (r == CUDA_SUCCESS && got < size) {
        ssize_t k = read(fd, b + got, size - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            r = CUDA_ERROR_FILE_NOT_FOUND; /* cut while it was read */
        else
            got += (size_t)k;
    }
    close(fd);
    if (r != CUDA_SUCCESS) {
        free(b);
        return r;
    }
    b[size] = 0;
    *bytes = b;
    *n = size;
    return CUDA_SUCCESS;
}

/* The bytes of the image file at path and the extent its headers give (an
 * image the driver could not read whole is not one): 0, *bytes (the
 * caller frees them) and *n, or the code to return. */
static CUresult read_image_file(unsigned slot, const char *path, char **bytes, size_t *n)
{
    size_t size = 0;
    CUresult r = vgpu_remote_read_file(slot, path, VGPU_REMOTE_MAX_LEN - 64, bytes, &size);
    if (r != CUDA_SUCCESS)
        return r;
    *n = vgpu_remote_image_extent(*bytes, size + 1); /* PTX is read to its NUL */
    if (*n)
        return CUDA_SUCCESS;
    free(*bytes);
    return CUDA_ERROR_INVALID_IMAGE;
}

/* A load of n bytes of an image: the handle it gives. */
static CUresult load_bytes(unsigned slot, const void *image, size_t n, CUmodule *handle)
{
    struct vgpu_out_cuModuleLoadData out = { 0 };
    CUresult r = send_image(slot, image, n, load_call, &out);
    if (r == CUDA_SUCCESS)
        *handle = out.module;
    return r;
}

/* A load of an image in memory: the handle it gives. */
static CUresult load(unsigned slot, const void *code, CUmodule *handle)
{
    const void *image;
    size_t n = 0;
    CUresult r = image_of(slot, code, VGPU_REMOTE_MAX_LEN - 64, &image, &n);
    return r == CUDA_SUCCESS ? load_bytes(slot, image, n, handle) : r;
}

CUresult vgpu_remote_guest_cuModuleLoadData(CUmodule *module, const void *image)
{
    if (!module)
        return CUDA_ERROR_INVALID_VALUE;
    return load(SLOT(cuModuleLoadData), image, module);
}

/* A fat binary is an image as cuModuleLoadData takes one. */
CUresult vgpu_remote_guest_cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
    if (!module)
        return CUDA_ERROR_INVALID_VALUE;
    return load(SLOT(cuModuleLoadData), fatCubin, module);
}

/* Triton's launcher's way (a cubin it wrote to its cache). */
CUresult vgpu_remote_guest_cuModuleLoad(CUmodule *module, const char *fname)
{
    if (!module)
        return CUDA_ERROR_INVALID_VALUE;
    char *image = NULL;
    size_t n = 0;
    CUresult r = read_image_file(SLOT(cuModuleLoad), fname, &image, &n);
    if (r == CUDA_SUCCESS)
        r = load_bytes(SLOT(cuModuleLoadData), image, n, module);
    free(image);
    return r;
}

/* cuModuleLoadDataEx: the JIT's options cross with the image (jit.c).
 * Back: the module, each option's value as the JIT left it, then the info
 * log and the error log. */

/* The request, with its image set by send_image, and the reply. */
struct load_ex {
    struct vgpu_in_cuModuleLoadDataEx in;
    struct vgpu_out_cuModuleLoadDataEx out;
};

static CUresult load_ex_call(unsigned slot, uint32_t flags, const void *image, size_t n, void *ctx)
{
    struct load_ex *c = ctx;
    c->in.image = image;
    c->in.image_size = n;
    return (CUresult)vgpu_remote_call_cuModuleLoadDataEx(slot, flags, &c->in, &c->out);
}

CUresult vgpu_remote_guest_cuModuleLoadDataEx(CUmodule *module, const void *code, unsigned int n, CUjit_option *options,
                                              void **values)
{
    _Static_assert(VGPU_IN_cuModuleLoadDataEx_numOptions_MAX == VGPU_REMOTE_JIT_OPTIONS, "its JIT options' bound");
    if (!module || !code || (n && (!options || !values)))
        return CUDA_ERROR_INVALID_VALUE;
    struct vgpu_remote_jit jit;
    CUresult r = vgpu_remote_jit_options(SLOT(cuModuleLoadDataEx), n, options, values, &jit);
    if (r != CUDA_SUCCESS)
        return r;
    const void *image;
    size_t extent = 0;
    r = image_of(SLOT(cuModuleLoadDataEx), code, VGPU_REMOTE_MAX_LEN - 64 - 12 * (size_t)n, &image, &extent);
    if (r != CUDA_SUCCESS)
        return r;
    char *logs = calloc(1, jit.info + jit.error + 1);
    if (!logs)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t left[VGPU_REMOTE_JIT_OPTIONS];
    struct load_ex c = {
        .in = { .numOptions = n, .options = options, .values = jit.words },
        .out = { .values = left, .tail = logs, .tail_size = jit.info + jit.error },
    };
    r = send_image(SLOT(cuModuleLoadDataEx), image, extent, load_ex_call, &c);
    /* The JIT's outputs and logs come back whether it succeeded or not: a
     * failed compilation's error log is the point of asking for one. */
    if (c.out.logs && c.out.logs_size == jit.info + jit.error)
        vgpu_remote_jit_results(n, options, values, &jit, left, logs);
    else if (r == CUDA_SUCCESS)
        r = CUDA_ERROR_UNKNOWN;
    free(logs);
    if (r == CUDA_SUCCESS)
        *module = c.out.module;
    return r;
}

/* Whether a library option only tunes the loading (dropped), refusing it
 * otherwise. */
static bool options_droppable(unsigned njit, const CUlibraryOption *opt, unsigned nlib)
{
    if (njit) /* JIT options: log buffers and outputs among them; none carried */
        return false;
    for (unsigned i = 0; i < nlib; i++)
        if (!opt || opt[i] != CU_LIBRARY_BINARY_IS_PRESERVED) /* the executor keeps no image anyway */
            return false;
    return true;
}

CUresult vgpu_remote_guest_cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                             void **jitOptionsValues, unsigned int numJitOptions,
                                             CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                             unsigned int numLibraryOptions)
{
    (void)jitOptions, (void)jitOptionsValues, (void)libraryOptionValues;
    if (!library)
        return CUDA_ERROR_INVALID_VALUE;
    if (!options_droppable(numJitOptions, libraryOptions, numLibraryOptions))
        return vgpu_remote_refuse_why(SLOT(cuLibraryLoadData), "JIT and library options are not carried");
    CUmodule h = NULL;
    CUresult r = load(SLOT(cuLibraryLoadData), code, &h);
    if (r == CUDA_SUCCESS)
        *library = (CUlibrary)h;
    return r;
}

CUresult vgpu_remote_guest_cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
                                                 void **jitOptionsValues, unsigned int numJitOptions,
                                                 CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                                 unsigned int numLibraryOptions)
{
    (void)jitOptions, (void)jitOptionsValues, (void)libraryOptionValues;
    if (!library)
        return CUDA_ERROR_INVALID_VALUE;
    if (!options_droppable(numJitOptions, libraryOptions, numLibraryOptions))
        return vgpu_remote_refuse_why(SLOT(cuLibraryLoadFromFile), "JIT and library options are not carried");
    char *image = NULL;
    size_t n = 0;
    CUmodule h = NULL;
    CUresult r = read_image_file(SLOT(cuLibraryLoadFromFile), fileName, &image, &n);
    if (r == CUDA_SUCCESS)
        r = load_bytes(SLOT(cuLibraryLoadData), image, n, &h);
    free(image);
    if (r == CUDA_SUCCESS)
        *library = (CUlibrary)h;
    return r;
}

/* The kernels of libraries this process was given, which launches take as
 * functions but whose parameters cuKernelGetParamInfo says, each with its
 * library: they go when it is unloaded (their addresses may come back as
 * functions').  Owned by this file, under kernels_lock. */
struct kernel {
    struct kernel *next;
    CUkernel k;
    CUlibrary library;
};
static struct kernel *kernels;
static pthread_mutex_t kernels_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t kernels_once = PTHREAD_ONCE_INIT;

static void kernels_after_fork(void)
{
    pthread_mutex_init(&kernels_lock, NULL);
    kernels = NULL; /* the parent's executor's: the child's has other handles (left, not freed) */
}

static void kernels_register_atfork(void)
{
    pthread_atfork(NULL, NULL, kernels_after_fork);
}

bool vgpu_remote_is_kernel(const void *f)
{
    pthread_once(&kernels_once, kernels_register_atfork);
    pthread_mutex_lock(&kernels_lock);
    const struct kernel *k = kernels;
    while (k && (const void *)k->k != f)
        k = k->next;
    pthread_mutex_unlock(&kernels_lock);
    return k != NULL;
}

/* Kernel k of library, known as a kernel from now on. */
static CUresult remember_kernel(CUkernel k, CUlibrary library)
{
    if (vgpu_remote_is_kernel(k))
        return CUDA_SUCCESS;
    struct kernel *e = malloc(sizeof(*e));
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->k = k;
    e->library = library;
    pthread_mutex_lock(&kernels_lock);
    e->next = kernels;
    kernels = e;
    pthread_mutex_unlock(&kernels_lock);
    return CUDA_SUCCESS;
}

CUresult vgpu_remote_guest_cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    if (!pKernel)
        return CUDA_ERROR_INVALID_VALUE;
    struct vgpu_in_cuLibraryGetKernel in = { .library = library, .name = name };
    struct vgpu_out_cuLibraryGetKernel out = { 0 };
    CUresult r = (CUresult)vgpu_remote_call_cuLibraryGetKernel(SLOT(cuLibraryGetKernel), 0, &in, &out);
    if (r == CUDA_SUCCESS)
        r = remember_kernel(out.pKernel, library);
    if (r == CUDA_SUCCESS)
        *pKernel = out.pKernel;
    return r;
}

/* Every kernel of the library, each known as a kernel from now on. */
CUresult vgpu_remote_guest_cuLibraryEnumerateKernels(CUkernel *kernels_out, unsigned int numKernels, CUlibrary lib)
{
    if (!kernels_out || !numKernels)
        return CUDA_ERROR_INVALID_VALUE;
    struct vgpu_in_cuLibraryEnumerateKernels in = { .numKernels = numKernels, .lib = lib };
    struct vgpu_out_cuLibraryEnumerateKernels out = { .kernels = kernels_out };
    CUresult r =
        (CUresult)vgpu_remote_call_cuLibraryEnumerateKernels(SLOT(cuLibraryEnumerateKernels), 0, &in, &out);
    for (unsigned i = 0; r == CUDA_SUCCESS && i < numKernels; i++)
        if (kernels_out[i])
            r = remember_kernel(kernels_out[i], lib);
    return r;
}

/* A library's unloading ends its kernels. */
CUresult vgpu_remote_guest_cuLibraryUnload(CUlibrary library)
{
    CUresult r = vgpu_remote_carried_cuLibraryUnload(library);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_once(&kernels_once, kernels_register_atfork);
    pthread_mutex_lock(&kernels_lock);
    for (struct kernel **at = &kernels; *at;) {
        struct kernel *e = *at;
        if (e->library == library) {
            *at = e->next;
            free(e);
        } else {
            at = &e->next;
        }
    }
    pthread_mutex_unlock(&kernels_lock);
    return r;
}
