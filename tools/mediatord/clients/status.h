/*
 * What vgpu-smi and the metrics are told: STATUS (status.c: the vGPUs a
 * requester may see, their quotas and use, the processes in them) and
 * COMPUTE (compute_status.c: each vGPU device's share, held time and
 * utilization).  The watch's WATCH is built by watch.c.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "tools/mediatord/mediatord.h"
#include "tools/mediatord/vgpus/vgpus.h"

/* May uid see v?  Root and the mediator's own user see every vGPU; anyone
 * else the vGPUs that admit them. */
bool med_status_visible(const struct med_vgpu *v, uid_t uid, gid_t gid, const gid_t *groups, int ngroups);

/* Builds a STATUS payload of what uid may see (malloc'd; *len set), or NULL. */
uint8_t *med_status_build(struct med_world *w, uid_t uid, gid_t gid, const gid_t *groups, int ngroups,
                          uint32_t *len);

/* Builds a CLUSTER payload of the vGPUs uid may see (malloc'd; *len set),
 * or NULL (cluster.c). */
uint8_t *med_cluster_build(const struct med_world *w, uid_t uid, gid_t gid, const gid_t *groups, int ngroups,
                           uint32_t *len);

/* Builds a COMPUTE payload of the vGPUs uid may see (malloc'd; *len set),
 * or NULL. */
uint8_t *med_compute_build(const struct med_world *w, uid_t uid, gid_t gid, const gid_t *groups, int ngroups,
                           uint32_t *len);
