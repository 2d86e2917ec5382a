/*
 * The JIT linker (cuLink*), the guest's side (the executor's:
 * forwarder/remote/executor/cuda/modules/link.c; the message: cuLinkComplete's, in
 * forwarder/remote/spec/cuda.remote).  A link is the guest's until it
 * completes: cuLinkCreate keeps its options, cuLinkAddData and
 * cuLinkAddFile (the file read here, whose path it is) its inputs, and
 * cuLinkComplete sends them in one message, which the executor links at
 * once (create, an add a input, complete, destroy); the image comes back,
 * and is the link's until cuLinkDestroy, as the driver's is.  The JIT
 * options cross as a load's do (jit.c).
 *
 * What a guest sees differently: an input the linker refuses is refused
 * by cuLinkComplete, not when it was added (its error log says which); an
 * input's own options (compiler options overriding the link's) are
 * refused.
 */
#include "forwarder/dispatch.h"
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/manual.h"
#include "forwarder/remote/transport/image.h"
#include "forwarder/remote/transport/wire.h"

#include "vgpu_cuda_slots.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SLOT(name) VGPU_CUDA_SLOT_##name

/* What the inputs of one link may come to: a message, less its other fields. */
#define INPUTS_MAX (VGPU_REMOTE_MAX_LEN - (1u << 20))

struct link {
    struct link *next;
    unsigned n; /* cuLinkCreate's options, and the caller's array of their values */
    CUjit_option options[VGPU_REMOTE_JIT_OPTIONS];
    void **values;
    unsigned inputs, room; /* each input's type, name's and data's sizes */
    uint32_t *types, *name_sizes;
    uint64_t *data_sizes;
    char *bytes; /* each input's name (NUL-ended), then its data */
    size_t used, capacity;
    void *image; /* the last cuLinkComplete's */
};

/* The links this process made, under lock; owned by this file.  A link is
 * used by one thread at a time, as the driver's is: the lock guards the
 * list, by which a CUlinkState is checked before it is used. */
static struct link *links;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* A child of fork keeps its parent's links (they are the guest's memory),
 * and a lock no other thread holds. */
static void after_fork(void)
{
    pthread_mutex_init(&lock, NULL);
}

static void register_after_fork(void)
{
    pthread_atfork(NULL, NULL, after_fork);
}

static void lock_links(void)
{
    pthread_once(&once, register_after_fork);
    pthread_mutex_lock(&lock);
}

static struct link *find(CUlinkState state)
{
    lock_links();
    struct link *l = links;
    while (l && (CUlinkState)l != state)
        l = l->next;
    pthread_mutex_unlock(&lock);
    return l;
}

static void link_free(struct link *l)
{
    free(l->types);
    free(l->name_sizes);
    free(l->data_sizes);
    free(l->bytes);
    free(l->image);
    free(l);
}

CUresult vgpu_remote_guest_cuLinkCreate_v2(unsigned int numOptions, CUjit_option *options, void **optionValues,
                                           CUlinkState *stateOut)
{
    if (!stateOut || (numOptions && (!options || !optionValues)))
        return CUDA_ERROR_INVALID_VALUE;
    struct vgpu_remote_jit jit;
    CUresult r = vgpu_remote_jit_options(SLOT(cuLinkCreate_v2), numOptions, options, optionValues, &jit);
    if (r != CUDA_SUCCESS)
        return r;
    struct link *l = calloc(1, sizeof(*l));
    if (!l)
        return CUDA_ERROR_OUT_OF_MEMORY;
    l->n = numOptions;
    if (numOptions)
        memcpy(l->options, options, numOptions * sizeof(*options));
    l->values = optionValues;
    lock_links();
    l->next = links;
    links = l;
    pthread_mutex_unlock(&lock);
    *stateOut = (CUlinkState)l;
    return CUDA_SUCCESS;
}

