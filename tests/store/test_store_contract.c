/*
 * test_store_contract.c: the behaviour every store must show, run against
 * whatever contract_factory makes (memory or Postgres). A case written
 * here holds both stores to it; nothing here may depend on which store
 * runs it.
 */
#include "store_test.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store_int.h" /* row descriptors, for field-by-field comparison */
#include "wf_time.h"

const store_factory *contract_factory;

#define S(x) ((char *)(x))
#define T0 INT64_C(1700000000000000) /* a fixed epoch for created_at etc. */

static wf_store *st;
static wf_arena *arena;
static wf_store_ctx ctx;

static void
setup(void)
{
    st = contract_factory->open(8);
    arena = wf_arena_new();
    ck_assert_ptr_nonnull(arena);
    ctx = (wf_store_ctx){"t1", 0, arena};
}

static void
teardown(void)
{
    wf_arena_free(arena);
    contract_factory->close(st);
}

/* ---- helpers ------------------------------------------------------------ */

static wf_instance_row
mk_instance(const char *id, const char *parent, const char *root, int64_t created)
{
    return (wf_instance_row){.id = S(id),
                             .definition_key = S("def"),
                             .definition_version = 1,
                             .parent_id = S(parent),
                             .root_id = S(root),
                             .status = WF_INSTANCE_RUNNING,
                             .variables_json = S("{\"n\":0}"),
                             .started_by = S("alice"),
                             .created_at = created,
                             .updated_at = created};
}

static wf_task_row
mk_task(const char *id, const char *root, wf_assignee_kind kind, const char *who,
        wf_task_status status, int64_t created)
{
    return (wf_task_row){.id = S(id),
                         .instance_id = S(root),
                         .root_id = S(root),
                         .definition_key = S("def"),
                         .title = S("review"),
                         .assignee_kind = kind,
                         .assignee_id = S(who),
                         .status = status,
                         .created_at = created};
}

static wf_job_row
mk_job(const char *id, const char *root, const char *type, int64_t activatable_at)
{
    return (wf_job_row){.id = S(id),
                        .root_id = S(root),
                        .instance_id = S(root),
                        .transition_id = S("t-auto"),
                        .job_type = S(type),
                        .state = WF_JOB_ACTIVATABLE,
                        .attempt = 1,
                        .max_attempts = 3,
                        .activatable_at = activatable_at,
                        .created_at = activatable_at};
}

/* Runs one unit of work that only applies c, asserting success. */
static void
commit_changes(const wf_store_changes *c)
{
    wf_error err = {0};
    wf_tx *tx = NULL;
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_msg(wf_tx_apply(tx, c, &err) == WF_OK, "apply: %s", err.msg);
    ck_assert_msg(wf_tx_commit(tx, &err) == WF_OK, "commit: %s", err.msg);
}

static void
new_root(const char *id, int64_t created)
{
    wf_instance_row r = mk_instance(id, NULL, id, created);
    commit_changes(&(wf_store_changes){.instances = &r, .n_instances = 1});
}

static bool
rows_equal(const wf_row_desc *d, const void *a, const void *b, const char **field)
{
    for (size_t i = 0; i < d->n_fields; i++) {
        const wf_field *f = &d->fields[i];
        const char *x = (const char *)a + f->off, *y = (const char *)b + f->off;
        bool same = true;
        switch (f->type) {
        case WF_F_STR: {
            const char *p = *(char *const *)x, *q = *(char *const *)y;
            same = (p == NULL && q == NULL) || (p != NULL && q != NULL && strcmp(p, q) == 0);
            break;
        }
        case WF_F_BYTES: {
            size_t la = *(const size_t *)((const char *)a + f->len_off);
            size_t lb = *(const size_t *)((const char *)b + f->len_off);
            same = la == lb && (la == 0 || memcmp(*(void *const *)x, *(void *const *)y, la) == 0);
            break;
        }
        case WF_F_I64:
            same = *(const int64_t *)x == *(const int64_t *)y;
            break;
        case WF_F_I32:
            same = *(const int32_t *)x == *(const int32_t *)y;
            break;
        case WF_F_BOOL:
            same = *(const bool *)x == *(const bool *)y;
            break;
        case WF_F_F64:
            same = *(const double *)x == *(const double *)y;
            break;
        }
        if (!same) {
            *field = d->name;
            return false;
        }
    }
    return true;
}

#define ASSERT_ROW_EQ(desc, a, b)                                                                  \
    do {                                                                                           \
        const char *what_ = "";                                                                    \
        ck_assert_msg(rows_equal(&(desc), (a), (b), &what_), "%s row differs (field #%d)", what_,  \
                      __LINE__);                                                                   \
    } while (0)

/* Same rows, in the same order, in every part of two aggregates. */
static bool
aggregates_equal(const wf_aggregate *a, const wf_aggregate *b)
{
    const struct {
        const wf_row_desc *d;
        const void *x, *y;
        size_t nx, ny;
    } parts[] = {
        {&wf_store__instance_desc, a->instances, b->instances, a->n_instances, b->n_instances},
        {&wf_store__task_desc, a->tasks, b->tasks, a->n_tasks, b->n_tasks},
        {&wf_store__token_desc, a->tokens, b->tokens, a->n_tokens, b->n_tokens},
        {&wf_store__work_item_desc, a->work_items, b->work_items, a->n_work_items, b->n_work_items},
        {&wf_store__job_desc, a->jobs, b->jobs, a->n_jobs, b->n_jobs},
        {&wf_store__timer_desc, a->timers, b->timers, a->n_timers, b->n_timers},
        {&wf_store__subscription_desc, a->subscriptions, b->subscriptions, a->n_subscriptions,
         b->n_subscriptions},
    };
    for (size_t p = 0; p < sizeof parts / sizeof parts[0]; p++) {
        if (parts[p].nx != parts[p].ny)
            return false;
        for (size_t i = 0; i < parts[p].nx; i++) {
            const char *what;
            size_t at = i * parts[p].d->size;
            if (!rows_equal(parts[p].d, (const char *)parts[p].x + at,
                            (const char *)parts[p].y + at, &what))
                return false;
        }
    }
    return true;
}

/* ---- cases -------------------------------------------------------------- */

WF_CASE_TEST("contract", test_lock_missing_is_not_found)
{
    wf_error err = {0};
    wf_tx *tx = NULL;
    wf_aggregate g;
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_lock_root(tx, "nope", &g, &err), WF_E_INSTANCE_NOT_FOUND);
    ck_assert_str_eq(err.msg, "instance \"nope\" does not exist");
    /* A failed call poisons the unit of work: only rollback is allowed. */
    ck_assert_int_eq(wf_tx_commit(tx, &err), WF_E_INTERNAL);
}
END_TEST

/* Every field of every row type survives a write and a lock_root read. */
WF_CASE_TEST("contract", test_aggregate_round_trip)
{
    static unsigned char blob[] = {0, 1, 2, 255, 0, 7};
    wf_instance_row inst[2] = {mk_instance("r1", NULL, "r1", T0),
                               mk_instance("c1", "r1", "r1", T0 + 5)};
    inst[0].aggregate_type = S("order");
    inst[0].aggregate_id = S("o-1");
    inst[0].title = S("root \"quoted\" ünïcode");
    inst[1].join_mode = WF_JOIN_QUORUM;
    inst[1].join_quorum = 2;
    inst[1].on_all_completed = blob;
    inst[1].on_all_completed_len = sizeof blob;
    inst[1].join_fired = true;
    inst[1].last_error = S("");
    inst[1].ended_at = T0 + 9;
    wf_task_row task = mk_task("k1", "r1", WF_ASSIGNEE_GROUP, "ops", WF_TASK_CLAIMED, T0 + 1);
    task.instance_id = S("c1");
    task.claimed_by = S("bob");
    task.due_at = T0 + 100;
    task.transition_id = S("approve");
    task.work_item_id = S("w1");
    task.assigned_by = S("alice");
    wf_token_row tok[2] = {{S("tk2"), NULL, S("r1"), S("r1"), S("p1"), 2},
                           {S("tk1"), NULL, S("r1"), S("r1"), S("p0"), 1}};
    wf_work_item_row wi = {S("w1"),
                           NULL,
                           S("r1"),
                           S("r1"),
                           S("approve"),
                           WF_TRIGGER_USER,
                           S("tk1,tk2"),
                           WF_WORK_ITEM_ENABLED,
                           T0 + 2,
                           0,
                           0,
                           0,
                           NULL,
                           NULL,
                           NULL,
                           NULL,
                           S("{\"items\":[1,2],\"st\":[1,2],\"out\":[null,{}],\"done\":1}")};
    wf_job_row job = mk_job("j1", "r1", "mail", T0 + 3);
    job.backoff_multiplier = 1.5;
    job.initial_backoff_ms = 250;
    job.max_backoff_ms = 60000;
    job.variables_json = S("{\"a\":[1,2]}");
    job.idempotency_key = S("idem-1");
    job.compensation = true;
    wf_timer_row tim = {S("tm1"),     NULL,    S("r1"), S("r1"), S("w9"),
                        S("timeout"), T0 + 50, T0 + 4,  0};
    wf_subscription_row sub = {S("s1"),   NULL,         S("r1"),    S("r1"),  S("w8"),
                               S("paid"), S("payment"), S("order"), S("o-1"), T0 + 6};
    wf_store_changes c = {.instances = inst,
                          .n_instances = 2,
                          .tasks = &task,
                          .n_tasks = 1,
                          .tokens = tok,
                          .n_tokens = 2,
                          .work_items = &wi,
                          .n_work_items = 1,
                          .jobs = &job,
                          .n_jobs = 1,
                          .timers = &tim,
                          .n_timers = 1,
                          .subscriptions = &sub,
                          .n_subscriptions = 1};
    commit_changes(&c);

    wf_error err = {0};
    wf_tx *tx = NULL;
    wf_aggregate g;
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_msg(wf_tx_lock_root(tx, "c1", &g, &err) == WF_OK, "%s", err.msg);
    wf_tx_rollback(tx);

    ck_assert_uint_eq(g.n_instances, 2);
    ck_assert_str_eq(g.instances[0].id, "r1"); /* root first */
    for (int i = 0; i < 2; i++) {
        inst[i].tenant = S("t1");
        inst[i].version = 1;
        ASSERT_ROW_EQ(wf_store__instance_desc, &inst[i], &g.instances[i]);
    }
    ck_assert_uint_eq(g.n_tasks, 1);
    task.tenant = S("t1");
    ASSERT_ROW_EQ(wf_store__task_desc, &task, &g.tasks[0]);
    ck_assert_uint_eq(g.n_tokens, 2);
    tok[0].tenant = tok[1].tenant = S("t1");
    ASSERT_ROW_EQ(wf_store__token_desc, &tok[1], &g.tokens[0]); /* oldest first */
    ASSERT_ROW_EQ(wf_store__token_desc, &tok[0], &g.tokens[1]);
    wi.tenant = job.tenant = tim.tenant = sub.tenant = S("t1");
    ck_assert_uint_eq(g.n_work_items, 1);
    ASSERT_ROW_EQ(wf_store__work_item_desc, &wi, &g.work_items[0]);
    ck_assert_uint_eq(g.n_jobs, 1);
    ASSERT_ROW_EQ(wf_store__job_desc, &job, &g.jobs[0]);
    ck_assert_uint_eq(g.n_timers, 1);
    ASSERT_ROW_EQ(wf_store__timer_desc, &tim, &g.timers[0]);
    ck_assert_uint_eq(g.n_subscriptions, 1);
    ASSERT_ROW_EQ(wf_store__subscription_desc, &sub, &g.subscriptions[0]);

    /* Simple reads see the same rows. */
    wf_instance_row got;
    ck_assert_int_eq(wf_store_get_instance(st, &ctx, "c1", &got, &err), WF_OK);
    ASSERT_ROW_EQ(wf_store__instance_desc, &inst[1], &got);
    wf_task_row gt;
    ck_assert_int_eq(wf_store_get_task(st, &ctx, "k1", &gt, &err), WF_OK);
    ASSERT_ROW_EQ(wf_store__task_desc, &task, &gt);
    ck_assert_int_eq(wf_store_get_task(st, &ctx, "k9", &gt, &err), WF_E_TASK_NOT_FOUND);
    ck_assert_str_eq(err.msg, "task \"k9\" does not exist");

    /* With a root hint (the root_id of a row read before) the aggregate is
     * the same; a wrong hint, an instance's own id or another instance's,
     * only costs the lookup. */
    const char *hints[] = {"r1", "c1", "k1"};
    for (size_t h = 0; h < sizeof hints / sizeof hints[0]; h++) {
        wf_aggregate gh;
        ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
        ck_assert_msg(wf_tx_lock_root_hint(tx, "c1", hints[h], &gh, &err) == WF_OK, "%s: %s",
                      hints[h], err.msg);
        wf_tx_rollback(tx);
        ck_assert_msg(aggregates_equal(&g, &gh), "aggregate with hint \"%s\" differs", hints[h]);
    }
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_lock_root_hint(tx, "nope", "r1", &g, &err), WF_E_INSTANCE_NOT_FOUND);
    ck_assert_str_eq(err.msg, "instance \"nope\" does not exist");
    wf_tx_rollback(tx);
}
END_TEST

WF_CASE_TEST("contract", test_rollback_discards_everything)
{
    new_root("r1", T0);
    wf_error err = {0};
    wf_tx *tx = NULL;
    wf_aggregate g;
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_lock_root(tx, "r1", &g, &err), WF_OK);
    wf_instance_row upd = g.instances[0];
    upd.variables_json = S("{\"n\":42}");
    wf_instance_row child = mk_instance("c1", "r1", "r1", T0 + 1);
    wf_instance_row both[2] = {upd, child};
    wf_event_row ev = {0, NULL, S("r1"), S("r1"), S("VARIABLES_SET"), S("alice"), S("{}"), T0};
    const char *del[] = {"nothing"};
    ck_assert_int_eq(wf_tx_apply(tx,
                                 &(wf_store_changes){.instances = both,
                                                     .n_instances = 2,
                                                     .events = &ev,
                                                     .n_events = 1,
                                                     .del_tokens = del,
                                                     .n_del_tokens = 1},
                                 &err),
                     WF_OK);
    wf_tx_rollback(tx);

    wf_instance_row got;
    ck_assert_int_eq(wf_store_get_instance(st, &ctx, "r1", &got, &err), WF_OK);
    ck_assert_str_eq(got.variables_json, "{\"n\":0}");
    ck_assert_int_eq(got.version, 1);
    ck_assert_int_eq(wf_store_get_instance(st, &ctx, "c1", &got, &err), WF_E_INSTANCE_NOT_FOUND);
    wf_event_row *evs;
    size_t n;
    ck_assert_int_eq(wf_store_read_events(st, &ctx, 0, NULL, 0, &evs, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 0);
    wf_tx_rollback(NULL); /* NULL-safe */
}
END_TEST

/* The counted events (metrics) move with commits only, by type. */
WF_CASE_TEST("contract", test_committed_events_are_counted)
{
    wf_store_stats before, after;
    wf_store_get_stats(st, &before);
    wf_event_row ev[3] = {
        {0, NULL, S("r1"), S("r1"), S("INSTANCE_STARTED"), S("alice"), S("{}"), T0},
        {0, NULL, S("r1"), S("r1"), S("INSTANCE_CANCELLED"), S("alice"), S("{}"), T0},
        {0, NULL, S("r1"), S("r1"), S("VARIABLES_SET"), S("alice"), S("{}"), T0},
    };
    wf_error err = {0};
    wf_tx *tx = NULL;
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_apply(tx, &(wf_store_changes){.events = ev, .n_events = 3}, &err),
                     WF_OK);
    wf_tx_rollback(tx);
    wf_store_get_stats(st, &after);
    ck_assert_int_eq(after.events[WF_CNT_INSTANCE_STARTED], before.events[WF_CNT_INSTANCE_STARTED]);
    commit_changes(&(wf_store_changes){.events = ev, .n_events = 3});
    commit_changes(&(wf_store_changes){.events = ev, .n_events = 1});
    wf_store_get_stats(st, &after);
    ck_assert_int_eq(after.events[WF_CNT_INSTANCE_STARTED] - before.events[WF_CNT_INSTANCE_STARTED],
                     2);
    ck_assert_int_eq(
        after.events[WF_CNT_INSTANCE_CANCELLED] - before.events[WF_CNT_INSTANCE_CANCELLED], 1);
    ck_assert_int_eq(after.events[WF_CNT_INSTANCE_COMPLETED],
                     before.events[WF_CNT_INSTANCE_COMPLETED]);
}
END_TEST

WF_CASE_TEST("contract", test_stale_instance_version_is_conflict)
{
    new_root("r1", T0);
    wf_error err = {0};
    wf_tx *tx = NULL;
    wf_instance_row stale = mk_instance("r1", NULL, "r1", T0); /* version 0: "new" */
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(
        wf_tx_apply(tx, &(wf_store_changes){.instances = &stale, .n_instances = 1}, &err),
        WF_E_CONFLICT);
    ck_assert_str_eq(err.msg, "instance \"r1\" was changed concurrently");
    ck_assert_int_eq(wf_tx_commit(tx, &err), WF_E_INTERNAL);

    /* The right version succeeds and bumps it. */
    stale.version = 1;
    commit_changes(&(wf_store_changes){.instances = &stale, .n_instances = 1});
    wf_instance_row got;
    ck_assert_int_eq(wf_store_get_instance(st, &ctx, "r1", &got, &err), WF_OK);
    ck_assert_int_eq(got.version, 2);
}
END_TEST

