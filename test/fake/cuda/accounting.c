/*
 * The device memory this process holds on each device (allocations,
 * contexts, pools), charged to the shared state (../gpu/usage.c) and
 * reported by the exported fakegpu_used().
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

/* Owned by this file, atomic. */
static unsigned long long g_used[FAKEGPU_MAX_DEVICES]; /* this process */

unsigned long long fakegpu_used(int dev);

/* Device memory this process holds on dev (allocations, contexts, pools). */
unsigned long long fakegpu_used(int dev)
{
    if (dev < 0 || dev >= FAKEGPU_MAX_DEVICES)
        return 0;
    return __atomic_load_n(&g_used[dev], __ATOMIC_RELAXED);
}

/* Takes bytes of device memory; -1 when the device is full. */
int fake_charge(int dev, unsigned long long bytes)
{
    if (bytes == 0)
        return 0;
    if (fakegpu_state_charge(fake_physical_device(dev), bytes) != 0)
        return -1;
    __atomic_add_fetch(&g_used[dev], bytes, __ATOMIC_RELAXED);
    return 0;
}

void fake_uncharge(int dev, unsigned long long bytes)
{
    if (bytes == 0)
        return;
    fakegpu_state_uncharge(fake_physical_device(dev), bytes);
    __atomic_sub_fetch(&g_used[dev], bytes, __ATOMIC_RELAXED);
}
