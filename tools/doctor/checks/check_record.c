/*
 * Which vGPU the process joined, or why it was refused: its status record
 * (common/contract/window/status_page.h), a sealed memfd among its descriptors.
 */
#define _GNU_SOURCE
#include "tools/doctor/checks/checks.h"

#include "common/contract/settings/settings.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Reads the record of the process into c->record: 0, ENOENT when there is none, or an errno. */
static int find_record(struct doc_ctx *c, char *err, size_t errlen)
{
    char text[VGPU_STATUS_PAGE_MAX];
    int n = doc_proc_record(&c->host, c->proc->pid, text, sizeof(text));
    if (n < 0) {
        snprintf(err, errlen, "%s", strerror(-n));
        return -n;
    }
    return vgpu_status_page_parse(text, (size_t)n, &c->record, err, errlen) == 0 ? 0 : EINVAL;
}

static void report_on(struct doc_ctx *c)
{
    const struct vgpu_status_page *r = &c->record;
    char where[4400], devices[4096] = "";
    if (strcmp(r->source, "mediator") == 0)
        snprintf(where, sizeof(where), "vGPU \"%s\" of vgpu-mediatord at %s", r->vgpu, r->socket);
    else if (strcmp(r->source, "guest") == 0)
        snprintf(where, sizeof(where), "vGPU \"%s\" of the VM's window %s", r->vgpu, r->bar0);
    else
        snprintf(where, sizeof(where), "a standalone vGPU, BAR0 %s", r->bar0);
    for (int i = 0; i < r->ndev; i++) {
        char limit[32], total[32];
        size_t used = strlen(devices);
        snprintf(devices + used, sizeof(devices) - used, "%sdevice %d = GPU %s (%s), quota %s of %s",
                 i ? "; " : "", i, r->dev[i].physical, r->dev[i].uuid,
                 r->dev[i].limit ? vgpu_format_size(r->dev[i].limit, limit, sizeof(limit)) : "none",
                 vgpu_format_size(r->dev[i].total, total, sizeof(total)));
    }
    doc_add(&c->report, DOC_OK, "vgpu", "joined %s: %s%s", where, devices[0] ? devices : "no devices",
            r->slot >= 0 ? "" : " (no process slot yet: it has used NVML, not CUDA)");
}

void doc_check_record(struct doc_ctx *c)
{
    if (!c->proc || c->remote) /* a remote GPU's process joins no vGPU: its executor does */
        return;
    char err[512] = "";
    int e = find_record(c, err, sizeof(err));
    if (e == ENOENT) {
        if (c->vgpu_mapped[DOC_CUDA] || c->vgpu_mapped[DOC_NVML])
            doc_add(&c->report, DOC_INFO, "vgpu", "no status record: the process has not called cuInit or nvmlInit "
                    "yet (vgpu joins its vGPU at the first call), or its vgpu is older than status records");
        return;
    }
    if (e) {
        doc_fix(doc_add(&c->report, DOC_WARNING, "vgpu", "cannot read process %d's status record: %s",
                        c->proc->pid, err),
                "run vgpu-doctor as the process's user or as root: sudo vgpu-doctor %d", c->proc->pid);
        return;
    }
    c->have_record = true;
    const struct vgpu_status_page *r = &c->record;
    if (r->pid != c->proc->pid)
        doc_add(&c->report, DOC_INFO, "vgpu", "the status record was written by process %d, which forked this "
                "one: it tells what that process joined", r->pid);
    if (strcmp(r->mode, "on") == 0)
        report_on(c);
    else if (strcmp(r->mode, "refused") == 0)
        doc_fix(doc_add(&c->report, DOC_PROBLEM, "vgpu", "vgpu refused this process, which sees no GPU: %s",
                        r->reason),
                "fix what the reason names, then restart the process");
    else
        doc_fix(doc_add(&c->report, DOC_WARNING, "vgpu",
                        "vgpu is loaded but the process is in no vGPU (no mediator, no VM window, no VGPU_* "
                        "settings): it forwards every call, with no limits"),
                "give it a vGPU: start vgpu-mediatord (docs/guide/mediator.md), or set VGPU_MEMORY_LIMIT and "
                "VGPU_VISIBLE_DEVICES in its environment (vgpu-run --memory 8G --devices 0 -- COMMAND)");
}
