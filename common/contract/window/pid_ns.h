/*
 * Pids as the caller sees them.  BAR0's process table names each process by
 * the pid the namespace that recorded it gave it: its own getpid()
 * (standalone, a VM's guest), or the pid vgpu-mediatord's namespace gives it
 * (mediated: SO_PEERCRED, the host's pid for a process in a container).  A
 * process in another PID namespace (a container) has its own pids, and its
 * own /proc, where the recorded one may be no process or another process.
 *
 * A process is matched by its start time (/proc/PID/stat, the same in every
 * PID namespace), first under the recorded pid, then among every process the
 * caller's procfs shows (of several that started in one tick, the one whose
 * NSpid holds the recorded pid, else the one that joined a vGPU); where the procfs is an outer namespace's (a caller
 * that unshared its PID namespace but kept /proc), its NSpid line gives the
 * caller's pid for it.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct vgpu_pid_seen {
    int pid;
    uint64_t start_time;
};

struct vgpu_pid_ns {
    char root[256];          /* the procfs: "/proc", or a test's tree */
    int depth;               /* PID namespaces the caller sits below the procfs's (its NSpid, less one) */
    char self_ns[64];        /* the caller's PID namespace: root/self/ns/pid's link, or "" */
    bool scanned;            /* every process's start time read, once per lookup batch */
    struct vgpu_pid_seen *seen;
    unsigned nseen;
};

/* Begins a batch of lookups through the procfs at root. */
void vgpu_pid_ns_open(struct vgpu_pid_ns *ns, const char *root);
/*
 * The pid, in the caller's PID namespace, of the process recorded as pid
 * with start_time (0: unknown); 0 when the caller cannot see it (another
 * container's, an outer namespace's), when it has exited, or when more than
 * one process it can see started at that time and neither the recorded
 * pid (one of exactly one of theirs, NSpid) nor a vGPU's status record
 * (exactly one of them holds one) tells which.
 */
int vgpu_pid_ns_visible(struct vgpu_pid_ns *ns, int pid, uint64_t start_time);
void vgpu_pid_ns_close(struct vgpu_pid_ns *ns);

/* Field 22 of root/PID/stat (clock ticks since boot), or 0; *zombie (may
 * be NULL) from field 3. */
uint64_t vgpu_proc_start_time_at(const char *root, int pid, bool *zombie);
