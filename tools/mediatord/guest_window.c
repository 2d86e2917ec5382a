/* A VM's vGPU window; see guest_window.h. */
#define _GNU_SOURCE
#include "tools/mediatord/guest_window.h"

#include "common/error.h"
#include "common/log.h"
#include "tools/mediatord/host_window.h"
#include "tools/mediatord/state_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct vgpu_bar0 *med_guest_window_open(int dir, const char *dir_path, const char *name, bool create,
                                        const struct vgpu_bar0_config *regs, bool *created, char *err,
                                        size_t errlen)
{
    char file[64];
    snprintf(file, sizeof(file), "%s.bar0", name);
    *created = false;
    int fd = med_state_open(dir, dir_path, file, O_RDWR, MED_STATE_GROUP_WRITABLE, err, errlen);
    if (fd == -ENOENT && create) {
        fd = med_state_open(dir, dir_path, file, O_RDWR | O_CREAT, MED_STATE_GROUP_WRITABLE, err, errlen);
        *created = fd >= 0;
        if (fd >= 0 && ftruncate(fd, VGPU_BAR0_GUEST_FILE_SIZE) != 0) {
            vgpu_fail(err, errlen, "cannot size %s/%s: %s", dir_path, file, strerror(errno));
            close(fd);
            unlinkat(dir, file, 0);
            return NULL;
        }
    }
    if (fd == -ENOENT)
        vgpu_fail(err, errlen, "%s/%s is gone", dir_path, file);
    if (fd < 0)
        return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(struct vgpu_bar0)) {
        vgpu_fail(err, errlen, "%s/%s is %lld bytes, not a VM's window (%u): remove it (its VM must not be running)",
                  dir_path, file, (long long)st.st_size, VGPU_BAR0_GUEST_FILE_SIZE);
        close(fd);
        return NULL;
    }
    struct vgpu_bar0 *b = mmap(NULL, sizeof(struct vgpu_bar0), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (b == MAP_FAILED) {
        vgpu_fail(err, errlen, "cannot map %s/%s: %s", dir_path, file, strerror(errno));
        return NULL;
    }
    char why[512];
    if (*created) {
        vgpu_bar0_init(b, regs, VGPU_BAR0_GUEST, name);
    } else if (vgpu_bar0_validate(b, (uint64_t)st.st_size, why, sizeof(why)) != 0 ||
               b->header.flags != VGPU_BAR0_GUEST) {
        /* The guest may write every byte of it: its header is the mediator's to restore. */
        vgpu_warn("vGPU %s: the header of %s/%s is broken (%s); it is written again", name, dir_path, file,
                  b->header.flags != VGPU_BAR0_GUEST ? "not a VM's window" : why);
        med_window_write_first_page(b, regs, VGPU_BAR0_GUEST, name);
    }
    return b;
}

void med_guest_window_remove(int dir, const char *name)
{
    char file[64];
    snprintf(file, sizeof(file), "%s.bar0", name);
    unlinkat(dir, file, 0);
}
