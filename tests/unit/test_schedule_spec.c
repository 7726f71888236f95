/*
 * Unit tests of schedule specs (engine/schedule_spec.c), without a store:
 * cron fields and macros, intervals with an offset, start/end, excluded
 * dates, jitter, the refusals, and fire times through the DST changes of
 * Europe/Berlin, America/New_York and Australia/Sydney (a wall time the
 * clock skips fires once at the end of the gap; one it repeats fires
 * once, the first time); iCalendar recurrence rules (libical) alone and
 * beside a cron, with COUNT, UNTIL and exclusions, through the same DST
 * changes, their refusals, and rules that never fire refused by a bounded
 * search.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <check.h>

#include "schedule_spec.h"
#include "test_support.h"

static wf_arena *arena;

static void
setup(void)
{
    arena = wf_arena_new();
}

static void
teardown(void)
{
    wf_arena_free(arena);
}

static char *
utc(int64_t us)
{
    time_t t = (time_t)(us / 1000000);
    struct tm tm;
    gmtime_r(&t, &tm);
    char *buf = wf_arena_alloc(arena, 32);
    strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

static wf_schedule_spec
cron_in(const char *cron, const char *zone)
{
    wf_schedule_spec_in in = {.cron = cron, .time_zone = zone};
    wf_schedule_spec s;
    wf_error err;
    wf_code rc = wf_schedule_spec_parse(arena, &in, &s, &err);
    ck_assert_msg(rc == WF_OK, "%s: %s", cron, err.msg);
    return s;
}

/* The n fire times after `after`, as UTC text joined by spaces. */
static const char *
fires(const wf_schedule_spec *s, const char *after, size_t n)
{
    int64_t out[16];
    size_t got = 0;
    wf_error err;
    ck_assert_int_eq(wf_schedule_spec_upcoming(s, wf_test_utc_us(after), n, out, &got, &err),
                     WF_OK);
    char *text = wf_arena_strdup(arena, "");
    for (size_t i = 0; i < got; i++)
        text = wf_arena_printf(arena, "%s%s%s", text, i > 0 ? " " : "", utc(out[i]));
    return text;
}

static wf_code
refusal(const wf_schedule_spec_in *in)
{
    wf_schedule_spec s;
    wf_error err;
    wf_code rc = wf_schedule_spec_parse(arena, in, &s, &err);
    ck_assert_msg(rc != WF_OK, "accepted");
    ck_assert_str_ne(err.msg, "");
    return rc;
}

WF_TEST(test_cron_fields_and_macros)
{
    wf_schedule_spec s = cron_in("*/20 9-10 * * 1-5", NULL);
    /* 2026-01-02 is a Friday: 09:00, 09:20, ..., then Monday. */
    ck_assert_str_eq(fires(&s, "2026-01-02T10:30:00Z", 3),
                     "2026-01-02T10:40:00Z 2026-01-05T09:00:00Z 2026-01-05T09:20:00Z");
    s = cron_in("@daily", "UTC");
    ck_assert_str_eq(fires(&s, "2026-01-01T00:00:00Z", 2),
                     "2026-01-02T00:00:00Z 2026-01-03T00:00:00Z");
    s = cron_in("@hourly", NULL);
    ck_assert_str_eq(fires(&s, "2026-01-01T00:59:59Z", 1), "2026-01-01T01:00:00Z");
    s = cron_in("@weekly", NULL); /* Sunday midnight; 2026-01-04 is a Sunday */
    ck_assert_str_eq(fires(&s, "2026-01-01T00:00:00Z", 1), "2026-01-04T00:00:00Z");
    s = cron_in("@monthly", NULL);
    ck_assert_str_eq(fires(&s, "2026-01-15T00:00:00Z", 1), "2026-02-01T00:00:00Z");
    s = cron_in("@yearly", NULL);
    ck_assert_str_eq(fires(&s, "2026-01-01T00:00:00Z", 1), "2027-01-01T00:00:00Z");
    s = cron_in("0 12 * jan-feb sun,7", NULL); /* names; 7 is Sunday too */
    ck_assert_str_eq(fires(&s, "2026-02-28T00:00:00Z", 2),
                     "2027-01-03T12:00:00Z 2027-01-10T12:00:00Z");
}
END_TEST

