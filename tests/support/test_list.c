/*
 * test_list: test_list.h.
 */
#include "test_list.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every listed test of the program, in the order the constructors ran. */
#define LISTED_MAX 512
static struct listed {
    const char *tcase;
    const TTest *test;
} listed[LISTED_MAX];
static size_t n_listed;

void
wf_test_list(const char *tcase, const TTest *test)
{
    if (n_listed == LISTED_MAX) {
        fprintf(stderr, "test_list: more than %d tests\n", LISTED_MAX);
        abort();
    }
    listed[n_listed].tcase = tcase;
    listed[n_listed].test = test;
    n_listed++;
}

static bool
same_case(const char *a, const char *b)
{
    return a == NULL || b == NULL ? a == b : strcmp(a, b) == 0;
}

/* Orders tests by file, then by line: the order they are written in. */
static int
by_place(const void *a, const void *b)
{
    const TTest *x = *(const TTest *const *)a;
    const TTest *y = *(const TTest *const *)b;
    int f = strcmp(x->file, y->file);
    return f != 0 ? f : (x->line > y->line) - (x->line < y->line);
}

size_t
wf_test_add_listed(TCase *tc, const char *tcase)
{
    const TTest *tests[LISTED_MAX];
    size_t n = 0;
    for (size_t i = 0; i < n_listed; i++)
        if (same_case(listed[i].tcase, tcase))
            tests[n++] = listed[i].test;
    qsort(tests, n, sizeof tests[0], by_place);
    for (size_t i = 0; i < n; i++)
        tcase_add_test(tc, tests[i]);
    return n;
}

/* The case c names, with the tests listed under list_as. */
static TCase *
add_case(Suite *s, const wf_test_case *c, const char *list_as)
{
    TCase *tc = tcase_create(c->name);
    if (c->setup != NULL || c->teardown != NULL)
        tcase_add_checked_fixture(tc, c->setup, c->teardown);
    if (c->timeout_s > 0)
        tcase_set_timeout(tc, c->timeout_s);
    if (wf_test_add_listed(tc, list_as) == 0) {
        fprintf(stderr, "test_list: no test listed for case %s\n", c->name);
        abort();
    }
    suite_add_tcase(s, tc);
    return tc;
}

TCase *
wf_test_add_case(Suite *s, const wf_test_case *c)
{
    return add_case(s, c, c->name);
}

Suite *
wf_test_suite_of(const char *suite, const wf_test_case *cases)
{
    Suite *s = suite_create(suite);
    for (size_t i = 0; cases[i].name != NULL; i++)
        wf_test_add_case(s, &cases[i]);
    return s;
}

Suite *
wf_test_suite(const char *suite, const char *tcase, void (*setup)(void), void (*teardown)(void),
              double timeout_s)
{
    Suite *s = suite_create(suite);
    wf_test_case c = {tcase, setup, teardown, timeout_s};
    add_case(s, &c, NULL);
    return s;
}

int
wf_test_run_mode(Suite *s, enum fork_status fork_mode)
{
    SRunner *sr = srunner_create(s);
    if (fork_mode != CK_FORK_GETENV)
        srunner_set_fork_status(sr, fork_mode);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
