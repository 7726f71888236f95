/*
 * wf_log: JSON lines on stderr.
 *
 * One line per event, written with a single write(2) so that lines from
 * different threads never interleave. The level is checked before any
 * argument is formatted. Secrets (API keys, connection strings) must never
 * be passed here.
 */
#ifndef WF_LOG_H
#define WF_LOG_H

#include <stddef.h>

typedef enum wf_log_level {
    WF_LOG_DEBUG = 0,
    WF_LOG_INFO = 1,
    WF_LOG_WARN = 2,
    WF_LOG_ERROR = 3,
} wf_log_level;

/* Current threshold; set once at startup from WF_LOG_LEVEL. */
extern wf_log_level wf_log_threshold;

/* Parses "debug", "info", "warn" or "error"; returns -1 for anything else. */
int wf_log_parse_level(const char *s);

/* Writes {"ts":..., "level":..., "event":event, "msg":formatted}. */
#define WF_LOG(level, event, ...)                                                                  \
    do {                                                                                           \
        if ((level) >= wf_log_threshold)                                                           \
            wf_log_write((level), (event), __VA_ARGS__);                                           \
    } while (0)

void wf_log_write(wf_log_level level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * A JSON line under construction, for callers that add their own fields
 * (the access log). Fixed capacity: a field that does not fit is dropped
 * whole, so the line always stays valid JSON.
 */
typedef struct wf_log_line {
    char buf[2048];
    size_t len;
} wf_log_line;

/* Starts a line with ts, level and event. */
void wf_log_line_begin(wf_log_line *l, wf_log_level level, const char *event);
/* Adds "key":"escaped value"; a NULL value is skipped. */
void wf_log_line_str(wf_log_line *l, const char *key, const char *value);
/* Adds "key":number with three decimals. */
void wf_log_line_double(wf_log_line *l, const char *key, double value);
/* Closes the line and writes it to stderr in one write. */
void wf_log_line_end(wf_log_line *l);

/* JSON-escapes src (n bytes) into dst (cap bytes, NUL-terminated); returns
 * the escaped length, or (size_t)-1 when it does not fit. The output is
 * valid UTF-8: a byte of src that does not start a valid character (bytes
 * from the wire, a message cut mid-character) becomes \ufffd. */
size_t wf_json_escape(char *dst, size_t cap, const char *src, size_t n);

#endif /* WF_LOG_H */
