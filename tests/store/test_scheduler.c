/*
 * test_scheduler.c: the timer scheduler (server/scheduler/scheduler.h) with a
 * fake fire callback, no server.
 *
 * Timers are written straight into a store through units of work, as the
 * engine would. The fake fire follows the firing protocol of store.h: one
 * unit of work on the timer's root that deletes the timer only if it still
 * exists, so "fired once" is checked exactly as the real runtime ensures it.
 *
 * WF_TEST_STORE selects the run: "memory" (CTest test_scheduler) runs the
 * memory store cases; "pg" (test_scheduler_pg) runs the two-replica cases
 * and the retention sweep on Postgres at WF_TEST_PG_DSN, each in a fresh
 * schema, and is skipped (exit 77) without it.
 */
#include <check.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "instances.h"
#include "scheduler.h"
#include "schedules.h"
#include "store.h"
#include "test_support.h"
#include "wf_log.h"
#include "wf_time.h"

#define S(x) ((char *)(x))
#define MS INT64_C(1000) /* microseconds per millisecond (row times are in us) */

static void
sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- writing timers ------------------------------------------------------ */

static void
new_root(wf_store *st, const char *tenant, const char *id)
{
    wf_arena *a = wf_arena_new();
    wf_store_ctx ctx = {tenant, 0, a};
    wf_instance_row r = {.id = S(id),
                         .definition_key = S("def"),
                         .definition_version = 1,
                         .root_id = S(id),
                         .status = WF_INSTANCE_RUNNING,
                         .variables_json = S("{}"),
                         .created_at = wf_now_us(),
                         .updated_at = wf_now_us()};
    wf_error err = {0};
    wf_tx *tx = NULL;
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_msg(wf_tx_apply(tx, &(wf_store_changes){.instances = &r, .n_instances = 1}, &err) ==
                      WF_OK,
                  "apply: %s", err.msg);
    ck_assert_msg(wf_tx_commit(tx, &err) == WF_OK, "commit: %s", err.msg);
    wf_arena_free(a);
}

/* Adds n timers "<root>-<first + i>" due at due_at (us) to root, in one
 * unit of work: begin, lock the root, apply, commit. */
static void
add_timers(wf_store *st, const char *tenant, const char *root, int first, int n, int64_t due_at)
{
    wf_arena *a = wf_arena_new();
    wf_store_ctx ctx = {tenant, 0, a};
    wf_timer_row *t = wf_arena_calloc(a, (size_t)n, sizeof *t);
    for (int i = 0; i < n; i++)
        t[i] = (wf_timer_row){.id = wf_arena_printf(a, "%s-%d", root, first + i),
                              .root_id = S(root),
                              .instance_id = S(root),
                              .work_item_id = S("w"),
                              .transition_id = S("timeout"),
                              .due_at = due_at,
                              .created_at = wf_now_us()};
    wf_error err = {0};
    wf_tx *tx = NULL;
    wf_aggregate g;
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_msg(wf_tx_lock_root(tx, root, &g, &err) == WF_OK, "lock: %s", err.msg);
    ck_assert_msg(wf_tx_apply(tx, &(wf_store_changes){.timers = t, .n_timers = (size_t)n}, &err) ==
                      WF_OK,
                  "apply: %s", err.msg);
    ck_assert_msg(wf_tx_commit(tx, &err) == WF_OK, "commit: %s", err.msg);
    wf_arena_free(a);
}

/* Timers still stored on root. */
static size_t
timers_left(wf_store *st, const char *tenant, const char *root)
{
    wf_arena *a = wf_arena_new();
    wf_store_ctx ctx = {tenant, 0, a};
    wf_error err = {0};
    wf_tx *tx = NULL;
    wf_aggregate g;
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_lock_root(tx, root, &g, &err), WF_OK);
    size_t n = g.n_timers;
    wf_tx_rollback(tx);
    wf_arena_free(a);
    return n;
}

/* ---- the fake fire ------------------------------------------------------- */

#define REC_MAX 4096

/* Every call of fake_fire, in order. Check forks each case, so this starts
 * empty in every case. */
static struct {
    pthread_mutex_t mu;
    int n;
    struct {
        char id[64];
        int64_t at_ms; /* monotonic */
        bool fired;
        wf_code rc;
    } v[REC_MAX];
    /* behaviour */
    char fail_id[64]; /* fail the first fail_left calls for this id */
    int fail_left;
    bool unavailable; /* every call fails with WF_E_STORE_UNAVAILABLE */
    int delay_ms;     /* hold the root lock this long (makes replicas overlap) */
} rec = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void
record(const wf_timer_row *t, bool fired, wf_code rc)
{
    pthread_mutex_lock(&rec.mu);
    if (rec.n < REC_MAX) {
        snprintf(rec.v[rec.n].id, sizeof rec.v[rec.n].id, "%s", t->id);
        rec.v[rec.n].at_ms = wf_mono_ms();
        rec.v[rec.n].fired = fired;
        rec.v[rec.n].rc = rc;
        rec.n++;
    }
    pthread_mutex_unlock(&rec.mu);
}

/* wf_sched_fire_fn; arg is the wf_store the replica uses. What the real
 * runtime does, minus the net: one unit of work on the root, fire only if
 * the timer is still there, delete it in the same transaction. */
