/*
 * The time-slicing of a physical device between processes: a FIFO ticket
 * lock in the shared state (see turn.h).
 *
 * serving holds the ticket whose turn it is, shifted left by one; its low
 * bit says that the owner took the turn.  Both a release and a skip are a
 * compare-and-swap on that word, so a turn is never given twice.  A waiter
 * sleeps on the word (FUTEX_WAIT, shared: the state may be a file mapping
 * several processes share) for at most CHECK_AFTER_NS at a time; a turn
 * that has not moved for that long is looked at: a dead owner's turn is
 * skipped at once, one that nobody took after UNCLAIMED_GRACE_NS (its owner
 * died before writing its entry, or exec'd) too.  A waiter whose own ticket
 * was skipped meanwhile queues again.
 */
#define _GNU_SOURCE
#include "test/fake/gpu/turn.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define TICKET_MASK 0x7fffffffu
#define CHECK_AFTER_NS (50ull * 1000 * 1000)
#define UNCLAIMED_GRACE_NS (1000ull * 1000 * 1000)

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static long futex(uint32_t *word, int op, uint32_t val, const struct timespec *timeout)
{
    return syscall(SYS_futex, word, op, val, timeout, NULL, 0);
}

/* a - b on the circle of 31-bit tickets: > 0 when a comes after b. */
static int32_t ticket_distance(uint32_t a, uint32_t b)
{
    return (int32_t)(((a - b) & TICKET_MASK) << 1) >> 1;
}

static void wake_waiters(struct fakegpu_turn *t)
{
    if (__atomic_load_n(&t->waiters, __ATOMIC_SEQ_CST))
        futex(&t->serving, FUTEX_WAKE, INT_MAX, NULL);
}

/* Passes the turn in word on to the next ticket, unless it moved meanwhile. */
static void skip(struct fakegpu_turn *t, uint32_t word)
{
    uint32_t next = (((word >> 1) + 1) & TICKET_MASK) << 1;
    if (__atomic_compare_exchange_n(&t->serving, &word, next, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        wake_waiters(t);
}

/* The turn in word has not moved for unchanged_ns: skip it if its owner is
 * gone, or if nobody took it within the grace period. */
static void check_stuck(struct fakegpu_turn *t, uint32_t word, uint64_t unchanged_ns)
{
    uint32_t ticket = word >> 1;
    const __typeof__(t->owner[0]) *o = &t->owner[ticket % FAKEGPU_TURN_RING];
    int known = __atomic_load_n(&o->ticket, __ATOMIC_ACQUIRE) == ticket;
    if (known && !fakegpu_process_alive(o->pid, o->start_time))
        skip(t, word);
    else if (!(word & 1) && unchanged_ns >= UNCLAIMED_GRACE_NS)
        skip(t, word);
}

/* Waits until ticket's turn and takes it: 1, or 0 when the ticket was
 * skipped (its owner looked gone) and must be queued again. */
static int await(struct fakegpu_turn *t, uint32_t ticket)
{
    uint32_t seen = UINT32_MAX;
    uint64_t seen_since = 0;
    for (;;) {
        uint32_t word = __atomic_load_n(&t->serving, __ATOMIC_SEQ_CST);
        if (word >> 1 == ticket) {
            if (word & 1)
                return 0; /* taken under this number: the ticket circle wrapped */
            if (__atomic_compare_exchange_n(&t->serving, &word, word | 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
                return 1;
            continue;
        }
        if (ticket_distance(word >> 1, ticket) > 0)
            return 0;
        uint64_t now = now_ns();
        if (word != seen) {
            seen = word;
            seen_since = now;
        } else if (now - seen_since >= CHECK_AFTER_NS) {
            check_stuck(t, word, now - seen_since);
        }
        __atomic_add_fetch(&t->waiters, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&t->serving, __ATOMIC_SEQ_CST) == word) {
            const struct timespec timeout = { 0, (long)CHECK_AFTER_NS };
            futex(&t->serving, FUTEX_WAIT, word, &timeout);
        }
        __atomic_sub_fetch(&t->waiters, 1, __ATOMIC_SEQ_CST);
    }
}

uint32_t fakegpu_turn_take(struct fakegpu_turn *t)
{
    int pid = fakegpu_self_pid();
    uint64_t start_time = fakegpu_self_start_time();
    for (;;) {
        uint32_t ticket = __atomic_fetch_add(&t->next, 1, __ATOMIC_SEQ_CST) & TICKET_MASK;
        __typeof__(t->owner[0]) *o = &t->owner[ticket % FAKEGPU_TURN_RING];
        __atomic_store_n(&o->pid, pid, __ATOMIC_RELAXED);
        __atomic_store_n(&o->start_time, start_time, __ATOMIC_RELAXED);
        __atomic_store_n(&o->ticket, ticket, __ATOMIC_RELEASE);
        if (__atomic_load_n(&t->holder_waits, __ATOMIC_SEQ_CST)) /* let it preempt its kernel */
            futex(&t->next, FUTEX_WAKE, INT_MAX, NULL);
        if (await(t, ticket))
            return ticket;
    }
}

int fakegpu_turn_wanted(const struct fakegpu_turn *t, uint32_t ticket)
{
    return (__atomic_load_n(&t->next, __ATOMIC_SEQ_CST) & TICKET_MASK) != ((ticket + 1) & TICKET_MASK);
}

int fakegpu_turn_await_wanted(struct fakegpu_turn *t, uint32_t ticket, uint64_t until_ns)
{
    const struct timespec until = { (time_t)(until_ns / 1000000000ull), (long)(until_ns % 1000000000ull) };
    for (;;) {
        uint32_t next = __atomic_load_n(&t->next, __ATOMIC_SEQ_CST);
        if ((next & TICKET_MASK) != ((ticket + 1) & TICKET_MASK))
            return 1;
        if (now_ns() >= until_ns)
            return 0;
        __atomic_store_n(&t->holder_waits, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&t->next, __ATOMIC_SEQ_CST) == next)
            syscall(SYS_futex, &t->next, FUTEX_WAIT_BITSET, next, &until, NULL, FUTEX_BITSET_MATCH_ANY);
        __atomic_store_n(&t->holder_waits, 0, __ATOMIC_SEQ_CST);
    }
}

void fakegpu_turn_give(struct fakegpu_turn *t, uint32_t ticket)
{
    uint32_t held = ticket << 1 | 1;
    if (__atomic_compare_exchange_n(&t->serving, &held, ((ticket + 1) & TICKET_MASK) << 1, 0, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST))
        wake_waiters(t);
}
