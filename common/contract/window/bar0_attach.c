/*
 * Mapping BAR0 from where it lives: a standalone file (created by the first
 * process), a guest window (an ivshmem BAR the host's mediator wrote), or a
 * mediated window's two descriptors.  See bar0.h.
 */
#define _GNU_SOURCE
#include "common/contract/window/bar0.h"

#include "common/error.h"
#include "common/contract/settings/settings.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static bool same_config(const struct vgpu_bar0_config *a, const struct vgpu_bar0_config *b)
{
    if (a->device_count != b->device_count || a->all_devices != b->all_devices)
        return false;
    for (uint32_t d = 0; d < a->device_count; d++)
        if (strcmp(a->device[d].physical, b->device[d].physical) != 0 ||
            atomic_load(&a->device[d].memory_limit) != atomic_load(&b->device[d].memory_limit) ||
            a->device[d].compute_share != b->device[d].compute_share ||
            a->device[d].compute_mode != b->device[d].compute_mode)
            return false;
    return true;
}

static const char *describe(const struct vgpu_bar0_config *c, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (uint32_t d = 0; d < c->device_count && n < len; d++) {
        char size[32];
        uint64_t limit = atomic_load(&c->device[d].memory_limit);
        n += (size_t)snprintf(buf + n, len - n, "%sdevice %u = GPU %s, limit %s", d ? "; " : "", d,
                              c->device[d].physical, limit ? vgpu_format_size(limit, size, sizeof(size)) : "none");
    }
    return c->device_count ? buf : "no devices";
}

static int reconcile(struct vgpu_bar0 *b, const struct vgpu_bar0_config *want, bool join, const char *path,
                     char *err, size_t errlen)
{
    if (join || same_config(&b->config, want))
        return 0;
    unsigned live = vgpu_bar0_live_slots(b);
    if (live == 0) {
        vgpu_bar0_write_config(b, want);
        return 0;
    }
    char have[1024], asked[1024];
    return vgpu_fail(err, errlen,
                "vGPU %s is in use by %u process(es) with another configuration (%s) than this process asks for "
                "(%s); use the same VGPU_VISIBLE_DEVICES and VGPU_MEMORY_LIMIT, or another VGPU_BAR0",
                path, live, describe(&b->config, have, sizeof(have)), describe(want, asked, sizeof(asked)));
}

static bool all_zero(const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i])
            return false;
    return true;
}

/* How long attaching waits for another process's lock on a window. */
#define LOCK_WAIT_MS 5000

/* flock(LOCK_EX), but never forever: a process stopped while it held the
 * lock must not hang every other process of the vGPU. */
static int lock_window(int fd)
{
    for (int waited = 0;; waited++) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return 0;
        if (errno != EWOULDBLOCK || waited >= LOCK_WAIT_MS)
            return -1;
        usleep(1000);
    }
}

/*
 * Opens, checks, locks path; leaves it locked.  0 or -1 with err.  A
 * standalone window (own) must be this user's own regular file, writable
 * by no one else: whoever can write a window sets its vGPU's limits; and
 * a link in its last component is never followed.  Never blocks on a FIFO.
 */