static wf_code
fake_fire(void *arg, const wf_timer_row *t, int64_t deadline_ms, bool *fired, wf_error *err)
{
    wf_store *st = arg;
    pthread_mutex_lock(&rec.mu);
    bool fail = rec.unavailable || (rec.fail_left > 0 && strcmp(rec.fail_id, t->id) == 0);
    if (fail && !rec.unavailable)
        rec.fail_left--;
    int delay = rec.delay_ms;
    pthread_mutex_unlock(&rec.mu);
    if (fail) {
        wf_code rc = rec.unavailable ? WF_E_STORE_UNAVAILABLE : WF_E_CONFLICT;
        record(t, false, rc);
        return wf_error_set(err, rc, "injected failure");
    }

    wf_arena *a = wf_arena_new();
    wf_store_ctx ctx = {t->tenant, deadline_ms, a};
    wf_tx *tx = NULL;
    wf_aggregate g = {0};
    wf_code rc = wf_store_begin(st, &ctx, &tx, err);
    if (rc == WF_OK)
        rc = wf_tx_lock_root(tx, t->root_id, &g, err);
    bool present = false;
    for (size_t i = 0; rc == WF_OK && i < g.n_timers; i++)
        present = present || strcmp(g.timers[i].id, t->id) == 0;
    if (rc == WF_OK && present) {
        if (delay > 0)
            sleep_ms(delay);
        const char *del[] = {t->id};
        rc = wf_tx_apply(tx, &(wf_store_changes){.del_timers = del, .n_del_timers = 1}, err);
        if (rc == WF_OK) {
            rc = wf_tx_commit(tx, err);
            tx = NULL;
        }
    }
    wf_tx_rollback(tx); /* NULL-safe: after a commit, or when nothing to do */
    wf_arena_free(a);
    if (rc == WF_OK)
        *fired = present;
    record(t, rc == WF_OK && present, rc);
    return rc;
}

static int
calls(void)
{
    pthread_mutex_lock(&rec.mu);
    int n = rec.n;
    pthread_mutex_unlock(&rec.mu);
    return n;
}

/* Times id fired (successful deletions); its calls in *ncalls when set. */
static int
fired_count(const char *id, int *ncalls)
{
    int f = 0, c = 0;
    pthread_mutex_lock(&rec.mu);
    for (int i = 0; i < rec.n; i++)
        if (strcmp(rec.v[i].id, id) == 0) {
            c++;
            f += rec.v[i].fired;
        }
    pthread_mutex_unlock(&rec.mu);
    if (ncalls != NULL)
        *ncalls = c;
    return f;
}

static int
total_fired(void)
{
    int f = 0;
    pthread_mutex_lock(&rec.mu);
    for (int i = 0; i < rec.n; i++)
        f += rec.v[i].fired;
    pthread_mutex_unlock(&rec.mu);
    return f;
}

/* Polls until total_fired() >= want or timeout_ms passed; returns it. */
static int
wait_fired(int want, int timeout_ms)
{
    int64_t until = wf_mono_ms() + timeout_ms;
    while (total_fired() < want && wf_mono_ms() < until)
        sleep_ms(5);
    return total_fired();
}

/* ---- memory store cases -------------------------------------------------- */

static wf_store *st;

static void
mem_setup(void)
{
    wf_error err = {0};
    st = wf_store_mem_new(&err);
    ck_assert_ptr_nonnull(st);
}

static void
mem_teardown(void)
{
    wf_store_free(st);
    st = NULL;
}

WF_CASE_TEST("memory", test_due_timers_fire_once_each)
{
    int64_t now = wf_now_us();
    new_root(st, "t1", "r1");
    new_root(st, "t2", "r2");
    add_timers(st, "t1", "r1", 0, 3, now - 1000 * MS);
    add_timers(st, "t2", "r2", 0, 2, now - 10 * MS); /* another tenant: the scheduler sees all */
    add_timers(st, "t1", "r1", 100, 1, now + 3600 * 1000 * MS); /* an hour away */

    wf_scheduler_options o = {.idle_ms = 50};
    wf_error err = {0};
    wf_scheduler *s = wf_scheduler_start(st, &o, fake_fire, st, &err);
    ck_assert_msg(s != NULL, "start: %s", err.msg);
    ck_assert_int_eq(wait_fired(5, 2000), 5);
    sleep_ms(300); /* several more passes: nothing fires twice */
    wf_scheduler_stats stats;
    wf_scheduler_get_stats(s, &stats);
    wf_scheduler_stop(s);

    ck_assert_int_eq(calls(), 5);
    const char *ids[] = {"r1-0", "r1-1", "r1-2", "r2-0", "r2-1"};
    for (size_t i = 0; i < 5; i++)
        ck_assert_msg(fired_count(ids[i], NULL) == 1, "%s fired %d times", ids[i],
                      fired_count(ids[i], NULL));
    ck_assert_int_eq(fired_count("r1-100", NULL), 0);
    ck_assert_uint_eq(timers_left(st, "t1", "r1"), 1);
    ck_assert_uint_eq(timers_left(st, "t2", "r2"), 0);
    ck_assert_uint_eq(stats.fired, 5);
    ck_assert_uint_eq(stats.fire_errors, 0);
    ck_assert_uint_eq(stats.claim_errors, 0);
    ck_assert(stats.passes >= 5);
    ck_assert(!stats.store_down);
    /* The oldest was a second overdue when the scheduler started. */
    ck_assert_int_ge(stats.max_lateness_ms, 1000);
    ck_assert_int_ge(stats.max_lateness_ms, stats.last_lateness_ms);
}
END_TEST

WF_CASE_TEST("memory", test_not_fired_before_due)
{
    new_root(st, "t1", "r1");
    int64_t t0 = wf_mono_ms();
    add_timers(st, "t1", "r1", 0, 1, wf_now_us() + 300 * MS);
    wf_error err = {0};
    wf_scheduler *s = wf_scheduler_start(st, NULL, fake_fire, st, &err); /* defaults: 200 ms poll */
    ck_assert_ptr_nonnull(s);
    sleep_ms(100);
    ck_assert_int_eq(calls(), 0); /* not due: never even claimed */
    ck_assert_int_eq(wait_fired(1, 1000), 1);
    int64_t fired_after = wf_mono_ms() - t0;
    wf_scheduler_stats stats;
    wf_scheduler_get_stats(s, &stats);
    wf_scheduler_stop(s);
    ck_assert_msg(fired_after >= 300 && fired_after <= 300 + 350 * wf_test_time_scale(),
                  "fired after %" PRId64 " ms", fired_after);
    /* Late by at most one poll interval (plus scheduling noise). */
    ck_assert_int_ge(stats.last_lateness_ms, 0);
    ck_assert_int_le(stats.last_lateness_ms, 300 * wf_test_time_scale());
}
END_TEST