/* A batch unit of work locks several roots in ascending id order, writes
 * and deletes each one's rows after locking it, and commits (or rolls
 * back) them together; going back to a smaller root is refused, and a
 * plain unit of work still locks one root only. */
WF_CASE_TEST("contract", test_batch_locks_roots_in_order)
{
    const char *ids[] = {"b1", "b2", "b3"}, *tms[] = {"tm1", "tm2", "tm3"};
    for (int i = 0; i < 3; i++) {
        wf_instance_row r = mk_instance(ids[i], NULL, ids[i], T0 + i);
        wf_timer_row tim = {S(tms[i]), NULL, S(ids[i]), S(ids[i]), S("w1"), S("x"), T0, T0, 0};
        commit_changes(
            &(wf_store_changes){.instances = &r, .n_instances = 1, .timers = &tim, .n_timers = 1});
    }
    wf_error err = {0};
    wf_tx *tx = NULL;
    wf_aggregate g;

    /* b1 then b3: each one's timer deleted, an event each; one commit. */
    ck_assert_int_eq(wf_store_begin_batch(st, &ctx, &tx, &err), WF_OK);
    for (int i = 0; i < 3; i += 2) {
        ck_assert_int_eq(wf_tx_lock_root_hint(tx, ids[i], ids[i], &g, &err), WF_OK);
        ck_assert_uint_eq(g.n_timers, 1);
        wf_event_row ev = {0, NULL, S(ids[i]), S(ids[i]), S("TIMER_FIRED"), NULL, S("{}"), T0};
        ck_assert_int_eq(
            wf_tx_apply(tx,
                        &(wf_store_changes){
                            .del_timers = &tms[i], .n_del_timers = 1, .events = &ev, .n_events = 1},
                        &err),
            WF_OK);
    }
    ck_assert(!wf_tx_failed(tx));
    ck_assert_int_eq(wf_tx_commit(tx, &err), WF_OK);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
        ck_assert_int_eq(wf_tx_lock_root(tx, ids[i], &g, &err), WF_OK);
        ck_assert_uint_eq(g.n_timers, i == 1 ? 1 : 0);
        wf_tx_rollback(tx);
    }
    wf_event_row *evs;
    size_t n;
    ck_assert_int_eq(wf_store_read_events(st, &ctx, 0, &(wf_event_filter){0}, 10, &evs, &n, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(evs[0].root_id, "b1");
    ck_assert_str_eq(evs[1].root_id, "b3");

    /* Back from b2 to b1: refused, before the lock with a hint and after
     * it without one; the batch is poisoned and b2's write rolls back. */
    for (int hinted = 0; hinted < 2; hinted++) {
        ck_assert_int_eq(wf_store_begin_batch(st, &ctx, &tx, &err), WF_OK);
        ck_assert_int_eq(wf_tx_lock_root_hint(tx, "b2", "b2", &g, &err), WF_OK);
        ck_assert_int_eq(
            wf_tx_apply(tx, &(wf_store_changes){.del_timers = &tms[1], .n_del_timers = 1}, &err),
            WF_OK);
        ck_assert_int_eq(wf_tx_lock_root_hint(tx, "b1", hinted ? "b1" : NULL, &g, &err),
                         WF_E_INTERNAL);
        ck_assert_str_eq(err.msg, "a batch locks its roots in ascending order");
        ck_assert(wf_tx_failed(tx));
        ck_assert_int_eq(wf_tx_commit(tx, &err), WF_E_INTERNAL);
    }
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_lock_root(tx, "b2", &g, &err), WF_OK);
    ck_assert_uint_eq(g.n_timers, 1);
    /* Not a batch: a second root is refused. */
    ck_assert_int_eq(wf_tx_lock_root(tx, "b3", &g, &err), WF_E_INTERNAL);
    ck_assert_str_eq(err.msg, "a unit of work locked two roots");
    wf_tx_rollback(tx);
}
END_TEST

/* Work-item history: ended items are kept but leave the aggregate; the
 * listing of one instance pages them in (enabled_at, id) order, filtered
 * by state, within the tenant. */
static wf_work_item_row
mk_item(const char *id, const char *inst, wf_work_item_state state, int64_t enabled)
{
    wf_work_item_row w = {.id = S(id),
                          .root_id = S("r1"),
                          .instance_id = S(inst),
                          .transition_id = S("t"),
                          .trigger = WF_TRIGGER_AUTO,
                          .token_ids = S("tk"),
                          .state = state,
                          .enabled_at = enabled};
    return w;
}

/* A definition's live totals (wf_store_fleet_counts): the instances not
 * ended of one version or of every version, roots and children, with
 * their tokens, ENABLED work items and incidents; ended instances, other
 * definitions and other tenants left out. */
static wf_token_row
mk_token(const char *id, const char *root, const char *inst, const char *place)
{
    return (wf_token_row){
        .id = S(id), .root_id = S(root), .instance_id = S(inst), .place_id = S(place)};
}

/* Instance id (root root, version v, status s) with one token in each of
 * places (comma list) and one work item of state ws at transition wt. */
static void
fleet_instance(const wf_store_ctx *c, const char *id, const char *root, int32_t v,
               wf_instance_status s, const char *places, wf_work_item_state ws, const char *wt)
{
    wf_instance_row in = mk_instance(id, strcmp(id, root) != 0 ? root : NULL, root, T0);
    in.definition_version = v;
    in.status = s;
    if (s == WF_INSTANCE_FAILED) {
        in.incident_code = S("JOB_FAILED");
        in.incident_transition_id = S("t2");
    }
    wf_token_row tk[4];
    size_t n = 0;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", places);
    for (char *save = NULL, *p = strtok_r(buf, ",", &save); p != NULL && n < 4;
         p = strtok_r(NULL, ",", &save)) {
        char *tid = wf_arena_printf(arena, "%s-tk%zu", id, n);
        tk[n++] = mk_token(tid, root, id, wf_arena_strdup(arena, p));
    }
    wf_work_item_row w = mk_item(wf_arena_printf(arena, "%s-w", id), id, ws, T0);
    w.root_id = S(root);
    w.transition_id = S(wt);
    wf_store_ctx saved = ctx;
    ctx = *c;
    commit_changes(&(wf_store_changes){.instances = &in,
                                       .n_instances = 1,
                                       .tokens = tk,
                                       .n_tokens = n,
                                       .work_items = &w,
                                       .n_work_items = 1});
    ctx = saved;
}

static int64_t
count_of_element(const wf_element_count *v, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].element_id, id) == 0)
            return v[i].count;
    return 0;
}

WF_CASE_TEST("contract", test_fleet_counts)
{
    wf_store_ctx c2 = {"t2", 0, arena};
    fleet_instance(&ctx, "r1", "r1", 1, WF_INSTANCE_RUNNING, "p1,p1", WF_WORK_ITEM_ENABLED, "t");
    fleet_instance(&ctx, "c1", "r1", 1, WF_INSTANCE_FAILED, "p2", WF_WORK_ITEM_ENABLED, "u");
    fleet_instance(&ctx, "r2", "r2", 2, WF_INSTANCE_SUSPENDED, "p1", WF_WORK_ITEM_ENABLED, "t");
    fleet_instance(&ctx, "r3", "r3", 1, WF_INSTANCE_COMPLETED, "p1", WF_WORK_ITEM_ENABLED, "t");
    fleet_instance(&ctx, "r5", "r5", 1, WF_INSTANCE_RUNNING, "", WF_WORK_ITEM_FINISHED, "t");
    fleet_instance(&c2, "r4", "r4", 1, WF_INSTANCE_RUNNING, "p1", WF_WORK_ITEM_ENABLED, "t");
    wf_error err = {0};
    wf_fleet_counts f;
    ck_assert_int_eq(wf_store_fleet_counts(st, &ctx, "def", 1, &f, &err), WF_OK);
    ck_assert_int_eq(f.live, 3); /* r1, c1, r5 */
    ck_assert_uint_eq(f.n_tokens, 2);
    ck_assert_str_eq(f.tokens[0].element_id, "p1"); /* by element id */
    ck_assert_int_eq(f.tokens[0].count, 2);
    ck_assert_str_eq(f.tokens[1].element_id, "p2");
    ck_assert_int_eq(f.tokens[1].count, 1);
    ck_assert_uint_eq(f.n_enabled, 2);
    ck_assert_int_eq(count_of_element(f.enabled, f.n_enabled, "t"), 1);
    ck_assert_int_eq(count_of_element(f.enabled, f.n_enabled, "u"), 1);
    ck_assert_uint_eq(f.n_incidents, 1);
    ck_assert_str_eq(f.incidents[0].element_id, "t2");
    ck_assert_int_eq(f.incidents[0].count, 1);
    /* Every version: r2 (SUSPENDED) too. */
    ck_assert_int_eq(wf_store_fleet_counts(st, &ctx, "def", 0, &f, &err), WF_OK);
    ck_assert_int_eq(f.live, 4);
    ck_assert_int_eq(count_of_element(f.tokens, f.n_tokens, "p1"), 3);
    ck_assert_int_eq(count_of_element(f.enabled, f.n_enabled, "t"), 2);
    ck_assert_int_eq(wf_store_fleet_counts(st, &ctx, "def", 2, &f, &err), WF_OK);
    ck_assert_int_eq(f.live, 1);
    ck_assert_uint_eq(f.n_incidents, 0);
    /* Another key, another tenant. */
    ck_assert_int_eq(wf_store_fleet_counts(st, &ctx, "nodef", 0, &f, &err), WF_OK);
    ck_assert_int_eq(f.live, 0);
    ck_assert_uint_eq(f.n_tokens + f.n_enabled + f.n_incidents, 0);
    ck_assert_int_eq(wf_store_fleet_counts(st, &c2, "def", 0, &f, &err), WF_OK);
    ck_assert_int_eq(f.live, 1);
    ck_assert_int_eq(count_of_element(f.tokens, f.n_tokens, "p1"), 1);
    /* Refused: no key, a negative version. */
    ck_assert_int_eq(wf_store_fleet_counts(st, &ctx, NULL, 0, &f, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_int_eq(wf_store_fleet_counts(st, &ctx, "def", -1, &f, &err), WF_E_INVALID_ARGUMENT);
}
END_TEST

WF_CASE_TEST("contract", test_work_item_history)
{
    wf_instance_row r = mk_instance("r1", NULL, "r1", T0);
    wf_work_item_row wi[5] = {
        mk_item("w3", "r1", WF_WORK_ITEM_WITHDRAWN, T0 + 3),
        mk_item("w1", "r1", WF_WORK_ITEM_ENABLED, T0 + 1),
        mk_item("w2", "r1", WF_WORK_ITEM_FINISHED, T0 + 2),
        mk_item("w4", "r1", WF_WORK_ITEM_FIRED, T0 + 4),
        mk_item("w0", "other", WF_WORK_ITEM_ENABLED, T0),
    };
    wi[2].finished_at = T0 + 5;
    wi[2].finished_by = S("worker-1");
    wi[2].job_type = S("charge");
    wi[2].deadline = T0 + 9;
    wi[2].assignee_kind = 3;
    wi[2].assignee_id = S("ann,ben");
    wi[2].signal_name = S("paid");
    commit_changes(&(wf_store_changes){
        .instances = &r, .n_instances = 1, .work_items = wi, .n_work_items = 5});
    wf_error err = {0};
    wf_tx *tx = NULL;
    wf_aggregate g;
    /* The aggregate: live items only (ENABLED, FIRED). */
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_lock_root(tx, "r1", &g, &err), WF_OK);
    wf_tx_rollback(tx);
    ck_assert_uint_eq(g.n_work_items, 3);
    ck_assert_str_eq(g.work_items[0].id, "w0");
    ck_assert_str_eq(g.work_items[1].id, "w1");
    ck_assert_str_eq(g.work_items[2].id, "w4");
    /* The history of r1: everything, in enabled order, every field. */
    wf_work_item_row *rows;
    size_t n;
    char *next;
    ck_assert_int_eq(wf_store_list_work_items(st, &ctx, "r1", 0, 0, NULL, &rows, &n, &next, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 4);
    ck_assert_ptr_null(next);
    ck_assert_str_eq(rows[0].id, "w1");
    ck_assert_str_eq(rows[1].id, "w2");
    ck_assert_str_eq(rows[2].id, "w3");
    ck_assert_str_eq(rows[3].id, "w4");
    ck_assert_int_eq(rows[1].state, WF_WORK_ITEM_FINISHED);
    ck_assert_int_eq(rows[1].finished_at, T0 + 5);
    ck_assert_int_eq(rows[1].deadline, T0 + 9);
    ck_assert_int_eq(rows[1].assignee_kind, 3);
    ck_assert_str_eq(rows[1].assignee_id, "ann,ben");
    ck_assert_str_eq(rows[1].job_type, "charge");
    ck_assert_str_eq(rows[1].signal_name, "paid");
    ck_assert_str_eq(rows[1].finished_by, "worker-1");
    ck_assert_ptr_null(rows[0].finished_by);
    /* By state. */
    unsigned ended = (1u << WF_WORK_ITEM_FINISHED) | (1u << WF_WORK_ITEM_FIRED);
    ck_assert_int_eq(
        wf_store_list_work_items(st, &ctx, "r1", ended, 0, NULL, &rows, &n, &next, &err), WF_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(rows[0].id, "w2");
    ck_assert_str_eq(rows[1].id, "w4");
    /* Pages of one. */
    const char *want[] = {"w1", "w2", "w3", "w4"};
    char *cursor = NULL;
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(
            wf_store_list_work_items(st, &ctx, "r1", 0, 1, cursor, &rows, &n, &next, &err), WF_OK);
        ck_assert_uint_eq(n, 1);
        ck_assert_str_eq(rows[0].id, want[i]);
        if (i < 3)
            ck_assert_ptr_nonnull(next);
        else
            ck_assert_ptr_null(next);
        cursor = next;
    }
    ck_assert_int_eq(
        wf_store_list_work_items(st, &ctx, "r1", 0, 1, "bogus", &rows, &n, &next, &err),
        WF_E_INVALID_ARGUMENT);
    /* Another tenant sees none of it. */
    wf_store_ctx c2 = {"t2", 0, arena};
    ck_assert_int_eq(wf_store_list_work_items(st, &c2, "r1", 0, 0, NULL, &rows, &n, &next, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 0);
}
END_TEST

WF_CASE_TEST("contract", test_deletes_remove_rows)
{
    wf_instance_row r = mk_instance("r1", NULL, "r1", T0);
    wf_token_row tok = {S("tk1"), NULL, S("r1"), S("r1"), S("p"), 1};
    wf_work_item_row wi = {S("w1"),  NULL,
                           S("r1"),  S("r1"),
                           S("x"),   WF_TRIGGER_AUTO,
                           S("tk1"), WF_WORK_ITEM_ENABLED,
                           T0,       0,
                           0,        0,
                           NULL,     NULL,
                           NULL,     NULL,
                           NULL};
    wf_job_row job = mk_job("j1", "r1", "mail", T0);
    wf_timer_row tim = {S("tm1"), NULL, S("r1"), S("r1"), S("w1"), S("x"), T0, T0, 0};
    wf_subscription_row sub = {S("s1"), NULL,     S("r1"), S("r1"), S("w1"),
                               S("x"),  S("sig"), NULL,    NULL,    T0};
    commit_changes(&(wf_store_changes){.instances = &r,
                                       .n_instances = 1,
                                       .tokens = &tok,
                                       .n_tokens = 1,
                                       .work_items = &wi,
                                       .n_work_items = 1,
                                       .jobs = &job,
                                       .n_jobs = 1,
                                       .timers = &tim,
                                       .n_timers = 1,
                                       .subscriptions = &sub,
                                       .n_subscriptions = 1});
    const char *tk[] = {"tk1"}, *j[] = {"j1"}, *tm[] = {"tm1"}, *s[] = {"s1"};
    wf_store_changes del = {.del_tokens = tk,
                            .n_del_tokens = 1,
                            .del_jobs = j,
                            .n_del_jobs = 1,
                            .del_timers = tm,
                            .n_del_timers = 1,
                            .del_subscriptions = s,
                            .n_del_subscriptions = 1};
    wf_error err = {0};
    wf_tx *tx = NULL;
    wf_aggregate g;
    /* Deletions address the rows of the root locked: none, none deleted. */
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_apply(tx, &del, &err), WF_E_INTERNAL);
    ck_assert_str_eq(err.msg, "deletions need the root locked");
    wf_tx_rollback(tx);
    /* A unit of work locks one root. */
    new_root("r2", T0);
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_lock_root(tx, "r1", &g, &err), WF_OK);
    ck_assert_int_eq(wf_tx_lock_root(tx, "r1", &g, &err), WF_OK);
    ck_assert_int_eq(wf_tx_lock_root(tx, "r2", &g, &err), WF_E_INTERNAL);
    wf_tx_rollback(tx);

    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_lock_root(tx, "r1", &g, &err), WF_OK);
    ck_assert_msg(wf_tx_apply(tx, &del, &err) == WF_OK, "apply: %s", err.msg);
    ck_assert_msg(wf_tx_commit(tx, &err) == WF_OK, "commit: %s", err.msg);
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_lock_root(tx, "r1", &g, &err), WF_OK);
    wf_tx_rollback(tx);
    ck_assert_uint_eq(g.n_instances, 1);
    ck_assert_uint_eq(g.n_tokens + g.n_jobs + g.n_timers + g.n_subscriptions, 0);
    ck_assert_uint_eq(g.n_work_items, 1); /* work items are history: never deleted */
}
END_TEST

