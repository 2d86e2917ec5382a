/*
 * The operator's settings for every process that loads vgpu on a machine:
 * a root-owned file at a path fixed at build time (-Doperator_config,
 * default /etc/vgpu/vgpu.conf).  With `require = mediator` (or
 * `guest-window`), the environment can neither turn the requirement off,
 * point vgpu at another socket or window, set a vGPU's limits itself, nor
 * swap the driver behind vgpu: what a user may use is what the mediator
 * admits.  Without the file, the environment decides as before.
 *
 *     [vgpu]
 *     require = mediator                          # mediator | guest-window | none
 *     mediator_socket = /run/vgpu/mediator.sock   # the only socket used
 *     real_libcuda = /usr/lib/x86_64-linux-gnu/libcuda.so.1   # optional
 *     real_nvml = /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 # optional
 *     pci_id = 1af4:1110                          # guest-window: the device to look for
 *
 * A file that is there but cannot be trusted (not root's, writable by
 * others, in a directory others can write) or read is never ignored: the
 * process is refused, since the operator meant something by it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#ifndef VGPU_OPERATOR_CONFIG
#define VGPU_OPERATOR_CONFIG "/etc/vgpu/vgpu.conf"
#endif

enum vgpu_require {
    VGPU_REQUIRE_NONE,     /* the environment decides */
    VGPU_REQUIRE_MEDIATOR, /* only vgpu-mediatord, at mediator_socket */
    VGPU_REQUIRE_GUEST,    /* only a VM's guest window */
};

struct vgpu_operator {
    bool present;                /* the file is there */
    bool refused;                /* ...but untrusted or malformed: why says so */
    char why[1024];
    enum vgpu_require require;
    char mediator_socket[108];
    char real_libcuda[512], real_nvml[512];
    char pci_id[16];
};

/* True when the operator has locked this machine: the environment must not
 * decide where the vGPU comes from, nor which driver is behind vgpu.  (A
 * refused file locks nothing: the backend refuses the process outright.) */
static inline bool vgpu_operator_locked(const struct vgpu_operator *o)
{
    return !o->refused && o->require != VGPU_REQUIRE_NONE;
}

/* The settings, read once (thread-safe); never NULL. */
const struct vgpu_operator *vgpu_operator(void);

/* Parses a file's text (pure, for tests and the fuzzer): 0, or -1 with
 * "LINE: reason" in err, or a reason alone for a file that says no
 * require = (an empty or half-written one).  A key set twice, or a second
 * [vgpu] section, is refused.  o is reset first. */
int vgpu_operator_parse(const char *text, size_t len, struct vgpu_operator *o, char *err, size_t errlen);

/* Reads path, checking that root owns it and its directories and that no
 * one else can write them: 0 (o->present false when there is no file), or
 * -1 with o->refused and o->why set. */
int vgpu_operator_load(const char *path, struct vgpu_operator *o);
