/*
 * wf_str: the two string predicates every module needs, NULL-safe.
 */
#ifndef WF_STR_H
#define WF_STR_H

#include <stdbool.h>

/* True when both are non-NULL and equal (NULL equals nothing, not even NULL). */
bool wf_str_eq(const char *a, const char *b);

/* True for NULL or "": a string field the caller left unset. */
bool wf_str_empty(const char *s);

#endif /* WF_STR_H */
