/*
 * The state of the fake GPU that processes share: the memory each holds and
 * the device time each used (usage.c), which the fake NVML reports, and each
 * device's turn (turn.h).
 *
 * The accounting lives in a fixed-size table (one slot per process, bytes per
 * device) guarded by a robust process-shared mutex. With FAKEGPU_STATE set it
 * is a MAP_SHARED file mapping, so every process pointing at the same file
 * sees the others, as the real NVML does. Otherwise it is an anonymous
 * mapping private to the process. In that case the fake libcuda (built with
 * FAKEGPU_STATE_OWNER) owns the mapping and the fake NVML borrows it through
 * fakegpu_private_state(), so both libraries of one process agree.
 *
 * Slots of dead processes are ignored and reclaimed (processes.c, usage.c).
 */
#define _GNU_SOURCE
#include "test/fake/gpu/shared_state.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STATE_MAGIC 0x46474d53u /* "FGMS" */
#define STATE_VERSION 2u

enum { STATE_FRESH = 0, STATE_INITIALIZING = 1, STATE_READY = 2 };

/* How long a process waits for another one to finish initializing a new
 * state file before giving up on it. */
#define STATE_INIT_WAIT_MS 5000

/* ------------------------------------------------------------------------ */
/* Mapping the state                                                        */

static bool init_mutex(pthread_mutex_t *lock)
{
    pthread_mutexattr_t attr;
    if (pthread_mutexattr_init(&attr) != 0)
        return false;
    bool ok = pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED) == 0 &&
              pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST) == 0 && pthread_mutex_init(lock, &attr) == 0;
    pthread_mutexattr_destroy(&attr);
    return ok;
}

/* The first process to see a zero-filled state initializes it; the others
 * wait until it is ready and then check that the layout is theirs. */