WF_CASE_TEST("memory", test_wake_picks_up_a_new_timer_promptly)
{
    new_root(st, "t1", "r1");
    /* A long poll interval: only the wake can make this prompt. */
    wf_scheduler_options o = {.idle_ms = 10000};
    wf_error err = {0};
    wf_scheduler *s = wf_scheduler_start(st, &o, fake_fire, st, &err);
    ck_assert_ptr_nonnull(s);
    sleep_ms(100); /* the first (empty) pass is done; it sleeps now */
    add_timers(st, "t1", "r1", 0, 1, wf_now_us());
    int64_t t0 = wf_mono_ms();
    wf_scheduler_wake(s);
    ck_assert_int_eq(wait_fired(1, 2000), 1);
    int64_t took = wf_mono_ms() - t0;
    wf_scheduler_stop(s);
    ck_assert_msg(took < 200 * wf_test_time_scale(), "fired %" PRId64 " ms after the wake", took);
    wf_scheduler_wake(NULL); /* NULL-safe */
}
END_TEST

WF_CASE_TEST("memory", test_failed_fire_is_retried_after_the_claim_expires)
{
    new_root(st, "t1", "r1");
    add_timers(st, "t1", "r1", 0, 1, wf_now_us() - 10 * MS);
    add_timers(st, "t1", "r1", 1, 1, wf_now_us() - 5 * MS);
    snprintf(rec.fail_id, sizeof rec.fail_id, "r1-0");
    rec.fail_left = 1;
    wf_scheduler_options o = {.idle_ms = 20, .claim_ms = 300};
    wf_error err = {0};
    wf_scheduler *s = wf_scheduler_start(st, &o, fake_fire, st, &err);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(wait_fired(2, 3000), 2);
    wf_scheduler_stats stats;
    wf_scheduler_get_stats(s, &stats);
    wf_scheduler_stop(s);

    int n0 = 0, n1 = 0;
    ck_assert_int_eq(fired_count("r1-0", &n0), 1);
    ck_assert_int_eq(n0, 2); /* failed once, then fired */
    ck_assert_int_eq(fired_count("r1-1", &n1), 1);
    ck_assert_int_eq(n1, 1); /* the failure did not hold the other timer back */
    /* The retry waited for the claim to run out (300 ms), not less. */
    int64_t first = -1, second = -1;
    for (int i = 0; i < rec.n; i++)
        if (strcmp(rec.v[i].id, "r1-0") == 0) {
            if (first < 0)
                first = rec.v[i].at_ms;
            else
                second = rec.v[i].at_ms;
        }
    ck_assert_int_eq(rec.v[0].rc, WF_E_CONFLICT);
    /* Not long after either: a claim that ran out is taken again at the
     * next pass (the bound stretches with the load of the machine). */
    int64_t late = 1000 * (int64_t)wf_test_time_scale_now();
    ck_assert_msg(second - first >= 290 && second - first < late, "retried after %" PRId64 " ms",
                  second - first);
    ck_assert_uint_eq(stats.fire_errors, 1);
    ck_assert_uint_eq(stats.fired, 2);
    ck_assert_uint_eq(timers_left(st, "t1", "r1"), 0);
}
END_TEST

WF_CASE_TEST("memory", test_stop_is_prompt_when_idle)
{
    wf_scheduler_options o = {.idle_ms = 30000};
    wf_error err = {0};
    wf_scheduler *s = wf_scheduler_start(st, &o, fake_fire, st, &err);
    ck_assert_ptr_nonnull(s);
    sleep_ms(100);
    int64_t t0 = wf_mono_ms();
    wf_scheduler_stop(s);
    int64_t took = wf_mono_ms() - t0;
    ck_assert_msg(took < 1000 * wf_test_time_scale(), "stop took %" PRId64 " ms", took);
    wf_scheduler_stop(NULL); /* NULL-safe */
}
END_TEST

/* A store outage reported by fire ends the batch and backs off: 100 due
 * timers with a batch of one would otherwise be tried back to back. Stop
 * stays prompt in the middle of the back-off. */
WF_CASE_TEST("memory", test_outage_backs_off_and_stop_stays_prompt)
{
    new_root(st, "t1", "r1");
    add_timers(st, "t1", "r1", 0, 100, wf_now_us() - 10 * MS);
    rec.unavailable = true;
    wf_scheduler_options o = {.batch = 1, .idle_ms = 10, .backoff_max_ms = 10000};
    wf_error err = {0};
    wf_scheduler *s = wf_scheduler_start(st, &o, fake_fire, st, &err);
    ck_assert_ptr_nonnull(s);
    sleep_ms(1000); /* back-off 250, then 500: calls at about 0, 250 and 750 ms */
    int n = calls();
    int64_t t0 = wf_mono_ms();
    wf_scheduler_stop(s); /* now in a 1 s back-off */
    int64_t took = wf_mono_ms() - t0;
    ck_assert_msg(n >= 2 && n <= 4, "%d fire calls in 1 s", n);
    ck_assert_msg(took < 1000 * wf_test_time_scale(), "stop took %" PRId64 " ms", took);
    ck_assert_uint_eq(timers_left(st, "t1", "r1"), 100);
}
END_TEST

