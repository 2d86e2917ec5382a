/*
 * The mediator's vGPUs at run time: each one's BAR0 window, its registers,
 * the processes it admitted, and what a reload or a restart changes.
 *
 * A host vGPU's window is two sealed memfds (host_window.h); a VM's is
 * state_dir/NAME.bar0 (guest_window.h).  Each vGPU has a journal,
 * state_dir/NAME.journal (journal.h), so that a restarted mediator knows
 * what it gave out.
 *
 * Every byte of a window past its first page (a guest's: every byte) can
 * be written by the vGPU's processes.  The mediator reads it only as a
 * hint (use, shown by vgpu-smi): what it acts on, which slot is whose,
 * which process to wait for, comes from its own records (struct
 * med_admission), kept from the connections it admitted and, across a
 * restart, from the journal.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "tools/mediatord/config/config.h"
#include "tools/mediatord/gpus.h"
#include "tools/mediatord/vgpus/guest_window.h"
#include "tools/mediatord/vgpus/host_window.h"
#include "tools/mediatord/vgpus/journal.h"
#include "common/contract/window/bar0.h"

/* Process slots one process may hold in a vGPU: a process that loads vgpu
 * twice (dlmopen, a second copy under another name) holds 2. */
#define MED_SLOTS_PER_PID 4

/* What the compute views measured of a process or a vGPU's device over
 * the last interval (utilization.h); written by utilization.c alone. */
/* Readings a process's utilization is averaged over (utilization.c says why). */
#define MED_UTIL_READINGS 10

struct med_compute_use {
    bool measured;        /* utilization is the driver's (else unknown) */
    bool busy_known;      /* busy_ns was read at the previous interval's end (a vGPU's device) */
    uint16_t held;        /* a vGPU's device: GPU time the arbiter charged it, permille of the interval */
    uint16_t utilization; /* permille: a process's, its mean over the recent readings; a vGPU's, the sum of its processes' */
    uint64_t busy_ns;     /* a vGPU's device: its charged GPU time, as read at the previous interval's end */
    uint16_t latest;      /* a process's: what the latest reading gave it, permille */
    uint16_t unturned;    /* a vGPU's device: bits, the last readings that found its processes using the GPU
                           * while it was given none of it (watch_share.h) */
    uint16_t recent[MED_UTIL_READINGS]; /* a process's: what the last readings gave it, permille */
    uint8_t nrecent, next;               /* how many of them there are; where the next goes */
};

/* A process the mediator admitted to a vGPU: its own record. */
struct med_admission {
    pid_t pid;           /* in the mediator's PID namespace */
    uint64_t start_time; /* /proc/PID/stat: tells a reused pid apart */
    uid_t uid;
    int slot;            /* the process slot it was given, or -1 */
    bool connected;      /* a connection speaks for it; false: carried over a restart, not reattached yet */
    struct med_compute_use use[VGPU_MAX_DEVICES]; /* on each of its vGPU's devices */
};

struct med_vgpus;

struct med_vgpu {
    struct med_vgpus *all;
    struct med_vgpu_conf conf;    /* as configured now */
    bool retired;                 /* gone from the config; kept until nothing uses it */
    struct vgpu_bar0 *bar;        /* the window, mapped read-write */
    struct vgpu_bar0_config regs; /* the registers written to it: read these, never the window's */
    struct med_host_window host;  /* a host vGPU's memfds (descriptors -1 for a guest's) */
    struct med_guest_window guest; /* a VM's file (descriptor -1 for a host vGPU's) */
    bool window_lost;             /* a VM's window whose file shrank: retired until a reload or restart */
    const struct med_gpu *gpu[VGPU_MAX_DEVICES]; /* its devices */
    struct med_admission **adm;   /* the processes admitted to it, malloc'd */
    int nadm, adm_cap;
    struct med_admission *slot_of[VGPU_BAR0_MAX_PROCS]; /* whose each slot is, by the records */
    bool dirty;                   /* its journal lags its records */
    bool journal_failing;         /* the last write failed (said once) */
    bool forged_warned;           /* a slot it never gave was found LIVE (said once) */
    uint64_t refused_admissions;
    struct med_compute_use use[VGPU_MAX_DEVICES]; /* each device's, over the last interval */
    char bound[VGPU_CGROUP_LEN];  /* made for containers: the cgroup it is bound to (BIND); "" none */
};

