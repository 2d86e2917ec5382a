/*
 * Shared device model of the fake GPU driver: configuration, device identity
 * and the cross-process memory accounting that the fake NVML reports.
 *
 * The accounting lives in a fixed-size table (one slot per process, bytes per
 * device) guarded by a robust process-shared mutex. With FAKEGPU_STATE set it
 * is a MAP_SHARED file mapping, so every process pointing at the same file
 * sees the others, as the real NVML does. Otherwise it is an anonymous
 * mapping private to the process. In that case the fake libcuda (built with
 * FAKEGPU_STATE_OWNER) owns the mapping and the fake NVML borrows it through
 * fakegpu_private_state(), so both libraries of one process agree.
 *
 * Slots of dead processes (kill(pid, 0) fails with ESRCH, or the pid was
 * reused by a process with another start time) are ignored and reclaimed.
 */
#define _GNU_SOURCE
#include "fakegpu_state.h"
#include "fakegpu_busy.h"
#include "fakegpu_turn.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_DEVICES 2
#define DEFAULT_MEMORY (16ULL << 30)
#define DEFAULT_CTX_OVERHEAD (256ULL << 20)
#define DEFAULT_LAUNCH_NS 2000ULL       /* about an H100's cuLaunchKernel */
#define DEFAULT_KERNEL_NS 1000ULL
#define DEFAULT_TIMESLICE_NS 200000ULL  /* kernels of 200 us alternate one by one */

#define STATE_MAGIC 0x46474d53u /* "FGMS" */
#define STATE_VERSION 2u

enum { STATE_FRESH = 0, STATE_INITIALIZING = 1, STATE_READY = 2 };

/* How long a process waits for another one to finish initializing a new
 * state file before giving up on it. */
#define STATE_INIT_WAIT_MS 5000

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

/* ------------------------------------------------------------------------ */
/* Configuration                                                            */

static struct fakegpu_config g_config;
static pthread_once_t g_config_once = PTHREAD_ONCE_INIT;

int fakegpu_parse_size(const char *text, unsigned long long *out)
{
    if (!text || !isdigit((unsigned char)*text))
        return -1;

    errno = 0;
    char *end;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno == ERANGE)
        return -1;

    unsigned shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    case 'T': shift = 40; break;
    default: break;
    }
    if (shift) {
        end++;
        if (*end == 'i' || *end == 'I')
            end++;
        if (*end == 'b' || *end == 'B')
            end++;
    } else if (*end == 'b' || *end == 'B') {
        end++;
    }
    if (*end != '\0')
        return -1;
    if (shift && value > (ULLONG_MAX >> shift))
        return -1;

    *out = value << shift;
    return 0;
}

static unsigned long long env_size(const char *name, unsigned long long fallback)
{
    unsigned long long value;
    const char *text = getenv(name);
    return text && fakegpu_parse_size(text, &value) == 0 ? value : fallback;
}

static int env_device_count(void)
{
    const char *text = getenv("FAKEGPU_DEVICES");
    if (!text || !*text)
        return DEFAULT_DEVICES;
    char *end;
    long value = strtol(text, &end, 10);
    if (*end != '\0' || value < 0)
        return DEFAULT_DEVICES;
    return value > FAKEGPU_MAX_DEVICES ? FAKEGPU_MAX_DEVICES : (int)value;
}

/* A duration in nanoseconds: digits only. */
static unsigned long long env_ns(const char *name, unsigned long long fallback)
{
    const char *text = getenv(name);
    if (!text || !isdigit((unsigned char)*text))
        return fallback;
    char *end;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    return *end == '\0' && errno == 0 ? value : fallback;
}

static void load_config(void)
{
    g_config.devices = env_device_count();
    g_config.memory = env_size("FAKEGPU_MEMORY", DEFAULT_MEMORY);
    g_config.ctx_overhead = env_size("FAKEGPU_CTX_OVERHEAD", DEFAULT_CTX_OVERHEAD);
    g_config.ctx_extra = env_size("FAKEGPU_CTX_EXTRA", g_config.ctx_overhead);
    g_config.launch_ns = env_ns("FAKEGPU_LAUNCH_NS", DEFAULT_LAUNCH_NS);
    g_config.kernel_ns = env_ns("FAKEGPU_KERNEL_NS", DEFAULT_KERNEL_NS);
    g_config.timeslice_ns = env_ns("FAKEGPU_TIMESLICE_NS", DEFAULT_TIMESLICE_NS);
}

const struct fakegpu_config *fakegpu_config(void)
{
    pthread_once(&g_config_once, load_config);
    return &g_config;
}

