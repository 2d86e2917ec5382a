/*
 * The fake GPU's shared state lock while its holders and waiters are
 * killed at random (docs/design/reliability.md):
 *
 *   fake_lock_churn_test FAKE_LIBCUDA SECONDS
 *
 * 16 worker processes, each of 8 threads, allocate and free through the
 * fake driver, every call taking the fake GPU's process-shared state lock
 * (FAKEGPU_STATE, a file made here).  For SECONDS a supervisor kills a
 * random worker with SIGKILL every 0.2 ms to 1 ms and starts it again,
 * so that a holder dies while others wait and a waiter the kernel woke
 * dies before it takes the lock.  Then the killing stops and every live
 * worker's every thread must make progress within 10 s: none is asleep
 * for good on a lock no live process holds.  A robust mutex's waiters
 * slept so (the kernel wakes one waiter of a dead holder, and that one was
 * killed too), which hung the kill-churn stress test under TSan once.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { WORKERS = 16, THREADS = 8 };

/* Shared with every worker (made before the first fork): each thread's
 * calls, counted, and the workers' pids. */
static struct {
    atomic_ulong calls[WORKERS][THREADS];
} *sh;

static int worker_index;
static CUresult (*alloc)(CUdeviceptr *, size_t);
static CUresult (*release)(CUdeviceptr);
static CUcontext ctx;
static CUresult (*set_current)(CUcontext);

static void *churn(void *arg)
{
    int t = (int)(intptr_t)arg;
    set_current(ctx);
    for (;;) {
        CUdeviceptr p = 0;
        if (alloc(&p, 1 << 20) == CUDA_SUCCESS)
            release(p);
        atomic_fetch_add(&sh->calls[worker_index][t], 1);
    }
    return NULL;
}

static void *sym(void *lib, const char *name)
{
    void *f = dlsym(lib, name);
    if (!f) {
        fprintf(stderr, "fake_lock_churn_test: no %s in the fake driver\n", name);
        _exit(2);
    }
    return f;
}

static void worker(const char *fake, int index)
{
    worker_index = index;
    void *lib = dlopen(fake, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "fake_lock_churn_test: %s\n", dlerror());
        _exit(2);
    }
    CUresult (*init)(unsigned) = sym(lib, "cuInit");
    CUresult (*retain)(CUcontext *, CUdevice) = sym(lib, "cuDevicePrimaryCtxRetain");
    alloc = sym(lib, "cuMemAlloc_v2");
    release = sym(lib, "cuMemFree_v2");
    set_current = sym(lib, "cuCtxSetCurrent");
    if (init(0) != CUDA_SUCCESS || retain(&ctx, 0) != CUDA_SUCCESS) {
        fprintf(stderr, "fake_lock_churn_test: worker %d: no context\n", index);
        _exit(2);
    }
    pthread_t th[THREADS];
    for (int t = 1; t < THREADS; t++)
        pthread_create(&th[t], NULL, churn, (void *)(intptr_t)t);
    churn((void *)0);
}

static pid_t start(const char *fake, int index)
{
    pid_t pid = fork();
    if (pid == 0)
        worker(fake, index);
    return pid;
}

static unsigned long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (unsigned long)t.tv_sec * 1000 + (unsigned long)t.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: fake_lock_churn_test FAKE_LIBCUDA SECONDS\n");
        return 2;
    }
    const char *fake = argv[1];
    unsigned long seconds = strtoul(argv[2], NULL, 10);
    char state[] = "/tmp/fake_lock_churn.XXXXXX";
    int fd = mkstemp(state);
    if (fd < 0)
        return 2;
    close(fd);
    unlink(state); /* the fake makes it afresh */
    setenv("FAKEGPU_STATE", state, 1);
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        return 2;
    pid_t pid[WORKERS];
    for (int i = 0; i < WORKERS; i++)
        pid[i] = start(fake, i);
    unsigned seed = (unsigned)time(NULL);
    printf("seed %u\n", seed);
    unsigned long kills = 0, end = now_ms() + seconds * 1000;
    while (now_ms() < end) {
        struct timespec nap = { 0, (200 + rand_r(&seed) % 800) * 1000L };
        nanosleep(&nap, NULL);
        int i = rand_r(&seed) % WORKERS;
        kill(pid[i], SIGKILL);
        waitpid(pid[i], NULL, 0);
        memset(sh->calls[i], 0, sizeof(sh->calls[i]));
        pid[i] = start(fake, i);
        kills++;
    }
    /* Every thread of every worker started before the killing stopped
     * goes on: counted now, and again until each moved (10 s at most). */
    unsigned long before[WORKERS][THREADS];
    for (int i = 0; i < WORKERS; i++)
        for (int t = 0; t < THREADS; t++)
            before[i][t] = atomic_load(&sh->calls[i][t]);
    int stuck = 0;
    for (unsigned long deadline = now_ms() + 10000;;) {
        stuck = 0;
        for (int i = 0; i < WORKERS; i++)
            for (int t = 0; t < THREADS; t++)
                stuck += atomic_load(&sh->calls[i][t]) == before[i][t];
        if (!stuck || now_ms() >= deadline)
            break;
        usleep(10000);
    }
    for (int i = 0; i < WORKERS; i++) {
        kill(pid[i], SIGKILL);
        waitpid(pid[i], NULL, 0);
    }
    unlink(state);
    printf("%lu kills in %lu s; threads that made no call in 10 s after: %d of %d\n", kills, seconds, stuck,
           WORKERS * THREADS);
    if (stuck)
        fprintf(stderr, "FAIL: %d threads asleep for good on the fake GPU's state lock\n", stuck);
    return stuck ? 1 : 0;
}
