/* The remote CUDA driver's calls written by hand, the executor's side (this
 * folder's files).  Which calls they are, and each one's request and reply,
 * are declared in forwarder/remote/spec/cuda.remote; the generated
 * vgpu_remote_cuda_exec.h declares their handlers. */
#pragma once

#include "forwarder/remote/executor/executor.h"

#include "vgpu_remote_cuda_exec.h"

#include <cuda.h>

/* How many bytes get(&a, &b) copies into each of the two chunks it takes
 * with malloc (release(a, b) frees them), learnt by calling it on chunks
 * filled two ways: CUDA_SUCCESS and *length (0 where this allocator does
 * not tell), or get's error (private/export_tables.c). */
CUresult vgpu_exec_copied_length(void *get, void *release, size_t *length);
