/*
 * A connection's cgroup, and what it decides (docs/guide/mediator.md,
 * "Admission"; docs/guide/containers.md): which vGPU's cgroup rule holds a
 * process, whether the mediator could tell its cgroup at all, and BIND,
 * by which a container runtime's hook gives a vGPU made for containers to
 * a container.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "tools/mediatord/mediatord.h"
#include "tools/mediatord/vgpus/vgpus.h"
#include "common/contract/protocol/protocol.h"

/* A process's cgroup, as read when it connected. */
struct med_cgroup {
    char path[4096];      /* the cgroup v2 path; "" when unknown */
    const char *unknown;  /* why it could not be told (static text), or NULL */
};

/* Reads pid's cgroup, checked against its start time (read before): a pid
 * that ended, and was reused, between the two names another process. */
void med_cgroup_of(pid_t pid, uint64_t start_time, struct med_cgroup *out);

/* The vGPU whose cgroups = or binding holds path most closely (retired ones
 * too: a container keeps to its vGPU while it drains), or NULL; its path's
 * length in *len. */
struct med_vgpu *med_cgroup_home(const struct med_world *w, const char *path, size_t *len);

/* Does some vGPU admit by cgroup (cgroups =, containers =, a binding)?
 * Then a process whose cgroup is unknown is admitted nowhere. */
bool med_cgroup_rules(const struct med_world *w);

/*
 * BIND from a connection of pid (started at start_time, uid): binds b's
 * vGPU to b->pid's cgroup, or unbinds it.  0 with the vGPU's name and the
 * cgroup now bound in out, or a refusal code with why.
 */
int med_cgroup_bind(struct med_world *w, pid_t pid, uint64_t start_time, uid_t uid, const struct vgpu_msg_bind *b,
                    struct vgpu_msg_bound *out, char *why, size_t len);