/* Day of month and day of week, both restricted, match when either does. */
WF_TEST(test_cron_day_or_weekday)
{
    wf_schedule_spec s = cron_in("0 0 13 * 5", NULL);
    /* Fridays of 2026-01 (9, 16) and Tuesday the 13th. */
    ck_assert_str_eq(fires(&s, "2026-01-08T00:00:00Z", 3),
                     "2026-01-09T00:00:00Z 2026-01-13T00:00:00Z 2026-01-16T00:00:00Z");
    s = cron_in("0 0 29 2 *", NULL); /* leap days only */
    ck_assert_str_eq(fires(&s, "2026-01-01T00:00:00Z", 1), "2028-02-29T00:00:00Z");
    s = cron_in("0 0 30 2 *", NULL); /* never */
    ck_assert_str_eq(fires(&s, "2026-01-01T00:00:00Z", 1), "");
}
END_TEST

WF_TEST(test_cron_in_a_zone)
{
    wf_schedule_spec s = cron_in("0 9 * * *", "America/New_York");
    ck_assert_str_eq(fires(&s, "2026-01-01T00:00:00Z", 1), "2026-01-01T14:00:00Z");
    ck_assert_str_eq(fires(&s, "2026-07-01T00:00:00Z", 1), "2026-07-01T13:00:00Z");
    ck_assert_str_eq(wf_schedule_spec_local_text(&s, arena, wf_test_utc_us("2026-07-01T13:00:00Z")),
                     "2026-07-01T09:00:00-04:00");
    s = cron_in("0 9 * * *", "Asia/Kolkata");
    ck_assert_str_eq(wf_schedule_spec_local_text(&s, arena, wf_test_utc_us("2026-07-01T03:30:00Z")),
                     "2026-07-01T09:00:00+05:30");
}
END_TEST

/* 02:30 does not exist on the day the clock springs forward: that day's
 * fire is at 03:00 (the first valid instant), once. */
WF_TEST(test_dst_spring_forward_berlin_and_new_york)
{
    wf_schedule_spec s = cron_in("30 2 * * *", "Europe/Berlin");
    ck_assert_str_eq(fires(&s, "2026-03-27T12:00:00Z", 3),
                     "2026-03-28T01:30:00Z 2026-03-29T01:00:00Z 2026-03-30T00:30:00Z");
    s = cron_in("30 2 * * *", "America/New_York");
    ck_assert_str_eq(fires(&s, "2026-03-06T12:00:00Z", 3),
                     "2026-03-07T07:30:00Z 2026-03-08T07:00:00Z 2026-03-09T06:30:00Z");
}
END_TEST

/* Every quarter hour through the gap: 02:00 .. 02:45 all fall on 03:00,
 * which fires once. */
WF_TEST(test_dst_spring_forward_every_quarter)
{
    wf_schedule_spec s = cron_in("*/15 * * * *", "Europe/Berlin");
    ck_assert_str_eq(fires(&s, "2026-03-29T00:30:00Z", 3),
                     "2026-03-29T00:45:00Z 2026-03-29T01:00:00Z 2026-03-29T01:15:00Z");
}
END_TEST

/* 02:30 happens twice on the day the clock falls back: it fires once, the
 * first time. */
WF_TEST(test_dst_fall_back_berlin_and_new_york)
{
    wf_schedule_spec s = cron_in("30 2 * * *", "Europe/Berlin");
    ck_assert_str_eq(fires(&s, "2026-10-24T12:00:00Z", 2),
                     "2026-10-25T00:30:00Z 2026-10-26T01:30:00Z");
    /* Asked from inside the repeated hour's second pass: the first pass
     * was the fire, so the next is tomorrow's. */
    ck_assert_str_eq(fires(&s, "2026-10-25T01:15:00Z", 1), "2026-10-26T01:30:00Z");
    s = cron_in("30 1 * * *", "America/New_York");
    ck_assert_str_eq(fires(&s, "2026-10-31T12:00:00Z", 2),
                     "2026-11-01T05:30:00Z 2026-11-02T06:30:00Z");
    s = cron_in("0 * * * *", "America/New_York"); /* 01:00 EDT, then 02:00 EST */
    ck_assert_str_eq(fires(&s, "2026-11-01T04:30:00Z", 2),
                     "2026-11-01T05:00:00Z 2026-11-01T07:00:00Z");
}
END_TEST

/* The southern hemisphere: Sydney springs forward in October and falls
 * back in April. */
