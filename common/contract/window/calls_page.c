/* A remote guest's record of its calls (calls_page.h): the reader. */
#define _GNU_SOURCE
#include "common/contract/window/calls_page.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    int result = -ENOENT;
    struct dirent *e;
    while (result == -ENOENT && (e = readdir(d))) {
        char link[256];
        ssize_t n = readlinkat(dirfd(d), e->d_name, link, sizeof(link) - 1);
        if (n <= 0)
            continue;
        link[n] = '\0';
        if (strcmp(link, want) != 0)
            continue;
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC);
        result = fd >= 0 ? read_record(fd, out) : -errno;
        if (fd >= 0)
            close(fd);
    }
    closedir(d);
    return result;
}
