/*
 * The mediator's connections: admission by peer credentials (SO_PEERCRED,
 * SO_PEERGROUPS; never by what a client claims), the protocol's requests,
 * and the end of a process (its connection closes: its memory returns at
 * once).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "tools/mediatord/config.h"
#include "tools/mediatord/vgpus.h"
#include "vgpu_backend/protocol.h"

struct med_client {
    int fd;
    pid_t pid;                   /* in the mediator's PID namespace */
    uid_t uid;
    gid_t gid;
    gid_t *groups;               /* supplementary groups (SO_PEERGROUPS), malloc'd */
    int ngroups;
    char comm[16];               /* /proc/PID/comm, non-printable bytes as '?' */
    char user[32];               /* the uid's name, looked up when first needed (med_client_user) */
    uint64_t last_ms;            /* when it was accepted, or last asked something */
    void *loop;                  /* the event loop's record of it (main.c) */
    struct med_vgpu *vgpu;       /* admitted to; NULL before */
    int slot;                    /* its process slot, or -1 */
    uint64_t owner;              /* the slot's owner word */
    uint8_t in[VGPU_PROTO_HEADER_SIZE + VGPU_PROTO_MAX_REQUEST];
    size_t have;
};

/* What a connection's request needs from the rest of the mediator. */
struct med_world {
    const struct med_config *config;
    struct med_vgpus *vgpus;
    struct med_client **clients; /* every connection, for STATUS */
    int nclients;
};

/* A new connection (blocking, so answers wait for a slow reader up to a
 * timeout): its credentials.  NULL if it cannot be served. */
struct med_client *med_client_accept(int fd, uint64_t now_ms);

/* Its user's name (looked up once: a directory service may be slow). */
const char *med_client_user(struct med_client *c);

/* /proc/PID/comm, with bytes that are not printable ASCII as '?': a
 * process names itself, and the name goes to terminals and JSON. */
void med_read_comm(pid_t pid, char *out, size_t len);

/*
 * Reads what the connection sent and answers it.  Returns false when the
 * connection is to be closed (it ended, broke the protocol, or was refused).
 */
bool med_client_readable(struct med_client *c, struct med_world *w, uint64_t now_ms);

/* Ends a connection: a process slot it held is freed and its memory returned. */
void med_client_close(struct med_client *c);

/* Builds a STATUS payload of what uid may see (malloc'd; *len set), or NULL. */
uint8_t *med_status_build(struct med_world *w, uid_t uid, gid_t gid, const gid_t *groups, int ngroups,
                          uint32_t *len);
