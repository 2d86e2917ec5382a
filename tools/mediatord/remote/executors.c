/* The executors this mediator started (executors.h). */
#include "tools/mediatord/remote/executors.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void med_executors_prune(struct med_executors *e)
{
    int k = 0;
    for (int i = 0; i < e->n; i++) {
        struct pollfd p = { .fd = e->rec[i].pidfd, .events = POLLIN };
        if (poll(&p, 1, 0) != 0) { /* ended (or its pidfd is bad: nothing more can be known of it) */
            close(e->rec[i].pidfd);
            continue;
        }
        e->rec[k++] = e->rec[i];
    }
    e->n = k;
}

bool med_executors_add(struct med_executors *e, const struct med_executor_record *r)
{
    if (e->n == e->cap) {
        int cap = e->cap ? 2 * e->cap : 16;
        struct med_executor_record *rec = realloc(e->rec, (size_t)cap * sizeof(*rec));
        if (!rec) {
            close(r->pidfd);
            return false;
        }
        e->rec = rec;
        e->cap = cap;
    }
    e->rec[e->n++] = *r;
    return true;
}

struct med_executor_record *med_executors_find(struct med_executors *e, pid_t pid)
{
    for (int i = 0; i < e->n; i++)
        if (e->rec[i].pid == pid)
            return &e->rec[i];
    return NULL;
}

bool med_executors_has(struct med_executors *e, pid_t pid)
{
    return med_executors_find(e, pid) != NULL;
}

uint64_t med_executors_pinned(const struct med_executors *e, const char *vgpu)
{
    uint64_t n = 0;
    for (int i = 0; i < e->n; i++)
        if (strcmp(e->rec[i].vgpu, vgpu) == 0)
            n += e->rec[i].pinned;
    return n;
}

int med_executors_of_uid(const struct med_executors *e, uid_t uid, const char *home)
{
    int n = 0;
    for (int i = 0; i < e->n; i++)
        n += e->rec[i].guest_uid == uid && strcmp(e->rec[i].home, home) == 0;
    return n;
}

int med_executors_of_vgpu(const struct med_executors *e, const char *vgpu)
{
    int n = 0;
    for (int i = 0; i < e->n; i++)
        n += strcmp(e->rec[i].vgpu, vgpu) == 0;
    return n;
}
