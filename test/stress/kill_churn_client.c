/*
 * BAR0's accounting under threads, forks and kill -9:
 *
 *   kill_churn_client SECONDS KILL_MS SEED [VGPU]
 *
 * Run with vgpu preloaded over the fake driver (FAKEGPU_STATE shared by
 * every process) on one vGPU: standalone (VGPU_BAR0, VGPU_MEMORY_LIMIT), or
 * the mediator's vGPU VGPU (VGPU_MEDIATOR_SOCKET).  test/stress/kill_churn.sh
 * sets it up.
 *
 * - 4 worker processes of 8 threads each allocate and free at random
 *   (cuMemAlloc_v2, cuMemAllocManaged, cuMemCreate; cuMemFree_v2,
 *   cuMemRelease) against the vGPU's quota.  Now and then a worker forks a
 *   child that allocates too, and then frees and exits, exits holding its
 *   memory, leaves with _exit (no exit handlers), or churns until its parent
 *   kills it with SIGKILL at a random moment.
 * - For SECONDS the supervisor kills a random worker with SIGKILL at random
 *   moments (from SEED; KILL_MS apart on average) and starts it again.
 * - Then the survivors free everything and each of their threads holds a
 *   known amount, and a new process of the vGPU checks its window, raw:
 *   memory_used is exactly what the survivors' slots hold and what they say
 *   they hold, the process count is theirs, and no other slot is live.
 *   After they exit, the vGPU is back at 0.
 * - Throughout, a monitor process of the vGPU samples its memory_used: it
 *   never passes the quota.
 *
 * The supervisor is a subreaper: children orphaned by a killed worker
 * become its own, to wait for.  It prints the seed first, then the counts.
 */
#define _GNU_SOURCE
#include "test/common/client_util.h"
#include "common/contract/window/bar0.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

enum { WORKERS = 4, THREADS = 8, LIVE = 4, MAX_CHILDREN = 4 };

/* Shared by the supervisor and every process it starts (an anonymous
 * shared mapping made before the first fork): what happened, and the
 * supervisor's word to the workers. */
struct shared {
    atomic_ulong allocs, frees, refusals, forks, child_frees_and_exits, child_exits_holding, child_quick_exits,
        child_kills, child_orphans, worker_starts, context_refusals, failures;
    atomic_int quiesce;        /* free everything, hold the final amounts, report */
    atomic_int release;        /* exit */
    atomic_ullong peak, quota; /* the monitor's findings */
    struct {
        atomic_int pid;
        atomic_ullong holding;
    } report[WORKERS];
};
static struct shared *sh;

static void failure(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void failure(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL (pid %d): ", (int)getpid());
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    atomic_fetch_add(&sh->failures, 1);
}

static uint64_t round512(uint64_t v)
{
    return (v + 511) / 512 * 512;
}

/* ======================================================================
 * Allocations, as the churning threads and the children make them
 * ====================================================================== */

struct allocation {
    int kind; /* 0 none, 1 cuMemAlloc_v2, 2 cuMemAllocManaged, 3 cuMemCreate */
    CUdeviceptr p;
    CUmemGenericAllocationHandle h;
};

/* Allocates at random; false when the quota refused it. */
static bool allocate(struct allocation *a, unsigned *seed, size_t most)
{
    static const CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                              .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 } };
    int kind = 1 + rand_r(seed) % 3;
    size_t bytes = 1 + (size_t)rand_r(seed) % most;
    CUresult r = kind == 1   ? F(cuMemAlloc_v2)(&a->p, bytes)
                 : kind == 2 ? F(cuMemAllocManaged)(&a->p, bytes, CU_MEM_ATTACH_GLOBAL)
                             : F(cuMemCreate)(&a->h, (bytes / (2 * MiB) + 1) * 2 * MiB, &prop, 0);
    if (r == CUDA_SUCCESS) {
        a->kind = kind;
        atomic_fetch_add(&sh->allocs, 1);
        return true;
    }
    if (r != CUDA_ERROR_OUT_OF_MEMORY)
        failure("allocation (kind %d) of %zu bytes returned %d", kind, bytes, (int)r);
    atomic_fetch_add(&sh->refusals, 1);
    return false;
}

static void release(struct allocation *a)
{
    if (!a->kind)
        return;
    CUresult r = a->kind == 3 ? F(cuMemRelease)(a->h) : F(cuMemFree_v2)(a->p);
    if (r != CUDA_SUCCESS)
        failure("freeing an allocation (kind %d) returned %d", a->kind, (int)r);
    a->kind = 0;
    atomic_fetch_add(&sh->frees, 1);
}

