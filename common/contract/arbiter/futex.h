/*
 * Waiting for a word of shared memory to change, across processes: the
 * compute share's waiters sleep on their grant (sched_client.c), and
 * whoever changes it wakes them.  Not the private futexes: the word is in
 * memory other processes map (BAR0, the standalone page).
 */
#pragma once

#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Sleeps while *word == seen, at most timeout_ns (or until woken). */
static inline void vgpu_futex_wait(_Atomic uint32_t *word, uint32_t seen, uint64_t timeout_ns)
{
    struct timespec ts = { .tv_sec = (time_t)(timeout_ns / 1000000000u), .tv_nsec = (long)(timeout_ns % 1000000000u) };
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT, seen, &ts, NULL, 0);
}

static inline void vgpu_futex_wake_all(_Atomic uint32_t *word)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}
