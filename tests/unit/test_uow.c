/*
 * Unit tests of the unit of work (server/engine/base/uow.h) over the memory
 * store, without a server: a body runs in one transaction, a lost race
 * (WF_E_CONFLICT) reruns it, and a request id deduplicates: the same
 * request replays the first response without running the body, another
 * request under the same id fails with REQUEST_ID_REUSED, and only
 * successful runs are remembered. A call over several units of work
 * (wf_uow_span_begin) records once and amends; a spent key answers again
 * (wf_uow_answer_again).
 */
#include <check.h>
#include <string.h>

#include "store.h"
#include "engine_kit.h"
#include "test_support.h"
#include "uow.h"

static wf_store *st;
static wf_arena *arena;
static wf_store_ctx sc;

static void
setup(void)
{
    kit_setup();
    sc = (wf_store_ctx){"default", 0, arena};
}

/* A body that counts its runs and answers *script in turn (then WF_OK). */
typedef struct body_state {
    int runs;
    const wf_code *script;
    size_t n_script;
    bool no_record; /* wf_uow_idem_skip_record on each run */
    wf_uow_idem *idem;
} body_state;

static wf_code
body(wf_tx *tx, void *arg, wf_error *err)
{
    (void)tx;
    body_state *b = arg;
    size_t i = (size_t)b->runs++;
    if (b->no_record)
        wf_uow_idem_skip_record(b->idem);
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

WF_TEST(test_idem_active_needs_a_request_id)
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

WF_TEST(test_without_idem_the_body_runs_each_time)
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

WF_TEST(test_same_request_replays_the_first_response)
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

WF_TEST(test_same_id_other_request_is_refused)
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

WF_TEST(test_a_failed_run_is_not_remembered)
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

WF_TEST(test_conflict_reruns_the_whole_body)
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

WF_TEST(test_conflicts_give_up_after_a_few_attempts)
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

WF_TEST(test_no_record_commits_without_remembering)
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

WF_TEST(test_span_records_once_then_amends)
{
    body_state b = {.no_record = true};
    wf_error err;
    wf_uow_idem call = idem_of("r-6", "hash-a");
    wf_uow_span_begin(&call);
    /* A unit that fired nothing, then two with an effect. */
    ck_assert_int_eq(run(&call, &b, "none", &err), WF_OK);
    ck_assert_int_eq(encodes, 0);
    b.no_record = false;
    ck_assert_int_eq(run(&call, &b, "first root", &err), WF_OK);
    ck_assert_int_eq(run(&call, &b, "both roots", &err), WF_OK);
    ck_assert(!wf_uow_idem_replayed(&call));
    ck_assert_int_eq(b.runs, 3);
    ck_assert_int_eq(encodes, 2);
    /* A retry answers what the last unit recorded. */
    wf_uow_idem again = idem_of("r-6", "hash-a");
    ck_assert_int_eq(run(&again, &b, "retry", &err), WF_OK);
    ck_assert(wf_uow_idem_replayed(&again));
    ck_assert_int_eq(b.runs, 3);
    ck_assert_uint_eq(again.response_len, strlen("both roots"));
    ck_assert_int_eq(memcmp(again.response, "both roots", again.response_len), 0);
}
END_TEST

WF_TEST(test_span_replays_a_record_made_meanwhile)
{
    body_state b = {.no_record = true};
    wf_error err;
    wf_uow_idem call = idem_of("r-7", "hash-a");
    wf_uow_span_begin(&call);
    ck_assert_int_eq(run(&call, &b, "none", &err), WF_OK);
    /* The same request, sent again, records while the first call runs. */
    body_state other = {0};
    wf_uow_idem twin = idem_of("r-7", "hash-a");
    ck_assert_int_eq(run(&twin, &other, "theirs", &err), WF_OK);
    ck_assert(!wf_uow_idem_replayed(&twin));
    /* The first call's next unit does not look the id up again: its
     * record is refused, and the twin's answer replaces its own. */
    b.no_record = false;
    ck_assert_int_eq(run(&call, &b, "mine", &err), WF_OK);
    ck_assert(wf_uow_idem_replayed(&call));
    ck_assert_int_eq(memcmp(call.response, "theirs", call.response_len), 0);
    wf_uow_idem later = idem_of("r-7", "hash-a");
    ck_assert_int_eq(run(&later, &b, "later", &err), WF_OK);
    ck_assert_int_eq(memcmp(later.response, "theirs", later.response_len), 0);
}
END_TEST

WF_TEST(test_answer_again_on_a_spent_key)
{
    body_state b = {0};
    wf_error err;
    wf_uow_idem first = idem_of("r-8", "hash-a");
    ck_assert_int_eq(run(&first, &b, "done", &err), WF_OK);
    /* The retry finds the key spent: the first answer is due. */
    wf_uow_idem retry = idem_of("r-8", "hash-a");
    wf_error_set(&err, WF_E_JOB_LEASE_LOST, "spent");
    ck_assert_int_eq(wf_uow_answer_again(st, &sc, &retry, WF_E_JOB_LEASE_LOST, &err), WF_OK);
    ck_assert(wf_uow_idem_replayed(&retry));
    ck_assert_int_eq(memcmp(retry.response, "done", retry.response_len), 0);
    /* Another request under the id is refused; a new id keeps the error. */
    wf_uow_idem other = idem_of("r-8", "hash-b");
    ck_assert_int_eq(wf_uow_answer_again(st, &sc, &other, WF_E_JOB_LEASE_LOST, &err),
                     WF_E_REQUEST_ID_REUSED);
    wf_uow_idem fresh = idem_of("r-9", "hash-a");
    wf_error_set(&err, WF_E_JOB_LEASE_LOST, "spent");
    ck_assert_int_eq(wf_uow_answer_again(st, &sc, &fresh, WF_E_JOB_LEASE_LOST, &err),
                     WF_E_JOB_LEASE_LOST);
    ck_assert_int_eq(err.code, WF_E_JOB_LEASE_LOST);
    ck_assert(!wf_uow_idem_replayed(&fresh));
    ck_assert_int_eq(wf_uow_answer_again(st, &sc, NULL, WF_E_JOB_LEASE_LOST, &err),
                     WF_E_JOB_LEASE_LOST);
}
END_TEST

int
main(void)
{
    kit_fixture(&st, &arena);
    return wf_test_run(wf_test_suite("uow", "memory", setup, kit_teardown, 30));
}