static int open_window(const char *path, int flags, bool own, struct vgpu_bar0_map *m, struct stat *st, char *err,
                       size_t errlen)
{
    memset(m, 0, sizeof(*m));
    m->fd = -1;
    m->slot = -1;
    snprintf(m->path, sizeof(m->path), "%s", path);
    /* A guest window's path comes from the kernel's sysfs, not a setting. */
    int fd = open(path, flags | O_RDWR | O_CLOEXEC | O_NONBLOCK | (own ? O_NOFOLLOW : 0), 0600);
    if (fd < 0 && errno == ELOOP)
        return vgpu_fail(err, errlen, "the vGPU's BAR0 %s is a symbolic link: vgpu opens a window only under its "
                         "own name, so that no link can lead this process into a file someone else chose; name the "
                         "file itself", path);
    if (fd < 0)
        return vgpu_fail(err, errlen, "cannot open the vGPU's BAR0 %s: %s", path, strerror(errno));
    const char *why = NULL;
    char because[512];
    if (fstat(fd, st) != 0)
        why = strerror(errno);
    else if (!S_ISREG(st->st_mode) && (own || !S_ISCHR(st->st_mode)))
        why = "it is not a regular file";
    else if (own && st->st_uid != geteuid()) {
        snprintf(because, sizeof(because), "it is owned by uid %u, not by this user (uid %u), and its owner could "
                 "change this vGPU's limits; use a file of your own, or vgpu-mediatord to share a vGPU between users",
                 (unsigned)st->st_uid, (unsigned)geteuid());
        why = because;
    } else if (own && (st->st_mode & (S_IWGRP | S_IWOTH))) {
        snprintf(because, sizeof(because), "it is writable by other users (mode %04o), who could change this vGPU's "
                 "limits: chmod 600 %s", (unsigned)(st->st_mode & 07777), path);
        why = because;
    } else if (lock_window(fd) != 0)
        why = errno == EWOULDBLOCK ? "another process has held its lock for 5 s" : strerror(errno);
    else if (fstat(fd, st) != 0)
        why = strerror(errno); /* again, locked: the size seen before may be of a window made since */
    if (why) {
        close(fd);
        return vgpu_fail(err, errlen, "refusing the vGPU's BAR0 %s: %s", path, why);
    }
    m->fd = fd;
    m->file_dev = st->st_dev;
    m->file_ino = st->st_ino;
    return 0;
}

static int map_window(struct vgpu_bar0_map *m, char *err, size_t errlen)
{
    void *b = mmap(NULL, sizeof(struct vgpu_bar0), PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, 0);
    if (b == MAP_FAILED)
        return vgpu_fail(err, errlen, "cannot map the vGPU's BAR0 %s: %s", m->path, strerror(errno));
    m->bar = b;
    return 0;
}

/* Unlocks; on failure also unmaps and closes. */
static int finish(struct vgpu_bar0_map *m, int rc)
{
    flock(m->fd, LOCK_UN);
    if (rc != 0)
        vgpu_bar0_close(m);
    return rc;
}

int vgpu_bar0_attach(const char *path, const struct vgpu_bar0_config *want, bool join, struct vgpu_bar0_map *m,
                     char *err, size_t errlen)
{
    struct stat st;
    if (open_window(path, O_CREAT, true, m, &st, err, errlen) != 0)
        return -1;
    bool fresh = st.st_size == 0;
    if (fresh && ftruncate(m->fd, sizeof(struct vgpu_bar0)) != 0)
        return finish(m, vgpu_fail(err, errlen, "cannot size the vGPU's BAR0 %s: %s", path, strerror(errno)));
    if (!fresh && (uint64_t)st.st_size != sizeof(struct vgpu_bar0))
        return finish(m, vgpu_fail(err, errlen, "%s is not a vgpu BAR0: %lld bytes, a layout v%d window is exactly %zu; "
                                   "remove it (no process of this vGPU may be running) or set VGPU_BAR0 to another "
                                   "path", path, (long long)st.st_size, VGPU_BAR0_VERSION, sizeof(struct vgpu_bar0)));
    if (map_window(m, err, errlen) != 0)
        return finish(m, -1);
    struct vgpu_bar0 *b = m->bar;
    /* A zeroed window (a new file) is initialised. */
    if (fresh || all_zero(b, sizeof(b->header))) {
        vgpu_bar0_init(b, want, 0, "");
        m->generation = atomic_load(&b->header.config_generation);
        return finish(m, 0);
    }
    char why[512];
    if (vgpu_bar0_validate(b, (uint64_t)st.st_size, why, sizeof(why)) != 0)
        return finish(m, vgpu_fail(err, errlen, "refusing the vGPU's BAR0 %s: %s; remove it (no process of this vGPU may "
                              "be running) or set VGPU_BAR0 to another path", path, why));
    if (b->header.flags & VGPU_BAR0_GUEST)
        return finish(m, vgpu_fail(err, errlen, "the vGPU's BAR0 %s is vGPU \"%s\"'s window for a VM: processes in "
                                   "that VM find it on their PCI bus, not through VGPU_BAR0", path, b->header.name));
    if (b->header.flags)
        return finish(m, vgpu_fail(err, errlen, "the vGPU's BAR0 %s is vgpu-mediatord's (vGPU \"%s\"): processes "
                                   "reach it through the mediator's socket, not VGPU_BAR0", path, b->header.name));
    vgpu_bar0_reap(b, true);
    int rc = reconcile(b, want, join, path, err, errlen);
    m->generation = atomic_load(&b->header.config_generation);
    return finish(m, rc);
}

