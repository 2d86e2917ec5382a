/*
 * The one logging facility: VGPU_LOG=error|warn|info|debug (default warn),
 * to stderr or to VGPU_LOG_FILE; and VGPU_TRACE=1, one line per driver call
 * (VGPU_TRACE=summary: a remote guest's calls summed up at its exit).
 * Settings are read on first use, never in a constructor.
 */
#pragma once

#include <stdbool.h>

enum vgpu_log_level {
    VGPU_LOG_ERROR = 0,
    VGPU_LOG_WARN = 1,
    VGPU_LOG_INFO = 2,
    VGPU_LOG_DEBUG = 3,
};

/* Written once by vgpu_log_setup(); read by everyone (see log.c). */
extern int vgpu_log_level_now;
extern int vgpu_trace_now;

void vgpu_log_setup(void);

/* For vgpu's programs (not the libraries): the name lines start with
 * (default "vgpu"), and a descriptor to write to instead of stderr or
 * VGPU_LOG_FILE (a daemon's log file). */
void vgpu_log_set_program(const char *name);
void vgpu_log_set_fd(int fd);

static inline bool vgpu_log_enabled(enum vgpu_log_level level)
{
    if (__builtin_expect(vgpu_log_level_now < 0, 0))
        vgpu_log_setup();
    return (int)level <= vgpu_log_level_now;
}

static inline bool vgpu_trace_enabled(void)
{
    if (__builtin_expect(vgpu_log_level_now < 0, 0))
        vgpu_log_setup();
    return vgpu_trace_now;
}

void vgpu_log_write(enum vgpu_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define vgpu_log(level, ...)                    \
    do {                                        \
        if (vgpu_log_enabled(level))            \
            vgpu_log_write(level, __VA_ARGS__); \
    } while (0)

#define vgpu_error(...) vgpu_log(VGPU_LOG_ERROR, __VA_ARGS__)
#define vgpu_warn(...) vgpu_log(VGPU_LOG_WARN, __VA_ARGS__)
#define vgpu_info(...) vgpu_log(VGPU_LOG_INFO, __VA_ARGS__)
#define vgpu_debug(...) vgpu_log(VGPU_LOG_DEBUG, __VA_ARGS__)

/* One trace line: "vgpu-trace[pid/tid] NAME(ARGS) = RESULT". */
void vgpu_trace_write(const char *name, long result, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* VGPU_TRACE=summary: whether a remote guest sums up its calls at exit
 * (forwarder/remote/guest/accounting.c), and one line of that, written
 * whatever VGPU_LOG says. */
bool vgpu_trace_summary_enabled(void);
void vgpu_trace_summary_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A call vgpu forwards untouched: name and thread only. */
void vgpu_trace_forwarded(const char *name);

#define vgpu_trace(name, result, ...)                        \
    do {                                                     \
        if (vgpu_trace_enabled())                            \
            vgpu_trace_write(name, (long)(result), __VA_ARGS__); \
    } while (0)
