/* A guard on the mappings of files others may resize; see window_guard.h. */
#define _GNU_SOURCE
#include "tools/mediatord/vgpus/window_guard.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

struct guarded {
    _Atomic uintptr_t start; /* 0: a free entry */
    _Atomic size_t len;
    _Atomic bool lost;
};

/* Owned by the loop thread (add, remove); the handler reads it. */
static struct guarded table[MED_GUARD_MAX];

/* In place of the mapping: zeroed pages nothing else maps.  mmap is a
 * system call, safe in a handler; errno is the interrupted code's.  False
 * when it could not be done. */
static bool replace(struct guarded *g)
{
    int saved = errno;
    void *at = (void *)atomic_load(&g->start);
    void *p = mmap(at, atomic_load(&g->len), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    errno = saved;
    if (p == MAP_FAILED)
        return false;
    atomic_store(&g->lost, true);
    return true;
}

static void on_sigbus(int sig, siginfo_t *info, void *context)
{
    (void)context;
    uintptr_t a = (uintptr_t)info->si_addr;
    for (int i = 0; i < MED_GUARD_MAX; i++) {
        uintptr_t s = atomic_load(&table[i].start);
        if (s && a >= s && a - s < atomic_load(&table[i].len)) {
            if (replace(&table[i]))
                return; /* the faulting access runs again, on the new pages */
            break;      /* no memory to put there: the fault would come back for ever */
        }
    }
    /* Not a guarded window (or no way to replace it): what SIGBUS always did. */
    signal(sig, SIG_DFL);
    raise(sig);
}

int med_window_guard_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    return sigaction(SIGBUS, &sa, NULL);
}

int med_window_guard_add(void *addr, size_t len)
{
    for (int i = 0; i < MED_GUARD_MAX; i++)
        if (!atomic_load(&table[i].start)) {
            atomic_store(&table[i].lost, false);
            atomic_store(&table[i].len, len);
            atomic_store(&table[i].start, (uintptr_t)addr);
            return i;
        }
    return -1;
}

void med_window_guard_remove(int handle)
{
    if (handle >= 0 && handle < MED_GUARD_MAX)
        atomic_store(&table[handle].start, 0);
}

bool med_window_guard_lost(int handle)
{
    return handle >= 0 && handle < MED_GUARD_MAX && atomic_load(&table[handle].lost);
}

void med_window_guard_retire(int handle)
{
    if (handle >= 0 && handle < MED_GUARD_MAX && atomic_load(&table[handle].start) &&
        !atomic_load(&table[handle].lost))
        replace(&table[handle]);
}
