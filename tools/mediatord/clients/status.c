/*
 * The mediator's STATUS: every vGPU a requester may see, with its devices'
 * quotas and use, and the processes holding its slots (vgpu-smi, metrics).
 * Root and the mediator's own user see everything; anyone else sees the
 * vGPUs that admit them.
 */
#define _GNU_SOURCE
#include "tools/mediatord/clients/status.h"

#include "tools/mediatord/clients/client.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool med_status_visible(const struct med_vgpu *v, uid_t uid, gid_t gid, const gid_t *groups, int ngroups)
{
    return uid == 0 || uid == geteuid() || med_config_admits(&v->conf, uid, gid, groups, ngroups);
}

/* From the mediator's own registers: a VM may write every byte of its window. */
static void fill_vgpu(const struct med_vgpu *v, struct vgpu_status_vgpu *r)
{
    const struct vgpu_bar0 *b = v->bar;
    memset(r, 0, sizeof(*r));
    vgpu_proto_copy_string(r->name, sizeof(r->name), v->conf.name);
    r->ndev = v->regs.device_count;
    r->flags = (v->conf.guest ? VGPU_STATUS_GUEST : 0) | (v->retired ? VGPU_STATUS_RETIRED : 0) |
               (v->window_lost ? VGPU_STATUS_WINDOW_LOST : 0);
    r->processes = med_vgpu_processes(v);
    r->refused_admissions = v->refused_admissions;
    for (uint32_t d = 0; d < r->ndev; d++) {
        struct vgpu_status_device *o = &r->dev[d];
        const struct med_gpu *gpu = v->gpu[d];
        vgpu_proto_copy_string(o->uuid, sizeof(o->uuid), v->regs.device[d].physical);
        vgpu_proto_copy_string(o->gpu_name, sizeof(o->gpu_name), gpu ? gpu->name : "(not on this machine)");
        o->physical_total = gpu ? gpu->total : 0;
        o->limit = atomic_load(&v->regs.device[d].memory_limit);
        o->used = atomic_load(&b->status.device[d].memory_used);
        o->refusals = atomic_load(&b->status.device[d].refusals);
        o->compute = v->regs.device[d].compute_share;
    }
}

/* A process no connection speaks for (after a restart): what /proc says. */
static void from_proc(struct vgpu_status_proc *p)
{
    med_read_comm((pid_t)p->pid, p->comm, sizeof(p->comm));
    snprintf(p->user, sizeof(p->user), "(not reattached)");
}

/* A slot's process record: from the mediator's records (a host vGPU), or
 * as the VM's window says (a guest's). */
static void fill_proc(struct med_world *w, const struct med_vgpu *v, int s, const struct med_admission *a,
                      struct vgpu_status_proc *p)
{
    for (uint32_t d = 0; d < v->regs.device_count; d++)
        p->held[d] = atomic_load(&v->bar->procs[s].held[d]);
    if (!a) {
        p->uid = UINT32_MAX;
        vgpu_proto_copy_string(p->comm, sizeof(p->comm), "?");
        vgpu_proto_copy_string(p->user, sizeof(p->user), "(in the VM)");
        return;
    }
    p->uid = (uint32_t)a->uid;
    struct med_client *c = NULL;
    for (int k = 0; a->connected && k < w->nclients && !c; k++)
        if (w->clients[k]->adm == a)
            c = w->clients[k];
    if (c) {
        vgpu_proto_copy_string(p->comm, sizeof(p->comm), c->comm);
        vgpu_proto_copy_string(p->user, sizeof(p->user), med_client_user(c));
    } else {
        from_proc(p);
    }
}

uint8_t *med_status_build(struct med_world *w, uid_t uid, gid_t gid, const gid_t *groups, int ngroups,
                          uint32_t *len)
{
    const struct med_vgpus *all = w->vgpus;
    struct vgpu_status_header h = { .epoch = all->epoch, .features = VGPU_STATUS_HAS_WATCH | VGPU_STATUS_HAS_COMPUTE | VGPU_STATUS_HAS_CLUSTER |
                                                                           VGPU_STATUS_HAS_PIN,
                                    .refused_admissions = all->refused_admissions };
    vgpu_proto_copy_string(h.version, sizeof(h.version), VGPU_VERSION);
    int index[MED_MAX_VGPUS * 2];
    for (int i = 0; i < all->n; i++) {
        index[i] = -1;
        if (med_status_visible(all->v[i], uid, gid, groups, ngroups)) {
            index[i] = (int)h.nvgpus++;
            h.nprocs += med_vgpu_processes(all->v[i]);
        }
    }
    /* Counted live, so there may be fewer slots than h.nprocs by the time
     * they are read: the count is fixed below. */
    size_t cap = sizeof(h) + h.nvgpus * sizeof(struct vgpu_status_vgpu) +
                 (h.nprocs + 16) * sizeof(struct vgpu_status_proc);
    uint8_t *out = calloc(1, cap);
    if (!out)
        return NULL;
    uint8_t *q = out + sizeof(h);
    for (int i = 0; i < all->n; i++)
        if (index[i] >= 0) {
            struct vgpu_status_vgpu r;
            fill_vgpu(all->v[i], &r);
            memcpy(q, &r, sizeof(r));
            q += sizeof(r);
        }
    uint32_t nprocs = 0, room = h.nprocs + 16;
    for (int i = 0; i < all->n; i++) {
        const struct med_vgpu *v = all->v[i];
        if (index[i] < 0)
            continue;
        for (int s = 0; s < VGPU_BAR0_MAX_PROCS && nprocs < room && nprocs < VGPU_STATUS_MAX_PROCS; s++) {
            const struct med_admission *a = v->slot_of[s];
            uint64_t o = atomic_load(&v->bar->procs[s].owner);
            if (v->conf.guest ? VGPU_BAR0_OWNER_STATE(o) != VGPU_PROC_LIVE : !a)
                continue;
            struct vgpu_status_proc p = { .pid = a ? (uint32_t)a->pid : (uint32_t)VGPU_BAR0_OWNER_PID(o),
                                          .vgpu = (uint32_t)index[i], .slot = (uint32_t)s };
            fill_proc(w, v, s, a, &p);
            memcpy(q, &p, sizeof(p));
            q += sizeof(p);
            nprocs++;
        }
    }
    h.nprocs = nprocs;
    memcpy(out, &h, sizeof(h));
    *len = (uint32_t)(q - out);
    return out;
}
