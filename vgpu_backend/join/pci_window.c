/* A guest window behind a virtual PCI device; see pci_window.h. */
#define _GNU_SOURCE
#include "vgpu_backend/join/pci_window.h"

#include "common/log.h"
#include "common/pci.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The window's header, read through a mapping (a BAR's resource file
 * cannot be read(2)): 1 a guest window named as asked, 0 not one, -1 the
 * file cannot be opened (errno). */
static int peek(const char *path, const char *want_name, char *name, size_t namelen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    const struct vgpu_bar0_header *h = mmap(NULL, sizeof(*h), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (h == MAP_FAILED)
        return 0;
    int ok = h->magic == VGPU_BAR0_MAGIC && h->flags == VGPU_BAR0_GUEST && memchr(h->name, 0, sizeof(h->name));
    if (ok) {
        snprintf(name, namelen, "%s", h->name);
        ok = !want_name || strcmp(want_name, h->name) == 0;
    }
    munmap((void *)h, sizeof(*h));
    return ok;
}

/* What the scan looks for and found. */
struct search {
    const char *want; /* VGPU_NAME, or NULL */
    struct vgpu_bar0_map *m;
    char *err;
    size_t errlen;
    bool refused; /* one could not be opened: err says which */
};

static int visit(const char *dev, const char *address, void *ctx)
{
    struct search *s = ctx;
    char path[4096 + 512], name[32];
    snprintf(path, sizeof(path), "%s/%s", dev, VGPU_PCI_MEMORY_BAR);
    /* sysfs gives a resource file the size of its BAR, readable by all:
     * an ivshmem device of another size is someone else's, and is left
     * alone even where this user could not open it. */
    struct stat st;
    if (stat(path, &st) != 0 || st.st_size != VGPU_BAR0_GUEST_FILE_SIZE) {
        vgpu_debug("PCI %s: %s is not a vgpu window's size", address, VGPU_PCI_MEMORY_BAR);
        return 0;
    }
    int p = peek(path, s->want, name, sizeof(name));
    if (p < 0 && (errno == EACCES || errno == EPERM)) {
        vgpu_pci_refused(path, errno, s->err, s->errlen);
        s->refused = true; /* a later device may still be this user's */
        return 0;
    }
    if (p != 1)
        return 0;
    if (vgpu_bar0_attach_guest(path, s->m, s->err, s->errlen) != 0)
        return VGPU_PCI_ERROR;
    vgpu_info("vGPU \"%s\": its window is PCI device %s", name, address);
    return 1;
}

int vgpu_pci_attach(struct vgpu_bar0_map *m, char *err, size_t errlen)
{
    const char *want = getenv("VGPU_NAME");
    struct search s = { want && *want ? want : NULL, m, err, errlen, false };
    int r = vgpu_pci_each(visit, &s, err, errlen);
    if (r == 1)
        return VGPU_PCI_FOUND;
    if (r < 0 || s.refused)
        return VGPU_PCI_ERROR;
    if (s.want) {
        char dir[4096];
        vgpu_debug("no guest window named \"%s\" under %s", s.want, vgpu_pci_devices_dir(dir, sizeof(dir)));
    }
    return VGPU_PCI_NONE;
}
