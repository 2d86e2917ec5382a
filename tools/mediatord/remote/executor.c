/* Starting an executor for a remote guest (executor.h). */
#define _GNU_SOURCE
#include "tools/mediatord/remote/executor.h"

#include "common/error.h"
#include "common/log.h"
#include "tools/mediatord/proc.h"
#include "tools/lib/find_libs.h"
#include "vgpu_install_dirs.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* vgpu-executor beside this program (the build tree, or an install that
 * puts both in one directory), else in the install's bindir. */
static int find_executor(char *out, size_t len)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = 0;
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = 0;
            snprintf(out, len, "%s/vgpu-executor", self);
            if (access(out, X_OK) == 0)
                return 0;
        }
    }
    snprintf(out, len, "%s/vgpu-executor", VGPU_BINDIR);
    return access(out, X_OK);
}

/* The executor's environment: the mediator's, less any vGPU setting of its
 * own but the log's, the real driver's and the cache of module images',
 * with the preload and the vGPU.  NULL when out of memory. */
static char **environment(const struct med_executor_for *f, const char *preload)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 4, sizeof(*env));
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *e = environ[i];
        if (strncmp(e, "LD_PRELOAD=", 11) == 0 ||
            (strncmp(e, "VGPU_", 5) == 0 && strncmp(e, "VGPU_REAL_", 10) != 0 && strncmp(e, "VGPU_LOG", 8) != 0 &&
             strncmp(e, "VGPU_REMOTE_IMAGE_CACHE", 23) != 0))
            continue;
        env[k++] = (char *)e;
    }
    if (asprintf(&env[k++], "LD_PRELOAD=%s", preload) < 0 || asprintf(&env[k++], "VGPU_NAME=%s", f->vgpu) < 0 ||
        asprintf(&env[k++], "VGPU_MEDIATOR_SOCKET=%s", f->socket) < 0)
        return NULL; /* the few bytes leak with the failure */
    return env;
}

static void free_environment(char **env)
{
    if (!env)
        return;
    for (size_t i = 0; env[i]; i++)
        if (strncmp(env[i], "LD_PRELOAD=", 11) == 0 || strncmp(env[i], "VGPU_NAME=", 10) == 0 ||
            strncmp(env[i], "VGPU_MEDIATOR_SOCKET=", 21) == 0)
            free(env[i]);
    free(env);
}

static void close_pair(int p[2])
{
    for (int i = 0; i < 2; i++)
        if (p[i] >= 0)
            close(p[i]);
}

int med_executor_check(const struct med_executor_for *f, char *err, size_t errlen)
{
    if (f->uid == 0)
        return vgpu_fail(err, errlen,
                         "the process asking runs as root, and an executor never does: run the guest "
                         "as another user (a user namespace maps a container's root to one), or name the "
                         "user its executors run as (executor_user = in the vGPU's section)");
    if (geteuid() != 0 && f->uid != geteuid())
        return vgpu_fail(err, errlen,
                         "vgpu-mediatord runs as uid %u and cannot start an executor as uid %u: "
                         "remote vGPUs for other users need the mediator to run as root",
                         (unsigned)geteuid(), (unsigned)f->uid);
    char exe[PATH_MAX + 32];
    if (find_executor(exe, sizeof(exe)) != 0)
        return vgpu_fail(err, errlen, "vgpu-executor is neither beside vgpu-mediatord nor in %s", VGPU_BINDIR);
    return 0;
}

/* The executor's place, chosen while it waits to be let go: the guest's
 * cgroup, else the vGPU's executor_cgroup; out->cgroup says which ("" the
 * mediator's own). */
static void place(const struct med_executor_for *f, pid_t pid, struct med_executor_started *out)
{
    const char *where[2] = { f->cgroup, f->fallback };
    int e[2] = { ENOENT, ENOENT };
    out->cgroup[0] = '\0';
    for (int i = 0; i < 2; i++)
        if (where[i] && where[i][0] && (e[i] = med_cgroup_move(where[i], pid)) == 0) {
            snprintf(out->cgroup, sizeof(out->cgroup), "%s", where[i]);
            return;
        }
    vgpu_warn("the executor of vGPU %s (pid %d) runs in vgpu-mediatord's cgroup: its guest's cgroup %s%s%s, and "
              "%s%s%s%s; the operator names a cgroup with pids.max and memory.max for them in executor_cgroup =",
              f->vgpu, (int)pid, f->cgroup && f->cgroup[0] ? f->cgroup : "is unknown",
              f->cgroup && f->cgroup[0] ? " refused it: " : "", f->cgroup && f->cgroup[0] ? strerror(e[0]) : "",
              f->fallback ? "executor_cgroup " : "the vGPU has no executor_cgroup", f->fallback ? f->fallback : "",
              f->fallback ? " refused it: " : "", f->fallback ? strerror(e[1]) : "");
}