WF_TEST(test_dst_sydney)
{
    wf_schedule_spec s = cron_in("30 2 * * *", "Australia/Sydney");
    ck_assert_str_eq(fires(&s, "2026-10-02T12:00:00Z", 3),
                     "2026-10-02T16:30:00Z 2026-10-03T16:00:00Z 2026-10-04T15:30:00Z");
    ck_assert_str_eq(fires(&s, "2026-04-03T16:00:00Z", 2),
                     "2026-04-04T15:30:00Z 2026-04-05T16:30:00Z");
}
END_TEST

WF_TEST(test_interval_with_offset)
{
    wf_schedule_spec_in in = {.interval = "every 15m offset 2m", .time_zone = "Europe/Berlin"};
    wf_schedule_spec s;
    wf_error err;
    ck_assert_int_eq(wf_schedule_spec_parse(arena, &in, &s, &err), WF_OK);
    ck_assert_str_eq(fires(&s, "2026-01-01T00:00:00Z", 3),
                     "2026-01-01T00:02:00Z 2026-01-01T00:17:00Z 2026-01-01T00:32:00Z");
    /* Intervals do not see DST: the same spacing through the change. */
    ck_assert_str_eq(fires(&s, "2026-03-29T00:50:00Z", 2),
                     "2026-03-29T01:02:00Z 2026-03-29T01:17:00Z");
    in = (wf_schedule_spec_in){.interval = "1h30m"};
    ck_assert_int_eq(wf_schedule_spec_parse(arena, &in, &s, &err), WF_OK);
    ck_assert_str_eq(fires(&s, "2026-01-01T00:00:00Z", 2),
                     "2026-01-01T01:30:00Z 2026-01-01T03:00:00Z");
}
END_TEST

WF_TEST(test_start_end_and_excluded_dates)
{
    const char *dates[] = {"2026-12-25", "2026-12-26"};
    wf_schedule_spec_in in = {.cron = "0 9 * * *",
                              .time_zone = "Europe/Berlin",
                              .start_at = wf_test_utc_us("2026-12-23T00:00:00Z"),
                              .end_at = wf_test_utc_us("2026-12-28T08:00:00Z"),
                              .exclude_dates = dates,
                              .n_exclude_dates = 2};
    wf_schedule_spec s;
    wf_error err;
    ck_assert_int_eq(wf_schedule_spec_parse(arena, &in, &s, &err), WF_OK);
    ck_assert_str_eq(fires(&s, "2026-01-01T00:00:00Z", 5),
                     "2026-12-23T08:00:00Z 2026-12-24T08:00:00Z 2026-12-27T08:00:00Z "
                     "2026-12-28T08:00:00Z");
    in = (wf_schedule_spec_in){.interval = "12h", .exclude_dates = dates, .n_exclude_dates = 1};
    ck_assert_int_eq(wf_schedule_spec_parse(arena, &in, &s, &err), WF_OK);
    ck_assert_str_eq(fires(&s, "2026-12-24T12:00:00Z", 1), "2026-12-26T00:00:00Z");
}
END_TEST

WF_TEST(test_jitter_is_stable_and_bounded)
{
    wf_schedule_spec_in in = {.interval = "1m", .jitter_us = 30000000};
    wf_schedule_spec s;
    wf_error err;
    ck_assert_int_eq(wf_schedule_spec_parse(arena, &in, &s, &err), WF_OK);
    int64_t t = wf_test_utc_us("2026-01-01T00:00:00Z");
    bool differs = false;
    for (int i = 0; i < 50; i++) {
        int64_t j = wf_schedule_spec_jitter(&s, "nightly", t + i * 60000000LL);
        ck_assert(j >= 0 && j < 30000000);
        ck_assert_int_eq(j, wf_schedule_spec_jitter(&s, "nightly", t + i * 60000000LL));
        differs |= j != wf_schedule_spec_jitter(&s, "nightly", t);
    }
    ck_assert(differs);
    s.jitter_us = 0;
    ck_assert_int_eq(wf_schedule_spec_jitter(&s, "nightly", t), 0);
}
END_TEST

