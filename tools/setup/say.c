/* vgpu-setup's messages to its user (the libraries log through common/log.h;
 * a command-line tool answers on its own streams, as vgpu-run does). */
#include "tools/setup/setup.h"

#include <stdarg.h>
#include <stdio.h>

int setup_path(const struct setup_ctx *c, const char *path, char *out, size_t len)
{
    return (size_t)snprintf(out, len, "%s%s", c->root, path) < len ? 0 : -1;
}

void setup_say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

static void to_stderr(const char *prefix, const char *fmt, va_list ap)
{
    fflush(stdout); /* keep the two streams in order on a terminal */
    fputs(prefix, stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void setup_note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    to_stderr("vgpu-setup: ", fmt, ap);
    va_end(ap);
}

void setup_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    to_stderr("vgpu-setup: warning: ", fmt, ap);
    va_end(ap);
}
