/*
 * wf_time: clocks and identifiers.
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

/* Writes a fresh UUIDv7 (time-ordered, 36 chars + NUL) into out, which must
 * hold at least WF_UUID_LEN + 1 bytes. Time ordering makes ids usable as
 * stable keyset-pagination keys. */
#define WF_UUID_LEN 36
void wf_uuid7(char out[WF_UUID_LEN + 1]);

/* True when s is a canonical lower- or upper-case UUID string. */
int wf_uuid_valid(const char *s);

#endif /* WF_TIME_H */