static bool state_ready(struct shared_state *st)
{
    uint32_t expected = STATE_FRESH;
    if (__atomic_compare_exchange_n(&st->init, &expected, STATE_INITIALIZING, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        if (!init_mutex(&st->lock))
            return false;
        st->magic = STATE_MAGIC;
        st->version = STATE_VERSION;
        st->size = (uint32_t)sizeof *st;
        __atomic_store_n(&st->init, STATE_READY, __ATOMIC_RELEASE);
        return true;
    }

    const struct timespec tick = { 0, 1000000 };
    for (int waited = 0; __atomic_load_n(&st->init, __ATOMIC_ACQUIRE) != STATE_READY; waited++) {
        if (waited >= STATE_INIT_WAIT_MS)
            return false;
        nanosleep(&tick, NULL);
    }
    return st->magic == STATE_MAGIC && st->version == STATE_VERSION && st->size == sizeof *st;
}

static struct shared_state *map_private_state(void)
{
    struct shared_state *st = mmap(NULL, sizeof *st, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (st == MAP_FAILED)
        return NULL;
    if (!state_ready(st)) {
        munmap(st, sizeof *st);
        return NULL;
    }
    return st;
}

static struct shared_state *map_file_state(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0)
        return NULL;

    struct shared_state *st = MAP_FAILED;
    struct stat sb;
    /* Racing creators all extend the file to the same size, which is harmless. */
    if (fstat(fd, &sb) == 0 && (sb.st_size >= (off_t)sizeof *st || ftruncate(fd, sizeof *st) == 0))
        st = mmap(NULL, sizeof *st, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (st == MAP_FAILED)
        return NULL;
    if (!state_ready(st)) {
        munmap(st, sizeof *st);
        return NULL;
    }
    return st;
}

/* Owned by this file: which state this process uses and its mapping,
 * guarded by lock (which a forked child initialises again). */
static struct {
    pthread_mutex_t lock;
    struct shared_state *state;
    pid_t owner;      /* process that created a private mapping */
    bool mode_chosen; /* FAKEGPU_STATE has been looked at */
    bool file_backed; /* shared with other processes through FAKEGPU_STATE */
} g_map = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Private mapping of this library, recreated in a forked child so the child
 * does not inherit a copy of its parent's usage. Called with g_map.lock. */
static struct shared_state *own_private_state_locked(void)
{
    pid_t pid = fakegpu_self_pid();
    if (g_map.state && g_map.owner != pid) {
        munmap(g_map.state, sizeof *g_map.state);
        g_map.state = NULL;
    }
    if (!g_map.state) {
        g_map.state = map_private_state();
        g_map.owner = pid;
    }
    return g_map.state;
}

#ifdef FAKEGPU_STATE_OWNER

/* Exported so that the fake NVML of the same process can share the private
 * state of the fake libcuda. Not cu-prefixed: vgpu does not re-export it. */
__attribute__((visibility("default"))) void *fakegpu_private_state(void);

void *fakegpu_private_state(void)
{
    pthread_mutex_lock(&g_map.lock);
    struct shared_state *st = own_private_state_locked();
    pthread_mutex_unlock(&g_map.lock);
    return st;
}

static struct shared_state *private_state_locked(void)
{
    return own_private_state_locked();
}

#else

typedef void *(*private_state_fn)(void);

struct owner_search {
    private_state_fn fn;
};

/* dl_iterate_phdr callback: a loaded libcuda.so* that defines
 * fakegpu_private_state is the fake libcuda of this process.
 *
 * The handle comes from the C library's own dlopen with RTLD_NOLOAD: vgpu
 * interposes dlopen (it answers "libcuda.so*" with itself), and a
 * link_map is a dlsym handle only for an object that was itself opened
 * (the main program, or dlopen's): a library loaded as a dependency at
 * start-up has no search list of its own, and dlsym on it crashes. */
static int find_owner_cb(struct dl_phdr_info *info, size_t size, void *ctx)
{
    (void)size;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (strncmp(base, "libcuda.so", 10) != 0)
        return 0;
    void *(*real_dlopen)(const char *, int) =
        (void *(*)(const char *, int))dlvsym(RTLD_DEFAULT, "dlopen", "GLIBC_2.34");
    if (!real_dlopen)
        real_dlopen = (void *(*)(const char *, int))dlvsym(RTLD_DEFAULT, "dlopen", "GLIBC_2.2.5");
    void *h = real_dlopen ? real_dlopen(name, RTLD_LAZY | RTLD_NOLOAD) : NULL;
    if (!h)
        return 0;
    void *fn = dlsym(h, "fakegpu_private_state");
    Dl_info found;
    /* Defined by this object itself, not found through its dependencies. */
    if (fn && dladdr(fn, &found) && strcmp(found.dli_fname, name) == 0) {
        *(void **)&((struct owner_search *)ctx)->fn = fn;
        dlclose(h);
        return 1;
    }
    dlclose(h);
    return 0;
}

/* The fake libcuda's fakegpu_private_state(), if that library is loaded in
 * this process. Not loading it: until it is, this process holds no device
 * memory and the NVML side's own (empty) private state is the truth. */
static private_state_fn find_owner(void)
{
    struct owner_search search = { NULL };
    dl_iterate_phdr(find_owner_cb, &search);
    return search.fn;
}

static struct shared_state *private_state_locked(void)
{
    static private_state_fn owner;
    if (!owner)
        owner = find_owner(); /* retried until the fake libcuda shows up */
    if (owner) {
        struct shared_state *st = owner();
        if (st)
            return st;
    }
    return own_private_state_locked();
}

#endif /* FAKEGPU_STATE_OWNER */

struct shared_state *fakegpu_state_get(void)
{
    pthread_mutex_lock(&g_map.lock);
    if (!g_map.mode_chosen) {
        /* An unusable FAKEGPU_STATE falls back to the private state. */
        const char *path = getenv("FAKEGPU_STATE");
        g_map.state = path && *path ? map_file_state(path) : NULL;
        g_map.file_backed = g_map.state != NULL;
        g_map.mode_chosen = true;
    }
    struct shared_state *st = g_map.file_backed ? g_map.state : private_state_locked();
    pthread_mutex_unlock(&g_map.lock);
    return st;
}

/* The lock, tried until it is had.  When a robust mutex's holder dies,
 * the kernel wakes one of its waiters; one killed before it takes the
 * lock leaves the others asleep for ever (test/stress kills processes at
 * such moments), so no waiter sleeps on it: each tries it again, yielding
 * first, then sleeping 50 us a time, and finds its owner dead.  (A timed
 * lock would do, but ThreadSanitizer's takes a dead owner's lock for not
 * taken.) */
static int lock_by_trying(pthread_mutex_t *lock)
{
    const struct timespec nap = { 0, 50 * 1000 };
    for (unsigned tries = 0;; tries++) {
        int rc = pthread_mutex_trylock(lock);
        if (rc != EBUSY)
            return rc;
        if (tries < 100)
            sched_yield();
        else
            nanosleep(&nap, NULL);
    }
}

struct shared_state *fakegpu_lock_state(void)
{
    struct shared_state *st = fakegpu_state_get();
    if (!st)
        return NULL;
    int rc = lock_by_trying(&st->lock);
    if (rc == EOWNERDEAD) {
        /* The holder died; every slot is self-consistent, so carry on. */
        pthread_mutex_consistent(&st->lock);
    } else if (rc != 0) {
        return NULL;
    }
    return st;
}

void fakegpu_unlock_state(struct shared_state *st)
{
    pthread_mutex_unlock(&st->lock);
}

/* A forked child is another process, and the thread of its parent that
 * may have held g_map.lock at fork is not there. */
void fakegpu_state_after_fork_child(void)
{
    pthread_mutex_init(&g_map.lock, NULL);
}
