/* The remote CUDA driver's calls written by hand, the executor's side (this
 * folder's files).  Which calls they are, and each one's request and reply,
 * are declared in forwarder/remote/spec/cuda.remote; the generated
 * vgpu_remote_cuda_exec.h declares their handlers. */
#pragma once

#include "forwarder/remote/executor/executor.h"
#include "forwarder/remote/spec/bounds.h"

#include "vgpu_remote_cuda_exec.h"

#include <cuda.h>

/* How many bytes get(&a, &b) copies into each of the two chunks it takes
 * with malloc (release(a, b) frees them), learnt by calling it on chunks
 * filled two ways: CUDA_SUCCESS and *length (0 where this allocator does
 * not tell), or get's error (private/export_tables.c). */
CUresult vgpu_exec_copied_length(void *get, void *release, size_t *length);

/* A load's or a link's JIT options as the driver takes them (modules/jit.c): the
 * log buffers the executor's own, logs (the info log, then the error
 * log) at the sizes their options give. */
struct vgpu_exec_jit {
    unsigned n;
    CUjit_option options[VGPU_REMOTE_JIT_OPTIONS];
    void *values[VGPU_REMOTE_JIT_OPTIONS];
    size_t info, error;
    char *logs;
};
/* The n options as they crossed: 0, or the code to reply (an option that
 * passes pointers: not supported).  vgpu_exec_jit_free frees what it took. */
int vgpu_exec_jit_options(struct vgpu_exec_jit *j, unsigned n, const CUjit_option *options, const uint64_t *values);
/* After the call: each option's value as the JIT left it (a log buffer's
 * 0), the logs ended within their sizes. */
void vgpu_exec_jit_left(struct vgpu_exec_jit *j, uint64_t *left);
void vgpu_exec_jit_free(struct vgpu_exec_jit *j);

/* A launch's parameters (launch.c): f's, count of them of the given sizes,
 * packed in len bytes (each padded to 8), as pointers to each in
 * out[VGPU_EXEC_MAX_PARAMS]: 0; VGPU_EXEC_CLOSE (malformed), or the code
 * to reply (not f's sizes).  A graph's kernel node's are taken so too. */
int vgpu_exec_params_of(struct vgpu_exec *x, CUfunction f, uint32_t count, const uint32_t *sizes, const void *bytes,
                        size_t len, const char *call, void **out);
/* Whether a launch attribute (or a kernel node's) may be passed on: its
 * value plain data, or an event the guest was given (launch.c). */
bool vgpu_exec_attribute_ok(const struct vgpu_exec *x, const CUlaunchAttribute *a);
