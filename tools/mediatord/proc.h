/*
 * What /proc says of a process that the mediator did not hear from itself
 * (the watch meets processes by the pids the driver lists): when it
 * started, whether it has ended, and who it runs as.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define MED_PROC_MAX_GROUPS 64

struct med_proc {
    uint64_t start_time;  /* /proc/PID/stat's, in clock ticks since boot: tells a reused pid apart */
    bool ended;           /* a zombie, or exiting: what it held is being returned */
    bool ids_known;       /* /proc/PID/status was read */
    uid_t uid;            /* effective, as SO_PEERCRED gives them to admission */
    gid_t gid;
    int ngroups;          /* supplementary groups, at most MED_PROC_MAX_GROUPS */
    gid_t groups[MED_PROC_MAX_GROUPS];
};

/* Reads pid's /proc entries.  False when there is no such process (or
 * /proc will not show it). */
bool med_proc_read(pid_t pid, struct med_proc *out);

/* /proc/PID/comm, with bytes that are not printable ASCII as '?': a
 * process names itself, and the name goes to terminals and JSON. */
void med_read_comm(pid_t pid, char *out, size_t len);

/* uid's name ("?" when not known; the number when it has none). */
void med_user_name(uid_t uid, bool known, char *out, size_t len);

/* pid's cgroup v2 path (the "0::" line of /proc/PID/cgroup, as the
 * mediator's cgroup namespace shows it).  False, out "", where there is
 * none (no unified hierarchy) or no such process. */
bool med_read_cgroup(pid_t pid, char *out, size_t len);

/* Is there a process in cgroup path (a cgroup v2 path, as
 * med_read_cgroup gives them)?  1 or 0 from its cgroup.events where the
 * mediator's cgroup v2 mount shows it (0 too: no such cgroup), -1 when it
 * cannot tell. */
int med_cgroup_populated(const char *path);

/* Is pid in the mediator's PID namespace (and, with mount, in its mount
 * namespace or that of PID 1: the host's, where a container runtime's
 * hooks run)? */
bool med_host_namespaces(pid_t pid, bool mount);

/* Moves pid into the cgroup v2 at path (as /proc/PID/cgroup names it),
 * where the mediator's cgroup v2 hierarchy is mounted whole: 0, or an
 * errno (ENODEV: no such mount). */
int med_cgroup_move(const char *path, pid_t pid);
