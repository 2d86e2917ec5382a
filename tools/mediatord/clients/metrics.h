/*
 * Prometheus metrics over HTTP (--metrics HOST:PORT, or metrics = in the
 * config; off by default): per vGPU and device, the memory quota and use,
 * compute share and refusals; per vGPU, processes and refused admissions.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/mediatord/mediatord.h"

/* Listens on HOST:PORT (TCP; port 0: any free one).  The socket, or -1
 * with the reason in err; where it listens goes to where (HOST:PORT). */
int med_metrics_listen(const char *hostport, char *where, size_t wherelen, char *err, size_t errlen);

/* Scrapes open at once, at most; one not asked within this is closed. */
#define MED_HTTP_MAX 64
#define MED_HTTP_TIMEOUT_MS 5000

struct med_http; /* one scrape in progress */

/* A new scrape connection; NULL when it cannot be served. */
struct med_http *med_http_accept(int fd, uint64_t now_ms);
int med_http_fd(const struct med_http *h);
/* Has it taken longer than MED_HTTP_TIMEOUT_MS to ask? */
bool med_http_expired(const struct med_http *h, uint64_t now_ms);
/* Reads the request; once whole, answers.  False: close it (done or broken). */
bool med_http_readable(struct med_http *h, struct med_world *w);
void med_http_close(struct med_http *h);

/* The metrics page, as text (malloc'd), or NULL. */
char *med_metrics_text(struct med_world *w);
