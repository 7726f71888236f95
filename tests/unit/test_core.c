/*
 * Unit tests of server/core: error reasons, arena, JSON escaping, UUIDs.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "test_support.h"
#include "wf_arena.h"
#include "wf_bulkhead.h"
#include "wf_error.h"
#include "wf_log.h"
#include "wf_utf8.h"
#include "wf_id.h"
#include "wf_time.h"

WF_TEST(test_every_code_has_a_distinct_reason)
{
    for (int i = 0; i < WF_CODE_COUNT_; i++) {
        const char *r = wf_code_reason((wf_code)i);
        ck_assert_ptr_nonnull(r);
        ck_assert_msg(i == WF_E_INTERNAL || strcmp(r, "INTERNAL") != 0, "code %d has no reason", i);
        for (int j = 0; j < i; j++)
            ck_assert_str_ne(r, wf_code_reason((wf_code)j));
    }
    ck_assert_str_eq(wf_code_reason(WF_E_TASK_NOT_OPEN), "TASK_NOT_OPEN");
    ck_assert_str_eq(wf_code_reason(WF_E_REQUEST_ID_REUSED), "REQUEST_ID_REUSED");
    ck_assert_str_eq(wf_code_reason(WF_E_DEFINITION_KIND_CONFLICT), "DEFINITION_KIND_CONFLICT");
    ck_assert_str_eq(wf_code_reason(WF_E_INSTANCE_SUSPENDED), "INSTANCE_SUSPENDED");
    ck_assert_str_eq(wf_code_reason(WF_E_INSTANCE_NOT_ROOT), "INSTANCE_NOT_ROOT");
    ck_assert_str_eq(wf_code_reason((wf_code)999), "INTERNAL");
}
END_TEST

WF_TEST(test_error_set_formats_and_truncates)
{
    wf_error err;
    wf_code rc = wf_error_set(&err, WF_E_TASK_NOT_FOUND, "task \"%s\" does not exist", "t-1");
    ck_assert_int_eq(rc, WF_E_TASK_NOT_FOUND);
    ck_assert_int_eq(err.code, WF_E_TASK_NOT_FOUND);
    ck_assert_str_eq(err.msg, "task \"t-1\" does not exist");
    char big[600];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    wf_error_set(&err, WF_E_INVALID_ARGUMENT, "%s", big);
    ck_assert_uint_eq(strlen(err.msg), sizeof err.msg - 1);
    ck_assert_int_eq(wf_error_set(NULL, WF_E_INTERNAL, "x"), WF_E_INTERNAL);
    wf_error_clear(&err);
    ck_assert_int_eq(err.code, WF_OK);
    ck_assert_str_eq(err.msg, "");
}
END_TEST

/* "key=value," for every id msg names. */
static const char *
ids_of(const char *msg)
{
    static char buf[256];
    wf_error_id ids[4];
    size_t n = wf_error_ids(msg, ids, 4);
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s=%.*s,", ids[i].key,
                 (int)ids[i].len, ids[i].value);
    return buf;
}

WF_TEST(test_error_ids_of_a_message)
{
    ck_assert_str_eq(ids_of("task \"t-1\" is not open"), "taskId=t-1,");
    ck_assert_str_eq(ids_of("instance \"i-1\" is not running"), "instanceId=i-1,");
    ck_assert_str_eq(ids_of("version 7 of definition \"order\" does not exist"),
                     "definitionKey=order,");
    ck_assert_str_eq(ids_of("job key \"k1\" was leased again"), "jobKey=k1,");
    ck_assert_str_eq(ids_of("no job has key \"k2\""), "jobKey=k2,");
    ck_assert_str_eq(ids_of("job with key \"k3\" does not exist"), "jobKey=k3,");
    ck_assert_str_eq(ids_of("user \"ann\" is not a member of group \"ops\""),
                     "userId=ann,groupId=ops,");
    ck_assert_str_eq(ids_of("compensation job \"j\" of transition \"pay\" failed"),
                     "jobId=j,transitionId=pay,");
    /* The first of a kind wins; unknown kinds, words ending in a kind,
     * empty and unterminated quotes name nothing. */
    ck_assert_str_eq(ids_of("task \"a\" and task \"b\""), "taskId=a,");
    ck_assert_str_eq(ids_of("expression yielded \"x\""), "");
    ck_assert_str_eq(ids_of("subtask \"x\""), "");
    ck_assert_str_eq(ids_of("task \"\" is empty"), "");
    ck_assert_str_eq(ids_of("task \"open"), "");
    ck_assert_str_eq(ids_of(NULL), "");
    ck_assert_str_eq(ids_of("\"x\" task \"y\""), "taskId=y,");
    ck_assert_str_eq(ids_of("bulkhead \"diagram\" is full"), "bulkhead=diagram,");
}
END_TEST

/* ---- bulkheads ---------------------------------------------------------- */

static int hand_offs;

static void
count_hand_off(void *arg)
{
    (void)arg;
    hand_offs++;
}