struct med_vgpus {
    int n;
    struct med_vgpu *v[MED_MAX_VGPUS * 2]; /* stable pointers: clients keep them */
    uint32_t epoch;                        /* this mediator start's */
    uint32_t seen_epoch;                   /* the latest in the journals read */
    uint64_t refused_admissions;           /* connections refused, all vGPUs */
    uint64_t generation;                   /* moves with every reload and binding (CLUSTER) */
    int dir;                               /* state_dir, checked (state_dir.h) */
    char dir_path[4096];
};

/*
 * Opens state_dir and every vGPU of c in it: windows made, or the status
 * of host vGPUs recovered from their running processes as their journals
 * name it, with those processes' records; windows there that c does not
 * name are kept, retired, while their processes live.  The epoch moves
 * past every journal's.  0, or -1 with the reason in err (an untrusted
 * state_dir or file in it, or a vGPU whose running processes use other
 * devices than c gives it).
 */
int med_vgpus_open(struct med_vgpus *all, const struct med_config *c, const struct med_gpus *g, char *err,
                   size_t errlen);

/* Tells every host window this start's epoch (once the socket listens):
 * its processes then reattach. */
void med_vgpus_announce(struct med_vgpus *all);

/*
 * Whether a new config can be taken as a whole: it may not move the devices
 * of a host vGPU that processes use, nor turn a vGPU into a guest's or
 * back.  0, or -1 with "FILE:LINE: reason".
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

/* Processes holding a slot: by the records (a host vGPU), or as the VM's
 * window says (a guest's: its processes are the VM's to count). */
unsigned med_vgpu_processes(const struct med_vgpu *v);

/* The vGPU of that name (retired ones too), or NULL. */
struct med_vgpu *med_vgpus_find(struct med_vgpus *all, const char *name);

/* Returns the memory of processes carried over a restart that died before
 * reattaching, drops retired vGPUs nothing uses, and retires a VM's window
 * whose file shrank (its vGPU is then shown with no use until a reload or
 * a restart makes the window again). */
void med_vgpus_scan(struct med_vgpus *all);

/* Writes the journals that lag their records. */
void med_vgpus_flush(struct med_vgpus *all);

/* ---- the records (admissions.c) ---- */

/* Records an admission (journaled before the process hears of it); NULL
 * when out of memory. */
struct med_admission *med_vgpu_admit(struct med_vgpu *v, pid_t pid, uint64_t start_time, uid_t uid);

enum med_claim { MED_CLAIM_TABLE_FULL = -1, MED_CLAIM_PID_FULL = -2 };

/* Gives a an empty slot of the process table: the slot, or an enum med_claim. */
int med_vgpu_claim(struct med_vgpu *v, struct med_admission *a);

/* The record of slot, carried over a restart, if it is pid's (started
 * at start_time) and no connection speaks for it yet: now one does. */
struct med_admission *med_vgpu_reattach(struct med_vgpu *v, uint32_t slot, pid_t pid, uint64_t start_time);

/* The process ended (who names it in the log): its slot is freed, what
 * it held returned, its record dropped. */
void med_vgpu_leave(struct med_vgpu *v, struct med_admission *a, const char *who);

/* Writes v's journal now; false (said once) if it cannot. */
bool med_vgpu_journal(struct med_vgpu *v);

/* Is v's admission k the first of its process that holds a slot?  A
 * process that loads vgpu twice holds two slots, and is one process to the
 * driver: counted once. */
bool med_vgpu_first_of_pid(const struct med_vgpu *v, int k);

/* ---- containers' cgroups (bindings.c) ---- */

/* How closely v holds a process of cgroup path: the length of the longest
 * of its cgroups = and its binding that holds path; 0: it does not hold it
 * by its cgroup.  A retired vGPU holds its cgroups still (it admits no one:
 * its containers are admitted nowhere until they end). */
size_t med_vgpu_cgroup_match(const struct med_vgpu *v, const char *path);

/* Binds v (made for containers) to cgroup ("": unbinds it), journaled. */
void med_vgpu_bind(struct med_vgpu *v, const char *cgroup);

/* Records carried over from a journal, for the processes still running. */
void med_vgpu_carry(struct med_vgpu *v, const struct med_journal_proc *procs, int n);
