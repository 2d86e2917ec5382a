/*
 * BAR0: the vGPU's shared register window, layout version 4 (docs/reference/bar0.md).
 *
 * Mapped by every process of the vGPU.  Three regions, each on its own page
 * (the first page holds two parts):
 *
 *   0x0000  header   magic, version, size, region offsets, owner flags, name
 *   0x0100  config   per device: physical id, memory limit, compute share, name
 *   0x0c00  turns    per device: the compute share's grant and beat (mediated)
 *   0x1000  status   per device: memory in use, context overhead; reaper clock
 *   0x2000  procs    process table: pid + start time, bytes held per device
 *
 * Who owns it (header flags):
 *   standalone  a file the first process creates (VGPU_BAR0); processes
 *               write config when the vGPU is idle and reap each other.
 *   mediated    vgpu-mediatord's: two sealed memfds, the first page (header
 *               and config) writable by the mediator alone, the rest by
 *               every process; neither can be resized.  The mediator writes
 *               config, assigns slots and reaps, by its own records.
 *   guest       vgpu-mediatord's, for a VM: one file behind an ivshmem BAR;
 *               the mediator writes config, the guest's processes take
 *               slots and reap each other (they share the guest's pids).
 *
 * Status and process words are updated with atomics, so the allocation path
 * takes no lock.  Attaching to a standalone or guest window (validating,
 * taking a process slot) is serialised by flock on its file.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/contract/settings/settings.h"

#define VGPU_BAR0_MAGIC 0x3052414255504756ull /* "VGPUBAR0" little-endian, 8 bytes */
/* 2: a slot's busy word (counters are rebuilt from the slots); 3: the
 * compute share's registers; 4: its grant and beat moved to the first page */
#define VGPU_BAR0_VERSION 4
#define VGPU_BAR0_MAX_PROCS 1024
#define VGPU_BAR0_CONFIG_PAGE 0x1000 /* header + config: what a mediated client maps read-only */
#define VGPU_BAR0_GUEST_FILE_SIZE (256u << 10) /* ivshmem BARs are a power of two */

#define VGPU_BAR0_MEDIATED 1u /* vgpu-mediatord owns config and the process table */
#define VGPU_BAR0_GUEST 2u    /* vgpu-mediatord owns config; a VM's processes own the table */

struct vgpu_bar0_header {
    uint64_t magic;
    uint32_t version;       /* layout version: readers refuse another */
    uint32_t header_size;   /* sizeof(struct vgpu_bar0_header) */
    uint64_t size;          /* bytes of the whole window */
    uint32_t config_offset, status_offset, procs_offset;
    uint32_t max_devices;   /* VGPU_MAX_DEVICES */
    uint32_t max_procs;     /* VGPU_BAR0_MAX_PROCS */
    uint32_t proc_size;     /* sizeof(struct vgpu_bar0_proc) */
    _Atomic uint32_t config_generation; /* bumped on every config write */
    uint32_t flags;         /* VGPU_BAR0_MEDIATED, VGPU_BAR0_GUEST, or 0 (standalone) */
    char name[32];          /* the vGPU's name (mediator); "" standalone */
    uint32_t reserved[10];
};

struct vgpu_bar0_device_config {
    char physical[VGPU_DEVICE_TOKEN_LEN]; /* NVML index or GPU-... UUID, as configured */
    _Atomic uint64_t memory_limit;        /* bytes; 0 = the physical memory; read live */
    uint32_t compute_share;               /* percent of the device, 1-100 */
    uint32_t compute_mode;                /* enum vgpu_compute_mode: 0 share (work-conserving), 1 cap */
    char name[64];                        /* shown by tools; "" = the physical name */
};

struct vgpu_bar0_config {
    uint32_t device_count;
    uint32_t all_devices; /* 1: no device list; the vGPU is every physical device */
    uint32_t reserved[62];
    struct vgpu_bar0_device_config device[VGPU_MAX_DEVICES];
};

/*
 * The compute share's turn on one device (docs/design/compute.md), on the first
 * page: in a mediated window only the mediator writes it (its processes map
 * that page read-only), so no tenant can hand its vGPU the GPU.  Counters,
 * not times: a VM's clock is not the host's.
 */
