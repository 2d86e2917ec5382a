/*
 * Each device's queue in this process and the executor thread that runs it
 * on the device timeline (see timeline.h).
 *
 * Device time is virtual but never ahead of the wall clock: a kernel starts
 * at max(when it was queued, when the device's last kernel ended) and the
 * executor sleeps (clock_nanosleep to an absolute CLOCK_MONOTONIC deadline)
 * until it ends before marking it done.  An executor that wakes late does
 * not lose device time: the next kernel still starts where the last one
 * ended.  So the device does exactly the work it was given, at most 100% of
 * the time, however loaded the machine running the tests is.
 *
 * The executor holds the physical device's turn (turn.h) while its
 * kernels run.  When another process waits for the device, the turn ends
 * after FAKEGPU_TIMESLICE_NS of device time, preempting a kernel still
 * running (it resumes at the next turn), and the executor queues for it
 * again: processes with work alternate, whatever their kernels' lengths.
 */
#define _GNU_SOURCE
#include "test/fake/gpu/timeline.h"
#include "test/fake/gpu/turn.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

/* Operations a device holds before a launch blocks, about as many as the
 * driver's launch queue takes. */
#define QUEUE_DEPTH 1024
/* Operations in one turn, whatever their device time (zero-time kernels). */
#define TURN_MAX_OPS 1024
/* An executor that ran out of work looks again after this long before it
 * sleeps until a launch wakes it: a loop of tiny launches then wakes it once
 * per LINGER_NS instead of once per launch, and the launching thread makes
 * no system call. */
#define LINGER_NS (100ull * 1000)

enum executor_state {
    EXECUTOR_NONE,   /* not started (or a forked child's) */
    EXECUTOR_BUSY,   /* running operations */
    EXECUTOR_LINGER, /* out of work, looks again after LINGER_NS; a waiter wakes it */
    EXECUTOR_IDLE,   /* out of work, asleep until an operation is queued */
};

struct queue {
    pthread_mutex_t lock;
    pthread_cond_t work;          /* the executor waits here for operations */
    pthread_cond_t done;          /* waiters, and launchers of a full queue, wait here */
    struct fake_op *ring;         /* QUEUE_DEPTH entries; operation seq is at seq % QUEUE_DEPTH */
    unsigned long long submitted; /* operations 1..submitted were queued */
    unsigned long long completed; /* operations 1..completed are done */
    enum executor_state executor;
    bool started; /* the executor runs its own code: its thread's start-up (the C library's, a sanitizer's) is done */
    unsigned waiters;
    int phys;
    int used; /* set once (atomically): a queue never used is empty without locking it */
    /* The executor's own. */
    unsigned long long own_end_ns;  /* when this process's last operation ended */
    unsigned long long progress_ns; /* how much of a preempted kernel at the head has run */
};

/* Owned by this file: the queues of this process's devices, each guarded by
 * its lock (the executor alone writes own_end_ns). */
static struct queue g_queues[FAKEGPU_MAX_DEVICES];
/* A device's turn when the shared state is unusable: the process's own. */
static struct fakegpu_turn g_local_turns[FAKEGPU_MAX_DEVICES];
static pthread_once_t g_init_once = PTHREAD_ONCE_INIT;