WF_CASE_TEST("contract", test_idempotency_records)
{
    wf_error err = {0};
    wf_tx *tx = NULL;
    wf_idempotency_row rec = {
        NULL, S("StartInstance"), S("req-1"), S("h1"), (unsigned char *)"\x01\x00\x02", 3, T0};
    wf_idempotency_row got;
    bool found = true;
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_idempotency_get(tx, "StartInstance", "req-1", &got, &found, &err),
                     WF_OK);
    ck_assert(!found);
    ck_assert_int_eq(wf_tx_idempotency_put(tx, &rec, &err), WF_OK);
    ck_assert_int_eq(wf_tx_commit(tx, &err), WF_OK);

    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_idempotency_get(tx, "StartInstance", "req-1", &got, &found, &err),
                     WF_OK);
    ck_assert(found);
    rec.tenant = S("t1");
    ASSERT_ROW_EQ(wf_store__idempotency_desc, &rec, &got);
    ck_assert_int_eq(wf_tx_idempotency_put(tx, &rec, &err), WF_E_CONFLICT);
    wf_tx_rollback(tx);

    /* Same request id, other method: a different record. */
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_idempotency_get(tx, "AssignTo", "req-1", &got, &found, &err), WF_OK);
    ck_assert(!found);
    wf_tx_rollback(tx);
}
END_TEST

WF_CASE_TEST("contract", test_definitions_versions_and_listing)
{
    wf_error err = {0};
    wf_tx *tx = NULL;
    int32_t v = 0;
    const char *keys[] = {"b", "a", "b", "c", "a", "b"};
    for (int i = 0; i < 6; i++) {
        wf_definition_row d = {.key = S(keys[i]),
                               .kind = WF_DEF_NET,
                               .name = S("n"),
                               .content = (unsigned char *)"\x00net",
                               .content_len = 4,
                               .content_hash = S("h"),
                               .created_at = T0 + i,
                               .created_by = S("u")};
        ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
        ck_assert_int_eq(wf_tx_put_definition(tx, &d, &v, &err), WF_OK);
        ck_assert_int_eq(wf_tx_commit(tx, &err), WF_OK);
    }
    ck_assert_int_eq(v, 3); /* third "b" */
    wf_definition_row d;
    ck_assert_int_eq(wf_store_get_definition(st, &ctx, "b", 0, &d, &err), WF_OK);
    ck_assert_int_eq(d.version, 3);
    ck_assert_int_eq(d.created_at, T0 + 5);
    ck_assert_uint_eq(d.content_len, 4);
    ck_assert(memcmp(d.content, "\x00net", 4) == 0);
    ck_assert_int_eq(wf_store_get_definition(st, &ctx, "a", 1, &d, &err), WF_OK);
    ck_assert_int_eq(d.created_at, T0 + 1);
    ck_assert_int_eq(wf_store_get_definition(st, &ctx, "a", 7, &d, &err),
                     WF_E_DEFINITION_NOT_FOUND);
    ck_assert_str_eq(err.msg, "version 7 of definition \"a\" does not exist");
    ck_assert_int_eq(wf_store_get_definition(st, &ctx, "zz", 0, &d, &err),
                     WF_E_DEFINITION_NOT_FOUND);
    ck_assert_str_eq(err.msg, "definition \"zz\" does not exist");

    /* Inside a transaction too. */
    bool found;
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_get_definition(tx, "c", 0, &d, &found, &err), WF_OK);
    ck_assert(found && d.version == 1);
    ck_assert_int_eq(wf_tx_get_definition(tx, "zz", 0, &d, &found, &err), WF_OK);
    ck_assert(!found);
    wf_tx_rollback(tx);

    /* Listing in (key, version) order, two per page. */
    const char *want[] = {"a1", "a2", "b1", "b2", "b3", "c1"};
    char *cursor = NULL;
    int seen = 0;
    do {
        wf_definition_row *rows;
        size_t n;
        ck_assert_int_eq(wf_store_list_definitions(st, &ctx, 2, cursor, &rows, &n, &cursor, &err),
                         WF_OK);
        for (size_t i = 0; i < n; i++, seen++) {
            char got[16];
            snprintf(got, sizeof got, "%s%d", rows[i].key, (int)rows[i].version);
            ck_assert_str_eq(got, want[seen]);
        }
    } while (cursor != NULL);
    ck_assert_int_eq(seen, 6);

    /* A key never changes kind: a put of another kind stores nothing. */
    wf_definition_row other = {.key = S("b"),
                               .kind = WF_DEF_AD_HOC,
                               .content_hash = S("h2"),
                               .created_at = T0 + 9,
                               .created_by = S("u")};
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_put_definition(tx, &other, &v, &err), WF_E_DEFINITION_KIND_CONFLICT);
    ck_assert_str_eq(err.msg, "definition \"b\" has versions of another kind");
    wf_tx_rollback(tx);
    ck_assert_int_eq(wf_store_get_definition(st, &ctx, "b", 0, &d, &err), WF_OK);
    ck_assert_int_eq(d.version, 3);
    ck_assert_int_eq(d.kind, WF_DEF_NET);
}
END_TEST

static size_t
list_task_ids(const wf_task_filter *f, char *out, size_t cap)
{
    wf_error err = {0};
    wf_task_row *rows;
    size_t n;
    char *next;
    ck_assert_int_eq(wf_store_list_tasks(st, &ctx, f, 100, NULL, &rows, &n, &next, &err), WF_OK);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        strncat(out, rows[i].id, cap - strlen(out) - 1);
        strncat(out, " ", cap - strlen(out) - 1);
    }
    return n;
}

WF_CASE_TEST("contract", test_inbox_semantics)
{
    new_root("r1", T0);
    wf_task_row t[] = {
        mk_task("k1", "r1", WF_ASSIGNEE_USER, "alice", WF_TASK_OPEN, T0 + 1),
        mk_task("k2", "r1", WF_ASSIGNEE_GROUP, "ops", WF_TASK_OPEN, T0 + 2),
        mk_task("k3", "r1", WF_ASSIGNEE_GROUP, "ops", WF_TASK_CLAIMED, T0 + 3),
        mk_task("k4", "r1", WF_ASSIGNEE_GROUP, "dev", WF_TASK_CLAIMED, T0 + 4),
        mk_task("k5", "r1", WF_ASSIGNEE_USER, "bob", WF_TASK_OPEN, T0 + 5),
        mk_task("k6", "r1", WF_ASSIGNEE_USER, "alice", WF_TASK_DONE, T0 + 6),
        mk_task("k7", "r1", WF_ASSIGNEE_GROUP, "sales", WF_TASK_OPEN, T0 + 7),
    };
    t[2].claimed_by = S("bob");
    t[3].claimed_by = S("alice");
    commit_changes(&(wf_store_changes){.tasks = t, .n_tasks = 7});
    char ids[256];
    const char *groups[] = {"ops", "dev"};
    wf_task_status live[] = {WF_TASK_OPEN, WF_TASK_CLAIMED};

    list_task_ids(&(wf_task_filter){.user = "alice", .groups = groups, .n_groups = 2}, ids,
                  sizeof ids);
    ck_assert_str_eq(ids, "k1 k2 k4 k6 ");
    list_task_ids(
        &(wf_task_filter){
            .user = "alice", .groups = groups, .n_groups = 2, .states = live, .n_states = 2},
        ids, sizeof ids);
    ck_assert_str_eq(ids, "k1 k2 k4 ");
    list_task_ids(&(wf_task_filter){.user = "bob"}, ids, sizeof ids);
    ck_assert_str_eq(ids, "k3 k5 ");
    /* A group's view: its group tasks of any status, narrowed by states. */
    list_task_ids(&(wf_task_filter){.group = "ops"}, ids, sizeof ids);
    ck_assert_str_eq(ids, "k2 k3 ");
    wf_task_status open_only[] = {WF_TASK_OPEN};
    list_task_ids(&(wf_task_filter){.group = "ops", .states = open_only, .n_states = 1}, ids,
                  sizeof ids);
    ck_assert_str_eq(ids, "k2 ");
    ck_assert_uint_eq(list_task_ids(NULL, ids, sizeof ids), 7);
}
END_TEST

/* Rows inserted between pages (before and after the cursor) never make a
 * row present throughout appear twice or not at all. */
WF_CASE_TEST("contract", test_pagination_is_stable)
{
    new_root("r1", T0);
    wf_task_row t[25];
    char idbuf[25][8];
    for (int i = 0; i < 25; i++) {
        snprintf(idbuf[i], sizeof idbuf[i], "k%02d", i);
        /* Pairs share created_at, so the id breaks ties. */
        t[i] = mk_task(idbuf[i], "r1", WF_ASSIGNEE_USER, "alice", WF_TASK_OPEN, T0 + i / 2);
    }
    commit_changes(&(wf_store_changes){.tasks = t, .n_tasks = 25});

    wf_task_filter f = {.user = "alice"};
    int seen[25] = {0}, extra = 0, page = 0;
    char *cursor = NULL;
    int64_t last = 0;
    char last_id[64] = "";
    do {
        wf_error err = {0};
        wf_task_row *rows;
        size_t n;
        ck_assert_int_eq(wf_store_list_tasks(st, &ctx, &f, 10, cursor, &rows, &n, &cursor, &err),
                         WF_OK);
        for (size_t i = 0; i < n; i++) {
            ck_assert(rows[i].created_at > last ||
                      (rows[i].created_at == last && strcmp(rows[i].id, last_id) > 0));
            last = rows[i].created_at;
            snprintf(last_id, sizeof last_id, "%s", rows[i].id);
            if (rows[i].id[0] == 'k')
                seen[atoi(rows[i].id + 1)]++;
            else
                extra++;
        }
        /* Between pages: one row far in the past, one far in the future. */
        char a[16], b[16];
        snprintf(a, sizeof a, "old%d", page);
        snprintf(b, sizeof b, "new%d", page);
        wf_task_row more[2] = {
            mk_task(a, "r1", WF_ASSIGNEE_USER, "alice", WF_TASK_OPEN, T0 - 1000 - page),
            mk_task(b, "r1", WF_ASSIGNEE_USER, "alice", WF_TASK_OPEN, T0 + 1000 + page)};
        commit_changes(&(wf_store_changes){.tasks = more, .n_tasks = 2});
        page++;
    } while (cursor != NULL);
    for (int i = 0; i < 25; i++)
        ck_assert_msg(seen[i] == 1, "task k%02d seen %d times", i, seen[i]);
    ck_assert_int_gt(extra, 0); /* the future rows appear after the cursor */

    wf_error err = {0};
    wf_task_row *rows;
    size_t n;
    char *next;
    ck_assert_int_eq(wf_store_list_tasks(st, &ctx, &f, 10, "garbage", &rows, &n, &next, &err),
                     WF_E_INVALID_ARGUMENT);
    ck_assert_str_eq(err.msg, "invalid page token");
}
END_TEST

/* wf_tx_aggregate_live: a root of the aggregate that has not ended,
 * committed or written by the transaction itself; children do not count. */
WF_CASE_TEST("contract", test_aggregate_live)
{
    wf_instance_row ended = mk_instance("r1", NULL, "r1", T0);
    ended.status = WF_INSTANCE_COMPLETED;
    ended.aggregate_type = S("order");
    ended.aggregate_id = S("o-1");
    wf_instance_row root = mk_instance("r2", NULL, "r2", T0 + 1);
    wf_instance_row child = mk_instance("c2", "r2", "r2", T0 + 2);
    child.aggregate_type = S("order");
    child.aggregate_id = S("o-1");
    wf_instance_row rows[] = {ended, root, child};
    commit_changes(&(wf_store_changes){.instances = rows, .n_instances = 3});
    wf_error err = {0};
    wf_tx *tx = NULL;
    bool live = true;
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_aggregate_live(tx, "order", "o-1", &live, &err), WF_OK);
    ck_assert(!live);
    wf_instance_row failed = mk_instance("r3", NULL, "r3", T0 + 3);
    failed.status = WF_INSTANCE_FAILED;
    failed.aggregate_type = S("order");
    failed.aggregate_id = S("o-1");
    ck_assert_int_eq(
        wf_tx_apply(tx, &(wf_store_changes){.instances = &failed, .n_instances = 1}, &err), WF_OK);
    ck_assert_int_eq(wf_tx_aggregate_live(tx, "order", "o-1", &live, &err), WF_OK);
    ck_assert(live);
    ck_assert_int_eq(wf_tx_aggregate_live(tx, "order", "o-2", &live, &err), WF_OK);
    ck_assert(!live);
    wf_tx_rollback(tx);
}
END_TEST

WF_CASE_TEST("contract", test_list_instances_filters)
{
    /* "def" is AD_HOC, "net" is a NET. */
    wf_error derr = {0};
    wf_tx *tx = NULL;
    int32_t v = 0;
    const char *keys[] = {"def", "net"};
    for (int i = 0; i < 2; i++) {
        wf_definition_row d = {
            .key = S(keys[i]), .kind = i == 0 ? WF_DEF_AD_HOC : WF_DEF_NET, .created_at = T0};
        ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &derr), WF_OK);
        ck_assert_int_eq(wf_tx_put_definition(tx, &d, &v, &derr), WF_OK);
        ck_assert_int_eq(wf_tx_commit(tx, &derr), WF_OK);
    }
    new_root("r1", T0);
    new_root("r2", T0 + 1);
    wf_instance_row r3 = mk_instance("r3", NULL, "r3", T0 + 2);
    r3.started_by = S("bob");
    r3.status = WF_INSTANCE_COMPLETED;
    r3.aggregate_type = S("order");
    r3.aggregate_id = S("o-9");
    wf_instance_row c = mk_instance("c1", "r1", "r1", T0 + 3);
    /* A running NET root and a failed AD_HOC root, neither with children:
     * work has begun in both. */
    wf_instance_row r4 = mk_instance("r4", NULL, "r4", T0 + 4);
    r4.definition_key = S("net");
    wf_instance_row r5 = mk_instance("r5", NULL, "r5", T0 + 5);
    r5.status = WF_INSTANCE_FAILED;
    wf_instance_row rows4[] = {r3, c, r4, r5};
    commit_changes(&(wf_store_changes){.instances = rows4, .n_instances = 4});

    struct {
        wf_instance_filter f;
        const char *want;
    } cases[] = {
        {{.roots_only = true}, "r1 r2 r3 r4 r5 "},
        {{0}, "r1 r2 r3 c1 r4 r5 "},
        {{.started_by = "alice", .roots_only = true}, "r1 r2 r4 r5 "},
        {{.roots_only = true, .begun = WF_BEGUN_NO}, "r2 "},
        {{.roots_only = true, .begun = WF_BEGUN_YES}, "r1 r3 r4 r5 "},
        {{.begun = WF_BEGUN_NO}, "r2 c1 "},
        {{.statuses = (wf_instance_status[]){WF_INSTANCE_COMPLETED}, .n_statuses = 1}, "r3 "},
        {{.aggregate_type = "order", .aggregate_id = "o-9"}, "r3 "},
        {{.definition_key = "other"}, ""},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        wf_error err = {0};
        wf_instance_row *rows;
        size_t n;
        char *next, ids[128] = "";
        ck_assert_int_eq(
            wf_store_list_instances(st, &ctx, &cases[k].f, 0, NULL, &rows, &n, &next, &err), WF_OK);
        for (size_t i = 0; i < n; i++) {
            strcat(ids, rows[i].id);
            strcat(ids, " ");
        }
        ck_assert_msg(strcmp(ids, cases[k].want) == 0, "case %zu: got \"%s\"", k, ids);
    }
}
END_TEST

/* Ids of a listing, space-separated. */
static void
ids_of(const wf_instance_row *rows, size_t n, char *out, size_t cap)
{
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        strncat(out, rows[i].id, cap - strlen(out) - 1);
        strncat(out, " ", cap - strlen(out) - 1);
    }
}

