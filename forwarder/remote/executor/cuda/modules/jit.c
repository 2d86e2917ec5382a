/*
 * JIT options as the executor gives them to the driver, for a load or a
 * link (what crosses: forwarder/remote/guest/cuda/modules/jit.c).  The log
 * buffers are the executor's own, at the sizes their options give (cut to
 * VGPU_REMOTE_JIT_LOG); what the JIT leaves in each option comes back, the
 * log buffers' words 0.  Options that pass arrays of pointers are refused.
 */
#include "forwarder/remote/executor/cuda/calls.h"

#include <stdlib.h>
#include <string.h>

int vgpu_exec_jit_options(struct vgpu_exec_jit *j, unsigned n, const CUjit_option *options, const uint64_t *values)
{
    memset(j, 0, sizeof(*j));
    for (unsigned i = 0; i < n; i++) {
        CUjit_option o = options[i];
        uint64_t v = values[i];
        if ((unsigned)o >= CU_JIT_NUM_OPTIONS || o == CU_JIT_GLOBAL_SYMBOL_NAMES ||
            o == CU_JIT_GLOBAL_SYMBOL_ADDRESSES || o == CU_JIT_REFERENCED_KERNEL_NAMES ||
            o == CU_JIT_REFERENCED_VARIABLE_NAMES)
            return CUDA_ERROR_NOT_SUPPORTED;
        if (o == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
            j->info = v < VGPU_REMOTE_JIT_LOG ? v : VGPU_REMOTE_JIT_LOG;
        if (o == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            j->error = v < VGPU_REMOTE_JIT_LOG ? v : VGPU_REMOTE_JIT_LOG;
        j->options[i] = o;
        j->values[i] = (void *)(uintptr_t)(o == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES    ? j->info
                                           : o == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES ? j->error
                                                                                     : v);
    }
    j->n = n;
    j->logs = calloc(1, j->info + j->error + 1);
    if (!j->logs)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (unsigned i = 0; i < n; i++)
        if (options[i] == CU_JIT_INFO_LOG_BUFFER || options[i] == CU_JIT_ERROR_LOG_BUFFER)
            j->values[i] = options[i] == CU_JIT_INFO_LOG_BUFFER ? (j->info ? j->logs : NULL)
                                                                : (j->error ? j->logs + j->info : NULL);
    return CUDA_SUCCESS;
}

void vgpu_exec_jit_left(struct vgpu_exec_jit *j, uint64_t *left)
{
    for (unsigned i = 0; i < j->n; i++) {
        bool buffer = j->options[i] == CU_JIT_INFO_LOG_BUFFER || j->options[i] == CU_JIT_ERROR_LOG_BUFFER;
        left[i] = 0;
        if (!buffer)
            memcpy(&left[i], &j->values[i], sizeof(left[i]));
    }
    if (j->info)
        j->logs[j->info - 1] = 0; /* the JIT's text ends within its buffer */
    if (j->error)
        j->logs[j->info + j->error - 1] = 0;
}

void vgpu_exec_jit_free(struct vgpu_exec_jit *j)
{
    free(j->logs);
    j->logs = NULL;
}
