/* The quota step every allocation path shares; see quota.h. */
#include "vgpu_backend/memory/quota.h"

#include "common/log.h"

#include <stdatomic.h>

#define MAX_RECOUNTS 4

/* Registered by the reserves as they first count something; owned by this
 * file (slots are filled once, never cleared). */
static _Atomic(vgpu_quota_recount) recounts[MAX_RECOUNTS];

void vgpu_quota_add_recount(vgpu_quota_recount fn)
{
    for (int i = 0; i < MAX_RECOUNTS; i++) {
        vgpu_quota_recount seen = NULL;
        if (atomic_compare_exchange_strong(&recounts[i], &seen, fn) || seen == fn)
            return;
    }
}

bool vgpu_quota_take(struct vgpu_self *self, int vdev, uint64_t bytes, const char *what)
{
    if (!vgpu_self_check(self))
        return false; /* refused: said once, when it happened */
    struct vgpu_bar0_map *m = &self->bar0;
    uint64_t limit = vgpu_self_total(self, vdev);
    /* Dead processes' bytes matter only when they would make this fail. */
    if (vgpu_bar0_take(m, vdev, bytes, limit))
        return true;
    /* Before refusing: memory of processes that died, reserves left idle. */
    vgpu_bar0_reap(m->bar, true);
    for (int i = 0; i < MAX_RECOUNTS; i++) {
        vgpu_quota_recount fn = atomic_load(&recounts[i]);
        if (fn)
            fn(self);
    }
    if (vgpu_bar0_take(m, vdev, bytes, limit))
        return true;
    __atomic_fetch_add(&m->bar->status.device[vdev].refusals, 1, __ATOMIC_RELAXED);
    if (vgpu_log_enabled(VGPU_LOG_INFO)) {
        char want[32], left[32], total[32];
        uint64_t used = vgpu_self_used(self, vdev);
        vgpu_info("vGPU %s device %d: %s of %s refused: %s left of its %s quota", m->path, vdev, what,
                  vgpu_format_size(bytes, want, sizeof(want)),
                  vgpu_format_size(used < limit ? limit - used : 0, left, sizeof(left)),
                  vgpu_format_size(limit, total, sizeof(total)));
    }
    return false;
}
