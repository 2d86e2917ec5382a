/*
 * vgpu-executor: runs the CUDA calls of remote guests on this host's GPU
 * (docs/guide/remote.md).
 *
 *   vgpu-executor --listen SOCKET   serves each connection to SOCKET in a
 *                                   process of its own, until killed
 *   vgpu-executor --fd N            serves the connection on descriptor N
 *   vgpu-executor --bar FILE [--channels N] [--timeout S]
 *                                   serves the channels of FILE, a VM's
 *                                   ivshmem memory (docs/guide/vm.md), until
 *                                   killed or FILE is removed
 *   vgpu-executor --bar-fd N [...]  the same of the file open on N (as
 *                                   vgpu-mediatord hands it over)
 *
 * Each guest process gets an executor process: what it allocated goes
 * with it when the guest's connection does.  Run it under vgpu
 * (LD_PRELOAD, or the vGPU's settings) and the guests' calls are held to
 * that vGPU's quota and share by vgpu's own backend.
 */
#define _GNU_SOURCE
#include "forwarder/remote/executor/executor.h"

#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static int usage(void)
{
    fprintf(stderr, "usage: vgpu-executor --listen SOCKET | --fd N | --bar FILE|--bar-fd N [--channels N] "
                    "[--timeout S]\n");
    return 2;
}

/* A whole number from 1 to most, or 0. */
static unsigned long count_of(const char *s, unsigned long most)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    return *s >= '0' && *s <= '9' && !*end && v <= most ? v : 0;
}

/* --bar FILE|--bar-fd N [--channels N] [--timeout S]: 16 channels, 30 s. */
static int bar(int argc, char **argv)
{
    int fd = -1;
    char name[4096];
    snprintf(name, sizeof(name), "%s", argv[2]);
    if (strcmp(argv[1], "--bar-fd") == 0) {
        unsigned long n = count_of(argv[2], 1u << 20);
        if (!n && strcmp(argv[2], "0") != 0)
            return usage();
        fd = (int)n;
        char link[64];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t len = readlink(link, name, sizeof(name) - 1); /* the file's name, for the log */
        if (len > 0)
            name[len] = 0;
    } else if ((fd = open(argv[2], O_RDWR | O_CLOEXEC | O_NOFOLLOW)) < 0) {
        vgpu_error("executor: cannot serve %s: %s", argv[2], strerror(errno));
        return 1;
    }
    unsigned long channels = 16, timeout = 30;
    for (int i = 3; i < argc; i += 2) {
        unsigned long *v = strcmp(argv[i], "--channels") == 0  ? &channels
                           : strcmp(argv[i], "--timeout") == 0 ? &timeout
                                                               : NULL;
        if (!v || i + 1 >= argc || !(*v = count_of(argv[i + 1], v == &channels ? 256 : 86400)))
            return usage();
    }
    /* Its executors are its children, each waited for. */
    signal(SIGCHLD, SIG_DFL);
    return vgpu_exec_serve_channels(fd, name, (unsigned)channels, (uint64_t)timeout * 1000000000u);
}

static int listen_on(const char *path)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof(a.sun_path)) {
        vgpu_error("executor: socket path too long: %s", path);
        return 1;
    }
    strcpy(a.sun_path, path);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    unlink(path);
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(s, 64) != 0) {
        vgpu_error("executor: cannot listen on %s: %s", path, strerror(errno));
        return 1;
    }
    /* Children are not waited for: each ends with its guest. */
    struct sigaction sa = { .sa_handler = SIG_DFL, .sa_flags = SA_NOCLDWAIT };
    sigaction(SIGCHLD, &sa, NULL);
    vgpu_info("executor: listening on %s", path);
    for (;;) {
        int c = accept4(s, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            vgpu_error("executor: accept on %s: %s", path, strerror(errno));
            return 1;
        }
        pid_t pid = fork();
        if (pid == 0) {
            close(s);
            _exit(vgpu_exec_serve(c));
        }
        if (pid < 0)
            vgpu_error("executor: cannot start a process for a guest: %s", strerror(errno));
        close(c);
    }
}

int main(int argc, char **argv)
{
    vgpu_log_set_program("vgpu-executor");
    if (argc >= 3 && (strcmp(argv[1], "--bar") == 0 || strcmp(argv[1], "--bar-fd") == 0))
        return bar(argc, argv);
    if (argc != 3)
        return usage();
    if (strcmp(argv[1], "--listen") == 0)
        return listen_on(argv[2]);
    if (strcmp(argv[1], "--fd") == 0) {
        char *end;
        long fd = strtol(argv[2], &end, 10);
        if (*end || fd < 0)
            return usage();
        /* _exit: the guest's lanes' threads may still be in the driver, which exit's handlers would tear down. */
        _exit(vgpu_exec_serve((int)fd));
    }
    return usage();
}
