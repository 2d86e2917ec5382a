/*
 * One connection to the mediator, as its parts see it: who is at the other
 * end (peer credentials, read at accept), where it was admitted, and what
 * it has not read yet.  The connections' handling is clients.h; the
 * answers (status.c, cluster.c, compute_status.c) read this record alone.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "tools/mediatord/clients/cgroups.h"
#include "tools/mediatord/clients/sendq.h"
#include "tools/mediatord/mediatord.h"
#include "tools/mediatord/proc.h"
#include "common/contract/protocol/protocol.h"

struct med_client {
    int fd;
    pid_t pid;                   /* in the mediator's PID namespace */
    uid_t uid;
    gid_t gid;
    gid_t *groups;               /* supplementary groups (SO_PEERGROUPS), malloc'd */
    int ngroups;
    uint64_t start_time;         /* /proc/PID/stat's, at accept */
    struct med_cgroup cgroup;    /* its cgroup, read at accept (cgroups.h) */
    bool executor;               /* an executor this mediator started: its record counts for it */
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

/* Its user's name (looked up once: a directory service may be slow). */
static inline const char *med_client_user(struct med_client *c)
{
    if (!c->user[0])
        med_user_name(c->uid, true, c->user, sizeof(c->user));
    return c->user;
}