WF_TEST(test_refusals)
{
    const char *bad_cron[] = {"61 * * * *",   "* * *",       "* * * * * *",
                              "@fortnightly", "5-1 * * * *", "*/0 * * * *",
                              "0 0 0 * *",    "0 0 * 13 *",  "x * * * *"};
    for (size_t i = 0; i < sizeof bad_cron / sizeof bad_cron[0]; i++) {
        wf_schedule_spec_in in = {.cron = bad_cron[i]};
        ck_assert_msg(refusal(&in) == WF_E_INVALID_CRON, "%s", bad_cron[i]);
    }
    wf_schedule_spec_in in = {.cron = "@daily", .time_zone = "Mars/Olympus_Mons"};
    ck_assert_int_eq(refusal(&in), WF_E_UNKNOWN_TIME_ZONE);
    in = (wf_schedule_spec_in){0};
    ck_assert_int_eq(refusal(&in), WF_E_INVALID_SCHEDULE);
    in = (wf_schedule_spec_in){.cron = "@daily", .interval = "1h"};
    ck_assert_int_eq(refusal(&in), WF_E_INVALID_SCHEDULE);
    const char *bad_interval[] = {
        "0s", "500ms", "every", "every 1h offset 1h", "every 1h after 2m", "15 minutes", "-5m"};
    for (size_t i = 0; i < sizeof bad_interval / sizeof bad_interval[0]; i++) {
        in = (wf_schedule_spec_in){.interval = bad_interval[i]};
        ck_assert_msg(refusal(&in) == WF_E_INVALID_SCHEDULE, "%s", bad_interval[i]);
    }
    in = (wf_schedule_spec_in){.interval = "1h", .jitter_us = -1};
    ck_assert_int_eq(refusal(&in), WF_E_INVALID_SCHEDULE);
    in = (wf_schedule_spec_in){.interval = "1h", .start_at = 2000000, .end_at = 1000000};
    ck_assert_int_eq(refusal(&in), WF_E_INVALID_SCHEDULE);
    const char *bad_date[] = {"2026-02-30"};
    in = (wf_schedule_spec_in){.interval = "1h", .exclude_dates = bad_date, .n_exclude_dates = 1};
    ck_assert_int_eq(refusal(&in), WF_E_INVALID_SCHEDULE);
}
END_TEST

static wf_code
rrule_parse(const char *const *rules, size_t n, const char *zone, const char *start,
            wf_schedule_spec *s, wf_error *err)
{
    wf_schedule_spec_in in = {
        .rrules = rules, .n_rrules = n, .time_zone = zone, .rrule_start = start};
    return wf_schedule_spec_parse(arena, &in, s, err);
}

static wf_schedule_spec
rrule_in(const char *rule, const char *zone, const char *start)
{
    const char *rules[] = {rule};
    wf_schedule_spec s;
    wf_error err;
    wf_code rc = rrule_parse(rules, 1, zone, start, &s, &err);
    if (rc == WF_OK)
        rc = wf_schedule_spec_check_rrules(&s, &err);
    ck_assert_msg(rc == WF_OK, "%s: %s", rule, err.msg);
    return s;
}

WF_TEST(test_rrule_fire_times)
{
    const char *biweekly = "FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,FR;BYHOUR=9;BYMINUTE=0;BYSECOND=0";
    wf_schedule_spec s = rrule_in(biweekly, NULL, NULL);
    ck_assert_str_eq(fires(&s, "2026-12-08T00:30:00Z", 3),
                     "2026-12-14T09:00:00Z 2026-12-18T09:00:00Z 2026-12-28T09:00:00Z");
    s = rrule_in(biweekly, "Europe/Berlin", NULL);
    ck_assert_str_eq(fires(&s, "2026-12-08T00:30:00Z", 3),
                     "2026-12-14T08:00:00Z 2026-12-18T08:00:00Z 2026-12-28T08:00:00Z");
    /* The grid of INTERVAL counts from rrule_start (1970-01-01T00:00:00). */
    s = rrule_in("RRULE:FREQ=MINUTELY;INTERVAL=7", NULL, NULL);
    ck_assert_str_eq(fires(&s, "2026-12-08T00:30:00Z", 3),
                     "2026-12-08T00:31:00Z 2026-12-08T00:38:00Z 2026-12-08T00:45:00Z");
    s = rrule_in("FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17;BYMINUTE=0;BYSECOND=0", "America/New_York",
                 NULL);
    ck_assert_str_eq(fires(&s, "2026-12-08T00:00:00Z", 3),
                     "2026-12-25T22:00:00Z 2027-01-29T22:00:00Z 2027-02-26T22:00:00Z");
    s = rrule_in("FREQ=DAILY;COUNT=3", NULL, "2026-12-01T10:00:00");
    ck_assert_str_eq(fires(&s, "2026-12-01T00:00:00Z", 5),
                     "2026-12-01T10:00:00Z 2026-12-02T10:00:00Z 2026-12-03T10:00:00Z");
    ck_assert_str_eq(fires(&s, "2026-12-02T10:00:00Z", 5), "2026-12-03T10:00:00Z");
    /* A UTC UNTIL is an instant: 09:00Z is 10:00 in Berlin, the last fire. */
    s = rrule_in("FREQ=DAILY;UNTIL=20261203T090000Z", "Europe/Berlin", "2026-12-01T10:00:00");
    ck_assert_str_eq(fires(&s, "2026-11-30T00:00:00Z", 5),
                     "2026-12-01T09:00:00Z 2026-12-02T09:00:00Z 2026-12-03T09:00:00Z");
    const char *excl[] = {"2026-12-14"};
    const char *rules[] = {biweekly};
    wf_schedule_spec_in in = {
        .rrules = rules, .n_rrules = 1, .exclude_dates = excl, .n_exclude_dates = 1};
    wf_error err;
    ck_assert_int_eq(wf_schedule_spec_parse(arena, &in, &s, &err), WF_OK);
    ck_assert_str_eq(fires(&s, "2026-12-08T00:30:00Z", 3),
                     "2026-12-18T09:00:00Z 2026-12-28T09:00:00Z 2027-01-01T09:00:00Z");
}
END_TEST