/* ======================================================================
 * A worker: 8 threads churning, forking children now and then
 * ====================================================================== */

static CUcontext worker_ctx;
/* Forks wait until no thread is inside the driver: the fake driver has a
 * process-wide lock and no fork handlers (and a real driver forbids CUDA
 * in a child forked from a process using it), so a child forked while
 * another thread held it could never call it.  Readers: the churning
 * threads, around each call; writer: the forking thread. */
static pthread_rwlock_t gate;
static struct {
    pid_t pid;
    double kill_at; /* 0: it ends by itself */
} children[MAX_CHILDREN];

/* A forked child: allocates through its parent's context, and ends one of
 * four ways. */
static __attribute__((noreturn)) void child_main(unsigned seed, pid_t parent, int how)
{
    struct allocation a[LIVE] = { { 0 } };
    double end = now_s() + 2;
    for (int i = 0; how == 3 || i < 1 + (int)(seed % 6); i++) {
        if (getppid() != parent || now_s() > end) { /* its parent was killed: nobody will kill it */
            atomic_fetch_add(&sh->child_orphans, 1);
            _exit(0);
        }
        int k = rand_r(&seed) % LIVE;
        if (a[k].kind)
            release(&a[k]);
        else
            allocate(&a[k], &seed, 8 * MiB);
    }
    switch (how) {
    case 0:
        for (int k = 0; k < LIVE; k++)
            release(&a[k]);
        atomic_fetch_add(&sh->child_frees_and_exits, 1);
        exit(0);
    case 1: /* exit handlers return the slot */ atomic_fetch_add(&sh->child_exits_holding, 1); exit(0);
    default: /* no exit handlers: the slot is reaped as a dead process's */
        atomic_fetch_add(&sh->child_quick_exits, 1);
        _exit(0);
    }
}

static void fork_child(unsigned *seed)
{
    int free_at = -1;
    for (int i = 0; i < MAX_CHILDREN && free_at < 0; i++)
        if (!children[i].pid)
            free_at = i;
    if (free_at < 0)
        return;
    int how = rand_r(seed) % 4;
    unsigned child_seed = (unsigned)rand_r(seed);
    pid_t parent = getpid();
    pthread_rwlock_wrlock(&gate);
    pid_t pid = fork();
    if (pid == 0)
        child_main(child_seed, parent, how);
    pthread_rwlock_unlock(&gate);
    if (pid < 0) {
        failure("fork: %s", strerror(errno));
        return;
    }
    atomic_fetch_add(&sh->forks, 1);
    children[free_at].pid = pid;
    children[free_at].kill_at = how == 3 ? now_s() + (1 + rand_r(seed) % 30) / 1000.0 : 0;
}

/* Kills the children whose time has come (all, with all), and waits for
 * those that ended. */
static void tend_children(bool all)
{
    for (int i = 0; i < MAX_CHILDREN; i++) {
        if (!children[i].pid)
            continue;
        if (children[i].kill_at && (all || now_s() >= children[i].kill_at)) {
            kill(children[i].pid, SIGKILL);
            atomic_fetch_add(&sh->child_kills, 1);
            children[i].kill_at = 0;
        }
        int st;
        if (waitpid(children[i].pid, &st, all ? 0 : WNOHANG) == children[i].pid) {
            if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0) && !(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL))
                failure("child %d ended with status 0x%x", (int)children[i].pid, st);
            children[i].pid = 0;
        }
    }
}

struct churner {
    pthread_t thread;
    int id; /* worker * THREADS + thread */
    unsigned seed;
    uint64_t held; /* bytes asked for the final allocation */
    CUdeviceptr final;
};

