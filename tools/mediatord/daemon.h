/*
 * How vgpu-mediatord runs: under systemd (Type=notify: readiness told on
 * $NOTIFY_SOCKET), or started by hand in the background.  In the
 * background, the process that serves is the forked child, and everything
 * it waits on (its signalfd and epoll set) must be made by it: a signalfd
 * that the parent added to an epoll set never wakes the child's loop.  So
 * the parent forks first and waits for the child's word, and exits with it:
 * 0 once the child serves, 1 if its start failed (it said why on stderr).
 */
#pragma once

/* Forks into the background; returns in the child only. */
void med_daemon_fork(void);

/* The child serves: the waiting parent exits 0, and the child leaves the
 * terminal (stdin, stdout and stderr to /dev/null; the log to log_fd, if
 * not -1).  A no-op in the foreground. */
void med_daemon_ready(int log_fd);

/* systemd's readiness protocol, without libsystemd: one datagram to
 * $NOTIFY_SOCKET ("READY=1", "RELOADING=1", "STOPPING=1"). */
void med_notify_systemd(const char *state);