int med_executor_start(const struct med_executor_for *f, struct med_executor_started *out, char *err,
                       size_t errlen)
{
    if (med_executor_check(f, err, errlen) != 0)
        return -1;
    char exe[PATH_MAX + 32];
    if (find_executor(exe, sizeof(exe)) != 0)
        return vgpu_fail(err, errlen, "vgpu-executor is neither beside vgpu-mediatord nor in %s", VGPU_BINDIR);
    struct vgpu_libs libs;
    char why[512];
    if (vgpu_find_libs(NULL, true, &libs, why, sizeof(why)) != 0)
        return vgpu_fail(err, errlen, "the executor needs vgpu's libraries: %s", why);
    char *preload = vgpu_preload_list(&libs, NULL);
    char **env = preload ? environment(f, preload) : NULL;
    int said[2] = { -1, -1 }, go[2] = { -1, -1 };
    if (!env || pipe2(said, O_CLOEXEC) != 0 || pipe2(go, O_CLOEXEC) != 0) {
        free(preload);
        free_environment(env);
        close_pair(said);
        return vgpu_fail(err, errlen, "%s", env ? strerror(errno) : "out of memory");
    }
    /* Everything is made before the fork: the child only calls what is
     * safe after fork in a process with threads (NVML starts one). */
    char *argv[] = { "vgpu-executor", f->channels ? "--bar-fd" : "--fd", "3", "--channels", (char *)f->channels,
                     NULL };
    if (!f->channels)
        argv[3] = NULL;
    sigset_t none;
    sigemptyset(&none);
    pid_t child = fork();
    if (child == 0) {
        /* A session of its own, then a second fork: the executor is not
         * the mediator's child, and a mediator restart does not end it. */
        setsid();
        close(said[0]);
        close(go[1]); /* so that the grandchild sees the mediator give up */
        pid_t grandchild = fork();
        if (grandchild != 0) {
            /* Its pid said.  The grandchild waits for the mediator below,
             * alive, so its pid is not reused before the mediator has a
             * pidfd of it. */
            bool told = grandchild > 0 && write(said[1], &grandchild, sizeof(grandchild)) == sizeof(grandchild);
            _exit(told ? 0 : 1);
        }
        close(said[1]);
        /* Waits until the mediator placed it (one byte), or gave up (none). */
        char byte;
        ssize_t n;
        while ((n = read(go[0], &byte, 1)) < 0 && errno == EINTR)
            ;
        if (n != 1)
            _exit(126);
        if (geteuid() == 0 &&
            (setgroups((size_t)f->ngroups, f->groups) != 0 || setgid(f->gid) != 0 || setuid(f->uid) != 0))
            _exit(126);
        if (f->fd == 3 ? fcntl(3, F_SETFD, 0) != 0 : dup2(f->fd, 3) != 3)
            _exit(126);
        close_range(4, ~0u, 0); /* nothing of the mediator's but the guest's connection */
        signal(SIGPIPE, SIG_DFL);
        sigprocmask(SIG_SETMASK, &none, NULL); /* the mediator's loop blocks them for its signalfd */
        execve(exe, argv, env);
        _exit(127);
    }
    close(said[1]);
    close(go[0]);
    pid_t pid = -1;
    ssize_t got = child > 0 ? read(said[0], &pid, sizeof(pid)) : -1;
    close(said[0]);
    out->pid = got == sizeof(pid) ? pid : -1;
    out->pidfd = out->pid > 0 ? (int)syscall(SYS_pidfd_open, out->pid, 0) : -1;
    if (out->pid > 0) {
        place(f, out->pid, out);
        if (write(go[1], "g", 1) != 1)
            out->pid = -1; /* the grandchild is gone: nothing runs */
    }
    close(go[1]); /* a grandchild not let go (no byte) ends */
    int status = 0;
    int waited = child > 0 ? (int)waitpid(child, &status, 0) : -1;
    free(preload);
    free_environment(env);
    if (child < 0 || waited < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || out->pid <= 0) {
        if (out->pidfd >= 0)
            close(out->pidfd);
        return vgpu_fail(err, errlen, "could not start %s: %s", exe, child < 0 ? strerror(errno) : "fork failed");
    }
    return 0;
}
