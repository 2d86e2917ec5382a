/*
 * Threads, each its own (docs/design/remote.md, "Lanes"): two threads with
 * contexts of their own current at once; a thread's calls going on while
 * another waits in a synchronizing call; work one thread enqueued seen by
 * another that waits for it (an event recorded, then waited on elsewhere),
 * which a guest must make in the order the threads made them; and a call
 * from the last of a thread's destructors, after its lane has closed.
 */
#define _GNU_SOURCE
#include "conformance.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { ROUNDS = 50, ELEMENTS = 4096 };

static CUcontext primary;
static pthread_barrier_t together;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* A context of the thread's own, made current; ROUNDS times, in step with
 * the other thread, which context is current: its own, or *wrong counts. */
static void *own_context(void *arg)
{
    int *wrong = arg;
    CUcontext mine = NULL, seen = NULL;
    CUresult made = F(cuCtxCreate_v2)(&mine, 0, 0);
    for (int i = 0; i < ROUNDS; i++) {
        pthread_barrier_wait(&together);
        if (made != CUDA_SUCCESS || F(cuCtxGetCurrent)(&seen) != CUDA_SUCCESS || seen != mine)
            (*wrong)++;
        CUdevice dev = -1;
        if (F(cuCtxGetDevice)(&dev) != CUDA_SUCCESS || dev != 0)
            (*wrong)++;
    }
    if (made == CUDA_SUCCESS)
        F(cuCtxDestroy_v2)(mine);
    return NULL;
}

static void contexts_of_their_own(void)
{
    int wrong[2] = { 0, 0 };
    pthread_t t[2];
    pthread_barrier_init(&together, NULL, 2);
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, own_context, &wrong[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&together);
    printf("two threads each saw their own context current %d times: %s\n", ROUNDS,
           wrong[0] + wrong[1] == 0 ? "yes" : "no");
}

/* A thread waits for a kernel of 2 s on a stream of its own. */
struct waiter {
    CUfunction busy;
    uint64_t done_ns;
    CUresult r;
};

static void *wait_for_busy(void *arg)
{
    struct waiter *w = arg;
    CUstream s = NULL;
    unsigned long long ns = 2000000000ull;
    void *params[] = { &ns };
    F(cuCtxSetCurrent)(primary);
    w->r = F(cuStreamCreate)(&s, CU_STREAM_NON_BLOCKING);
    if (w->r == CUDA_SUCCESS)
        w->r = F(cuLaunchKernel)(w->busy, 1, 1, 1, 1, 1, 1, 0, s, params, NULL);
    pthread_barrier_wait(&together);
    if (w->r == CUDA_SUCCESS)
        w->r = F(cuStreamSynchronize)(s);
    w->done_ns = now_ns();
    if (s)
        F(cuStreamDestroy_v2)(s);
    return NULL;
}

static void one_thread_waits_another_goes_on(void)
{
    struct waiter w = { .busy = conformance_kernel("busy") };
    pthread_t t;
    pthread_barrier_init(&together, NULL, 2);
    pthread_create(&t, NULL, wait_for_busy, &w);
    pthread_barrier_wait(&together);
    /* Calls the executor answers (none of them waits for the GPU). */
    int failed = 0;
    for (int i = 0; i < 100; i++) {
        size_t free_bytes = 0, total = 0;
        failed += F(cuMemGetInfo_v2)(&free_bytes, &total) != CUDA_SUCCESS;
        failed += F(cuDeviceTotalMem_v2)(&total, 0) != CUDA_SUCCESS;
    }
    uint64_t mine = now_ns();
    pthread_join(t, NULL);
    pthread_barrier_destroy(&together);
    SHOW("the waiting thread's cuStreamSynchronize", w.r);
    printf("another thread's 200 calls ended while one waited in a synchronize: %s\n",
           !failed && mine < w.done_ns ? "yes" : "no");
}

/* One thread enqueues a kernel of 300 ms, 2000 fills of 1 and one of 7,
 * and records an event after them; once it says so, another waits for the
 * event and reads 7s.  (A guest that made the second thread's wait before
 * the first thread's calls, sent before it was told, would find the event
 * not yet recorded and read what was there.) */
struct enqueuer {
    CUfunction busy, fill;
    CUdeviceptr d;
    CUevent e;
    CUresult r;
};