unsigned long long fake_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static struct timespec timespec_of(unsigned long long ns)
{
    return (struct timespec){ (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
}

static void sleep_until(unsigned long long ns)
{
    struct timespec until = timespec_of(ns);
    while (fake_now_ns() < ns && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
        ;
}

void fake_launch_cost(unsigned long long since_ns)
{
    unsigned long long until = since_ns + fakegpu_config()->launch_ns;
    if (until - since_ns > 200000) { /* long enough to sleep through */
        sleep_until(until);
        return;
    }
    while (fake_now_ns() < until) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

static void init_sync(struct queue *q)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->work, &attr);
    pthread_cond_init(&q->done, &attr);
    pthread_condattr_destroy(&attr);
}

/* A forked child has none of its parent's threads: no executor, and the
 * parent's queued work is the parent's.  Its first launch starts its own. */
static void after_fork_child(void)
{
    for (int d = 0; d < FAKEGPU_MAX_DEVICES; d++) {
        struct queue *q = &g_queues[d];
        init_sync(q);
        q->executor = EXECUTOR_NONE;
        q->started = false;
        q->waiters = 0;
        q->completed = q->submitted;
    }
}

static void init_queues(void)
{
    for (int d = 0; d < FAKEGPU_MAX_DEVICES; d++)
        init_sync(&g_queues[d]);
    pthread_atfork(NULL, NULL, after_fork_child);
}

static struct queue *queue_of(int dev)
{
    pthread_once(&g_init_once, init_queues);
    return &g_queues[dev];
}

static int queue_used(int dev)
{
    return dev >= 0 && dev < FAKEGPU_MAX_DEVICES && __atomic_load_n(&g_queues[dev].used, __ATOMIC_ACQUIRE);
}

/* Called with q->lock held. */
static void complete_locked(struct queue *q, unsigned long long seq)
{
    q->completed = seq;
    if (q->waiters)
        pthread_cond_broadcast(&q->done);
}

/* Waits for the next completion.  Called with q->lock held. */
static void wait_done_locked(struct queue *q)
{
    if (q->executor == EXECUTOR_LINGER)
        pthread_cond_signal(&q->work); /* someone waits: no batching now */
    q->waiters++;
    pthread_cond_wait(&q->done, &q->lock);
    q->waiters--;
}

/* ---- the executor ---- */

static struct fakegpu_turn *turn_of(struct queue *q)
{
    struct fakegpu_turn *t = fakegpu_state_turn(q->phys);
    return t ? t : &g_local_turns[q->phys];
}

/* Device time used, counted in segments of contiguous kernels; a long one is
 * counted every BUSY_FLUSH_NS, so NVML sees a lone busy process at once. */
#define BUSY_FLUSH_NS (50ull * 1000 * 1000)

struct busy {
    unsigned long long start, end;
};

static void busy_flush(struct queue *q, struct busy *b)
{
    if (b->end > b->start)
        fakegpu_state_record_busy(q->phys, b->start, b->end);
    b->start = b->end = 0;
}

static void busy_add(struct queue *q, struct busy *b, unsigned long long start, unsigned long long end)
{
    if (start > b->end || b->end - b->start >= BUSY_FLUSH_NS) { /* the device idled, or enough to tell */
        busy_flush(q, b);
        b->start = start;
    }
    b->end = end;
}

/* A marker is reached when everything queued before it is done. */
static void run_marker(struct queue *q, const struct fake_op *op)
{
    if (op->submit_ns > q->own_end_ns)
        q->own_end_ns = op->submit_ns;
    op->mark(op->what, op->gen, q->own_end_ns);
}

/* What a turn holds while it runs. */
struct turn {
    struct fakegpu_turn *shared;
    uint32_t ticket;
    unsigned long long clock;     /* device time: the end of the last kernel run */
    unsigned long long slice_end; /* 0 until the turn's first kernel starts */
    struct busy busy;
};

/* Runs kernel op from where it stands (q->progress_ns of it has run) until
 * it ends: 1.  0 when another process waits and the timeslice ends first:
 * the kernel is preempted there, as the GPU's compute preemption does, and
 * resumes at the next turn. */
static int run_kernel(struct queue *q, struct turn *turn, const struct fake_op *op)
{
    const unsigned long long slice = fakegpu_config()->timeslice_ns;
    unsigned long long start = turn->clock > op->submit_ns ? turn->clock : op->submit_ns;
    if (q->own_end_ns > start)
        start = q->own_end_ns;
    if (!turn->slice_end) {
        turn->slice_end = start + slice;
    } else if (start >= turn->slice_end) {
        if (fakegpu_turn_wanted(turn->shared, turn->ticket))
            return 0;
        turn->slice_end = start + slice;
    }
    if (q->progress_ns == 0 && op->run)
        op->run(op->args);
    unsigned long long end = start + (op->ns - q->progress_ns);
    int preempted = 0;
    while (end > turn->slice_end && !preempted) {
        sleep_until(turn->slice_end);
        if (fakegpu_turn_wanted(turn->shared, turn->ticket)) {
            preempted = 1;
        } else if (fakegpu_turn_await_wanted(turn->shared, turn->ticket, end)) {
            /* Asked for while it ran alone: the slice under way is the last. */
            unsigned long long now = fake_now_ns();
            if (now > turn->slice_end)
                turn->slice_end += (now - turn->slice_end + slice - 1) / slice * slice;
        } else {
            turn->slice_end = end; /* it ran to its end alone */
        }
    }
    if (preempted)
        end = turn->slice_end;
    sleep_until(end);
    busy_add(q, &turn->busy, start, end);
    turn->clock = q->own_end_ns = end;
    __atomic_store_n(&turn->shared->clock_ns, end, __ATOMIC_RELAXED);
    q->progress_ns = preempted ? q->progress_ns + (end - start) : 0;
    return !preempted;
}

/* Runs op and the operations after it while the turn lasts: until the
 * queue is empty, or the timeslice is used while another process waits.
 * Called and returns without q->lock. */
static void run_turn(struct queue *q, const struct fake_op *op)
{
    struct turn turn = { .shared = turn_of(q) };
    turn.ticket = fakegpu_turn_take(turn.shared);
    turn.clock = __atomic_load_n(&turn.shared->clock_ns, __ATOMIC_RELAXED);
    for (unsigned ops = 1;; ops++) {
        if (op->mark)
            run_marker(q, op);
        else if (!run_kernel(q, &turn, op))
            break;
        pthread_mutex_lock(&q->lock);
        complete_locked(q, op->seq);
        int more = q->completed < q->submitted && (!fakegpu_turn_wanted(turn.shared, turn.ticket) ||
                                                   (turn.clock < turn.slice_end && ops < TURN_MAX_OPS));
        op = more ? &q->ring[(q->completed + 1) % QUEUE_DEPTH] : NULL;
        pthread_mutex_unlock(&q->lock);
        if (!op)
            break;
    }
    fakegpu_turn_give(turn.shared, turn.ticket);
    busy_flush(q, &turn.busy);
}

/* Returns when q has an operation to run.  Called with q->lock held. */
static void wait_for_work_locked(struct queue *q)
{
    if (q->completed == q->submitted) {
        q->executor = EXECUTOR_LINGER;
        struct timespec until = timespec_of(fake_now_ns() + LINGER_NS);
        while (q->completed == q->submitted && pthread_cond_timedwait(&q->work, &q->lock, &until) != ETIMEDOUT)
            ;
    }
    while (q->completed == q->submitted) {
        q->executor = EXECUTOR_IDLE;
        pthread_cond_wait(&q->work, &q->lock);
    }
    q->executor = EXECUTOR_BUSY;
}

static void *executor_main(void *arg)
{
    struct queue *q = arg;
    /* Sleeps end within a microsecond of their deadline, not the default 50. */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    pthread_mutex_lock(&q->lock);
    q->started = true;
    pthread_cond_broadcast(&q->done);
    for (;;) {
        wait_for_work_locked(q);
        /* Stays put until completed passes it: submitters wait for room. */
        const struct fake_op *op = &q->ring[(q->completed + 1) % QUEUE_DEPTH];
        pthread_mutex_unlock(&q->lock);
        if (op->mark) {
            run_marker(q, op);
            pthread_mutex_lock(&q->lock);
            complete_locked(q, op->seq);
        } else {
            run_turn(q, op);
            pthread_mutex_lock(&q->lock);
        }
    }
    return NULL;
}

/* Detached, with every signal blocked (they are the program's), so it
 * never holds up the exit of a process that leaves work queued.  Called
 * with q->lock held; 0, or -1 when no thread could be made. */
static int start_executor_locked(struct queue *q, int dev, int phys)
{
    if (!q->ring && !(q->ring = calloc(QUEUE_DEPTH, sizeof *q->ring)))
        return -1;
    q->phys = phys;
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0)
        return -1;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t thread;
    int rc = pthread_create(&thread, &attr, executor_main, q);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0)
        return -1;
    char name[16];
    snprintf(name, sizeof name, "fakegpu-dev%d", dev);
    pthread_setname_np(thread, name);
    q->executor = EXECUTOR_BUSY;
    __atomic_store_n(&q->used, 1, __ATOMIC_RELEASE);
    /* Until the thread runs its own code, its start-up may hold the
     * allocator's locks (AddressSanitizer's allocates there): a program that
     * forks right after its first launch would leave them held in its child,
     * and the child's own executor would never start. */
    while (!q->started)
        pthread_cond_wait(&q->done, &q->lock);
    return 0;
}

