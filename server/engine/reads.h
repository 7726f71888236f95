/*
 * reads.h: the entry layer's reads that outlive one call: the batches of
 * a WatchEvents stream and the backlog counts of the metrics endpoint.
 * Each owns its deadline, since the stream or the scrape that asks has
 * none that fits one read.
 */
#ifndef WF_READS_H
#define WF_READS_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* How long one such read may take (ms). */
#define WF_READS_EVENTS_MS 5000

/* WatchEvents' next batch: events of tenant with sequence > after that
 * match f, ascending, at most limit, in arena; a read of its own that may
 * take WF_READS_EVENTS_MS. */
wf_code wf_reads_events(wf_store *st, const char *tenant, wf_arena *arena, int64_t after,
                        const wf_event_filter *f, size_t limit, wf_event_row **rows, size_t *n,
                        wf_error *err);

/* The backlog counts at now (open tasks, buffered signals, activatable
 * jobs of at most max_types job types), in arena; the read may take
 * timeout_ms. */
wf_code wf_reads_count_backlog(wf_store *st, wf_arena *arena, int64_t timeout_ms, size_t max_types,
                               wf_store_counts *out, wf_error *err);

#endif /* WF_READS_H */
