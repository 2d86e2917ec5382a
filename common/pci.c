/* Virtual PCI devices by vendor and device (pci.h). */
#define _GNU_SOURCE
#include "common/pci.h"

#include "common/error.h"
#include "common/operator.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

int vgpu_pci_refused(const char *path, int e, char *err, size_t errlen)
{
    return vgpu_fail(err, errlen,
                     "cannot open %s (%s): give this user read-write access to the vGPU's PCI BAR (docs/guide/vm.md "
                     "has a udev rule)",
                     path, strerror(e));
}

const char *vgpu_pci_devices_dir(char *buf, size_t len)
{
    const struct vgpu_operator *op = vgpu_operator();
    const char *root = vgpu_operator_locked(op) ? NULL : getenv("VGPU_SYSFS_ROOT");
    snprintf(buf, len, "%s/bus/pci/devices", root && *root ? root : "/sys");
    return buf;
}

int vgpu_pci_each(int (*visit)(const char *dir, const char *address, void *ctx), void *ctx, char *err,
                  size_t errlen)
{
    const struct vgpu_operator *op = vgpu_operator();
    const char *id = vgpu_operator_locked(op) ? op->pci_id : getenv("VGPU_PCI_ID");
    unsigned vendor, device;
    if (!id || !*id)
        id = VGPU_PCI_IVSHMEM;
    if (sscanf(id, "%4x:%4x", &vendor, &device) != 2)
        return vgpu_fail(err, errlen, "VGPU_PCI_ID=%s: expected VENDOR:DEVICE in hex, such as %s", id,
                         VGPU_PCI_IVSHMEM);
    char dir[4096];
    vgpu_pci_devices_dir(dir, sizeof(dir));
    struct dirent **list;
    int n = scandir(dir, &list, NULL, alphasort);
    if (n < 0)
        return 0;
    int answer = 0;
    for (int i = 0; i < n; i++) {
        char dev[4096 + 256];
        snprintf(dev, sizeof(dev), "%s/%s", dir, list[i]->d_name);
        if (!answer && list[i]->d_name[0] != '.' && read_hex(dev, "vendor") == (long)vendor &&
            read_hex(dev, "device") == (long)device)
            answer = visit(dev, list[i]->d_name, ctx);
    }
    for (int i = 0; i < n; i++)
        free(list[i]);
    free(list);
    return answer;
}
