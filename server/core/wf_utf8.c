/*
 * wf_utf8: see wf_utf8.h.
 */
#include "wf_utf8.h"

#include <stdint.h>

size_t
wf_utf8_char(const unsigned char *s, size_t n)
{
    if (n == 0)
        return 0;
    unsigned char c = s[0];
    size_t k;
    uint32_t cp, min;
    if (c < 0x80)
        return 1;
    if ((c & 0xe0) == 0xc0)
        k = 1, cp = c & 0x1f, min = 0x80;
    else if ((c & 0xf0) == 0xe0)
        k = 2, cp = c & 0x0f, min = 0x800;
    else if ((c & 0xf8) == 0xf0)
        k = 3, cp = c & 0x07, min = 0x10000;
    else
        return 0;
    for (size_t j = 1; j <= k; j++) {
        if (j >= n || (s[j] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[j] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return k + 1;
}

bool
wf_utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t k = wf_utf8_char(s + i, n - i);
        if (k == 0)
            return false;
        i += k;
    }
    return true;
}
