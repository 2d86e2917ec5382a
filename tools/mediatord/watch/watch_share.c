/* The watch's check of the compute share; see watch_share.h. */
#define _GNU_SOURCE
#include "tools/mediatord/watch/watch_share.h"

#include "tools/mediatord/watch/watch.h"

_Static_assert(MED_SHARE_READINGS <= 16, "the readings' findings are the bits of a uint16_t");

/* Did v's processes use GPU device d in the latest reading? */
static bool used(const struct med_vgpu *v, int d)
{
    for (int k = 0; k < v->nadm; k++)
        if (med_vgpu_first_of_pid(v, k) && v->adm[k]->use[d].latest >= MED_SHARE_MIN_PERMILLE)
            return true;
    return false;
}

/* v's device d on GPU gi, over the reading from from_ns. */
static void judge(struct med_world *world, const struct med_sched *s, int gi, struct med_vgpu *v, int d,
                  uint64_t from_ns, uint64_t now_ms)
{
    struct med_compute_use *use = &v->use[d];
    uint64_t since = from_ns - MED_SHARE_MARGIN_NS, held = 0;
    bool judged = use->measured && from_ns > MED_SHARE_MARGIN_NS &&
                  med_sched_arbitrated_since(s, gi, v, d, since, &held);
    bool found = judged && held < since && used(v, d);
    use->unturned = (uint16_t)((use->unturned << 1 | found) & ((1u << MED_SHARE_READINGS) - 1));
    unsigned n = (unsigned)__builtin_popcount(use->unturned);
    if (!n) {
        med_watch_over_share_end(world->watch, gi, v->conf.name);
        return;
    }
    if (!found || n < MED_SHARE_FOUND)
        return;
    uint16_t share = (uint16_t)(v->regs.device[d].compute_share * 10);
    for (int k = 0; k < v->nadm; k++) {
        const struct med_admission *a = v->adm[k];
        if (med_vgpu_first_of_pid(v, k) && a->use[d].latest >= MED_SHARE_MIN_PERMILLE)
            med_watch_over_share(world->watch, world, gi, v->conf.name, a, a->use[d].latest, share, n,
                                 MED_SHARE_READINGS, now_ms);
    }
}

void med_watch_share_judge(struct med_world *world, const struct med_sched *s, int gi, uint64_t from_ns,
                           uint64_t now_ms)
{
    if (!world->watch)
        return;
    for (int i = 0; i < world->vgpus->n; i++) {
        struct med_vgpu *v = world->vgpus->v[i];
        for (uint32_t d = 0; !v->conf.guest && d < v->regs.device_count && d < VGPU_MAX_DEVICES; d++)
            if (v->gpu[d] && (int)(v->gpu[d] - world->watch->gpus->gpu) == gi)
                judge(world, s, gi, v, (int)d, from_ns, now_ms);
    }
}
