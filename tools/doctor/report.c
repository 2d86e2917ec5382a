/* Findings and their output; see report.h. */
#define _GNU_SOURCE
#include "tools/doctor/report.h"

#include "tools/lib/json_out.h"
#include "tools/lib/terminal_safe.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char *const level_names[] = { "ok", "info", "warning", "problem" };

/* A finding's text: it quotes what processes and users wrote (a program's
 * path, a process's name and command line), so it is made safe to print
 * on root's terminal, whatever they put there. */
static char *vformat(const char *fmt, va_list ap)
{
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        return NULL;
    vgpu_terminal_safe(s);
    return s;
}

struct doc_finding *doc_add(struct doc_report *r, enum doc_level level, const char *check, const char *fmt, ...)
{
    static struct doc_finding lost; /* where a finding goes when memory runs out */
    if (r->n == r->cap) {
        int cap = r->cap ? r->cap * 2 : 32;
        struct doc_finding *more = realloc(r->items, (size_t)cap * sizeof(*more));
        if (!more)
            return &lost;
        r->items = more;
        r->cap = cap;
    }
    struct doc_finding *f = &r->items[r->n++];
    memset(f, 0, sizeof(*f));
    f->level = level;
    snprintf(f->check, sizeof(f->check), "%s", check);
    va_list ap;
    va_start(ap, fmt);
    f->text = vformat(fmt, ap);
    va_end(ap);
    return f;
}

void doc_fix(struct doc_finding *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    free(f->fix);
    f->fix = vformat(fmt, ap);
    va_end(ap);
}

int doc_count(const struct doc_report *r, enum doc_level level)
{
    int n = 0;
    for (int i = 0; i < r->n; i++)
        n += r->items[i].level == level;
    return n;
}

void doc_print_text(FILE *f, const struct doc_report *r)
{
    for (int i = 0; i < r->n; i++) {
        const struct doc_finding *d = &r->items[i];
        char tag[16];
        snprintf(tag, sizeof(tag), "[%s]", level_names[d->level]);
        fprintf(f, "%-9s %s: %s\n", tag, d->check, d->text ? d->text : "(out of memory)");
        if (d->fix)
            fprintf(f, "%-9s fix: %s\n", "", d->fix);
    }
    int problems = doc_count(r, DOC_PROBLEM), warnings = doc_count(r, DOC_WARNING);
    if (problems + warnings == 0)
        fprintf(f, "\nNo problems found.\n");
    else
        fprintf(f, "\n%d problem%s, %d warning%s: each comes with its fix above.\n", problems,
                problems == 1 ? "" : "s", warnings, warnings == 1 ? "" : "s");
}

void doc_print_json(FILE *f, const struct doc_report *r)
{
    fputs("\"findings\":[", f);
    for (int i = 0; i < r->n; i++) {
        const struct doc_finding *d = &r->items[i];
        fprintf(f, "%s{\"check\":", i ? "," : "");
        vgpu_json_string(f, d->check);
        fprintf(f, ",\"level\":\"%s\",\"message\":", level_names[d->level]);
        vgpu_json_string(f, d->text ? d->text : "(out of memory)");
        fputs(",\"fix\":", f);
        if (d->fix)
            vgpu_json_string(f, d->fix);
        else
            fputs("null", f);
        fputc('}', f);
    }
    fprintf(f, "],\"problems\":%d,\"warnings\":%d", doc_count(r, DOC_PROBLEM), doc_count(r, DOC_WARNING));
}

void doc_report_free(struct doc_report *r)
{
    for (int i = 0; i < r->n; i++) {
        free(r->items[i].text);
        free(r->items[i].fix);
    }
    free(r->items);
    memset(r, 0, sizeof(*r));
}