struct vgpu_bar0_device_turn {
    _Atomic uint32_t grant;            /* non-zero while the vGPU holds the GPU (waiting threads sleep on it, a
                                        * futex); rewritten at every arbitration */
    uint32_t reserved;
    _Atomic uint64_t beat;             /* moves at each of the mediator's arbitrations of this GPU (about every
                                        * millisecond); 0: it does not schedule it */
};

struct vgpu_bar0_device_status {
    _Atomic uint64_t memory_used;      /* bytes held by the vGPU's processes, overhead included */
    _Atomic uint64_t context_overhead; /* bytes a process's first context takes on this device; 0 = not measured */
    _Atomic uint64_t refusals;         /* allocations refused for the quota */
    _Atomic uint64_t context_extra;    /* bytes each further context of a process takes; 0 = not measured */
    /* The compute share's demand (docs/design/compute.md).  Counters, not times:
     * a VM's clock is not the host's. */
    uint32_t reserved1;                /* version 3's grant, now in the turns */
    _Atomic uint32_t sched_waiting;    /* threads of its processes waiting for the GPU */
    _Atomic uint32_t sched_running;    /* threads of its processes waiting for their own queued work */
    uint32_t reserved0;
    _Atomic uint64_t sched_launches;   /* moves at most once a millisecond per process while it launches */
    _Atomic uint64_t sched_busy_ns;    /* GPU time charged to it, in all (the arbiter writes it) */
    uint64_t reserved2;                /* version 3's beat, now in the turns */
    /* The GPU time of the work its processes queued and is still to run,
     * as a process estimated it at its last marker, and a counter that
     * moves at each estimate (the mediator times it by its own clock). */
    _Atomic uint64_t sched_queued_ns;
    _Atomic uint64_t sched_queued_seq;
    /* Of sched_queued_ns, what the GPU is certainly behind on: all of it
     * when an older marker was still outstanding at the estimate, else 0
     * (its fill; 0 from processes of before it). */
    _Atomic uint64_t sched_behind_ns;
    uint64_t reserved[4];
};

struct vgpu_bar0_status {
    _Atomic uint64_t last_reap_ns;     /* CLOCK_MONOTONIC of the last dead-process scan */
    _Atomic uint32_t processes;        /* live process slots */
    _Atomic uint32_t mediator_epoch;   /* mediated: bumped by every mediator start */
    _Atomic uint64_t changes;          /* moves at the end of every change of the counters or the slots (rebuild) */
    uint32_t reserved[10];
    struct vgpu_bar0_device_status device[VGPU_MAX_DEVICES];
};

enum vgpu_bar0_proc_state {
    VGPU_PROC_FREE = 0,
    VGPU_PROC_LIVE = 1,
    VGPU_PROC_REAPING = 2,
};

/*
 * A process slot.  owner = pid << 8 | state, so claiming and reaping are one
 * CAS; the pid of a reaping slot is its reaper's, not its dead owner's.  busy counts the process's threads that are between their update of
 * a device's memory_used and of the slot's held word (and, while a slot is
 * claimed, the claimer): a process killed there leaves the two apart, and
 * vgpu_bar0_rebuild() mends them at a moment when no slot is busy.
 */
struct vgpu_bar0_proc {
    _Atomic uint64_t owner;
    uint64_t start_time;                  /* /proc/PID/stat starttime: pid reuse is told apart */
    _Atomic uint64_t held[VGPU_MAX_DEVICES];
    _Atomic uint64_t busy;
    uint64_t pid_ns;                      /* standalone: its PID namespace (the inode of /proc/PID/ns/pid); 0 unknown */
};