static void *churn(void *arg)
{
    struct churner *c = arg;
    CUresult r = F(cuCtxSetCurrent)(worker_ctx);
    if (r != CUDA_SUCCESS)
        failure("cuCtxSetCurrent returned %d", (int)r);
    struct allocation a[LIVE] = { { 0 } };
    bool forker = c->id % THREADS == 0;
    while (!atomic_load(&sh->quiesce)) {
        int k = rand_r(&c->seed) % LIVE;
        pthread_rwlock_rdlock(&gate);
        if (a[k].kind)
            release(&a[k]);
        else
            allocate(&a[k], &c->seed, 32 * MiB);
        pthread_rwlock_unlock(&gate);
        if (forker) {
            if (rand_r(&c->seed) % 32 == 0)
                fork_child(&c->seed);
            tend_children(false);
        }
    }
    for (int k = 0; k < LIVE; k++)
        release(&a[k]);
    if (forker)
        tend_children(true);
    /* The final holding: others may still be freeing theirs, so retry. */
    double end = now_s() + 30;
    while ((r = F(cuMemAlloc_v2)(&c->final, c->held)) == CUDA_ERROR_OUT_OF_MEMORY && now_s() < end)
        usleep(2000);
    if (r != CUDA_SUCCESS)
        failure("the final %llu-byte allocation returned %d", (unsigned long long)c->held, (int)r);
    return NULL;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
static pid_t worker_pid;

/* Registered before vgpu's exit handler, so run after it: a forked child
 * that exits has returned its slot by then, and leaves before the library
 * destructors.  One of them is LeakSanitizer's check, which locks the whole
 * allocator, and GCC 12's ASan runtime does not take the allocator's locks
 * across fork: one that another thread held at the fork is never released
 * in the child, which would hang there.  ThreadSanitizer's finishing at
 * exit takes locks of its runtime that another thread of the worker may
 * have held at the fork too. */
static void child_skips_destructors(void)
{
    if (getpid() != worker_pid)
        _exit(0);
}
#endif

static __attribute__((noreturn)) void worker_main(int w, unsigned seed, uint64_t overhead)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    worker_pid = getpid();
    atexit(child_skips_destructors);
#endif
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&gate, &attr);
    CUdevice dev = -1;
    CUresult r = F(cuInit)(0);
    if (r == CUDA_SUCCESS)
        r = F(cuDeviceGet)(&dev, 0);
    /* While the others hold the whole quota, there is no room for a context. */
    double end = now_s() + 30;
    while (r == CUDA_SUCCESS && (r = F(cuDevicePrimaryCtxRetain)(&worker_ctx, dev)) == CUDA_ERROR_OUT_OF_MEMORY &&
           now_s() < end) {
        atomic_fetch_add(&sh->context_refusals, 1);
        r = CUDA_SUCCESS;
        usleep(1000);
    }
    if (r != CUDA_SUCCESS) {
        failure("worker %d: starting CUDA returned %d", w, (int)r);
        _exit(1);
    }
    struct churner c[THREADS];
    uint64_t holding = overhead;
    for (int t = 0; t < THREADS; t++) {
        int id = w * THREADS + t;
        c[t] = (struct churner){ .id = id, .seed = seed + (unsigned)t, .held = (uint64_t)(id + 1) * MiB + 100 };
        holding += round512(c[t].held);
        pthread_create(&c[t].thread, NULL, churn, &c[t]);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(c[t].thread, NULL);
    atomic_store(&sh->report[w].holding, holding);
    atomic_store(&sh->report[w].pid, getpid());
    while (!atomic_load(&sh->release))
        usleep(5000);
    exit(0); /* holding it all: leaving the vGPU returns it */
}

/* ======================================================================
 * The checker: a new process of the vGPU, reading its window raw
 * ====================================================================== */

/* The window this process maps on joining the vGPU (through NVML, which
 * takes no slot): the VGPU_BAR0 file, or the mediator's status memfd. */
static const struct vgpu_bar0 *joined_window(const char *vgpu)
{
    NV(N(nvmlInit_v2)());
    char want[4096 + 64] = "", line[8192];
    if (vgpu)
        snprintf(want, sizeof(want), "/memfd:vgpu:%s:status", vgpu);
    else if (!realpath(getenv("VGPU_BAR0") ? getenv("VGPU_BAR0") : "", want))
        return NULL;
    FILE *maps = fopen("/proc/self/maps", "re");
    const struct vgpu_bar0 *b = NULL;
    while (maps && !b && fgets(line, sizeof(line), maps)) {
        unsigned long start;
        char path[4096] = "";
        if (sscanf(line, "%lx-%*x %*s %*s %*s %*s %4095s", &start, path) == 2 && strcmp(path, want) == 0)
            b = (const struct vgpu_bar0 *)(start - (vgpu ? VGPU_BAR0_CONFIG_PAGE : 0));
    }
    if (maps)
        fclose(maps);
    return b;
}

struct tally {
    uint64_t used, held;
    unsigned processes, live, busy, reaping;
    int pids[VGPU_BAR0_MAX_PROCS];
};

