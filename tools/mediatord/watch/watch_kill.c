/* SIGKILL, to the right process only; see watch_kill.h. */
#define _GNU_SOURCE
#include "tools/mediatord/watch/watch_kill.h"

#include "common/error.h"
#include "common/contract/window/bar0.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Through syscall(): glibc wraps these from 2.36 only. */
static int pidfd_open_(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int pidfd_kill(int pidfd)
{
    return (int)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
}

int med_kill_verified(pid_t pid, uint64_t start_time, char *why, size_t len)
{
    if (pid <= 1)
        return vgpu_fail(why, len, "pid %d is %s", (int)pid, pid == 1 ? "init" : "no process");
    if (pid == getpid())
        return vgpu_fail(why, len, "pid %d is vgpu-mediatord itself", (int)pid);
    if (!start_time)
        return vgpu_fail(why, len, "its start time is unknown, so a reused pid could not be told apart");
    /* The pidfd holds on to whichever process has the pid now: if that one
     * still has the start time, the signal reaches it and no other. */
    int fd = pidfd_open_(pid);
    if (fd < 0 && errno != ENOSYS)
        return vgpu_fail(why, len, "%s", errno == ESRCH ? "it has ended" : strerror(errno));
    uint64_t now = vgpu_proc_start_time(pid);
    if (now != start_time) {
        if (fd >= 0)
            close(fd);
        if (!now)
            return vgpu_fail(why, len, "it has ended");
        return vgpu_fail(why, len, "pid %d is another process now (started at tick %llu, not %llu: the pid was "
                         "reused)", (int)pid, (unsigned long long)now, (unsigned long long)start_time);
    }
    /* No pidfds (a kernel before 5.3): the window between check and kill is
     * the one kill(2) leaves. */
    int r = fd >= 0 ? pidfd_kill(fd) : kill(pid, SIGKILL);
    int e = errno;
    if (fd >= 0)
        close(fd);
    if (r != 0)
        return vgpu_fail(why, len, "%s", e == ESRCH ? "it has ended" : strerror(e));
    return 0;
}
