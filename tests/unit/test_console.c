/*
 * Unit tests of the web console's escaping (server/console/console_html.c):
 * every value a page shows goes through these, so a hostile title or
 * variable can never become markup, a link or a script. Also the paths an
 * action may send the browser back to, and the login throttle
 * (console_throttle.c), on a clock of the test's own. And the "waiting
 * for" line the instance page shows at its top (common/wf_explain.c, which
 * wfctl show prints too).
 */
#include <stdlib.h>
#include <string.h>

#include "console_int.h"
#include "wf_explain.h"
#include "test_support.h"

/* What fn writes for s. */
static char *
written(void (*fn)(FILE *, const char *), const char *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(o);
    fn(o, s);
    fclose(o);
    return buf;
}

WF_TEST(test_html_escape)
{
    char *s = written(wf_console__esc, "<img src=x onerror=alert(1)>");
    ck_assert_str_eq(s, "&lt;img src=x onerror=alert(1)&gt;");
    free(s);
    s = written(wf_console__esc, "a\"b'c&d");
    ck_assert_str_eq(s, "a&quot;b&#39;c&amp;d");
    free(s);
    s = written(wf_console__esc, NULL);
    ck_assert_str_eq(s, "");
    free(s);
    s = written(wf_console__esc, "plain ünïcode");
    ck_assert_str_eq(s, "plain ünïcode");
    free(s);
}
END_TEST

WF_TEST(test_url_encode)
{
    char *s = written(wf_console__url, "a b/&?=#\"<x>");
    ck_assert_str_eq(s, "a%20b%2F%26%3F%3D%23%22%3Cx%3E");
    free(s);
    s = written(wf_console__url, "01a2-_.~Z");
    ck_assert_str_eq(s, "01a2-_.~Z");
    free(s);
}
END_TEST

/* A JSON string on one line of the event stream: no newline (which would
 * end the data line), no < (which a careless reader might put in HTML). */
WF_TEST(test_json_string)
{
    char *s = written(wf_console__json_str, "a\"\\\n</script>");
    ck_assert_str_eq(s, "\"a\\\"\\\\\\u000a\\u003c/script\\u003e\"");
    ck_assert_ptr_null(strchr(s, '\n'));
    free(s);
}
END_TEST

WF_TEST(test_enum_names)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&buf, &len);
    wf_console__enum(o, &workflow__v1__instance_status__descriptor,
                     WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_FAILED);
    fputc(' ', o);
    wf_console__enum(o, &workflow__v1__task_status__descriptor, 999);
    fclose(o);
    ck_assert_str_eq(buf, "FAILED 999");
    free(buf);
}
END_TEST

/* Only a path of this console may come back in a Location: what a browser
 * would read as another host ("//", "/\\", a tab or line break it drops)
 * is refused, as is anything with a blank or a byte outside ASCII. */
