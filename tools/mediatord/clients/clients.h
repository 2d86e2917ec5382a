/*
 * The mediator's connections: admission by peer credentials (SO_PEERCRED,
 * SO_PEERGROUPS; never by what a client claims), the protocol's requests,
 * the caps on connections, and the end of a process (its connection
 * closes: its memory returns at once).  Sockets are non-blocking; answers
 * a slow reader has not taken wait in its queue (sendq.h), and its next
 * requests wait until they are gone.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "tools/mediatord/clients/cgroups.h"
#include "tools/mediatord/clients/sendq.h"
#include "tools/mediatord/config/config.h"
#include "tools/mediatord/mediatord.h"
#include "tools/mediatord/proc.h"
#include "tools/mediatord/vgpus/vgpus.h"
#include "common/contract/protocol/protocol.h"

/* An answer not taken in this long: the connection is dropped. */
#define MED_STALL_MS 10000

struct med_client {
    int fd;
    pid_t pid;                   /* in the mediator's PID namespace */
    uid_t uid;
    gid_t gid;
    gid_t *groups;               /* supplementary groups (SO_PEERGROUPS), malloc'd */
    int ngroups;
    uint64_t start_time;         /* /proc/PID/stat's, at accept */
    struct med_cgroup cgroup;    /* its cgroup, read at accept (cgroups.h) */
    char comm[16];               /* /proc/PID/comm, non-printable bytes as '?' */
    char user[32];               /* the uid's name, looked up when first needed (med_client_user) */
    uint64_t last_ms;            /* when it was accepted, or last asked something */
    void *loop;                  /* the event loop's record of it (main.c) */
    struct med_vgpu *vgpu;       /* admitted to; NULL before */
    struct med_admission *adm;   /* the vGPU's record of it (its slot) */
    struct med_sendq out;        /* answers its socket has not taken yet */
    uint8_t in[VGPU_PROTO_HEADER_SIZE + VGPU_PROTO_MAX_REQUEST];
    size_t have;
};

/*
 * A new connection: its credentials, checked against the caps on
 * connections (refused with a REFUSE that says which cap and how to raise
 * it).  NULL if it is not to be served; the caller closes fd.
 */
struct med_client *med_client_accept(int fd, struct med_world *w, uint64_t now_ms);

/* Tells a connection that cannot be served why (without blocking), for
 * the loop's own refusals (out of descriptors). */
void med_client_refuse_fd(int fd, uint32_t code, const char *reason);

/* Its user's name (looked up once: a directory service may be slow). */
static inline const char *med_client_user(struct med_client *c)
{
    if (!c->user[0])
        med_user_name(c->uid, true, c->user, sizeof(c->user));
    return c->user;
}

/*
 * Reads what the connection sent and answers it; then writable() sends
 * what waits.  Both return false when the connection is to be closed (it
 * ended, broke the protocol, was refused, or its answers cannot wait).
 */
bool med_client_readable(struct med_client *c, struct med_world *w, uint64_t now_ms);
bool med_client_writable(struct med_client *c, struct med_world *w, uint64_t now_ms);

/* Does it wait to be written to (and so not to be read)? */
static inline bool med_client_waiting(const struct med_client *c)
{
    return med_sendq_waiting(&c->out);
}

/* Ends a connection: a process slot it held is freed and its memory returned. */
void med_client_close(struct med_client *c);

