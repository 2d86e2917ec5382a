/* See text.h. */
#define _GNU_SOURCE
#include "tools/setup/text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void setup_text_add(struct setup_text *t, const char *fmt, ...)
{
    if (t->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *piece = NULL;
    int n = vasprintf(&piece, fmt, ap);
    va_end(ap);
    if (n < 0) {
        t->failed = true;
        return;
    }
    if (t->len + (size_t)n + 1 > t->cap) {
        size_t cap = (t->len + (size_t)n + 1) * 2;
        char *s = realloc(t->s, cap);
        if (!s) {
            t->failed = true;
            free(piece);
            return;
        }
        t->s = s;
        t->cap = cap;
    }
    memcpy(t->s + t->len, piece, (size_t)n + 1);
    t->len += (size_t)n;
    free(piece);
}

char *setup_text_take(struct setup_text *t)
{
    if (t->failed || !t->s) {
        free(t->s);
        *t = (struct setup_text){ 0 };
        return NULL;
    }
    char *s = t->s;
    *t = (struct setup_text){ 0 };
    return s;
}
