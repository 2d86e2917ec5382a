/*
 * A remote guest's record of its calls: for each call of one library, how
 * many crossed to the executor and waited for its answer, how many were
 * sent without waiting, the time the callers waited and the bytes that
 * crossed, published where a tool can read it while the process runs.
 *
 * At its connection to an executor (forwarder/remote/guest/accounting.c)
 * a guest's library makes a memfd named "vgpu-calls-cuda" or
 * "vgpu-calls-nvml", writes the header and each slot's name, and keeps
 * it mapped, counting into it with relaxed atomic adds.  vgpu-smi --calls
 * PID finds the link "/memfd:vgpu-calls-cuda (deleted)" among the
 * descriptors in /proc/PID/fd and reads the record through it, as the
 * process's user or root may.  A fork child that calls makes its own
 * (its descriptor, the parent's, is closed first); exec closes it.
 *
 * Layout, version 1, little-endian words: the header, then `slots`
 * records, slot i the library's i-th export (its dispatch table's order).
 * The counters are read without a lock: each is exact, the set of them a
 * moment's view.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define VGPU_CALLS_PAGE_NAME_CUDA "vgpu-calls-cuda"
#define VGPU_CALLS_PAGE_NAME_NVML "vgpu-calls-nvml"
#define VGPU_CALLS_PAGE_MAGIC 0x534c4c4143555047ull /* "GPUCALLS" */
#define VGPU_CALLS_PAGE_VERSION 1
#define VGPU_CALLS_PAGE_NAME_LEN 56
#define VGPU_CALLS_PAGE_MAX_SLOTS 4096

struct vgpu_calls_header {
    uint64_t magic;
    uint32_t version;
    uint32_t library; /* 0 CUDA, 1 NVML */
    uint32_t slots;
    int32_t pid;          /* the process that counts (a fork child's own) */
    uint64_t started_ns;  /* CLOCK_MONOTONIC at the connection */
    char where[112];      /* the executor, as VGPU_REMOTE named it */
};

struct vgpu_calls_slot {
    char name[VGPU_CALLS_PAGE_NAME_LEN];
    uint64_t crossed; /* calls that waited for the executor's answer */
    uint64_t sent;    /* calls sent without waiting (launches, records, asynchronous copies) */
    uint64_t wait_ns; /* the time those that crossed waited, from sending to the answer */
    uint64_t bytes;   /* bytes of their messages, both ways */
    uint64_t full_ns; /* the time those sent waited for room in a full ring (the executor behind) */
};

/* The memfd's name of library (0 CUDA, 1 NVML). */
const char *vgpu_calls_page_name(unsigned library);

/* Reads process pid's record of library: a copy in *out (malloc'd, the
 * caller's to free) and 0; or -errno: -ENOENT when it has none (not a
 * guest, or not connected yet), -EACCES when it is another user's,
 * -EPROTO when the record is not one this reader knows. */
int vgpu_calls_page_read(int pid, unsigned library, struct vgpu_calls_header **out);

/* The record's slot i (i < header->slots). */
static inline struct vgpu_calls_slot *vgpu_calls_page_slot(struct vgpu_calls_header *h, unsigned i)
{
    return (struct vgpu_calls_slot *)(h + 1) + i;
}