static void *enqueue_then_tell(void *arg)
{
    struct enqueuer *q = arg;
    CUstream s = NULL;
    unsigned long long ns = 300000000ull;
    unsigned one = 1, value = 7;
    int n = ELEMENTS;
    void *busy[] = { &ns }, *ones[] = { &q->d, &one, &n }, *fill[] = { &q->d, &value, &n };
    F(cuCtxSetCurrent)(primary);
    q->r = F(cuStreamCreate)(&s, CU_STREAM_NON_BLOCKING);
    if (q->r == CUDA_SUCCESS)
        q->r = F(cuLaunchKernel)(q->busy, 1, 1, 1, 1, 1, 1, 0, s, busy, NULL);
    for (int i = 0; i < 2000 && q->r == CUDA_SUCCESS; i++)
        q->r = F(cuLaunchKernel)(q->fill, 1, 1, 1, 1, 1, 1, 0, s, ones, NULL);
    if (q->r == CUDA_SUCCESS)
        q->r = F(cuLaunchKernel)(q->fill, 1, 1, 1, 1, 1, 1, 0, s, fill, NULL);
    if (q->r == CUDA_SUCCESS)
        q->r = F(cuEventRecord)(q->e, s);
    pthread_barrier_wait(&together); /* told */
    pthread_barrier_wait(&together); /* the other has read */
    if (s)
        F(cuStreamDestroy_v2)(s);
    return NULL;
}

static void work_of_one_thread_seen_by_another(void)
{
    struct enqueuer q = { .busy = conformance_kernel("busy"), .fill = conformance_kernel("fill_u32") };
    SHOW("cuMemAlloc_v2", F(cuMemAlloc_v2)(&q.d, ELEMENTS * sizeof(unsigned)));
    SHOW("cuMemsetD32_v2", F(cuMemsetD32_v2)(q.d, 0, ELEMENTS));
    SHOW("cuEventCreate", F(cuEventCreate)(&q.e, CU_EVENT_DISABLE_TIMING));
    SHOW("cuCtxSynchronize", F(cuCtxSynchronize)());
    pthread_t t;
    pthread_barrier_init(&together, NULL, 2);
    pthread_create(&t, NULL, enqueue_then_tell, &q);
    pthread_barrier_wait(&together);
    SHOW("cuEventSynchronize of the other thread's event", F(cuEventSynchronize)(q.e));
    unsigned *host = calloc(ELEMENTS, sizeof(unsigned));
    SHOW("cuMemcpyDtoH_v2", F(cuMemcpyDtoH_v2)(host, q.d, ELEMENTS * sizeof(unsigned)));
    int sevens = 0;
    for (int i = 0; i < ELEMENTS; i++)
        sevens += host[i] == 7;
    pthread_barrier_wait(&together);
    pthread_join(t, NULL);
    pthread_barrier_destroy(&together);
    SHOW("the other thread's launches and record", q.r);
    printf("the fill another thread enqueued before its event was seen whole: %s\n", sevens == ELEMENTS ? "yes" : "no");
    free(host);
    SHOW("cuEventDestroy_v2", F(cuEventDestroy_v2)(q.e));
    SHOW("cuMemFree_v2", F(cuMemFree_v2)(q.d));
}

/* A key made after the driver's first call, so that its destructor runs
 * after any the driver made: a CUDA call there still works. */
static pthread_key_t late_key;
static CUresult from_destructor = CUDA_ERROR_UNKNOWN;

static void late_destructor(void *value)
{
    (void)value;
    F(cuCtxSetCurrent)(primary);
    from_destructor = F(cuCtxSynchronize)();
}

static void *call_then_end(void *arg)
{
    (void)arg;
    F(cuCtxSetCurrent)(primary);
    F(cuCtxSynchronize)();
    pthread_setspecific(late_key, &late_key);
    return NULL;
}

static void a_call_as_a_thread_ends(void)
{
    pthread_t t;
    pthread_key_create(&late_key, late_destructor);
    pthread_create(&t, NULL, call_then_end, NULL);
    pthread_join(t, NULL);
    pthread_key_delete(late_key);
    SHOW("cuCtxSynchronize from a thread's last destructor", from_destructor);
}

void conformance_threads(void)
{
    SHOW("cuCtxGetCurrent", F(cuCtxGetCurrent)(&primary));
    contexts_of_their_own();
    one_thread_waits_another_goes_on();
    work_of_one_thread_seen_by_another();
    a_call_as_a_thread_ends();
}
