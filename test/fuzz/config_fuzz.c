/*
 * libFuzzer target: the two configuration parsers an operator's file
 * reaches, the libraries' (common/operator.c) and vgpu-mediatord's
 * (tools/mediatord/config/config.c, through a file, as the daemon reads one).
 * What a parser accepts is then read as its readers read it.
 */
#define _GNU_SOURCE
#include "common/operator.h"
#include "tools/mediatord/config/config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024];
    size_t sum = 0;
    static struct vgpu_operator o;
    if (vgpu_operator_parse((const char *)data, size, &o, err, sizeof(err)) == 0)
        sum += strlen(o.mediator_socket) + strlen(o.real_libcuda) + strlen(o.real_nvml) + strlen(o.pci_id);
    static int fd = -1;
    static char path[64];
    static struct med_config c;
    if (fd < 0) {
        fd = memfd_create("mediatord.conf", MFD_CLOEXEC);
        /* A memfd is made 0777; the mediator reads no config others may write. */
        if (fd >= 0 && fchmod(fd, 0600) != 0) {
            close(fd);
            fd = -1;
        }
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    }
    if (fd < 0 || ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        return 0;
    if (med_config_load(path, &c, err, sizeof(err)) == 0) {
        sum += strlen(c.socket) + strlen(c.state_dir) + strlen(c.metrics);
        for (int i = 0; i < c.nvgpus; i++) {
            sum += strlen(c.vgpu[i].name) + (size_t)c.vgpu[i].ndev;
            for (int d = 0; d < c.vgpu[i].ndev; d++)
                sum += strlen(c.vgpu[i].devices[d]);
        }
    }
    return sum == (size_t)-1;
}
