/*
 * CLUSTER: the vGPUs a requester may see, with what the device plugin
 * tells the kubelet of them: the class a vGPU was made from, whether a
 * container holds it, and its GPUs' health.
 */
#define _GNU_SOURCE
#include "tools/mediatord/clients/status.h"

#include "tools/mediatord/health/xid.h"

#include <stdlib.h>
#include <string.h>

uint8_t *med_cluster_build(const struct med_world *w, uid_t uid, gid_t gid, const gid_t *groups, int ngroups,
                           uint32_t *len)
{
    const struct med_vgpus *all = w->vgpus;
    struct vgpu_cluster_header h = { .generation = all->generation + med_health_generation(w->health) };
    uint8_t *out = malloc(sizeof(h) + (size_t)(all->n ? all->n : 1) * sizeof(struct vgpu_cluster_vgpu));
    if (!out)
        return NULL;
    uint8_t *q = out + sizeof(h);
    for (int i = 0; i < all->n && h.n < VGPU_CLUSTER_MAX; i++) {
        const struct med_vgpu *v = all->v[i];
        if (!med_status_visible(v, uid, gid, groups, ngroups))
            continue;
        struct vgpu_cluster_vgpu r = { .ndev = v->regs.device_count, .memory = v->conf.memory,
                                       .compute = v->conf.compute };
        vgpu_proto_copy_string(r.name, sizeof(r.name), v->conf.name);
        vgpu_proto_copy_string(r.cls, sizeof(r.cls), v->conf.cls);
        r.flags = (v->conf.cls[0] ? VGPU_CLUSTER_CONTAINERS : 0) | (v->bound[0] ? VGPU_CLUSTER_BOUND : 0) |
                  (v->retired ? VGPU_CLUSTER_RETIRED : 0) | (v->conf.guest ? VGPU_CLUSTER_GUEST : 0);
        for (int d = 0; d < v->conf.ndev && !r.xid; d++)
            if (v->gpu[d])
                r.xid = med_health_xid(w->health, v->gpu[d]->index);
        if (r.xid)
            r.flags |= VGPU_CLUSTER_UNHEALTHY;
        memcpy(q, &r, sizeof(r));
        q += sizeof(r);
        h.n++;
    }
    memcpy(out, &h, sizeof(h));
    *len = (uint32_t)(q - out);
    return out;
}
