/*
 * A process's status record: what joining its vGPU ended in, published
 * where a tool can read it without the process's help.
 *
 * When joining ends (vgpu_self_join), vgpu writes a few lines of text to a
 * memfd named "vgpu-status", seals it and keeps the descriptor open.
 * vgpu-doctor finds the link "/memfd:vgpu-status (deleted)" among the
 * descriptors in /proc/PID/fd and reads the record through it, as the
 * process's user or root may.  One descriptor per process, only in
 * processes that used CUDA or NVML; a later change (a slot taken, or
 * refused) replaces the record behind the same descriptor number.  A fork
 * child inherits its parent's record (the pid line tells them apart); exec
 * closes it.
 *
 * Version 1, one "key value" per line, the first line "vgpu-status 1":
 *
 *   vgpu-status 1
 *   pid 4242
 *   mode on                  off | on | refused
 *   source standalone        mediator | guest | standalone (refused: unknown; off: none)
 *   vgpu train               the vGPU's name (mediator, guest)
 *   bar0 /dev/shm/a.bar0     its BAR0 file (standalone, guest)
 *   socket /run/vgpu/...     the mediator's socket (mediator)
 *   slot 3                   its process slot, -1 for none (NVML only)
 *   device 0 GPU-... 0 4294967296 17179869184
 *                            index, UUID, the GPU as configured, limit (0: none), the GPU's memory
 *   reason ...               refused: why, and what to fix
 *
 * Readers ignore keys they do not know, so keys may be added within a
 * version; a change of meaning takes a new version, which readers refuse.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/contract/settings/settings.h"

#define VGPU_STATUS_PAGE_NAME "vgpu-status"
/* What readlink(2) says of the descriptor in /proc/PID/fd. */
#define VGPU_STATUS_PAGE_LINK "/memfd:" VGPU_STATUS_PAGE_NAME " (deleted)"
#define VGPU_STATUS_PAGE_VERSION 1
#define VGPU_STATUS_PAGE_MAX 8192 /* bytes a record takes at most */

struct vgpu_status_page_device {
    char uuid[96];
    char physical[VGPU_DEVICE_TOKEN_LEN];
    uint64_t limit; /* bytes; 0 = none */
    uint64_t total; /* the GPU's memory */
};

struct vgpu_status_page {
    unsigned version;
    int pid;
    char mode[16];   /* "off", "on", "refused" */
    char source[16]; /* "mediator", "guest", "standalone", "unknown", "none" */
    char vgpu[64];
    char bar0[4096];
    char socket[108];
    int slot;
    int ndev;
    struct vgpu_status_page_device dev[VGPU_MAX_DEVICES];
    char reason[2048];
};

/* The record as text; its length, or -1 when len is too small. */
int vgpu_status_page_format(const struct vgpu_status_page *p, char *buf, size_t len);

/* Parses a record's text (text[len] need not be NUL).  0, or -1 with err. */
int vgpu_status_page_parse(const char *text, size_t len, struct vgpu_status_page *p, char *err, size_t errlen);
