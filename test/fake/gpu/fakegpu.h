/*
 * Device model shared by the fake libcuda and the fake libnvidia-ml.
 *
 * Both libraries compile this folder's model in (config.c, identity.c,
 * processes.c, state.c, usage.c, busy.c); its functions are hidden so each
 * library keeps its own copy bound locally.
 *
 * Configuration comes from the environment:
 *   FAKEGPU_DEVICES       number of devices (default 2, at most 16)
 *   FAKEGPU_MEMORY        bytes per device, suffix K/M/G/T = powers of 1024
 *                         (default 16G)
 *   FAKEGPU_CTX_OVERHEAD  device bytes a context takes (default 256M)
 *   FAKEGPU_STATE         path of a file that holds the device usage of all
 *                         processes sharing it (default: process-private)
 *   FAKEGPU_LAUNCH_NS     host time every launch call takes (default 2000)
 *   FAKEGPU_KERNEL_NS     device time of a built-in kernel other than busy
 *                         (default 1000)
 *   FAKEGPU_TIMESLICE_NS  device time a process keeps the device for while
 *                         others wait (default 200000)
 */
#ifndef FAKEGPU_H
#define FAKEGPU_H

#include <stddef.h>

#define FAKEGPU_HIDDEN __attribute__((visibility("hidden")))

#define FAKEGPU_MAX_DEVICES 16
#define FAKEGPU_MAX_PROCS 128
#define FAKEGPU_UUID_BYTES 16

/* Driver version reported by both libraries (CUDA 13.0). */
#define FAKEGPU_CUDA_VERSION 13000

struct fakegpu_config {
    int devices;
    unsigned long long memory;
    unsigned long long ctx_overhead; /* the first context of a process on a device */
    unsigned long long ctx_extra;    /* each further context there */
    unsigned long long launch_ns;    /* host time of a launch call */
    unsigned long long kernel_ns;    /* device time of add_one, fill_u32, an empty graph */
    unsigned long long timeslice_ns; /* a turn on the device, while others wait */
};

/* Parsed environment; read once per process. */
FAKEGPU_HIDDEN const struct fakegpu_config *fakegpu_config(void);

/* Parses "123", "64K", "16G", "1T" (optionally followed by "B" or "iB").
 * Returns 0 on success, -1 on malformed input or overflow. */
FAKEGPU_HIDDEN int fakegpu_parse_size(const char *text, unsigned long long *out);

/* Deterministic identity: fa 4e 00 .. 00 <index>. */
FAKEGPU_HIDDEN void fakegpu_device_uuid(int dev, unsigned char out[FAKEGPU_UUID_BYTES]);
/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (41 bytes with NUL). */
FAKEGPU_HIDDEN void fakegpu_device_uuid_string(int dev, char out[48]);
/* PCI location: domain 0, bus index + 1, device 0, function 0. */
FAKEGPU_HIDDEN unsigned fakegpu_device_pci_bus(int dev);
/* Maps a PCI bus id string ("0000:01:00.0", "00000000:01:00.0",
 * "01:00.0", ...) to a device index, or -1. */
FAKEGPU_HIDDEN int fakegpu_device_from_pci_bus_id(const char *bus_id);

/* usage.c: device memory accounting, shared by every process using the same state.
 * fakegpu_state_charge fails (returns -1) when the device would exceed its
 * memory or the state is unusable. */
FAKEGPU_HIDDEN int fakegpu_state_charge(int dev, unsigned long long bytes);
FAKEGPU_HIDDEN void fakegpu_state_uncharge(int dev, unsigned long long bytes);
/* Bytes used on the device by all live processes. */
FAKEGPU_HIDDEN unsigned long long fakegpu_state_device_used(int dev);

/* A process and what it holds or used on a device. */
struct fakegpu_proc_figure {
    int pid;
    unsigned long long value;
};

/* Lists live processes using the device. Fills at most cap entries and
 * returns how many there are in total. */
FAKEGPU_HIDDEN unsigned fakegpu_state_processes(int dev, struct fakegpu_proc_figure *out, unsigned cap);

/* Whether the process pid that started at start_time (clock ticks since
 * boot, /proc/PID/stat field 22) still runs; a zombie does not. */
FAKEGPU_HIDDEN int fakegpu_process_alive(int pid, unsigned long long start_time);
/* This process's pid and start time, without a system call. */
FAKEGPU_HIDDEN int fakegpu_self_pid(void);
FAKEGPU_HIDDEN unsigned long long fakegpu_self_start_time(void);

/* The time-slicing lock and clock of a physical device (turn.h),
 * shared like the memory accounting; NULL when the state is unusable. */
struct fakegpu_turn;
FAKEGPU_HIDDEN struct fakegpu_turn *fakegpu_state_turn(int dev);

/* The device ran this process's kernels from start_ns to end_ns
 * (CLOCK_MONOTONIC): counted for the device and for the process. */
FAKEGPU_HIDDEN void fakegpu_state_record_busy(int dev, unsigned long long start_ns, unsigned long long end_ns);

/* Device time used on dev in the second before now_ns: by all processes
 * (*device_ns) and by each live process that used some (at most cap
 * entries; returns how many there are). */
FAKEGPU_HIDDEN unsigned fakegpu_state_busy(int dev, unsigned long long now_ns, unsigned long long *device_ns,
                                           struct fakegpu_proc_figure *out, unsigned cap);

/* Export-table rule shared by cuGetExportTable and nvmlInternalGetExportTable:
 * any id whose first byte is 0xfa names the fake's table. */
FAKEGPU_HIDDEN const void *fakegpu_export_table(const unsigned char *id);

#endif /* FAKEGPU_H */