/* ------------------------------------------------------------------------ */
/* Device identity                                                          */

void fakegpu_device_uuid(int dev, unsigned char out[FAKEGPU_UUID_BYTES])
{
    memset(out, 0, FAKEGPU_UUID_BYTES);
    out[0] = 0xfa;
    out[1] = 0x4e;
    out[FAKEGPU_UUID_BYTES - 1] = (unsigned char)dev;
}

void fakegpu_device_uuid_string(int dev, char out[48])
{
    unsigned char u[FAKEGPU_UUID_BYTES];
    fakegpu_device_uuid(dev, u);
    snprintf(out, 48,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
             u[12], u[13], u[14], u[15]);
}

unsigned fakegpu_device_pci_bus(int dev)
{
    return (unsigned)dev + 1;
}

/* Parses the whole of text with a 3-field pattern ending in %n: true on a
 * match.  A macro, so that the compiler checks each literal pattern. */
#define SCAN3(text, pattern, a, b, c) \
    (consumed = -1, sscanf((text), pattern "%n", (a), (b), (c), &consumed) == 3 && consumed >= 0 && \
                        (text)[consumed] == '\0')

int fakegpu_device_from_pci_bus_id(const char *bus_id)
{
    if (!bus_id)
        return -1;

    unsigned domain = 0, bus = 0, device = 0, function = 0;
    int consumed = -1;
    bool full = sscanf(bus_id, "%x:%x:%x.%x%n", &domain, &bus, &device, &function,
                       &consumed) == 4 &&
                consumed >= 0 && bus_id[consumed] == '\0';
    if (!full && !SCAN3(bus_id, "%x:%x:%x", &domain, &bus, &device)) {
        domain = 0;
        if (!SCAN3(bus_id, "%x:%x.%x", &bus, &device, &function))
            return -1;
    }
    if (domain != 0 || device != 0 || function != 0 || bus < 1 ||
        bus > (unsigned)fakegpu_config()->devices)
        return -1;
    return (int)bus - 1;
}

/* ------------------------------------------------------------------------ */
/* Process identity and liveness                                            */

/* Fields 3 (state) and 22 (start time in clock ticks since boot) of
 * /proc/<pid>/stat; state may be NULL. */
static int proc_stat(int pid, unsigned long long *out, char *state)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';

    /* The command name (field 2) may contain spaces; fields after it do not. */
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ' || !p[2])
        return -1;
    if (state)
        *state = p[2];
    int field = 2;
    for (; *p; p++) {
        if (*p == ' ' && ++field == 22) {
            *out = strtoull(p + 1, NULL, 10);
            return 0;
        }
    }
    return -1;
}

static int proc_start_time(int pid, unsigned long long *out)
{
    return proc_stat(pid, out, NULL);
}

/* This process's pid and start time, read once: getpid() is a system call,
 * and the accounting compares every slot with them.  Written at first use
 * (g_self_once) and in a forked child (the pthread_atfork handler that
 * first use registers), read-only otherwise. */
static struct {
    pid_t pid;
    unsigned long long start_time;
} g_self;
static pthread_once_t g_self_once = PTHREAD_ONCE_INIT;

static void read_self(void)
{
    g_self.pid = getpid();
    g_self.start_time = 0;
    proc_start_time(g_self.pid, &g_self.start_time);
}

static void state_after_fork_child(void);

static void self_init(void)
{
    read_self();
    pthread_atfork(NULL, NULL, state_after_fork_child);
}

static pid_t self_pid(void)
{
    pthread_once(&g_self_once, self_init);
    return g_self.pid;
}

unsigned long long fakegpu_self_start_time(void)
{
    pthread_once(&g_self_once, self_init);
    return g_self.start_time;
}

static bool slot_is_self(const struct proc_slot *slot)
{
    return slot->pid == self_pid() && slot->start_time == fakegpu_self_start_time();
}

static bool slot_alive(const struct proc_slot *slot)
{
    if (slot->pid <= 0)
        return false;
    if (slot_is_self(slot))
        return true;
    if (kill(slot->pid, 0) != 0 && errno == ESRCH)
        return false;
    /* A recycled pid belongs to a process with a different start time. If
     * /proc is not readable we cannot tell and keep the slot. */
    unsigned long long start;
    return proc_start_time(slot->pid, &start) != 0 || start == slot->start_time;
}

