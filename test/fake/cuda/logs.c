/*
 * The driver's logs (cuLogsCurrent, cuLogsDumpToMemory, cuLogsDumpToFile):
 * a line for some errors a call returns (fake_log), the latest LOG_LINES
 * of them kept.  An iterator counts the lines logged so far: dumping from
 * it gives the lines logged since, newline-ended, NUL after them, and moves
 * it past them.  As the driver's, a dump that cannot hold every line
 * starts with a line saying so and gives the latest that fit; one that can
 * hold none gives nothing (*size 0) and CUDA_ERROR_INVALID_VALUE.
 */
#define _GNU_SOURCE
#include "test/fake/cuda/fake_cuda.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define LOG_LINES 64
#define LOG_LINE 200
#define TRUNCATED "[fakegpu] earlier logs were dropped\n"

/* Owned by this file, under g_logs_lock: line k (counting from 0) lies in
 * g_lines[k % LOG_LINES] while k >= g_logged - LOG_LINES. */
static char g_lines[LOG_LINES][LOG_LINE];
static unsigned g_logged;
static pthread_mutex_t g_logs_lock = PTHREAD_MUTEX_INITIALIZER;

void fake_log(const char *fmt, ...)
{
    char line[LOG_LINE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&g_logs_lock);
    memcpy(g_lines[g_logged % LOG_LINES], line, sizeof(line));
    g_logged++;
    pthread_mutex_unlock(&g_logs_lock);
}

CUresult cuLogsCurrent(CUlogIterator *iterator_out, unsigned int flags)
{
    ENTER();
    if (!iterator_out || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_logs_lock);
    *iterator_out = g_logged;
    pthread_mutex_unlock(&g_logs_lock);
    return CUDA_SUCCESS;
}

/* The lines from *iterator (NULL: every line kept) into buffer, at most
 * *size bytes with the NUL; *size becomes what was written, without it. */
static CUresult dump(CUlogIterator *iterator, char *buffer, size_t *size)
{
    pthread_mutex_lock(&g_logs_lock);
    unsigned oldest = g_logged > LOG_LINES ? g_logged - LOG_LINES : 0;
    unsigned from = iterator ? *iterator : oldest;
    int dropped = from < oldest;
    if (dropped)
        from = oldest;
    if (from > g_logged)
        from = g_logged;
    /* The latest lines that fit, with room for the truncation's line where
     * some do not. */
    size_t room = *size - 1, need = dropped ? strlen(TRUNCATED) : 0;
    unsigned first = g_logged;
    while (first > from && need + strlen(g_lines[(first - 1) % LOG_LINES]) + 1 <= room)
        need += strlen(g_lines[--first % LOG_LINES]) + 1;
    if (first > from && !dropped) {
        dropped = 1;
        need += strlen(TRUNCATED);
        while (need > room && first < g_logged)
            need -= strlen(g_lines[first++ % LOG_LINES]) + 1;
    }
    CUresult rc = CUDA_SUCCESS;
    size_t at = 0;
    if (from < g_logged && first == g_logged) {
        rc = CUDA_ERROR_INVALID_VALUE; /* not one line fits */
    } else {
        if (dropped && from < g_logged) {
            memcpy(buffer, TRUNCATED, strlen(TRUNCATED));
            at = strlen(TRUNCATED);
        }
        for (unsigned k = first; k < g_logged; k++) {
            size_t n = strlen(g_lines[k % LOG_LINES]);
            memcpy(buffer + at, g_lines[k % LOG_LINES], n);
            buffer[at + n] = '\n';
            at += n + 1;
        }
        if (iterator)
            *iterator = g_logged;
    }
    pthread_mutex_unlock(&g_logs_lock);
    buffer[at] = 0;
    *size = at;
    return rc;
}

CUresult cuLogsDumpToMemory(CUlogIterator *iterator, char *buffer, size_t *size, unsigned int flags)
{
    ENTER();
    if (!buffer || !size || *size == 0 || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return dump(iterator, buffer, size);
}

/* The same lines, appended to the file. */
CUresult cuLogsDumpToFile(CUlogIterator *iterator, const char *pathToFile, unsigned int flags)
{
    ENTER();
    if (!pathToFile || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    char buffer[LOG_LINES * (LOG_LINE + 1) + sizeof(TRUNCATED)];
    size_t size = sizeof(buffer);
    CUresult rc = dump(iterator, buffer, &size);
    FILE *f = rc == CUDA_SUCCESS ? fopen(pathToFile, "ae") : NULL;
    if (rc == CUDA_SUCCESS && (!f || fwrite(buffer, 1, size, f) != size))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (f && fclose(f) != 0)
        rc = CUDA_ERROR_INVALID_VALUE;
    return rc;
}
