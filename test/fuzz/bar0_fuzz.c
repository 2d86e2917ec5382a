/*
 * libFuzzer target: BAR0 windows as a process meets them in a file it did
 * not write (common/contract/window/bar0.c): the validator, then what every reader
 * does with a window it accepted (the config's strings and limits, the
 * process table, the counters' rebuild).  The input is the start of a
 * window (the rest zero); its first byte picks the file size the validator
 * is told (the window's own, or the input's).  An accepted window that a
 * reader overruns or loops on is a finding too.
 */
#include "common/contract/window/bar0.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct vgpu_bar0 *b;
    if (!b && !(b = aligned_alloc(4096, sizeof(*b))))
        return 0;
    memset(b, 0, sizeof(*b));
    if (size == 0)
        return 0;
    uint64_t file_size = data[0] & 1 ? size - 1 : sizeof(*b);
    size_t n = size - 1 < sizeof(*b) ? size - 1 : sizeof(*b);
    memcpy(b, data + 1, n);
    char err[512];
    if (vgpu_bar0_validate(b, file_size, err, sizeof(err)) != 0)
        return 0;
    size_t sum = strlen(b->header.name);
    for (uint32_t d = 0; d < b->config.device_count; d++)
        sum += strlen(b->config.device[d].physical) + strlen(b->config.device[d].name) +
               (size_t)vgpu_bar0_limit(b, (int)d);
    sum += vgpu_bar0_live_slots(b);
    if (vgpu_bar0_rebuild(b) < 0)
        return 0; /* a change was under way: nothing to check */
    for (int d = 0; d < VGPU_MAX_DEVICES; d++) {
        uint64_t held = 0;
        for (int i = 0; i < VGPU_BAR0_MAX_PROCS; i++)
            if (VGPU_BAR0_OWNER_STATE(atomic_load(&b->procs[i].owner)) == VGPU_PROC_LIVE)
                held += atomic_load(&b->procs[i].held[d]);
        /* The rebuild ran: each counter is now what the live slots hold. */
        if (atomic_load(&b->status.device[d].memory_used) != held)
            __builtin_trap();
    }
    return sum == (size_t)-1;
}
