/*
 * The mediator's side of remote GPUs (docs/guide/remote.md): an executor started
 * for a process that asked for one (REMOTE), serving its connection.
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

struct med_executor_for {
    int fd;    /* the process's connection, handed to the executor */
    uid_t uid; /* the executor's credentials: the vGPU's executor_user's, else the process's */
    gid_t gid;
    const gid_t *groups;
    int ngroups;
    const char *vgpu;   /* the vGPU it is admitted to, by HELLO like any process */
    const char *socket; /* the mediator's socket */
    const char *channels; /* NULL: serve the connection fd (--fd); else fd is a VM's channels file, served
                           * as this many channels (--bar-fd, vm_channels.h) */
    const char *cgroup;   /* the guest's cgroup v2 path, where the executor is charged; NULL or "" unknown */
    const char *fallback; /* the vGPU's executor_cgroup, where it goes if not there; NULL none */
};

/* A started executor: its pid, a pidfd (readable once it ended; -1 where
 * the kernel has none), and the cgroup it was placed in ("" the
 * mediator's, where neither of f's could take it). */
struct med_executor_started {
    pid_t pid;
    int pidfd;
    char cgroup[4096];
};

/*
 * Starts vgpu-executor --fd on f->fd (or --bar-fd), in a process of its own (not the
 * mediator's child: it is never waited for), as f's user and groups (never
 * root: a guest running as root, with no executor_user, is refused), holding no other descriptor
 * of the mediator's, with
 * vgpu's libraries preloaded and VGPU_NAME and VGPU_MEDIATOR_SOCKET naming
 * f's vGPU and this mediator.  Before it runs a line of its own it is
 * moved into f->cgroup, else f->fallback (docs/guide/remote.md,
 * "Executors' limits").  0 and *out, or -1 with err saying why (the
 * mediator cannot become that user, no vgpu-executor or libraries were
 * found).
 */
int med_executor_start(const struct med_executor_for *f, struct med_executor_started *out, char *err,
                       size_t errlen);

/* Whether an executor could be started for f (its user, the mediator's
 * rights, vgpu-executor found): 0, or -1 with err, before anything is said. */
int med_executor_check(const struct med_executor_for *f, char *err, size_t errlen);
