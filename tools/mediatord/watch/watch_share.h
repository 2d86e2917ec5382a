/*
 * The watch's check of the compute share (docs/guide/mediator.md, "Watch"): on
 * a GPU the mediator arbitrates, a vGPU's processes may put work on it
 * only in the vGPU's turns, and a process that goes around vgpu's gate
 * (the device files, a driver of its own) does not wait for them.  At each
 * of the compute views' readings of the driver (utilization.h, about a
 * second) every host vGPU device on an arbitrated GPU is judged: one that
 * held the GPU at no time in the reading's interval, nor in the
 * MED_SHARE_MARGIN_NS before it (its last turn's queued work is done by
 * then, and a kernel it launched in its turn that runs past it, as one
 * longer than the quantum does, has ended), and whose processes the driver
 * saw using the GPU all the same, used time it was not given.  A kernel
 * that runs on longer than that after its vGPU's turn is taken for use
 * out of turn.  Found so in MED_SHARE_FOUND of the last
 * MED_SHARE_READINGS readings, its processes seen using the GPU are
 * reported as over its compute share (watch.h; killed where the vGPU says
 * enforce = kill); found in none of them, their episode ends.
 *
 * Only intervals in which the vGPU was given nothing are judged: the
 * driver's per-process samples may be one a second, of whichever context
 * runs at that instant (bench/results/2026-11-23-9c2504d-compute-llm-nvml-views-watch.md), so time used beyond a
 * vGPU's turns in intervals where it had some cannot be told from its
 * turns; an interval with none can.  The arbitration must have run
 * throughout, with no gap in its ticks (processes stop waiting for a
 * silent mediator after a second) and the vGPU an entry all along.
 */
#pragma once

#include <stdint.h>

#include "tools/mediatord/compute/sched.h"
#include "tools/mediatord/mediatord.h"

#define MED_SHARE_MARGIN_NS 2000000000ull /* after a turn: its queued work, and a long kernel's end */
#define MED_SHARE_READINGS 10            /* the readings a finding is judged over (at most 16) */
#define MED_SHARE_FOUND 3                /* in how many of them it must be found */
#define MED_SHARE_MIN_PERMILLE 10        /* a process's utilization in a reading that counts as use */

/*
 * A reading of GPU gi (a med_gpus index), taken over [from_ns, now]
 * (CLOCK_MONOTONIC), whose figures utilization.c has just put in the
 * records (each admission's latest utilization): judged for each host vGPU
 * device on it, findings told to the watch.
 */
void med_watch_share_judge(struct med_world *world, const struct med_sched *s, int gi, uint64_t from_ns,
                           uint64_t now_ms);
