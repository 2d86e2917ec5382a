/* state_dir and its files, checked before they are trusted; see state_dir.h. */
#define _GNU_SOURCE
#include "tools/mediatord/config/state_dir.h"

#include "common/error.h"
#include "tools/mediatord/config/trusted_path.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind(mode_t m)
{
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket" : S_ISLNK(m) ? "a link"
           : S_ISCHR(m) || S_ISBLK(m) ? "a device" : "not a regular file";
}

/* Refuses what st describes unless it is the mediator's own. */
static int check_owner(const struct stat *st, const char *what, const char *path, mode_t forbidden, char *err,
                       size_t errlen)
{
    uid_t me = geteuid();
    if (st->st_uid != me)
        return vgpu_fail(err, errlen, "%s %s is owned by uid %u (mode %04o); vgpu-mediatord trusts only its own "
                         "(uid %u): chown %u %s, or remove it", what, path, (unsigned)st->st_uid,
                         (unsigned)(st->st_mode & 07777), (unsigned)me, (unsigned)me, path);
    if (st->st_mode & forbidden)
        return vgpu_fail(err, errlen, "%s %s has mode %04o: others may write it, and vgpu-mediatord trusts it only "
                         "when they may not: chmod %s %s", what, path, (unsigned)(st->st_mode & 07777),
                         forbidden & S_IWGRP ? "go-w" : "o-w", path);
    return 0;
}

int med_state_dir_open(const char *path, char *err, size_t errlen)
{
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        return vgpu_fail(err, errlen, "cannot create state_dir %s: %s", path, strerror(errno));
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 && (errno == ELOOP || errno == ENOTDIR)) {
        struct stat lst;
        bool link = lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode);
        return vgpu_fail(err, errlen, "state_dir %s is %s; vgpu-mediatord wants a directory of its own there%s", path,
                         link ? "a symbolic link" : "not a directory",
                         link ? ", not a link to one: name the directory itself" : "");
    }
    if (fd < 0)
        return vgpu_fail(err, errlen, "cannot open state_dir %s: %s", path, strerror(errno));
    if (fstat(fd, &st) != 0 || check_owner(&st, "state_dir", path, S_IWGRP | S_IWOTH, err, errlen) != 0 ||
        med_trusted_dirs(path, "state_dir", err, errlen) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int med_state_open(int dir, const char *dir_path, const char *name, int flags, enum med_state_trust trust,
                   char *err, size_t errlen)
{
    char path[4400];
    snprintf(path, sizeof(path), "%s/%s", dir_path, name);
    if (flags & O_CREAT)
        flags |= O_EXCL;
    int fd = openat(dir, name, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
    if (fd < 0 && errno == ENOENT && !(flags & O_CREAT))
        return -ENOENT;
    if (fd < 0 && errno == ELOOP)
        return vgpu_fail(err, errlen, "%s is a symbolic link; vgpu-mediatord follows none in state_dir: remove it",
                         path);
    if (fd < 0)
        return vgpu_fail(err, errlen, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    int r = fstat(fd, &st) == 0 ? 0 : vgpu_fail(err, errlen, "cannot stat %s: %s", path, strerror(errno));
    if (r == 0 && !S_ISREG(st.st_mode))
        r = vgpu_fail(err, errlen, "%s is %s, not a file vgpu-mediatord made: remove it", path, kind(st.st_mode));
    if (r == 0)
        r = check_owner(&st, "state_dir file", path, trust == MED_STATE_PRIVATE ? S_IWGRP | S_IWOTH : S_IWOTH, err,
                        errlen);
    if (r != 0) {
        close(fd);
        return -1;
    }
    /* Regular files never block; the flag only kept a FIFO from doing so. */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}