static void count(const struct vgpu_bar0 *b, struct tally *t)
{
    memset(t, 0, sizeof(*t));
    t->used = atomic_load(&b->status.device[0].memory_used);
    t->processes = atomic_load(&b->status.processes);
    for (int i = 0; i < VGPU_BAR0_MAX_PROCS; i++) {
        uint64_t o = atomic_load(&b->procs[i].owner);
        if (VGPU_BAR0_OWNER_STATE(o) == VGPU_PROC_REAPING)
            t->reaping++;
        if (VGPU_BAR0_OWNER_STATE(o) != VGPU_PROC_LIVE)
            continue;
        t->pids[t->live++] = VGPU_BAR0_OWNER_PID(o);
        t->held += atomic_load(&b->procs[i].held[0]);
        t->busy += atomic_load(&b->procs[i].busy) != 0;
    }
}

/* Samples memory_used until the workers are released: the peak and the
 * quota, into the shared record. */
static __attribute__((noreturn)) void monitor_main(const char *vgpu)
{
    const struct vgpu_bar0 *b = joined_window(vgpu);
    if (!b) {
        failure("the monitor found no window of the vGPU among its mappings");
        exit(1);
    }
    uint64_t peak = 0;
    while (!atomic_load(&sh->release)) {
        uint64_t u = atomic_load(&b->status.device[0].memory_used);
        peak = u > peak ? u : peak;
        usleep(100);
    }
    atomic_store(&sh->quota, vgpu_bar0_limit(b, 0));
    atomic_store(&sh->peak, peak);
    exit(0);
}

/* Exits 0 when the window holds exactly what the survivors reported (none
 * at all with none), within 5 s (a mediator reaps and rebuilds on its own
 * clock); else says what it found. */
static __attribute__((noreturn)) void check_main(const char *vgpu, bool survivors)
{
    const struct vgpu_bar0 *b = joined_window(vgpu);
    if (!b) {
        fprintf(stderr, "FAIL: the checker found no window of the vGPU among its mappings\n");
        exit(1);
    }
    uint64_t reported = 0;
    int want_pids[WORKERS];
    unsigned nwant = survivors ? WORKERS : 0;
    for (unsigned w = 0; w < nwant; w++) {
        reported += atomic_load(&sh->report[w].holding);
        want_pids[w] = atomic_load(&sh->report[w].pid);
    }
    struct tally t;
    double t0 = now_s();
    bool exact = false;
    while (!exact && now_s() - t0 < 5) {
        count(b, &t);
        exact = t.used == reported && t.held == reported && t.processes == nwant && t.live == nwant && !t.reaping;
        for (unsigned w = 0; exact && w < nwant; w++) {
            bool found = false;
            for (unsigned i = 0; i < t.live; i++)
                found = found || t.pids[i] == want_pids[w];
            exact = found;
        }
        if (!exact)
            usleep(10000);
    }
    printf("%s: memory_used %llu, the live slots hold %llu, the survivors say %llu; %u processes, %u live slots "
           "(want %u), %u busy, %u being reaped; after %.0f ms\n",
           survivors ? "survivors holding" : "all exited", (unsigned long long)t.used, (unsigned long long)t.held,
           (unsigned long long)reported, t.processes, t.live, nwant, t.busy, t.reaping, (now_s() - t0) * 1e3);
    if (!exact) {
        fprintf(stderr, "FAIL: the vGPU's accounting is not what its processes hold; live slots:");
        for (unsigned i = 0; i < t.live; i++)
            fprintf(stderr, " %d", t.pids[i]);
        fprintf(stderr, "; survivors:");
        for (unsigned w = 0; w < nwant; w++)
            fprintf(stderr, " %d", want_pids[w]);
        fprintf(stderr, "\n");
        exit(1);
    }
    exit(0);
}

/* ======================================================================
 * The supervisor
 * ====================================================================== */

static pid_t start(void (*body)(int, unsigned, uint64_t), int w, unsigned seed, uint64_t overhead)
{
    pid_t pid = fork();
    if (pid == 0)
        body(w, seed, overhead);
    if (pid < 0) {
        perror("fork");
        exit(1);
    }
    return pid;
}

static int run_check(const char *vgpu, bool survivors)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        check_main(vgpu, survivors);
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

static pid_t monitor;

/* Waits for children the supervisor does not know (orphans of killed
 * workers) that have ended; with until_only, until only its workers (and
 * the monitor) are left, at most 30 s. */
