/*
 * The guest's side of the remote driver (docs/remote.md): a process with no
 * GPU whose CUDA calls an executor on the host makes.  VGPU_REMOTE names
 * the executor's Unix socket; the dispatch table then holds the remote
 * driver's functions (vgpu_remote_cuda_table, generated) instead of a real
 * driver's.  One connection per process, made at the first call, one call
 * at a time on it; a child of fork makes its own.
 */
#pragma once

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Whether this process drives a remote GPU (VGPU_REMOTE is set). */
bool vgpu_remote_wanted(void);
/* The executor's socket, for messages. */
const char *vgpu_remote_where(void);

/* A call whose arguments are words and whose results are words (the
 * generated stubs): nin words out, nout words back. */
CUresult vgpu_remote_call_words(unsigned slot, const uint64_t *in, unsigned nin, uint64_t *out, unsigned nout);

/* Any call: the request's iovecs, and the reply read into the reply's
 * iovecs in order (a reply longer than they are is a broken executor:
 * CUDA_ERROR_UNKNOWN).  *got: the reply's length, if got. */
CUresult vgpu_remote_call(unsigned slot, const struct iovec *req, int nreq, const struct iovec *reply, int nreply,
                          size_t *got);

/* An asynchronous call (a launch, an event record, an asynchronous
 * memset): sent, not waited for; CUDA_SUCCESS once sent.  Its error, if
 * any, is returned by the next synchronizing call (docs/remote.md). */
CUresult vgpu_remote_send(unsigned slot, const struct iovec *req, int nreq);
CUresult vgpu_remote_send_words(unsigned slot, const uint64_t *in, unsigned nin);

/* What a slot the remote driver does not carry returns: refused, logged
 * once per slot. */
CUresult vgpu_remote_refuse(unsigned slot);

/* The generated table: the remote driver's function of each slot (NULL:
 * refused). */
extern void *const vgpu_remote_cuda_table[];