/* Manual mode: no thread; tick drains every due timer, batch by batch. */
WF_CASE_TEST("memory", test_tick_drains_a_backlog_in_batches)
{
    new_root(st, "t1", "r1");
    new_root(st, "t1", "r2");
    add_timers(st, "t1", "r1", 0, 130, wf_now_us() - 1000 * MS);
    add_timers(st, "t1", "r2", 0, 120, wf_now_us() - 500 * MS);
    add_timers(st, "t1", "r2", 500, 1, wf_now_us() + 3600 * 1000 * MS);
    wf_scheduler_options o = {.manual = true, .batch = 100};
    wf_error err = {0};
    wf_scheduler *s = wf_scheduler_start(st, &o, fake_fire, st, &err);
    ck_assert_ptr_nonnull(s);
    sleep_ms(50);
    ck_assert_int_eq(calls(), 0); /* no thread */
    size_t fired = 0;
    ck_assert_int_eq(wf_scheduler_tick(s, &fired, &err), WF_OK);
    ck_assert_uint_eq(fired, 250);
    wf_scheduler_stats stats;
    wf_scheduler_get_stats(s, &stats);
    ck_assert_uint_eq(stats.passes, 3); /* 100 + 100 + 50 */
    ck_assert_int_eq(wf_scheduler_tick(s, &fired, &err), WF_OK);
    ck_assert_uint_eq(fired, 0);
    wf_scheduler_stop(s);
    ck_assert_int_eq(total_fired(), 250);
    ck_assert_uint_eq(timers_left(st, "t1", "r1"), 0);
    ck_assert_uint_eq(timers_left(st, "t1", "r2"), 1);
}
END_TEST

/* wf_sched_batch_fn over fake_fire (arg: the store): records the size
 * of each batch it is handed. */
static size_t batch_sizes[16];
static int n_batches;

static void
fake_fire_batch(void *arg, const wf_timer_row *rows, size_t n, int64_t deadline_ms, bool *fired,
                wf_code *codes, wf_error *errs)
{
    if (n_batches < 16)
        batch_sizes[n_batches] = n;
    n_batches++;
    for (size_t i = 0; i < n; i++) {
        fired[i] = false;
        codes[i] = fake_fire(arg, &rows[i], deadline_ms, &fired[i], &errs[i]);
    }
}

/* With fire_batch, each claimed batch is handed over whole, and each
 * timer's outcome is counted as with fire: fired, gone, failed (retried
 * after its claim). */
WF_CASE_TEST("memory", test_fire_batch_gets_each_claimed_batch_whole)
{
    new_root(st, "t1", "r1");
    new_root(st, "t1", "r2");
    add_timers(st, "t1", "r1", 0, 130, wf_now_us() - 1000 * MS);
    add_timers(st, "t1", "r2", 0, 120, wf_now_us() - 500 * MS);
    snprintf(rec.fail_id, sizeof rec.fail_id, "r2-7");
    rec.fail_left = 1;
    n_batches = 0;
    wf_scheduler_options o = {.manual = true, .batch = 100, .fire_batch = fake_fire_batch};
    wf_error err = {0};
    wf_scheduler *s = wf_scheduler_start(st, &o, fake_fire, st, &err);
    ck_assert_ptr_nonnull(s);
    size_t fired = 0;
    ck_assert_int_eq(wf_scheduler_tick(s, &fired, &err), WF_OK);
    ck_assert_uint_eq(fired, 249);
    ck_assert_int_eq(n_batches, 3);
    ck_assert_uint_eq(batch_sizes[0], 100);
    ck_assert_uint_eq(batch_sizes[1], 100);
    ck_assert_uint_eq(batch_sizes[2], 50);
    wf_scheduler_stats stats;
    wf_scheduler_get_stats(s, &stats);
    ck_assert_uint_eq(stats.fired, 249);
    ck_assert_uint_eq(stats.fire_errors, 1);
    ck_assert_uint_eq(timers_left(st, "t1", "r2"), 1); /* claimed: back after claim_ms */
    wf_scheduler_stop(s);
}
END_TEST

/* ---- Postgres: two replicas on one database ------------------------------ */

static const char *pg_dsn;
static char pg_schema[64];
static char *pg_store_dsn;

/* A fresh schema per case, and a DSN whose search_path is it. */
static void
pg_setup(void)
{
    snprintf(pg_schema, sizeof pg_schema, "wf_sched_%d", (int)getpid());
    pg_store_dsn = wf_test_pg_fresh_schema(pg_dsn, pg_schema);
}

static void
pg_teardown(void)
{
    wf_test_pg_drop_schema(pg_dsn, pg_schema);
    free(pg_store_dsn);
    pg_store_dsn = NULL;
}

static wf_store *
pg_store(void)
{
    wf_store_pg_config cfg = {pg_store_dsn, 4, 2000, 2};
    wf_error err = {0};
    wf_store *s = wf_store_pg_new(&cfg, &err);
    ck_assert_msg(s != NULL, "postgres store: %s", err.msg);
    return s;
}

/* st on a fresh schema, for the cases that run on both stores. */
static void
pg_store_setup(void)
{
    pg_setup();
    st = pg_store();
}

static void
pg_store_teardown(void)
{
    wf_store_free(st);
    st = NULL;
    pg_teardown();
}

/* The integer sql answers on the case's schema. */
static long
pg_scalar(const char *sql)
{
    PGconn *pg = wf_test_pg_connect(pg_store_dsn);
    PGresult *res = PQexec(pg, sql);
    ck_assert_msg(PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1, "%s: %s", sql,
                  PQerrorMessage(pg));
    long v = atol(PQgetvalue(res, 0, 0));
    PQclear(res);
    PQfinish(pg);
    return v;
}

/* Two replicas (a store and a scheduler each) fire 200 due timers spread
 * over a few roots of two tenants; every timer fires exactly once in
 * total. claim_ms is the variable: with 30 s the claims keep the replicas
 * apart; with 20 ms and slow fires the claims run out mid-batch, both
 * replicas get the same timers, and only the protocol (delete under the
 * root lock, fire only if still there) keeps it to once. */