static void reap_orphans(const pid_t *workers, bool until_only)
{
    double end = now_s() + 30;
    for (;;) {
        pid_t pid;
        while ((pid = waitpid(-1, NULL, WNOHANG)) > 0)
            for (int w = 0; w < WORKERS; w++)
                if (pid == workers[w])
                    failure("worker %d (pid %d) ended on its own", w, (int)pid);
        if (!until_only)
            return;
        char path[64];
        snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
        FILE *f = fopen(path, "re");
        int others = 0;
        if (f) {
            int pid_read;
            while (fscanf(f, "%d", &pid_read) == 1) {
                bool worker = pid_read == monitor;
                for (int w = 0; w < WORKERS; w++)
                    worker = worker || pid_read == workers[w];
                others += !worker;
            }
            fclose(f);
        }
        if (!others)
            return;
        if (now_s() > end) {
            failure("%d orphaned children still running after 30 s", others);
            return;
        }
        usleep(10000);
    }
}

/* ======================================================================
 * The supervisor's phases
 * ====================================================================== */

static struct {
    double seconds;
    unsigned kill_ms, seed;
    const char *vgpu;
    uint64_t overhead;
    pid_t workers[WORKERS];
    unsigned long kills;
} run;

/* The shared mapping, the subreaper, the monitor and the workers. */
static int start_everything(void)
{
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED || prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
        perror("kill_churn_client: setting up");
        return 1;
    }
    monitor = fork();
    if (monitor == 0)
        monitor_main(run.vgpu);
    for (int w = 0; w < WORKERS; w++) {
        run.workers[w] = start(worker_main, w, (unsigned)rand_r(&run.seed), run.overhead);
        atomic_fetch_add(&sh->worker_starts, 1);
    }
    return 0;
}

/* For SECONDS: a random worker killed at a random moment, and started again. */
static void kill_and_restart_workers(void)
{
    double end = now_s() + run.seconds;
    while (now_s() < end) {
        usleep((useconds_t)(10 + rand_r(&run.seed) % (2 * run.kill_ms - 19)) * 1000);
        reap_orphans(run.workers, false);
        int w = rand_r(&run.seed) % WORKERS;
        kill(run.workers[w], SIGKILL);
        int st = 0;
        waitpid(run.workers[w], &st, 0);
        if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL))
            failure("worker %d (pid %d) had ended before it was killed, status 0x%x", w, (int)run.workers[w], st);
        run.kills++;
        run.workers[w] = start(worker_main, w, (unsigned)rand_r(&run.seed), run.overhead);
        atomic_fetch_add(&sh->worker_starts, 1);
    }
}

/* What process pid and its children wait in, each thread's kernel wait
 * channel and system call: where a process that does not settle is stuck. */
static void describe_stuck(pid_t pid, int depth)
{
    char path[320], line[256];
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    DIR *tasks = opendir(path);
    for (struct dirent *t; tasks && (t = readdir(tasks));) {
        if (t->d_name[0] == '.')
            continue;
        char wchan[64] = "", call[128] = "";
        snprintf(path, sizeof(path), "/proc/%d/task/%s/wchan", (int)pid, t->d_name);
        FILE *f = fopen(path, "re");
        if (f && !fgets(wchan, sizeof(wchan), f))
            wchan[0] = '\0';
        if (f)
            fclose(f);
        snprintf(path, sizeof(path), "/proc/%d/task/%s/syscall", (int)pid, t->d_name);
        if ((f = fopen(path, "re"))) {
            if (!fgets(call, sizeof(call), f))
                call[0] = '\0';
            call[strcspn(call, "\n")] = '\0';
            fclose(f);
        }
        fprintf(stderr, "%*spid %d thread %s: waits in %s, system call %s\n", 2 * depth, "", (int)pid, t->d_name,
                wchan[0] ? wchan : "-", call[0] ? call : "-");
    }
    if (tasks)
        closedir(tasks);
    DIR *all = depth < 2 ? opendir("/proc") : NULL;
    for (struct dirent *e; all && (e = readdir(all));) {
        int child = atoi(e->d_name), parent = 0;
        snprintf(path, sizeof(path), "/proc/%d/stat", child);
        FILE *f = child > 0 ? fopen(path, "re") : NULL;
        if (f && fgets(line, sizeof(line), f)) {
            char *close = strrchr(line, ')');
            if (close && sscanf(close + 1, " %*c %d", &parent) == 1 && parent == pid)
                describe_stuck(child, depth + 1);
        }
        if (f)
            fclose(f);
    }
    if (all)
        closedir(all);
}