CUresult vgpu_remote_guest_cuLinkCreate(unsigned int numOptions, CUjit_option *options, void **optionValues,
                                        CUlinkState *stateOut)
{
    return vgpu_remote_guest_cuLinkCreate_v2(numOptions, options, optionValues, stateOut);
}

/* Room for one more input and n more bytes, or false. */
static bool grow(struct link *l, size_t n)
{
    if (l->inputs == l->room) {
        unsigned room = l->room ? 2 * l->room : 8;
        uint32_t *types = realloc(l->types, room * sizeof(*types));
        if (types)
            l->types = types;
        uint32_t *names = realloc(l->name_sizes, room * sizeof(*names));
        if (names)
            l->name_sizes = names;
        uint64_t *sizes = realloc(l->data_sizes, room * sizeof(*sizes));
        if (sizes)
            l->data_sizes = sizes;
        if (!types || !names || !sizes)
            return false;
        l->room = room;
    }
    if (l->used + n > l->capacity) {
        size_t capacity = l->capacity ? l->capacity : 64 << 10;
        while (capacity < l->used + n)
            capacity *= 2;
        char *bytes = realloc(l->bytes, capacity);
        if (!bytes)
            return false;
        l->bytes = bytes;
        l->capacity = capacity;
    }
    return true;
}

/* An input kept for cuLinkComplete (slot: the call that adds it). */
static CUresult add(unsigned slot, CUlinkState state, CUjitInputType type, const void *data, size_t size,
                    const char *name, unsigned numOptions)
{
    struct link *l = find(state);
    if (!l)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!data || !size || (unsigned)type >= CU_JIT_NUM_INPUT_TYPES)
        return CUDA_ERROR_INVALID_VALUE;
    if (numOptions)
        return vgpu_remote_refuse_why(slot, "an input's own JIT options are not carried");
    if (vgpu_remote_image_is_wrapper(data, size)) { /* the fatbin it points to goes, not its pointers */
        if (!(data = vgpu_remote_image_unwrap(data)))
            return vgpu_remote_refuse_why(slot, "its image is not one the host's driver can be sent");
        if (!(size = vgpu_remote_image_extent(data, INPUTS_MAX)))
            return CUDA_ERROR_INVALID_IMAGE;
    }
    size_t name_size = name ? strnlen(name, 4096) + 1 : 0;
    if (name_size > 4096)
        return CUDA_ERROR_INVALID_VALUE;
    if (l->inputs >= VGPU_IN_cuLinkComplete_numInputs_MAX || size > INPUTS_MAX - l->used ||
        name_size > INPUTS_MAX - l->used - size)
        return vgpu_remote_refuse_why(slot, "the link's inputs are more than a message carries");
    if (!grow(l, name_size + size))
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (name_size)
        memcpy(l->bytes + l->used, name, name_size);
    memcpy(l->bytes + l->used + name_size, data, size);
    l->used += name_size + size;
    l->types[l->inputs] = (uint32_t)type;
    l->name_sizes[l->inputs] = (uint32_t)name_size;
    l->data_sizes[l->inputs] = size;
    l->inputs++;
    return CUDA_SUCCESS;
}

CUresult vgpu_remote_guest_cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void *data, size_t size,
                                            const char *name, unsigned int numOptions, CUjit_option *options,
                                            void **optionValues)
{
    (void)options, (void)optionValues;
    return add(SLOT(cuLinkAddData_v2), state, type, data, size, name, numOptions);
}

CUresult vgpu_remote_guest_cuLinkAddData(CUlinkState state, CUjitInputType type, void *data, size_t size,
                                         const char *name, unsigned int numOptions, CUjit_option *options,
                                         void **optionValues)
{
    (void)options, (void)optionValues;
    return add(SLOT(cuLinkAddData), state, type, data, size, name, numOptions);
}

