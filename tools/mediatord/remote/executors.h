/*
 * The executors this mediator started, until each ends (docs/guide/remote.md,
 * "Executors' limits"): each counts against the caps of the guest that asked
 * for it (its user's connections, its vGPU's max_executors, the mediator's
 * max_connections) from its start, not from its first word to the
 * mediator, which a guest decides; its own connections to the mediator
 * are not counted again for its user.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/contract/protocol/protocol.h"

struct med_executor_record {
    int pidfd;                /* readable once it ended */
    pid_t pid;
    uid_t guest_uid;          /* whose caps it counts against */
    char home[VGPU_NAME_LEN]; /* the vGPU of its guest's cgroup, "" none (clients.c's over_cap) */
    char vgpu[VGPU_NAME_LEN]; /* the vGPU it serves */
    uint64_t pinned;          /* its guest's page-locked bytes it registered, granted by PIN */
};

/* Owned by main.c's loop thread (the world's), its one user. */
struct med_executors {
    struct med_executor_record *rec;
    int n, cap;
};

/* Forgets the executors that ended. */
void med_executors_prune(struct med_executors *e);

/* Records one; false when out of memory (the pidfd is closed then). */
bool med_executors_add(struct med_executors *e, const struct med_executor_record *r);

/* Whether pid is a live executor of this mediator's. */
bool med_executors_has(struct med_executors *e, pid_t pid);

/* The live executor pid's record, or NULL. */
struct med_executor_record *med_executors_find(struct med_executors *e, pid_t pid);

/* The page-locked bytes the executors of vgpu hold, together. */
uint64_t med_executors_pinned(const struct med_executors *e, const char *vgpu);

/* Executors of uid's guests whose cgroup's vGPU is home ("" none). */
int med_executors_of_uid(const struct med_executors *e, uid_t uid, const char *home);

/* Executors serving vgpu. */
int med_executors_of_vgpu(const struct med_executors *e, const char *vgpu);
