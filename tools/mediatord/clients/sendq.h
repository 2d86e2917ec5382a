/*
 * Answers that wait for a slow reader.  The mediator's sockets are
 * non-blocking: what a connection's socket does not take at once waits in
 * its queue, sent as the socket drains (EPOLLOUT), and the loop goes on.
 * A connection is not read while its queue holds anything (clients.c), so
 * a queue holds at most about one answer; all queues together hold at most
 * MED_SENDQ_MAX_BYTES, past which the connection that would add to them is
 * dropped.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MED_SENDQ_MAX_BYTES (64u << 20)

struct med_sendq_msg;

struct med_sendq {
    struct med_sendq_msg *head, *tail;
    uint64_t since_ms; /* when it last went from empty to waiting */
};

/*
 * Sends one message on fd (nfds descriptors ride with its first byte), or
 * what of it the socket takes, queueing the rest.  0, or -errno: the
 * connection broke, or its answer cannot wait (-ENOBUFS: queues full;
 * -EMFILE: no descriptor to keep the ones it carries).
 */
int med_sendq_send(struct med_sendq *q, int fd, uint16_t type, const void *payload, uint32_t len, const int *fds,
                   int nfds, uint64_t now_ms);

/* Sends what waits, as far as the socket takes it: 0 when nothing is left,
 * 1 when something is, or -errno. */
int med_sendq_flush(struct med_sendq *q, int fd);

static inline bool med_sendq_waiting(const struct med_sendq *q)
{
    return q->head != NULL;
}

/* Drops what waits (the connection is closing). */
void med_sendq_clear(struct med_sendq *q);
