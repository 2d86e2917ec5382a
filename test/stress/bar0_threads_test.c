/*
 * The threads of one process share its BAR0 slot, and so its busy word
 * (docs/reference/bar0.md, "Rebuild").  One thread is paused between its two updates:
 * it has moved the vGPU's memory_used, not yet its slot's held word.
 * Meanwhile another thread of the process takes and gives memory, and a
 * rebuild runs (as every reap does, after a refused allocation): it must
 * leave the counter alone, or the paused thread's bytes are counted once in
 * held and never in memory_used, and the vGPU's processes can hold more
 * than its quota.  Found by quota_exact_after_32_threads_churn under
 * ThreadSanitizer, whose slower threads widen that pause.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "test/stress/anon_window.h"

#define MiB (1ull << 20)

int main(void)
{
    struct vgpu_bar0 *b = anon_window();
    if (!b)
        return 1;
    int pid = getpid();
    struct vgpu_bar0_map map = { .bar = b, .fd = -1, .pid = pid, .owner = VGPU_BAR0_OWNER(pid, VGPU_PROC_LIVE) };
    map.slot = vgpu_bar0_claim_slot(b, pid, vgpu_proc_start_time(pid));
    struct vgpu_bar0_proc *slot = &b->procs[map.slot];
    vgpu_bar0_take(&map, 0, 256 * MiB, 0);

    /* Thread 1, paused between its updates: busy counted, memory_used moved. */
    atomic_fetch_add(&slot->busy, 1);
    atomic_fetch_add(&b->status.device[0].memory_used, 8 * MiB);
    /* Thread 2 allocates and frees; then a reap rebuilds. */
    vgpu_bar0_take(&map, 0, 1 * MiB, 0);
    vgpu_bar0_give(&map, 0, 1 * MiB);
    bool rebuilt = vgpu_bar0_rebuild(b) >= 0;
    uint64_t during = atomic_load(&b->status.device[0].memory_used);
    /* Thread 1 finishes. */
    atomic_fetch_add(&slot->held[0], 8 * MiB);
    atomic_fetch_sub(&slot->busy, 1);

    uint64_t used = atomic_load(&b->status.device[0].memory_used), held = atomic_load(&slot->held[0]);
    printf("rebuild %s; memory_used %llu MiB while thread 1 was paused, then %llu MiB; the slot holds %llu MiB\n",
           rebuilt ? "ran" : "waited", (unsigned long long)(during / MiB), (unsigned long long)(used / MiB),
           (unsigned long long)(held / MiB));
    if (used != 264 * MiB || held != used) {
        fprintf(stderr, "FAIL: memory_used %llu, the slot holds %llu, want both %llu: the rebuild took the counter "
                "from under a thread that was moving it\n", (unsigned long long)used, (unsigned long long)held,
                (unsigned long long)(264 * MiB));
        return 1;
    }
    /* Both threads done: a rebuild may run, and finds nothing to mend. */
    if (vgpu_bar0_rebuild(b) != 0 || atomic_load(&b->status.device[0].memory_used) != 264 * MiB) {
        fprintf(stderr, "FAIL: with no thread busy, the rebuild did not run or changed an exact counter\n");
        return 1;
    }
    printf("ok - the rebuild waited for every thread of the slot\n");
    return 0;
}