WF_CASE_TEST("contract", test_list_instances_by_time_and_variables)
{
    static const char *const vars[] = {
        "{\"n\":1,\"c\":{\"country\":\"DE\",\"vip\":true}}",
        "{\"n\":1.0,\"c\":{\"country\":\"FR\"},\"tags\":[1,2]}",
        "{\"n\":2,\"c\":{\"country\":\"DE\",\"vip\":null}}",
        "{\"n\":\"1\",\"c\":\"DE\"}",
        "{\"big\":9007199254740993}",
    };
    wf_instance_row rows_in[5];
    for (int i = 0; i < 5; i++) {
        char id[8];
        snprintf(id, sizeof id, "v%d", i + 1);
        rows_in[i] =
            mk_instance(wf_arena_strdup(arena, id), NULL, wf_arena_strdup(arena, id), T0 + i * 10);
        rows_in[i].variables_json = S(vars[i]);
    }
    rows_in[0].ended_at = T0 + 100;
    rows_in[0].status = WF_INSTANCE_COMPLETED;
    rows_in[2].ended_at = T0 + 300;
    rows_in[2].status = WF_INSTANCE_CANCELLED;
    commit_changes(&(wf_store_changes){.instances = rows_in, .n_instances = 5});
    /* Another tenant with the same variables lists nothing here. */
    wf_store_ctx other = {"t2", 0, arena};
    wf_instance_row o = mk_instance("o1", NULL, "o1", T0);
    o.tenant = S("t2");
    o.variables_json = S(vars[0]);
    wf_error oerr = {0};
    wf_tx *tx = NULL;
    ck_assert_int_eq(wf_store_begin(st, &other, &tx, &oerr), WF_OK);
    ck_assert_int_eq(wf_tx_apply(tx, &(wf_store_changes){.instances = &o, .n_instances = 1}, &oerr),
                     WF_OK);
    ck_assert_int_eq(wf_tx_commit(tx, &oerr), WF_OK);

    const char *const n1[] = {"n"}, *const country[] = {"c", "country"},
                      *const vip[] = {"c", "vip"}, *const c[] = {"c"}, *const tags[] = {"tags"},
                      *const big[] = {"big"}, *const none[] = {"nope"};
#define VF(keys, v) {keys, sizeof keys / sizeof keys[0], v}
    wf_var_filter f_n1 = VF(n1, "1"), f_n1s = VF(n1, "\"1\""), f_de = VF(country, "\"DE\""),
                  f_fr = VF(country, "\"FR\""), f_vip_null = VF(vip, "null"),
                  f_vip = VF(vip, "true"), f_c = VF(c, "\"DE\""), f_tag = VF(tags, "1"),
                  f_big = VF(big, "9007199254740993"), f_none = VF(none, "null"),
                  f_n2 = VF(n1, "2"), f_n1r = VF(n1, "1.0");
#undef VF
    struct {
        wf_instance_filter f;
        const char *want;
    } cases[] = {
        {{.created_after = T0 + 10}, "v2 v3 v4 v5 "},
        {{.created_before = T0 + 20}, "v1 v2 "},
        {{.created_after = T0 + 10, .created_before = T0 + 30}, "v2 v3 "},
        {{.ended_after = 1}, "v1 v3 "},
        {{.ended_after = T0 + 101}, "v3 "},
        {{.ended_before = T0 + 300}, "v1 "},
        {{.ended_after = T0 + 100, .ended_before = T0 + 301}, "v1 v3 "},
        /* Numbers by value (1 = 1.0), not the string "1". */
        {{.vars = &f_n1, .n_vars = 1}, "v1 v2 "},
        {{.vars = &f_n1r, .n_vars = 1}, "v1 v2 "},
        {{.vars = &f_n1s, .n_vars = 1}, "v4 "},
        {{.vars = &f_de, .n_vars = 1}, "v1 v3 "},
        {{.vars = (wf_var_filter[]){f_de, f_n1}, .n_vars = 2}, "v1 "},
        {{.vars = (wf_var_filter[]){f_de, f_vip}, .n_vars = 2}, "v1 "},
        /* null matches a variable set to null, never a missing one. */
        {{.vars = &f_vip_null, .n_vars = 1}, "v3 "},
        {{.vars = &f_none, .n_vars = 1}, ""},
        {{.vars = &f_c, .n_vars = 1}, "v4 "},
        /* Arrays are not entered. */
        {{.vars = &f_tag, .n_vars = 1}, ""},
        {{.vars = &f_big, .n_vars = 1}, "v5 "},
        /* Filters that cannot both hold. */
        {{.vars = (wf_var_filter[]){f_de, f_fr}, .n_vars = 2}, ""},
        {{.vars = (wf_var_filter[]){f_n1, f_n2}, .n_vars = 2}, ""},
        {{.vars = (wf_var_filter[]){f_c, f_de}, .n_vars = 2}, ""},
        {{.vars = (wf_var_filter[]){f_de, f_c}, .n_vars = 2}, ""},
        /* With the other filters. */
        {{.vars = &f_de, .n_vars = 1, .created_after = T0 + 1}, "v3 "},
        {{.vars = &f_de, .n_vars = 1, .ended_before = T0 + 200}, "v1 "},
        {{.vars = &f_de,
          .n_vars = 1,
          .statuses = (wf_instance_status[]){WF_INSTANCE_CANCELLED},
          .n_statuses = 1},
         "v3 "},
        {{.vars = &f_de, .n_vars = 1, .started_by = "alice", .definition_key = "def"}, "v1 v3 "},
        {{.vars = &f_de, .n_vars = 1, .started_by = "bob"}, ""},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        wf_error err = {0};
        wf_instance_row *rows;
        size_t n;
        char *next, ids[128];
        ck_assert_msg(wf_store_list_instances(st, &ctx, &cases[k].f, 0, NULL, &rows, &n, &next,
                                              &err) == WF_OK,
                      "case %zu: %s", k, err.msg);
        ids_of(rows, n, ids, sizeof ids);
        ck_assert_msg(strcmp(ids, cases[k].want) == 0, "case %zu: got \"%s\"", k, ids);
    }
    /* Paged one by one, in creation order, the created_after bound kept. */
    char all[128] = "", ids[128];
    char *token = NULL;
    wf_instance_filter f = {.created_after = T0 + 10};
    for (int page = 0; page < 10; page++) {
        wf_error err = {0};
        wf_instance_row *rows;
        size_t n;
        char *next;
        ck_assert_int_eq(wf_store_list_instances(st, &ctx, &f, 1, token, &rows, &n, &next, &err),
                         WF_OK);
        ids_of(rows, n, ids, sizeof ids);
        strcat(all, ids);
        if (next == NULL)
            break;
        token = next;
    }
    ck_assert_str_eq(all, "v2 v3 v4 v5 ");
}
END_TEST

WF_CASE_TEST("contract", test_list_incidents)
{
    wf_instance_row r[5];
    const char *const ids[] = {"f1", "f2", "f3", "ok", "f4"};
    for (int i = 0; i < 5; i++) {
        r[i] = mk_instance(ids[i], NULL, ids[i], T0 + i);
        r[i].status = WF_INSTANCE_FAILED;
        r[i].incident_code = S(i == 1 ? "NO_ARC_MATCHED" : "JOB_FAILED");
        r[i].incident_transition_id = S("t-auto");
        r[i].incident_attempts = i + 1;
        r[i].last_error = S("boom");
        /* f3 failed first, then f1, then f2: listed by incident time. */
        r[i].incident_at = T0 + (i == 2 ? 1 : 10 + i);
    }
    r[3].status = WF_INSTANCE_RUNNING; /* resolved: code cleared */
    r[3].incident_code = NULL;
    r[3].incident_at = 0;
    r[4].definition_key = S("other");
    /* A failed child of f1 is an incident of its own. */
    wf_instance_row child = mk_instance("f1c", "f1", "f1", T0 + 9);
    child.status = WF_INSTANCE_FAILED;
    child.incident_code = S("DEADLOCKED");
    child.incident_at = T0 + 100;
    wf_instance_row all[6] = {r[0], r[1], r[2], r[3], r[4], child};
    commit_changes(&(wf_store_changes){.instances = all, .n_instances = 6});

    struct {
        wf_incident_filter f;
        const char *want;
    } cases[] = {
        {{0}, "f3 f1 f2 f4 f1c "},
        {{.definition_key = "def"}, "f3 f1 f2 f1c "},
        {{.definition_key = "other"}, "f4 "},
        {{.code = "NO_ARC_MATCHED"}, "f2 "},
        {{.code = "JOB_FAILED", .definition_key = "def"}, "f3 f1 "},
        {{.code = "DEADLOCKED", .definition_key = "other"}, ""},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        wf_error err = {0};
        wf_instance_row *rows;
        size_t n;
        char *next, got[128];
        ck_assert_int_eq(
            wf_store_list_incidents(st, &ctx, &cases[k].f, 0, NULL, &rows, &n, &next, &err), WF_OK);
        ids_of(rows, n, got, sizeof got);
        ck_assert_msg(strcmp(got, cases[k].want) == 0, "case %zu: got \"%s\"", k, got);
    }
    /* The fields round-trip; pages of two follow (incident_at, id). */
    char seen[128] = "", got[128];
    char *token = NULL;
    for (int page = 0; page < 5; page++) {
        wf_error err = {0};
        wf_instance_row *rows;
        size_t n;
        char *next;
        ck_assert_int_eq(wf_store_list_incidents(st, &ctx, NULL, 2, token, &rows, &n, &next, &err),
                         WF_OK);
        for (size_t i = 0; i < n; i++)
            if (strcmp(rows[i].id, "f2") == 0) {
                ck_assert_str_eq(rows[i].incident_code, "NO_ARC_MATCHED");
                ck_assert_str_eq(rows[i].incident_transition_id, "t-auto");
                ck_assert_int_eq(rows[i].incident_attempts, 2);
                ck_assert(rows[i].incident_at == T0 + 11);
                ck_assert_str_eq(rows[i].last_error, "boom");
            }
        ids_of(rows, n, got, sizeof got);
        strcat(seen, got);
        if (next == NULL)
            break;
        token = next;
    }
    ck_assert_str_eq(seen, "f3 f1 f2 f4 f1c ");
    /* Another tenant sees none of them. */
    wf_store_ctx other = {"t2", 0, arena};
    wf_error err = {0};
    wf_instance_row *rows;
    size_t n;
    char *next;
    ck_assert_int_eq(wf_store_list_incidents(st, &other, NULL, 0, NULL, &rows, &n, &next, &err),
                     WF_OK);
    ck_assert_int_eq(n, 0);
}
END_TEST

