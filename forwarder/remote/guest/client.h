/*
 * The guest's side of the remote driver (docs/design/remote.md): a process with no
 * GPU whose CUDA (and NVML) calls an executor on the host makes.
 * VGPU_REMOTE names the executor's socket, or the mediator; each library's
 * dispatch table then holds its remote driver's functions
 * (vgpu_remote_cuda_table, vgpu_remote_nvml_table, generated) instead of a
 * real driver's.  One connection per library and process, made at its first
 * call, one call at a time on it; a child of fork makes its own.  Its
 * messages cross the shared-memory ring the executor gives (ring.h), or
 * the socket with VGPU_REMOTE_TRANSPORT=socket.  The codes
 * these functions return are the library's (CUresult, nvmlReturn_t).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "forwarder/remote/guest/mode.h"

struct vgpu_dispatch;

/* What the client of one library knows of it (generated with its stubs). */
struct vgpu_remote_library {
    unsigned id;                             /* in HELLO: 0 CUDA, 1 NVML */
    uint64_t hash;                           /* the ABI's: guest and executor must agree */
    unsigned count;                          /* its slots */
    struct vgpu_dispatch *dispatch;          /* its dispatch table (the slots' names) */
    int unavailable, unknown, not_supported; /* its codes: no executor, a senseless reply, not carried */
    int invalid;                             /* and an invalid argument */
};
extern const struct vgpu_remote_library vgpu_remote_library;

/* A call whose arguments are words and whose results are words (the
 * generated stubs): nin words out, nout words back. */
int vgpu_remote_call_words(unsigned slot, const uint64_t *in, unsigned nin, uint64_t *out, unsigned nout);

/* Any call: the request's iovecs, and the reply read into the reply's
 * iovecs in order (a reply longer than they are is a broken executor:
 * CUDA_ERROR_UNKNOWN).  *got: the reply's length, if got. */
int vgpu_remote_call(unsigned slot, const struct iovec *req, int nreq, const struct iovec *reply, int nreply,
                     size_t *got);

/* An asynchronous call (a launch, an event record, an asynchronous
 * memset): sent, not waited for; 0 once sent.  Its error, if
 * any, is returned by the next synchronizing call (docs/reference/remote-protocol.md). */
int vgpu_remote_send(unsigned slot, const struct iovec *req, int nreq);
int vgpu_remote_send_words(unsigned slot, const uint64_t *in, unsigned nin);

/* A file descriptor beside the calling thread's next call flagged
 * VGPU_REMOTE_FD_IN (the guest's, which stays the caller's), and the one
 * its last call flagged VGPU_REMOTE_FD_OUT took (the caller's to close; -1
 * when it took none).  Over a VM's channel, which carries no descriptor,
 * such a call is the library's not_supported. */
void vgpu_remote_fd_to_pass(int fd);
int vgpu_remote_fd_taken(void);

/* The same with a CALL's flags besides (VGPU_REMOTE_SHARED: wire.h). */
int vgpu_remote_call_flagged(unsigned slot, uint32_t flags, const struct iovec *req, int nreq,
                             const struct iovec *reply, int nreply, size_t *got);
int vgpu_remote_send_flagged(unsigned slot, uint32_t flags, const struct iovec *req, int nreq);

/* Shares the n bytes at p, a MAP_SHARED mapping of memfd (sealed against
 * shrinking; over a channel -1: p lies in the window, which is backed),
 * with the executor, which maps them and registers them with its driver,
 * so that copies to and from them need no bytes in the messages
 * (VGPU_REMOTE_SHARED); *view: their device address, or 0; and undoes
 * that.  The code: 0 when it did. */
int vgpu_remote_share(const void *p, size_t n, int memfd, uint64_t *view);
int vgpu_remote_unshare(const void *p);
/* The window of addresses the executor reserved for shared blocks, which
 * this process reserved too (connecting first): a block mapped in it is
 * at the same address in both, and *view, its device view, is that
 * address.  *backed: the window is memory already, both sides' (a
 * channel's bulk), where blocks are taken, not mapped.  False without one. */
bool vgpu_remote_window(uint64_t *base, uint64_t *size, bool *backed);

/* Whether the executor keeps a cache of module images, which a load may
 * name by hash (VGPU_REMOTE_BY_HASH; connecting first). */
bool vgpu_remote_image_cache(void);

/* The text the executor gives for code through slot (an error's name or
 * string), kept for the life of the process as the library's own are
 * (texts.c): 0 and *out; the call's code; or -1, out of memory.  fetch
 * asks the executor (its library's message): the code, and the text in
 * buf (size bytes, NUL-ended). */
typedef int (*vgpu_remote_fetch_text)(unsigned slot, uint32_t code, char *buf, size_t size);
int vgpu_remote_text(unsigned slot, uint32_t code, vgpu_remote_fetch_text fetch, const char **out);
/* s, kept for the life of the process (a text the driver names by a
 * handle: a function's name), one copy of each (texts.c); NULL, out of memory. */
const char *vgpu_remote_intern(const char *s);

/* What a slot the remote driver does not carry returns: refused, logged
 * once per slot, with why (the spec's reason); vgpu_remote_refuse, for
 * a call whose arguments ask more than vgpu carries. */
int vgpu_remote_refuse_why(unsigned slot, const char *why);
int vgpu_remote_refuse(unsigned slot);
