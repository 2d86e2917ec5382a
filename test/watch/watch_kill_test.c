/*
 * The watch's SIGKILL (tools/mediatord/watch/watch_kill.c) reaches the process
 * it found and no other: `watch_kill_test SCENARIO`.  A reused pid is a
 * process under the same pid with another start time; the test gives the
 * kill a start time its target does not have, as the watch would after
 * the process it found had ended and the pid gone to another.
 */
#define _GNU_SOURCE
#include "test/common/client_util.h"
#include "tools/mediatord/watch/watch_kill.h"
#include "common/contract/window/bar0.h"

#include <signal.h>
#include <sys/wait.h>

static pid_t sleeper(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        pause();
        _exit(0);
    }
    return pid;
}

/* How the child ended: the signal that killed it, 0 if it runs, -1 otherwise. */
static int ended_by(pid_t pid, bool wait_for_it)
{
    int status;
    pid_t r = waitpid(pid, &status, wait_for_it ? 0 : WNOHANG);
    if (r == 0)
        return 0;
    return r == pid && WIFSIGNALED(status) ? WTERMSIG(status) : -1;
}

static void reused_pid_is_spared(void)
{
    pid_t child = sleeper();
    uint64_t start = vgpu_proc_start_time(child);
    char why[256] = "";
    CHECK(start != 0, "no start time for pid %d", (int)child);
    int r = med_kill_verified(child, start + 1, why, sizeof(why));
    CHECK(r == -1 && strstr(why, "reused"), "a kill with another start time returned %d: %s", r, why);
    usleep(50000);
    CHECK(ended_by(child, false) == 0, "the process under the reused pid was signalled");
    r = med_kill_verified(child, start, why, sizeof(why));
    CHECK(r == 0, "the kill of the process itself returned %d: %s", r, why);
    CHECK(ended_by(child, true) == SIGKILL, "the process found was not killed by SIGKILL");
}

static void init_and_self_are_spared(void)
{
    char why[256] = "";
    CHECK(med_kill_verified(1, vgpu_proc_start_time(1) ? vgpu_proc_start_time(1) : 1, why, sizeof(why)) == -1 &&
              strstr(why, "init"),
          "pid 1: %s", why);
    CHECK(med_kill_verified(getpid(), vgpu_proc_start_time(getpid()), why, sizeof(why)) == -1 &&
              strstr(why, "vgpu-mediatord itself"),
          "the mediator itself: %s", why);
}

static void unknown_start_time_is_spared(void)
{
    pid_t child = sleeper();
    char why[256] = "";
    CHECK(med_kill_verified(child, 0, why, sizeof(why)) == -1 && strstr(why, "start time is unknown"),
          "start time 0: %s", why);
    usleep(50000);
    CHECK(ended_by(child, false) == 0, "a process of unknown start time was signalled");
    kill(child, SIGKILL);
    ended_by(child, true);
}

static void ended_process_is_said(void)
{
    pid_t child = sleeper();
    uint64_t start = vgpu_proc_start_time(child);
    kill(child, SIGKILL);
    ended_by(child, true);
    char why[256] = "";
    CHECK(med_kill_verified(child, start, why, sizeof(why)) == -1 && strstr(why, "ended"), "a reaped process: %s",
          why);
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "";
    if (strcmp(s, "reused-pid-is-spared") == 0)
        reused_pid_is_spared();
    else if (strcmp(s, "init-and-self-are-spared") == 0)
        init_and_self_are_spared();
    else if (strcmp(s, "unknown-start-time-is-spared") == 0)
        unknown_start_time_is_spared();
    else if (strcmp(s, "ended-process-is-said") == 0)
        ended_process_is_said();
    else {
        fprintf(stderr, "usage: watch_kill_test reused-pid-is-spared | init-and-self-are-spared | "
                        "unknown-start-time-is-spared | ended-process-is-said\n");
        return 2;
    }
    if (atomic_load(&failures))
        return 1;
    printf("ok - %s\n", s);
    return 0;
}
