/* How vgpu-mediatord runs; see daemon.h. */
#define _GNU_SOURCE
#include "tools/mediatord/daemon.h"

#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* The child's end of the pipe its parent waits on: main's thread, before the loop. */
static int parent_fd = -1;

void med_daemon_fork(void)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        vgpu_error("cannot fork into the background: %s", strerror(errno));
        exit(1);
    }
    pid_t pid = fork();
    if (pid < 0) {
        vgpu_error("cannot fork into the background: %s", strerror(errno));
        exit(1);
    }
    if (pid > 0) {
        close(p[1]);
        char word = 1;
        ssize_t n;
        while ((n = read(p[0], &word, 1)) < 0 && errno == EINTR)
            ;
        _exit(n == 1 ? word : 1); /* nothing read: the child failed, and said why */
    }
    close(p[0]);
    parent_fd = p[1];
    setsid();
}

void med_daemon_ready(int log_fd)
{
    if (parent_fd < 0)
        return;
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
    }
    if (log_fd >= 0)
        vgpu_log_set_fd(log_fd);
    if (null >= 0) {
        dup2(null, 2);
        close(null);
    }
    char ok = 0;
    if (write(parent_fd, &ok, 1) != 1)
        vgpu_warn("cannot tell the starting process it serves: %s", strerror(errno));
    close(parent_fd);
    parent_fd = -1;
}

void med_notify_systemd(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (!path || (path[0] != '/' && path[0] != '@') || strlen(path) >= sizeof(sa.sun_path))
        return;
    strcpy(sa.sun_path, path);
    if (sa.sun_path[0] == '@')
        sa.sun_path[0] = '\0'; /* an abstract socket */
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path));
    if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, len) < 0)
        vgpu_warn("cannot tell systemd %s: %s", state, strerror(errno));
    close(fd);
}
