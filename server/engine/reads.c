/*
 * reads.c: reads.h.
 */
#include "reads.h"

#include "wf_time.h"

wf_code
wf_reads_events(wf_store *st, const char *tenant, wf_arena *arena, int64_t after,
                const wf_event_filter *f, size_t limit, wf_event_row **rows, size_t *n,
                wf_error *err)
{
    wf_store_ctx ctx = {
        .tenant = tenant, .arena = arena, .deadline_ms = wf_mono_ms() + WF_READS_EVENTS_MS};
    return wf_store_read_events(st, &ctx, after, f, limit, rows, n, err);
}

wf_code
wf_reads_count_backlog(wf_store *st, wf_arena *arena, int64_t timeout_ms, size_t max_types,
                       wf_store_counts *out, wf_error *err)
{
    wf_store_ctx ctx = {.deadline_ms = wf_mono_ms() + timeout_ms, .arena = arena};
    return wf_store_count_backlog(st, &ctx, wf_now_us(), max_types, out, err);
}
