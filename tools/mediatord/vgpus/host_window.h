/*
 * A host vGPU's BAR0 window: two memfds that no process it is handed to
 * can resize, mapped by the mediator as one struct vgpu_bar0.
 *
 *   config  "vgpu:NAME:config", one page (header, registers): made fresh
 *           at every mediator start; the mediator maps it read-write,
 *           then seals it against every other write (F_SEAL_FUTURE_WRITE)
 *           and any resize, so a client's descriptor, or one it opens
 *           again through /proc, can only read it
 *   status  "vgpu:NAME:status", the rest (status, process table): every
 *           process of the vGPU writes it; sealed against resizing (a
 *           truncated mapping would fault everyone who touches it)
 *
 * memfds end with the last process that holds them: after a restart, the
 * status part is taken back from a running process's mapping
 * (/proc/PID/map_files), and only if it is the very file the journal names.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/contract/window/bar0.h"

struct med_host_window {
    struct vgpu_bar0 *bar;  /* the mediator's mapping, config read-write */
    int config_fd, status_fd; /* what clients get (ADMIT) */
    uint64_t status_dev, status_ino; /* the status memfd, as the journal names it */
};

/*
 * Makes vGPU name's window: a new config page holding a header and regs,
 * and the status part given (a recovered memfd; -1: a new, empty one).
 * status_fd is the window's from then on, even on failure.  0, or -1 with err.
 */
int med_host_window_make(const char *name, const struct vgpu_bar0_config *regs, int status_fd,
                         struct med_host_window *w, char *err, size_t errlen);

/*
 * The status memfd of vGPU name as process pid maps it, if it is the one
 * with dev and ino, whole and sealed: its descriptor, or -1 with why not
 * in err.
 */
int med_host_window_recover(const char *name, pid_t pid, uint64_t dev, uint64_t ino, char *err, size_t errlen);

void med_host_window_close(struct med_host_window *w);

/* Writes a window's first page (header and config) whole from regs,
 * leaving its status and process table as they are. */
void med_window_write_first_page(struct vgpu_bar0 *b, const struct vgpu_bar0_config *regs, uint32_t flags,
                                 const char *name);
