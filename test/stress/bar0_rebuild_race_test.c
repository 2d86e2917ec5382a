/*
 * Processes trade memory while a rebuild runs (as every reap does, after a
 * refused allocation): a thread in each of four slots takes 1 MiB and
 * gives it back, over and over, and another thread rebuilds.  Nothing dies
 * and nothing writes the window but them, so the counters are never wrong
 * and a rebuild must never correct them.  A rebuild that sums the slots
 * while they move (one slot read before it takes, another after it gives)
 * "corrects" the counter to sums of two moments, and until the next one the
 * vGPU's processes can hold more than its quota, or less.  Found by
 * quota_exact_after_4_processes_churn_and_zero_after_exit.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "test/stress/anon_window.h"

#define MiB (1ull << 20)
#define SLOTS 4
#define ROUNDS 1000000

static struct vgpu_bar0 *b;
static atomic_int trading = SLOTS;

static void *trade(void *arg)
{
    struct vgpu_bar0_map *m = arg;
    for (int i = 0; i < ROUNDS; i++) {
        vgpu_bar0_take(m, 0, MiB, 0);
        vgpu_bar0_give(m, 0, MiB);
    }
    atomic_fetch_sub(&trading, 1);
    return NULL;
}

int main(void)
{
    b = anon_window();
    if (!b)
        return 1;
    /* Four processes' slots (this process's pid, each with its own slot:
     * the rebuild never asks whether they live). */
    int pid = getpid();
    struct vgpu_bar0_map m[SLOTS];
    pthread_t t[SLOTS];
    for (int i = 0; i < SLOTS; i++) {
        m[i] = (struct vgpu_bar0_map){ .bar = b, .fd = -1, .pid = pid,
                                       .owner = VGPU_BAR0_OWNER(pid, VGPU_PROC_LIVE) };
        m[i].slot = vgpu_bar0_claim_slot(b, pid, vgpu_proc_start_time(pid));
        vgpu_bar0_take(&m[i], 0, (uint64_t)(i + 1) * 64 * MiB, 0); /* what each holds throughout */
    }
    for (int i = 0; i < SLOTS; i++)
        if (pthread_create(&t[i], NULL, trade, &m[i]) != 0) {
            perror("pthread_create");
            return 1;
        }
    unsigned long tries = 0, ran = 0, corrections = 0;
    while (atomic_load(&trading) > 0) {
        int r = vgpu_bar0_rebuild(b);
        tries++;
        ran += r >= 0;
        corrections += r > 0 ? (unsigned long)r : 0;
    }
    for (int i = 0; i < SLOTS; i++)
        pthread_join(t[i], NULL);
    uint64_t used = atomic_load(&b->status.device[0].memory_used), want = (1 + 2 + 3 + 4) * 64 * MiB;
    printf("%lu rebuilds tried while %d slots traded 1 MiB %d times each: %lu ran, %lu corrected a counter; "
           "memory_used %llu MiB, want %llu\n", tries, SLOTS, ROUNDS, ran, corrections,
           (unsigned long long)(used / MiB), (unsigned long long)(want / MiB));
    int failed = 0;
    if (corrections) {
        fprintf(stderr, "FAIL: %lu rebuilds corrected counters that nothing had made wrong: they summed slots "
                "that moved while they read them\n", corrections);
        failed = 1;
    }
    /* Before any further rebuild: a wrong correction that no later one
     * undid shows here too. */
    if (used != want) {
        fprintf(stderr, "FAIL: memory_used %llu, the slots hold %llu\n", (unsigned long long)used,
                (unsigned long long)want);
        failed = 1;
    }
    if (vgpu_bar0_rebuild(b) != 0) {
        fprintf(stderr, "FAIL: with every thread done, a rebuild did not run, or corrected an exact counter\n");
        failed = 1;
    }
    if (!failed)
        printf("ok - a rebuild sums the slots of one moment\n");
    return failed;
}