/* ---- the interface ---- */

CUresult fake_timeline_submit(int dev, int phys, const struct fake_op *op, unsigned long long *stream_last,
                              unsigned long long *seq_out)
{
    struct queue *q = queue_of(dev);
    pthread_mutex_lock(&q->lock);
    if (q->executor == EXECUTOR_NONE && start_executor_locked(q, dev, phys) != 0) {
        pthread_mutex_unlock(&q->lock);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    while (q->submitted - q->completed >= QUEUE_DEPTH)
        wait_done_locked(q);
    unsigned long long seq = ++q->submitted;
    struct fake_op *slot = &q->ring[seq % QUEUE_DEPTH];
    *slot = *op;
    slot->seq = seq;
    slot->submit_ns = fake_now_ns();
    __atomic_store_n(stream_last, seq, __ATOMIC_RELEASE);
    if (seq_out)
        *seq_out = seq;
    if (q->executor == EXECUTOR_IDLE)
        pthread_cond_signal(&q->work);
    pthread_mutex_unlock(&q->lock);
    return CUDA_SUCCESS;
}

int fake_timeline_done(int dev, unsigned long long seq)
{
    if (!queue_used(dev))
        return 1;
    struct queue *q = queue_of(dev);
    pthread_mutex_lock(&q->lock);
    int done = q->completed >= seq;
    if (!done && q->executor == EXECUTOR_LINGER)
        pthread_cond_signal(&q->work); /* someone polls: no batching now */
    pthread_mutex_unlock(&q->lock);
    return done;
}

void fake_timeline_wait(int dev, unsigned long long seq)
{
    if (!queue_used(dev))
        return;
    struct queue *q = queue_of(dev);
    pthread_mutex_lock(&q->lock);
    while (q->completed < seq)
        wait_done_locked(q);
    pthread_mutex_unlock(&q->lock);
}

unsigned long long fake_timeline_latest(int dev)
{
    if (!queue_used(dev))
        return 0;
    struct queue *q = queue_of(dev);
    pthread_mutex_lock(&q->lock);
    unsigned long long seq = q->submitted;
    pthread_mutex_unlock(&q->lock);
    return seq;
}

void fake_timeline_drain(int dev)
{
    fake_timeline_wait(dev, fake_timeline_latest(dev));
}

void fake_timeline_drain_all(void)
{
    for (int d = 0; d < FAKEGPU_MAX_DEVICES; d++)
        fake_timeline_drain(d);
}
