/*
 * wf_time: clocks (ids are in wf_id.h).
 */
#ifndef WF_TIME_H
#define WF_TIME_H

#include <stddef.h>
#include <stdint.h>

/* Wall-clock time in microseconds since the Unix epoch (what the store
 * records: created_at, due_at, ...). */
int64_t wf_now_us(void);

/* Monotonic time in milliseconds (durations, deadlines). */
int64_t wf_mono_ms(void);

#endif /* WF_TIME_H */
