/*
 * wf_log: JSON-lines logger. Each line is assembled in a stack buffer and
 * written with one write(2) to stderr.
 */
#include "wf_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "wf_utf8.h"

wf_log_level wf_log_threshold = WF_LOG_INFO;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

int
wf_log_parse_level(const char *s)
{
    for (int i = 0; i < 4; i++)
        if (strcasecmp(s, level_names[i]) == 0)
            return i;
    return -1;
}

size_t
wf_json_escape(char *dst, size_t cap, const char *src, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)src[i];
        char tmp[8];
        const char *rep = NULL;
        size_t rl = 1;
        switch (c) {
        case '"':
            rep = "\\\"";
            rl = 2;
            break;
        case '\\':
            rep = "\\\\";
            rl = 2;
            break;
        case '\n':
            rep = "\\n";
            rl = 2;
            break;
        case '\r':
            rep = "\\r";
            rl = 2;
            break;
        case '\t':
            rep = "\\t";
            rl = 2;
            break;
        default:
            if (c < 0x20 || c == 0x7f) {
                snprintf(tmp, sizeof tmp, "\\u%04x", c);
                rep = tmp;
                rl = 6;
            } else if (c >= 0x80) {
                /* A whole character as it is; a byte that does not start
                 * one becomes U+FFFD, so the output is valid UTF-8. */
                rl = wf_utf8_char((const unsigned char *)src + i, n - i);
                if (rl == 0) {
                    rep = "\\ufffd";
                    rl = 6;
                } else {
                    rep = src + i;
                    i += rl - 1;
                }
            }
        }
        if (o + rl + 1 > cap)
            return (size_t)-1;
        if (rep != NULL) {
            memcpy(dst + o, rep, rl);
            o += rl;
        } else {
            dst[o++] = (char)c;
        }
    }
    if (o + 1 > cap)
        return (size_t)-1;
    dst[o] = '\0';
    return o;
}

static void
append_raw(wf_log_line *l, const char *s, size_t n)
{
    if (l->len + n + 2 >= sizeof l->buf) /* keep room for "}\n" */
        return;
    memcpy(l->buf + l->len, s, n);
    l->len += n;
}

void
wf_log_line_begin(wf_log_line *l, wf_log_level level, const char *event)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(l->buf, sizeof l->buf,
                     "{\"ts\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\",\"level\":\"%s\"",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts.tv_nsec / 1000000, level_names[level]);
    l->len = n > 0 ? (size_t)n : 0;
    wf_log_line_str(l, "event", event);
}

void
wf_log_line_str(wf_log_line *l, const char *key, const char *value)
{
    if (value == NULL)
        return;
    char esc[1024];
    size_t n = wf_json_escape(esc, sizeof esc, value, strlen(value));
    if (n == (size_t)-1)
        return;
    char field[1200];
    int k = snprintf(field, sizeof field, ",\"%s\":\"%s\"", key, esc);
    if (k > 0 && (size_t)k < sizeof field)
        append_raw(l, field, (size_t)k);
}

void
wf_log_line_double(wf_log_line *l, const char *key, double value)
{
    char field[128];
    int k = snprintf(field, sizeof field, ",\"%s\":%.3f", key, value);
    if (k > 0 && (size_t)k < sizeof field)
        append_raw(l, field, (size_t)k);
}

void
wf_log_line_end(wf_log_line *l)
{
    l->buf[l->len++] = '}';
    l->buf[l->len++] = '\n';
    ssize_t rc = write(STDERR_FILENO, l->buf, l->len);
    (void)rc; /* nothing sensible to do when stderr is gone */
}

void
wf_log_write(wf_log_level level, const char *event, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    wf_log_line l;
    wf_log_line_begin(&l, level, event);
    wf_log_line_str(&l, "msg", msg);
    wf_log_line_end(&l);
}
