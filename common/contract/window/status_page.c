/* The process's status record; see status_page.h. */
#define _GNU_SOURCE
#include "common/contract/window/status_page.h"

#include "common/error.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- text ---- */

struct out {
    char *buf;
    size_t len, used;
    bool full;
};

/* Appends "key value\n", the value on one line. */
static void put(struct out *o, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void put(struct out *o, const char *key, const char *fmt, ...)
{
    size_t room = o->len - o->used;
    int k = snprintf(o->buf + o->used, room, "%s ", key);
    if (k < 0 || (size_t)k >= room) {
        o->full = true;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->used + k, room - (size_t)k, fmt, ap);
    va_end(ap);
    /* The value, its newline and the terminator must fit. */
    if (n < 0 || (size_t)k + (size_t)n + 2 > room) {
        o->full = true;
        return;
    }
    char *value = o->buf + o->used + k;
    for (int i = 0; i < n; i++)
        if (value[i] == '\n' || value[i] == '\r')
            value[i] = ' ';
    value[n] = '\n';
    value[n + 1] = '\0';
    o->used += (size_t)k + (size_t)n + 1;
}

int vgpu_status_page_format(const struct vgpu_status_page *p, char *buf, size_t len)
{
    struct out o = { buf, len, 0, len == 0 };
    if (o.full)
        return -1;
    buf[0] = '\0';
    put(&o, "vgpu-status", "%d", VGPU_STATUS_PAGE_VERSION);
    put(&o, "pid", "%d", p->pid);
    put(&o, "mode", "%s", p->mode);
    put(&o, "source", "%s", p->source);
    if (p->vgpu[0])
        put(&o, "vgpu", "%s", p->vgpu);
    if (p->bar0[0])
        put(&o, "bar0", "%s", p->bar0);
    if (p->socket[0])
        put(&o, "socket", "%s", p->socket);
    put(&o, "slot", "%d", p->slot);
    for (int i = 0; i < p->ndev && i < VGPU_MAX_DEVICES; i++)
        put(&o, "device", "%d %s %s %" PRIu64 " %" PRIu64, i, p->dev[i].uuid, p->dev[i].physical, p->dev[i].limit,
            p->dev[i].total);
    if (p->reason[0])
        put(&o, "reason", "%s", p->reason);
    return o.full ? -1 : (int)o.used;
}

static int parse_device(const char *value, struct vgpu_status_page *p)
{
    struct vgpu_status_page_device d = { 0 };
    int index;
    if (sscanf(value, "%d %95s %47s %" SCNu64 " %" SCNu64, &index, d.uuid, d.physical, &d.limit, &d.total) != 5 ||
        index != p->ndev || index >= VGPU_MAX_DEVICES)
        return -1;
    p->dev[p->ndev++] = d;
    return 0;
}

int vgpu_status_page_parse(const char *text, size_t len, struct vgpu_status_page *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof(*p));
    p->slot = -1;
    size_t at = 0;
    for (int line = 1; at < len; line++) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
        char copy[4096 + 64];
        if (n >= sizeof(copy))
            return vgpu_fail(err, errlen, "line %d is %zu bytes long", line, n);
        memcpy(copy, text + at, n);
        copy[n] = '\0';
        at += n + 1;
        char *value = strchr(copy, ' ');
        if (!value)
            return vgpu_fail(err, errlen, "line %d is not \"key value\": %s", line, copy);
        *value++ = '\0';
        if (line == 1) {
            if (strcmp(copy, "vgpu-status") != 0)
                return vgpu_fail(err, errlen, "not a vgpu status record");
            p->version = (unsigned)strtoul(value, NULL, 10);
            if (p->version != VGPU_STATUS_PAGE_VERSION)
                return vgpu_fail(err, errlen, "record version %u, this reader knows version %d (use the vgpu-doctor "
                                 "of the vgpu the process runs)", p->version, VGPU_STATUS_PAGE_VERSION);
        } else if (strcmp(copy, "pid") == 0) {
            p->pid = atoi(value);
        } else if (strcmp(copy, "mode") == 0) {
            snprintf(p->mode, sizeof(p->mode), "%s", value);
        } else if (strcmp(copy, "source") == 0) {
            snprintf(p->source, sizeof(p->source), "%s", value);
        } else if (strcmp(copy, "vgpu") == 0) {
            snprintf(p->vgpu, sizeof(p->vgpu), "%s", value);
        } else if (strcmp(copy, "bar0") == 0) {
            snprintf(p->bar0, sizeof(p->bar0), "%s", value);
        } else if (strcmp(copy, "socket") == 0) {
            snprintf(p->socket, sizeof(p->socket), "%s", value);
        } else if (strcmp(copy, "slot") == 0) {
            p->slot = atoi(value);
        } else if (strcmp(copy, "device") == 0) {
            if (parse_device(value, p) != 0)
                return vgpu_fail(err, errlen, "line %d: a device line out of order or malformed: %s", line, value);
        } else if (strcmp(copy, "reason") == 0) {
            snprintf(p->reason, sizeof(p->reason), "%s", value);
        }
    }
    if (p->version == 0)
        return vgpu_fail(err, errlen, "an empty record");
    if (!p->mode[0])
        return vgpu_fail(err, errlen, "the record has no mode line");
    return 0;
}