struct vgpu_bar0 {
    struct vgpu_bar0_header header;
    uint8_t pad0[0x100 - sizeof(struct vgpu_bar0_header)];
    struct vgpu_bar0_config config;
    uint8_t pad1[0xc00 - 0x100 - sizeof(struct vgpu_bar0_config)];
    struct vgpu_bar0_device_turn turn[VGPU_MAX_DEVICES];
    uint8_t pad1b[0x1000 - 0xc00 - VGPU_MAX_DEVICES * sizeof(struct vgpu_bar0_device_turn)];
    struct vgpu_bar0_status status;
    uint8_t pad2[0x1000 - sizeof(struct vgpu_bar0_status)];
    struct vgpu_bar0_proc procs[VGPU_BAR0_MAX_PROCS];
};

#define VGPU_BAR0_OWNER(pid, state) ((uint64_t)(pid) << 8 | (state))
#define VGPU_BAR0_OWNER_PID(o) ((int)((o) >> 8))
#define VGPU_BAR0_OWNER_STATE(o) ((int)((o)&0xff))

/* A process's view of a mapped BAR0. */
struct vgpu_bar0_map {
    struct vgpu_bar0 *bar;
    int fd;          /* the file (standalone, guest): its flock serialises slot claims; -1 mediated */
    int slot;        /* this process's slot, or -1 (e.g. NVML-only processes) */
    uint64_t owner;  /* the slot's owner word, as it was claimed */
    int pid;         /* the process that took slot (a fork child has another) */
    uint32_t generation; /* standalone: the config this process joined (config_generation) */
    uint64_t file_dev, file_ino; /* the file's identity (standalone, guest), or 0 */
    char path[4096];
};

/*
 * Opens (creating if need be, mode 0600) a standalone BAR0 file at path,
 * which must be this user's own regular file, writable by no one else and
 * of exactly a window's size, and reconciles
 * its config with want: a new or idle vGPU takes want; a vGPU with live
 * processes must already hold the same devices and limits, or the attach is
 * refused.  join: take whatever config the file holds (a process that only
 * named VGPU_BAR0); a file that does not exist yet gets want.  A mediator's
 * window is refused.  Returns 0, or -1 with a message in err.
 */
int vgpu_bar0_attach(const char *path, const struct vgpu_bar0_config *want, bool join, struct vgpu_bar0_map *m,
                     char *err, size_t errlen);

/*
 * Attaches to an existing guest window (an ivshmem BAR's resource file, as
 * the mediator on the host wrote it); never writes config.  Returns 0, or
 * -1 with a message in err.
 */
int vgpu_bar0_attach_guest(const char *path, struct vgpu_bar0_map *m, char *err, size_t errlen);

/*
 * A fork child's own attachment to the window it inherited, m: a new open
 * file description (its own flock) of the very file m maps, found through
 * the inherited descriptor or else the path, and checked by device and
 * inode, so a file that was unlinked or replaced meanwhile is never taken
 * for it.  fresh shares m's mapping (vgpu_bar0_close on fresh would unmap
 * it: close fresh->fd instead).  0, or -1 with a message in err.
 */
int vgpu_bar0_reopen(const struct vgpu_bar0_map *m, struct vgpu_bar0_map *fresh, char *err, size_t errlen);

/*
 * Maps a window from its two parts: the first page (header and config)
 * read-only unless config_writable, the rest read-write, as one contiguous
 * struct vgpu_bar0.  Returns it, or NULL with the reason in err.  _split
 * also validates a mediated window, and refuses one whose parts are not
 * sealed against resizing (and the first page against writes); _parts
 * does neither (the mediator's own, new window).
 */
struct vgpu_bar0 *vgpu_bar0_map_split(int config_fd, int status_fd, bool config_writable, char *err,
                                      size_t errlen);
struct vgpu_bar0 *vgpu_bar0_map_parts(int config_fd, int status_fd, bool config_writable, char *err,
                                      size_t errlen);

/* Fills a zeroed window: header (flags, name), config, empty status. */
void vgpu_bar0_init(struct vgpu_bar0 *b, const struct vgpu_bar0_config *config, uint32_t flags, const char *name);

/* Replaces a window's config (limits are read live by its processes). */
void vgpu_bar0_write_config(struct vgpu_bar0 *b, const struct vgpu_bar0_config *config);

/* Checks a mapped window's header; 0 or -1 with the reason in err. */
int vgpu_bar0_validate(const struct vgpu_bar0 *b, uint64_t file_size, char *err, size_t errlen);

