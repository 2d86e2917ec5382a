/* This process's allocation records; see alloc_table.h. */
#include "vgpu_backend/memory/alloc_table.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define SHARDS 64 /* a power of two */

struct shard {
    _Atomic int lock;         /* a spinlock: held for a probe, rarely for a grow */
    struct vgpu_alloc *slots; /* capacity a power of two, at most 3/4 full */
    size_t cap, n;
} __attribute__((aligned(64)));

/* Owned by this file; each shard guarded by its own lock. */
static struct shard shards[SHARDS];

/* A spinlock, not a mutex: its release is a plain store, one atomic fewer
 * on every allocation and free; the shards keep contention rare, and a
 * waiter yields rather than spin on a preempted holder. */
static void lock(struct shard *s)
{
    while (atomic_exchange_explicit(&s->lock, 1, memory_order_acquire))
        for (int spins = 0; atomic_load_explicit(&s->lock, memory_order_relaxed); spins++)
            if (spins < 64)
                __builtin_ia32_pause();
            else
                sched_yield();
}

static void unlock(struct shard *s)
{
    atomic_store_explicit(&s->lock, 0, memory_order_release);
}

static uint64_t hash(enum vgpu_alloc_class cls, uintptr_t handle)
{
    uint64_t h = ((uint64_t)handle ^ ((uint64_t)cls << 61)) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 29);
}

static struct shard *shard_of(uint64_t h)
{
    return &shards[h & (SHARDS - 1)];
}

static size_t find(const struct shard *s, enum vgpu_alloc_class cls, uintptr_t handle, uint64_t h)
{
    size_t mask = s->cap - 1;
    for (size_t i = (h >> 6) & mask;; i = (i + 1) & mask)
        if (!s->slots[i].used || (s->slots[i].handle == handle && s->slots[i].cls == cls))
            return i;
}

static bool grow(struct shard *s)
{
    size_t cap = s->cap ? s->cap * 2 : 64;
    struct vgpu_alloc *old = s->slots, *slots = calloc(cap, sizeof(*slots));
    if (!slots)
        return false;
    size_t old_cap = s->cap;
    s->slots = slots;
    s->cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].used)
            s->slots[find(s, old[i].cls, old[i].handle, hash(old[i].cls, old[i].handle))] = old[i];
    free(old);
    return true;
}

/* Backward-shift deletion keeps probe chains whole without tombstones. */
static void erase(struct shard *s, size_t i)
{
    size_t mask = s->cap - 1;
    for (size_t j = (i + 1) & mask; s->slots[j].used; j = (j + 1) & mask) {
        size_t home = (hash(s->slots[j].cls, s->slots[j].handle) >> 6) & mask;
        /* Move j into the hole at i if its home is not in (i, j]. */
        if (((j - home) & mask) >= ((j - i) & mask)) {
            s->slots[i] = s->slots[j];
            i = j;
        }
    }
    s->slots[i].used = 0;
    s->n--;
}

int vgpu_alloc_put(const struct vgpu_alloc *a, struct vgpu_alloc *displaced)
{
    uint64_t h = hash((enum vgpu_alloc_class)a->cls, a->handle);
    struct shard *s = shard_of(h);
    int rc = 0;
    lock(s);
    if ((s->n + 1) * 4 > s->cap * 3 && !grow(s)) {
        rc = -1;
    } else {
        size_t i = find(s, (enum vgpu_alloc_class)a->cls, a->handle, h);
        if (s->slots[i].used) {
            *displaced = s->slots[i];
            rc = 1;
        } else {
            s->n++;
        }
        s->slots[i] = *a;
        s->slots[i].used = 1;
    }
    unlock(s);
    return rc;
}

bool vgpu_alloc_take(enum vgpu_alloc_class cls, uintptr_t handle, struct vgpu_alloc *out)
{
    uint64_t h = hash(cls, handle);
    struct shard *s = shard_of(h);
    bool found = false;
    lock(s);
    if (s->cap) {
        size_t i = find(s, cls, handle, h);
        if (s->slots[i].used) {
            *out = s->slots[i];
            erase(s, i);
            found = true;
        }
    }
    unlock(s);
    return found;
}

void vgpu_alloc_drop_context(void *ctx, void (*fn)(const struct vgpu_alloc *, void *), void *arg)
{
    for (int k = 0; k < SHARDS; k++) {
        struct shard *s = &shards[k];
        lock(s);
        for (size_t i = 0; i < s->cap;) {
            if (s->slots[i].used && s->slots[i].ctx == ctx) {
                struct vgpu_alloc a = s->slots[i];
                erase(s, i); /* may move a later record into i: look at i again */
                fn(&a, arg);
            } else {
                i++;
            }
        }
        unlock(s);
    }
}
