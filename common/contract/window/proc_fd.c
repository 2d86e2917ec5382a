/* A descriptor another process keeps open, found by its link (proc_fd.h). */
#define _GNU_SOURCE
#include "common/contract/window/proc_fd.h"

#include <stdbool.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether fd, as opened, is a regular file that still links to link: the
 * other process may have put another file under the number between the
 * look and the open (a FIFO, which the open must not wait on: it does
 * not, with O_NONBLOCK). */
static bool still(int fd, const char *link)
{
    struct stat st;
    char self[64], seen[256];
    snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(self, seen, sizeof(seen) - 1);
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || n <= 0)
        return false;
    seen[n] = '\0';
    return strcmp(seen, link) == 0;
}

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
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        if (fd < 0) {
            result = -errno;
        } else if (!still(fd, link)) {
            close(fd);
            result = -EPROTO;
        } else {
            result = fd;
        }
    }
    closedir(d);
    return result;
}
