#define _GNU_SOURCE
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Log settings of this library copy; written once by setup_once(), except
 * log_fd, which emit() replaces when its file had to be opened again. */
int vgpu_log_level_now = -1;
int vgpu_trace_now;
static bool trace_summary; /* VGPU_TRACE=summary */
static _Atomic int log_fd = 2;
static const char *log_path;               /* VGPU_LOG_FILE, when it is the log */
static _Atomic uint64_t log_dev, log_ino; /* the file log_fd was opened on */
static const char *program = "vgpu";
static pthread_once_t setup_guard = PTHREAD_ONCE_INIT;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

/* Opens log_path as the log; the descriptor, or -1. */
static int open_log(void)
{
    int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    atomic_store(&log_dev, st.st_dev);
    atomic_store(&log_ino, st.st_ino);
    atomic_store(&log_fd, fd);
    return fd;
}

/*
 * The descriptor to write to.  A program may close every descriptor it
 * inherited (daemons and fork children do), and the number may then be
 * one of its own files: a log file is checked to be the same file before
 * each line, and opened again when it is not.
 */
static int current_log_fd(void)
{
    int fd = atomic_load(&log_fd);
    struct stat st;
    if (!log_path || (fstat(fd, &st) == 0 && st.st_dev == atomic_load(&log_dev) && st.st_ino == atomic_load(&log_ino)))
        return fd;
    fd = open_log();
    return fd >= 0 ? fd : 2;
}

static void setup_once(void)
{
    int level = VGPU_LOG_WARN;
    const char *v = getenv("VGPU_LOG");
    bool bad_level = false;

    if (v && *v) {
        bad_level = true;
        for (int i = 0; i < 4; i++)
            if (strcasecmp(v, level_names[i]) == 0) {
                level = i;
                bad_level = false;
            }
    }
    const char *file = getenv("VGPU_LOG_FILE");
    int open_errno = 0;
    if (file && *file) {
        log_path = file;
        if (open_log() < 0)
            open_errno = errno;
    }
    const char *t = getenv("VGPU_TRACE");
    trace_summary = t && strcmp(t, "summary") == 0;
    vgpu_trace_now = t && *t && strcmp(t, "0") != 0 && !trace_summary;
    __atomic_store_n(&vgpu_log_level_now, level, __ATOMIC_RELEASE);

    if (bad_level)
        vgpu_log_write(VGPU_LOG_WARN, "VGPU_LOG=%s is not one of error, warn, info, debug; using warn", v);
    if (open_errno)
        vgpu_log_write(VGPU_LOG_WARN, "cannot open VGPU_LOG_FILE=%s (%s); logging to stderr", file,
                       strerror(open_errno));
}

void vgpu_log_setup(void)
{
    pthread_once(&setup_guard, setup_once);
}

void vgpu_log_set_program(const char *name)
{
    program = name;
}

void vgpu_log_set_fd(int fd)
{
    vgpu_log_setup();
    log_path = NULL;
    atomic_store(&log_fd, fd);
}

/* One write(2) per line, so lines of concurrent threads and processes
 * sharing a log file never interleave. */
static void emit(const char *prefix, const char *fmt, va_list ap, const char *suffix)
{
    char line[1024];
    int n = snprintf(line, sizeof(line), "%s", prefix);
    if (n < 0)
        return;
    if ((size_t)n < sizeof(line)) {
        int m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
        if (m > 0)
            n += m;
    }
    if ((size_t)n >= sizeof(line) - 64)
        n = (int)sizeof(line) - 64;
    n += snprintf(line + n, sizeof(line) - (size_t)n, "%s\n", suffix);
    int fd = current_log_fd();
    ssize_t w;
    do
        w = write(fd, line, (size_t)n);
    while (w < 0 && errno == EINTR);
}

void vgpu_log_write(enum vgpu_log_level level, const char *fmt, ...)
{
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "%s[%d]: %s: ", program, (int)getpid(), level_names[level]);
    va_list ap;
    va_start(ap, fmt);
    emit(prefix, fmt, ap, "");
    va_end(ap);
}

void vgpu_trace_write(const char *name, long result, const char *fmt, ...)
{
    char prefix[160], suffix[32];
    snprintf(prefix, sizeof(prefix), "vgpu-trace[%d/%ld] %s(", (int)getpid(), (long)syscall(SYS_gettid),
             name);
    snprintf(suffix, sizeof(suffix), ") = %ld", result);
    va_list ap;
    va_start(ap, fmt);
    emit(prefix, fmt, ap, suffix);
    va_end(ap);
}

static void emit_plain(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emit("", fmt, ap, "");
    va_end(ap);
}

bool vgpu_trace_summary_enabled(void)
{
    vgpu_log_setup();
    return trace_summary;
}

void vgpu_trace_summary_line(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emit("", fmt, ap, "");
    va_end(ap);
}

void vgpu_trace_forwarded(const char *name)
{
    emit_plain("vgpu-trace[%d/%ld] %s (forwarded)", (int)getpid(), (long)syscall(SYS_gettid), name);
}