int vgpu_bar0_attach_guest(const char *path, struct vgpu_bar0_map *m, char *err, size_t errlen)
{
    struct stat st;
    if (open_window(path, 0, false, m, &st, err, errlen) != 0)
        return -1;
    /* A PCI resource file's size is the BAR's. */
    if ((uint64_t)st.st_size < sizeof(struct vgpu_bar0))
        return finish(m, vgpu_fail(err, errlen, "%s is %lld bytes, smaller than a BAR0 window (%zu)", path,
                              (long long)st.st_size, sizeof(struct vgpu_bar0)));
    if (map_window(m, err, errlen) != 0)
        return finish(m, -1);
    char why[512];
    if (vgpu_bar0_validate(m->bar, (uint64_t)st.st_size, why, sizeof(why)) != 0)
        return finish(m, vgpu_fail(err, errlen, "%s holds no usable vgpu BAR0: %s", path, why));
    if (m->bar->header.flags != VGPU_BAR0_GUEST)
        return finish(m, vgpu_fail(err, errlen, "%s holds a BAR0 that is not a guest window (flags 0x%x)", path,
                              m->bar->header.flags));
    vgpu_bar0_reap(m->bar, true);
    return finish(m, 0);
}

/* A read-write descriptor of path if it is the file (dev, ino), else -1. */
static int open_same(const char *path, int flags, uint64_t dev, uint64_t ino)
{
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK | flags);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || st.st_dev != dev || st.st_ino != ino)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

int vgpu_bar0_reopen(const struct vgpu_bar0_map *m, struct vgpu_bar0_map *fresh, char *err, size_t errlen)
{
    char self_fd[64];
    snprintf(self_fd, sizeof(self_fd), "/proc/self/fd/%d", m->fd);
    /* Through /proc a descriptor reopens its file even once unlinked. */
    int fd = m->fd >= 0 && m->file_ino ? open_same(self_fd, 0, m->file_dev, m->file_ino) : -1;
    if (fd < 0 && m->file_ino)
        fd = open_same(m->path, O_NOFOLLOW, m->file_dev, m->file_ino);
    if (fd < 0)
        return vgpu_fail(err, errlen, "the vGPU's BAR0 %s is no longer reachable (the descriptor inherited from the "
                         "parent was closed, and the file at that path is gone or another one)", m->path);
    *fresh = *m;
    fresh->fd = fd;
    fresh->slot = -1;
    return 0;
}

