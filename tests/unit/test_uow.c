/*
 * Unit tests of the unit of work (server/engine/base/uow.h) over the memory
 * store, without a server: a body runs in one transaction, a lost race
 * (WF_E_CONFLICT) reruns it, and a request id deduplicates: the same
 * request replays the first response without running the body, another
 * request under the same id fails with REQUEST_ID_REUSED, and only
 * successful runs are remembered.
 */
#include <check.h>
#include <string.h>

#include "store.h"
#include "test_support.h"
#include "uow.h"

static wf_store *st;
static wf_arena *arena;
static wf_store_ctx sc;

static void
setup(void)
{
    wf_error err;
    st = wf_store_memory_new(&err);
    ck_assert_ptr_nonnull(st);
    arena = wf_arena_new();
    ck_assert_ptr_nonnull(arena);
    sc = (wf_store_ctx){"default", 0, arena};
}

static void
teardown(void)
{
    wf_store_free(st);
    wf_arena_free(arena);
}

/* A body that counts its runs and answers *script in turn (then WF_OK). */
typedef struct body_state {
    int runs;
    const wf_code *script;
    size_t n_script;
    bool no_record; /* sets idem->no_record */
    wf_uow_idem *idem;
} body_state;

static wf_code
body(wf_tx *tx, void *arg, wf_error *err)
{
    (void)tx;
    body_state *b = arg;
    size_t i = (size_t)b->runs++;
    if (b->no_record)
        b->idem->no_record = true;
    if (i < b->n_script && b->script[i] != WF_OK)
        return wf_error_set(err, b->script[i], "scripted failure %zu", i);
    return WF_OK;
}

/* Encodes the result (a C string) as its bytes. */
static int encodes;

static wf_code
encode(const void *result, void *arg, wf_arena *a, unsigned char **bytes, size_t *len,
       wf_error *err)
{
    (void)arg;
    (void)err;
    encodes++;
    *len = strlen(result);
    *bytes = (unsigned char *)wf_arena_strdup(a, result);
    return WF_OK;
}

static wf_uow_idem
idem_of(const char *request_id, const char *hash)
{
    encodes = 0;
    return (wf_uow_idem){
        .method = "CompleteTask", .request_id = request_id, .request_hash = hash, .encode = encode};
}

static wf_code
run(wf_uow_idem *idem, body_state *b, const char *result, wf_error *err)
{
    if (idem != NULL)
        b->idem = idem;
    wf_error_clear(err);
    return wf_uow_run(st, &sc, idem, body, b, result, err);
}

START_TEST(test_idem_active_needs_a_request_id)
{
    ck_assert(!wf_uow_idem_active(NULL));
    wf_uow_idem none = idem_of(NULL, "h");
    ck_assert(!wf_uow_idem_active(&none));
    wf_uow_idem empty = idem_of("", "h");
    ck_assert(!wf_uow_idem_active(&empty));
    wf_uow_idem one = idem_of("r-1", "h");
    ck_assert(wf_uow_idem_active(&one));
}
END_TEST

START_TEST(test_without_idem_the_body_runs_each_time)
{
    body_state b = {0};
    wf_error err;
    ck_assert_int_eq(run(NULL, &b, "first", &err), WF_OK);
    ck_assert_int_eq(run(NULL, &b, "first", &err), WF_OK);
    ck_assert_int_eq(b.runs, 2);
    /* An empty request id asks for no deduplication either. */
    wf_uow_idem idem = idem_of("", "h");
    ck_assert_int_eq(run(&idem, &b, "first", &err), WF_OK);
    ck_assert(!idem.replayed);
    ck_assert_int_eq(b.runs, 3);
    ck_assert_int_eq(encodes, 0);
}
END_TEST

START_TEST(test_same_request_replays_the_first_response)
{
    body_state b = {0};
    wf_error err;
    wf_uow_idem first = idem_of("r-1", "hash-a");
    ck_assert_int_eq(run(&first, &b, "response one", &err), WF_OK);
    ck_assert(!first.replayed);
    ck_assert_int_eq(encodes, 1);
    wf_uow_idem again = idem_of("r-1", "hash-a");
    ck_assert_int_eq(run(&again, &b, "response two", &err), WF_OK);
    ck_assert(again.replayed);
    ck_assert_int_eq(b.runs, 1); /* the body did not run again */
    ck_assert_int_eq(encodes, 0);
    ck_assert_uint_eq(again.response_len, strlen("response one"));
    ck_assert_int_eq(memcmp(again.response, "response one", again.response_len), 0);
}
END_TEST

