/* Device time used per 100 ms bucket, and the last second of it (see busy.h). */
#include "test/fake/gpu/busy.h"

void fakegpu_busy_add(struct fakegpu_busy *b, uint64_t start_ns, uint64_t end_ns)
{
    while (start_ns < end_ns) {
        uint64_t id = start_ns / FAKEGPU_BUSY_BUCKET_NS;
        uint64_t bucket_end = (id + 1) * FAKEGPU_BUSY_BUCKET_NS;
        uint64_t part_end = end_ns < bucket_end ? end_ns : bucket_end;
        unsigned k = (unsigned)(id % FAKEGPU_BUSY_BUCKETS);
        if (b->id[k] < id) { /* a bucket of an older round: start it afresh */
            b->id[k] = id;
            b->ns[k] = 0;
        }
        if (b->id[k] == id)
            b->ns[k] += part_end - start_ns;
        start_ns = part_end;
    }
}

uint64_t fakegpu_busy_window(const struct fakegpu_busy *b, uint64_t now_ns)
{
    uint64_t from = now_ns > FAKEGPU_BUSY_WINDOW_NS ? now_ns - FAKEGPU_BUSY_WINDOW_NS : 0;
    uint64_t first = from / FAKEGPU_BUSY_BUCKET_NS, last = now_ns / FAKEGPU_BUSY_BUCKET_NS;
    double busy = 0;
    for (uint64_t id = first; id <= last; id++) {
        unsigned k = (unsigned)(id % FAKEGPU_BUSY_BUCKETS);
        if (b->id[k] != id)
            continue;
        /* Only the oldest bucket reaches out of the window; the newest ends at now. */
        double inside = 1.0;
        if (id == first && id != last)
            inside = (double)((id + 1) * FAKEGPU_BUSY_BUCKET_NS - from) / FAKEGPU_BUSY_BUCKET_NS;
        busy += inside * (double)b->ns[k];
    }
    return busy > FAKEGPU_BUSY_WINDOW_NS ? FAKEGPU_BUSY_WINDOW_NS : (uint64_t)busy;
}