WF_TEST(test_own_path)
{
    const char *good[] = {
        "/instances", "/instance?id=01a2&x=%2F%2F", "/inbox?group=a%20b", "/", "/./x", "/a//b",
        "/a\\b"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        ck_assert_msg(wf_console__own_path(good[i]), "refused %s", good[i]);
    const char *bad[] = {"",
                         "instances",
                         "//evil.example",
                         "/\\evil.example",
                         "/\t/evil.example",
                         "/\n/evil.example",
                         "/\r/evil.example",
                         "/ /evil.example",
                         "/x\r\nSet-Cookie: a=b",
                         "/x y",
                         "/\x7f",
                         "/\xc3\xa9",
                         "\t//evil.example",
                         "https://evil.example/",
                         "javascript:alert(1)"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(!wf_console__own_path(bad[i]), "accepted bad path %zu", i);
}
END_TEST

/* Five refused logins are free; then each bars the address for 1, 2, 4 ...
 * seconds, at most 60; the bar ends when its time is up, a login resets
 * the count, and 15 quiet minutes forget it. */
WF_TEST(test_login_throttle)
{
    wf_console__throttle *t = wf_console__throttle_new();
    ck_assert_ptr_nonnull(t);
    int64_t now = 1000000;
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(wf_console__throttle_failed(t, "192.0.2.1", now), 0);
    ck_assert_int_eq(wf_console__throttle_wait(t, "192.0.2.1", now), 0);
    const int bars[] = {1, 2, 4, 8, 16, 32, 60, 60};
    for (size_t i = 0; i < sizeof bars / sizeof bars[0]; i++) {
        ck_assert_int_eq(wf_console__throttle_failed(t, "192.0.2.1", now), bars[i]);
        ck_assert_int_eq(wf_console__throttle_wait(t, "192.0.2.1", now), bars[i]);
        ck_assert_int_eq(wf_console__throttle_wait(t, "192.0.2.1", now + 1), bars[i]);
        ck_assert_int_eq(wf_console__throttle_wait(t, "192.0.2.2", now), 0); /* per address */
        now += bars[i] * 1000LL;
        ck_assert_int_eq(wf_console__throttle_wait(t, "192.0.2.1", now), 0);
    }
    wf_console__throttle_passed(t, "192.0.2.1", now);
    ck_assert_int_eq(wf_console__throttle_failed(t, "192.0.2.1", now), 0);
    for (int i = 0; i < 5; i++)
        wf_console__throttle_failed(t, "192.0.2.3", now);
    now += 15 * 60 * 1000LL + 1;
    ck_assert_int_eq(wf_console__throttle_failed(t, "192.0.2.3", now), 0);
    wf_console__throttle_free(t);
}
END_TEST

/* The table is fixed: ten thousand addresses failing once each, after an
 * address was barred, fill it and make room for each other while the
 * barred address stays barred (addresses that bar nobody make room
 * first). */
WF_TEST(test_login_throttle_bounded)
{
    wf_console__throttle *t = wf_console__throttle_new();
    int64_t now = 5000000;
    for (int i = 0; i < 6; i++)
        wf_console__throttle_failed(t, "198.51.100.7", now);
    ck_assert_int_eq(wf_console__throttle_wait(t, "198.51.100.7", now), 1);
    for (int i = 0; i < 7; i++)
        wf_console__throttle_failed(t, "198.51.100.7", now += 61000);
    ck_assert_int_eq(wf_console__throttle_wait(t, "198.51.100.7", now), 60);
    char addr[48];
    for (int i = 0; i < 10000; i++) {
        snprintf(addr, sizeof addr, "10.%d.%d.%d", i >> 16, (i >> 8) & 255, i & 255);
        ck_assert_int_eq(wf_console__throttle_failed(t, addr, now + 1 + i / 1000), 0);
    }
    ck_assert_int_eq(wf_console__throttle_wait(t, "198.51.100.7", now + 20), 60);
    /* The ones that bar nobody made room for each other: the first is gone,
     * so it starts again with its free refusals. */
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(wf_console__throttle_failed(t, "10.0.0.0", now + 30), 0);
    wf_console__throttle_free(t);
}
END_TEST

/* What an instance waits for: its open tasks counted (not the done one),
 * each job by type, each timer by due time, each awaited signal by name,
 * the running referrals counted; nothing for an instance that has ended. */
WF_TEST(test_waiting_for)
{
    Workflow__V1__Instance in = WORKFLOW__V1__INSTANCE__INIT, child = WORKFLOW__V1__INSTANCE__INIT;
    in.status = WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_RUNNING;
    child.status = WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_RUNNING;
    Workflow__V1__Task open = WORKFLOW__V1__TASK__INIT, done = WORKFLOW__V1__TASK__INIT;
    open.status = WORKFLOW__V1__TASK_STATUS__TASK_STATUS_CLAIMED;
    done.status = WORKFLOW__V1__TASK_STATUS__TASK_STATUS_DONE;
    Workflow__V1__Job job = WORKFLOW__V1__JOB__INIT;
    job.job_type = (char *)"checkout.charge";
    Google__Protobuf__Timestamp due = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
    due.seconds = 1767225600; /* 2026-01-01T00:00:00Z */
    Workflow__V1__Timer timer = WORKFLOW__V1__TIMER__INIT;
    timer.due_at = &due;
    Workflow__V1__AwaitingSignal sig = WORKFLOW__V1__AWAITING_SIGNAL__INIT;
    sig.name = (char *)"paid";
    Workflow__V1__Task *tasks[] = {&open, &done};
    Workflow__V1__Job *jobs[] = {&job};
    Workflow__V1__Timer *timers[] = {&timer};
    Workflow__V1__AwaitingSignal *sigs[] = {&sig};
    Workflow__V1__Instance *children[] = {&child};
    Workflow__V1__GetInstanceResponse r = WORKFLOW__V1__GET_INSTANCE_RESPONSE__INIT;
    r.instance = &in;
    char b[256];
    ck_assert(wf_explain_is_waiting(&in));
    ck_assert_str_eq(wf_explain_waiting(&r, b, sizeof b), "");
    r.tasks = tasks;
    r.n_tasks = 2;
    r.jobs = jobs;
    r.n_jobs = 1;
    r.timers = timers;
    r.n_timers = 1;
    r.awaiting_signals = sigs;
    r.n_awaiting_signals = 1;
    r.children = children;
    r.n_children = 1;
    ck_assert_str_eq(wf_explain_waiting(&r, b, sizeof b),
                     "1 task, job checkout.charge, timer 2026-01-01T00:00:00Z, signal paid, "
                     "1 running referral");
    /* A short buffer is cut, and still terminated. */
    ck_assert_str_eq(wf_explain_waiting(&r, b, 12), "1 task, job");
    in.status = WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_COMPLETED;
    ck_assert(!wf_explain_is_waiting(&in));
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite("console", "escaping", NULL, NULL, 0));
}