START_TEST(test_same_id_other_request_is_refused)
{
    body_state b = {0};
    wf_error err;
    wf_uow_idem first = idem_of("r-2", "hash-a");
    ck_assert_int_eq(run(&first, &b, "one", &err), WF_OK);
    wf_uow_idem other = idem_of("r-2", "hash-b");
    ck_assert_int_eq(run(&other, &b, "two", &err), WF_E_REQUEST_ID_REUSED);
    ck_assert_int_eq(err.code, WF_E_REQUEST_ID_REUSED);
    ck_assert(!other.replayed);
    ck_assert_int_eq(b.runs, 1);
    /* Ids are scoped by method: the same id of another method is new. */
    wf_uow_idem elsewhere = idem_of("r-2", "hash-b");
    elsewhere.method = "ClaimTask";
    ck_assert_int_eq(run(&elsewhere, &b, "three", &err), WF_OK);
    ck_assert(!elsewhere.replayed);
    ck_assert_int_eq(b.runs, 2);
}
END_TEST

START_TEST(test_a_failed_run_is_not_remembered)
{
    static const wf_code fail[] = {WF_E_TASK_NOT_OPEN};
    body_state b = {.script = fail, .n_script = 1};
    wf_error err;
    wf_uow_idem first = idem_of("r-3", "hash-a");
    ck_assert_int_eq(run(&first, &b, "one", &err), WF_E_TASK_NOT_OPEN);
    ck_assert_int_eq(encodes, 0);
    /* The retry with the same id runs again, and is then remembered. */
    wf_uow_idem retry = idem_of("r-3", "hash-a");
    ck_assert_int_eq(run(&retry, &b, "two", &err), WF_OK);
    ck_assert(!retry.replayed);
    ck_assert_int_eq(b.runs, 2);
    wf_uow_idem third = idem_of("r-3", "hash-a");
    ck_assert_int_eq(run(&third, &b, "three", &err), WF_OK);
    ck_assert(third.replayed);
    ck_assert_int_eq(memcmp(third.response, "two", third.response_len), 0);
}
END_TEST

START_TEST(test_conflict_reruns_the_whole_body)
{
    static const wf_code lost[] = {WF_E_CONFLICT, WF_E_CONFLICT};
    body_state b = {.script = lost, .n_script = 2};
    wf_error err;
    wf_uow_idem idem = idem_of("r-4", "hash-a");
    ck_assert_int_eq(run(&idem, &b, "one", &err), WF_OK);
    ck_assert_int_eq(b.runs, 3);
    ck_assert_int_eq(encodes, 1); /* one record, of the run that committed */
}
END_TEST

START_TEST(test_conflicts_give_up_after_a_few_attempts)
{
    static const wf_code lost[] = {WF_E_CONFLICT, WF_E_CONFLICT, WF_E_CONFLICT, WF_E_CONFLICT,
                                   WF_E_CONFLICT, WF_E_CONFLICT, WF_E_CONFLICT, WF_E_CONFLICT,
                                   WF_E_CONFLICT, WF_E_CONFLICT, WF_E_CONFLICT, WF_E_CONFLICT};
    body_state b = {.script = lost, .n_script = sizeof lost / sizeof lost[0]};
    wf_error err;
    ck_assert_int_eq(run(NULL, &b, "one", &err), WF_E_CONFLICT);
    ck_assert_int_gt(b.runs, 1);
    ck_assert_int_lt(b.runs, (int)b.n_script); /* bounded */
}
END_TEST

START_TEST(test_no_record_commits_without_remembering)
{
    body_state b = {.no_record = true};
    wf_error err;
    wf_uow_idem idem = idem_of("r-5", "hash-a");
    ck_assert_int_eq(run(&idem, &b, "one", &err), WF_OK);
    ck_assert_int_eq(encodes, 0);
    wf_uow_idem again = idem_of("r-5", "hash-a");
    ck_assert_int_eq(run(&again, &b, "two", &err), WF_OK);
    ck_assert(!again.replayed);
    ck_assert_int_eq(b.runs, 2);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("uow");
    TCase *tc = tcase_create("memory");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_idem_active_needs_a_request_id);
    tcase_add_test(tc, test_without_idem_the_body_runs_each_time);
    tcase_add_test(tc, test_same_request_replays_the_first_response);
    tcase_add_test(tc, test_same_id_other_request_is_refused);
    tcase_add_test(tc, test_a_failed_run_is_not_remembered);
    tcase_add_test(tc, test_conflict_reruns_the_whole_body);
    tcase_add_test(tc, test_conflicts_give_up_after_a_few_attempts);
    tcase_add_test(tc, test_no_record_commits_without_remembering);
    suite_add_tcase(s, tc);
    return wf_test_run(s);
}
