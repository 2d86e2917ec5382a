/*
 * At most one log line a second about one thing: a flood of the same
 * event (connections refused, descriptors run out) is one line a second
 * that says how many it stands for, never megabytes of log.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct med_ratelimit {
    uint64_t next_ms;
    unsigned long held; /* events since the last line */
};

/* True when a line may be written now; *held is then how many events went
 * unsaid since the last line. */
static inline bool med_ratelimit_allow(struct med_ratelimit *r, uint64_t now_ms, unsigned long *held)
{
    if (now_ms < r->next_ms) {
        r->held++;
        return false;
    }
    *held = r->held;
    r->held = 0;
    r->next_ms = now_ms + 1000;
    return true;
}
