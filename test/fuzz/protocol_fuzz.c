/*
 * libFuzzer target: the mediator protocol's parser (common/contract/protocol/protocol.c),
 * as the mediator meets a client's bytes and as a client meets the
 * mediator's.  Every message it accepts is then read the way its readers
 * read it (STATUS, WATCH, COMPUTE and CLUSTER records, their strings), so an accepted message that a
 * reader would overrun is a finding too.  Built with clang's
 * -fsanitize=fuzzer,address,undefined (test/fuzz/meson.build).
 */
#include "common/contract/protocol/protocol.h"

#include <stdint.h>
#include <string.h>

static size_t walk(const struct vgpu_msg *m)
{
    size_t sum = 0;
    if (m->type == VGPU_MSG_HELLO)
        sum += strlen(m->u.hello.vgpu);
    if (m->type == VGPU_MSG_REFUSE)
        sum += strlen(m->u.refuse.reason);
    if (m->type == VGPU_MSG_WATCH) {
        struct vgpu_watch_header h;
        vgpu_proto_watch_header(m, &h);
        for (uint32_t i = 0; i < h.ncases; i++) {
            struct vgpu_watch_case c;
            vgpu_proto_watch_case(m, i, &c);
            sum += strlen(c.uuid) + strlen(c.comm) + strlen(c.user) + strlen(c.vgpu) + c.rule;
        }
    }
    if (m->type == VGPU_MSG_COMPUTE) {
        struct vgpu_compute_header h;
        vgpu_proto_compute_header(m, &h);
        for (uint32_t i = 0; i < h.ndevs; i++) {
            struct vgpu_compute_device d;
            vgpu_proto_compute_device(m, i, &d);
            sum += strlen(d.vgpu) + d.held + d.utilization;
        }
        for (uint32_t i = 0; i < h.nprocs; i++) {
            struct vgpu_compute_proc p;
            vgpu_proto_compute_proc(m, i, &p);
            sum += strlen(p.vgpu) + p.utilization;
        }
    }
    if (m->type == VGPU_MSG_BIND)
        sum += strlen(m->u.bind.vgpu);
    if (m->type == VGPU_MSG_BOUND)
        sum += strlen(m->u.bound.vgpu) + strlen(m->u.bound.cgroup);
    if (m->type == VGPU_MSG_CLUSTER) {
        struct vgpu_cluster_header h;
        vgpu_proto_cluster_header(m, &h);
        for (uint32_t i = 0; i < h.n; i++) {
            struct vgpu_cluster_vgpu v;
            vgpu_proto_cluster_vgpu(m, i, &v);
            sum += strlen(v.name) + strlen(v.cls) + v.flags;
        }
    }
    if (m->type != VGPU_MSG_STATUS)
        return sum;
    struct vgpu_status_header h;
    vgpu_proto_status_header(m, &h);
    sum += strlen(h.version);
    for (uint32_t i = 0; i < h.nvgpus; i++) {
        struct vgpu_status_vgpu v;
        vgpu_proto_status_vgpu(m, i, &v);
        sum += strlen(v.name);
        for (uint32_t d = 0; d < v.ndev; d++)
            sum += strlen(v.dev[d].uuid) + strlen(v.dev[d].gpu_name);
    }
    for (uint32_t i = 0; i < h.nprocs; i++) {
        struct vgpu_status_proc p;
        vgpu_proto_status_proc(m, i, &p);
        struct vgpu_status_vgpu v;
        vgpu_proto_status_vgpu(m, p.vgpu, &v); /* the index must be in range */
        sum += strlen(p.comm) + strlen(p.user) + strlen(v.name);
    }
    return sum;
}

static void parse_all(const uint8_t *data, size_t size, size_t max_payload)
{
    while (size > 0) {
        struct vgpu_msg m;
        char err[256];
        ssize_t n = vgpu_proto_parse(data, size, max_payload, &m, err, sizeof(err));
        if (n <= 0)
            return;
        if (walk(&m) == (size_t)-1)
            __builtin_trap();
        data += n;
        size -= (size_t)n;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    parse_all(data, size, VGPU_PROTO_MAX_REQUEST); /* the mediator reading a client */
    parse_all(data, size, VGPU_PROTO_MAX_REPLY);   /* a client or vgpu-smi reading the mediator */
    return 0;
}
