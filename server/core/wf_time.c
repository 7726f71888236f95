/*
 * wf_time: wall and monotonic clocks, and the RFC 3339 text of a time that
 * events and messages carry.
 */
#include "wf_time.h"

#include <time.h>

int64_t
wf_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t
wf_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

char *
wf_time_rfc3339(wf_arena *a, int64_t us)
{
    time_t s = (time_t)(us / 1000000);
    int frac = (int)(us % 1000000);
    if (frac < 0) { /* before the epoch: the second below, plus a fraction */
        frac += 1000000;
        s--;
    }
    struct tm tm;
    gmtime_r(&s, &tm);
    return wf_arena_printf(a, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900,
                           tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
}
