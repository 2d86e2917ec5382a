/*
 * A vGPU's journal, state_dir/NAME.journal: what the mediator must know
 * after a restart that it cannot take from memory the vGPU's processes can
 * write.  Only the mediator writes it (a new file renamed over the old, so
 * a reader sees one whole version), and it is read only when it passes
 * state_dir's trust checks.  Text, one record a line:
 *
 *   vgpu-mediatord journal 1
 *   epoch E                   the mediator start that wrote it
 *   guest 0|1                 a VM's vGPU (its window is NAME.bar0)
 *   status DEV INO            host: the status memfd's st_dev and st_ino
 *   device UUID LIMIT SHARE   per device, in order: its registers
 *   process PID START UID SLOT  per admitted process (SLOT -1: none yet)
 *   cgroup PATH               the container's cgroup it is bound to (BIND), if any
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/contract/protocol/protocol.h"
#include "common/contract/window/bar0.h"

struct med_journal_proc {
    pid_t pid;
    uint64_t start_time; /* /proc/PID/stat's, as the mediator saw it */
    uid_t uid;
    int slot;            /* -1: admitted, no slot yet */
};

struct med_journal {
    uint32_t epoch;
    bool guest;
    uint64_t status_dev, status_ino;
    struct vgpu_bar0_config regs;  /* devices, limits, shares */
    int nprocs;
    struct med_journal_proc *procs; /* malloc'd */
    char cgroup[VGPU_CGROUP_LEN];   /* bound to; "" none */
};

/* Writes name's journal in dir (the state_dir's descriptor).  0, or -1 with err. */
int med_journal_write(int dir, const char *name, const struct med_journal *j, char *err, size_t errlen);

/*
 * Reads name's journal: 1 and j (free it with med_journal_free), 0 when
 * there is none, -1 with err when it is not to be trusted (state_dir.h),
 * or -2 with err when it is not a journal (cut short by a crash).
 */
int med_journal_read(int dir, const char *dir_path, const char *name, struct med_journal *j, char *err,
                     size_t errlen);

void med_journal_free(struct med_journal *j);

/* Removes name's journal (the vGPU is gone). */
void med_journal_remove(int dir, const char *name);
