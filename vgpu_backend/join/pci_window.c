/* A guest window behind a virtual PCI device; see pci_window.h. */
#define _GNU_SOURCE
#include "vgpu_backend/join/pci_window.h"

#include "common/log.h"
#include "common/operator.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define IVSHMEM_ID "1af4:1110" /* Red Hat, Inc. Inter-VM shared memory */
#define MEMORY_BAR "resource2" /* ivshmem's shared memory is its BAR 2 */

/* "0x1af4\n" -> 0x1af4; -1 when unreadable. */
static long read_hex(const char *dir, const char *name)
{
    char path[4096], buf[32];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *end;
    long v = strtol(buf, &end, 16);
    return end == buf ? -1 : v;
}

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

int vgpu_pci_attach(struct vgpu_bar0_map *m, char *err, size_t errlen)
{
    /* Under the operator's lock, the environment points at no other tree or device. */
    const struct vgpu_operator *op = vgpu_operator();
    bool locked = vgpu_operator_locked(op);
    const char *root = locked ? NULL : getenv("VGPU_SYSFS_ROOT"), *id = locked ? op->pci_id : getenv("VGPU_PCI_ID"),
               *want = getenv("VGPU_NAME");
    unsigned vendor, device;
    if (!id || !*id)
        id = IVSHMEM_ID;
    if (sscanf(id, "%4x:%4x", &vendor, &device) != 2) {
        snprintf(err, errlen, "VGPU_PCI_ID=%s: expected VENDOR:DEVICE in hex, such as %s", id, IVSHMEM_ID);
        return VGPU_PCI_ERROR;
    }
    if (want && !*want)
        want = NULL;
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/bus/pci/devices", root && *root ? root : "/sys");
    struct dirent **list;
    int n = scandir(dir, &list, NULL, alphasort);
    if (n < 0)
        return VGPU_PCI_NONE;
    int answer = VGPU_PCI_NONE;
    for (int i = 0; i < n; i++) {
        char dev[4096 + 256], path[4096 + 512], name[32];
        snprintf(dev, sizeof(dev), "%s/%s", dir, list[i]->d_name);
        if (answer == VGPU_PCI_FOUND || list[i]->d_name[0] == '.' || read_hex(dev, "vendor") != (long)vendor ||
            read_hex(dev, "device") != (long)device)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dev, MEMORY_BAR);
        /* sysfs gives a resource file the size of its BAR, readable by all:
         * an ivshmem device of another size is someone else's, and is left
         * alone even where this user could not open it. */
        struct stat st;
        if (stat(path, &st) != 0 || st.st_size != VGPU_BAR0_GUEST_FILE_SIZE) {
            vgpu_debug("PCI %s: %s is not a vgpu window's size", list[i]->d_name, MEMORY_BAR);
            continue;
        }
        int p = peek(path, want, name, sizeof(name));
        if (p < 0 && (errno == EACCES || errno == EPERM)) {
            snprintf(err, errlen, "cannot open %s (%s): give this user read-write access to the vGPU's PCI BAR "
                     "(docs/vm.md has a udev rule)", path, strerror(errno));
            answer = VGPU_PCI_ERROR;
        } else if (p == 1) {
            answer = vgpu_bar0_attach_guest(path, m, err, errlen) == 0 ? VGPU_PCI_FOUND : VGPU_PCI_ERROR;
            if (answer == VGPU_PCI_FOUND)
                vgpu_info("vGPU \"%s\": its window is PCI device %s", name, list[i]->d_name);
        }
    }
    for (int i = 0; i < n; i++)
        free(list[i]);
    free(list);
    if (answer == VGPU_PCI_NONE && want)
        vgpu_debug("no guest window named \"%s\" under %s", want, dir);
    return answer;
}
