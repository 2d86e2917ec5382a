/*
 * What the doctor found: one finding per fact, each a level, the check it
 * came from, a sentence, and for a problem or warning the command or
 * setting that fixes it.
 */
#pragma once

#include <stdio.h>

enum doc_level {
    DOC_OK,
    DOC_INFO,
    DOC_WARNING, /* works, but not as the user likely meant: limits do not apply somewhere */
    DOC_PROBLEM, /* vgpu is not (or cannot be) in the process as meant */
};

struct doc_finding {
    enum doc_level level;
    char check[16];
    char *text;
    char *fix; /* NULL for ok and info */
};

struct doc_report {
    struct doc_finding *items;
    int n, cap;
};

/* Adds a finding; returns it, so that doc_fix can add its fix. */
struct doc_finding *doc_add(struct doc_report *r, enum doc_level level, const char *check, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void doc_fix(struct doc_finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

int doc_count(const struct doc_report *r, enum doc_level level);

void doc_print_text(FILE *f, const struct doc_report *r);
/* "findings": [...] and the counts, as members of an open JSON object. */
void doc_print_json(FILE *f, const struct doc_report *r);
void doc_report_free(struct doc_report *r);
