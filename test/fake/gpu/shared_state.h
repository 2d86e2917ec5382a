/*
 * The table that processes share (state.c maps it), private to this
 * folder: the libraries reach it through fakegpu.h.  One slot per process
 * with what it holds and used on each device; each device's device time
 * and turn.
 */
#ifndef FAKEGPU_SHARED_STATE_H
#define FAKEGPU_SHARED_STATE_H

#include "test/fake/gpu/busy.h"
#include "test/fake/gpu/fakegpu.h"
#include "test/fake/gpu/turn.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct proc_slot {
    int pid; /* 0: free */
    unsigned long long start_time;
    unsigned long long used[FAKEGPU_MAX_DEVICES];
    struct fakegpu_busy busy[FAKEGPU_MAX_DEVICES]; /* device time this process used */
};

struct shared_state {
    uint32_t init;
    uint32_t magic;
    uint32_t version;
    uint32_t size;
    pthread_mutex_t lock; /* guards procs and busy; not turns, which are lock-free */
    struct proc_slot procs[FAKEGPU_MAX_PROCS];
    struct fakegpu_busy busy[FAKEGPU_MAX_DEVICES]; /* device time all processes used */
    struct fakegpu_turn turns[FAKEGPU_MAX_DEVICES];
};

/* state.c */
/* The state of this process: FAKEGPU_STATE's file, or the private one;
 * NULL when unusable. */
FAKEGPU_HIDDEN struct shared_state *fakegpu_state_get(void);
/* The state, its lock taken (NULL when unusable); fakegpu_unlock_state
 * gives the lock back. */
FAKEGPU_HIDDEN struct shared_state *fakegpu_lock_state(void);
FAKEGPU_HIDDEN void fakegpu_unlock_state(struct shared_state *st);
/* In a forked child: the lock of the mapping, which a thread of the parent
 * may have held at fork. */
FAKEGPU_HIDDEN void fakegpu_state_after_fork_child(void);

/* processes.c */
/* Whether a slot is this process's own, and whether its process lives. */
FAKEGPU_HIDDEN bool fakegpu_slot_is_self(const struct proc_slot *slot);
FAKEGPU_HIDDEN bool fakegpu_slot_alive(const struct proc_slot *slot);

#endif /* FAKEGPU_SHARED_STATE_H */