static void
two_replicas(int64_t claim_ms, int delay_ms)
{
    wf_store *a = pg_store(), *b = pg_store();
    char root[32];
    for (int r = 0; r < 10; r++) {
        const char *tenant = r % 2 == 0 ? "t1" : "t2";
        snprintf(root, sizeof root, "root%d", r);
        new_root(a, tenant, root);
        add_timers(a, tenant, root, 0, 20, wf_now_us() - (r + 1) * MS);
    }
    rec.delay_ms = delay_ms;
    wf_scheduler_options o = {.batch = 25, .claim_ms = claim_ms, .idle_ms = 20};
    wf_error err = {0};
    wf_scheduler *sa = wf_scheduler_start(a, &o, fake_fire, a, &err);
    ck_assert_msg(sa != NULL, "start: %s", err.msg);
    wf_scheduler *sb = wf_scheduler_start(b, &o, fake_fire, b, &err);
    ck_assert_msg(sb != NULL, "start: %s", err.msg);
    ck_assert_int_eq(wait_fired(200, 30000), 200);
    /* More passes; with short claims, let every stale claim run out and be
     * tried again: still nothing may fire twice. */
    sleep_ms(claim_ms < 1000 ? 300 + (int)claim_ms : 300);
    wf_scheduler_stats xa, xb;
    wf_scheduler_get_stats(sa, &xa);
    wf_scheduler_get_stats(sb, &xb);
    wf_scheduler_stop(sa);
    wf_scheduler_stop(sb);

    ck_assert_int_eq(total_fired(), 200);
    for (int r = 0; r < 10; r++)
        for (int i = 0; i < 20; i++) {
            char id[48];
            snprintf(id, sizeof id, "root%d-%d", r, i);
            ck_assert_msg(fired_count(id, NULL) == 1, "%s fired %d times", id,
                          fired_count(id, NULL));
        }
    ck_assert_uint_eq(xa.fired + xb.fired, 200);
    ck_assert_uint_eq(xa.fire_errors + xb.fire_errors, 0);
    for (int r = 0; r < 10; r++) {
        snprintf(root, sizeof root, "root%d", r);
        ck_assert_uint_eq(timers_left(a, r % 2 == 0 ? "t1" : "t2", root), 0);
    }
    printf("claim %" PRId64 " ms: replica a fired %" PRIu64 " (%" PRIu64 " gone), b fired %" PRIu64
           " (%" PRIu64 " gone)\n",
           claim_ms, xa.fired, xa.gone, xb.fired, xb.gone);
    wf_store_free(a);
    wf_store_free(b);
}

WF_CASE_TEST("postgres", test_pg_two_replicas_fire_each_timer_once)
{
    two_replicas(30000, 1);
}
END_TEST

WF_CASE_TEST("postgres", test_pg_expired_claims_still_fire_once)
{
    two_replicas(20, 5);
}
END_TEST

/* ---- lease expiry, signal TTL, retention ---------------------------------- */

/* Writes rows of tenant in one unit of work (no root lock: test setup). */
static void
put_rows(wf_store *db, const char *tenant, const wf_store_changes *c)
{
    wf_arena *a = wf_arena_new();
    wf_store_ctx ctx = {tenant, 0, a};
    wf_error err = {0};
    wf_tx *tx = NULL;
    ck_assert_int_eq(wf_store_begin(db, &ctx, &tx, &err), WF_OK);
    ck_assert_msg(wf_tx_apply(tx, c, &err) == WF_OK, "apply: %s", err.msg);
    ck_assert_msg(wf_tx_commit(tx, &err) == WF_OK, "commit: %s", err.msg);
    wf_arena_free(a);
}

/* An ACTIVATED job of root with key and lease end lease_at (us). */
static void
add_leased_job(wf_store *db, const char *tenant, const char *root, const char *id, const char *key,
               int64_t lease_at)
{
    wf_job_row j = {.id = S(id),
                    .key = S(key),
                    .root_id = S(root),
                    .instance_id = S(root),
                    .work_item_id = S("w"),
                    .transition_id = S("charge"),
                    .job_type = S("charge"),
                    .state = WF_JOB_ACTIVATED,
                    .worker = S("w1"),
                    .attempt = 1,
                    .max_attempts = 3,
                    .activatable_at = wf_now_us() - 3600 * 1000 * MS,
                    .lease_expires_at = lease_at,
                    .variables_json = S("{}"),
                    .created_at = wf_now_us()};
    put_rows(db, tenant, &(wf_store_changes){.jobs = &j, .n_jobs = 1});
}

