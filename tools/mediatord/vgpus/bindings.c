/*
 * Which vGPU a container's processes are admitted to, by their cgroup: a
 * vGPU's cgroups = paths, and a vGPU made for containers bound to the
 * cgroup of the one it was given to (BIND); see vgpus.h.
 */
#define _GNU_SOURCE
#include "tools/mediatord/vgpus/vgpus.h"

#include "common/log.h"

#include <stdio.h>
#include <string.h>

size_t med_vgpu_cgroup_match(const struct med_vgpu *v, const char *path)
{
    size_t best = 0;
    if (!path[0])
        return 0;
    for (int i = 0; i < v->conf.ncgroups; i++)
        if (med_cgroup_within(path, v->conf.cgroups[i]) && strlen(v->conf.cgroups[i]) > best)
            best = strlen(v->conf.cgroups[i]);
    if (v->bound[0] && med_cgroup_within(path, v->bound) && strlen(v->bound) > best)
        best = strlen(v->bound);
    return best;
}

void med_vgpu_bind(struct med_vgpu *v, const char *cgroup)
{
    if (strcmp(v->bound, cgroup) == 0)
        return;
    if (cgroup[0])
        vgpu_info("vGPU %s: bound to cgroup %s%s%s", v->conf.name, cgroup, v->bound[0] ? ", was " : "", v->bound);
    else
        vgpu_info("vGPU %s: unbound from cgroup %s: it waits for its next container", v->conf.name, v->bound);
    snprintf(v->bound, sizeof(v->bound), "%s", cgroup);
    v->all->generation++;
    med_vgpu_journal(v);
}
