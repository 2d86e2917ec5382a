/* The channels' layout, for guest and host alike (channels.h). */
#define _GNU_SOURCE
#include "forwarder/remote/transport/channels.h"

#include "common/clock.h"
#include "common/error.h"

#include <string.h>
#include <sys/random.h>

bool vgpu_beat_stale(struct vgpu_beat_watch *b, const uint64_t *w, uint64_t timeout_ns)
{
    uint64_t v = __atomic_load_n(w, __ATOMIC_RELAXED), now = vgpu_now_ns();
    if (!b->when_ns || v != b->seen) {
        b->seen = v;
        b->when_ns = now;
        return false;
    }
    return now - b->when_ns > timeout_ns;
}

bool vgpu_channels_check(struct vgpu_channels *c, void *base, size_t length)
{
    const struct vgpu_channels_header *h = base;
    if (length < 2 * VGPU_CHANNELS_PAGE || __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != VGPU_CHANNELS_MAGIC ||
        h->version != VGPU_CHANNELS_VERSION)
        return false;
    /* Read once: the other side may change them (a host's are checked by
     * the guest as a guest's by the host). */
    uint32_t count = h->count;
    uint64_t bytes = h->channel_bytes;
    if (!count || count > VGPU_CHANNELS_MAX || bytes < 4 * VGPU_CHANNELS_PAGE || bytes % VGPU_CHANNELS_PAGE ||
        bytes > (length - VGPU_CHANNELS_PAGE) / count || !memchr(h->vgpu, 0, sizeof(h->vgpu)))
        return false;
    *c = (struct vgpu_channels){ .base = base, .length = length, .count = count, .channel_bytes = bytes };
    return true;
}

int vgpu_channels_format(struct vgpu_channels *c, void *base, size_t length, uint32_t count, const char *name,
                         char *err, size_t errlen)
{
    if (!count || count > VGPU_CHANNELS_MAX || length < VGPU_CHANNELS_PAGE)
        return vgpu_fail(err, errlen, "%u channels: from 1 to %u", count, VGPU_CHANNELS_MAX);
    uint64_t bytes = (length - VGPU_CHANNELS_PAGE) / count / VGPU_CHANNELS_PAGE * VGPU_CHANNELS_PAGE;
    /* A control page, the ring's page and two streams of at least a page. */
    if (bytes < 4 * VGPU_CHANNELS_PAGE)
        return vgpu_fail(err, errlen, "%zu bytes hold no %u channels: each needs at least 16 KiB", length, count);
    struct vgpu_channels_header *h = base;
    __atomic_store_n(&h->magic, 0, __ATOMIC_RELEASE);
    uint64_t epoch = 0;
    while (!epoch && getrandom(&epoch, sizeof(epoch), 0) != (ssize_t)sizeof(epoch))
        epoch = vgpu_now_ns();
    *c = (struct vgpu_channels){ .base = base, .length = length, .count = count, .channel_bytes = bytes };
    for (uint32_t i = 0; i < count; i++)
        memset(vgpu_channel_ctl(c, i), 0, VGPU_CHANNELS_PAGE);
    h->version = VGPU_CHANNELS_VERSION;
    h->count = count;
    h->channel_bytes = bytes;
    h->epoch = epoch;
    memset(h->vgpu, 0, sizeof(h->vgpu));
    strncpy(h->vgpu, name ? name : "", sizeof(h->vgpu) - 1);
    __atomic_store_n(&h->magic, VGPU_CHANNELS_MAGIC, __ATOMIC_RELEASE);
    return 0;
}
