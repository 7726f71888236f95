/*
 * wf_str: NULL-safe string predicates.
 */
#include "wf_str.h"

#include <string.h>

bool
wf_str_eq(const char *a, const char *b)
{
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}

bool
wf_str_empty(const char *s)
{
    return s == NULL || s[0] == '\0';
}
