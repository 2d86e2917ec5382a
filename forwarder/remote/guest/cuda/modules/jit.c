/*
 * JIT options as they cross, the guest's side (cuModuleLoadDataEx's and a
 * link's; the executor's: forwarder/remote/executor/cuda/modules/jit.c).  Plain
 * values cross as they are, the two log buffers as 0: the executor's own
 * buffers receive the logs, which come back at the sizes their options
 * give (at most VGPU_REMOTE_JIT_LOG each), with each option's value as the
 * JIT left it (the threads it targeted, the wall time, the logs' lengths).
 * Options that pass arrays of the guest's pointers (symbols, kernels'
 * names) are refused.
 */
#include "forwarder/remote/guest/client.h"
#include "forwarder/remote/guest/cuda/manual.h"
#include "forwarder/remote/spec/bounds.h"

#include <string.h>

static bool carried(CUjit_option o)
{
    return (unsigned)o < CU_JIT_NUM_OPTIONS && o != CU_JIT_GLOBAL_SYMBOL_NAMES && o != CU_JIT_GLOBAL_SYMBOL_ADDRESSES &&
           o != CU_JIT_REFERENCED_KERNEL_NAMES && o != CU_JIT_REFERENCED_VARIABLE_NAMES;
}

/* The size log buffer option o's size option names, cut to what crosses. */
static size_t log_size(unsigned n, const CUjit_option *options, void *const *values, CUjit_option o)
{
    CUjit_option size_option =
        o == CU_JIT_INFO_LOG_BUFFER ? CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES : CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES;
    for (unsigned i = 0; i < n; i++)
        if (options[i] == size_option) {
            size_t v = (size_t)(uintptr_t)values[i];
            return v < VGPU_REMOTE_JIT_LOG ? v : VGPU_REMOTE_JIT_LOG;
        }
    return 0;
}

CUresult vgpu_remote_jit_options(unsigned slot, unsigned n, const CUjit_option *options, void *const *values,
                                 struct vgpu_remote_jit *j)
{
    if (n > VGPU_REMOTE_JIT_OPTIONS)
        return vgpu_remote_refuse_why(slot, "more JIT options than a message carries");
    for (unsigned i = 0; i < n; i++) {
        if (!carried(options[i]))
            return vgpu_remote_refuse_why(slot, "a JIT option that passes the guest's pointers is not carried");
        j->words[i] = (uint64_t)(uintptr_t)values[i];
        if (options[i] == CU_JIT_INFO_LOG_BUFFER || options[i] == CU_JIT_ERROR_LOG_BUFFER)
            j->words[i] = 0; /* the guest's buffer: never the executor's business */
    }
    j->info = log_size(n, options, values, CU_JIT_INFO_LOG_BUFFER);
    j->error = log_size(n, options, values, CU_JIT_ERROR_LOG_BUFFER);
    return CUDA_SUCCESS;
}

void vgpu_remote_jit_results(unsigned n, const CUjit_option *options, void **values, const struct vgpu_remote_jit *j,
                             const uint64_t *left, const char *logs)
{
    for (unsigned i = 0; i < n; i++) {
        if (options[i] == CU_JIT_INFO_LOG_BUFFER || options[i] == CU_JIT_ERROR_LOG_BUFFER) {
            size_t size = options[i] == CU_JIT_INFO_LOG_BUFFER ? j->info : j->error;
            if (values[i] && size)
                memcpy(values[i], logs + (options[i] == CU_JIT_INFO_LOG_BUFFER ? 0 : j->info), size);
        } else if (options[i] == CU_JIT_THREADS_PER_BLOCK || options[i] == CU_JIT_WALL_TIME ||
                   options[i] == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES || options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) {
            memcpy(&values[i], &left[i], sizeof(values[i]));
        }
    }
}
