/*
 * Errors are values: a function that can fail returns -1 and says why in a
 * caller's buffer; the caller decides whether, and where, it is logged.
 */
#pragma once

#include <stddef.h>

/* Formats the reason into err (errlen bytes, always terminated); returns -1. */
int vgpu_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
