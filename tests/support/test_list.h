/*
 * test_list: Check tests that list themselves. A test opened with WF_TEST
 * (or WF_CASE_TEST) instead of START_TEST is entered in the list of its
 * test case when the program starts; wf_test_suite and wf_test_suite_of
 * build the suite from those lists, each case's tests in the order the
 * file writes them. No suite names its tests a second time, and a test
 * cannot be written and then left out of its suite.
 */
#ifndef WF_TEST_LIST_H
#define WF_TEST_LIST_H

#include <check.h>
#include <stddef.h>

/* Enters test in the list of the case named tcase (NULL: the one case of
 * wf_test_suite). WF_CASE_TEST calls it; suites do not. */
void wf_test_list(const char *tcase, const TTest *test);

/* START_TEST of name, listed under the case named tcase (a string). */
#define WF_CASE_TEST(tcase, name)                                                                  \
    static const TTest *name;                                                                      \
    __attribute__((constructor)) static void name##_listed(void)                                   \
    {                                                                                              \
        wf_test_list(tcase, name);                                                                 \
    }                                                                                              \
    START_TEST(name)

/* START_TEST of name, listed under the one case of its suite. */
#define WF_TEST(name) WF_CASE_TEST(NULL, name)

/* One test case of a suite: the tests listed under name (WF_CASE_TEST;
 * with wf_test_suite, WF_TEST's), its checked fixture (either may be NULL)
 * and its timeout in seconds (0: Check's default). */
typedef struct wf_test_case {
    const char *name;
    void (*setup)(void);
    void (*teardown)(void);
    double timeout_s;
} wf_test_case;

/* Adds the tests listed under the case named tcase (NULL: WF_TEST's) to
 * tc, in the order they are written; how many. */
size_t wf_test_add_listed(TCase *tc, const char *tcase);

/* Adds c to s, with its listed tests; fails when none is listed. */
TCase *wf_test_add_case(Suite *s, const wf_test_case *c);

/* The suite named suite of the cases cases[0..] up to one without name. */
Suite *wf_test_suite_of(const char *suite, const wf_test_case *cases);

/* The suite named suite of one case named tcase holding the WF_TEST
 * tests, with the checked fixture setup / teardown (either may be NULL)
 * and timeout_s seconds (0: Check's default). */
Suite *wf_test_suite(const char *suite, const char *tcase, void (*setup)(void),
                     void (*teardown)(void), double timeout_s);

/* Runs s in fork_mode (CK_FORK, CK_NOFORK, or CK_FORK_GETENV to let
 * CK_FORK decide) and frees it: 0 when every test passed, else 1. */
int wf_test_run_mode(Suite *s, enum fork_status fork_mode);

#endif /* WF_TEST_LIST_H */
