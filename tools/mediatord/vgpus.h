/*
 * The mediator's vGPUs at run time: each one's BAR0 in state_dir (created,
 * or found again after a restart with its usage intact), its config
 * registers, its process slots, and what a reload changes.
 *
 * Files, per vGPU NAME:
 *   NAME.config, NAME.status  a host vGPU's window: the first page (header,
 *                             config) and the rest; clients get the first
 *                             read-only and the rest read-write
 *   NAME.bar0                 a guest vGPU's window, one file, for QEMU's
 *                             ivshmem-plain (docs/vm.md)
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "tools/mediatord/config.h"
#include "tools/mediatord/gpus.h"
#include "vgpu_backend/bar0.h"

struct med_vgpu {
    struct med_vgpu_conf conf;    /* as configured now */
    bool retired;                 /* gone from the config; kept until nothing uses it */
    struct vgpu_bar0 *bar;        /* mapped read-write */
    int config_fd;                /* host: the first page, read-only, handed to clients */
    int status_fd;                /* host: the rest, read-write, handed to clients */
    char base[4096];              /* state_dir/NAME */
    const struct med_gpu *gpu[VGPU_MAX_DEVICES]; /* its devices */
    bool bound[VGPU_BAR0_MAX_PROCS]; /* slot held by a live connection */
    int clients;                  /* admitted connections */
    uint64_t refused_admissions;
};

struct med_vgpus {
    int n;
    struct med_vgpu *v[MED_MAX_VGPUS * 2]; /* stable pointers: clients keep them */
    uint32_t epoch;                        /* this mediator start's */
    uint64_t refused_admissions;           /* connections refused, all vGPUs */
};

/*
 * Opens every vGPU of c under c->state_dir, creating the missing ones and
 * finding the others again (their usage intact); windows there that c does
 * not name are kept, retired, while their processes live.  The epoch moves
 * past every window's.  0, or -1 with the reason in err (a vGPU whose
 * running processes use other devices than c gives it).
 */
int med_vgpus_open(struct med_vgpus *all, const struct med_config *c, const struct med_gpus *g, char *err,
                   size_t errlen);

/* Tells every host window this start's epoch (once the socket listens):
 * its processes then reattach. */
void med_vgpus_announce(struct med_vgpus *all);

/*
 * Whether a new config can be taken as a whole: it may not move the devices
 * of a vGPU that processes use, nor turn a vGPU into a guest's or back.  0,
 * or -1 with "FILE:LINE: reason".
 */
int med_vgpus_check_reload(struct med_vgpus *all, const struct med_config *c, const struct med_gpus *g, char *err,
                           size_t errlen);

/*
 * Applies a new config (checked against the GPUs and by the above): quotas
 * and compute shares change at once, even below current use (new
 * allocations are then refused, nothing is killed); removed vGPUs retire;
 * new ones are made.  Each change is logged.  Returns how many new vGPUs
 * could not be made.
 */
int med_vgpus_reload(struct med_vgpus *all, const struct med_config *c, const struct med_gpus *g);

/* Live process slots, counted (the status counter is the processes' to write). */
unsigned med_vgpu_processes(const struct med_vgpu *v);

/* The vGPU of that name (retired ones too), or NULL. */
struct med_vgpu *med_vgpus_find(struct med_vgpus *all, const char *name);

/* Frees a slot whose process ended; logs what came back. */
void med_vgpu_release(struct med_vgpu *v, int slot, uint64_t owner, const char *who);

/* Returns the memory of processes that died holding no connection (after a
 * restart, until they reattach) and drops retired vGPUs nothing uses. */
void med_vgpus_scan(struct med_vgpus *all);
