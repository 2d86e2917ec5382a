/* See command.h. */
#define _GNU_SOURCE
#include "tools/setup/command.h"

#include "common/error.h"

#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* sudo's PATH has /sbin, a plain user's often not: ldconfig lives there. */
static const char *program(const char *name, char *buf, size_t len)
{
    if (strchr(name, '/'))
        return name;
    static const char *const dirs[] = { "/usr/sbin", "/sbin" };
    const char *path = getenv("PATH");
    char copy[4096], *save = NULL;
    snprintf(copy, sizeof(copy), "%s", path ? path : "/usr/bin:/bin");
    for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save))
        if ((size_t)snprintf(buf, len, "%s/%s", d, name) < len && access(buf, X_OK) == 0)
            return buf;
    for (size_t i = 0; i < sizeof(dirs) / sizeof(*dirs); i++)
        if ((size_t)snprintf(buf, len, "%s/%s", dirs[i], name) < len && access(buf, X_OK) == 0)
            return buf;
    return name;
}

static void describe(const char *const argv[], char *out, size_t len)
{
    size_t n = 0;
    out[0] = '\0';
    for (int i = 0; argv[i] && n < len; i++)
        n += (size_t)snprintf(out + n, len - n, "%s%s", i ? " " : "", argv[i]);
}

int setup_run(const char *const argv[], char *err, size_t errlen)
{
    char path[4096], what[1024];
    describe(argv, what, sizeof(what));
    fflush(stdout); /* its output after ours */
    pid_t pid;
    int e = posix_spawn(&pid, program(argv[0], path, sizeof(path)), NULL, NULL, (char *const *)argv, environ);
    if (e != 0)
        return vgpu_fail(err, errlen, "cannot run %s: %s", what, strerror(e));
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return vgpu_fail(err, errlen, "%s: %s", what, strerror(errno));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFEXITED(status))
        return vgpu_fail(err, errlen, "%s exited with status %d", what, WEXITSTATUS(status));
    return vgpu_fail(err, errlen, "%s was killed by signal %d", what, WTERMSIG(status));
}
