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
 * finding the others again (their usage intact); the epoch moves past every
 * window's.  0, or -1 with the reason in err.
 */
int med_vgpus_open(struct med_vgpus *all, const struct med_config *c, const struct med_gpus *g, char *err,
                   size_t errlen);

/* Tells every host window this start's epoch (once the socket listens):
 * its processes then reattach. */
void med_vgpus_announce(struct med_vgpus *all);

/*
 * Applies a new config (already checked against the GPUs): quotas and
 * compute shares change at once, even below current use (new allocations
 * are then refused, nothing is killed); a vGPU's devices change only while
 * no process uses it; removed vGPUs retire.  Each change is logged.
 */
void med_vgpus_reload(struct med_vgpus *all, const struct med_config *c, const struct med_gpus *g);

/* The vGPU of that name (retired ones too), or NULL. */
struct med_vgpu *med_vgpus_find(struct med_vgpus *all, const char *name);

/* Frees a slot whose process ended; logs what came back. */
void med_vgpu_release(struct med_vgpu *v, int slot, uint64_t owner, const char *who);

/* Returns the memory of processes that died holding no connection (after a
 * restart, until they reattach) and drops retired vGPUs nothing uses. */
void med_vgpus_scan(struct med_vgpus *all);
