/*
 * A remote vGPU's channels for a VM (vm_channels = N, docs/guide/vm.md):
 * state_dir/NAME.channels, a file the size of an ivshmem BAR holding N
 * channels (forwarder/remote/transport/channels.h), which QEMU maps into
 * the VM and `vgpu-executor --bar-fd` serves, started by the mediator as
 * the vGPU's executor_user with the file's descriptor (it needs no rights
 * on the file).  The file is trusted as the other files in state_dir
 * are, but that its group (QEMU's) may write it.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "tools/mediatord/config/config.h"

/* The file's size for n channels: the smallest power of two (an ivshmem
 * BAR's) that holds n channels of 4 MiB streams each way and pinned bytes
 * of page-locked memory (what the power of two leaves over goes to each
 * channel's page-locked memory too). */
uint64_t med_vm_channels_size(unsigned n, uint64_t pinned);

/*
 * Makes v's file if missing (or anew when its size is not n channels':
 * a supervisor serving the old one ends, and a running VM has to be
 * started again) and starts its supervisor, which exits at once where one
 * serves the file already (a mediator restarted, a reload).  0, or -1
 * with err.
 */
int med_vm_channels_serve(int dir, const char *dir_path, const struct med_vgpu_conf *v, const char *socket, char *err,
                          size_t errlen);

/* Removes v's file: its supervisor and their executors end. */
void med_vm_channels_remove(int dir, const char *name);