static wf_bulkhead_stats
bulkhead(wf_bulkhead_class c)
{
    wf_bulkhead_stats st;
    wf_bulkhead_get_stats(c, &st);
    return st;
}

static void *
join_compile(void *arg)
{
    wf_error err;
    wf_bulkhead_call_begin(NULL, NULL);
    *(wf_code *)arg = wf_bulkhead_enter(WF_BULKHEAD_COMPILE, &err);
    return NULL; /* leaves without ending its call: it keeps the place */
}

WF_TEST(test_a_full_bulkhead_refuses_at_once)
{
    int limits[WF_BULKHEAD_COUNT_] = {1, 2, 1};
    wf_bulkhead_configure(limits);
    wf_error err;
    /* Outside a call nothing counts and nothing is refused. */
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(wf_bulkhead_enter(WF_BULKHEAD_DIAGRAM, &err), WF_OK);
    ck_assert_int_eq(bulkhead(WF_BULKHEAD_DIAGRAM).active, 0);
    ck_assert(!wf_bulkhead_joined(WF_BULKHEAD_DIAGRAM));
    /* A call joins once, however often it asks; the hand-off runs at its
     * first class only. */
    hand_offs = 0;
    wf_bulkhead_call_begin(count_hand_off, NULL);
    ck_assert_int_eq(wf_bulkhead_enter(WF_BULKHEAD_DIAGRAM, &err), WF_OK);
    ck_assert_int_eq(wf_bulkhead_enter(WF_BULKHEAD_DIAGRAM, &err), WF_OK);
    ck_assert_int_eq(wf_bulkhead_enter(WF_BULKHEAD_EXPR, &err), WF_OK);
    ck_assert_int_eq(hand_offs, 1);
    ck_assert(wf_bulkhead_joined(WF_BULKHEAD_DIAGRAM));
    ck_assert_int_eq(bulkhead(WF_BULKHEAD_DIAGRAM).active, 1);
    ck_assert_int_eq(bulkhead(WF_BULKHEAD_EXPR).active, 1);
    /* Another thread's call finds them full; the compile class has room
     * for two. */
    wf_code rc[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(pthread_create(&th[i], NULL, join_compile, &rc[i]), 0);
        ck_assert_int_eq(pthread_join(th[i], NULL), 0);
    }
    ck_assert_int_eq(rc[0], WF_OK);
    ck_assert_int_eq(rc[1], WF_OK);
    ck_assert_int_eq(rc[2], WF_E_BULKHEAD_FULL);
    wf_bulkhead_stats st = bulkhead(WF_BULKHEAD_COMPILE);
    ck_assert_int_eq(st.active, 2);
    ck_assert_uint_eq(st.refused, 1);
    ck_assert_int_eq(st.limit, 2);
    /* The refusal names its class for ErrorInfo.metadata. */
    wf_bulkhead_call_end();
    wf_bulkhead_call_begin(NULL, NULL);
    ck_assert_int_eq(wf_bulkhead_enter(WF_BULKHEAD_COMPILE, &err), WF_E_BULKHEAD_FULL);
    ck_assert_str_eq(wf_code_reason(err.code), "BULKHEAD_FULL");
    ck_assert_str_eq(ids_of(err.msg), "bulkhead=compile,");
    /* The end of the call gave its places back. */
    ck_assert_int_eq(bulkhead(WF_BULKHEAD_DIAGRAM).active, 0);
    ck_assert_int_eq(bulkhead(WF_BULKHEAD_EXPR).active, 0);
    ck_assert_int_eq(wf_bulkhead_enter(WF_BULKHEAD_DIAGRAM, &err), WF_OK);
    wf_bulkhead_call_end();
    ck_assert_str_eq(wf_bulkhead_name(WF_BULKHEAD_EXPR), "expression");
}
END_TEST

WF_TEST(test_retryable_codes)
{
    ck_assert(wf_code_is_retryable(WF_E_STORE_UNAVAILABLE));
    ck_assert(wf_code_is_retryable(WF_E_CONFLICT));
    ck_assert(!wf_code_is_retryable(WF_E_TASK_NOT_OPEN));
    ck_assert(!wf_code_is_retryable(WF_E_INTERNAL));
}
END_TEST

