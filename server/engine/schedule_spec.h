/*
 * schedule_spec.h: when a schedule fires (docs/behaviour.md, "Schedules").
 *
 * A spec is a cron expression or an interval, iCalendar recurrence rules
 * (RFC 5545 RRULE), or rules beside a cron expression or an interval (the
 * fire times of all of them, each instant once):
 *
 *   cron      five fields (minute hour day-of-month month day-of-week: lists,
 *             ranges, steps, "*", month and day names) or @hourly, @daily,
 *             @weekly, @monthly, @yearly (@annually), read as wall-clock
 *             time in time_zone (IANA name, default UTC). Day of month and
 *             day of week, both restricted, match when either does.
 *   interval  "15m", "every 15m", "every 1h offset 2m": the instants
 *             epoch + offset + k * interval (units ms, s, m, h, d; no time
 *             zone involved).
 *   rrules    "FREQ=WEEKLY;BYDAY=MO,FR;BYHOUR=9" (MINUTELY to YEARLY),
 *             evaluated by libical on wall-clock time in time_zone from
 *             rrule_start (a local "YYYY-MM-DDTHH:MM:SS", default
 *             1970-01-01T00:00:00), then to UTC as cron is. Every search
 *             looks at most a horizon ahead (WF_SCHEDULE_RRULE_HORIZON_*)
 *             and passes over a bounded number of occurrences, so that a
 *             rule that never matches cannot hold a thread.
 *
 * and may carry start_at / end_at (fires before start_at or after end_at
 * do not exist), dates to exclude ("YYYY-MM-DD", a local date in the
 * zone) and a jitter (each fire starts up to that much after its nominal
 * time, the same delay wherever it is computed).
 *
 * Wall-clock time to UTC goes through ICU's calendar with the zone's
 * rules: a wall time that does not exist (the clock springs forward over
 * it) fires once at the first valid instant after the gap; a wall time
 * that happens twice (the clock falls back) fires once, at its first
 * occurrence. No DST rule is written here.
 *
 * Pure: no store, no clock. Thread-safe (each call opens its own
 * calendar).
 */
#ifndef WF_SCHEDULE_SPEC_H
#define WF_SCHEDULE_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wf_arena.h"
#include "wf_error.h"

/* Longest time-zone name kept. */
#define WF_SCHEDULE_TZ_MAX 64
/* Most excluded dates of one spec. */
#define WF_SCHEDULE_MAX_EXCLUDES 366
/* Most recurrence rules of one spec, and the longest rule. */
#define WF_SCHEDULE_MAX_RRULES 16
#define WF_SCHEDULE_RRULE_MAX_LEN 512
/* How far one search of a rule looks ahead, in days: MINUTELY rules, HOURLY
 * rules, DAILY and longer. */
#define WF_SCHEDULE_RRULE_HORIZON_MINUTELY 366
#define WF_SCHEDULE_RRULE_HORIZON_HOURLY (8 * 366)
#define WF_SCHEDULE_RRULE_HORIZON_DAILY (30 * 366)

struct icalrecurrencetype;

/* One checked recurrence rule. */
typedef struct wf_schedule_rrule {
    struct icalrecurrencetype *rule; /* in the arena; its UNTIL as local time */
    int64_t horizon_s;               /* how far one search looks ahead */
    int64_t period_s;                /* INTERVAL x a fixed unit; 0: months, years or COUNT */
} wf_schedule_rrule;

/* A spec as a caller writes it: strings as received; NULL or "" = unset.
 * Exactly one of cron and interval. start_at / end_at: microseconds since
 * the epoch, 0 = unset. */
typedef struct wf_schedule_spec_in {
    const char *cron;
    const char *interval;
    const char *time_zone;
    int64_t start_at;
    int64_t end_at;
    int64_t jitter_us; /* 0 = none; negative is refused */
    const char *const *exclude_dates;
    size_t n_exclude_dates;
    const char *const *rrules; /* "FREQ=...;..." ("RRULE:" prefix allowed) */
    size_t n_rrules;
    const char *rrule_start; /* local "YYYY-MM-DDTHH:MM:SS"; NULL or "" = 1970-01-01T00:00:00 */
} wf_schedule_spec_in;

/* A checked spec. */
typedef struct wf_schedule_spec {
    bool is_cron, is_interval; /* neither: rules only */
    uint64_t minutes;          /* bit m: minute m matches */
    uint32_t hours;
    uint32_t days;    /* bit d: day of month d (1..31) */
    uint16_t months;  /* bit m: month m (1..12) */
    uint8_t weekdays; /* bit w: day of week w (0 = Sunday) */
    bool days_any, weekdays_any;
    int64_t interval_us, offset_us;
    char time_zone[WF_SCHEDULE_TZ_MAX + 1];
    int64_t start_at, end_at, jitter_us;
    int32_t *excludes; /* local dates as days since 1970-01-01, sorted */
    size_t n_excludes;
    wf_schedule_rrule *rrules;
    size_t n_rrules;
    int64_t rrule_start; /* naive seconds (local time read as UTC) */
} wf_schedule_spec;

/* Checks in and fills *out (excludes and rules in a). Refusals:
 * INVALID_CRON, UNKNOWN_TIME_ZONE, INVALID_SCHEDULE (none of cron,
 * interval and rrules, or both cron and interval, a bad interval, offset,
 * jitter, date, rule or rrule_start, end_at not after start_at), each
 * naming the field. */
wf_code wf_schedule_spec_parse(wf_arena *a, const wf_schedule_spec_in *in, wf_schedule_spec *out,
                               wf_error *err);

/* Each rule of s has a first occurrence within its horizon from
 * rrule_start (a bounded search); else SCHEDULE_RRULE_NEVER_FIRES naming
 * the rule. Create and update call it; the passes do not. */
wf_code wf_schedule_spec_check_rrules(const wf_schedule_spec *s, wf_error *err);

/* The first nominal fire time strictly after after_us; *none (and WF_OK)
 * when there is none (past end_at, or a cron that never matches within
 * eight years, such as "0 0 30 2 *"). */
wf_code wf_schedule_spec_next(const wf_schedule_spec *s, int64_t after_us, int64_t *next_us,
                              bool *none, wf_error *err);

/* The next n fire times after after_us into out (*got of them; fewer when
 * the spec ends). */
wf_code wf_schedule_spec_upcoming(const wf_schedule_spec *s, int64_t after_us, size_t n,
                                  int64_t *out, size_t *got, wf_error *err);

/* The delay of the fire at nominal_us of schedule id: in [0, jitter),
 * the same for the same inputs; 0 without jitter. */
int64_t wf_schedule_spec_jitter(const wf_schedule_spec *s, const char *id, int64_t nominal_us);

/* us as wall-clock text in the spec's zone with its UTC offset
 * ("2026-03-29T03:00:00+02:00"), in a; NULL when out of memory or the
 * zone fails. */
char *wf_schedule_spec_local_text(const wf_schedule_spec *s, wf_arena *a, int64_t us);

/* A duration such as "90s", "15m", "1h30m", "250ms" in microseconds;
 * false when it does not parse or is negative. */
bool wf_schedule_duration(const char *text, int64_t *us);

#endif /* WF_SCHEDULE_SPEC_H */
