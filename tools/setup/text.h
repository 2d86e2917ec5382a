/* A growing text for the files vgpu-setup writes; a failure to grow is
 * remembered and reported once, by whoever takes the text. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct setup_text {
    char *s;        /* NUL-terminated, malloc'd; NULL while empty */
    size_t len, cap;
    bool failed;
};

void setup_text_add(struct setup_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The text, or NULL (and it is freed) if any add failed. */
char *setup_text_take(struct setup_text *t);