WF_TEST(test_arena_alignment_growth_and_strings)
{
    wf_arena *a = wf_arena_new();
    ck_assert_ptr_nonnull(a);
    for (int i = 1; i < 2000; i++) {
        void *p = wf_arena_alloc(a, (size_t)(i % 97) + 1);
        ck_assert_ptr_nonnull(p);
        ck_assert_uint_eq((uintptr_t)p % _Alignof(max_align_t), 0);
        memset(p, 0xab, (size_t)(i % 97) + 1);
    }
    void *big = wf_arena_alloc(a, 3 * 1024 * 1024);
    ck_assert_ptr_nonnull(big);
    memset(big, 1, 3 * 1024 * 1024);
    char *s = wf_arena_strdup(a, "hello");
    ck_assert_str_eq(s, "hello");
    ck_assert_str_eq(wf_arena_strndup(a, "hello", 2), "he");
    ck_assert_str_eq(wf_arena_printf(a, "%d-%s", 7, "x"), "7-x");
    ck_assert_ptr_null(wf_arena_strdup(a, NULL));
    ck_assert(!wf_arena_failed(a)); /* a NULL input is not a failure */
    int *z = wf_arena_calloc(a, 100, sizeof *z);
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(z[i], 0);
    ck_assert(!wf_arena_failed(a));
    ck_assert_ptr_null(wf_arena_calloc(a, SIZE_MAX / 2, 4));
    ck_assert(wf_arena_failed(a));
    ck_assert_ptr_null(wf_arena_alloc(a, WF_ARENA_MAX_BYTES + 1));
    ck_assert_uint_ge(wf_arena_used(a), 3 * 1024 * 1024);
    /* The flag is sticky: later successes do not clear it. */
    ck_assert_ptr_nonnull(wf_arena_strdup(a, "after"));
    ck_assert(wf_arena_failed(a));
    wf_arena_free(a);
    wf_arena *b = wf_arena_new();
    ck_assert_ptr_null(wf_arena_alloc(b, WF_ARENA_MAX_BYTES + 1));
    ck_assert(wf_arena_failed(b));
    wf_arena_free(b);
    wf_error err;
    ck_assert_int_eq(wf_error_nomem(&err), WF_E_NOMEM);
    ck_assert_int_eq(err.code, WF_E_NOMEM);
    ck_assert_str_eq(err.msg, "out of memory");
    ck_assert_str_eq(wf_code_reason(WF_E_NOMEM), "OUT_OF_MEMORY");
    ck_assert(!wf_code_is_retryable(WF_E_NOMEM));
    wf_arena_free(NULL);
}
END_TEST

WF_TEST(test_json_escape)
{
    char out[64];
    ck_assert_uint_eq(wf_json_escape(out, sizeof out, "a\"b\\c\n\x01", 7), 15);
    ck_assert_str_eq(out, "a\\\"b\\\\c\\n\\u0001");
    ck_assert_uint_eq(wf_json_escape(out, 4, "abcdef", 6), (size_t)-1);
}
END_TEST

/* Bytes that do not start a valid UTF-8 character become \ufffd, so a
 * log line is valid UTF-8 whatever came from the wire; valid characters
 * pass as they are. */
WF_TEST(test_json_escape_replaces_invalid_utf8)
{
    char out[128];
    const char *in = "caf\xc3\xa9 \xe9 \xc0\xaf \xed\xa0\x80 \xe2\x82 \xf0\x9f\x98\x80";
    ck_assert_uint_ne(wf_json_escape(out, sizeof out, in, strlen(in)), (size_t)-1);
    ck_assert_str_eq(out, "caf\xc3\xa9 \\ufffd \\ufffd\\ufffd \\ufffd\\ufffd\\ufffd "
                          "\\ufffd\\ufffd \xf0\x9f\x98\x80");
    ck_assert(wf_utf8_valid((const unsigned char *)out, strlen(out)));
    ck_assert(!wf_utf8_valid((const unsigned char *)in, strlen(in)));
    ck_assert_uint_eq(wf_utf8_char((const unsigned char *)"\xf0\x9f\x98\x80", 4), 4);
    ck_assert_uint_eq(wf_utf8_char((const unsigned char *)"\xf4\x90\x80\x80", 4), 0);
    ck_assert_uint_eq(wf_utf8_char((const unsigned char *)"a", 0), 0);
}
END_TEST

WF_TEST(test_uuid7_format_and_order)
{
    char a[WF_UUID_LEN + 1], b[WF_UUID_LEN + 1];
    wf_uuid7(a);
    ck_assert(wf_uuid_valid(a));
    ck_assert_int_eq(a[14], '7');
    ck_assert(strchr("89ab", a[19]) != NULL);
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
    wf_uuid7(b);
    ck_assert_str_ne(a, b);
    ck_assert_int_lt(strcmp(a, b), 0); /* time-ordered */
    ck_assert(!wf_uuid_valid("not-a-uuid"));
    ck_assert(!wf_uuid_valid("01a22bfd-f66c-7804-a5e1-00d0fc5fd02g"));
    ck_assert(!wf_uuid_valid(NULL));
}
END_TEST

/* Event data carries times as RFC 3339 UTC text with microseconds; a time
 * before the epoch counts its fraction up from the second below. */
WF_TEST(test_time_rfc3339)
{
    wf_arena *a = wf_arena_new();
    ck_assert_ptr_nonnull(a);
    ck_assert_str_eq(wf_time_rfc3339(a, 0), "1970-01-01T00:00:00.000000Z");
    ck_assert_str_eq(wf_time_rfc3339(a, INT64_C(1714564800123456)), "2024-05-01T12:00:00.123456Z");
    ck_assert_str_eq(wf_time_rfc3339(a, -1), "1969-12-31T23:59:59.999999Z");
    wf_arena_free(a);
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite("core", "core", NULL, NULL, 0));
}
