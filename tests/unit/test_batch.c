/*
 * Unit tests of the chunks of batch operations (engine/batch.c) over the
 * memory store, without a server: the walk in chunks with its cursor and
 * counters, the bound on the first refusals, a cancel that arrives while
 * a chunk runs, a chunk whose lease was taken over, a chunk stopped by
 * its deadline, an instance created after the start, and a dry run.
 */
#include <stdio.h>
#include <string.h>

#include <check.h>

#include "batch.h"
#include "defcache.h"
#include "engine_kit.h"
#include "expr.h"
#include "instances.h"
#include "net_runtime.h"
#include "store.h"
#include "test_support.h"
#include "wf_time.h"

static wf_store *st;
static wf_arena *arena;

#define ck_code(rc, want, err)                                                                     \
    ck_assert_msg((rc) == (want), "%s, want %s: %s", wf_code_reason(rc), wf_code_reason(want),     \
                  (err).msg)

static wf_runtime_ctx
as(const char *actor)
{
    return kit_ctx(actor);
}

static wf_store_ctx
sctx(void)
{
    return (wf_store_ctx){"default", 0, arena};
}

/* n instances of key (s -> work (AUTO job) -> e), oldest first. */
static wf_instance_row *
start_n(const char *key, size_t n)
{
    wf_transition *t = wf_arena_calloc(arena, 1, sizeof *t);
    *t = (wf_transition){.id = "work", .trigger = WF_TRIGGER_AUTO, .job_type = "work"};
    kit_deploy_line(as("dev"), key, t);
    wf_instance_row *v = wf_arena_calloc(arena, n + 1, sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = kit_start_order(as("boss"), key, NULL);
    return v;
}

static wf_batch_view
start_batch(const char *key, wf_batch_action action)
{
    wf_runtime_ctx c = as("ops");
    wf_batch_spec spec = {.action = (int)action,
                          .filter = {.started_by = "*", .definition_key = key},
                          .reason = "tidy"};
    wf_batch_view v;
    wf_error err;
    ck_code(wf_batch_start(&c.ref, &spec, NULL, &v, &err), WF_OK, err);
    return v;
}

static wf_batch_row
claim_one(const char *owner, int64_t now)
{
    wf_store_ctx sc = sctx();
    wf_batch_row *rows = NULL;
    size_t n = 0;
    wf_error err;
    ck_code(wf_store_claim_batches(st, &sc, owner, now, 1000, 1, &rows, &n, &err), WF_OK, err);
    ck_assert_uint_eq(n, 1);
    return rows[0];
}

static wf_batch_row
row_of(const char *id)
{
    wf_store_ctx sc = sctx();
    wf_batch_row r;
    wf_error err;
    ck_code(wf_store_get_batch(st, &sc, id, &r, &err), WF_OK, err);
    return r;
}

static int
status_of(const char *id)
{
    wf_store_ctx sc = sctx();
    wf_instance_row r;
    wf_error err;
    ck_code(wf_store_get_instance(st, &sc, id, &r, &err), WF_OK, err);
    return r.status;
}

static wf_batch_chunk
run(const wf_batch_row *claimed, size_t chunk)
{
    wf_batch_host h = {.store = st, .chunk = chunk};
    wf_batch_chunk c;
    wf_error err;
    ck_code(wf_batch_run_chunk(&h, claimed, 0, &c, &err), WF_OK, err);
    return c;
}

/* Chunks of 2 over 5 instances: the cursor advances, the counters add
 * up, the third chunk completes it and lets the lease go each time. */
WF_TEST(test_walk_in_chunks)
{
    wf_instance_row *in = start_n("k", 5);
    wf_batch_view b = start_batch("k", WF_BATCH_SUSPEND);
    ck_assert_int_eq(b.row.total, 5);
    for (int i = 0; i < 3; i++) {
        wf_batch_row r = claim_one("r1", wf_now_us());
        wf_batch_chunk c = run(&r, 2);
        ck_assert_uint_eq(c.applied, i < 2 ? 2 : 1);
        ck_assert(c.kept);
        ck_assert(c.completed == (i == 2));
        wf_batch_row after = row_of(b.row.id);
        ck_assert_int_eq(after.done, i < 2 ? 2 * (i + 1) : 5);
        ck_assert_ptr_null(after.lease_owner);
        ck_assert_int_eq(after.state, i < 2 ? WF_BATCH_RUNNING : WF_BATCH_COMPLETED);
        if (i < 2)
            ck_assert_ptr_nonnull(after.cursor);
        /* The walk is in creation order. */
        ck_assert_int_eq(status_of(in[2 * i].id), WF_INSTANCE_SUSPENDED);
        if (i < 2)
            ck_assert_int_eq(status_of(in[4].id),
                             i == 2 ? WF_INSTANCE_SUSPENDED : WF_INSTANCE_RUNNING);
    }
    ck_assert_int_eq(row_of(b.row.id).ended_at > 0, 1);
    wf_store_ctx sc = sctx();
    wf_batch_row *rows;
    size_t n;
    wf_error err;
    ck_code(wf_store_claim_batches(st, &sc, "r1", wf_now_us() + 9999999, 1000, 5, &rows, &n, &err),
            WF_OK, err);
    ck_assert_uint_eq(n, 0); /* COMPLETED: never claimed again */
}
END_TEST

/* Twelve refusals: every one counts, the first ten are kept in order. */
WF_TEST(test_first_errors_are_bounded)
{
    wf_instance_row *in = start_n("k", 12);
    for (size_t i = 0; i < 12; i++) {
        wf_runtime_ctx c = as("ops");
        wf_instance_row out;
        wf_error e;
        ck_code(wf_instances_cancel(&c, in[i].id, NULL, false, NULL, &out, &e), WF_OK, e);
    }
    wf_batch_view b = start_batch("k", WF_BATCH_CANCEL); /* every one has ended */
    wf_batch_row r = claim_one("r1", wf_now_us());
    wf_batch_chunk c = run(&r, 50);
    ck_assert_uint_eq(c.refused, 12);
    ck_assert(c.completed);
    wf_runtime_ctx x = as("reader");
    wf_batch_view v;
    wf_error err;
    ck_code(wf_batch_get(&x.ref, b.row.id, &v, &err), WF_OK, err);
    ck_assert_int_eq(v.row.failed, 12);
    ck_assert_int_eq(v.row.done, 0);
    ck_assert_uint_eq(v.n_errors, WF_BATCH_MAX_ERRORS);
    for (size_t i = 0; i < v.n_errors; i++)
        ck_assert_str_eq(v.errors[i].instance_id, in[i].id);
    ck_assert_str_eq(v.errors[0].reason, "INSTANCE_NOT_RUNNING");
}
END_TEST

/* A cancel while a chunk runs: the chunk's actions happened, so its
 * counts are kept and the batch stays CANCELLED; no chunk follows. */
WF_TEST(test_cancel_during_a_chunk_keeps_its_counts)
{
    wf_instance_row *in = start_n("k", 4);
    wf_batch_view b = start_batch("k", WF_BATCH_CANCEL);
    wf_batch_row r = claim_one("r1", wf_now_us());
    wf_runtime_ctx c = as("ops");
    wf_batch_view cv;
    wf_error err;
    ck_code(wf_batch_cancel(&c.ref, b.row.id, NULL, &cv, &err), WF_OK, err);
    ck_assert_int_eq(cv.row.state, WF_BATCH_CANCELLED);
    wf_batch_chunk k = run(&r, 2);
    ck_assert_uint_eq(k.applied, 2);
    ck_assert(k.kept);
    ck_assert(!k.completed);
    wf_batch_row after = row_of(b.row.id);
    ck_assert_int_eq(after.state, WF_BATCH_CANCELLED);
    ck_assert_int_eq(after.done, 2);
    ck_assert_int_eq(status_of(in[2].id), WF_INSTANCE_RUNNING);
    wf_store_ctx sc = sctx();
    wf_batch_row *rows;
    size_t n;
    ck_code(wf_store_claim_batches(st, &sc, "r2", wf_now_us() + 9999999, 1000, 5, &rows, &n, &err),
            WF_OK, err);
    ck_assert_uint_eq(n, 0);
}
END_TEST

/* A chunk that outlived its lease: another replica claimed the batch, so
 * the first one's progress is dropped; the second one's run replays the
 * applied actions and counts each instance once. */
WF_TEST(test_chunk_past_its_lease_is_dropped_and_replayed)
{
    wf_instance_row *in = start_n("k", 3);
    wf_batch_view b = start_batch("k", WF_BATCH_SUSPEND);
    int64_t now = wf_now_us();
    wf_batch_row slow = claim_one("r1", now);
    wf_batch_row fast = claim_one("r2", now + 2000 * 1000); /* r1's lease ran out */
    wf_batch_chunk a = run(&slow, 2);
    ck_assert_uint_eq(a.applied, 2);
    ck_assert(!a.kept);
    ck_assert_int_eq(row_of(b.row.id).done, 0);
    wf_batch_chunk c = run(&fast, 5);
    ck_assert_uint_eq(c.applied, 3);
    ck_assert(c.kept && c.completed);
    wf_batch_row after = row_of(b.row.id);
    ck_assert_int_eq(after.done, 3);
    ck_assert_int_eq(after.total, 3);
    for (size_t i = 0; i < 3; i++)
        ck_assert_int_eq(status_of(in[i].id), WF_INSTANCE_SUSPENDED);
    wf_store_ctx sc = sctx();
    wf_event_filter f = {.types = (const char *const[]){"INSTANCE_SUSPENDED"}, .n_types = 1};
    wf_event_row *ev;
    size_t n;
    wf_error err;
    ck_code(wf_store_read_events(st, &sc, 0, &f, 100, &ev, &n, &err), WF_OK, err);
    ck_assert_uint_eq(n, 3);
}
END_TEST

/* A chunk whose deadline has passed applies nothing, keeps no progress
 * and lets its lease go, so the next claim takes the batch at once. */
WF_TEST(test_chunk_out_of_time_lets_the_lease_go)
{
    start_n("k", 2);
    wf_batch_view b = start_batch("k", WF_BATCH_SUSPEND);
    int64_t now = wf_now_us();
    wf_batch_row r = claim_one("r1", now);
    wf_batch_host h = {.store = st};
    wf_batch_chunk c;
    wf_error err;
    wf_code rc = wf_batch_run_chunk(&h, &r, wf_mono_ms() - 1, &c, &err);
    ck_assert_int_eq(rc, WF_E_DEADLINE_EXCEEDED);
    ck_assert_uint_eq(c.applied, 0);
    wf_batch_row after = row_of(b.row.id);
    ck_assert_int_eq(after.done, 0);
    ck_assert_ptr_null(after.lease_owner);
    wf_batch_row again = claim_one("r2", wf_now_us());
    ck_assert_str_eq(again.lease_owner, "r2");
}
END_TEST

/* The set is fixed at the start: an instance created afterwards is not
 * visited, even when it matches the filter. */
WF_TEST(test_instance_created_after_the_start_is_not_visited)
{
    start_n("k", 2);
    wf_batch_view b = start_batch("k", WF_BATCH_CANCEL);
    wf_instance_row late = kit_start_order(as("boss"), "k", NULL);
    wf_batch_row r = claim_one("r1", wf_now_us());
    wf_batch_chunk c = run(&r, 50);
    ck_assert_uint_eq(c.applied, 2);
    ck_assert(c.completed);
    ck_assert_int_eq(status_of(late.id), WF_INSTANCE_RUNNING);
    ck_assert_int_eq(row_of(b.row.id).done, 2);
}
END_TEST

/* A dry run checks and counts as a start does, and stores nothing: no
 * operation to claim, every instance left as it was. */
WF_TEST(test_dry_run_counts_and_stores_nothing)
{
    wf_instance_row *in = start_n("k", 3);
    start_n("other", 2);
    wf_runtime_ctx c = as("ops");
    wf_batch_spec spec = {.action = WF_BATCH_CANCEL,
                          .filter = {.started_by = "*", .definition_key = "k"},
                          .dry_run = true};
    wf_batch_view v;
    wf_error err;
    ck_code(wf_batch_start(&c.ref, &spec, NULL, &v, &err), WF_OK, err);
    ck_assert_int_eq(v.row.total, 3);
    ck_assert_str_eq(v.row.id, "");
    ck_assert_int_eq(v.row.state, WF_BATCH_RUNNING);
    spec.filter.definition_key = NULL;
    ck_code(wf_batch_start(&c.ref, &spec, NULL, &v, &err), WF_OK, err);
    ck_assert_int_eq(v.row.total, 5);
    /* Its refusals are a start's. */
    spec.action = 0;
    ck_code(wf_batch_start(&c.ref, &spec, NULL, &v, &err), WF_E_INVALID_ARGUMENT, err);
    wf_store_ctx sc = sctx();
    wf_batch_row *rows;
    size_t n;
    ck_code(wf_store_claim_batches(st, &sc, "r1", wf_now_us(), 1000, 5, &rows, &n, &err), WF_OK,
            err);
    ck_assert_uint_eq(n, 0);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(status_of(in[i].id), WF_INSTANCE_RUNNING);
}
END_TEST

/* wf_batch_pass claims and runs one chunk per batch, every batch. */
WF_TEST(test_pass_runs_one_chunk_of_each)
{
    start_n("a", 3);
    start_n("b", 1);
    wf_batch_view x = start_batch("a", WF_BATCH_SUSPEND);
    wf_batch_view y = start_batch("b", WF_BATCH_SUSPEND);
    wf_batch_host h = {.store = st, .chunk = 2};
    size_t chunks = 0;
    wf_error err;
    ck_code(wf_batch_pass(&h, NULL, "r1", 10, 0, &chunks, &err), WF_OK, err);
    ck_assert_uint_eq(chunks, 2);
    ck_assert_int_eq(row_of(x.row.id).done, 2);
    ck_assert_int_eq(row_of(y.row.id).state, WF_BATCH_COMPLETED);
    ck_code(wf_batch_pass(&h, "default", "r1", 10, 0, &chunks, &err), WF_OK, err);
    ck_assert_uint_eq(chunks, 1);
    ck_assert_int_eq(row_of(x.row.id).state, WF_BATCH_COMPLETED);
    ck_code(wf_batch_pass(&h, NULL, "r1", 10, 0, &chunks, &err), WF_OK, err);
    ck_assert_uint_eq(chunks, 0);
}
END_TEST

int
main(void)
{
    kit_fixture(&st, &arena);
    return wf_test_run(wf_test_suite("batch", "chunks", kit_setup, kit_teardown, 0));
}
