/*
 * The JIT linker, the executor's side (the guest's, which keeps a link
 * until it completes: forwarder/remote/guest/cuda/modules/link.c).  One message
 * is a whole link: its options (jit.c), then each input; the executor
 * creates a link, adds each input, completes it and destroys it, replying
 * with the options' values, the logs and the image.  Each input's extent
 * is checked against what was sent, and PTX, read as a string, is ended.
 */
#include "forwarder/remote/executor/cuda/calls.h"

#include "common/log.h"
#include "forwarder/remote/transport/image.h"
#include "forwarder/remote/transport/wire.h"

#include <stdlib.h>
#include <string.h>

typedef CUresult (*create_fn)(unsigned, CUjit_option *, void **, CUlinkState *);
typedef CUresult (*add_fn)(CUlinkState, CUjitInputType, void *, size_t, const char *, unsigned, CUjit_option *,
                           void **);
typedef CUresult (*complete_fn)(CUlinkState, void **, size_t *);
typedef CUresult (*destroy_fn)(CUlinkState);

/* Whether an input's bytes are what its type says, by their own headers: a
 * cubin or fatbin spans no more than was sent, and no input is a fatbin
 * wrapper, whose words the driver would follow as addresses
 * (transport/image.h). */
static bool input_is_its_type(unsigned type, const void *bytes, size_t n)
{
    if (vgpu_remote_image_is_wrapper(bytes, n))
        return false;
    if (type == CU_JIT_INPUT_CUBIN || type == CU_JIT_INPUT_FATBINARY) {
        size_t spans = vgpu_remote_image_extent(bytes, n);
        return spans && spans <= n;
    }
    return true;
}

/* Whether the inputs' names and data span exactly what was sent, each name
 * NUL-ended. */
static bool inputs_fit(const struct vgpu_in_cuLinkComplete *in)
{
    const char *p = in->inputs;
    uint64_t left = in->inputs_size;
    for (unsigned i = 0; i < in->numInputs; i++) {
        uint64_t name = in->nameSizes[i], data = in->dataSizes[i];
        if (name > 4096 || name > left || (name && p[name - 1]) || data > left - name)
            return false;
        p += name + data;
        left -= name + data;
    }
    return left == 0;
}

/* Each input added to link s: 0, or the driver's code. */
static CUresult add_inputs(add_fn add, CUlinkState s, const struct vgpu_in_cuLinkComplete *in)
{
    const char *p = in->inputs;
    CUresult r = CUDA_SUCCESS;
    for (unsigned i = 0; i < in->numInputs && r == CUDA_SUCCESS; i++) {
        size_t name = in->nameSizes[i], data = in->dataSizes[i];
        char *bytes = (char *)p + name, *ended = NULL;
        if (!input_is_its_type(in->types[i], bytes, data))
            return CUDA_ERROR_INVALID_IMAGE;
        if (in->types[i] == CU_JIT_INPUT_PTX && data && bytes[data - 1]) {
            ended = malloc(data + 1); /* PTX without its NUL: the driver would read on */
            if (!ended)
                return CUDA_ERROR_OUT_OF_MEMORY;
            memcpy(ended, bytes, data);
            ended[data] = 0;
        }
        r = add(s, (CUjitInputType)in->types[i], ended ? ended : bytes, data, name ? p : NULL, 0, NULL, NULL);
        free(ended);
        p += name + data;
    }
    return r;
}

int vgpu_exec_cuLinkComplete(struct vgpu_exec *x, void *fn, const struct vgpu_in_cuLinkComplete *in)
{
    if (!inputs_fit(in))
        return vgpu_exec_malformed("cuLinkComplete", in->inputs_size);
    create_fn create = (create_fn)vgpu_exec_function_named(x, "cuLinkCreate_v2");
    add_fn add = (add_fn)vgpu_exec_function_named(x, "cuLinkAddData_v2");
    destroy_fn destroy = (destroy_fn)vgpu_exec_function_named(x, "cuLinkDestroy");
    if (!create || !add || !destroy)
        return vgpu_exec_reply(x, CUDA_ERROR_NOT_SUPPORTED, NULL, 0);
    struct vgpu_exec_jit j;
    int r = vgpu_exec_jit_options(&j, in->numOptions, (const CUjit_option *)in->options, in->values);
    CUlinkState s = NULL;
    if (r == CUDA_SUCCESS)
        r = create(j.n, j.options, j.values, &s);
    if (r == CUDA_SUCCESS)
        r = add_inputs(add, s, in);
    void *image = NULL;
    size_t size = 0;
    if (r == CUDA_SUCCESS)
        r = ((complete_fn)fn)(s, &image, &size);
    size_t logs = j.info + j.error;
    if (r == CUDA_SUCCESS && size > VGPU_REMOTE_MAX_LEN - 4096 - logs) {
        vgpu_warn("executor: cuLinkComplete: an image of %zu bytes is more than a reply carries", size);
        r = CUDA_ERROR_NOT_SUPPORTED;
    }
    if (r != CUDA_SUCCESS)
        size = 0;
    char *results = j.logs ? malloc(logs + size + 1) : NULL;
    int sent;
    if (!results) {
        sent = vgpu_exec_reply(x, r == CUDA_SUCCESS ? CUDA_ERROR_OUT_OF_MEMORY : r, NULL, 0);
    } else {
        uint64_t left[VGPU_REMOTE_JIT_OPTIONS];
        vgpu_exec_jit_left(&j, left);
        memcpy(results, j.logs, logs);
        if (size)
            memcpy(results + logs, image, size);
        struct vgpu_out_cuLinkComplete out = { .values = left, .results = results, .results_size = logs + size };
        sent = vgpu_exec_reply_cuLinkComplete(x, r, in, &out);
    }
    free(results);
    if (s)
        destroy(s); /* the image with it: it was copied into the reply */
    vgpu_exec_jit_free(&j);
    return sent;
}