int fakegpu_process_alive(int pid, unsigned long long start_time)
{
    if (pid <= 0)
        return 0;
    if (pid == self_pid())
        return start_time == fakegpu_self_start_time();
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return 0;
    /* A zombie holds nothing; a recycled pid is another process. */
    unsigned long long start;
    char state;
    if (proc_stat(pid, &start, &state) != 0)
        return 1; /* /proc unreadable: cannot tell */
    return start == start_time && state != 'Z' && state != 'X';
}

/* ------------------------------------------------------------------------ */
/* Mapping the state                                                        */

static bool init_mutex(pthread_mutex_t *lock)
{
    pthread_mutexattr_t attr;
    if (pthread_mutexattr_init(&attr) != 0)
        return false;
    bool ok = pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED) == 0 &&
              pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST) == 0 &&
              pthread_mutex_init(lock, &attr) == 0;
    pthread_mutexattr_destroy(&attr);
    return ok;
}

/* The first process to see a zero-filled state initializes it; the others
 * wait until it is ready and then check that the layout is theirs. */
static bool state_ready(struct shared_state *st)
{
    uint32_t expected = STATE_FRESH;
    if (__atomic_compare_exchange_n(&st->init, &expected, STATE_INITIALIZING, false,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        if (!init_mutex(&st->lock))
            return false;
        st->magic = STATE_MAGIC;
        st->version = STATE_VERSION;
        st->size = (uint32_t)sizeof *st;
        __atomic_store_n(&st->init, STATE_READY, __ATOMIC_RELEASE);
        return true;
    }

    const struct timespec tick = { 0, 1000000 };
    for (int waited = 0; __atomic_load_n(&st->init, __ATOMIC_ACQUIRE) != STATE_READY;
         waited++) {
        if (waited >= STATE_INIT_WAIT_MS)
            return false;
        nanosleep(&tick, NULL);
    }
    return st->magic == STATE_MAGIC && st->version == STATE_VERSION &&
           st->size == sizeof *st;
}

static struct shared_state *map_private_state(void)
{
    struct shared_state *st = mmap(NULL, sizeof *st, PROT_READ | PROT_WRITE,
                                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
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
    if (fstat(fd, &sb) == 0 &&
        (sb.st_size >= (off_t)sizeof *st || ftruncate(fd, sizeof *st) == 0))
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
    pid_t pid = self_pid();
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
    void *(*real_dlopen)(const char *, int) = (void *(*)(const char *, int))dlvsym(RTLD_DEFAULT, "dlopen",
                                                                                  "GLIBC_2.34");
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

static struct shared_state *state_get(void)
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

static struct shared_state *lock_state(void)
{
    struct shared_state *st = state_get();
    if (!st)
        return NULL;
    int rc = pthread_mutex_lock(&st->lock);
    if (rc == EOWNERDEAD) {
        /* The holder died; every slot is self-consistent, so carry on. */
        pthread_mutex_consistent(&st->lock);
    } else if (rc != 0) {
        return NULL;
    }
    return st;
}

static void unlock_state(struct shared_state *st)
{
    pthread_mutex_unlock(&st->lock);
}

/* ------------------------------------------------------------------------ */
/* Accounting                                                               */

static bool valid_device(int dev)
{
    return dev >= 0 && dev < FAKEGPU_MAX_DEVICES;
}

/* Clears the slot if its process is gone; returns whether it is in use. */
static bool slot_live_locked(struct proc_slot *slot)
{
    if (slot->pid == 0)
        return false;
    if (slot_alive(slot))
        return true;
    memset(slot, 0, sizeof *slot);
    return false;
}

static unsigned long long device_used_locked(struct shared_state *st, int dev)
{
    unsigned long long used = 0;
    for (int i = 0; i < FAKEGPU_MAX_PROCS; i++)
        if (slot_live_locked(&st->procs[i]))
            used += st->procs[i].used[dev];
    return used;
}

static struct proc_slot *own_slot_locked(struct shared_state *st, bool create)
{
    for (int i = 0; i < FAKEGPU_MAX_PROCS; i++)
        if (slot_is_self(&st->procs[i]))
            return &st->procs[i];
    if (!create)
        return NULL;
    for (int i = 0; i < FAKEGPU_MAX_PROCS; i++) {
        struct proc_slot *slot = &st->procs[i];
        if (!slot_live_locked(slot)) {
            slot->pid = self_pid();
            slot->start_time = fakegpu_self_start_time();
            return slot;
        }
    }
    return NULL;
}

int fakegpu_state_charge(int dev, unsigned long long bytes)
{
    if (!valid_device(dev))
        return -1;
    struct shared_state *st = lock_state();
    if (!st)
        return -1;

    int rc = -1;
    unsigned long long total = fakegpu_config()->memory;
    unsigned long long used = device_used_locked(st, dev);
    if (used <= total && bytes <= total - used) {
        struct proc_slot *slot = own_slot_locked(st, true);
        if (slot) {
            slot->used[dev] += bytes;
            rc = 0;
        }
    }
    unlock_state(st);
    return rc;
}

void fakegpu_state_uncharge(int dev, unsigned long long bytes)
{
    if (!valid_device(dev))
        return;
    struct shared_state *st = lock_state();
    if (!st)
        return;
    struct proc_slot *slot = own_slot_locked(st, false);
    if (slot)
        slot->used[dev] -= bytes < slot->used[dev] ? bytes : slot->used[dev];
    unlock_state(st);
}

unsigned long long fakegpu_state_device_used(int dev)
{
    if (!valid_device(dev))
        return 0;
    struct shared_state *st = lock_state();
    if (!st)
        return 0;
    unsigned long long used = device_used_locked(st, dev);
    unlock_state(st);
    return used;
}

/* What each live process shows for dev, those that show 0 left out: at
 * most cap of them in out; returns how many there are.  Called with the
 * state locked. */
static unsigned list_locked(struct shared_state *st, int dev,
                            unsigned long long (*figure)(const struct proc_slot *, int dev, unsigned long long now_ns),
                            unsigned long long now_ns, struct fakegpu_proc_figure *out, unsigned cap)
{
    unsigned count = 0;
    for (int i = 0; i < FAKEGPU_MAX_PROCS; i++) {
        struct proc_slot *slot = &st->procs[i];
        unsigned long long value = slot_live_locked(slot) ? figure(slot, dev, now_ns) : 0;
        if (value == 0)
            continue;
        if (count < cap)
            out[count] = (struct fakegpu_proc_figure){ slot->pid, value };
        count++;
    }
    return count;
}

static unsigned long long memory_held(const struct proc_slot *slot, int dev, unsigned long long now_ns)
{
    (void)now_ns;
    return slot->used[dev];
}

unsigned fakegpu_state_processes(int dev, struct fakegpu_proc_figure *out, unsigned cap)
{
    if (!valid_device(dev))
        return 0;
    struct shared_state *st = lock_state();
    if (!st)
        return 0;
    unsigned count = list_locked(st, dev, memory_held, 0, out, cap);
    unlock_state(st);
    return count;
}

/* ------------------------------------------------------------------------ */
/* Device time                                                              */

struct fakegpu_turn *fakegpu_state_turn(int dev)
{
    struct shared_state *st = valid_device(dev) ? state_get() : NULL;
    return st ? &st->turns[dev] : NULL;
}

void fakegpu_state_record_busy(int dev, unsigned long long start_ns, unsigned long long end_ns)
{
    if (!valid_device(dev) || end_ns <= start_ns)
        return;
    struct shared_state *st = lock_state();
    if (!st)
        return;
    fakegpu_busy_add(&st->busy[dev], start_ns, end_ns);
    struct proc_slot *slot = own_slot_locked(st, true);
    if (slot)
        fakegpu_busy_add(&slot->busy[dev], start_ns, end_ns);
    unlock_state(st);
}

static unsigned long long time_used(const struct proc_slot *slot, int dev, unsigned long long now_ns)
{
    return fakegpu_busy_window(&slot->busy[dev], now_ns);
}

unsigned fakegpu_state_busy(int dev, unsigned long long now_ns, unsigned long long *device_ns,
                            struct fakegpu_proc_figure *out, unsigned cap)
{
    *device_ns = 0;
    if (!valid_device(dev))
        return 0;
    struct shared_state *st = lock_state();
    if (!st)
        return 0;
    *device_ns = fakegpu_busy_window(&st->busy[dev], now_ns);
    unsigned count = list_locked(st, dev, time_used, now_ns, out, cap);
    unlock_state(st);
    return count;
}

/* A forked child is another process, and the thread of its parent that
 * may have held g_map.lock at fork is not there. */
static void state_after_fork_child(void)
{
    read_self();
    pthread_mutex_init(&g_map.lock, NULL);
}

int fakegpu_self_pid(void)
{
    return self_pid();
}

/* ------------------------------------------------------------------------ */
/* Export table                                                             */

struct export_table {
    unsigned long long size; /* first 8 bytes: size of the table */
    void *entries[4];
};

static const struct export_table g_export_table = { sizeof(struct export_table), { 0 } };

const void *fakegpu_export_table(const unsigned char *id)
{
    return id && id[0] == 0xfa ? &g_export_table : NULL;
}
