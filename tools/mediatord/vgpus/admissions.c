/*
 * The mediator's records of the processes it admitted to each vGPU and
 * the slots it gave them; see vgpus.h.  They, not the process table the
 * vGPU's processes can write, decide whose a slot is.
 */
#define _GNU_SOURCE
#include "tools/mediatord/vgpus/vgpus.h"

#include "common/error.h"
#include "common/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct med_admission *add(struct med_vgpu *v, const struct med_admission *from)
{
    if (v->nadm == v->adm_cap) {
        int cap = v->adm_cap ? v->adm_cap * 2 : 16;
        struct med_admission **grown = realloc(v->adm, sizeof(*grown) * (size_t)cap);
        if (!grown)
            return NULL;
        v->adm = grown;
        v->adm_cap = cap;
    }
    struct med_admission *a = malloc(sizeof(*a));
    if (!a)
        return NULL;
    *a = *from;
    v->adm[v->nadm++] = a;
    return a;
}

bool med_vgpu_journal(struct med_vgpu *v)
{
    struct med_journal j = { .epoch = v->all->epoch, .guest = v->conf.guest, .status_dev = v->host.status_dev,
                             .status_ino = v->host.status_ino, .regs = v->regs, .nprocs = v->nadm };
    snprintf(j.cgroup, sizeof(j.cgroup), "%s", v->bound);
    j.procs = calloc(v->nadm ? (size_t)v->nadm : 1, sizeof(*j.procs));
    char err[512] = "out of memory";
    for (int i = 0; j.procs && i < v->nadm; i++)
        j.procs[i] = (struct med_journal_proc){ .pid = v->adm[i]->pid, .start_time = v->adm[i]->start_time,
                                                .uid = v->adm[i]->uid, .slot = v->adm[i]->slot };
    bool ok = j.procs && med_journal_write(v->all->dir, v->conf.name, &j, err, sizeof(err)) == 0;
    free(j.procs);
    if (!ok && !v->journal_failing)
        vgpu_error("%s; a restart of the mediator would not find vGPU %s's processes (said once, until it works)",
                   err, v->conf.name);
    v->journal_failing = !ok;
    v->dirty = !ok;
    return ok;
}

struct med_admission *med_vgpu_admit(struct med_vgpu *v, pid_t pid, uint64_t start_time, uid_t uid)
{
    struct med_admission want = { .pid = pid, .start_time = start_time, .uid = uid, .slot = -1, .connected = true };
    struct med_admission *a = add(v, &want);
    if (a)
        med_vgpu_journal(v);
    return a;
}

int med_vgpu_claim(struct med_vgpu *v, struct med_admission *a)
{
    int held = 0, slot = -1;
    for (int i = 0; i < v->nadm; i++)
        held += v->adm[i]->slot >= 0 && v->adm[i]->pid == a->pid && v->adm[i]->start_time == a->start_time;
    if (held >= MED_SLOTS_PER_PID)
        return MED_CLAIM_PID_FULL;
    for (int s = 0; s < VGPU_BAR0_MAX_PROCS && slot < 0; s++)
        if (!v->slot_of[s])
            slot = s;
    if (slot < 0)
        return MED_CLAIM_TABLE_FULL;
    a->slot = slot;
    v->slot_of[slot] = a;
    /* Journaled first: a slot in the table is always one a restarted
     * mediator knows it gave. */
    med_vgpu_journal(v);
    /* Whatever a process of the vGPU left in a slot no one was given goes. */
    vgpu_bar0_claim_slot_at(v->bar, slot, a->pid, a->start_time, 0); /* the mediator reaps, by its records */
    return slot;
}

struct med_admission *med_vgpu_reattach(struct med_vgpu *v, uint32_t slot, pid_t pid, uint64_t start_time)
{
    struct med_admission *a = slot < VGPU_BAR0_MAX_PROCS ? v->slot_of[slot] : NULL;
    if (!a || a->connected || a->pid != pid || a->start_time != start_time)
        return NULL;
    a->connected = true;
    return a;
}

/* Frees a's slot as the mediator gave it, whatever the vGPU's processes
 * wrote over its owner word since; logs what came back. */
static void release(struct med_vgpu *v, struct med_admission *a, const char *who)
{
    struct vgpu_bar0_proc *p = &v->bar->procs[a->slot];
    uint64_t given = VGPU_BAR0_OWNER(a->pid, VGPU_PROC_LIVE), now = atomic_load(&p->owner), returned = 0;
    if (now != given) {
        vgpu_warn("vGPU %s: slot %d of %s was rewritten (owner word 0x%llx) by a process of the vGPU; it is freed as "
                  "it was given", v->conf.name, a->slot, who, (unsigned long long)now);
        atomic_store(&p->owner, given);
    }
    v->slot_of[a->slot] = NULL;
    if (!vgpu_bar0_release_slot(v->bar, a->slot, given, &returned))
        return; /* rewritten again, this instant: the slot is a process's game now, never the mediator's word */
    char size[32];
    vgpu_info("vGPU %s: %s ended; %s returned", v->conf.name, who, vgpu_format_size(returned, size, sizeof(size)));
}

void med_vgpu_leave(struct med_vgpu *v, struct med_admission *a, const char *who)
{
    if (a->slot >= 0)
        release(v, a, who);
    for (int i = 0; i < v->nadm; i++)
        if (v->adm[i] == a) {
            v->adm[i] = v->adm[--v->nadm];
            break;
        }
    free(a);
    v->dirty = true;
}

void med_vgpu_carry(struct med_vgpu *v, const struct med_journal_proc *procs, int n)
{
    for (int i = 0; i < n; i++) {
        /* The dead too: the first scan returns what their slots held. */
        const struct med_journal_proc *p = &procs[i];
        if (p->slot >= 0 && v->slot_of[p->slot])
            continue; /* one record a slot */
        struct med_admission want = { .pid = p->pid, .start_time = p->start_time, .uid = p->uid, .slot = p->slot };
        struct med_admission *a = add(v, &want);
        if (a && a->slot >= 0)
            v->slot_of[a->slot] = a;
    }
}

bool med_vgpu_first_of_pid(const struct med_vgpu *v, int k)
{
    if (v->adm[k]->slot < 0)
        return false;
    for (int j = 0; j < k; j++)
        if (v->adm[j]->slot >= 0 && v->adm[j]->pid == v->adm[k]->pid)
            return false;
    return true;
}
