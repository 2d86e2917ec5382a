/*
 * The GPUs' health, as the device plugin reports it to the kubelet: a
 * thread waits on the driver's critical XID events (NVML), and a GPU that
 * had one that is not an application's own fault, or is lost, is unhealthy
 * until the mediator restarts (the GPU needs a reset; docs/guide/kubernetes.md).
 */
#pragma once

#include <stdint.h>

#include "tools/mediatord/gpus.h"

/* An XID of 0 is none; a GPU the driver lost is this. */
#define MED_XID_LOST 0xffffffffu

struct med_health;

/* Starts waiting on g's GPUs (the driver without events: logged, every GPU
 * healthy).  NULL only when out of memory. */
struct med_health *med_health_start(const struct med_gpus *g);

/* What made GPU index (as nvidia-smi numbers it) unhealthy: an XID,
 * MED_XID_LOST, or 0 while it is healthy.  Any thread. */
uint32_t med_health_xid(const struct med_health *h, unsigned index);

/* Moves whenever a GPU's health does. */
uint64_t med_health_generation(const struct med_health *h);
