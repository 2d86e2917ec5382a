/*
 * The mediator's watch: in-process interposition cannot contain a process
 * that goes around it (LD_PRELOAD unset, a static binary, the device files
 * used directly), so the mediator looks at the GPUs from outside.  On each
 * GPU a host vGPU uses, every reading of the driver (watch_sampler.h) is
 * compared with the mediator's own records of whom it admitted (pid and
 * start time of its connections and journaled admissions; never what a
 * process wrote in a window):
 *
 *   unadmitted        a process uses the GPU and was admitted to no vGPU
 *                     on it (unless exempt_uids / exempt_gids allow it);
 *   over quota        an admitted process holds more than its vGPU's quota
 *                     there, beyond the tolerance;
 *   vGPU over quota   its vGPU's processes there together do, and none of
 *                     them alone (each is named);
 *   over its share    on a GPU the mediator arbitrates, an admitted process
 *                     used the GPU while its vGPU was given none of it
 *                     (watch_share.h judges it, from the compute views'
 *                     readings).
 *
 * A process is reported once it is found so in two readings running (one
 * that is exiting, or being admitted, is not; over its share: as
 * watch_share.h counts).  Unadmitted use is also counted per user: once a
 * user's unadmitted processes are found in MED_WATCH_USER_FOUND of the
 * last MED_WATCH_USER_READINGS readings, whichever processes they were,
 * each one of theirs is reported at first sight, so that processes that
 * come and go within a reading do not escape.  One log line an episode;
 * vgpu-smi (WATCH) and the metrics list it while it lasts.  Where the
 * config says enforce = kill it is sent SIGKILL (watch_kill.h), once.
 * docs/guide/mediator.md, "Watch", is the manual.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "tools/mediatord/mediatord.h"
#include "tools/mediatord/proc.h"
#include "tools/mediatord/ratelimit.h"
#include "tools/mediatord/vgpus/vgpus.h"
#include "tools/mediatord/watch/watch_sampler.h"

/* Processes the watch keeps track of at once, all GPUs; past that a
 * reading's further findings wait for room (said in the log). */
#define MED_WATCH_MAX_CASES 4096
/* Users whose unadmitted use it follows at once (the oldest goes first). */
#define MED_WATCH_MAX_USERS 256
#define MED_WATCH_USER_READINGS 4
#define MED_WATCH_USER_FOUND 2

/* A user some of whose processes were found unadmitted lately. */
struct med_watch_user {
    uint32_t uid;
    uint64_t reading; /* the last reading that found one; 0: a free entry */
    uint32_t found;   /* bits: the readings up to that one that found one (bit 0: that one) */
};

/* One process found in one state on one GPU. */
struct med_watch_case {
    pid_t pid;
    int gpu;                  /* index into the mediator's med_gpus */
    enum vgpu_watch_rule rule;
    char vgpu[VGPU_NAME_LEN]; /* the vGPU it was admitted to; "" when unadmitted */
    struct med_proc proc;     /* start time and ids, when first seen */
    char comm[16];
    char user[32];
    uint64_t used;            /* as the driver says, in the latest reading (over its share: its
                               * utilization, permille) */
    uint64_t quota, vgpu_used; /* (over its share: quota is the vGPU's share, permille) */
    uint64_t first_ms;        /* when it was first found so */
    uint64_t reported_ms;     /* when it was reported */
    unsigned streak;          /* readings running it was found so in */
    unsigned found, found_of; /* over its share: of the share check's last found_of readings, those it was
                               * found in */
    uint64_t reading;         /* the last reading it was found in */
    bool reported;            /* said (two readings running) */
    bool by_user;             /* unadmitted: reported at first sight, its user's found lately */
    bool kill;                /* the config says to kill it */
    bool kill_tried;          /* once an episode, whatever came of it */
    bool killed;
};

struct med_watch {
    const struct med_gpus *gpus;
    struct med_sampler *sampler;
    uint64_t watched;         /* GPUs (bits by med_gpus index) the sampler reads */
    unsigned interval_ms;     /* in force; 0: off */
    const struct med_config *config; /* the one last configured with (a reload brings another) */
    bool configured;
    struct med_watch_case *cases;
    int ncases;
    struct med_watch_user users[MED_WATCH_MAX_USERS];
    uint64_t readings;
    uint64_t kills[MED_MAX_GPUS][3];      /* by GPU: unadmitted, over quota (either rule), over its share */
    uint64_t failed_readings[MED_MAX_GPUS];
    struct med_ratelimit fail_log, full_log;
    char hostname[256];       /* for the metrics' Hostname label */
};

/* Starts the sampler (idle until configured).  0, or -1 with err. */
int med_watch_start(struct med_watch *w, const struct med_gpus *g, char *err, size_t errlen);

/* The sampler's descriptor, for the loop: readable when a reading waits. */
int med_watch_fd(const struct med_watch *w);

/* Takes the config and the vGPUs as they are now: the interval, and the
 * GPUs to read (those host vGPUs use; none of a VM's).  At start, after a
 * reload; each reading does it again, as vGPUs come and go. */
void med_watch_configure(struct med_watch *w, const struct med_world *world);

/* A reading is there: judges it against the records, reports, enforces. */
void med_watch_readable(struct med_watch *w, struct med_world *world, uint64_t now_ms);

/*
 * The compute share's check found admission a (of vGPU vgpu, whose share
 * there is share permille) using GPU gpu (a med_gpus index) while the vGPU
 * was given none of it: permille of it in the latest reading, found so in
 * found of the check's last of readings.  Reported at once (once an
 * episode), and killed where the vGPU's enforce = kill.
 */
void med_watch_over_share(struct med_watch *w, struct med_world *world, int gpu, const char *vgpu,
                          const struct med_admission *a, uint16_t permille, uint16_t share, unsigned found,
                          unsigned of, uint64_t now_ms);

/* The vGPU's processes use GPU gpu only in its turns again: their episodes end. */
void med_watch_over_share_end(struct med_watch *w, int gpu, const char *vgpu);

/* The WATCH payload of what uid may see (malloc'd; *len set), or NULL:
 * root and the mediator's user see every case; anyone else the cases of
 * their own processes and of the vGPUs that admit them. */
uint8_t *med_watch_build(const struct med_watch *w, const struct med_world *world, uid_t uid, gid_t gid,
                         const gid_t *groups, int ngroups, uint64_t now_ms, uint32_t *len);
