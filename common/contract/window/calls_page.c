/* A remote guest's record of its calls (calls_page.h): the reader. */
#define _GNU_SOURCE
#include "common/contract/window/calls_page.h"

#include "common/contract/window/proc_fd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *vgpu_calls_page_name(unsigned library)
{
    return library ? VGPU_CALLS_PAGE_NAME_NVML : VGPU_CALLS_PAGE_NAME_CUDA;
}

/* The record on fd, checked: 0 with *out, or -errno. */
static int read_record(int fd, struct vgpu_calls_header **out)
{
    struct vgpu_calls_header h;
    if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
        return -EPROTO;
    if (h.magic != VGPU_CALLS_PAGE_MAGIC || h.version != VGPU_CALLS_PAGE_VERSION || h.slots > VGPU_CALLS_PAGE_MAX_SLOTS)
        return -EPROTO;
    size_t size = sizeof(h) + (size_t)h.slots * sizeof(struct vgpu_calls_slot);
    struct vgpu_calls_header *copy = malloc(size);
    if (!copy)
        return -ENOMEM;
    if (pread(fd, copy, size, 0) != (ssize_t)size || copy->slots != h.slots) {
        free(copy);
        return -EPROTO;
    }
    for (unsigned i = 0; i < copy->slots; i++)
        vgpu_calls_page_slot(copy, i)->name[VGPU_CALLS_PAGE_NAME_LEN - 1] = '\0';
    copy->where[sizeof(copy->where) - 1] = '\0';
    *out = copy;
    return 0;
}

int vgpu_calls_page_read(int pid, unsigned library, struct vgpu_calls_header **out)
{
    char dir[64], want[96];
    snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
    snprintf(want, sizeof(want), "/memfd:%s (deleted)", vgpu_calls_page_name(library));
    int fd = vgpu_proc_fd_open(dir, want);
    if (fd < 0)
        return fd;
    int r = read_record(fd, out);
    close(fd);
    return r;
}