WF_CASE_TEST("contract", test_tenant_isolation)
{
    /* Tenant t1 writes everything; t2 sees none of it. */
    wf_instance_row r = mk_instance("r1", NULL, "r1", T0);
    r.aggregate_type = S("order");
    r.aggregate_id = S("o-1");
    wf_task_row task = mk_task("k1", "r1", WF_ASSIGNEE_USER, "alice", WF_TASK_OPEN, T0);
    wf_job_row job = mk_job("j1", "r1", "mail", T0);
    wf_subscription_row sub = {S("s1"), NULL,      S("r1"),    S("r1"),  S("w"),
                               S("x"),  S("paid"), S("order"), S("o-1"), T0};
    wf_signal_row sig = {.id = S("g1"),
                         .signal_id = S("dedupe-1"),
                         .name = S("paid"),
                         .aggregate_type = S("order"),
                         .aggregate_id = S("o-1"),
                         .outcome = WF_SIGNAL_BUFFERED,
                         .buffered = true,
                         .received_at = T0,
                         .expires_at = INT64_MAX / 2};
    wf_event_row ev = {0, NULL, S("r1"), S("r1"), S("INSTANCE_STARTED"), S("alice"), S("{}"), T0};
    wf_idempotency_row rec = {NULL, S("M"), S("req"), S("h"), NULL, 0, T0};
    wf_definition_row def = {.key = S("def"), .kind = WF_DEF_AD_HOC, .created_at = T0};
    wf_error err = {0};
    wf_tx *tx = NULL;
    int32_t v;
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_apply(tx,
                                 &(wf_store_changes){.instances = &r,
                                                     .n_instances = 1,
                                                     .tasks = &task,
                                                     .n_tasks = 1,
                                                     .jobs = &job,
                                                     .n_jobs = 1,
                                                     .subscriptions = &sub,
                                                     .n_subscriptions = 1,
                                                     .signals = &sig,
                                                     .n_signals = 1,
                                                     .events = &ev,
                                                     .n_events = 1},
                                 &err),
                     WF_OK);
    ck_assert_int_eq(wf_tx_idempotency_put(tx, &rec, &err), WF_OK);
    ck_assert_int_eq(wf_tx_put_definition(tx, &def, &v, &err), WF_OK);
    ck_assert_int_eq(wf_tx_commit(tx, &err), WF_OK);

    wf_store_ctx c2 = {"t2", 0, arena};
    wf_instance_row gi;
    wf_task_row gt;
    wf_job_row *jobs;
    wf_task_row *tasks;
    wf_instance_row *insts;
    wf_subscription_row *subs;
    wf_signal_row *sigs;
    wf_event_row *evs;
    wf_definition_row *defs, gd;
    size_t n;
    char *next;
    ck_assert_int_eq(wf_store_get_instance(st, &c2, "r1", &gi, &err), WF_E_INSTANCE_NOT_FOUND);
    ck_assert_int_eq(wf_store_get_task(st, &c2, "k1", &gt, &err), WF_E_TASK_NOT_FOUND);
    ck_assert_int_eq(wf_store_get_definition(st, &c2, "def", 0, &gd, &err),
                     WF_E_DEFINITION_NOT_FOUND);
    ck_assert_int_eq(wf_store_list_tasks(st, &c2, NULL, 0, NULL, &tasks, &n, &next, &err), WF_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(wf_store_list_instances(st, &c2, NULL, 0, NULL, &insts, &n, &next, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(wf_store_list_definitions(st, &c2, 0, NULL, &defs, &n, &next, &err), WF_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(wf_store_list_signals(st, &c2, NULL, 0, NULL, &sigs, &n, &next, &err), WF_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(
        wf_store_activate_jobs(st, &c2, "mail", "w", 10, 1000, T0 + 1, &jobs, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(
        wf_store_find_subscriptions(st, &c2, "paid", NULL, "order", "o-1", &subs, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(wf_store_read_events(st, &c2, 0, NULL, 0, &evs, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 0);

    wf_aggregate g;
    wf_idempotency_row gr;
    bool found = true;
    wf_signal_row gs;
    ck_assert_int_eq(wf_store_begin(st, &c2, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_idempotency_get(tx, "M", "req", &gr, &found, &err), WF_OK);
    ck_assert(!found);
    ck_assert_int_eq(
        wf_tx_consume_signal(tx, "paid", NULL, "order", "o-1", "x", "t", T0 + 1, &gs, &found, &err),
        WF_OK);
    ck_assert(!found);
    /* The same signal id is free in another tenant. */
    ck_assert_int_eq(wf_tx_apply(tx, &(wf_store_changes){.signals = &sig, .n_signals = 1}, &err),
                     WF_OK);
    ck_assert_int_eq(wf_tx_lock_root(tx, "r1", &g, &err), WF_E_INSTANCE_NOT_FOUND);
    wf_tx_rollback(tx);

    /* And t1 still sees its own. */
    ck_assert_int_eq(wf_store_get_instance(st, &ctx, "r1", &gi, &err), WF_OK);
    ck_assert_str_eq(gi.tenant, "t1");
}
END_TEST

/* Activation in a unit of work with a bound on the answer's bytes. */
static wf_code
activate_bounded(const char *type, size_t max, size_t max_bytes, wf_job_row **rows, size_t *n,
                 wf_error *err)
{
    wf_tx *tx = NULL;
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, err), WF_OK);
    wf_code rc = wf_tx_activate_jobs(tx, type, "w", max, max_bytes, 1000, T0 + 10, rows, n, err);
    if (rc != WF_OK) {
        wf_tx_rollback(tx);
        return rc;
    }
    ck_assert_int_eq(wf_tx_commit(tx, err), WF_OK);
    return WF_OK;
}

WF_CASE_TEST("contract", test_job_activation_bounded_by_bytes)
{
    new_root("r1", T0);
    char *big = wf_arena_alloc(arena, 3001);
    memset(big, 'x', 3000);
    big[3000] = '\0';
    wf_job_row jobs[3] = {mk_job("j1", "r1", "big", T0), mk_job("j2", "r1", "big", T0 + 1),
                          mk_job("j3", "r1", "big", T0 + 2)};
    for (int i = 0; i < 3; i++)
        jobs[i].variables_json = big;
    commit_changes(&(wf_store_changes){.jobs = jobs, .n_jobs = 3});

    /* Each job counts 3000 + 1024 bytes: two fit in 9000, the third is
     * not leased and stays activatable. */
    wf_error err = {0};
    wf_job_row *rows;
    size_t n;
    ck_assert_int_eq(activate_bounded("big", 10, 9000, &rows, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(rows[0].id, "j1");
    ck_assert_str_eq(rows[1].id, "j2");

    /* The third alone passes 4000: refused, not leased. */
    ck_assert_int_eq(activate_bounded("big", 10, 4000, &rows, &n, &err), WF_E_VARIABLES_TOO_LARGE);
    ck_assert_ptr_nonnull(strstr(err.msg, "job \"j3\""));
    ck_assert_int_eq(activate_bounded("big", 10, 0, &rows, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(rows[0].id, "j3");
}
END_TEST

/* A page stops before the send limit: rows of 2000 bytes of variables
 * against 5000 bytes a page give pages of 2, 2 and 1, chained by tokens. */
WF_CASE_TEST("contract", test_pages_bounded_by_bytes)
{
    char *big = wf_arena_alloc(arena, 2011);
    snprintf(big, 2011, "{\"x\":\"%02000d\"}", 0);
    for (int i = 0; i < 5; i++) {
        char id[8];
        snprintf(id, sizeof id, "p%d", i);
        wf_instance_row r = mk_instance(id, NULL, id, T0 + i);
        r.variables_json = big;
        commit_changes(&(wf_store_changes){.instances = &r, .n_instances = 1});
    }
    wf_store_set_page_bytes(st, 5000);
    wf_error err = {0};
    size_t sizes[3] = {2, 2, 1}, seen = 0;
    char *token = NULL;
    for (int page = 0; page < 3; page++) {
        wf_instance_row *rows;
        size_t n;
        char *next;
        ck_assert_int_eq(
            wf_store_list_instances(st, &ctx, NULL, 500, token, &rows, &n, &next, &err), WF_OK);
        ck_assert_uint_eq(n, sizes[page]);
        for (size_t i = 0; i < n; i++) {
            char id[8];
            snprintf(id, sizeof id, "p%zu", seen++);
            ck_assert_str_eq(rows[i].id, id);
        }
        if (page < 2)
            ck_assert_ptr_nonnull(next);
        else
            ck_assert_ptr_null(next);
        token = next;
    }
    /* Events come in batches bounded alike. */
    wf_event_row evs[3];
    for (int i = 0; i < 3; i++)
        evs[i] = (wf_event_row){.root_id = S("p0"),
                                .instance_id = S("p0"),
                                .type = S("VARIABLES_SET"),
                                .data_json = big,
                                .time = T0 + i};
    commit_changes(&(wf_store_changes){.events = evs, .n_events = 3});
    ck_assert_int_eq(wf_store_sequence_events(st, &ctx, &err), WF_OK);
    wf_event_row *got;
    size_t ng;
    const wf_event_filter ef = {.instance_id = "p0"};
    ck_assert_int_eq(wf_store_read_events(st, &ctx, 0, &ef, 100, &got, &ng, &err), WF_OK);
    ck_assert_uint_eq(ng, 2);
    ck_assert_int_eq(wf_store_read_events(st, &ctx, got[1].sequence, &ef, 100, &got, &ng, &err),
                     WF_OK);
    ck_assert_uint_eq(ng, 1);

    /* A budget below one row still gives one row a page. */
    wf_store_set_page_bytes(st, 100);
    wf_instance_row *rows;
    size_t n;
    char *next;
    ck_assert_int_eq(wf_store_list_instances(st, &ctx, NULL, 500, NULL, &rows, &n, &next, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_ptr_nonnull(next);
}
END_TEST

/* The rank: activatable_at less priority times the aging step, the
 * priority held to 0-100; k steps of waiting are worth k points. */
WF_CASE_TEST("contract", test_job_rank_arithmetic)
{
    const int64_t step = 1000000;
    ck_assert_int_eq(wf_store_job_rank(T0, 0, step), T0);
    ck_assert_int_eq(wf_store_job_rank(T0, 50, step), T0 - 50 * step);
    ck_assert_int_eq(wf_store_job_rank(T0, 100, 1000), T0 - 100000);
    ck_assert_int_eq(wf_store_job_rank(T0, 101, step), wf_store_job_rank(T0, 100, step));
    ck_assert_int_eq(wf_store_job_rank(T0, -3, step), T0);
    for (int32_t p = 0; p <= 90; p += 15)
        for (int k = 0; k <= 10; k++)
            ck_assert_int_eq(wf_store_job_rank(T0, p, step),
                             wf_store_job_rank(T0 + k * step, p + k, step));
    /* One microsecond later at the same priority ranks after. */
    ck_assert_int_lt(wf_store_job_rank(T0, 40, step), wf_store_job_rank(T0 + 1, 40, step));
}
END_TEST

static wf_job_row
mk_job_p(const char *id, const char *type, int64_t activatable_at, int32_t priority)
{
    wf_job_row j = mk_job(id, "r1", type, activatable_at);
    j.priority = priority;
    return j;
}

/* Activation takes the lowest rank first (the default step, 1 s per
 * point): a higher priority first at the same age, an older job first at
 * the same priority, an old low-priority job before a new high one once
 * it has waited more steps than the points between them; a job whose
 * backoff has not run out is skipped whatever its rank, and a rewrite
 * with another priority moves the job. */
WF_CASE_TEST("contract", test_job_activation_by_priority_and_age)
{
    const int64_t s = 1000000;
    new_root("r1", T0);
    wf_job_row jobs[6] = {
        mk_job_p("pa", "prio", T0, 50),        mk_job_p("pb", "prio", T0 + 5, 80),
        mk_job_p("pc", "prio", T0 + 1, 50),    mk_job_p("pd", "prio", T0 - 90 * s, 0),
        mk_job_p("pe", "prio", T0 + 500, 100), mk_job_p("pf", "prio", T0 + 2, 90),
    };
    commit_changes(&(wf_store_changes){.jobs = jobs, .n_jobs = 6});
    wf_job_row moved = jobs[1];
    moved.priority = 10; /* pb: now behind pa and pc */
    commit_changes(&(wf_store_changes){.jobs = &moved, .n_jobs = 1});
    wf_error err = {0};
    wf_job_row *rows;
    size_t n;
    ck_assert_int_eq(
        wf_store_activate_jobs(st, &ctx, "prio", "w1", 10, 1000, T0 + 10, &rows, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 5);
    /* pf (90) goes before pa and pc (50), which came before it; pd (0)
     * has waited 90 s, 2 µs longer than 90 points are worth: before pf. */
    const char *want[5] = {"pd", "pf", "pa", "pc", "pb"};
    for (size_t i = 0; i < 5; i++) {
        ck_assert_str_eq(rows[i].id, want[i]);
        ck_assert_int_eq(rows[i].rank,
                         wf_store_job_rank(rows[i].activatable_at, rows[i].priority, s));
    }
    ck_assert_int_eq(rows[4].priority, 10);
    /* pe comes once its backoff has run out. */
    ck_assert_int_eq(
        wf_store_activate_jobs(st, &ctx, "prio", "w1", 10, 1000, T0 + 500, &rows, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(rows[0].id, "pe");
    ck_assert_int_eq(rows[0].priority, 100);
}
END_TEST

static wf_job_row
mk_job_k(const char *id, int64_t activatable_at, int32_t priority, const char *key)
{
    wf_job_row j = mk_job_p(id, "fair", activatable_at, priority);
    j.fairness_key = key != NULL ? S(key) : NULL;
    return j;
}

/* Ids of an activation of up to max "fair" jobs at now, joined by ' '. */
static char *
activate_fair(size_t max, int64_t now)
{
    static char ids[256];
    wf_error err = {0};
    wf_job_row *rows;
    size_t n;
    ck_assert_int_eq(
        wf_store_activate_jobs(st, &ctx, "fair", "w1", max, 1000, now, &rows, &n, &err), WF_OK);
    ids[0] = '\0';
    for (size_t i = 0; i < n; i++)
        snprintf(ids + strlen(ids), sizeof ids - strlen(ids), "%s%s", i > 0 ? " " : "", rows[i].id);
    return ids;
}

/* Fairness keys: a pass first takes the head (lowest rank) of each key
 * waiting, those by rank, then fills by rank over every key; the jobs
 * without a key are one key. A key's backlog of older jobs (big) does not
 * hold back the single jobs of other keys, a higher priority still goes
 * first among the heads (c1), and within a key the order is the rank. */
WF_CASE_TEST("contract", test_job_activation_by_fairness_key)
{
    new_root("r1", T0);
    wf_job_row jobs[24];
    char id[16][8];
    size_t n = 0;
    for (int i = 0; i < 16; i++) {
        snprintf(id[i], sizeof id[i], "b%02d", i);
        jobs[n++] = mk_job_k(id[i], T0 + i, 50, "big");
    }
    jobs[n++] = mk_job_k("a1", T0 + 100, 50, "a");
    jobs[n++] = mk_job_k("c1", T0 + 101, 90, "c");
    jobs[n++] = mk_job_k("n1", T0 + 102, 50, NULL);
    jobs[n++] = mk_job_k("n2", T0 + 103, 50, "");
    commit_changes(&(wf_store_changes){.jobs = jobs, .n_jobs = n});
    ck_assert_str_eq(activate_fair(5, T0 + 1000), "c1 b00 a1 n1 b01");
    ck_assert_str_eq(activate_fair(5, T0 + 1000), "b02 n2 b03 b04 b05");
    ck_assert_str_eq(activate_fair(3, T0 + 1000), "b06 b07 b08");
}
END_TEST

WF_CASE_TEST("contract", test_job_activation_and_leases)
{
    new_root("r1", T0);
    wf_job_row jobs[4] = {mk_job("j1", "r1", "mail", T0 + 2), mk_job("j2", "r1", "mail", T0 + 1),
                          mk_job("j3", "r1", "mail", T0 + 500), mk_job("j4", "r1", "sms", T0)};
    wf_job_row failed = mk_job("j5", "r1", "mail", T0);
    failed.state = WF_JOB_FAILED;
    wf_job_row all[5] = {jobs[0], jobs[1], jobs[2], jobs[3], failed};
    commit_changes(&(wf_store_changes){.jobs = all, .n_jobs = 5});

    wf_error err = {0};
    wf_job_row *rows;
    size_t n;
    int64_t now = T0 + 10;
    ck_assert_int_eq(wf_store_activate_jobs(st, &ctx, "mail", "w1", 10, 1000, now, &rows, &n, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(rows[0].id, "j2"); /* by activatable_at */
    ck_assert_str_eq(rows[1].id, "j1");
    ck_assert_int_eq(rows[0].state, WF_JOB_ACTIVATED);
    ck_assert_str_eq(rows[0].worker, "w1");
    ck_assert_int_eq(rows[0].lease_expires_at, now + 1000 * 1000);
    ck_assert_int_eq(rows[0].attempt, 1);
    ck_assert_ptr_nonnull(rows[0].key);
    char *key1 = rows[0].key;

    wf_job_row byk;
    ck_assert_int_eq(wf_store_get_job_by_key(st, &ctx, key1, &byk, &err), WF_OK);
    ck_assert_str_eq(byk.id, "j2");

    /* Leased jobs are not handed out again while the lease holds. */
    ck_assert_int_eq(
        wf_store_activate_jobs(st, &ctx, "mail", "w2", 10, 1000, now + 1, &rows, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 0);

    /* After expiry neither: activation takes the next activatable job (j3)
     * and the scheduler finds the run-out lease and gives the job back (as
     * ACTIVATABLE, without its key) in a unit of work. */
    int64_t later = now + 2000 * 1000;
    ck_assert_int_eq(
        wf_store_activate_jobs(st, &ctx, "mail", "w2", 1, 1000, later, &rows, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(rows[0].id, "j3");
    ck_assert_int_eq(wf_store_find_expired_leases(st, &ctx, later, 10, &rows, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 2); /* same expiry: by id */
    ck_assert_str_eq(rows[0].id, "j1");
    ck_assert_str_eq(rows[1].id, "j2");
    wf_job_row back[2] = {rows[0], rows[1]};
    for (int i = 0; i < 2; i++) {
        back[i].state = WF_JOB_ACTIVATABLE;
        back[i].key = NULL;
        back[i].worker = NULL;
        back[i].lease_expires_at = 0;
    }
    commit_changes(&(wf_store_changes){.jobs = back, .n_jobs = 2});

    /* Then it is leased again, with a new key and the same attempt. */
    ck_assert_int_eq(
        wf_store_activate_jobs(st, &ctx, "mail", "w2", 1, 1000, later, &rows, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(rows[0].id, "j2");
    ck_assert_str_eq(rows[0].worker, "w2");
    ck_assert_int_eq(rows[0].attempt, 1);
    ck_assert_str_ne(rows[0].key, key1);
    ck_assert_int_eq(wf_store_get_job_by_key(st, &ctx, key1, &byk, &err), WF_E_JOB_NOT_FOUND);

    /* The store writes no event: JOB_ACTIVATED is the engine's. */
    wf_event_row *evs;
    const char *types[] = {"JOB_ACTIVATED"};
    ck_assert_int_eq(wf_store_read_events(st, &ctx, 0,
                                          &(wf_event_filter){.types = types, .n_types = 1}, 0, &evs,
                                          &n, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 0);

    /* The aggregate still holds every job, leased or not. */
    wf_tx *tx = NULL;
    wf_aggregate g;
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_lock_root(tx, "r1", &g, &err), WF_OK);
    ck_assert_uint_eq(g.n_jobs, 5);
    wf_tx_rollback(tx);
}
END_TEST

WF_CASE_TEST("contract", test_due_timers_are_claimed_once)
{
    new_root("r1", T0);
    wf_timer_row t[3] = {
        {S("tm2"), NULL, S("r1"), S("r1"), S("w"), S("x"), T0 + 20, T0, 0},
        {S("tm1"), NULL, S("r1"), S("r1"), S("w"), S("x"), T0 + 10, T0, 0},
        {S("tm3"), NULL, S("r1"), S("r1"), S("w"), S("x"), T0 + 999, T0, 0},
    };
    commit_changes(&(wf_store_changes){.timers = t, .n_timers = 3});
    /* A timer of another tenant is due too: the scheduler sees all tenants. */
    wf_store_ctx c2 = {"t2", 0, arena};
    wf_timer_row o = {S("tmX"), NULL, S("rX"), S("rX"), S("w"), S("x"), T0 + 15, T0, 0};
    wf_error err = {0};
    wf_tx *tx = NULL;
    ck_assert_int_eq(wf_store_begin(st, &c2, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_apply(tx, &(wf_store_changes){.timers = &o, .n_timers = 1}, &err),
                     WF_OK);
    ck_assert_int_eq(wf_tx_commit(tx, &err), WF_OK);

    wf_store_ctx sched = {NULL, 0, arena};
    wf_timer_row *rows;
    size_t n;
    int64_t now = T0 + 100;
    ck_assert_int_eq(wf_store_claim_due_timers(st, &sched, now, 10, 5000, &rows, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(rows[0].id, "tm1");
    ck_assert_str_eq(rows[1].id, "tmX");
    ck_assert_str_eq(rows[1].tenant, "t2");
    ck_assert_str_eq(rows[2].id, "tm2");
    ck_assert_str_eq(rows[2].root_id, "r1");
    ck_assert_int_eq(rows[0].claimed_until, now + 5000 * 1000);
    /* Claimed: not handed out again until the claim runs out. */
    ck_assert_int_eq(wf_store_claim_due_timers(st, &sched, now + 1, 10, 5000, &rows, &n, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(
        wf_store_claim_due_timers(st, &sched, now + 5000 * 1000, 1, 5000, &rows, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(rows[0].id, "tm1");
}
END_TEST

/* ---- schedules ------------------------------------------------------------ */

static wf_schedule_row
mk_schedule(const char *id, int64_t created)
{
    return (wf_schedule_row){.id = S(id),
                             .definition_key = S("nightly"),
                             .spec_json = S("{\"cron\":\"@daily\"}"),
                             .overlap = WF_OVERLAP_SKIP,
                             .catchup_window_ms = 60000,
                             .state = WF_SCHEDULE_ACTIVE,
                             .next_fire_at = created + 1000,
                             .due_at = created + 1000,
                             .created_by = S("ops"),
                             .created_at = created,
                             .updated_at = created};
}

static void
put_schedule(const wf_store_ctx *c, const wf_schedule_row *s)
{
    wf_error err = {0};
    wf_tx *tx = NULL;
    ck_assert_int_eq(wf_store_begin(st, c, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_put_schedule(tx, s, &err), WF_OK);
    ck_assert_int_eq(wf_tx_commit(tx, &err), WF_OK);
}

static wf_code
put_run(const wf_store_ctx *c, const char *schedule_id, int64_t nominal, wf_error *err)
{
    wf_schedule_run_row r = {.schedule_id = S(schedule_id),
                             .nominal_at = nominal,
                             .actual_at = nominal + 5,
                             .outcome = WF_RUN_STARTED,
                             .instance_id = S("i-1")};
    wf_tx *tx = NULL;
    wf_code rc = wf_store_begin(st, c, &tx, err);
    if (rc == WF_OK)
        rc = wf_tx_put_schedule_run(tx, &r, err);
    if (rc == WF_OK)
        return wf_tx_commit(tx, err);
    wf_tx_rollback(tx);
    return rc;
}

/* Stored at version 1, read back field by field, invisible to another
 * tenant; a second schedule with the id is SCHEDULE_ALREADY_EXISTS; an
 * update needs the stored version. */
WF_CASE_TEST("contract", test_schedule_round_trip_and_versions)
{
    wf_schedule_row s = mk_schedule("nightly-report", T0);
    s.variables_json = S("{\"a\":1}");
    s.aggregate_type = S("order");
    s.aggregate_id = S("o-1");
    s.note = S("reports");
    put_schedule(&ctx, &s);
    wf_error err = {0};
    wf_schedule_row got;
    ck_assert_int_eq(wf_store_get_schedule(st, &ctx, "nightly-report", &got, &err), WF_OK);
    s.tenant = S("t1");
    s.version = 1;
    ASSERT_ROW_EQ(wf_store__schedule_desc, &s, &got);
    wf_store_ctx c2 = {"t2", 0, arena};
    ck_assert_int_eq(wf_store_get_schedule(st, &c2, "nightly-report", &got, &err),
                     WF_E_SCHEDULE_NOT_FOUND);

    wf_tx *tx = NULL;
    wf_schedule_row again = mk_schedule("nightly-report", T0);
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_put_schedule(tx, &again, &err), WF_E_SCHEDULE_ALREADY_EXISTS);
    wf_tx_rollback(tx);

    got.state = WF_SCHEDULE_PAUSED;
    got.pause_reason = S("maintenance");
    ck_assert_int_eq(wf_store_update_schedule(st, &ctx, &got, &err), WF_OK);
    ck_assert_int_eq(wf_store_update_schedule(st, &ctx, &got, &err), WF_E_CONFLICT);
    ck_assert_int_eq(wf_store_get_schedule(st, &ctx, "nightly-report", &got, &err), WF_OK);
    ck_assert_int_eq(got.version, 2);
    ck_assert_str_eq(got.pause_reason, "maintenance");
    wf_schedule_row none = mk_schedule("nope", T0);
    none.version = 1;
    ck_assert_int_eq(wf_store_update_schedule(st, &ctx, &none, &err), WF_E_SCHEDULE_NOT_FOUND);
}
END_TEST

/* A claim takes ACTIVE, due, unheld schedules in (due_at, id) order and
 * holds them for the lease; paused ones and those with no fire time left
 * never come. */
WF_CASE_TEST("contract", test_schedule_claims)
{
    wf_schedule_row a = mk_schedule("sa", T0), b = mk_schedule("sb", T0 - 500);
    wf_schedule_row paused = mk_schedule("sc", T0), ended = mk_schedule("sd", T0),
                    later = mk_schedule("se", T0 + 1000000);
    paused.state = WF_SCHEDULE_PAUSED;
    ended.next_fire_at = ended.due_at = 0;
    put_schedule(&ctx, &a);
    put_schedule(&ctx, &b);
    put_schedule(&ctx, &paused);
    put_schedule(&ctx, &ended);
    put_schedule(&ctx, &later);
    wf_store_ctx c2 = {"t2", 0, arena};
    wf_schedule_row other = mk_schedule("sx", T0);
    put_schedule(&c2, &other);

    wf_error err = {0};
    wf_schedule_row *rows;
    size_t n;
    int64_t now = T0 + 2000;
    ck_assert_int_eq(wf_store_claim_schedules(st, &ctx, "r1", now, 1000, 10, &rows, &n, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(rows[0].id, "sb");
    ck_assert_str_eq(rows[1].id, "sa");
    ck_assert_str_eq(rows[0].lease_owner, "r1");
    ck_assert_int_eq(rows[0].version, 2);
    wf_store_ctx all = {NULL, 0, arena};
    ck_assert_int_eq(wf_store_claim_schedules(st, &all, "r2", now, 1000, 10, &rows, &n, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(rows[0].id, "sx");
    /* The holder died: after the lease another replica claims (and se
     * has fallen due meanwhile). */
    ck_assert_int_eq(
        wf_store_claim_schedules(st, &ctx, "r2", now + 1000 * 1000, 1000, 10, &rows, &n, &err),
        WF_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(rows[2].id, "se");
    ck_assert_str_eq(rows[0].lease_owner, "r2");
}
END_TEST

/* A fire time is recorded once: a second run of it is CONFLICT and a
 * rollback leaves none; runs list newest first, paged; deleting the
 * schedule deletes its runs. */
WF_CASE_TEST("contract", test_schedule_runs_unique_and_listed)
{
    wf_schedule_row s = mk_schedule("s1", T0);
    put_schedule(&ctx, &s);
    wf_error err = {0};
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(put_run(&ctx, "s1", T0 + i * 1000, &err), WF_OK);
    ck_assert_int_eq(put_run(&ctx, "s1", T0 + 1000, &err), WF_E_CONFLICT);
    wf_store_ctx c2 = {"t2", 0, arena};
    ck_assert_int_eq(put_run(&c2, "s1", T0 + 1000, &err), WF_OK); /* another tenant's */

    wf_schedule_run_row *rows;
    size_t n;
    char *next = NULL;
    ck_assert_int_eq(wf_store_list_schedule_runs(st, &ctx, "s1", 2, NULL, &rows, &n, &next, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(rows[0].nominal_at, T0 + 2000);
    ck_assert_int_eq(rows[1].nominal_at, T0 + 1000);
    ck_assert_str_eq(rows[0].instance_id, "i-1");
    ck_assert_int_eq(rows[0].outcome, WF_RUN_STARTED);
    ck_assert_ptr_nonnull(next);
    ck_assert_int_eq(wf_store_list_schedule_runs(st, &ctx, "s1", 2, next, &rows, &n, &next, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(rows[0].nominal_at, T0);
    ck_assert_ptr_null(next);

    wf_schedule_row *list;
    ck_assert_int_eq(wf_store_list_schedules(st, &ctx, 10, NULL, &list, &n, &next, &err), WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(wf_store_delete_schedule(st, &ctx, "s1", &err), WF_OK);
    ck_assert_int_eq(wf_store_delete_schedule(st, &ctx, "s1", &err), WF_E_SCHEDULE_NOT_FOUND);
    ck_assert_int_eq(wf_store_list_schedule_runs(st, &ctx, "s1", 10, NULL, &rows, &n, &next, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(wf_store_list_schedule_runs(st, &c2, "s1", 10, NULL, &rows, &n, &next, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 1);
}
END_TEST

/* A resource is inserted at version 1 and read back field by field,
 * invisible to another tenant; a second insert of the name and an update
 * of another version are CONFLICT; an update or a delete of a missing
 * one is RESOURCE_NOT_FOUND; listing is newest first. */
WF_CASE_TEST("contract", test_resource_versions_and_listing)
{
    wf_resource_row r = {.name = S("charges"),
                         .capacity = 2,
                         .per_key = 1,
                         .rate_limit = 10,
                         .rate_period_ms = 60000,
                         .strategy = WF_RESOURCE_QUEUE,
                         .created_by = S("ops"),
                         .created_at = T0,
                         .updated_at = T0};
    wf_error err = {0};
    ck_assert_int_eq(wf_store_save_resource(st, &ctx, &r, &err), WF_OK);
    ck_assert_int_eq(wf_store_save_resource(st, &ctx, &r, &err), WF_E_CONFLICT);
    wf_resource_row got;
    ck_assert_int_eq(wf_store_get_resource(st, &ctx, "charges", &got, &err), WF_OK);
    r.tenant = S("t1");
    r.version = 1;
    ASSERT_ROW_EQ(wf_store__resource_desc, &r, &got);
    wf_store_ctx c2 = {"t2", 0, arena};
    ck_assert_int_eq(wf_store_get_resource(st, &c2, "charges", &got, &err),
                     WF_E_RESOURCE_NOT_FOUND);

    got.capacity = 3;
    ck_assert_int_eq(wf_store_save_resource(st, &ctx, &got, &err), WF_OK);
    ck_assert_int_eq(wf_store_save_resource(st, &ctx, &got, &err), WF_E_CONFLICT);
    ck_assert_int_eq(wf_store_get_resource(st, &ctx, "charges", &got, &err), WF_OK);
    ck_assert_int_eq(got.version, 2);
    ck_assert_int_eq(got.capacity, 3);
    wf_resource_row none = {.name = S("nope"), .capacity = 1, .version = 1};
    ck_assert_int_eq(wf_store_save_resource(st, &ctx, &none, &err), WF_E_RESOURCE_NOT_FOUND);

    wf_resource_row later = {.name = S("carrier"), .capacity = 1, .created_at = T0 + 1};
    ck_assert_int_eq(wf_store_save_resource(st, &ctx, &later, &err), WF_OK);
    wf_resource_row *list;
    size_t n = 0;
    char *next = NULL;
    ck_assert_int_eq(wf_store_list_resources(st, &ctx, 1, NULL, &list, &n, &next, &err), WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(list[0].name, "carrier");
    ck_assert_ptr_nonnull(next);
    ck_assert_int_eq(wf_store_list_resources(st, &ctx, 1, next, &list, &n, &next, &err), WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(list[0].name, "charges");
    ck_assert_ptr_null(next);

    ck_assert_int_eq(wf_store_delete_resource(st, &ctx, "charges", &err), WF_OK);
    ck_assert_int_eq(wf_store_delete_resource(st, &ctx, "charges", &err), WF_E_RESOURCE_NOT_FOUND);
    ck_assert_int_eq(wf_store_list_resources(st, &c2, 10, NULL, &list, &n, &next, &err), WF_OK);
    ck_assert_uint_eq(n, 0);
}
END_TEST

/* Settles the run r (its BUFFERED row) in a unit of work of its own. */
static wf_code
settle_run(const wf_store_ctx *c, const wf_schedule_run_row *r, wf_error *err)
{
    wf_tx *tx = NULL;
    wf_code rc = wf_store_begin(st, c, &tx, err);
    if (rc == WF_OK)
        rc = wf_tx_settle_schedule_run(tx, r, err);
    if (rc == WF_OK)
        return wf_tx_commit(tx, err);
    wf_tx_rollback(tx);
    return rc;
}

/* A BUFFERED run is settled once: the first settle writes the run (the
 * new columns read back), a second one, or one of a fire time with no
 * BUFFERED run, is CONFLICT and changes nothing. */
WF_CASE_TEST("contract", test_schedule_run_settled_once)
{
    wf_schedule_row s = mk_schedule("s1", T0);
    put_schedule(&ctx, &s);
    wf_schedule_run_row r = {.schedule_id = S("s1"),
                             .nominal_at = T0,
                             .actual_at = T0 + 5,
                             .outcome = WF_RUN_BUFFERED,
                             .buffered_at = T0 + 5};
    wf_error err = {0};
    wf_tx *tx = NULL;
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_put_schedule_run(tx, &r, &err), WF_OK);
    ck_assert_int_eq(wf_tx_commit(tx, &err), WF_OK);

    wf_schedule_run_row started = r;
    started.outcome = WF_RUN_STARTED;
    started.actual_at = T0 + 900;
    started.instance_id = S("i-2");
    started.cancelled_instance_id = S("i-1");
    ck_assert_int_eq(settle_run(&ctx, &started, &err), WF_OK);
    wf_schedule_run_row again = started;
    again.instance_id = S("i-3");
    ck_assert_int_eq(settle_run(&ctx, &again, &err), WF_E_CONFLICT);
    wf_schedule_run_row none = started;
    none.nominal_at = T0 + 1000;
    ck_assert_int_eq(settle_run(&ctx, &none, &err), WF_E_CONFLICT);

    wf_schedule_run_row *rows;
    size_t n;
    char *next = NULL;
    ck_assert_int_eq(wf_store_list_schedule_runs(st, &ctx, "s1", 10, NULL, &rows, &n, &next, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 1);
    started.tenant = S("t1");
    ASSERT_ROW_EQ(wf_store__schedule_run_desc, &started, &rows[0]);

    wf_schedule_row got;
    ck_assert_int_eq(wf_store_get_schedule(st, &ctx, "s1", &got, &err), WF_OK);
    got.buffered_at = T0;
    ck_assert_int_eq(wf_store_update_schedule(st, &ctx, &got, &err), WF_OK);
    ck_assert_int_eq(wf_store_get_schedule(st, &ctx, "s1", &got, &err), WF_OK);
    ck_assert_int_eq(got.buffered_at, T0);
}
END_TEST

/* ---- batch operations --------------------------------------------------- */

static wf_batch_row
mk_batch(const char *id, int64_t created)
{
    return (wf_batch_row){.id = S(id),
                          .action = WF_BATCH_CANCEL,
                          .state = WF_BATCH_RUNNING,
                          .filter_json = S("{}"),
                          .created_by = S("ops"),
                          .total = 3,
                          .errors_json = S("[]"),
                          .created_at = created,
                          .updated_at = created};
}

static void
put_batch(const wf_store_ctx *c, const wf_batch_row *b)
{
    wf_error err = {0};
    wf_tx *tx = NULL;
    ck_assert_int_eq(wf_store_begin(st, c, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_put_batch(tx, b, &err), WF_OK);
    ck_assert_int_eq(wf_tx_commit(tx, &err), WF_OK);
}

/* Stored at version 1, read back field by field, invisible to another
 * tenant; a second row with the id is CONFLICT; a rollback leaves none. */
WF_CASE_TEST("contract", test_batch_round_trip_and_tenant_scope)
{
    wf_batch_row b = mk_batch("b1", T0);
    b.reason = S("cleanup");
    b.cursor = S("17,abc");
    put_batch(&ctx, &b);
    wf_error err = {0};
    wf_batch_row got;
    ck_assert_int_eq(wf_store_get_batch(st, &ctx, "b1", &got, &err), WF_OK);
    ck_assert_int_eq(got.version, 1);
    b.tenant = S("t1");
    b.version = 1;
    ASSERT_ROW_EQ(wf_store__batch_desc, &b, &got);
    wf_store_ctx c2 = {"t2", 0, arena};
    ck_assert_int_eq(wf_store_get_batch(st, &c2, "b1", &got, &err), WF_E_BATCH_OPERATION_NOT_FOUND);
    ck_assert_int_eq(err.code, WF_E_BATCH_OPERATION_NOT_FOUND);

    wf_tx *tx = NULL;
    wf_batch_row again = mk_batch("b1", T0);
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_put_batch(tx, &again, &err), WF_E_CONFLICT);
    wf_tx_rollback(tx);
    wf_batch_row gone = mk_batch("b2", T0);
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_put_batch(tx, &gone, &err), WF_OK);
    wf_tx_rollback(tx);
    ck_assert_int_eq(wf_store_get_batch(st, &ctx, "b2", &got, &err),
                     WF_E_BATCH_OPERATION_NOT_FOUND);
}
END_TEST

/* An update needs the stored version and stores the next; a stale one is
 * CONFLICT and changes nothing; a missing row is NOT_FOUND. */
WF_CASE_TEST("contract", test_batch_update_is_versioned)
{
    wf_batch_row b = mk_batch("b1", T0);
    put_batch(&ctx, &b);
    wf_error err = {0};
    wf_batch_row got;
    ck_assert_int_eq(wf_store_get_batch(st, &ctx, "b1", &got, &err), WF_OK);
    got.done = 2;
    got.cursor = S("5,x");
    ck_assert_int_eq(wf_store_update_batch(st, &ctx, &got, &err), WF_OK);
    got.done = 99; /* still version 1: stale */
    ck_assert_int_eq(wf_store_update_batch(st, &ctx, &got, &err), WF_E_CONFLICT);
    ck_assert_int_eq(wf_store_get_batch(st, &ctx, "b1", &got, &err), WF_OK);
    ck_assert_int_eq(got.version, 2);
    ck_assert_int_eq(got.done, 2);
    ck_assert_str_eq(got.cursor, "5,x");
    wf_batch_row none = mk_batch("nope", T0);
    none.version = 1;
    ck_assert_int_eq(wf_store_update_batch(st, &ctx, &none, &err), WF_E_BATCH_OPERATION_NOT_FOUND);
}
END_TEST

/* A claim takes RUNNING rows whose lease ran out, of every tenant or of
 * one, in (lease_until, id) order, sets the lease and bumps the version;
 * a held lease keeps the row from every other claim until it runs out
 * (a dead holder's batch is then claimed again); ended rows never come
 * back. */
WF_CASE_TEST("contract", test_batch_claims_and_leases)
{
    wf_batch_row a = mk_batch("ba", T0), b = mk_batch("bb", T0 + 1), done = mk_batch("bc", T0);
    b.lease_until = T0 + 5; /* let go at T0 + 5: behind ba */
    done.state = WF_BATCH_COMPLETED;
    put_batch(&ctx, &a);
    put_batch(&ctx, &b);
    put_batch(&ctx, &done);
    wf_store_ctx c2 = {"t2", 0, arena};
    wf_batch_row other = mk_batch("bx", T0);
    put_batch(&c2, &other);

    wf_error err = {0};
    wf_batch_row *rows;
    size_t n;
    int64_t now = T0 + 100;
    ck_assert_int_eq(wf_store_claim_batches(st, &ctx, "r1", now, 1000, 10, &rows, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 2); /* this tenant's two running ones */
    ck_assert_str_eq(rows[0].id, "ba");
    ck_assert_str_eq(rows[1].id, "bb");
    ck_assert_str_eq(rows[0].lease_owner, "r1");
    ck_assert_int_eq(rows[0].lease_until, now + 1000 * 1000);
    ck_assert_int_eq(rows[0].version, 2);
    /* Held: no other claim gets them, of this tenant or of all. */
    wf_store_ctx all = {NULL, 0, arena};
    ck_assert_int_eq(wf_store_claim_batches(st, &all, "r2", now + 1, 1000, 10, &rows, &n, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(rows[0].id, "bx");
    ck_assert_str_eq(rows[0].tenant, "t2");
    /* The holder died: once the lease has run out, another replica claims. */
    ck_assert_int_eq(
        wf_store_claim_batches(st, &ctx, "r2", now + 1000 * 1000, 1000, 1, &rows, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(rows[0].id, "ba");
    ck_assert_str_eq(rows[0].lease_owner, "r2");
    ck_assert_int_eq(rows[0].version, 3);
    /* The first holder's write of its chunk is now stale. */
    wf_batch_row mine = a;
    mine.tenant = S("t1");
    mine.version = 2;
    mine.done = 1;
    ck_assert_int_eq(wf_store_update_batch(st, &ctx, &mine, &err), WF_E_CONFLICT);
    /* Ended: never claimed again. */
    wf_batch_row cur = rows[0];
    cur.state = WF_BATCH_CANCELLED;
    ck_assert_int_eq(wf_store_update_batch(st, &ctx, &cur, &err), WF_OK);
    ck_assert_int_eq(
        wf_store_claim_batches(st, &ctx, "r3", now + 9000 * 1000, 1000, 10, &rows, &n, &err),
        WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(rows[0].id, "bb");
}
END_TEST

/* Newest first, by (created_at, id) descending, paged; one tenant only. */
WF_CASE_TEST("contract", test_batch_list_newest_first)
{
    const char *ids[] = {"b1", "b3", "b2", "b4"};
    const int64_t at[] = {T0, T0 + 2, T0 + 2, T0 + 3};
    for (size_t i = 0; i < 4; i++) {
        wf_batch_row b = mk_batch(ids[i], at[i]);
        put_batch(&ctx, &b);
    }
    wf_store_ctx c2 = {"t2", 0, arena};
    wf_batch_row o = mk_batch("b9", T0 + 9);
    put_batch(&c2, &o);
    wf_error err = {0};
    wf_batch_row *rows;
    size_t n;
    char *next = NULL;
    ck_assert_int_eq(wf_store_list_batches(st, &ctx, 3, NULL, &rows, &n, &next, &err), WF_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(rows[0].id, "b4");
    ck_assert_str_eq(rows[1].id, "b3");
    ck_assert_str_eq(rows[2].id, "b2");
    ck_assert_ptr_nonnull(next);
    ck_assert_int_eq(wf_store_list_batches(st, &ctx, 3, next, &rows, &n, &next, &err), WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(rows[0].id, "b1");
    ck_assert_ptr_null(next);
}
END_TEST

/* A tree whose root is SUSPENDED: none of its jobs is leased and none of
 * its due timers claimed; the rows of a running tree beside it are. */
WF_CASE_TEST("contract", test_suspended_tree_leases_no_job_and_claims_no_timer)
{
    wf_instance_row s = mk_instance("rs", NULL, "rs", T0);
    s.status = WF_INSTANCE_SUSPENDED;
    s.aggregate_type = S("order");
    s.aggregate_id = S("o-rs");
    commit_changes(&(wf_store_changes){.instances = &s, .n_instances = 1});
    new_root("rr", T0 + 1);
    wf_job_row jobs[2] = {mk_job("js", "rs", "mail", T0), mk_job("jr", "rr", "mail", T0 + 1)};
    wf_timer_row t[2] = {
        {S("ts"), NULL, S("rs"), S("rs"), S("w"), S("x"), T0 + 10, T0, 0},
        {S("tr"), NULL, S("rr"), S("rr"), S("w"), S("x"), T0 + 20, T0, 0},
    };
    commit_changes(&(wf_store_changes){.jobs = jobs, .n_jobs = 2, .timers = t, .n_timers = 2});

    wf_error err = {0};
    wf_job_row *rows;
    size_t n;
    int64_t now = T0 + 100;
    ck_assert_int_eq(wf_store_activate_jobs(st, &ctx, "mail", "w1", 10, 1000, now, &rows, &n, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(rows[0].id, "jr");
    wf_store_ctx sched = {NULL, 0, arena};
    wf_timer_row *trows;
    ck_assert_int_eq(wf_store_claim_due_timers(st, &sched, now, 10, 5000, &trows, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(trows[0].id, "tr");
    ck_assert_int_eq(wf_store_claim_tenant_timers(st, &ctx, now + 1, 10, 5000, &trows, &n, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 0);

    /* A suspended root is live for its aggregate. */
    wf_tx *tx = NULL;
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    bool live = false;
    ck_assert_int_eq(wf_tx_aggregate_live(tx, "order", "o-rs", &live, &err), WF_OK);
    wf_tx_rollback(tx);
    ck_assert(live);
}
END_TEST

WF_CASE_TEST("contract", test_signals_buffer_and_correlate)
{
    wf_instance_row r = mk_instance("r1", NULL, "r1", T0);
    r.aggregate_type = S("order");
    r.aggregate_id = S("o-1");
    wf_subscription_row subs[2] = {
        {S("s2"), NULL, S("r1"), S("r1"), S("w"), S("x"), S("paid"), S("order"), S("o-1"), T0 + 2},
        {S("s1"), NULL, S("r1"), S("r1"), S("w"), S("x"), S("paid"), S("order"), S("o-1"), T0 + 1},
    };
    wf_signal_row sig[3] = {
        {.id = S("g2"),
         .name = S("paid"),
         .aggregate_type = S("order"),
         .aggregate_id = S("o-1"),
         .payload_json = S("{\"n\":2}"),
         .outcome = WF_SIGNAL_BUFFERED,
         .buffered = true,
         .received_at = T0 + 2,
         .expires_at = T0 + 1000},
        {.id = S("g1"),
         .signal_id = S("d-1"),
         .name = S("paid"),
         .aggregate_type = S("order"),
         .aggregate_id = S("o-1"),
         .payload_json = S("{\"n\":1}"),
         .outcome = WF_SIGNAL_BUFFERED,
         .buffered = true,
         .received_at = T0 + 1,
         .expires_at = T0 + 1000},
        {.id = S("g3"),
         .name = S("paid"),
         .instance_id = S("r1"),
         .outcome = WF_SIGNAL_BUFFERED,
         .buffered = true,
         .received_at = T0 + 3,
         .expires_at = T0 + 50},
    };
    commit_changes(&(wf_store_changes){.instances = &r,
                                       .n_instances = 1,
                                       .subscriptions = subs,
                                       .n_subscriptions = 2,
                                       .signals = sig,
                                       .n_signals = 3});
    wf_error err = {0};
    wf_subscription_row *found_subs;
    size_t n;
    ck_assert_int_eq(
        wf_store_find_subscriptions(st, &ctx, "paid", NULL, "order", "o-1", &found_subs, &n, &err),
        WF_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(found_subs[0].id, "s1");
    ck_assert_int_eq(
        wf_store_find_subscriptions(st, &ctx, "paid", "r1", NULL, NULL, &found_subs, &n, &err),
        WF_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(
        wf_store_find_subscriptions(st, &ctx, "shipped", "r1", NULL, NULL, &found_subs, &n, &err),
        WF_OK);
    ck_assert_uint_eq(n, 0);

    /* Oldest first; a rollback puts the signal back. */
    wf_tx *tx = NULL;
    wf_signal_row got;
    bool found = false;
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_consume_signal(tx, "paid", "r1", "order", "o-1", "r1", "t-pay", T0 + 60,
                                          &got, &found, &err),
                     WF_OK);
    ck_assert(found);
    ck_assert_str_eq(got.id, "g1");
    wf_tx_rollback(tx);

    const char *order[] = {"g1", "g2"};
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
        ck_assert_int_eq(wf_tx_consume_signal(tx, "paid", "r1", "order", "o-1", "r1", "t-pay",
                                              T0 + 60, &got, &found, &err),
                         WF_OK);
        ck_assert(found);
        ck_assert_str_eq(got.id, order[i]);
        ck_assert(!got.buffered);
        ck_assert_int_eq(got.consumed_at, T0 + 60);
        ck_assert_str_eq(got.consumed_by_instance, "r1");
        ck_assert_str_eq(got.transition_id, "t-pay");
        ck_assert_int_eq(wf_tx_commit(tx, &err), WF_OK);
    }
    /* g3 expired at T0 + 50: never delivered. */
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_consume_signal(tx, "paid", "r1", "order", "o-1", "r1", "t-pay", T0 + 60,
                                          &got, &found, &err),
                     WF_OK);
    ck_assert(!found);
    wf_tx_rollback(tx);

    /* The log: by consumer instance, by dedupe id, still buffered. */
    wf_signal_row *rows;
    char *next;
    ck_assert_int_eq(wf_store_list_signals(st, &ctx, &(wf_signal_filter){.instance_id = "r1"}, 0,
                                           NULL, &rows, &n, &next, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(rows[0].id, "g1");
    ck_assert_int_eq(wf_store_list_signals(st, &ctx, &(wf_signal_filter){.signal_id = "d-1"}, 0,
                                           NULL, &rows, &n, &next, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(wf_store_list_signals(st, &ctx, &(wf_signal_filter){.buffered_only = true}, 0,
                                           NULL, &rows, &n, &next, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(rows[0].id, "g3");

    /* A second delivery with the same dedupe id conflicts. */
    wf_signal_row dup = sig[1];
    dup.id = S("g9");
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_apply(tx, &(wf_store_changes){.signals = &dup, .n_signals = 1}, &err),
                     WF_E_CONFLICT);
    wf_tx_rollback(tx);
}
END_TEST

WF_CASE_TEST("contract", test_events_read_in_order_with_filters)
{
    new_root("r1", T0);
    wf_instance_row c = mk_instance("c1", "r1", "r1", T0 + 1);
    c.definition_key = S("child-def");
    wf_instance_row r2 = mk_instance("r2", NULL, "r2", T0 + 2);
    wf_instance_row both[] = {c, r2};
    wf_event_row ev[5] = {
        {0, NULL, S("r1"), S("r1"), S("INSTANCE_STARTED"), S("alice"), S("{}"), T0},
        {0, NULL, S("r1"), S("c1"), S("TASK_CREATED"), S("alice"), S("{\"k\":1}"), T0 + 1},
        {0, NULL, S("r2"), S("r2"), S("INSTANCE_STARTED"), NULL, S("{}"), T0 + 2},
        {0, NULL, S("r1"), S("c1"), S("TASK_COMPLETED"), S("bob"), S("{}"), T0 + 3},
        {0, NULL, S("r1"), S("r1"), S("INSTANCE_COMPLETED"), S("bob"), S("{}"), T0 + 4},
    };
    commit_changes(
        &(wf_store_changes){.instances = both, .n_instances = 2, .events = ev, .n_events = 3});
    commit_changes(&(wf_store_changes){.events = ev + 3, .n_events = 2});

    wf_error err = {0};
    wf_event_row *rows;
    size_t n;
    ck_assert_int_eq(wf_store_read_events(st, &ctx, 0, NULL, 0, &rows, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 5);
    for (size_t i = 1; i < n; i++)
        ck_assert_int_gt(rows[i].sequence, rows[i - 1].sequence);
    ck_assert_str_eq(rows[1].type, "TASK_CREATED");
    ck_assert_str_eq(rows[1].data_json, "{\"k\":1}");
    ck_assert_str_eq(rows[1].tenant, "t1");
    ck_assert_ptr_null(rows[2].actor);
    int64_t second = rows[1].sequence;

    ck_assert_int_eq(wf_store_read_events(st, &ctx, second, NULL, 2, &rows, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(rows[0].instance_id, "r2");
    /* A root's id selects its whole tree; a child's only the child. */
    ck_assert_int_eq(wf_store_read_events(st, &ctx, 0, &(wf_event_filter){.instance_id = "r1"}, 0,
                                          &rows, &n, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 4);
    ck_assert_int_eq(wf_store_read_events(st, &ctx, 0, &(wf_event_filter){.instance_id = "c1"}, 0,
                                          &rows, &n, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(wf_store_read_events(st, &ctx, 0,
                                          &(wf_event_filter){.definition_key = "child-def"}, 0,
                                          &rows, &n, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 2);
    const char *types[] = {"INSTANCE_STARTED", "INSTANCE_COMPLETED"};
    ck_assert_int_eq(wf_store_read_events(st, &ctx, 0,
                                          &(wf_event_filter){.types = types, .n_types = 2}, 0,
                                          &rows, &n, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 3);
}
END_TEST

WF_CASE_TEST("contract", test_past_deadline_is_deadline_exceeded)
{
    wf_store_ctx late = {"t1", wf_mono_ms() - 1, arena};
    wf_error err = {0};
    wf_tx *tx = NULL;
    wf_instance_row r;
    ck_assert_int_eq(wf_store_begin(st, &late, &tx, &err), WF_E_DEADLINE_EXCEEDED);
    ck_assert_ptr_null(tx);
    ck_assert_int_eq(wf_store_get_instance(st, &late, "r1", &r, &err), WF_E_DEADLINE_EXCEEDED);
}
END_TEST

/* A unit of work waiting behind another one's lock gives up at its
 * deadline: never a hang. */
static void *
hold_root(void *arg)
{
    (void)arg;
    wf_arena *a = wf_arena_new();
    wf_store_ctx c = {"t1", 0, a};
    wf_error err = {0};
    wf_tx *tx = NULL;
    wf_aggregate g;
    ck_assert_int_eq(wf_store_begin(st, &c, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_lock_root(tx, "r1", &g, &err), WF_OK);
    struct timespec ts = {1, 500 * 1000 * 1000};
    nanosleep(&ts, NULL);
    wf_tx_rollback(tx);
    wf_arena_free(a);
    return NULL;
}

WF_CASE_TEST("contract", test_lock_wait_honours_deadline)
{
    new_root("r1", T0);
    pthread_t th;
    pthread_create(&th, NULL, hold_root, NULL);
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL);

    int64_t t0 = wf_mono_ms();
    wf_store_ctx c = {"t1", t0 + 400, arena};
    wf_error err = {0};
    wf_tx *tx = NULL;
    wf_aggregate g;
    wf_code rc = wf_store_begin(st, &c, &tx, &err);
    if (rc == WF_OK)
        rc = wf_tx_lock_root(tx, "r1", &g, &err);
    int64_t took = wf_mono_ms() - t0;
    wf_tx_rollback(tx);
    ck_assert_msg(rc == WF_E_DEADLINE_EXCEEDED, "got %s: %s", wf_code_reason(rc), err.msg);
    ck_assert_msg(took >= 300 && took < 1000, "took %" PRId64 " ms", took);
    pthread_join(th, NULL);
}
END_TEST

/* A unit of work paused while it waits for an expression (wf_tx_pause)
 * keeps its root: a lock of that root waits until it ends, and activation
 * and timer claims skip the root's jobs and timers (SKIP LOCKED); other
 * roots and plain reads go on meanwhile. On the memory store this is what
 * lets the others run at all; on Postgres the row locks give it. */
static atomic_int pause_phase;

static void *
paused_holder(void *arg)
{
    (void)arg;
    wf_arena *a = wf_arena_new();
    wf_store_ctx c = {"t1", 0, a};
    wf_error err = {0};
    wf_tx *tx = NULL;
    wf_aggregate g;
    ck_assert_int_eq(wf_store_begin(st, &c, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_lock_root(tx, "r1", &g, &err), WF_OK);
    wf_tx_pause(tx);
    atomic_store(&pause_phase, 1);
    struct timespec ts = {0, 700 * 1000 * 1000};
    nanosleep(&ts, NULL);
    wf_tx_resume(tx);
    wf_instance_row upd = g.instances[0];
    upd.variables_json = S("{\"n\":1}");
    wf_event_row ev = {0, NULL, S("r1"), S("r1"), S("VARIABLES_SET"), S("alice"), S("{}"), T0};
    ck_assert_msg(
        wf_tx_apply(
            tx,
            &(wf_store_changes){.instances = &upd, .n_instances = 1, .events = &ev, .n_events = 1},
            &err) == WF_OK,
        "apply: %s", err.msg);
    ck_assert_msg(wf_tx_commit(tx, &err) == WF_OK, "commit: %s", err.msg);
    wf_arena_free(a);
    return NULL;
}

WF_CASE_TEST("contract", test_a_paused_unit_of_work_keeps_its_root)
{
    new_root("r1", T0);
    new_root("r2", T0 + 1);
    wf_job_row jobs[2] = {mk_job("j1", "r1", "mail", T0), mk_job("j2", "r2", "mail", T0)};
    wf_timer_row tm[2] = {
        {S("tm1"), NULL, S("r1"), S("r1"), S("w"), S("x"), T0 + 10, T0, 0},
        {S("tm2"), NULL, S("r2"), S("r2"), S("w"), S("x"), T0 + 10, T0, 0},
    };
    commit_changes(&(wf_store_changes){.jobs = jobs, .n_jobs = 2, .timers = tm, .n_timers = 2});
    atomic_store(&pause_phase, 0);
    pthread_t th;
    pthread_create(&th, NULL, paused_holder, NULL);
    while (atomic_load(&pause_phase) == 0) {
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    int64_t t0 = wf_mono_ms();
    wf_error err = {0};

    /* Another root is locked, and a row of the held one read, at once. */
    wf_tx *tx = NULL;
    wf_aggregate g;
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_lock_root(tx, "r2", &g, &err), WF_OK);
    wf_tx_rollback(tx);
    wf_instance_row r;
    ck_assert_int_eq(wf_store_get_instance(st, &ctx, "r1", &r, &err), WF_OK);
    ck_assert_str_eq(r.variables_json, "{\"n\":0}");

    /* The held root's job and timer are skipped. */
    wf_job_row *rows;
    size_t n;
    ck_assert_int_eq(
        wf_store_activate_jobs(st, &ctx, "mail", "w1", 10, 1000, T0 + 100, &rows, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(rows[0].id, "j2");
    wf_store_ctx sched = {NULL, 0, arena};
    wf_timer_row *trows;
    ck_assert_int_eq(wf_store_claim_due_timers(st, &sched, T0 + 100, 10, 5000, &trows, &n, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(trows[0].id, "tm2");
    int64_t others = wf_mono_ms() - t0;
    ck_assert_msg(others < 400, "the other calls took %" PRId64 " ms", others);

    /* A lock of the held root waits for the holder's commit and sees it. */
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_lock_root(tx, "r1", &g, &err), WF_OK);
    int64_t waited = wf_mono_ms() - t0;
    ck_assert_str_eq(g.instances[0].variables_json, "{\"n\":1}");
    wf_tx_rollback(tx);
    ck_assert_msg(waited >= 500, "the held root was locked after %" PRId64 " ms", waited);
    pthread_join(th, NULL);

    /* The waiter's rollback keeps what the holder committed meanwhile. */
    wf_event_row *evs;
    ck_assert_int_eq(wf_store_sequence_events(st, &sched, &err), WF_OK);
    ck_assert_int_eq(wf_store_read_events(st, &ctx, 0, &(wf_event_filter){.instance_id = "r1"}, 10,
                                          &evs, &n, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(evs[0].type, "VARIABLES_SET");

    /* Once it ended, its job and timer are handed out as before. */
    ck_assert_int_eq(
        wf_store_activate_jobs(st, &ctx, "mail", "w1", 10, 1000, T0 + 100, &rows, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(rows[0].id, "j1");
    ck_assert_int_eq(wf_store_claim_due_timers(st, &sched, T0 + 100, 10, 5000, &trows, &n, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(trows[0].id, "tm1");
}
END_TEST

/* N threads x K read-modify-write units of work on one counter. */
#define LU_THREADS 4
#define LU_ROUNDS 50

static void *
increment_loop(void *arg)
{
    (void)arg;
    wf_arena *a = wf_arena_new();
    for (int i = 0; i < LU_ROUNDS; i++) {
        wf_store_ctx c = {"t1", wf_mono_ms() + 10000, a};
        wf_error err = {0};
        wf_tx *tx = NULL;
        wf_aggregate g;
        ck_assert_msg(wf_store_begin(st, &c, &tx, &err) == WF_OK, "begin: %s", err.msg);
        ck_assert_msg(wf_tx_lock_root(tx, "r1", &g, &err) == WF_OK, "lock: %s", err.msg);
        int n = atoi(strchr(g.instances[0].variables_json, ':') + 1);
        wf_instance_row upd = g.instances[0];
        upd.variables_json = wf_arena_printf(a, "{\"n\":%d}", n + 1);
        ck_assert_msg(wf_tx_apply(tx, &(wf_store_changes){.instances = &upd, .n_instances = 1},
                                  &err) == WF_OK,
                      "apply: %s", err.msg);
        ck_assert_msg(wf_tx_commit(tx, &err) == WF_OK, "commit: %s", err.msg);
    }
    wf_arena_free(a);
    return NULL;
}

WF_CASE_TEST("contract", test_concurrent_lock_no_lost_update)
{
    new_root("r1", T0);
    pthread_t th[LU_THREADS];
    for (int i = 0; i < LU_THREADS; i++)
        pthread_create(&th[i], NULL, increment_loop, NULL);
    for (int i = 0; i < LU_THREADS; i++)
        pthread_join(th[i], NULL);
    wf_error err = {0};
    wf_instance_row r;
    ck_assert_int_eq(wf_store_get_instance(st, &ctx, "r1", &r, &err), WF_OK);
    char want[32];
    snprintf(want, sizeof want, "{\"n\":%d}", LU_THREADS * LU_ROUNDS);
    ck_assert_str_eq(r.variables_json, want);
    ck_assert_int_eq(r.version, 1 + LU_THREADS * LU_ROUNDS);
}
END_TEST

/* N threads activate from 100 jobs at once: each job leased exactly once. */
#define ACT_JOBS 100
#define ACT_THREADS 4
static int leased[ACT_JOBS];
static pthread_mutex_t leased_mu = PTHREAD_MUTEX_INITIALIZER;

static void *
activate_loop(void *arg)
{
    (void)arg;
    wf_arena *a = wf_arena_new();
    for (;;) {
        wf_store_ctx c = {"t1", wf_mono_ms() + 10000, a};
        wf_error err = {0};
        wf_job_row *rows;
        size_t n;
        ck_assert_msg(
            wf_store_activate_jobs(st, &c, "mail", "w", 7, 60000, T0 + 1, &rows, &n, &err) == WF_OK,
            "activate: %s", err.msg);
        if (n == 0)
            break;
        pthread_mutex_lock(&leased_mu);
        for (size_t i = 0; i < n; i++)
            leased[atoi(rows[i].id + 1)]++;
        pthread_mutex_unlock(&leased_mu);
    }
    wf_arena_free(a);
    return NULL;
}

WF_CASE_TEST("contract", test_concurrent_activation_leases_once)
{
    new_root("r1", T0);
    wf_job_row jobs[ACT_JOBS];
    char ids[ACT_JOBS][8];
    for (int i = 0; i < ACT_JOBS; i++) {
        snprintf(ids[i], sizeof ids[i], "j%d", i);
        jobs[i] = mk_job(ids[i], "r1", "mail", T0);
    }
    commit_changes(&(wf_store_changes){.jobs = jobs, .n_jobs = ACT_JOBS});
    pthread_t th[ACT_THREADS];
    for (int i = 0; i < ACT_THREADS; i++)
        pthread_create(&th[i], NULL, activate_loop, NULL);
    for (int i = 0; i < ACT_THREADS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < ACT_JOBS; i++)
        ck_assert_msg(leased[i] == 1, "job j%d leased %d times", i, leased[i]);
}
END_TEST

/* ---- event sequence: concurrent writers, one reader ------------------------
 *
 * GW_WRITERS threads run GW_TXS units of work each on one of GW_ROOTS roots:
 * lock the root, bump the counter in its variables, append 1-3 events
 * carrying (root, counter, index), wait 0-2 ms (so on Postgres
 * transactions commit in another order than they inserted), then commit,
 * or roll back one in six. Meanwhile a reader keeps reading from the last
 * sequence it saw, in small pages. It must see every committed event once,
 * sequences 1, 2, 3, ... without a gap, and each root's events in the
 * order of that root's transactions. */
#define GW_WRITERS 4
#define GW_TXS 30
#define GW_ROOTS 3

static atomic_int gw_expected; /* events committed */
static atomic_int gw_writers_done;

static void
sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static void *
gw_writer(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg * 7919u + (unsigned)getpid();
    for (int t = 0; t < GW_TXS; t++) {
        wf_arena *a = wf_arena_new();
        wf_store_ctx c = {"t1", wf_mono_ms() + 20000, a};
        wf_error err = {0};
        wf_tx *tx = NULL;
        wf_aggregate g;
        int r = (int)(rand_r(&seed) % GW_ROOTS);
        char root[8];
        snprintf(root, sizeof root, "gr%d", r);
        ck_assert_msg(wf_store_begin(st, &c, &tx, &err) == WF_OK, "begin: %s", err.msg);
        ck_assert_msg(wf_tx_lock_root(tx, root, &g, &err) == WF_OK, "lock: %s", err.msg);
        int n = atoi(strchr(g.instances[0].variables_json, ':') + 1) + 1;
        wf_instance_row upd = g.instances[0];
        upd.variables_json = wf_arena_printf(a, "{\"n\":%d}", n);
        int k = 1 + (int)(rand_r(&seed) % 3);
        wf_event_row ev[3];
        for (int i = 0; i < k; i++)
            ev[i] = (wf_event_row){0,
                                   NULL,
                                   S(root),
                                   S(root),
                                   S("VARIABLES_SET"),
                                   S("gw"),
                                   wf_arena_printf(a, "{\"r\":%d,\"n\":%d,\"i\":%d}", r, n, i),
                                   T0};
        ck_assert_msg(wf_tx_apply(tx,
                                  &(wf_store_changes){.instances = &upd,
                                                      .n_instances = 1,
                                                      .events = ev,
                                                      .n_events = (size_t)k},
                                  &err) == WF_OK,
                      "apply: %s", err.msg);
        sleep_us((long)(rand_r(&seed) % 2000));
        if (rand_r(&seed) % 6 == 0) {
            wf_tx_rollback(tx);
        } else {
            ck_assert_msg(wf_tx_commit(tx, &err) == WF_OK, "commit: %s", err.msg);
            atomic_fetch_add(&gw_expected, k);
        }
        wf_arena_free(a);
    }
    atomic_fetch_add(&gw_writers_done, 1);
    return NULL;
}

typedef struct gw_seen {
    int64_t last_seq;
    int events;
    int reads;
    int root_n[GW_ROOTS]; /* last (counter, index) seen per root */
    int root_i[GW_ROOTS];
} gw_seen;

static void *
gw_reader(void *arg)
{
    gw_seen *seen = arg;
    for (int i = 0; i < GW_ROOTS; i++)
        seen->root_i[i] = -1;
    for (;;) {
        /* Read the writers' state first: a read that starts after the last
         * commit and returns nothing means everything was seen. */
        bool writers_done = atomic_load(&gw_writers_done) == GW_WRITERS;
        wf_arena *a = wf_arena_new();
        wf_store_ctx c = {"t1", wf_mono_ms() + 20000, a};
        wf_error err = {0};
        wf_event_row *rows;
        size_t n;
        ck_assert_msg(wf_store_read_events(st, &c, seen->last_seq, NULL, 7, &rows, &n, &err) ==
                          WF_OK,
                      "read: %s", err.msg);
        seen->reads++;
        for (size_t k = 0; k < n; k++) {
            ck_assert_msg(rows[k].sequence == seen->last_seq + 1,
                          "after sequence %" PRId64 " came %" PRId64, seen->last_seq,
                          rows[k].sequence);
            seen->last_seq = rows[k].sequence;
            int r, cn, ci;
            ck_assert_int_eq(
                sscanf(rows[k].data_json, "{\"r\":%d,\"n\":%d,\"i\":%d}", &r, &cn, &ci), 3);
            char root[8];
            snprintf(root, sizeof root, "gr%d", r);
            ck_assert_str_eq(rows[k].root_id, root);
            /* Per root: the next event of the same transaction, or the
             * first event of the root's next committed transaction. */
            bool next = (cn == seen->root_n[r] && ci == seen->root_i[r] + 1) ||
                        (cn == seen->root_n[r] + 1 && ci == 0);
            ck_assert_msg(next, "root gr%d: (%d,%d) after (%d,%d)", r, cn, ci, seen->root_n[r],
                          seen->root_i[r]);
            seen->root_n[r] = cn;
            seen->root_i[r] = ci;
            seen->events++;
        }
        wf_arena_free(a);
        if (n == 0 && writers_done)
            break;
        if (n == 0)
            sleep_us(500);
    }
    return NULL;
}

WF_CASE_TEST("contract", test_events_gap_free_under_concurrent_writers)
{
    for (int r = 0; r < GW_ROOTS; r++) {
        char id[8];
        snprintf(id, sizeof id, "gr%d", r);
        new_root(id, T0 + r);
    }
    pthread_t w[GW_WRITERS], rd;
    static gw_seen seen;
    pthread_create(&rd, NULL, gw_reader, &seen);
    for (int i = 0; i < GW_WRITERS; i++)
        pthread_create(&w[i], NULL, gw_writer, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < GW_WRITERS; i++)
        pthread_join(w[i], NULL);
    pthread_join(rd, NULL);

    int expected = atomic_load(&gw_expected);
    ck_assert_int_gt(expected, 0);
    ck_assert_int_eq(seen.events, expected);
    ck_assert_int_eq(seen.last_seq, expected); /* 1..expected, nothing else */
    ck_assert_int_gt(seen.reads, 1);
    /* Each root's last event is its final counter: no committed
     * transaction's events are missing at the end either. */
    for (int r = 0; r < GW_ROOTS; r++) {
        char id[8];
        snprintf(id, sizeof id, "gr%d", r);
        wf_error err = {0};
        wf_instance_row row;
        ck_assert_int_eq(wf_store_get_instance(st, &ctx, id, &row, &err), WF_OK);
        ck_assert_int_eq(atoi(strchr(row.variables_json, ':') + 1), seen.root_n[r]);
    }
    /* A full re-read from the start gives the same dense run. */
    wf_error err = {0};
    int64_t after = 0;
    for (;;) {
        wf_event_row *rows;
        size_t n;
        ck_assert_int_eq(wf_store_read_events(st, &ctx, after, NULL, 1000, &rows, &n, &err), WF_OK);
        if (n == 0)
            break;
        for (size_t k = 0; k < n; k++)
            ck_assert_int_eq(rows[k].sequence, ++after);
    }
    ck_assert_int_eq(after, expected);
    /* Nothing is left to number. */
    ck_assert_int_eq(wf_store_sequence_events(st, &ctx, &err), WF_OK);
}
END_TEST

/* ---- wake-ups ------------------------------------------------------------ */

void
notes_init(notes *nt)
{
    pthread_mutex_init(&nt->mu, NULL);
    nt->n = 0;
}

void
notes_fn(void *arg, const char *channel, const char *payload)
{
    notes *nt = arg;
    pthread_mutex_lock(&nt->mu);
    if (nt->n < NOTES_MAX) {
        snprintf(nt->v[nt->n].channel, sizeof nt->v[nt->n].channel, "%s", channel);
        snprintf(nt->v[nt->n].payload, sizeof nt->v[nt->n].payload, "%s", payload);
        nt->n++;
    }
    pthread_mutex_unlock(&nt->mu);
}

int
notes_count(notes *nt)
{
    pthread_mutex_lock(&nt->mu);
    int n = nt->n;
    pthread_mutex_unlock(&nt->mu);
    return n;
}

int
notes_find(notes *nt, int from, int to, const char *channel, const char *payload)
{
    int found = -1;
    pthread_mutex_lock(&nt->mu);
    for (int i = from; i < to && i < nt->n && found < 0; i++)
        if (strcmp(nt->v[i].channel, channel) == 0 && strcmp(nt->v[i].payload, payload) == 0)
            found = i;
    pthread_mutex_unlock(&nt->mu);
    return found;
}

int
notes_wait(notes *nt, int from, const char *channel, const char *payload, int timeout_ms)
{
    int64_t until = wf_mono_ms() + timeout_ms;
    for (;;) {
        int i = notes_find(nt, from, NOTES_MAX, channel, payload);
        if (i >= 0 || wf_mono_ms() >= until)
            return i;
        sleep_us(2000);
    }
}

static notes heard;

/* Job types unique to this process: Postgres channels are database-wide,
 * so other test processes on the same database may notify too. */
static void
job_type(char *buf, size_t cap, const char *what)
{
    snprintf(buf, cap, "%s-%d", what, (int)getpid());
}

WF_CASE_TEST("contract", test_listener_hears_events_and_activatable_jobs)
{
    char type[32], barrier[32];
    job_type(type, sizeof type, "mail");
    job_type(barrier, sizeof barrier, "barrier");
    notes_init(&heard);
    wf_error err = {0};
    ck_assert_int_eq(wf_store_set_listener(st, notes_fn, &heard, &err), WF_OK);
    ck_assert_int_eq(wf_store_set_listener(st, notes_fn, &heard, &err), WF_E_INTERNAL);
    ck_assert_str_eq(err.msg, "the store already has a listener");
    new_root("r1", T0);

    /* A commit that wrote events. */
    int from = notes_count(&heard);
    wf_event_row ev = {0, NULL, S("r1"), S("r1"), S("VARIABLES_SET"), S("alice"), S("{}"), T0};
    commit_changes(&(wf_store_changes){.events = &ev, .n_events = 1});
    ck_assert_msg(notes_wait(&heard, from, "wf_events", "r1", 5000) >= 0, "no wf_events");

    /* The payload names the roots of the events, each once; past
     * WF_STORE_EVENT_ROOTS of them it is "" (any root). */
    wf_event_row evs[WF_STORE_EVENT_ROOTS + 1];
    char ids[WF_STORE_EVENT_ROOTS + 1][8];
    for (int i = 0; i <= WF_STORE_EVENT_ROOTS; i++) {
        snprintf(ids[i], sizeof ids[i], "q%d", i);
        evs[i] = ev;
        evs[i].root_id = evs[i].instance_id = ids[i < 2 ? 0 : i]; /* q0 twice */
    }
    evs[1].root_id = evs[1].instance_id = S("r1");
    from = notes_count(&heard);
    commit_changes(&(wf_store_changes){.events = evs, .n_events = 3});
    ck_assert_msg(notes_wait(&heard, from, "wf_events", "q0 r1 q2", 5000) >= 0, "no roots");
    from = notes_count(&heard);
    commit_changes(&(wf_store_changes){.events = evs, .n_events = WF_STORE_EVENT_ROOTS + 1});
    ck_assert_msg(notes_wait(&heard, from, "wf_events", "", 5000) >= 0, "no any-root payload");

    /* A new ACTIVATABLE job: its type on wf_jobs. */
    from = notes_count(&heard);
    wf_job_row job = mk_job("j1", "r1", type, T0);
    commit_changes(&(wf_store_changes){.jobs = &job, .n_jobs = 1});
    ck_assert_msg(notes_wait(&heard, from, "wf_jobs", type, 5000) >= 0, "no wf_jobs %s", type);

    /* Not activatable anew: the same row written again, a job that is
     * rolled back, a job inserted already ACTIVATED, and activation. */
    from = notes_count(&heard);
    commit_changes(&(wf_store_changes){.jobs = &job, .n_jobs = 1});
    wf_job_row j2 = mk_job("j2", "r1", type, T0);
    wf_tx *tx = NULL;
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_apply(tx, &(wf_store_changes){.jobs = &j2, .n_jobs = 1}, &err), WF_OK);
    wf_tx_rollback(tx);
    wf_job_row j3 = mk_job("j3", "r1", type, T0);
    j3.state = WF_JOB_ACTIVATED;
    j3.lease_expires_at = T0 + 3600 * INT64_C(1000000);
    commit_changes(&(wf_store_changes){.jobs = &j3, .n_jobs = 1});
    wf_job_row *act;
    size_t n;
    ck_assert_int_eq(
        wf_store_activate_jobs(st, &ctx, type, "w1", 10, 60000, T0 + 1, &act, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 1);
    /* Barrier: notifications arrive in commit order, so once this one is
     * here every earlier one is too. */
    wf_job_row jb = mk_job("jb", "r1", barrier, T0);
    commit_changes(&(wf_store_changes){.jobs = &jb, .n_jobs = 1});
    int at = notes_wait(&heard, from, "wf_jobs", barrier, 5000);
    ck_assert_int_ge(at, 0);
    ck_assert_int_eq(notes_find(&heard, from, at, "wf_jobs", type), -1);

    /* Back to ACTIVATABLE (a retry after a failure): heard again. */
    from = notes_count(&heard);
    wf_job_row retry = act[0];
    retry.state = WF_JOB_ACTIVATABLE;
    retry.worker = NULL;
    retry.activatable_at = T0 + 5;
    commit_changes(&(wf_store_changes){.jobs = &retry, .n_jobs = 1});
    ck_assert_msg(notes_wait(&heard, from, "wf_jobs", type, 5000) >= 0, "no wf_jobs on retry");
}
END_TEST

Suite *
store_contract_suite(const char *name)
{
    return wf_test_suite_of(name,
                            (const wf_test_case[]){{"contract", setup, teardown, 30}, {NULL}});
}

int
store_run_suite(Suite *s)
{
    return wf_test_run_mode(s, CK_FORK);
}
