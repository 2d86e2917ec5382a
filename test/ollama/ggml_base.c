/* libggml-base.so stand-in: every other ggml library needs it, and Ollama
 * loads it RTLD_GLOBAL before them. */
#include "ggml_standin.h"

#include <stdarg.h>
#include <stdio.h>

GGML_STANDIN_EXPORT const char *ggml_backend_reg_name(const struct ggml_standin_reg *reg)
{
    return reg->name;
}

GGML_STANDIN_EXPORT int ggml_backend_reg_dev_count(const struct ggml_standin_reg *reg, int *count)
{
    return reg->device_count(count);
}

GGML_STANDIN_EXPORT int ggml_backend_dev_get_props(const struct ggml_standin_reg *reg, int dev,
                                                   struct ggml_standin_props *props)
{
    return reg->device_props(dev, props);
}

GGML_STANDIN_EXPORT void ggml_log_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("ggml: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