WF_TEST(test_rrule_beside_cron)
{
    const char *rules[] = {"FREQ=DAILY;BYHOUR=12,18;BYMINUTE=0;BYSECOND=0"};
    wf_schedule_spec_in in = {.cron = "0 12 * * *", .rrules = rules, .n_rrules = 1};
    wf_schedule_spec s;
    wf_error err;
    ck_assert_int_eq(wf_schedule_spec_parse(arena, &in, &s, &err), WF_OK);
    ck_assert_str_eq(fires(&s, "2026-12-08T00:00:00Z", 3),
                     "2026-12-08T12:00:00Z 2026-12-08T18:00:00Z 2026-12-09T12:00:00Z");
    in.cron = NULL;
    in.interval = "every 5h";
    ck_assert_int_eq(wf_schedule_spec_parse(arena, &in, &s, &err), WF_OK);
    ck_assert_str_eq(fires(&s, "2026-12-08T09:00:00Z", 4),
                     "2026-12-08T10:00:00Z 2026-12-08T12:00:00Z 2026-12-08T15:00:00Z "
                     "2026-12-08T18:00:00Z");
}
END_TEST

/* The cron rules of DST, with rules: a skipped wall time fires once at the
 * end of the gap, a repeated one once, the first time. */
WF_TEST(test_rrule_dst_berlin_new_york)
{
    const char *daily_0230 = "FREQ=DAILY;BYHOUR=2;BYMINUTE=30;BYSECOND=0";
    const char *hourly_30 = "FREQ=HOURLY;BYMINUTE=30;BYSECOND=0";
    wf_schedule_spec s = rrule_in(daily_0230, "Europe/Berlin", NULL);
    ck_assert_str_eq(fires(&s, "2026-03-27T12:00:00Z", 3),
                     "2026-03-28T01:30:00Z 2026-03-29T01:00:00Z 2026-03-30T00:30:00Z");
    ck_assert_str_eq(fires(&s, "2026-10-24T12:00:00Z", 2),
                     "2026-10-25T00:30:00Z 2026-10-26T01:30:00Z");
    s = rrule_in(hourly_30, "Europe/Berlin", NULL);
    ck_assert_str_eq(fires(&s, "2026-03-29T00:00:00Z", 3),
                     "2026-03-29T00:30:00Z 2026-03-29T01:00:00Z 2026-03-29T01:30:00Z");
    ck_assert_str_eq(fires(&s, "2026-10-24T23:00:00Z", 3),
                     "2026-10-24T23:30:00Z 2026-10-25T00:30:00Z 2026-10-25T02:30:00Z");
    s = rrule_in(daily_0230, "America/New_York", NULL);
    ck_assert_str_eq(fires(&s, "2026-03-07T12:00:00Z", 2),
                     "2026-03-08T07:00:00Z 2026-03-09T06:30:00Z");
    s = rrule_in("FREQ=DAILY;BYHOUR=1;BYMINUTE=30;BYSECOND=0", "America/New_York", NULL);
    ck_assert_str_eq(fires(&s, "2026-10-31T12:00:00Z", 2),
                     "2026-11-01T05:30:00Z 2026-11-02T06:30:00Z");
    s = rrule_in(hourly_30, "America/New_York", NULL);
    ck_assert_str_eq(fires(&s, "2026-03-08T06:00:00Z", 3),
                     "2026-03-08T06:30:00Z 2026-03-08T07:00:00Z 2026-03-08T07:30:00Z");
    ck_assert_str_eq(fires(&s, "2026-11-01T04:00:00Z", 3),
                     "2026-11-01T04:30:00Z 2026-11-01T05:30:00Z 2026-11-01T07:30:00Z");
    /* Asked from inside the repeated hour (01:00 EST), 01:30 has fired. */
    ck_assert_str_eq(fires(&s, "2026-11-01T06:00:00Z", 1), "2026-11-01T07:30:00Z");
}
END_TEST

