/*
 * wf_utf8: strict UTF-8 (no overlong forms, no surrogates, nothing above
 * U+10FFFF), the one decoder behind the request check and the log.
 */
#ifndef WF_UTF8_H
#define WF_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* The length (1 to 4) of the valid UTF-8 character that starts the n bytes
 * at s, or 0 when they do not start with one (n == 0 included). */
size_t wf_utf8_char(const unsigned char *s, size_t n);

/* True when the n bytes at s are valid UTF-8. */
bool wf_utf8_valid(const unsigned char *s, size_t n);

#endif /* WF_UTF8_H */
