/*
 * The JIT linker (cuLink*): inputs are images as modules take them
 * (modules.c); the linked image names them ("fakegpu linked 2: a, b"), so
 * that what a link was given is seen in what it gives.  The logs and the
 * wall time are written as the driver writes them: into the buffers and
 * the values of cuLinkCreate's options, which the state keeps.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINK_MAGIC 0x4b4e494cu /* "LINK" */

struct CUlinkState_st {
    unsigned magic;
    int alive;
    unsigned n;                 /* cuLinkCreate's options, and their values (the caller's array) */
    const CUjit_option *options;
    void **values;
    char names[1024];           /* the inputs' names, ", " between them */
    unsigned inputs;
    char *image;                /* the last cuLinkComplete's, owned by the state */
};

static int link_valid(CUlinkState s)
{
    return s && s->magic == LINK_MAGIC && __atomic_load_n(&s->alive, __ATOMIC_ACQUIRE);
}

/* The value of option o among the state's, or NULL. */
static void *option(CUlinkState s, CUjit_option o)
{
    for (unsigned i = 0; i < s->n; i++)
        if (s->options[i] == o)
            return s->values[i];
    return NULL;
}

static void set_option(CUlinkState s, CUjit_option o, void *v)
{
    for (unsigned i = 0; i < s->n; i++)
        if (s->options[i] == o)
            s->values[i] = v;
}

/* A log (info or error) written into its buffer, its size option set to
 * what was written with its NUL. */
static void write_log(CUlinkState s, CUjit_option buffer, CUjit_option size_option, const char *fmt, ...)
{
    char *buf = option(s, buffer);
    size_t size = (size_t)(uintptr_t)option(s, size_option);
    if (!buf || !size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    if (n >= 0)
        set_option(s, size_option, (void *)(uintptr_t)((size_t)n < size ? (size_t)n + 1 : size));
}

static CUresult link_create(unsigned int numOptions, CUjit_option *options, void **optionValues,
                            CUlinkState *stateOut)
{
    if (!stateOut || (numOptions && (!options || !optionValues)))
        return CUDA_ERROR_INVALID_VALUE;
    if (fake_current_device() < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    struct CUlinkState_st *s = calloc(1, sizeof *s);
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->magic = LINK_MAGIC;
    s->alive = 1;
    s->n = numOptions;
    s->options = options;
    s->values = optionValues;
    *stateOut = s;
    return CUDA_SUCCESS;
}

TWO_NAMES(cuLinkCreate_v2, cuLinkCreate, link_create,
          (unsigned int numOptions, CUjit_option *options, void **optionValues, CUlinkState *stateOut), numOptions,
          options, optionValues, stateOut)

/* An input's own options (compiler options for PTX) change nothing here. */
static CUresult link_add_data(CUlinkState state, CUjitInputType type, void *data, size_t size, const char *name,
                              unsigned int numOptions, CUjit_option *options, void **optionValues)
{
    (void)options;
    (void)optionValues;
    (void)numOptions;
    if (!link_valid(state))
        return CUDA_ERROR_INVALID_HANDLE;
    if (!data || !size || (unsigned)type >= CU_JIT_NUM_INPUT_TYPES)
        return CUDA_ERROR_INVALID_VALUE;
    name = name ? name : "(unnamed)";
    if (size < 7 || !fake_image_ok(data)) { /* a fatbin wrapper followed, as a driver does */
        write_log(state, CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                  "fakegpu link: %s is nothing it can link", name);
        return type == CU_JIT_INPUT_PTX ? CUDA_ERROR_INVALID_PTX : CUDA_ERROR_INVALID_IMAGE;
    }
    size_t used = strlen(state->names);
    snprintf(state->names + used, sizeof(state->names) - used, "%s%s", state->inputs ? ", " : "", name);
    state->inputs++;
    return CUDA_SUCCESS;
}

TWO_NAMES(cuLinkAddData_v2, cuLinkAddData, link_add_data,
          (CUlinkState state, CUjitInputType type, void *data, size_t size, const char *name, unsigned int numOptions,
           CUjit_option *options, void **optionValues),
          state, type, data, size, name, numOptions, options, optionValues)

static CUresult link_add_file(CUlinkState state, CUjitInputType type, const char *path, unsigned int numOptions,
                              CUjit_option *options, void **optionValues)
{
    if (!link_valid(state))
        return CUDA_ERROR_INVALID_HANDLE;
    if (!path)
        return CUDA_ERROR_INVALID_VALUE;
    char *bytes = NULL;
    CUresult r = fake_read_image(path, &bytes);
    if (r == CUDA_SUCCESS)
        r = link_add_data(state, type, bytes, strlen(bytes) + 1, path, numOptions, options, optionValues);
    free(bytes);
    return r;
}

TWO_NAMES(cuLinkAddFile_v2, cuLinkAddFile, link_add_file,
          (CUlinkState state, CUjitInputType type, const char *path, unsigned int numOptions, CUjit_option *options,
           void **optionValues),
          state, type, path, numOptions, options, optionValues)

CUresult cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut)
{
    ENTER();
    if (!link_valid(state))
        return CUDA_ERROR_INVALID_HANDLE;
    if (!cubinOut)
        return CUDA_ERROR_INVALID_VALUE;
    if (!state->inputs) {
        write_log(state, CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, "fakegpu link: no inputs");
        return CUDA_ERROR_INVALID_VALUE;
    }
    char *image = NULL;
    if (asprintf(&image, "fakegpu linked %u: %s", state->inputs, state->names) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    free(state->image);
    state->image = image;
    write_log(state, CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, "fakegpu link: %u inputs linked",
              state->inputs);
    float ms = 2.5f;
    for (unsigned i = 0; i < state->n; i++)
        if (state->options[i] == CU_JIT_WALL_TIME)
            memcpy(&state->values[i], &ms, sizeof(ms));
    *cubinOut = image;
    if (sizeOut)
        *sizeOut = strlen(image) + 1;
    return CUDA_SUCCESS;
}

CUresult cuLinkDestroy(CUlinkState state)
{
    ENTER();
    if (!link_valid(state) || !__atomic_exchange_n(&state->alive, 0, __ATOMIC_ACQ_REL))
        return CUDA_ERROR_INVALID_HANDLE;
    free(state->image); /* the state itself is kept: stale handles are detected */
    state->image = NULL;
    return CUDA_SUCCESS;
}
