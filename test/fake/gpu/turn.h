/*
 * Whose turn it is on a physical device: the time-slicing of a GPU between
 * processes (without MPS, a GPU runs the kernels of one process at a time).
 *
 * A FIFO ticket lock in the shared state (state.c), so every process
 * sharing FAKEGPU_STATE queues for the same device and processes with work
 * queued alternate turn by turn.  It survives its holders: a process that
 * dies holding or awaiting a turn (or forgets it, by exec) is skipped.
 * Waiting sleeps on a futex; it never spins.
 */
#ifndef FAKEGPU_TURN_H
#define FAKEGPU_TURN_H

#include "test/fake/gpu/fakegpu.h"

#include <stdint.h>

/* More than the tickets that can be outstanding at once: one per process
 * using the device (each has one executor per device). */
#define FAKEGPU_TURN_RING 256

struct fakegpu_turn {
    uint32_t next;         /* the next ticket to hand out */
    uint32_t serving;      /* futex word: ticket whose turn it is << 1 | 1 once its owner took it */
    uint32_t waiters;      /* threads asleep on serving: only then does a release call futex_wake */
    uint32_t holder_waits; /* the holder sleeps on next until someone else asks for a turn */
    uint64_t clock_ns;     /* device time (CLOCK_MONOTONIC): when the last kernel run here ends */
    struct {
        uint32_t ticket;     /* the ticket this entry describes */
        int32_t pid;         /* its owner */
        uint64_t start_time; /* the owner's start time, against pid reuse */
    } owner[FAKEGPU_TURN_RING];
};

/* Waits for this process's turn (FIFO among all waiters) and takes it.
 * Returns the ticket to give back. */
FAKEGPU_HIDDEN uint32_t fakegpu_turn_take(struct fakegpu_turn *t);

/* Whether another turn was asked for since ticket's. */
FAKEGPU_HIDDEN int fakegpu_turn_wanted(const struct fakegpu_turn *t, uint32_t ticket);

/* For the holder of ticket: sleeps until another turn is asked for (1) or
 * until CLOCK_MONOTONIC until_ns (0), whichever comes first. */
FAKEGPU_HIDDEN int fakegpu_turn_await_wanted(struct fakegpu_turn *t, uint32_t ticket, uint64_t until_ns);

/* Ends the turn ticket; the next waiter's turn begins. */
FAKEGPU_HIDDEN void fakegpu_turn_give(struct fakegpu_turn *t, uint32_t ticket);

#endif /* FAKEGPU_TURN_H */
