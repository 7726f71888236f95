/*
 * schedule_spec.c: parsing a schedule's spec and finding its fire times
 * (schedule_spec.h). Cron fields are matched on wall-clock time kept as
 * "naive" seconds (the local date and time read as if it were UTC, so
 * that the C library's timegm/gmtime_r do the calendar arithmetic); each
 * match goes to UTC through ICU's calendar of the zone, which owns every
 * DST rule. Recurrence rules are expanded by libical on the same naive
 * time (floating, no zone of libical's), and go to UTC the same way.
 */
#include "schedule_spec.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libical/ical.h>
#include <unicode/ucal.h>
#include <unicode/ustring.h>

#define US_PER_S INT64_C(1000000)
#define DAY_S INT64_C(86400)
/* How far a cron search looks ahead before it gives up. */
#define SEARCH_YEARS 8
/* Bound on the steps of one search (months, days, hours, minutes). */
#define SEARCH_STEPS 200000

/* ---- durations --------------------------------------------------------- */

static int64_t
unit_us(const char *u, size_t n)
{
    if (n == 2 && strncmp(u, "ms", 2) == 0)
        return 1000;
    if (n != 1)
        return 0;
    switch (u[0]) {
    case 's':
        return US_PER_S;
    case 'm':
        return 60 * US_PER_S;
    case 'h':
        return 3600 * US_PER_S;
    case 'd':
        return DAY_S * US_PER_S;
    default:
        return 0;
    }
}

bool
wf_schedule_duration(const char *text, int64_t *us)
{
    const char *p = text;
    int64_t total = 0;
    if (p == NULL || *p == '\0')
        return false;
    while (*p != '\0') {
        if (!isdigit((unsigned char)*p))
            return false;
        char *end = NULL;
        long long v = strtoll(p, &end, 10);
        size_t n = 0;
        while (isalpha((unsigned char)end[n]))
            n++;
        int64_t u = unit_us(end, n);
        if (u == 0 || v > INT64_C(3650) * DAY_S * US_PER_S / u)
            return false;
        total += (int64_t)v * u;
        p = end + n;
    }
    *us = total;
    return true;
}

/* ---- cron fields --------------------------------------------------------- */

