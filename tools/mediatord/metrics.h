/*
 * Prometheus metrics over HTTP (--metrics HOST:PORT, or metrics = in the
 * config; off by default): per vGPU and device, the memory quota and use,
 * compute share and refusals; per vGPU, processes and refused admissions.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "tools/mediatord/clients.h"

/* Listens on HOST:PORT (TCP).  The socket, or -1 with the reason in err. */
int med_metrics_listen(const char *hostport, char *err, size_t errlen);

struct med_http; /* one scrape in progress */

/* A new scrape connection (non-blocking); NULL when it cannot be served. */
struct med_http *med_http_accept(int fd);
int med_http_fd(const struct med_http *h);
/* Reads the request; once whole, answers.  False: close it (done or broken). */
bool med_http_readable(struct med_http *h, const struct med_world *w);
void med_http_close(struct med_http *h);

/* The metrics page, as text (malloc'd), or NULL. */
char *med_metrics_text(const struct med_world *w);
