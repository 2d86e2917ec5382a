/*
 * The mediator's connections: admission by peer credentials (SO_PEERCRED,
 * SO_PEERGROUPS; never by what a client claims), the protocol's requests,
 * the caps on connections, and the end of a process (its connection
 * closes: its memory returns at once).  Sockets are non-blocking; answers
 * a slow reader has not taken wait in its queue (sendq.h), and its next
 * requests wait until they are gone.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "tools/mediatord/clients/client.h"
#include "tools/mediatord/config/config.h"
#include "tools/mediatord/mediatord.h"
#include "tools/mediatord/vgpus/vgpus.h"
#include "common/contract/protocol/protocol.h"

/* An answer not taken in this long: the connection is dropped. */
#define MED_STALL_MS 10000

/*
 * A new connection: its credentials, checked against the caps on
 * connections (refused with a REFUSE that says which cap and how to raise
 * it).  NULL if it is not to be served; the caller closes fd.
 */
struct med_client *med_client_accept(int fd, struct med_world *w, uint64_t now_ms);

/* Tells a connection that cannot be served why (without blocking), for
 * the loop's own refusals (out of descriptors). */
void med_client_refuse_fd(int fd, uint32_t code, const char *reason);

/*
 * Reads what the connection sent and answers it; then writable() sends
 * what waits.  Both return false when the connection is to be closed (it
 * ended, broke the protocol, was refused, or its answers cannot wait).
 */
bool med_client_readable(struct med_client *c, struct med_world *w, uint64_t now_ms);
bool med_client_writable(struct med_client *c, struct med_world *w, uint64_t now_ms);

/* Does it wait to be written to (and so not to be read)? */
static inline bool med_client_waiting(const struct med_client *c)
{
    return med_sendq_waiting(&c->out);
}

/* Ends a connection: a process slot it held is freed and its memory returned. */
void med_client_close(struct med_client *c);

