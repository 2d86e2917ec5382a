/*
 * The client side of vgpu-mediatord (docs/guide/mediator.md, docs/reference/protocol.md):
 * a process connects to the mediator's socket on first use, is admitted by
 * its credentials (SO_PEERCRED, never anything it claims) and receives its
 * vGPU's BAR0; the connection stays open for the life of the process, so
 * the mediator returns the process's memory the moment it exits.
 */
#pragma once

#include <stdint.h>

#include "common/contract/protocol/protocol.h"
#include "common/contract/window/bar0.h"

#define VGPU_MEDIATOR_DEFAULT_SOCKET "/run/vgpu/mediator.sock"

struct vgpu_mediator_link {
    int fd;                   /* the connection; -1 when none */
    char required[108];       /* the operator's socket (common/operator.h): used whatever the environment says */
    char socket[108];         /* sun_path */
    char vgpu[VGPU_NAME_LEN]; /* the vGPU admitted to */
    uint32_t epoch;           /* the mediator start this process is attached to (or gave up on) */
    uint64_t status_dev, status_ino; /* the window's status part, as fstat names it */
};

enum vgpu_mediator_answer {
    VGPU_MEDIATOR_ADMITTED = 0,
    VGPU_MEDIATOR_NONE = 1,     /* no mediator: no socket at the path */
    VGPU_MEDIATOR_REFUSED = -1, /* refused, or the mediator failed: err says why */
};

/*
 * Connects to l->required when set (the operator's socket, which must be
 * there), else to $VGPU_MEDIATOR_SOCKET (default /run/vgpu/mediator.sock;
 * "none": no mediator), and asks to be admitted (to $VGPU_NAME if set).  Admitted: m
 * maps the vGPU's BAR0 (config read-only).  Returns an enum
 * vgpu_mediator_answer.  No mediator means the default socket is not there;
 * a socket named in VGPU_MEDIATOR_SOCKET must be.
 */
int vgpu_mediator_join(struct vgpu_mediator_link *l, struct vgpu_bar0_map *m, char *err, size_t errlen);

/*
 * Asks for a process slot (CUDA is in use): m->slot.  A connection lost to a
 * mediator restart is made again first (into the same vGPU; m is then a new
 * mapping of it).  0 or -1 with err.
 */
int vgpu_mediator_enter(struct vgpu_mediator_link *l, struct vgpu_bar0_map *m, char *err, size_t errlen);

/*
 * The mediator restarted (BAR0's epoch moved): reconnects and has it adopt
 * this process's slot again, and maps the new start's config page over the
 * old one (same address: pointers into the window stay valid).  Nothing is
 * done while this process's connection is still open: the mediator did
 * not restart, another process of the vGPU wrote the epoch.  0 or -1 with
 * err (the process goes on with its slot; the mediator still returns its
 * memory when it dies).
 */
int vgpu_mediator_reattach(struct vgpu_mediator_link *l, const struct vgpu_bar0_map *m, char *err, size_t errlen);

/* A fork child: drops the parent's connection without a word on it. */
void vgpu_mediator_forget(struct vgpu_mediator_link *l);

/* Connects a stream socket to path: 0 and *fd, or the errno (for tools). */
int vgpu_mediator_connect(const char *path, int *fd);
