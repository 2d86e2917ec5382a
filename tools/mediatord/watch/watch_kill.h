/*
 * The watch's one act of force: SIGKILL to a process it found, only while
 * the pid is still that process (its start time), and never to the
 * mediator itself or pid 1.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Kills pid if it is the process that started at start_time (/proc/PID/stat).
 * The check and the signal go through one pidfd, so a pid reused between
 * them is never signalled.  0, or -1 with why it was not killed (gone
 * already, reused, the mediator itself, pid 1, unknown start time, or the
 * kernel's error).
 */
int med_kill_verified(pid_t pid, uint64_t start_time, char *why, size_t len);
