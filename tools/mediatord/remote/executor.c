/* Starting an executor for a remote guest (executor.h). */
#define _GNU_SOURCE
#include "tools/mediatord/remote/executor.h"

#include "common/error.h"
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

int med_executor_start(const struct med_executor_for *f, char *err, size_t errlen)
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
    if (!env) {
        free(preload);
        return vgpu_fail(err, errlen, "out of memory");
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
        pid_t grandchild = fork();
        if (grandchild != 0)
            _exit(grandchild < 0 ? 1 : 0);
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
    int status = 0;
    int waited = child > 0 ? (int)waitpid(child, &status, 0) : -1;
    free(preload);
    for (size_t i = 0; env[i]; i++)
        if (strncmp(env[i], "LD_PRELOAD=", 11) == 0 || strncmp(env[i], "VGPU_NAME=", 10) == 0 ||
            strncmp(env[i], "VGPU_MEDIATOR_SOCKET=", 21) == 0)
            free(env[i]);
    free(env);
    if (child < 0 || waited < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return vgpu_fail(err, errlen, "could not start %s: %s", exe, child < 0 ? strerror(errno) : "fork failed");
    return 0;
}
