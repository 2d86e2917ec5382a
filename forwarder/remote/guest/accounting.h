/*
 * What a guest's calls cost (accounting.c): per call, how many crossed and
 * waited, how many were sent, the time waited and the bytes, published
 * for vgpu-smi --calls (common/contract/window/calls_page.h) and, with
 * VGPU_TRACE=summary, written to the log when the process exits.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* At a connection to the executor at where (under the client's lock):
 * the record of library (0 CUDA, 1 NVML), whose count slots are named
 * names, made if this process has none yet.  Without one (no memfd, no
 * memory) calls are not counted; nothing else changes. */
void vgpu_remote_account_open(const char *where, unsigned library, const char *const *names, unsigned count);

/* A call through slot that waited wait_ns for its answer, bytes both ways. */
void vgpu_remote_account_crossed(unsigned slot, uint64_t wait_ns, size_t bytes);
/* A call through slot sent without waiting, bytes long, which waited
 * full_ns for room to be written. */
void vgpu_remote_account_sent(unsigned slot, size_t bytes, uint64_t full_ns);

/* In a child of fork: the parent's record let go of (the child's first
 * connection makes its own). */
void vgpu_remote_account_forget(void);