/* The job id of root as loaded under its lock (copied into a). */
static wf_job_row
job_of(wf_store *db, wf_arena *a, const char *tenant, const char *root)
{
    wf_store_ctx ctx = {tenant, 0, a};
    wf_error err = {0};
    wf_tx *tx = NULL;
    wf_aggregate g;
    ck_assert_int_eq(wf_store_begin(db, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_lock_root(tx, root, &g, &err), WF_OK);
    ck_assert_uint_eq(g.n_jobs, 1);
    wf_job_row j = g.jobs[0];
    wf_tx_rollback(tx);
    return j;
}

/* Events of tenant of the given type (all types when NULL). */
static size_t
events_of(wf_store *db, const char *tenant, const char *type, const char *instance_id)
{
    wf_arena *a = wf_arena_new();
    wf_store_ctx ctx = {tenant, 0, a};
    const char *types[] = {type};
    wf_event_filter f = {instance_id, NULL, types, type != NULL ? 1 : 0};
    wf_event_row *rows;
    size_t n = 0;
    wf_error err = {0};
    ck_assert_int_eq(wf_store_read_events(db, &ctx, 0, &f, 1000, &rows, &n, &err), WF_OK);
    wf_arena_free(a);
    return n;
}

static struct {
    int n;
    char last[128];
} wakes;

static void
record_wake(void *arg, const char *topic)
{
    (void)arg;
    wakes.n++;
    snprintf(wakes.last, sizeof wakes.last, "%s", topic);
}

static wf_scheduler *
manual(const wf_scheduler_options *extra)
{
    wf_scheduler_options o = {0};
    if (extra != NULL)
        o = *extra;
    o.manual = true;
    o.wake = record_wake;
    wf_error err = {0};
    wf_scheduler *s = wf_scheduler_start(st, &o, fake_fire, st, &err);
    ck_assert_ptr_nonnull(s);
    return s;
}

/* A lease that ran out: the job is activatable again at once (no attempt
 * spent, key dropped), JOB_LEASE_EXPIRED is written once, and the job
 * type's long polls are woken. A lease still running is left alone. */
WF_CASE_TEST("memory", test_expired_lease_is_ended_once)
{
    new_root(st, "t1", "r1");
    new_root(st, "t1", "r2");
    add_leased_job(st, "t1", "r1", "j1", "k1", wf_now_us() - 10 * MS);
    add_leased_job(st, "t1", "r2", "j2", "k2", wf_now_us() + 3600 * 1000 * MS);
    wf_scheduler *s = manual(NULL);
    wf_sched_counts c;
    wf_error err = {0};
    ck_assert_int_eq(wf_scheduler_run(s, NULL, false, 0, &c, &err), WF_OK);
    ck_assert_uint_eq(c.leases_expired, 1);
    ck_assert_uint_eq(c.timers_fired, 0);
    wf_scheduler_stats total; /* what /metrics exposes */
    wf_scheduler_get_stats(s, &total);
    ck_assert_uint_eq(total.leases_expired, 1);
    ck_assert_int_ge(wakes.n, 1);
    ck_assert_str_eq(wakes.last, "jobs:charge");

    wf_arena *a = wf_arena_new();
    wf_job_row j = job_of(st, a, "t1", "r1");
    ck_assert_int_eq(j.state, WF_JOB_ACTIVATABLE);
    ck_assert_ptr_null(j.key);
    ck_assert_ptr_null(j.worker);
    ck_assert_int_eq(j.attempt, 1);
    ck_assert_int_le(j.activatable_at, wf_now_us());
    ck_assert_int_eq(job_of(st, a, "t1", "r2").state, WF_JOB_ACTIVATED);
    ck_assert_uint_eq(events_of(st, "t1", "JOB_LEASE_EXPIRED", "r1"), 1);

    /* The stale key finds nothing; ActivateJobs hands the job out again. */
    wf_store_ctx ctx = {"t1", 0, a};
    wf_job_row got;
    ck_assert_int_eq(wf_store_get_job_by_key(st, &ctx, "k1", &got, &err), WF_E_JOB_NOT_FOUND);
    wf_job_row *rows;
    size_t n = 0;
    ck_assert_int_eq(
        wf_store_activate_jobs(st, &ctx, "charge", "w2", 10, 1000, wf_now_us(), &rows, &n, &err),
        WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(rows[0].id, "j1");

    /* Nothing left to expire: a second run changes nothing. */
    ck_assert_int_eq(wf_scheduler_run(s, NULL, false, 0, &c, &err), WF_OK);
    ck_assert_uint_eq(c.leases_expired, 0);
    ck_assert_uint_eq(events_of(st, "t1", "JOB_LEASE_EXPIRED", NULL), 1);
    wf_scheduler_stop(s);
    wf_arena_free(a);
}
END_TEST

/* A run for one tenant fires, expires and sweeps only that tenant. */
WF_CASE_TEST("memory", test_tenant_run_leaves_other_tenants_alone)
{
    new_root(st, "t1", "r1");
    new_root(st, "t2", "r2");
    add_timers(st, "t1", "r1", 0, 3, wf_now_us() - 10 * MS);
    add_timers(st, "t2", "r2", 0, 2, wf_now_us() - 10 * MS);
    add_leased_job(st, "t2", "r2", "j2", "k2", wf_now_us() - 10 * MS);
    wf_scheduler *s = manual(NULL);
    wf_sched_counts c;
    wf_error err = {0};
    ck_assert_int_eq(wf_scheduler_run(s, "t1", true, 0, &c, &err), WF_OK);
    ck_assert_uint_eq(c.timers_fired, 3);
    ck_assert_uint_eq(c.leases_expired, 0);
    ck_assert_uint_eq(timers_left(st, "t1", "r1"), 0);
    ck_assert_uint_eq(timers_left(st, "t2", "r2"), 2);
    ck_assert_int_eq(wf_scheduler_run(s, "t2", false, 0, &c, &err), WF_OK);
    ck_assert_uint_eq(c.timers_fired, 2);
    ck_assert_uint_eq(c.leases_expired, 1);
    wf_scheduler_stop(s);
}
END_TEST

/* A buffered signal past its TTL leaves the buffer (kept in the log, never
 * consumed); one still in its TTL stays. */
WF_CASE_TEST("memory", test_buffered_signal_expires)
{
    int64_t now = wf_now_us();
    wf_signal_row sig[2] = {
        {.id = S("s1"),
         .name = S("paid"),
         .instance_id = S("r1"),
         .payload_json = S("{}"),
         .outcome = WF_SIGNAL_BUFFERED,
         .buffered = true,
         .received_at = now - 2000 * MS,
         .expires_at = now - 1000 * MS},
        {.id = S("s2"),
         .name = S("paid"),
         .instance_id = S("r1"),
         .payload_json = S("{}"),
         .outcome = WF_SIGNAL_BUFFERED,
         .buffered = true,
         .received_at = now - 2000 * MS,
         .expires_at = now + 3600 * 1000 * MS},
    };
    put_rows(st, "t1", &(wf_store_changes){.signals = sig, .n_signals = 2});
    wf_scheduler *s = manual(NULL);
    wf_sched_counts c;
    wf_error err = {0};
    ck_assert_int_eq(wf_scheduler_run(s, "t1", false, 0, &c, &err), WF_OK);
    ck_assert_uint_eq(c.signals_expired, 1);
    ck_assert_int_eq(wf_scheduler_run(s, "t1", false, 0, &c, &err), WF_OK);
    ck_assert_uint_eq(c.signals_expired, 0);
    wf_scheduler_stop(s);

    wf_arena *a = wf_arena_new();
    wf_store_ctx ctx = {"t1", 0, a};
    wf_signal_filter f = {.instance_id = "r1"};
    wf_signal_row *rows;
    size_t n = 0;
    char *next = NULL;
    ck_assert_int_eq(wf_store_list_signals(st, &ctx, &f, 10, NULL, &rows, &n, &next, &err), WF_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(rows[0].id, "s1");
    ck_assert(!rows[0].buffered);
    ck_assert(rows[0].discarded);
    ck_assert_int_eq(rows[0].consumed_at, 0);
    ck_assert(rows[1].buffered);
    wf_arena_free(a);
}
END_TEST

/* Retention removes old request records, expired signals and, when event
 * retention is set, the events of trees that ended long enough ago; the
 * events of a running tree and recent rows stay. Batches are bounded. */
WF_CASE_TEST("memory", test_retention_sweep)
{
    int64_t now = wf_now_us(), hour = 3600 * 1000 * MS;
    new_root(st, "t1", "live");
    wf_instance_row done = {.id = S("done"),
                            .definition_key = S("def"),
                            .definition_version = 1,
                            .root_id = S("done"),
                            .status = WF_INSTANCE_COMPLETED,
                            .variables_json = S("{}"),
                            .created_at = now - 3 * hour,
                            .updated_at = now - 2 * hour,
                            .ended_at = now - 2 * hour};
    wf_event_row ev[3] = {
        {0, NULL, S("done"), S("done"), S("INSTANCE_STARTED"), NULL, S("{}"), now - 3 * hour},
        {0, NULL, S("done"), S("done"), S("INSTANCE_COMPLETED"), NULL, S("{}"), now - 2 * hour},
        {0, NULL, S("live"), S("live"), S("INSTANCE_STARTED"), NULL, S("{}"), now - 3 * hour},
    };
    put_rows(
        st, "t1",
        &(wf_store_changes){.instances = &done, .n_instances = 1, .events = ev, .n_events = 3});
    /* A second ended tree with more events than one batch holds. */
    wf_instance_row done2 = done;
    done2.id = done2.root_id = S("done2");
    wf_event_row ev2[4];
    for (int i = 0; i < 4; i++)
        ev2[i] = (wf_event_row){0,    NULL,    S("done2"),    S("done2"), S("TASK_CREATED"),
                                NULL, S("{}"), now - 3 * hour};
    put_rows(
        st, "t1",
        &(wf_store_changes){.instances = &done2, .n_instances = 1, .events = ev2, .n_events = 4});
    wf_arena *a = wf_arena_new();
    wf_idempotency_row idem[5];
    for (int i = 0; i < 5; i++)
        idem[i] = (wf_idempotency_row){.method = S("StartInstance"),
                                       .request_id = wf_arena_printf(a, "r%d", i),
                                       .request_hash = S("h"),
                                       .created_at = i < 4 ? now - 2 * hour : now};
    wf_signal_row gone = {.id = S("s1"),
                          .name = S("paid"),
                          .instance_id = S("done"),
                          .outcome = WF_SIGNAL_BUFFERED,
                          .received_at = now - 3 * hour,
                          .expires_at = now - 2 * hour,
                          .discarded = true};
    wf_store_ctx ctx = {"t1", 0, a};
    wf_error err = {0};
    wf_tx *tx = NULL;
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(wf_tx_idempotency_put(tx, &idem[i], &err), WF_OK);
    ck_assert_int_eq(wf_tx_apply(tx, &(wf_store_changes){.signals = &gone, .n_signals = 1}, &err),
                     WF_OK);
    ck_assert_int_eq(wf_tx_commit(tx, &err), WF_OK);

    /* Without event retention: events stay, the rest goes (batches of 3). */
    wf_scheduler_options o = {.sweep_batch = 3,
                              .idempotency_retention_ms = 3600 * 1000,
                              .signal_retention_ms = 3600 * 1000};
    wf_scheduler *s = manual(&o);
    wf_sched_counts c;
    ck_assert_int_eq(wf_scheduler_run(s, "t1", true, 0, &c, &err), WF_OK);
    ck_assert_uint_eq(c.rows_removed, 5); /* 4 records + 1 signal */
    wf_scheduler_stop(s);
    ck_assert_uint_eq(events_of(st, "t1", NULL, NULL), 7);
    bool found = true;
    wf_idempotency_row r;
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_idempotency_get(tx, "StartInstance", "r0", &r, &found, &err), WF_OK);
    ck_assert(!found);
    ck_assert_int_eq(wf_tx_idempotency_get(tx, "StartInstance", "r4", &r, &found, &err), WF_OK);
    ck_assert(found);
    wf_tx_rollback(tx);

    /* With it: the ended trees' events go (over three batches of 3), the
     * running tree's stay. */
    o.event_retention_ms = 3600 * 1000;
    s = manual(&o);
    ck_assert_int_eq(wf_scheduler_run(s, "t1", true, 0, &c, &err), WF_OK);
    ck_assert_uint_eq(c.rows_removed, 6);
    wf_scheduler_stop(s);
    ck_assert_uint_eq(events_of(st, "t1", NULL, "done"), 0);
    ck_assert_uint_eq(events_of(st, "t1", NULL, "done2"), 0);
    ck_assert_uint_eq(events_of(st, "t1", NULL, "live"), 1);
    if (pg_store_dsn != NULL) {
        /* Postgres marks the emptied roots, so later passes skip them. */
        ck_assert_int_eq(pg_scalar("SELECT count(*) FROM instances WHERE events_swept"), 2);
        ck_assert_int_eq(pg_scalar("SELECT count(*) FROM instances WHERE events_swept AND id "
                                   "IN ('done', 'done2')"),
                         2);
    }
    wf_arena_free(a);
}
END_TEST

/* ---- Postgres: schedules on three replicas -------------------------------- */

#define SCHED_N 12
#define SCHED_STEPS 8
#define SCHED_REPLICAS 3
#define SCHED_MIN INT64_C(60000000)

typedef struct sched_replica {
    wf_store *st;
    int index;
    size_t started, already, errors;
    char error[300];
} sched_replica;

static pthread_barrier_t sched_barrier;
static int64_t sched_t0;

/* One replica: at each minute, passes until it claims nothing. Its clock
 * moves 2 ms a pass and its leases last 1 ms, so a schedule another
 * replica is firing is claimed again at once: only the run row keeps
 * each fire time to one instance. */
static void *
sched_replica_main(void *arg)
{
    sched_replica *r = arg;
    char owner[16];
    snprintf(owner, sizeof owner, "r%d", r->index);
    wf_schedule_host h = {.store = r->st, .lease_ms = 1};
    for (int k = 1; k <= SCHED_STEPS; k++) {
        pthread_barrier_wait(&sched_barrier);
        int64_t base = sched_t0 + k * SCHED_MIN + 1000000;
        for (int pass = 0; pass < 200; pass++) {
            wf_schedule_pass_counts c;
            wf_error err = {0};
            wf_code rc = wf_schedules_pass(&h, NULL, owner, base + pass * 2000, 3,
                                           wf_mono_ms() + 10000, &c, &err);
            if (rc != WF_OK) {
                r->errors++;
                snprintf(r->error, sizeof r->error, "%s: %s", wf_code_reason(rc), err.msg);
                break;
            }
            r->started += c.started;
            r->already += c.already;
            if (c.schedules == 0)
                break;
        }
    }
    return NULL;
}

/* SCHED_N schedules firing every minute, fired by three replicas at once
 * over SCHED_STEPS minutes: every fire time started exactly once (one
 * run, one instance naming it), none twice, none lost. */
WF_CASE_TEST("postgres", test_pg_replicas_start_each_fire_time_once)
{
    wf_store *main_st = pg_store();
    wf_arena *a = wf_arena_new();
    wf_ref_ctx ctx = {.store = main_st, .tenant = "t1", .actor = "ops", .arena = a};
    wf_start_spec first = {.definition_key = "report"};
    wf_instance_row inst;
    wf_error err = {0};
    ck_assert_msg(wf_instances_start(&ctx, &first, NULL, &inst, &err) == WF_OK, "%s", err.msg);
    sched_t0 = (wf_now_us() / SCHED_MIN) * SCHED_MIN;
    for (int i = 0; i < SCHED_N; i++) {
        char id[16];
        snprintf(id, sizeof id, "s%d", i);
        wf_schedule_in in = {.id = wf_arena_strdup(a, id),
                             .definition_key = "report",
                             .spec = {.interval = "every 1m"},
                             .overlap = WF_OVERLAP_ALLOW_ALL};
        wf_schedule_view v;
        ck_assert_msg(wf_schedules_create(&ctx, &in, sched_t0, NULL, &v, &err) == WF_OK, "%s",
                      err.msg);
    }
    sched_replica r[SCHED_REPLICAS];
    pthread_t th[SCHED_REPLICAS];
    pthread_barrier_init(&sched_barrier, NULL, SCHED_REPLICAS);
    for (int i = 0; i < SCHED_REPLICAS; i++) {
        r[i] = (sched_replica){.st = pg_store(), .index = i};
        pthread_create(&th[i], NULL, sched_replica_main, &r[i]);
    }
    size_t started = 0, already = 0;
    for (int i = 0; i < SCHED_REPLICAS; i++) {
        pthread_join(th[i], NULL);
        ck_assert_msg(r[i].errors == 0, "replica %d: %s", i, r[i].error);
        started += r[i].started;
        already += r[i].already;
        wf_store_free(r[i].st);
    }
    pthread_barrier_destroy(&sched_barrier);
    long want = SCHED_N * SCHED_STEPS;
    ck_assert_int_eq((long)started, want);
    ck_assert_int_eq(pg_scalar("SELECT count(*) FROM schedule_runs WHERE outcome = 1"), want);
    ck_assert_int_eq(pg_scalar("SELECT count(*) FROM schedule_runs"), want);
    ck_assert_int_eq(
        pg_scalar("SELECT count(*) FROM instances WHERE variables_json LIKE '%\"schedule\":%'"),
        want);
    ck_assert_int_eq(pg_scalar("SELECT count(*) FROM instances i JOIN schedule_runs r "
                               "ON r.instance_id = i.id AND r.tenant_id = i.tenant_id"),
                     want);
    printf("schedules: %ld fire times started once by %d replicas (%zu found handled already)\n",
           want, SCHED_REPLICAS, already);
    wf_arena_free(a);
    wf_store_free(main_st);
}
END_TEST

static Suite *
scheduler_suite(void)
{
    if (!wf_test_store_is_pg())
        return wf_test_suite_of(
            "scheduler", (const wf_test_case[]){{"memory", mem_setup, mem_teardown, 30}, {NULL}});
    pg_dsn = getenv("WF_TEST_PG_DSN");
    Suite *s = wf_test_suite_of(
        "scheduler", (const wf_test_case[]){{"postgres", pg_setup, pg_teardown, 90}, {NULL}});
    /* The retention sweep of the memory case again, on a Postgres store. */
    TCase *ps = tcase_create("postgres store");
    tcase_add_checked_fixture(ps, pg_store_setup, pg_store_teardown);
    tcase_set_timeout(ps, 60);
    tcase_add_test(ps, test_retention_sweep);
    suite_add_tcase(s, ps);
    return s;
}

int
main(void)
{
    wf_test_quiet_log(); /* injected failures log warnings */
    return wf_test_run(scheduler_suite());
}
