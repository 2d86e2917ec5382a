/* A VM's vGPU window; see guest_window.h. */
#define _GNU_SOURCE
#include "tools/mediatord/vgpus/guest_window.h"

#include "common/error.h"
#include "common/log.h"
#include "tools/mediatord/config/state_dir.h"
#include "tools/mediatord/vgpus/host_window.h"
#include "tools/mediatord/vgpus/window_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static void reset(struct med_guest_window *w)
{
    w->bar = NULL;
    w->fd = w->guard = -1;
}

/* A file of another size than a window's: made that size again.  Whoever
 * may write it (its VM's group) can truncate it; a VM still running keeps
 * its mapping of the same file, which is whole again. */
static int resize(int fd, const char *dir_path, const char *file, const char *name, off_t was, char *err,
                  size_t errlen)
{
    if (ftruncate(fd, VGPU_BAR0_GUEST_FILE_SIZE) != 0)
        return vgpu_fail(err, errlen, "%s/%s is %lld bytes, not a VM's window (%u), and cannot be sized again: %s",
                         dir_path, file, (long long)was, VGPU_BAR0_GUEST_FILE_SIZE, strerror(errno));
    vgpu_warn("vGPU %s: %s/%s was %lld bytes, not a VM's window (%u): someone who may write it resized it; it is "
              "made its size again and its header written anew", name, dir_path, file, (long long)was,
              VGPU_BAR0_GUEST_FILE_SIZE);
    return 0;
}

int med_guest_window_open(int dir, const char *dir_path, const char *name, bool create,
                          const struct vgpu_bar0_config *regs, bool *created, struct med_guest_window *w,
                          char *err, size_t errlen)
{
    char file[64];
    snprintf(file, sizeof(file), "%s.bar0", name);
    reset(w);
    *created = false;
    int fd = med_state_open(dir, dir_path, file, O_RDWR, MED_STATE_GROUP_WRITABLE, err, errlen);
    if (fd == -ENOENT && create) {
        fd = med_state_open(dir, dir_path, file, O_RDWR | O_CREAT, MED_STATE_GROUP_WRITABLE, err, errlen);
        *created = fd >= 0;
        if (fd >= 0 && ftruncate(fd, VGPU_BAR0_GUEST_FILE_SIZE) != 0) {
            vgpu_fail(err, errlen, "cannot size %s/%s: %s", dir_path, file, strerror(errno));
            close(fd);
            unlinkat(dir, file, 0);
            return -1;
        }
    }
    if (fd == -ENOENT)
        vgpu_fail(err, errlen, "%s/%s is gone", dir_path, file);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        vgpu_fail(err, errlen, "cannot stat %s/%s: %s", dir_path, file, strerror(errno));
        close(fd);
        return -1;
    }
    bool resized = st.st_size != VGPU_BAR0_GUEST_FILE_SIZE;
    if (resized && resize(fd, dir_path, file, name, st.st_size, err, errlen) != 0) {
        close(fd);
        return -1;
    }
    struct vgpu_bar0 *b = mmap(NULL, sizeof(struct vgpu_bar0), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (b == MAP_FAILED) {
        vgpu_fail(err, errlen, "cannot map %s/%s: %s", dir_path, file, strerror(errno));
        close(fd);
        return -1;
    }
    w->bar = b;
    w->fd = fd;
    if ((w->guard = med_window_guard_add(b, sizeof(*b))) < 0)
        vgpu_warn("vGPU %s: more windows than the mediator guards (%d): %s/%s is unguarded, and its VM's group "
                  "could end the mediator by truncating it", name, MED_GUARD_MAX, dir_path, file);
    char why[512];
    if (*created) {
        vgpu_bar0_init(b, regs, VGPU_BAR0_GUEST, name);
    } else if (resized || vgpu_bar0_validate(b, VGPU_BAR0_GUEST_FILE_SIZE, why, sizeof(why)) != 0 ||
               b->header.flags != VGPU_BAR0_GUEST) {
        /* The guest may write every byte of it: its header is the mediator's to restore. */
        if (!resized)
            vgpu_warn("vGPU %s: the header of %s/%s is broken (%s); it is written again", name, dir_path, file,
                      b->header.flags != VGPU_BAR0_GUEST ? "not a VM's window" : why);
        med_window_write_first_page(b, regs, VGPU_BAR0_GUEST, name);
    }
    return 0;
}

bool med_guest_window_intact(struct med_guest_window *w, long long *size)
{
    struct stat st;
    *size = w->fd >= 0 && fstat(w->fd, &st) == 0 ? (long long)st.st_size : -1;
    if (!w->bar || med_window_guard_lost(w->guard))
        return false;
    if (*size < 0 || (size_t)*size >= sizeof(*w->bar))
        return true;
    med_window_guard_retire(w->guard);
    return false;
}

void med_guest_window_close(struct med_guest_window *w)
{
    med_window_guard_remove(w->guard);
    if (w->bar)
        munmap(w->bar, sizeof(*w->bar));
    if (w->fd >= 0)
        close(w->fd);
    reset(w);
}

void med_guest_window_remove(int dir, const char *name)
{
    char file[64];
    snprintf(file, sizeof(file), "%s.bar0", name);
    unlinkat(dir, file, 0);
}