struct vgpu_bar0 *vgpu_bar0_map_parts(int config_fd, int status_fd, bool config_writable, char *err, size_t errlen)
{
    const size_t status_size = sizeof(struct vgpu_bar0) - VGPU_BAR0_CONFIG_PAGE;
    struct stat cs, ss;
    if (fstat(config_fd, &cs) != 0 || fstat(status_fd, &ss) != 0 || cs.st_size < VGPU_BAR0_CONFIG_PAGE ||
        (size_t)ss.st_size < status_size) {
        vgpu_fail(err, errlen, "the BAR0 parts are not a BAR0 window (%lld + %lld bytes)", (long long)cs.st_size,
                  (long long)ss.st_size);
        return NULL;
    }
    /* One reservation, then the two parts over it, so the window is one struct. */
    char *base = mmap(NULL, sizeof(struct vgpu_bar0), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED ||
        mmap(base, VGPU_BAR0_CONFIG_PAGE, PROT_READ | (config_writable ? PROT_WRITE : 0), MAP_SHARED | MAP_FIXED,
             config_fd, 0) == MAP_FAILED ||
        mmap(base + VGPU_BAR0_CONFIG_PAGE, status_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, status_fd,
             0) == MAP_FAILED) {
        vgpu_fail(err, errlen, "cannot map the BAR0 parts: %s", strerror(errno));
        if (base != MAP_FAILED)
            munmap(base, sizeof(struct vgpu_bar0));
        return NULL;
    }
    return (struct vgpu_bar0 *)base;
}

/* Can no one resize fd (and, unless writable, write it)?  A part that a
 * co-tenant could cut short would fault this process where it touches it. */
static bool sealed(int fd, bool writable)
{
    int seals = fcntl(fd, F_GET_SEALS);
    return seals >= 0 && (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) == (F_SEAL_SHRINK | F_SEAL_GROW) &&
           (writable || (seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)));
}

struct vgpu_bar0 *vgpu_bar0_map_split(int config_fd, int status_fd, bool config_writable, char *err, size_t errlen)
{
    if (!sealed(config_fd, config_writable) || !sealed(status_fd, true)) {
        vgpu_fail(err, errlen, "the mediator's BAR0 is not sealed: any process of the vGPU could resize it and crash "
                  "the others (an older vgpu-mediatord?); run a vgpu-mediatord of this vgpu's version");
        return NULL;
    }
    struct vgpu_bar0 *b = vgpu_bar0_map_parts(config_fd, status_fd, config_writable, err, errlen);
    char why[512] = "not a mediated window"; /* unless validation says worse */
    if (b && (vgpu_bar0_validate(b, sizeof(*b), why, sizeof(why)) != 0 || b->header.flags != VGPU_BAR0_MEDIATED)) {
        vgpu_fail(err, errlen, "the mediator's BAR0 is not usable: %s", why);
        munmap(b, sizeof(*b));
        return NULL;
    }
    return b;
}

int vgpu_bar0_enter(struct vgpu_bar0_map *m, char *err, size_t errlen)
{
    /* Attaching and entering hold the file lock, so no two processes claim
     * one slot. */
    if (lock_window(m->fd) != 0)
        return vgpu_fail(err, errlen, "cannot lock the vGPU's BAR0 %s: %s", m->path,
                         errno == EWOULDBLOCK ? "another process has held its lock for 5 s" : strerror(errno));
    if (m->bar->header.flags == 0 && atomic_load(&m->bar->header.config_generation) != m->generation) {
        /* Idle after this process joined (it held no slot yet), the vGPU was
         * given another configuration than the one its devices came from. */
        flock(m->fd, LOCK_UN);
        return vgpu_fail(err, errlen, "vGPU %s was given another configuration by another process since this one "
                         "joined it; start this process again", m->path);
    }
    vgpu_bar0_reap(m->bar, true);
    int pid = getpid();
    m->slot = vgpu_bar0_claim_slot(m->bar, pid, vgpu_proc_start_time(pid));
    m->owner = VGPU_BAR0_OWNER(pid, VGPU_PROC_LIVE);
    m->pid = pid;
    flock(m->fd, LOCK_UN);
    if (m->slot < 0)
        return vgpu_fail(err, errlen, "vGPU %s has %d processes already, its most", m->path, VGPU_BAR0_MAX_PROCS);
    return 0;
}

void vgpu_bar0_close(struct vgpu_bar0_map *m)
{
    if (m->bar)
        munmap(m->bar, sizeof(*m->bar));
    if (m->fd >= 0)
        close(m->fd);
    m->bar = NULL;
    m->fd = -1;
}