/* The survivors free everything and hold their final amounts. */
static void settle(void)
{
    atomic_store(&sh->quiesce, 1);
    double t0 = now_s();
    for (int w = 0; w < WORKERS; w++)
        while (atomic_load(&sh->report[w].pid) != run.workers[w] && now_s() - t0 < 75) {
            reap_orphans(run.workers, false);
            usleep(10000);
        }
    for (int w = 0; w < WORKERS; w++)
        if (atomic_load(&sh->report[w].pid) != run.workers[w]) {
            failure("worker %d (pid %d) did not settle within 75 s", w, (int)run.workers[w]);
            describe_stuck(run.workers[w], 0);
        }
    reap_orphans(run.workers, true);
}

/* The window checked with the survivors holding, then (once every process
 * exited cleanly) with none. */
static int check_windows(void)
{
    /* After a failure too: what the window holds says where memory went. */
    int rc = run_check(run.vgpu, true);
    atomic_store(&sh->release, 1);
    for (int w = 0; w < WORKERS; w++) {
        int st = 0;
        waitpid(run.workers[w], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            failure("worker %d (pid %d) exited with status 0x%x", w, (int)run.workers[w], st);
    }
    int st = 0;
    waitpid(monitor, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        failure("the monitor exited with status 0x%x", st);
    reap_orphans(run.workers, true);
    if (rc == 0)
        rc = run_check(run.vgpu, false);
    return rc;
}

/* The monitor's peak within the quota, and what happened, counted. */
static void report(void)
{
    printf("memory_used peaked at %llu of the %llu quota\n", (unsigned long long)atomic_load(&sh->peak),
           (unsigned long long)atomic_load(&sh->quota));
    if (atomic_load(&sh->peak) > atomic_load(&sh->quota))
        failure("the vGPU's memory_used reached %llu, past its %llu quota", (unsigned long long)atomic_load(&sh->peak),
                (unsigned long long)atomic_load(&sh->quota));
    printf("%lu kill -9 of workers (%lu starts, %lu contexts refused for the quota); %lu allocations, %lu frees, "
           "%lu refused by the quota; %lu forks: %lu children freed and exited, %lu exited holding, %lu left with "
           "_exit, %lu killed with kill -9, %lu orphaned by a kill\n",
           run.kills, atomic_load(&sh->worker_starts), atomic_load(&sh->context_refusals), atomic_load(&sh->allocs),
           atomic_load(&sh->frees), atomic_load(&sh->refusals), atomic_load(&sh->forks),
           atomic_load(&sh->child_frees_and_exits), atomic_load(&sh->child_exits_holding),
           atomic_load(&sh->child_quick_exits), atomic_load(&sh->child_kills), atomic_load(&sh->child_orphans));
}

int main(int argc, char **argv)
{
    if (argc < 4 || atoi(argv[2]) < 10) {
        fprintf(stderr, "usage: kill_churn_client SECONDS KILL_MS SEED [VGPU]  (KILL_MS at least 10)\n");
        return 2;
    }
    run.seconds = atof(argv[1]);
    run.kill_ms = (unsigned)atoi(argv[2]);
    run.seed = (unsigned)strtoul(argv[3], NULL, 0);
    run.vgpu = argc > 4 ? argv[4] : NULL;
    const char *ovh = getenv("FAKEGPU_CTX_OVERHEAD");
    run.overhead = ovh && *ovh ? parse_size(ovh) : 256 * MiB;
    printf("seed %u: %d workers of %d threads for %.0f s, a kill -9 every %u ms on average, on %s\n", run.seed, WORKERS,
           THREADS, run.seconds, run.kill_ms, run.vgpu ? "a mediated vGPU" : "a standalone vGPU");
    fflush(stdout);
    if (start_everything() != 0)
        return 1;
    kill_and_restart_workers();
    settle();
    int rc = check_windows();
    report();
    if (atomic_load(&sh->failures))
        rc = 1;
    if (rc == 0 && atomic_load(&sh->refusals) == 0)
        printf("FAIL: the quota never refused an allocation: the processes never met it\n"), rc = 1;
    printf("%s\n", rc == 0 ? "ok - the accounting is exact" : "FAIL");
    return rc;
}
