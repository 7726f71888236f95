/*
 * wf_id: UUIDv7 generation (RFC 9562: 48-bit milliseconds, version 7, then
 * random bits from getrandom(2)) and the shape checks of ids.
 */
#include "wf_id.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "wf_time.h"

char *
wf_id_new(wf_arena *a)
{
    char *id = wf_arena_alloc(a, WF_UUID_LEN + 1);
    if (id != NULL)
        wf_uuid7(id);
    return id;
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

/* True when the first WF_UUID_LEN bytes of s are a UUID. */
static bool
uuid_at(const char *s)
{
    for (int i = 0; i < WF_UUID_LEN; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-')
                return false;
        } else if (!isxdigit((unsigned char)s[i])) {
            return false;
        }
    }
    return true;
}

bool
wf_uuid_valid(const char *s)
{
    return s != NULL && strlen(s) == WF_UUID_LEN && uuid_at(s);
}

bool
wf_id_job_key_split(const char *s, size_t *instance_len)
{
    const char *dot = s != NULL ? strrchr(s, '.') : NULL;
    if (dot == NULL || dot == s || !wf_uuid_valid(dot + 1))
        return false;
    if (instance_len != NULL)
        *instance_len = (size_t)(dot - s);
    return true;
}

bool
wf_id_job_key_valid(const char *s)
{
    size_t n;
    return wf_uuid_valid(s) || (wf_id_job_key_split(s, &n) && n == WF_UUID_LEN && uuid_at(s));
}

bool
wf_id_tenant_valid(const char *s, size_t n)
{
    if (s == NULL || n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}
