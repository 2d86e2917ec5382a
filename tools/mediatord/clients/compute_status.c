/*
 * The mediator's COMPUTE: each vGPU device's compute share, mode, whether
 * it holds its GPU, the GPU time the arbiter charged it, and the last
 * interval's held time and utilization; each admitted process's
 * utilization (vgpu-smi, metrics).  The same vGPUs as STATUS shows the
 * asker.
 */
#define _GNU_SOURCE
#include "tools/mediatord/clients/status.h"

#include "tools/mediatord/compute/utilization.h"

#include <stdlib.h>
#include <string.h>

static uint32_t view_mode(uint32_t share, uint32_t mode)
{
    if (mode == VGPU_COMPUTE_CAP)
        return VGPU_COMPUTE_VIEW_CAP;
    return share >= 100 ? VGPU_COMPUTE_VIEW_NONE : VGPU_COMPUTE_VIEW_SHARE;
}

static void fill_device(const struct med_views *m, const struct med_vgpu *v, uint32_t d,
                        struct vgpu_compute_device *r)
{
    const struct med_compute_use *use = &v->use[d];
    memset(r, 0, sizeof(*r));
    vgpu_proto_copy_string(r->vgpu, sizeof(r->vgpu), v->conf.name);
    r->device = d;
    r->gpu = v->gpu[d] ? v->gpu[d]->index : UINT32_MAX;
    r->share = v->regs.device[d].compute_share;
    r->mode = view_mode(r->share, v->regs.device[d].compute_mode);
    r->held = use->held;
    r->utilization = use->utilization;
    r->flags = use->measured ? VGPU_COMPUTE_MEASURED : 0;
    int gi = v->gpu[d] ? (int)(v->gpu[d] - m->gpus->gpu) : -1;
    uint64_t launches = 0;
    if (gi >= 0 && med_views_charged(m->sched, gi, v, (int)d, &r->busy_ns, &launches)) {
        r->launch_ms = launches;
        r->flags |= m->sched->gpu[gi].on ? VGPU_COMPUTE_ARBITRATED : 0;
        r->flags |= med_sched_holds(m->sched, gi, v, (int)d) ? VGPU_COMPUTE_HOLDING : 0;
        r->flags |= med_sched_beside(m->sched, gi, v, (int)d) ? VGPU_COMPUTE_BESIDE : 0;
    }
}

uint8_t *med_compute_build(const struct med_world *w, uid_t uid, gid_t gid, const gid_t *groups, int ngroups,
                           uint32_t *len)
{
    const struct med_views *m = w->views;
    const struct med_vgpus *all = w->vgpus;
    struct vgpu_compute_header h = { .interval_ms = m->interval_ms, .intervals = m->intervals };
    size_t ndevs = 0, nprocs = 0;
    for (int i = 0; i < all->n; i++) {
        const struct med_vgpu *v = all->v[i];
        if (!med_status_visible(v, uid, gid, groups, ngroups))
            continue;
        ndevs += v->regs.device_count;
        nprocs += (size_t)v->nadm * v->regs.device_count;
    }
    uint8_t *out = calloc(1, sizeof(h) + ndevs * sizeof(struct vgpu_compute_device) +
                                 nprocs * sizeof(struct vgpu_compute_proc));
    if (!out)
        return NULL;
    uint8_t *q = out + sizeof(h);
    for (int i = 0; i < all->n && h.ndevs < VGPU_COMPUTE_MAX_DEVICES; i++) {
        const struct med_vgpu *v = all->v[i];
        if (!med_status_visible(v, uid, gid, groups, ngroups))
            continue;
        for (uint32_t d = 0; d < v->regs.device_count && d < VGPU_STATUS_MAX_DEVICES; d++) {
            struct vgpu_compute_device r;
            fill_device(m, v, d, &r);
            memcpy(q, &r, sizeof(r));
            q += sizeof(r);
            h.ndevs++;
        }
    }
    for (int i = 0; i < all->n; i++) {
        const struct med_vgpu *v = all->v[i];
        if (v->conf.guest || !med_status_visible(v, uid, gid, groups, ngroups))
            continue;
        for (int k = 0; k < v->nadm; k++) {
            const struct med_admission *a = v->adm[k];
            for (uint32_t d = 0; med_vgpu_first_of_pid(v, k) && d < v->regs.device_count && d < VGPU_STATUS_MAX_DEVICES &&
                                 h.nprocs < VGPU_COMPUTE_MAX_PROCS;
                 d++) {
                struct vgpu_compute_proc p = { .pid = (uint32_t)a->pid, .device = d,
                                               .gpu = v->gpu[d] ? v->gpu[d]->index : UINT32_MAX,
                                               .flags = a->use[d].measured ? VGPU_COMPUTE_MEASURED : 0,
                                               .utilization = a->use[d].utilization };
                vgpu_proto_copy_string(p.vgpu, sizeof(p.vgpu), v->conf.name);
                memcpy(q, &p, sizeof(p));
                q += sizeof(p);
                h.nprocs++;
            }
        }
    }
    memcpy(out, &h, sizeof(h));
    *len = (uint32_t)(q - out);
    return out;
}