/* Enters the process table of an attached standalone or guest BAR0
 * (m->slot); 0 or -1 with err.  A standalone process is refused if another
 * one rewrote the idle vGPU's config since it attached. */
int vgpu_bar0_enter(struct vgpu_bar0_map *m, char *err, size_t errlen);

/*
 * Claims a free slot for pid (started at start_time); the slot or -1 when
 * the table is full.  The caller serialises claims (flock, or the mediator).
 */
int vgpu_bar0_claim_slot(struct vgpu_bar0 *b, int pid, uint64_t start_time);
/* This process's PID namespace, as a slot records it (0: unknown). */
uint64_t vgpu_bar0_pid_ns(void);
/* Claims slot for pid, whatever its owner word says: the mediator, which
 * keeps its own records of whose each slot is (the caller serialises).
 * pid_ns: the claimer's PID namespace, for reapers (0: none, mediated). */
void vgpu_bar0_claim_slot_at(struct vgpu_bar0 *b, int slot, int pid, uint64_t start_time, uint64_t pid_ns);

/*
 * Frees slot if its owner is still owner, returning what it held to the
 * vGPU; the bytes returned (summed over devices) go to *returned.  False if
 * the slot changed hands (someone else freed it).
 */
bool vgpu_bar0_release_slot(struct vgpu_bar0 *b, int slot, uint64_t owner, uint64_t *returned);

/* Returns dead processes' bytes and rebuilds the counters; at most once a
 * second unless force.  A no-op in a mediated window, whose mediator reaps. */
void vgpu_bar0_reap(struct vgpu_bar0 *b, bool force);

/*
 * Sets each device's memory_used, and the live-process count, to what the
 * live slots hold, when no change is under way: a process killed between
 * its two updates, or a stray write, can leave them wrong for good
 * otherwise.  Each correction is logged.  Returns how many counters it
 * corrected, or -1 when a change was under way or came meanwhile: try again
 * later.
 */
int vgpu_bar0_rebuild(struct vgpu_bar0 *b);

/* Slots that are live now: the process count to decide on (the counter in
 * status is a figure to show, which rebuild keeps right). */
unsigned vgpu_bar0_live_slots(const struct vgpu_bar0 *b);

/* Is the process that took a slot (pid, start time) still running? */
bool vgpu_bar0_owner_alive(int pid, uint64_t start_time);

/* The memory limit of device dev (0 = none), read live. */
static inline uint64_t vgpu_bar0_limit(const struct vgpu_bar0 *b, int dev)
{
    return atomic_load_explicit(&b->config.device[dev].memory_limit, memory_order_relaxed);
}

/*
 * Takes bytes on device dev for this process's slot: fails (returns false)
 * when that would pass limit (0 = none), or when the process holds no slot
 * (nothing it took could be returned).  Lock-free.
 */
bool vgpu_bar0_take(struct vgpu_bar0_map *m, int dev, uint64_t bytes, uint64_t limit);
/* Takes bytes regardless of the limit (memory the driver already gave). */
void vgpu_bar0_take_anyway(struct vgpu_bar0_map *m, int dev, uint64_t bytes);
/* Gives bytes back (nothing, once the process has left its slot: leaving
 * returned all it held). */
void vgpu_bar0_give(struct vgpu_bar0_map *m, int dev, uint64_t bytes);
/* What this process counts for something the driver reports (a pool's or
 * the graphs' reserve, contexts, their limits) moves from counted to now:
 * taken regardless of the limit, the driver having it already, or given back. */
void vgpu_bar0_recount(struct vgpu_bar0_map *m, int dev, uint64_t counted, uint64_t now);

/* Leaves the process table, returning what this process held. */
void vgpu_bar0_detach(struct vgpu_bar0_map *m);

/* Unmaps and closes an attached BAR0 that holds no slot of this process. */
void vgpu_bar0_close(struct vgpu_bar0_map *m);

/* A process's start time as /proc/PID/stat gives it, or 0. */
uint64_t vgpu_proc_start_time(int pid);
