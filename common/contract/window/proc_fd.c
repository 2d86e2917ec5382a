/* A descriptor another process keeps open, found by its link (proc_fd.h). */
#define _GNU_SOURCE
#include "common/contract/window/proc_fd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int vgpu_proc_fd_open(const char *fd_dir, const char *link)
{
    DIR *d = opendir(fd_dir);
    if (!d)
        return -errno;
    int result = -ENOENT;
    struct dirent *e;
    while (result == -ENOENT && (e = readdir(d))) {
        char seen[256];
        ssize_t n = readlinkat(dirfd(d), e->d_name, seen, sizeof(seen) - 1);
        if (n <= 0)
            continue;
        seen[n] = '\0';
        if (strcmp(seen, link) != 0)
            continue;
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC);
        result = fd >= 0 ? fd : -errno;
    }
    closedir(d);
    return result;
}
