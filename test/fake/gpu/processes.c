/*
 * Which process this is and which others still run: the shared state keeps
 * a slot per process and drops those of dead ones (kill(pid, 0) fails with
 * ESRCH, or the pid was reused by a process with another start time).
 */
#define _GNU_SOURCE
#include "test/fake/gpu/shared_state.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

bool fakegpu_slot_is_self(const struct proc_slot *slot)
{
    return slot->pid == self_pid() && slot->start_time == fakegpu_self_start_time();
}

bool fakegpu_slot_alive(const struct proc_slot *slot)
{
    if (slot->pid <= 0)
        return false;
    if (fakegpu_slot_is_self(slot))
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

/* A forked child is another process, and the thread of its parent that
 * may have held the state's lock at fork (state.c) is not there. */
static void state_after_fork_child(void)
{
    read_self();
    fakegpu_state_after_fork_child();
}

int fakegpu_self_pid(void)
{
    return self_pid();
}
