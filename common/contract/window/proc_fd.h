/*
 * A descriptor another process keeps open, found by what it links to: the
 * records processes publish as memfds (status_page.h, calls_page.h), which
 * tools read through /proc/PID/fd as the process's user or root may.
 */
#pragma once

/* Opens (read-only, never waiting) the entry of fd_dir (a /proc/PID/fd,
 * or one under a test's root) whose link reads link: the descriptor, or
 * -errno (-ENOENT: none links there; -EPROTO: what was opened is no
 * regular file of that link, the process having changed it meanwhile). */
int vgpu_proc_fd_open(const char *fd_dir, const char *link);
