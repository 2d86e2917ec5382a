/* A host vGPU's window as sealed memfds; see host_window.h. */
#define _GNU_SOURCE
#include "tools/mediatord/vgpus/host_window.h"

#include "common/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U /* Linux 6.3; glibc 2.36 does not name it */
#endif

#define STATUS_BYTES (sizeof(struct vgpu_bar0) - VGPU_BAR0_CONFIG_PAGE)
#define RESIZE_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

static int make_memfd(const char *name, const char *part, size_t size, char *err, size_t errlen)
{
    char label[64];
    snprintf(label, sizeof(label), "vgpu:%s:%s", name, part);
    /* Never executable (and no kernel warning for not saying so), where
     * the kernel knows the flag. */
    int fd = memfd_create(label, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
    if (fd < 0 && errno == EINVAL)
        fd = memfd_create(label, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return vgpu_fail(err, errlen, "vGPU %s: cannot make its window (memfd_create): %s", name, strerror(errno));
    if (ftruncate(fd, (off_t)size) != 0) {
        vgpu_fail(err, errlen, "vGPU %s: cannot size its window: %s", name, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

void med_window_write_first_page(struct vgpu_bar0 *b, const struct vgpu_bar0_config *regs, uint32_t flags,
                                 const char *name)
{
    /* vgpu_bar0_init makes a whole window; only its first page is taken. */
    static struct vgpu_bar0 template; /* the loop thread's scratch */
    vgpu_bar0_init(&template, regs, flags, name);
    uint64_t magic = template.header.magic;
    template.header.magic = 0;
    memcpy(b, &template, VGPU_BAR0_CONFIG_PAGE);
    /* Magic last, as vgpu_bar0_init writes it: a reader that sees it sees the rest. */
    __atomic_store_n(&b->header.magic, magic, __ATOMIC_RELEASE);
}

int med_host_window_make(const char *name, const struct vgpu_bar0_config *regs, int status_fd,
                         struct med_host_window *w, char *err, size_t errlen)
{
    memset(w, 0, sizeof(*w));
    w->config_fd = -1;
    w->status_fd = status_fd;
    struct stat st;
    char why[512];
    if (w->status_fd < 0) {
        if ((w->status_fd = make_memfd(name, "status", STATUS_BYTES, err, errlen)) < 0)
            goto fail;
        if (fcntl(w->status_fd, F_ADD_SEALS, RESIZE_SEALS) != 0) {
            vgpu_fail(err, errlen, "vGPU %s: cannot seal its window: %s", name, strerror(errno));
            goto fail;
        }
    }
    if (fstat(w->status_fd, &st) != 0) {
        vgpu_fail(err, errlen, "vGPU %s: its window: %s", name, strerror(errno));
        goto fail;
    }
    if ((w->config_fd = make_memfd(name, "config", VGPU_BAR0_CONFIG_PAGE, err, errlen)) < 0)
        goto fail;
    w->status_dev = (uint64_t)st.st_dev;
    w->status_ino = (uint64_t)st.st_ino;
    if (!(w->bar = vgpu_bar0_map_parts(w->config_fd, w->status_fd, true, why, sizeof(why)))) {
        vgpu_fail(err, errlen, "vGPU %s: %s", name, why);
        goto fail;
    }
    med_window_write_first_page(w->bar, regs, VGPU_BAR0_MEDIATED, name);
    /* From now on only this mapping, made before the seal, writes it. */
    if (fcntl(w->config_fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE | RESIZE_SEALS) != 0) {
        vgpu_fail(err, errlen, "vGPU %s: cannot seal its window's config page (F_SEAL_FUTURE_WRITE needs Linux 5.1): "
                  "%s", name, strerror(errno));
        goto fail;
    }
    return 0;
fail:
    med_host_window_close(w);
    return -1;
}

/* Where /proc/PID/maps has a mapping of inode ino named as vGPU name's
 * status part: its range, or false. */
static bool find_mapping(pid_t pid, const char *name, uint64_t ino, unsigned long *start, unsigned long *end)
{
    char path[64], want[80], line[4352];
    snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
    snprintf(want, sizeof(want), "/memfd:vgpu:%s:status", name);
    FILE *f = fopen(path, "re");
    bool found = false;
    while (f && !found && fgets(line, sizeof(line), f)) {
        unsigned long s, e;
        unsigned long long inode;
        int at = 0;
        if (sscanf(line, "%lx-%lx %*s %*x %*x:%*x %llu %n", &s, &e, &inode, &at) < 3 || !at || inode != ino)
            continue;
        if (strncmp(line + at, want, strlen(want)) == 0) {
            *start = s;
            *end = e;
            found = true;
        }
    }
    if (f)
        fclose(f);
    return found;
}

int med_host_window_recover(const char *name, pid_t pid, uint64_t dev, uint64_t ino, char *err, size_t errlen)
{
    unsigned long start, end;
    if (!find_mapping(pid, name, ino, &start, &end))
        return vgpu_fail(err, errlen, "pid %d maps no window of vGPU %s", (int)pid, name);
    char path[96];
    snprintf(path, sizeof(path), "/proc/%d/map_files/%lx-%lx", (int)pid, start, end);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return vgpu_fail(err, errlen, "cannot open %s: %s%s", path, strerror(errno),
                         errno == EPERM ? " (it takes root, or CAP_CHECKPOINT_RESTORE)" : "");
    struct stat st;
    int seals = fcntl(fd, F_GET_SEALS);
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_dev != dev || (uint64_t)st.st_ino != ino ||
        (size_t)st.st_size != STATUS_BYTES || seals < 0 || (seals & RESIZE_SEALS) != RESIZE_SEALS ||
        (seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE))) {
        close(fd);
        return vgpu_fail(err, errlen, "the window pid %d maps as vGPU %s's is not the one the journal names, whole "
                         "and sealed", (int)pid, name);
    }
    return fd;
}

void med_host_window_close(struct med_host_window *w)
{
    if (w->bar)
        munmap(w->bar, sizeof(*w->bar));
    if (w->config_fd >= 0)
        close(w->config_fd);
    if (w->status_fd >= 0)
        close(w->status_fd);
    w->bar = NULL;
    w->config_fd = w->status_fd = -1;
}
