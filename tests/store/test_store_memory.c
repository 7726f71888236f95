/*
 * test_store_memory.c: the store contract suite on the memory store, plus
 * what only the memory store can show deterministically: exactly which
 * commits call the listener, and that it is called with no store lock
 * held. Always runs (no external dependency), so "ran no test" never
 * happens.
 */
#include "store_test.h"

#include <pthread.h>
#include <stdlib.h>

#include "wf_time.h"

static wf_store *
mem_open(int pool_size)
{
    (void)pool_size;
    wf_error err = {0};
    wf_store *st = wf_store_mem_new(&err);
    ck_assert_msg(st != NULL, "memory store: %s", err.msg);
    return st;
}

static void
mem_close(wf_store *st)
{
    wf_store_free(st);
}

static const store_factory memory_factory = {"memory", mem_open, mem_close};

/* ---- memory-only cases ----------------------------------------------------- */

static wf_store *st;
static wf_arena *arena;
static notes heard;

static void
setup(void)
{
    st = mem_open(0);
    arena = wf_arena_new();
    notes_init(&heard);
}

static void
teardown(void)
{
    wf_arena_free(arena);
    wf_store_free(st);
}

static wf_code
apply_and_end(const wf_store_changes *c, bool commit)
{
    wf_store_ctx ctx = {"t1", 0, arena};
    wf_error err = {0};
    wf_tx *tx = NULL;
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_apply(tx, c, &err), WF_OK);
    if (!commit) {
        wf_tx_rollback(tx);
        return WF_OK;
    }
    return wf_tx_commit(tx, &err);
}

/* Synchronous delivery: the callback has run when commit returns, and
 * only commits that wrote events or made a job activatable call it. */
WF_CASE_TEST("memory", test_listener_called_only_for_relevant_commits)
{
    wf_error err = {0};
    ck_assert_int_eq(wf_store_set_listener(st, notes_fn, &heard, &err), WF_OK);
    wf_instance_row r = {.id = "r1",
                         .definition_key = "d",
                         .root_id = "r1",
                         .status = WF_INSTANCE_RUNNING,
                         .created_at = 1,
                         .updated_at = 1};
    ck_assert_int_eq(apply_and_end(&(wf_store_changes){.instances = &r, .n_instances = 1}, true),
                     WF_OK);
    ck_assert_int_eq(notes_count(&heard), 0);

    wf_event_row ev = {0, NULL, "r1", "r1", "E", NULL, "{}", 1};
    wf_job_row job = {.id = "j1",
                      .root_id = "r1",
                      .instance_id = "r1",
                      .job_type = "mail",
                      .state = WF_JOB_ACTIVATABLE,
                      .attempt = 1,
                      .max_attempts = 3,
                      .activatable_at = 1,
                      .created_at = 1};
    wf_job_row job2 = job;
    job2.id = "j2";
    wf_job_row both[] = {job, job2};
    wf_store_changes c = {.events = &ev, .n_events = 1, .jobs = both, .n_jobs = 2};
    ck_assert_int_eq(apply_and_end(&c, false), WF_OK); /* rolled back: nothing */
    ck_assert_int_eq(notes_count(&heard), 0);
    ck_assert_int_eq(apply_and_end(&c, true), WF_OK);
    /* One per distinct (channel, payload), events first. */
    ck_assert_int_eq(notes_count(&heard), 2);
    ck_assert_int_eq(notes_find(&heard, 0, 1, "wf_events", "r1"), 0);
    ck_assert_int_eq(notes_find(&heard, 1, 2, "wf_jobs", "mail"), 1);
}
END_TEST

/* The callback runs after the store's mutex is released: another thread
 * can use the store from inside it (with a lock held it would wait until
 * its deadline). */
static void *
read_from_other_thread(void *arg)
{
    (void)arg;
    wf_arena *a = wf_arena_new();
    wf_store_ctx ctx = {"t1", wf_mono_ms() + 300, a};
    wf_error err = {0};
    wf_event_row *rows;
    size_t n;
    wf_code rc = wf_store_read_events(st, &ctx, 0, NULL, 0, &rows, &n, &err);
    wf_arena_free(a);
    return (void *)(intptr_t)rc;
}

static int unlocked_calls;

static void
probe_fn(void *arg, const char *channel, const char *payload)
{
    (void)arg;
    (void)channel;
    (void)payload;
    pthread_t th;
    void *rc;
    pthread_create(&th, NULL, read_from_other_thread, NULL);
    pthread_join(th, &rc);
    if ((intptr_t)rc == WF_OK)
        unlocked_calls++;
}

WF_CASE_TEST("memory", test_listener_runs_without_the_store_lock)
{
    wf_error err = {0};
    ck_assert_int_eq(wf_store_set_listener(st, probe_fn, NULL, &err), WF_OK);
    wf_event_row ev = {0, NULL, "r1", "r1", "E", NULL, "{}", 1};
    ck_assert_int_eq(apply_and_end(&(wf_store_changes){.events = &ev, .n_events = 1}, true), WF_OK);
    ck_assert_int_eq(unlocked_calls, 1);
}
END_TEST

int
main(void)
{
    contract_factory = &memory_factory;
    Suite *s = store_contract_suite("store_memory");
    wf_test_add_case(s, &(wf_test_case){"memory", setup, teardown, 10});
    return store_run_suite(s);
}