static const char *const month_names[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                          "jul", "aug", "sep", "oct", "nov", "dec"};
static const char *const day_names[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

/* A number or (names != NULL) a three-letter name at *p; advances *p. */
static bool
cron_value(const char **p, const char *const *names, int name_base, size_t n_names, int *out)
{
    if (isdigit((unsigned char)**p)) {
        char *end = NULL;
        long v = strtol(*p, &end, 10);
        if (end - *p > 2)
            return false;
        *p = end;
        *out = (int)v;
        return true;
    }
    for (size_t i = 0; names != NULL && i < n_names; i++)
        if (strncasecmp(*p, names[i], 3) == 0 && !isalpha((unsigned char)(*p)[3])) {
            *p += 3;
            *out = (int)i + name_base;
            return true;
        }
    return false;
}

typedef struct cron_field {
    const char *name;
    int lo, hi;
    const char *const *names;
    int name_base;
    size_t n_names;
} cron_field;

/* One comma-separated item of a field ("*", "a", "a-b", each with an
 * optional "/step") into *bits. */
static bool
cron_item(const char *item, const cron_field *f, uint64_t *bits)
{
    const char *p = item;
    int a = f->lo, b = f->hi, step = 1;
    if (*p == '*') {
        p++;
    } else {
        if (!cron_value(&p, f->names, f->name_base, f->n_names, &a))
            return false;
        b = a;
        if (*p == '-') {
            p++;
            if (!cron_value(&p, f->names, f->name_base, f->n_names, &b))
                return false;
        } else if (*p == '/') {
            b = f->hi; /* "a/n": from a to the end */
        }
    }
    if (*p == '/') {
        p++;
        if (!cron_value(&p, NULL, 0, 0, &step) || step <= 0)
            return false;
    }
    if (*p != '\0' || a < f->lo || b > f->hi || a > b)
        return false;
    for (int v = a; v <= b; v += step)
        *bits |= UINT64_C(1) << v;
    return true;
}

/* A whole field into *bits; *any: it was "*" (or "?"). */
static bool
cron_parse_field(char *text, const cron_field *f, uint64_t *bits, bool *any)
{
    *bits = 0;
    *any = strcmp(text, "*") == 0 || strcmp(text, "?") == 0;
    if (*any)
        text[0] = '*', text[1] = '\0';
    char *save = NULL;
    for (char *item = strtok_r(text, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save))
        if (!cron_item(item, f, bits))
            return false;
    return *bits != 0;
}

static const char *
cron_macro(const char *text)
{
    static const char *const macros[][2] = {
        {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
        {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
        {"@hourly", "0 * * * *"},
    };
    for (size_t i = 0; i < sizeof macros / sizeof macros[0]; i++)
        if (strcasecmp(text, macros[i][0]) == 0)
            return macros[i][1];
    return NULL;
}

static wf_code
cron_parse(const char *text, wf_schedule_spec *s, wf_error *err)
{
    static const cron_field fields[5] = {
        {"minute", 0, 59, NULL, 0, 0},          {"hour", 0, 23, NULL, 0, 0},
        {"day of month", 1, 31, NULL, 0, 0},    {"month", 1, 12, month_names, 1, 12},
        {"day of week", 0, 7, day_names, 0, 7},
    };
    const char *src = text[0] == '@' ? cron_macro(text) : text;
    if (src == NULL)
        return wf_error_set(err, WF_E_INVALID_CRON, "spec.cron: unknown macro \"%.32s\"", text);
    char buf[256];
    if (strlen(src) >= sizeof buf)
        return wf_error_set(err, WF_E_INVALID_CRON, "spec.cron: longer than 255 characters");
    snprintf(buf, sizeof buf, "%s", src);
    char *save = NULL, *part[6] = {0};
    size_t n = 0;
    for (char *t = strtok_r(buf, " \t", &save); t != NULL && n < 6;
         t = strtok_r(NULL, " \t", &save))
        part[n++] = t;
    if (n != 5)
        return wf_error_set(err, WF_E_INVALID_CRON,
                            "spec.cron: \"%.64s\" needs 5 fields (minute hour day month weekday)",
                            text);
    uint64_t bits[5];
    bool any[5];
    for (size_t i = 0; i < 5; i++)
        if (!cron_parse_field(part[i], &fields[i], &bits[i], &any[i]))
            return wf_error_set(err, WF_E_INVALID_CRON, "spec.cron: bad %s field in \"%.64s\"",
                                fields[i].name, text);
    s->minutes = bits[0];
    s->hours = (uint32_t)bits[1];
    s->days = (uint32_t)bits[2];
    s->months = (uint16_t)bits[3];
    s->weekdays = (uint8_t)((bits[4] | (bits[4] >> 7)) & 0x7f); /* 7 is Sunday too */
    s->days_any = any[2];
    s->weekdays_any = any[4];
    s->is_cron = true;
    return WF_OK;
}

/* ---- the zone (ICU) --------------------------------------------------------- */

/* Opens a Gregorian calendar in zone with the wall-time rules of the
 * spec: skipped times move to the first valid instant, repeated ones take
 * the first occurrence. NULL when ICU fails. */
static UCalendar *
zone_open(const char *zone)
{
    UChar id[WF_SCHEDULE_TZ_MAX + 1];
    u_uastrncpy(id, zone, WF_SCHEDULE_TZ_MAX);
    id[WF_SCHEDULE_TZ_MAX] = 0;
    UErrorCode st = U_ZERO_ERROR;
    UCalendar *cal = ucal_open(id, -1, "en_US", UCAL_GREGORIAN, &st);
    if (U_FAILURE(st)) {
        if (cal != NULL)
            ucal_close(cal);
        return NULL;
    }
    ucal_setAttribute(cal, UCAL_SKIPPED_WALL_TIME, UCAL_WALLTIME_NEXT_VALID);
    ucal_setAttribute(cal, UCAL_REPEATED_WALL_TIME, UCAL_WALLTIME_FIRST);
    return cal;
}

/* True when the IANA database (as ICU has it) knows zone. */
static bool
zone_known(const char *zone)
{
    if (strlen(zone) > WF_SCHEDULE_TZ_MAX)
        return false;
    UChar id[WF_SCHEDULE_TZ_MAX + 1], canon[WF_SCHEDULE_TZ_MAX * 2];
    u_uastrncpy(id, zone, WF_SCHEDULE_TZ_MAX);
    id[WF_SCHEDULE_TZ_MAX] = 0;
    UErrorCode st = U_ZERO_ERROR;
    UBool system = 0;
    ucal_getCanonicalTimeZoneID(id, -1, canon, (int32_t)(sizeof canon / sizeof canon[0]), &system,
                                &st);
    return U_SUCCESS(st) && system;
}

/* The wall-clock time of us in cal's zone, as naive seconds. */
static bool
to_naive(UCalendar *cal, int64_t us, int64_t *naive)
{
    UErrorCode st = U_ZERO_ERROR;
    int64_t ms = us >= 0 ? us / 1000 : -((-us + 999) / 1000);
    ucal_setMillis(cal, (UDate)ms, &st);
    int32_t offset = ucal_get(cal, UCAL_ZONE_OFFSET, &st) + ucal_get(cal, UCAL_DST_OFFSET, &st);
    if (U_FAILURE(st))
        return false;
    int64_t s = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
    *naive = s + offset / 1000;
    return true;
}

/* The instant of the wall-clock time naive (whole seconds) in cal's zone,
 * by the rules of zone_open. */
static bool
to_utc(UCalendar *cal, int64_t naive, int64_t *us)
{
    time_t t = (time_t)naive;
    struct tm tm;
    if (gmtime_r(&t, &tm) == NULL)
        return false;
    UErrorCode st = U_ZERO_ERROR;
    ucal_clear(cal);
    ucal_setDateTime(cal, tm.tm_year + 1900, tm.tm_mon, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, &st);
    UDate ms = ucal_getMillis(cal, &st);
    if (U_FAILURE(st))
        return false;
    *us = (int64_t)ms * 1000;
    return true;
}

/* ---- parse --------------------------------------------------------------- */

static int
cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* "YYYY-MM-DD" as days since 1970-01-01. */
static bool
parse_date(const char *text, int32_t *days)
{
    int y, m, d;
    char tail;
    if (text == NULL || strlen(text) != 10 || sscanf(text, "%4d-%2d-%2d%c", &y, &m, &d, &tail) != 3)
        return false;
    struct tm tm = {.tm_year = y - 1900, .tm_mon = m - 1, .tm_mday = d, .tm_hour = 12};
    time_t t = timegm(&tm);
    struct tm back;
    if (gmtime_r(&t, &back) == NULL || back.tm_mday != d || back.tm_mon != m - 1)
        return false;
    *days = (int32_t)(t / DAY_S);
    return true;
}

static wf_code
parse_excludes(wf_arena *a, const wf_schedule_spec_in *in, wf_schedule_spec *s, wf_error *err)
{
    if (in->n_exclude_dates > WF_SCHEDULE_MAX_EXCLUDES)
        return wf_error_set(err, WF_E_INVALID_SCHEDULE, "spec.exclude_dates: more than %d dates",
                            WF_SCHEDULE_MAX_EXCLUDES);
    if (in->n_exclude_dates == 0)
        return WF_OK;
    s->excludes = wf_arena_calloc(a, in->n_exclude_dates, sizeof *s->excludes);
    if (s->excludes == NULL)
        return wf_error_nomem(err);
    for (size_t i = 0; i < in->n_exclude_dates; i++)
        if (!parse_date(in->exclude_dates[i], &s->excludes[i]))
            return wf_error_set(err, WF_E_INVALID_SCHEDULE,
                                "spec.exclude_dates[%zu]: \"%.32s\" is not a date YYYY-MM-DD", i,
                                in->exclude_dates[i] != NULL ? in->exclude_dates[i] : "");
    s->n_excludes = in->n_exclude_dates;
    qsort(s->excludes, s->n_excludes, sizeof *s->excludes, cmp_i32);
    return WF_OK;
}

/* "15m", "every 15m", "every 15m offset 2m". */
static wf_code
interval_parse(const char *text, wf_schedule_spec *s, wf_error *err)
{
    char every[16] = "", iv[32] = "", off_kw[16] = "", off[32] = "", extra[2] = "";
    int n = sscanf(text, "%15s %31s %15s %31s %1s", every, iv, off_kw, off, extra);
    bool ok = false;
    if (n == 1) {
        snprintf(iv, sizeof iv, "%s", every);
        ok = wf_schedule_duration(iv, &s->interval_us);
    } else if ((n == 2 || n == 4) && strcmp(every, "every") == 0) {
        ok =
            wf_schedule_duration(iv, &s->interval_us) &&
            (n == 2 || (strcmp(off_kw, "offset") == 0 && wf_schedule_duration(off, &s->offset_us)));
    }
    s->is_interval = true;
    if (!ok || s->interval_us < US_PER_S)
        return wf_error_set(err, WF_E_INVALID_SCHEDULE,
                            "spec.interval: \"%.64s\" is not \"every <duration> [offset "
                            "<duration>]\" of at least 1s",
                            text);
    if (s->offset_us >= s->interval_us)
        return wf_error_set(err, WF_E_INVALID_SCHEDULE,
                            "spec.interval: the offset must be shorter than the interval");
    return WF_OK;
}

static bool
set(const char *s)
{
    return s != NULL && s[0] != '\0';
}

/* ---- recurrence rules: parse (libical) ----------------------------------- */

static struct icaltimetype
naive_to_ical(int64_t naive)
{
    time_t t = (time_t)naive;
    struct tm tm;
    struct icaltimetype it = icaltime_null_time();
    if (gmtime_r(&t, &tm) == NULL)
        return it;
    it.year = tm.tm_year + 1900;
    it.month = tm.tm_mon + 1;
    it.day = tm.tm_mday;
    it.hour = tm.tm_hour;
    it.minute = tm.tm_min;
    it.second = tm.tm_sec;
    return it;
}

static int64_t
ical_to_naive(struct icaltimetype it)
{
    struct tm tm = {.tm_year = it.year - 1900,
                    .tm_mon = it.month - 1,
                    .tm_mday = it.day,
                    .tm_hour = it.hour,
                    .tm_min = it.minute,
                    .tm_sec = it.second};
    return (int64_t)timegm(&tm);
}

/* "YYYY-MM-DDTHH:MM:SS" (years 1970 to 2500) as naive seconds. */
static bool
parse_local_time(const char *text, int64_t *naive)
{
    int y, mo, d, h, mi, se;
    char tail;
    if (strlen(text) != 19 ||
        sscanf(text, "%4d-%2d-%2dT%2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &se, &tail) != 6 ||
        y < 1970 || y > 2500)
        return false;
    struct tm tm = {.tm_year = y - 1900,
                    .tm_mon = mo - 1,
                    .tm_mday = d,
                    .tm_hour = h,
                    .tm_min = mi,
                    .tm_sec = se};
    time_t t = timegm(&tm);
    struct tm back;
    if (gmtime_r(&t, &back) == NULL || back.tm_mday != d || back.tm_mon != mo - 1 ||
        back.tm_hour != h || back.tm_min != mi || back.tm_sec != se)
        return false;
    *naive = (int64_t)t;
    return true;
}

/* A rule's UNTIL as local wall-clock time: a UTC UNTIL ("...Z") through the
 * zone, a date UNTIL as the end of that day. */
static bool
rrule_local_until(UCalendar *cal, struct icalrecurrencetype *r)
{
    if (icaltime_is_null_time(r->until))
        return true;
    if (r->until.is_date) {
        r->until.is_date = 0;
        r->until.hour = 23, r->until.minute = 59, r->until.second = 59;
        return true;
    }
    if (!icaltime_is_utc(r->until))
        return true;
    int64_t naive = 0;
    r->until.zone = NULL;
    if (!to_naive(cal, ical_to_naive(r->until) * US_PER_S, &naive))
        return false;
    r->until = naive_to_ical(naive);
    return true;
}

/* How far one search of r looks, and the fixed period its start may move
 * by without changing its occurrences (0: none). */
static void
rrule_bounds(const struct icalrecurrencetype *r, wf_schedule_rrule *out)
{
    int64_t unit = 0, days = WF_SCHEDULE_RRULE_HORIZON_DAILY;
    switch (r->freq) {
    case ICAL_MINUTELY_RECURRENCE:
        unit = 60, days = WF_SCHEDULE_RRULE_HORIZON_MINUTELY;
        break;
    case ICAL_HOURLY_RECURRENCE:
        unit = 3600, days = WF_SCHEDULE_RRULE_HORIZON_HOURLY;
        break;
    case ICAL_DAILY_RECURRENCE:
        unit = DAY_S;
        break;
    case ICAL_WEEKLY_RECURRENCE:
        unit = 7 * DAY_S;
        break;
    default:
        break;
    }
    out->horizon_s = days * DAY_S;
    out->period_s = r->count > 0 ? 0 : unit * (r->interval > 0 ? r->interval : 1);
}

static wf_code
rrule_parse_one(wf_arena *a, UCalendar *cal, const char *text, size_t i, wf_schedule_rrule *out,
                wf_error *err)
{
    if (text == NULL || strlen(text) > WF_SCHEDULE_RRULE_MAX_LEN)
        return wf_error_set(err, WF_E_INVALID_SCHEDULE, "spec.rrules[%zu]: empty or over %d bytes",
                            i, WF_SCHEDULE_RRULE_MAX_LEN);
    const char *body = strncasecmp(text, "RRULE:", 6) == 0 ? text + 6 : text;
    struct icalrecurrencetype r = icalrecurrencetype_from_string(body);
    bool rscale = r.rscale != NULL;
    free(r.rscale);
    r.rscale = NULL;
    const char *why = NULL;
    if (r.freq == ICAL_NO_RECURRENCE)
        why = "is not an iCalendar RRULE (FREQ=...;...)";
    else if (r.freq == ICAL_SECONDLY_RECURRENCE)
        why = "FREQ=SECONDLY is not supported (MINUTELY at the most)";
    else if (rscale)
        why = "RSCALE is not supported (Gregorian only)";
    else if (!rrule_local_until(cal, &r))
        why = "UNTIL cannot be read in the time zone";
    if (why != NULL)
        return wf_error_set(err, WF_E_INVALID_SCHEDULE, "spec.rrules[%zu]: \"%.64s\" %s", i, text,
                            why);
    out->rule = wf_arena_alloc(a, sizeof r);
    if (out->rule == NULL)
        return wf_error_nomem(err);
    memcpy(out->rule, &r, sizeof r);
    rrule_bounds(&r, out);
    return WF_OK;
}

static wf_code
rrules_parse(wf_arena *a, const wf_schedule_spec_in *in, wf_schedule_spec *s, wf_error *err)
{
    if (in->n_rrules > WF_SCHEDULE_MAX_RRULES)
        return wf_error_set(err, WF_E_INVALID_SCHEDULE, "spec.rrules: more than %d rules",
                            WF_SCHEDULE_MAX_RRULES);
    if (set(in->rrule_start) && !parse_local_time(in->rrule_start, &s->rrule_start))
        return wf_error_set(err, WF_E_INVALID_SCHEDULE,
                            "spec.rrule_start: \"%.32s\" is not a local time YYYY-MM-DDTHH:MM:SS",
                            in->rrule_start);
    if (in->n_rrules == 0)
        return WF_OK;
    s->rrules = wf_arena_calloc(a, in->n_rrules, sizeof *s->rrules);
    UCalendar *cal = s->rrules != NULL ? zone_open(s->time_zone) : NULL;
    if (cal == NULL)
        return s->rrules == NULL ? wf_error_nomem(err)
                                 : wf_error_set(err, WF_E_INTERNAL,
                                                "time zone \"%s\" cannot be opened", s->time_zone);
    wf_code rc = WF_OK;
    for (size_t i = 0; rc == WF_OK && i < in->n_rrules; i++)
        rc = rrule_parse_one(a, cal, in->rrules[i], i, &s->rrules[i], err);
    ucal_close(cal);
    s->n_rrules = rc == WF_OK ? in->n_rrules : 0;
    return rc;
}

wf_code
wf_schedule_spec_parse(wf_arena *a, const wf_schedule_spec_in *in, wf_schedule_spec *out,
                       wf_error *err)
{
    memset(out, 0, sizeof *out);
    const char *zone = set(in->time_zone) ? in->time_zone : "UTC";
    if (!zone_known(zone))
        return wf_error_set(err, WF_E_UNKNOWN_TIME_ZONE,
                            "spec.time_zone: unknown time zone \"%.64s\"", zone);
    snprintf(out->time_zone, sizeof out->time_zone, "%s", zone);
    if (set(in->cron) && set(in->interval))
        return wf_error_set(err, WF_E_INVALID_SCHEDULE,
                            "spec: give at most one of cron and interval");
    if (!set(in->cron) && !set(in->interval) && in->n_rrules == 0)
        return wf_error_set(err, WF_E_INVALID_SCHEDULE, "spec: give a cron, an interval or rrules");
    wf_code rc = WF_OK;
    if (set(in->cron))
        rc = cron_parse(in->cron, out, err);
    else if (set(in->interval))
        rc = interval_parse(in->interval, out, err);
    if (rc == WF_OK)
        rc = rrules_parse(a, in, out, err);
    if (rc == WF_OK && in->jitter_us < 0)
        rc = wf_error_set(err, WF_E_INVALID_SCHEDULE, "spec.jitter: must not be negative");
    out->jitter_us = in->jitter_us;
    if (rc == WF_OK &&
        (in->start_at < 0 || in->end_at < 0 || (in->end_at != 0 && in->end_at <= in->start_at)))
        rc = wf_error_set(err, WF_E_INVALID_SCHEDULE, "spec.end_at: must come after start_at");
    out->start_at = in->start_at;
    out->end_at = in->end_at;
    return rc == WF_OK ? parse_excludes(a, in, out, err) : rc;
}

/* ---- next ---------------------------------------------------------------- */

static bool
excluded(const wf_schedule_spec *s, int64_t naive)
{
    int32_t day = (int32_t)((naive >= 0 ? naive : naive - DAY_S + 1) / DAY_S);
    return s->n_excludes > 0 &&
           bsearch(&day, s->excludes, s->n_excludes, sizeof day, cmp_i32) != NULL;
}

static bool
day_matches(const wf_schedule_spec *s, const struct tm *tm)
{
    bool dom = (s->days >> tm->tm_mday) & 1, dow = (s->weekdays >> tm->tm_wday) & 1;
    if (!s->days_any && !s->weekdays_any)
        return dom || dow;
    return dom && dow;
}

/* The naive time of the start of the unit after tm's (month, day, hour). */
static int64_t
next_unit(struct tm tm, int unit)
{
    tm.tm_sec = 0;
    tm.tm_min = 0;
    if (unit <= 2)
        tm.tm_hour = 0;
    if (unit == 1)
        tm.tm_mday = 1, tm.tm_mon++;
    else if (unit == 2)
        tm.tm_mday++;
    else
        tm.tm_hour++;
    tm.tm_isdst = 0;
    return (int64_t)timegm(&tm);
}

/* The next naive minute at or after cand whose fields match; false when
 * none before limit. */
static bool
cron_match_from(const wf_schedule_spec *s, int64_t cand, int64_t limit, int64_t *match)
{
    for (int step = 0; step < SEARCH_STEPS && cand < limit; step++) {
        time_t t = (time_t)cand;
        struct tm tm;
        if (gmtime_r(&t, &tm) == NULL)
            return false;
        if (!((s->months >> (tm.tm_mon + 1)) & 1))
            cand = next_unit(tm, 1);
        else if (!day_matches(s, &tm) || excluded(s, cand))
            cand = next_unit(tm, 2);
        else if (!((s->hours >> tm.tm_hour) & 1))
            cand = next_unit(tm, 3);
        else if (!((s->minutes >> tm.tm_min) & 1))
            cand += 60;
        else {
            *match = cand;
            return true;
        }
    }
    return false;
}

static wf_code
cron_next(const wf_schedule_spec *s, int64_t after_us, int64_t *next_us, bool *none, wf_error *err)
{
    UCalendar *cal = zone_open(s->time_zone);
    int64_t naive = 0;
    if (cal == NULL || !to_naive(cal, after_us, &naive)) {
        if (cal != NULL)
            ucal_close(cal);
        return wf_error_set(err, WF_E_INTERNAL, "time zone \"%s\" cannot be opened", s->time_zone);
    }
    /* The wall-clock minute after the one holding after_us; a match that
     * maps to after_us or earlier (a repeated hour's second pass, a gap's
     * end) is passed over. */
    int64_t cand = naive - ((naive % 60) + 60) % 60 + 60;
    int64_t limit = naive + SEARCH_YEARS * 366 * DAY_S;
    wf_code rc = WF_OK;
    *none = true;
    for (int i = 0; i < SEARCH_STEPS; i++) {
        int64_t match = 0, us = 0;
        if (!cron_match_from(s, cand, limit, &match))
            break;
        if (!to_utc(cal, match, &us)) {
            rc = wf_error_set(err, WF_E_INTERNAL, "time zone \"%s\" failed", s->time_zone);
            break;
        }
        if (us > after_us) {
            *next_us = us;
            *none = false;
            break;
        }
        cand = match + 60;
    }
    ucal_close(cal);
    return rc;
}

/* The local date of us is excluded (interval specs). */
static wf_code
interval_excluded(const wf_schedule_spec *s, int64_t us, bool *out, wf_error *err)
{
    *out = false;
    if (s->n_excludes == 0)
        return WF_OK;
    UCalendar *cal = zone_open(s->time_zone);
    int64_t naive = 0;
    bool ok = cal != NULL && to_naive(cal, us, &naive);
    if (cal != NULL)
        ucal_close(cal);
    if (!ok)
        return wf_error_set(err, WF_E_INTERNAL, "time zone \"%s\" cannot be opened", s->time_zone);
    *out = excluded(s, naive);
    return WF_OK;
}

static int64_t
floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static wf_code
interval_next(const wf_schedule_spec *s, int64_t after_us, int64_t *next_us, bool *none,
              wf_error *err)
{
    int64_t t =
        s->offset_us + (floor_div(after_us - s->offset_us, s->interval_us) + 1) * s->interval_us;
    *none = true;
    for (int i = 0; i < SEARCH_STEPS; i++, t += s->interval_us) {
        bool skip = false;
        wf_code rc = interval_excluded(s, t, &skip, err);
        if (rc != WF_OK)
            return rc;
        if (!skip) {
            *next_us = t;
            *none = false;
            break;
        }
    }
    return WF_OK;
}

/* ---- recurrence rules: search ------------------------------------------- */

/* An iterator of rr from the spec's rrule_start, moved by whole periods
 * to at most from (naive) when the rule allows, ending at its UNTIL or a
 * horizon after from, whichever comes first; NULL when libical finds the
 * rule never occurs. */
static icalrecur_iterator *
rrule_iter(const wf_schedule_spec *s, const wf_schedule_rrule *rr, int64_t from)
{
    struct icalrecurrencetype r = *rr->rule;
    int64_t start = s->rrule_start;
    if (rr->period_s > 0 && from > start)
        start += (from - start) / rr->period_s * rr->period_s;
    int64_t cap = (from > s->rrule_start ? from : s->rrule_start) + rr->horizon_s;
    if (icaltime_is_null_time(r.until) || ical_to_naive(r.until) > cap)
        r.until = naive_to_ical(cap);
    return icalrecur_iterator_new(r, naive_to_ical(start));
}

/* The first occurrence of rr strictly after after_us, in UTC. */
static wf_code
rrule_next(const wf_schedule_spec *s, const wf_schedule_rrule *rr, UCalendar *cal, int64_t after_us,
           int64_t *next_us, bool *none, wf_error *err)
{
    int64_t naive = 0;
    *none = true;
    if (!to_naive(cal, after_us, &naive))
        return wf_error_set(err, WF_E_INTERNAL, "time zone \"%s\" failed", s->time_zone);
    /* A day early: a wall time before naive may still map after after_us
     * around a change of offset; those at or before it are passed over. */
    icalrecur_iterator *it = rrule_iter(s, rr, naive - DAY_S);
    wf_code rc = WF_OK;
    for (int i = 0; it != NULL && i < SEARCH_STEPS; i++) {
        struct icaltimetype t = icalrecur_iterator_next(it);
        int64_t local = ical_to_naive(t), us = 0;
        if (icaltime_is_null_time(t))
            break;
        if (excluded(s, local))
            continue;
        if (!to_utc(cal, local, &us)) {
            rc = wf_error_set(err, WF_E_INTERNAL, "time zone \"%s\" failed", s->time_zone);
            break;
        }
        if (us > after_us) {
            *next_us = us;
            *none = false;
            break;
        }
    }
    if (it != NULL)
        icalrecur_iterator_free(it);
    return rc;
}

/* The earliest next fire time of the rules, merged into *next_us / *none. */
static wf_code
rrules_next(const wf_schedule_spec *s, int64_t after_us, int64_t *next_us, bool *none,
            wf_error *err)
{
    UCalendar *cal = zone_open(s->time_zone);
    if (cal == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "time zone \"%s\" cannot be opened", s->time_zone);
    wf_code rc = WF_OK;
    for (size_t i = 0; rc == WF_OK && i < s->n_rrules; i++) {
        int64_t t = 0;
        bool no = true;
        rc = rrule_next(s, &s->rrules[i], cal, after_us, &t, &no, err);
        if (rc == WF_OK && !no && (*none || t < *next_us)) {
            *next_us = t;
            *none = false;
        }
    }
    ucal_close(cal);
    return rc;
}

wf_code
wf_schedule_spec_check_rrules(const wf_schedule_spec *s, wf_error *err)
{
    for (size_t i = 0; i < s->n_rrules; i++) {
        icalrecur_iterator *it = rrule_iter(s, &s->rrules[i], s->rrule_start);
        bool fires = it != NULL && !icaltime_is_null_time(icalrecur_iterator_next(it));
        if (it != NULL)
            icalrecur_iterator_free(it);
        if (!fires)
            return wf_error_set(err, WF_E_SCHEDULE_RRULE_NEVER_FIRES,
                                "spec.rrules[%zu]: no occurrence within %lld days of rrule_start",
                                i, (long long)(s->rrules[i].horizon_s / DAY_S));
    }
    return WF_OK;
}

wf_code
wf_schedule_spec_next(const wf_schedule_spec *s, int64_t after_us, int64_t *next_us, bool *none,
                      wf_error *err)
{
    if (s->start_at != 0 && after_us < s->start_at - 1)
        after_us = s->start_at - 1;
    wf_code rc = WF_OK;
    *none = true;
    if (s->is_cron)
        rc = cron_next(s, after_us, next_us, none, err);
    else if (s->is_interval)
        rc = interval_next(s, after_us, next_us, none, err);
    if (rc == WF_OK && s->n_rrules > 0)
        rc = rrules_next(s, after_us, next_us, none, err);
    if (rc == WF_OK && !*none && s->end_at != 0 && *next_us > s->end_at)
        *none = true;
    return rc;
}

wf_code
wf_schedule_spec_upcoming(const wf_schedule_spec *s, int64_t after_us, size_t n, int64_t *out,
                          size_t *got, wf_error *err)
{
    *got = 0;
    for (size_t i = 0; i < n; i++) {
        bool none = false;
        wf_code rc = wf_schedule_spec_next(s, after_us, &out[i], &none, err);
        if (rc != WF_OK)
            return rc;
        if (none)
            break;
        after_us = out[i];
        (*got)++;
    }
    return WF_OK;
}

int64_t
wf_schedule_spec_jitter(const wf_schedule_spec *s, const char *id, int64_t nominal_us)
{
    if (s->jitter_us <= 0)
        return 0;
    /* FNV-1a over the id and the nominal time: stable across replicas. */
    uint64_t h = UINT64_C(1469598103934665603);
    for (const char *p = id; p != NULL && *p != '\0'; p++)
        h = (h ^ (unsigned char)*p) * UINT64_C(1099511628211);
    for (int i = 0; i < 8; i++)
        h = (h ^ (uint8_t)((uint64_t)nominal_us >> (8 * i))) * UINT64_C(1099511628211);
    return (int64_t)(h % (uint64_t)s->jitter_us);
}

char *
wf_schedule_spec_local_text(const wf_schedule_spec *s, wf_arena *a, int64_t us)
{
    UCalendar *cal = zone_open(s->time_zone);
    int64_t naive = 0;
    bool ok = cal != NULL && to_naive(cal, us, &naive);
    if (cal != NULL)
        ucal_close(cal);
    if (!ok)
        return NULL;
    int64_t whole = floor_div(us, US_PER_S);
    int64_t off = (naive - whole) / 60; /* minutes */
    time_t t = (time_t)naive;
    struct tm tm;
    if (gmtime_r(&t, &tm) == NULL)
        return NULL;
    int64_t aoff = off < 0 ? -off : off;
    return wf_arena_printf(a, "%04d-%02d-%02dT%02d:%02d:%02d%c%02d:%02d", tm.tm_year + 1900,
                           tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                           off < 0 ? '-' : '+', (int)(aoff / 60), (int)(aoff % 60));
}