/* A file's bytes as an input named by its path (PTX with its NUL). */
static CUresult add_file(unsigned slot, CUlinkState state, CUjitInputType type, const char *path, unsigned numOptions)
{
    if (!find(state))
        return CUDA_ERROR_INVALID_HANDLE;
    char *bytes = NULL;
    size_t n = 0;
    CUresult r = vgpu_remote_read_file(slot, path, INPUTS_MAX, &bytes, &n);
    if (r != CUDA_SUCCESS)
        return r;
    if (type == CU_JIT_INPUT_PTX)
        n++;
    r = add(slot, state, type, bytes, n, path, numOptions);
    free(bytes);
    return r;
}

CUresult vgpu_remote_guest_cuLinkAddFile_v2(CUlinkState state, CUjitInputType type, const char *path,
                                            unsigned int numOptions, CUjit_option *options, void **optionValues)
{
    (void)options, (void)optionValues;
    return add_file(SLOT(cuLinkAddFile_v2), state, type, path, numOptions);
}

CUresult vgpu_remote_guest_cuLinkAddFile(CUlinkState state, CUjitInputType type, const char *path,
                                         unsigned int numOptions, CUjit_option *options, void **optionValues)
{
    (void)options, (void)optionValues;
    return add_file(SLOT(cuLinkAddFile), state, type, path, numOptions);
}

/* The link's options and inputs in one message; back, the options' values
 * as the linker left them, the logs, then the image.  The reply's tail is
 * taken into room for the largest image a message carries, which costs
 * only the pages the reply fills. */
CUresult vgpu_remote_guest_cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut)
{
    _Static_assert(VGPU_IN_cuLinkComplete_numOptions_MAX == VGPU_REMOTE_JIT_OPTIONS, "its JIT options' bound");
    struct link *l = find(state);
    if (!l)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!cubinOut)
        return CUDA_ERROR_INVALID_VALUE;
    struct vgpu_remote_jit jit;
    CUresult r = vgpu_remote_jit_options(SLOT(cuLinkComplete), l->n, l->options, l->values, &jit);
    if (r != CUDA_SUCCESS)
        return r;
    size_t logs = jit.info + jit.error, room = logs + VGPU_REMOTE_MAX_LEN;
    char *tail = malloc(room);
    if (!tail)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t left[VGPU_REMOTE_JIT_OPTIONS];
    struct vgpu_in_cuLinkComplete in = {
        .numOptions = l->n,
        .options = (const uint32_t *)l->options,
        .values = jit.words,
        .numInputs = l->inputs,
        .types = l->types,
        .nameSizes = l->name_sizes,
        .dataSizes = l->data_sizes,
        .inputs = l->bytes,
        .inputs_size = l->used,
    };
    struct vgpu_out_cuLinkComplete out = { .values = left, .tail = tail, .tail_size = room };
    r = (CUresult)vgpu_remote_call_cuLinkComplete(SLOT(cuLinkComplete), 0, &in, &out);
    /* The logs and the options' values come back whether it linked or not. */
    if (out.results && out.results_size >= logs) {
        vgpu_remote_jit_results(l->n, l->options, l->values, &jit, left, tail);
    } else if (r == CUDA_SUCCESS) {
        r = CUDA_ERROR_UNKNOWN;
    }
    size_t size = out.results && out.results_size > logs ? out.results_size - logs : 0;
    void *image = NULL;
    if (r == CUDA_SUCCESS && (!size || !(image = malloc(size))))
        r = size ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_UNKNOWN;
    if (r == CUDA_SUCCESS) {
        memcpy(image, tail + logs, size);
        free(l->image);
        l->image = image;
        *cubinOut = image;
        if (sizeOut)
            *sizeOut = size;
    }
    free(tail);
    return r;
}

CUresult vgpu_remote_guest_cuLinkDestroy(CUlinkState state)
{
    lock_links();
    struct link **at = &links;
    while (*at && (CUlinkState)*at != state)
        at = &(*at)->next;
    struct link *l = *at;
    if (l)
        *at = l->next;
    pthread_mutex_unlock(&lock);
    if (!l)
        return CUDA_ERROR_INVALID_HANDLE;
    link_free(l);
    return CUDA_SUCCESS;
}
