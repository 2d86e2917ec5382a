/*
 * vgpu-mediatord's configuration: an INI file (docs/reference/mediator.md), parsed
 * with inih.  Every error names the file, the line and the reason; nothing
 * unknown or malformed is ignored.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/contract/protocol/protocol.h"
#include "common/contract/settings/settings.h"

#define MED_MAX_VGPUS 64
#define MED_MAX_IDS 64
/* A VM's channels at most (vm_channels, docs/guide/vm.md). */
#define MED_MAX_VM_CHANNELS 256
#define MED_DEFAULT_VM_PINNED (64ull << 20)
/* cgroups = at most this many paths a vGPU. */
#define MED_MAX_CGROUPS 4
/* containers = N: at most this many vGPUs made of one section. */
#define MED_MAX_CONTAINERS 64
#define MED_DEFAULT_EXECUTORS 64   /* max_executors, a vGPU's */
#define MED_MAX_EXECUTORS 4096
#define MED_MAX_VM_PINNED (16ull << 30)
/* Connections one user may hold at once, unless the config says otherwise:
 * one a process, and a machine's tenants seldom run more. */
#define MED_DEFAULT_CONNECTIONS_PER_UID 1024
/* The watch (watch.h): a reading of the driver every half second finds a
 * process in two, within a second; the tolerance covers what the driver
 * counts beyond what vgpu does (docs/guide/mediator.md, "Watch"). */
#define MED_DEFAULT_WATCH_INTERVAL_MS 500
#define MED_MAX_WATCH_INTERVAL_MS 60000
#define MED_DEFAULT_WATCH_TOLERANCE_BYTES (64ull << 20)
#define MED_DEFAULT_WATCH_TOLERANCE_PERCENT 2

struct med_vgpu_conf {
    char name[VGPU_NAME_LEN];
    int line;                     /* its [vgpu.NAME] header */
    int ndev;
    char devices[VGPU_MAX_DEVICES][VGPU_DEVICE_TOKEN_LEN]; /* as written: NVML index or GPU-... UUID */
    int devices_line;
    uint64_t memory;              /* per device; 0: the whole GPU */
    int memory_line;
    unsigned compute;             /* percent of each device */
    int compute_line;
    unsigned compute_mode;        /* enum vgpu_compute_mode */
    int compute_mode_line;
    int nuids, ngids;
    uid_t uids[MED_MAX_IDS];
    gid_t gids[MED_MAX_IDS];
    int uids_line, gids_line;
    bool guest;                   /* a VM's vGPU: its window is a file for ivshmem */
    int guest_line;
    bool kill_over_quota;         /* enforce = kill: the watch ends its processes over quota */
    int enforce_line;
    bool remote;                  /* remote = yes: processes with no GPU may have an executor of it */
    int remote_line;
    unsigned vm_channels;         /* vm_channels = N: a VM's channels file of N, served (docs/guide/vm.md); 0 none */
    int vm_channels_line;
    uint64_t vm_pinned;           /* vm_pinned = SIZE: each channel's page-locked memory (default 64 MiB) */
    int vm_pinned_line;
    /* executor_user = NAME: the user its executors run as (else each guest's
     * own), with that user's primary and supplementary groups */
    bool has_executor_user;
    uid_t executor_uid;
    gid_t executor_gid;
    int executor_ngroups;
    gid_t executor_groups[MED_MAX_IDS];
    int executor_user_line;
    /* cgroups = PATH, ...: processes in these cgroup v2 paths, or below
     * them, are admitted, and only here (docs/guide/mediator.md, "Admission") */
    int ncgroups;
    char cgroups[MED_MAX_CGROUPS][VGPU_CGROUP_LEN];
    int cgroups_line;
    /* containers = N on [vgpu.CLASS]: the section makes N vGPUs, CLASS-0
     * to CLASS-(N-1), each the container's it is bound to (BIND) */
    unsigned containers;
    int containers_line;
    char cls[VGPU_NAME_LEN];      /* a vGPU made so: its CLASS; "" otherwise */
    /* pinned = SIZE: the page-locked memory its executors may register of
     * their guests', together (remote = yes); default: its memory, at most
     * half the host's */
    uint64_t pinned;
    int pinned_line;
    /* max_executors = N: executors of its guests at once (remote = yes) */
    unsigned max_executors;
    int max_executors_line;
    /* executor_cgroup = PATH: where its executors go when their guest's
     * cgroup cannot take them; "" none (docs/guide/remote.md) */
    char executor_cgroup[VGPU_CGROUP_LEN];
    int executor_cgroup_line;
};

struct med_config {
    char path[4096];
    char socket[108];
    mode_t socket_mode;
    uid_t socket_uid;             /* (uid_t)-1: leave as created */
    gid_t socket_gid;             /* (gid_t)-1: leave as created */
    char state_dir[4096];
    char metrics[128];            /* "HOST:PORT", "" = off */
    bool oversubscribe;
    int max_connections;          /* 0: as the descriptor limit allows (main.c) */
    int max_connections_per_uid;
    unsigned watch_interval_ms;   /* 0: no watch */
    uint64_t watch_tolerance_bytes;
    unsigned watch_tolerance_percent; /* of the quota, on top of the bytes */
    bool kill_unadmitted;         /* enforce = kill: the watch ends processes admitted nowhere */
    int nexempt_uids, nexempt_gids; /* the watch lets these use the GPUs without a vGPU */
    uid_t exempt_uids[MED_MAX_IDS];
    gid_t exempt_gids[MED_MAX_IDS];
    int nvgpus;
    struct med_vgpu_conf vgpu[MED_MAX_VGPUS];
};

/* Parses path into c (defaults first).  0, or -1 with "FILE:LINE: reason"
 * (or "FILE: reason": not a regular file, unreadable, or no vGPU in it). */
int med_config_load(const char *path, struct med_config *c, char *err, size_t errlen);

/* Is s a vGPU name: 1 to 31 letters, digits, '_', '-' or '.'? */
bool med_config_valid_name(const char *s);

/* The vGPU named name, or NULL. */
const struct med_vgpu_conf *med_config_find(const struct med_config *c, const char *name);

/* Is path (a cgroup v2 path) root itself or below it? */
bool med_cgroup_within(const char *path, const char *root);

/* Has path a ".." component: a cgroup outside the reader's cgroup namespace? */
bool med_cgroup_outside(const char *path);

/* Does v admit a process of uid, gid and supplementary groups? */
bool med_config_admits(const struct med_vgpu_conf *v, uid_t uid, gid_t gid, const gid_t *groups, int ngroups);
