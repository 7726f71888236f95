/*
 * wf_time: clocks and the text of a time (ids are in wf_id.h).
 */
#ifndef WF_TIME_H
#define WF_TIME_H

#include <stddef.h>
#include <stdint.h>

#include "wf_arena.h"

/* Wall-clock time in microseconds since the Unix epoch (what the store
 * records: created_at, due_at, ...). */
int64_t wf_now_us(void);

/* Monotonic time in milliseconds (durations, deadlines). */
int64_t wf_mono_ms(void);

/* RFC 3339 UTC text of a wall-clock time in microseconds since the epoch,
 * with six fractional digits ("2024-05-01T12:00:00.000000Z"), in arena;
 * NULL when out of memory. */
char *wf_time_rfc3339(wf_arena *a, int64_t us);

#endif /* WF_TIME_H */
