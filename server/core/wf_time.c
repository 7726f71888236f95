/*
 * wf_time: clocks and UUIDv7 generation (RFC 9562): 48-bit milliseconds,
 * version 7, then random bits from getrandom(2).
 */
#include "wf_time.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
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

void
wf_uuid7(char out[WF_UUID_LEN + 1])
{
    unsigned char b[16];
    uint64_t ms = (uint64_t)(wf_now_us() / 1000);
    size_t got = 0;
    while (got < 10) {
        ssize_t n = getrandom(b + 6 + got, 10 - got, 0);
        if (n > 0)
            got += (size_t)n;
    }
    for (int i = 0; i < 6; i++)
        b[i] = (unsigned char)(ms >> (40 - 8 * i));
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x70);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, WF_UUID_LEN + 1,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
             b[15]);
}

int
wf_uuid_valid(const char *s)
{
    if (s == NULL || strlen(s) != WF_UUID_LEN)
        return 0;
    for (int i = 0; i < WF_UUID_LEN; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-')
                return 0;
        } else if (!isxdigit((unsigned char)s[i])) {
            return 0;
        }
    }
    return 1;
}
