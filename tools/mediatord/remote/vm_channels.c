/* A remote vGPU's channels for a VM; see vm_channels.h. */
#define _GNU_SOURCE
#include "tools/mediatord/remote/vm_channels.h"

#include "common/error.h"
#include "common/log.h"
#include "forwarder/remote/transport/channels.h"
#include "tools/mediatord/config/state_dir.h"
#include "tools/mediatord/remote/executor.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

/* Each channel's part of the file besides its page-locked memory: its
 * control page and a ring of 4 MiB streams (channels.h). */
#define CHANNEL_BYTES (2 * VGPU_CHANNELS_PAGE + 2 * VGPU_CHANNEL_STREAM_MAX)

uint64_t med_vm_channels_size(unsigned n, uint64_t pinned)
{
    uint64_t size = 1u << 20, need = VGPU_CHANNELS_PAGE + n * (CHANNEL_BYTES + pinned);
    while (size < need)
        size <<= 1;
    return size;
}

static void file_name(char *file, size_t len, const char *name)
{
    snprintf(file, len, "%s.channels", name);
}

/* v's file, of its size: a descriptor, or -1 with err. */
static int open_file(int dir, const char *dir_path, const struct med_vgpu_conf *v, char *err, size_t errlen)
{
    char file[64];
    file_name(file, sizeof(file), v->name);
    uint64_t size = med_vm_channels_size(v->vm_channels, v->vm_pinned);
    int fd = med_state_open(dir, dir_path, file, O_RDWR, MED_STATE_GROUP_WRITABLE, err, errlen);
    struct stat st = { 0 };
    struct vgpu_channels_header h = { 0 };
    bool remade = false;
    /* Of another size, or laid out (by a supervisor of before) for another
     * count: made anew, its group and mode kept (QEMU's access). */
    if (fd >= 0 && fstat(fd, &st) == 0 &&
        ((uint64_t)st.st_size != size ||
         (pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) && h.magic == VGPU_CHANNELS_MAGIC &&
          h.count != v->vm_channels))) {
        vgpu_warn("vGPU %s: %s/%s is %lld bytes%s, not %llu for %u channels: made anew (a VM using it is to be "
                  "started again)",
                  v->name, dir_path, file, (long long)st.st_size,
                  h.magic == VGPU_CHANNELS_MAGIC && h.count != v->vm_channels ? " of other channels" : "",
                  (unsigned long long)size, v->vm_channels);
        close(fd);
        unlinkat(dir, file, 0);
        fd = -ENOENT;
        remade = true;
    }
    if (fd == -ENOENT) {
        fd = med_state_open(dir, dir_path, file, O_RDWR | O_CREAT, MED_STATE_GROUP_WRITABLE, err, errlen);
        if (fd >= 0 && remade && (fchown(fd, (uid_t)-1, st.st_gid) != 0 || fchmod(fd, st.st_mode & 0660) != 0))
            vgpu_warn("vGPU %s: %s/%s made anew without its group's access (%s): give QEMU's group it again",
                      v->name, dir_path, file, strerror(errno));
        if (fd >= 0 && ftruncate(fd, (off_t)size) != 0) {
            vgpu_fail(err, errlen, "cannot size %s/%s: %s", dir_path, file, strerror(errno));
            close(fd);
            unlinkat(dir, file, 0);
            return -1;
        }
        struct statfs f;
        if (fd >= 0)
            vgpu_info("vGPU %s: %s/%s made for a VM's %u channels (%llu MiB)", v->name, dir_path, file,
                      v->vm_channels, (unsigned long long)(size >> 20));
        if (fd >= 0 && fstatfs(fd, &f) == 0 && f.f_type != 0x01021994 /* TMPFS_MAGIC */)
            vgpu_warn("vGPU %s: state_dir %s is not on tmpfs: the driver cannot pin the VM's page-locked memory "
                      "in %s, whose copies then cross in messages and which no kernel reaches; put state_dir on "
                      "tmpfs (/run/vgpu; docs/guide/vm.md)",
                      v->name, dir_path, file);
    }
    return fd < 0 ? -1 : fd;
}

int med_vm_channels_serve(int dir, const char *dir_path, const struct med_vgpu_conf *v, const char *socket, char *err,
                          size_t errlen)
{
    int fd = open_file(dir, dir_path, v, err, errlen);
    if (fd < 0)
        return -1;
    char count[16];
    snprintf(count, sizeof(count), "%u", v->vm_channels);
    struct med_executor_for f = { fd,           v->executor_uid, v->executor_gid, v->executor_groups,
                                  v->executor_ngroups, v->name,     socket,           count,
                                  NULL, v->executor_cgroup[0] ? v->executor_cgroup : NULL };
    struct med_executor_started started;
    int r = med_executor_start(&f, &started, err, errlen);
    if (r == 0 && started.pidfd >= 0)
        close(started.pidfd); /* a VM's supervisor: one a vGPU, started by the operator's config */
    close(fd); /* the supervisor's is its own open description's copy, its lock with it */
    return r;
}

void med_vm_channels_remove(int dir, const char *name)
{
    char file[64];
    file_name(file, sizeof(file), name);
    unlinkat(dir, file, 0);
}
