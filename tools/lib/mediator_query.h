/*
 * A tool's side of vgpu-mediatord's STATUS, WATCH and COMPUTE
 * (docs/reference/protocol.md): the vGPUs the asking user may see, their use and
 * processes, the processes the mediator's watch found outside them, and
 * the compute share's views.  vgpu-smi shows it;
 * vgpu-doctor asks it whether a user is admitted anywhere.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/contract/protocol/protocol.h"

/* Connects to the mediator at path: the descriptor, or -1 with err saying what to check. */
int vgpu_tool_dial(const char *path, char *err, size_t errlen);

/*
 * One STATUS request on fd and its answer within 5 seconds: 0 with m
 * (pointing into *buf, grown as needed; the caller frees it), or -1 with
 * err.  A refusal is an error carrying the mediator's reason.
 */
int vgpu_tool_status(int fd, const char *path, uint8_t **buf, size_t *cap, struct vgpu_msg *m, char *err,
                     size_t errlen);

/* The same for WATCH: what the mediator's watch found.  Ask only a mediator
 * whose STATUS header has VGPU_STATUS_HAS_WATCH (an older one refuses the
 * request and closes the connection). */
int vgpu_tool_watch(int fd, const char *path, uint8_t **buf, size_t *cap, struct vgpu_msg *m, char *err,
                    size_t errlen);

/* The same for CLUSTER: the vGPUs made for containers, their bindings and
 * health.  Ask only a mediator whose STATUS header has VGPU_STATUS_HAS_CLUSTER. */
int vgpu_tool_cluster(int fd, const char *path, uint8_t **buf, size_t *cap, struct vgpu_msg *m, char *err,
                      size_t errlen);

/* BIND: gives vGPU vgpu to pid's cgroup (pid 0: to none), which the mediator
 * answers with, into cgroup.  0, or -1 with err (the mediator's refusal). */
int vgpu_tool_bind(int fd, const char *path, const char *vgpu, uint32_t pid, char *cgroup, size_t cgroup_len,
                   char *err, size_t errlen);

/* The same for COMPUTE: each vGPU device's share, GPU time and utilization.
 * Ask only a mediator whose STATUS header has VGPU_STATUS_HAS_COMPUTE. */
int vgpu_tool_compute(int fd, const char *path, uint8_t **buf, size_t *cap, struct vgpu_msg *m, char *err,
                      size_t errlen);
