/*
 * What each process uses of each device, in the shared state (state.c):
 * the device memory it holds and the device time its kernels took, for the
 * fake NVML to report as the real one does.
 */
#include "test/fake/gpu/shared_state.h"

#include <stdbool.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Accounting                                                               */

static bool valid_device(int dev)
{
    return dev >= 0 && dev < FAKEGPU_MAX_DEVICES;
}

/* Clears the slot if its process is gone; returns whether it is in use. */
static bool slot_live_locked(struct proc_slot *slot)
{
    if (slot->pid == 0)
        return false;
    if (fakegpu_slot_alive(slot))
        return true;
    memset(slot, 0, sizeof *slot);
    return false;
}

static unsigned long long device_used_locked(struct shared_state *st, int dev)
{
    unsigned long long used = 0;
    for (int i = 0; i < FAKEGPU_MAX_PROCS; i++)
        if (slot_live_locked(&st->procs[i]))
            used += st->procs[i].used[dev];
    return used;
}

static struct proc_slot *own_slot_locked(struct shared_state *st, bool create)
{
    for (int i = 0; i < FAKEGPU_MAX_PROCS; i++)
        if (fakegpu_slot_is_self(&st->procs[i]))
            return &st->procs[i];
    if (!create)
        return NULL;
    for (int i = 0; i < FAKEGPU_MAX_PROCS; i++) {
        struct proc_slot *slot = &st->procs[i];
        if (!slot_live_locked(slot)) {
            slot->pid = fakegpu_self_pid();
            slot->start_time = fakegpu_self_start_time();
            return slot;
        }
    }
    return NULL;
}

int fakegpu_state_charge(int dev, unsigned long long bytes)
{
    if (!valid_device(dev))
        return -1;
    struct shared_state *st = fakegpu_lock_state();
    if (!st)
        return -1;

    int rc = -1;
    unsigned long long total = fakegpu_config()->memory;
    unsigned long long used = device_used_locked(st, dev);
    if (used <= total && bytes <= total - used) {
        struct proc_slot *slot = own_slot_locked(st, true);
        if (slot) {
            slot->used[dev] += bytes;
            rc = 0;
        }
    }
    fakegpu_unlock_state(st);
    return rc;
}

void fakegpu_state_uncharge(int dev, unsigned long long bytes)
{
    if (!valid_device(dev))
        return;
    struct shared_state *st = fakegpu_lock_state();
    if (!st)
        return;
    struct proc_slot *slot = own_slot_locked(st, false);
    if (slot)
        slot->used[dev] -= bytes < slot->used[dev] ? bytes : slot->used[dev];
    fakegpu_unlock_state(st);
}

unsigned long long fakegpu_state_device_used(int dev)
{
    if (!valid_device(dev))
        return 0;
    struct shared_state *st = fakegpu_lock_state();
    if (!st)
        return 0;
    unsigned long long used = device_used_locked(st, dev);
    fakegpu_unlock_state(st);
    return used;
}

/* What each live process shows for dev, those that show 0 left out: at
 * most cap of them in out; returns how many there are.  Called with the
 * state locked. */
static unsigned list_locked(struct shared_state *st, int dev,
                            unsigned long long (*figure)(const struct proc_slot *, int dev, unsigned long long now_ns),
                            unsigned long long now_ns, struct fakegpu_proc_figure *out, unsigned cap)
{
    unsigned count = 0;
    for (int i = 0; i < FAKEGPU_MAX_PROCS; i++) {
        struct proc_slot *slot = &st->procs[i];
        unsigned long long value = slot_live_locked(slot) ? figure(slot, dev, now_ns) : 0;
        if (value == 0)
            continue;
        if (count < cap)
            out[count] = (struct fakegpu_proc_figure){ slot->pid, value };
        count++;
    }
    return count;
}

static unsigned long long memory_held(const struct proc_slot *slot, int dev, unsigned long long now_ns)
{
    (void)now_ns;
    return slot->used[dev];
}

unsigned fakegpu_state_processes(int dev, struct fakegpu_proc_figure *out, unsigned cap)
{
    if (!valid_device(dev))
        return 0;
    struct shared_state *st = fakegpu_lock_state();
    if (!st)
        return 0;
    unsigned count = list_locked(st, dev, memory_held, 0, out, cap);
    fakegpu_unlock_state(st);
    return count;
}

/* ------------------------------------------------------------------------ */
/* Device time                                                              */

struct fakegpu_turn *fakegpu_state_turn(int dev)
{
    struct shared_state *st = valid_device(dev) ? fakegpu_state_get() : NULL;
    return st ? &st->turns[dev] : NULL;
}

void fakegpu_state_record_busy(int dev, unsigned long long start_ns, unsigned long long end_ns)
{
    if (!valid_device(dev) || end_ns <= start_ns)
        return;
    struct shared_state *st = fakegpu_lock_state();
    if (!st)
        return;
    fakegpu_busy_add(&st->busy[dev], start_ns, end_ns);
    struct proc_slot *slot = own_slot_locked(st, true);
    if (slot)
        fakegpu_busy_add(&slot->busy[dev], start_ns, end_ns);
    fakegpu_unlock_state(st);
}

static unsigned long long time_used(const struct proc_slot *slot, int dev, unsigned long long now_ns)
{
    return fakegpu_busy_window(&slot->busy[dev], now_ns);
}

unsigned fakegpu_state_busy(int dev, unsigned long long now_ns, unsigned long long *device_ns,
                            struct fakegpu_proc_figure *out, unsigned cap)
{
    *device_ns = 0;
    if (!valid_device(dev))
        return 0;
    struct shared_state *st = fakegpu_lock_state();
    if (!st)
        return 0;
    *device_ns = fakegpu_busy_window(&st->busy[dev], now_ns);
    unsigned count = list_locked(st, dev, time_used, now_ns, out, cap);
    fakegpu_unlock_state(st);
    return count;
}