WF_TEST(test_rrule_refusals)
{
    const char *bad[] = {"garbage", "FREQ=SECONDLY", "FREQ=DAILY;BYHOUR=25", "FREQ=DAILY;FOO=1",
                         "FREQ=DAILY;INTERVAL=-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        wf_schedule_spec_in in = {.rrules = &bad[i], .n_rrules = 1};
        ck_assert_msg(refusal(&in) == WF_E_INVALID_SCHEDULE, "%s", bad[i]);
    }
    const char *ok[] = {"FREQ=DAILY"};
    const char *bad_start[] = {"2026-13-01T00:00:00", "2026-02-30T00:00:00", "2026-01-01 00:00:00",
                               "1969-12-31T23:00:00"};
    for (size_t i = 0; i < sizeof bad_start / sizeof bad_start[0]; i++) {
        wf_schedule_spec_in in = {.rrules = ok, .n_rrules = 1, .rrule_start = bad_start[i]};
        ck_assert_msg(refusal(&in) == WF_E_INVALID_SCHEDULE, "%s", bad_start[i]);
    }
    const char *many[WF_SCHEDULE_MAX_RRULES + 1];
    for (size_t i = 0; i < WF_SCHEDULE_MAX_RRULES + 1; i++)
        many[i] = "FREQ=DAILY";
    wf_schedule_spec_in in = {.rrules = many, .n_rrules = WF_SCHEDULE_MAX_RRULES + 1};
    ck_assert_int_eq(refusal(&in), WF_E_INVALID_SCHEDULE);
    in = (wf_schedule_spec_in){.rrules = ok, .n_rrules = 1, .time_zone = "Mars/Olympus_Mons"};
    ck_assert_int_eq(refusal(&in), WF_E_UNKNOWN_TIME_ZONE);
}
END_TEST

/* Rules that never match: libical's own search for them runs for minutes
 * (to the year 2582, a minute at a time for MINUTELY); the check and the
 * search here stop at the horizon. */
WF_TEST(test_rrule_never_fires_is_bounded)
{
    const char *never[] = {
        "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30",   "FREQ=MONTHLY;BYMONTH=2;BYMONTHDAY=30",
        "FREQ=DAILY;BYMONTH=4;BYMONTHDAY=31",    "FREQ=HOURLY;BYMONTH=2;BYMONTHDAY=30",
        "FREQ=MINUTELY;BYMONTH=2;BYMONTHDAY=30", "FREQ=DAILY;UNTIL=20250101T000000"};
    for (size_t i = 0; i < sizeof never / sizeof never[0]; i++) {
        wf_schedule_spec s;
        wf_error err;
        ck_assert_int_eq(
            rrule_parse(&never[i], 1, "Europe/Berlin", "2026-01-01T00:00:00", &s, &err), WF_OK);
        ck_assert_msg(wf_schedule_spec_check_rrules(&s, &err) == WF_E_SCHEDULE_RRULE_NEVER_FIRES,
                      "%s", never[i]);
        ck_assert_msg(strstr(err.msg, "spec.rrules[0]") != NULL, "%s", err.msg);
        ck_assert_str_eq(fires(&s, "2026-06-01T00:00:00Z", 1), "");
    }
    /* Rare but real: 29 February, a minute at a time. */
    wf_schedule_spec s =
        rrule_in("FREQ=MINUTELY;INTERVAL=30;BYMONTH=2;BYMONTHDAY=29", NULL, "2027-03-01T00:00:00");
    ck_assert_str_eq(fires(&s, "2027-03-01T00:00:00Z", 2),
                     "2028-02-29T00:00:00Z 2028-02-29T00:30:00Z");
}
END_TEST

int
main(void)
{
    /* The rules that never fire cost libical up to a second of CPU each. */
    return wf_test_run(
        wf_test_suite("schedule_spec", "spec", setup, teardown, 60 * wf_test_time_scale()));
}
