/*
 * Standalone vGPUs share a GPU through a page of their own (docs/design/compute.md):
 * /dev/shm/vgpu-UID/sched-<GPU UUID>.v<VERSION>, in the user's private
 * directory, one per GPU (and layout: processes of an older vgpu keep theirs).  It holds the arbiter's state (sched_arbiter.h) for every vGPU of
 * that user with a compute share on the GPU, and the processes themselves
 * step it: whoever finds the quantum over, under the page's lock.  (Under
 * vgpu-mediatord the mediator arbitrates instead, tools/mediatord/compute/sched.c.)
 * Across users, a GPU's shares hold only through the mediator.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/contract/arbiter/sched_arbiter.h"

#define VGPU_SCHED_PAGE_MAGIC 0x4448435355504756ull /* "VGPUSCHD" */
/* 3: leftover floors that expire; 4: the arbiter's floor of virtual time;
 * 5: each entry's fill, and an open GPU; 6: each entry's queued work;
 * 7: what the GPU is certainly behind on, for the fill */
#define VGPU_SCHED_PAGE_VERSION 7

struct vgpu_sched_page {
    uint64_t magic;
    uint32_t version;
    uint32_t size;
    _Atomic uint32_t lock;        /* 0, or the pid of the process stepping the state */
    _Atomic uint32_t generation;  /* moves whenever the holder changes: a futex word */
    /* Under lock: each slot's takings, counted (mod 256) each time it is
     * taken for a vGPU, which clears its counts.  A thread that counted
     * itself waiting in an earlier taking knows its count is gone. */
    uint8_t taken[VGPU_SCHED_MAX_ENTRIES];
    uint64_t reserved[2];
    struct vgpu_sched_state state; /* under lock; holder and until_ns also read without it */
    struct {
        uint64_t dev, ino;         /* the vGPU's BAR0 file: whose entry it is */
        uint32_t vdev;             /* the vGPU device on this GPU */
        _Atomic uint32_t waiting;  /* its threads waiting for the GPU */
        _Atomic uint32_t running;  /* its threads waiting for their own queued work */
        _Atomic uint64_t active_ns; /* its last launch, to about 1 ms */
        _Atomic uint64_t queued_until_ns; /* when the work its processes queued is done, by their estimate */
        _Atomic uint64_t behind_until_ns; /* until when the GPU is certainly behind on it (its fill) */
        struct vgpu_sched_demand demand; /* under lock */
    } who[VGPU_SCHED_MAX_ENTRIES];
};

/*
 * Opens (making it if need be) the page of GPU uuid in dir, the user's
 * private directory, and takes an entry in it for the vGPU whose BAR0 file
 * is (dev, ino), device vdev, with share (permille) and mode.  Returns the
 * mapped page and *entry, or NULL with the reason in err.
 */
struct vgpu_sched_page *vgpu_sched_page_open(const char *dir, const char *uuid, uint64_t dev, uint64_t ino,
                                             uint32_t vdev, uint32_t share, uint32_t mode, int *entry, char *err,
                                             size_t errlen);

/* Whether entry is still the vGPU (dev, ino, vdev)'s: an entry idle for a
 * minute is dropped, and its slot may be another vGPU's. */
static inline bool vgpu_sched_page_owns(const struct vgpu_sched_page *p, int entry, uint64_t dev, uint64_t ino,
                                        uint32_t vdev)
{
    return __atomic_load_n(&p->state.e[entry].used, __ATOMIC_ACQUIRE) && p->who[entry].ino == ino &&
           p->who[entry].dev == dev && p->who[entry].vdev == vdev;
}

/* Counts the calling thread waiting for the GPU in the entry of (dev, ino,
 * vdev), taking the entry anew if it was dropped meanwhile (its vGPU idle a
 * minute while others ran).  *entry: the entry known so far (-1: none), then
 * the one counted in; *taking: the slot's taking it was counted in.  -1
 * when the page is full. */
int vgpu_sched_page_wait_begin(struct vgpu_sched_page *p, uint64_t dev, uint64_t ino, uint32_t vdev, uint32_t share,
                               uint32_t mode, int *entry, uint8_t *taking);

/* Whether a count made by vgpu_sched_page_wait_begin is still in its entry
 * (not cleared by the entry's being dropped and its slot taken again). */
static inline bool vgpu_sched_page_counted(const struct vgpu_sched_page *p, int entry, uint8_t taking, uint64_t dev,
                                           uint64_t ino, uint32_t vdev)
{
    return vgpu_sched_page_owns(p, entry, dev, ino, vdev) &&
           __atomic_load_n(&p->taken[entry], __ATOMIC_ACQUIRE) == taking;
}

/* The thread waits no more: its count taken back, if it is still there. */
void vgpu_sched_page_wait_end(struct vgpu_sched_page *p, int entry, uint8_t taking, uint64_t dev, uint64_t ino,
                              uint32_t vdev);

/* Steps the page's arbiter if a step is due (the quantum is over, or its
 * holder went idle while others wait), under its lock; samples the
 * holder's fill; wakes the waiters when the holder changes or the GPU
 * opens; drops the entries of vGPUs idle for a minute. */
void vgpu_sched_page_step(struct vgpu_sched_page *p, uint64_t now);

/* Samples the holder's fill (vgpu_sched_sample), unless someone did in
 * the last half millisecond; wakes the waiters when the GPU opens.  For a
 * process that launches, about once a millisecond. */
void vgpu_sched_page_sample(struct vgpu_sched_page *p, uint64_t now);

/* Whether entry (of a vGPU in share mode, or not: cap) may launch now: it
 * holds the GPU within its quantum, or the GPU is open to share mode. */
static inline bool vgpu_sched_page_may_launch(const struct vgpu_sched_page *p, int entry, bool cap, uint64_t now)
{
    int32_t holder = vgpu_sched_holder(&p->state);
    if (holder < 0 || now >= vgpu_sched_until(&p->state))
        return false;
    return holder == entry || (!cap && vgpu_sched_open(&p->state));
}
