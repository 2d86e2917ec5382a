/*
 * A guard on the mappings of files others may resize.  A VM's window
 * (guest_window.h) is a file its VM's group may write, and so truncate: a
 * page the file no longer backs raises SIGBUS at the mediator's next touch
 * of it, and SIGBUS ends a process.  The guard's handler catches the fault
 * on a registered mapping, puts zeroed anonymous memory in its place (the
 * touch then completes on that), and marks it lost, for the loop to retire
 * the vGPU (vgpus.c).  A SIGBUS anywhere else ends the mediator as before.
 *
 * The table is the loop thread's to change; the handler only reads it and
 * sets lost flags.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Mappings guarded at once: every vGPU, retired ones included. */
#define MED_GUARD_MAX 128

/* Installs the SIGBUS handler.  0, or -1 with errno. */
int med_window_guard_install(void);

/* Guards [addr, addr + len): a handle (>= 0), or -1 when the table is full
 * (the mapping is then unguarded: said by the caller). */
int med_window_guard_add(void *addr, size_t len);

/* The mapping is being unmapped: no longer guarded. */
void med_window_guard_remove(int handle);

/* Whether the handler replaced the mapping (a fault on it, or
 * med_window_guard_retire). */
bool med_window_guard_lost(int handle);

/* Replaces the mapping with zeroed anonymous memory now (its file shrank),
 * as the handler would: every later touch of it is harmless. */
void med_window_guard_retire(int handle);
