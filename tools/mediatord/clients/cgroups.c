/* A connection's cgroup, and BIND; see cgroups.h. */
#define _GNU_SOURCE
#include "tools/mediatord/clients/cgroups.h"

#include "tools/mediatord/config/config.h"
#include "tools/mediatord/proc.h"
#include "common/contract/window/bar0.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

void med_cgroup_of(pid_t pid, uint64_t start_time, struct med_cgroup *out)
{
    out->unknown = NULL;
    if (!med_read_cgroup(pid, out->path, sizeof(out->path)))
        out->unknown = "no cgroup v2 path could be read for it (it ended, or the machine has no unified cgroup "
                       "hierarchy)";
    else if (med_cgroup_outside(out->path))
        out->unknown = "the mediator sees its cgroup from a cgroup namespace of its own: run vgpu-mediatord in "
                       "the host's (a privileged pod, or --cgroupns=host)";
    else if (!start_time || vgpu_proc_start_time(pid) != start_time)
        out->unknown = "it ended as it connected";
    if (out->unknown)
        out->path[0] = '\0';
}

struct med_vgpu *med_cgroup_home(const struct med_world *w, const char *path, size_t *len)
{
    struct med_vgpu *home = NULL;
    size_t best = 0;
    for (int i = 0; path[0] && i < w->vgpus->n; i++) {
        size_t m = med_vgpu_cgroup_match(w->vgpus->v[i], path);
        if (m > best) {
            best = m;
            home = w->vgpus->v[i];
        }
    }
    if (len)
        *len = best;
    return home;
}

bool med_cgroup_rules(const struct med_world *w)
{
    for (int i = 0; i < w->vgpus->n; i++) {
        const struct med_vgpu *v = w->vgpus->v[i];
        if (v->conf.ncgroups || v->conf.cls[0] || v->bound[0])
            return true;
    }
    return false;
}

/* Is the container a vGPU is bound to still there: its cgroup, with a
 * process in it?  Read from cgroup.events where the mediator's cgroup v2
 * mount shows it; else, whether a process of it is admitted. */
static bool still_there(const struct med_vgpu *v)
{
    int alive = med_cgroup_populated(v->bound);
    if (alive >= 0)
        return alive;
    for (int i = 0; i < v->nadm; i++)
        if (v->adm[i]->connected)
            return true;
    return false;
}

int med_cgroup_bind(struct med_world *w, pid_t pid, uint64_t start_time, uid_t uid, const struct vgpu_msg_bind *b,
                    struct vgpu_msg_bound *out, char *why, size_t len)
{
    /* Root in the mediator's PID namespace, which a container's root is
     * not in; a binding only from the host's mount namespace too, where
     * runtimes run their hooks: a pod in the host's PID namespace may end
     * any process there, and so take a vGPU from its container (the device
     * plugin does), but not give itself one.  Asked of the process that
     * connected, not of a process that took its pid since. */
    bool host = med_host_namespaces(pid, b->pid != 0);
    if ((uid != 0 && uid != geteuid()) || !host || !start_time || vgpu_proc_start_time(pid) != start_time) {
        snprintf(why, len, "BIND is taken from root in the host's PID %s alone (%s); pid %d (uid %u) is not%s",
                 b->pid ? "and mount namespaces" : "namespace", b->pid ? "a container runtime's hook" :
                 "the device plugin", (int)pid, (unsigned)uid, geteuid() != 0 ? " (or vgpu-mediatord, not running "
                 "as root, may not read its namespaces)" : "");
        return VGPU_REFUSE_NOT_ADMITTED;
    }
    struct med_vgpu *v = med_vgpus_find(w->vgpus, b->vgpu);
    if (!v || v->retired || !v->conf.cls[0]) {
        snprintf(why, len, "BIND %s: %s (%s)", b->vgpu, !v || v->retired ? "vgpu-mediatord has no such vGPU" :
                 "it is not made for containers (containers = N in its section)", w->config->path);
        return VGPU_REFUSE_NOT_ADMITTED;
    }
    struct med_cgroup cg = { .path = "" };
    if (b->pid) {
        med_cgroup_of((pid_t)b->pid, vgpu_proc_start_time((pid_t)b->pid), &cg);
        if (cg.unknown) {
            snprintf(why, len, "BIND %s: pid %u: %s", b->vgpu, b->pid, cg.unknown);
            return VGPU_REFUSE_UNAVAILABLE;
        }
        if (strlen(cg.path) >= VGPU_CGROUP_LEN) {
            snprintf(why, len, "BIND %s: pid %u's cgroup path is longer than %d characters", b->vgpu, b->pid,
                     VGPU_CGROUP_LEN - 1);
            return VGPU_REFUSE_NOT_ADMITTED;
        }
        for (const char *s = cg.path; *s; s++)
            if ((unsigned char)*s < 0x20 || *s == 0x7f) {
                snprintf(why, len, "BIND %s: pid %u's cgroup has a control character in its name", b->vgpu, b->pid);
                return VGPU_REFUSE_NOT_ADMITTED;
            }
        if (strcmp(cg.path, "/") == 0) {
            snprintf(why, len, "BIND %s: pid %u is in the root cgroup, which holds every process: a container has "
                     "a cgroup of its own", b->vgpu, b->pid);
            return VGPU_REFUSE_NOT_ADMITTED;
        }
        for (int i = 0; i < w->vgpus->n; i++) {
            const struct med_vgpu *u = w->vgpus->v[i];
            if (u != v && u->bound[0] && (med_cgroup_within(cg.path, u->bound) || med_cgroup_within(u->bound, cg.path))) {
                snprintf(why, len, "BIND %s: cgroup %.*s is vGPU %s's (bound to %.*s): one vGPU a container", b->vgpu,
                         VGPU_CGROUP_LEN, cg.path, u->conf.name, VGPU_CGROUP_LEN, u->bound);
                return VGPU_REFUSE_NOT_ADMITTED;
            }
        }
        /* One container a vGPU: the one bound before must have ended, or
         * have been unbound (the device plugin does when it hands it on). */
        if (v->bound[0] && strcmp(v->bound, cg.path) != 0 && still_there(v)) {
            snprintf(why, len, "BIND %s: it is the container's of cgroup %.*s, which still runs: one container a "
                     "vGPU (podman ps; the device plugin unbinds a vGPU when the kubelet hands it on)", b->vgpu,
                     VGPU_CGROUP_LEN, v->bound);
            return VGPU_REFUSE_NOT_ADMITTED;
        }
    }
    med_vgpu_bind(v, cg.path);
    memset(out, 0, sizeof(*out));
    vgpu_proto_copy_string(out->vgpu, sizeof(out->vgpu), v->conf.name);
    vgpu_proto_copy_string(out->cgroup, sizeof(out->cgroup), cg.path);
    return 0;
}
