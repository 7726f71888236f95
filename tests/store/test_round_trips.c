/*
 * Round trips to Postgres per call, counted by the store (wf_store_stats:
 * flights, statements and the transactions they ended). Each case runs the
 * engine call an RPC handler makes, with a request id as clients send one,
 * on the test's thread with nothing else using the store, and asserts how
 * many flights it took, and how many transactions (one per unit of work;
 * SendSignal's read of the subscriptions runs on its own, one more):
 *
 *   StartInstance  2: BEGIN + request lookup + definition, then the
 *                  writes + request record + COMMIT
 *   ActivateJobs   2: BEGIN + the lease, then the JOB_ACTIVATED events the
 *                  engine builds + COMMIT (1 while the statement wrote
 *                  the events itself); with a request id 2 as well (BEGIN
 *                  + lookup + lease, then events + record + COMMIT)
 *   CompleteJob    2: the key names the job's instance, so BEGIN + lookup
 *                  + lock and aggregate, then writes + record + COMMIT; a
 *                  key made before (a bare UUID) is read by key first, 3
 *   SendSignal     3 by aggregate to one waiting instance: the
 *                  subscriptions, then as CompleteJob; 8 with start when
 *                  it starts an instance: the subscriptions, BEGIN + the
 *                  request lookup + the correlation lock, whether one waits, whether a root of
 *                  the aggregate is live (each read after the lock), then
 *                  what StartInstance reads, the first wait's lock and
 *                  buffer, and the writes + record + COMMIT
 *
 * A regression (one more round trip or transaction) fails here. Needs WF_TEST_PG_DSN;
 * skipped otherwise. Each case runs in its own schema.
 */
#include <check.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "defcache.h"
#include "engine_kit.h"
#include "expr.h"
#include "net_runtime.h"
#include "instances.h"
#include "referral.h"
#include "signals.h"
#include "store.h"
#include "uow.h"
#include "test_support.h"
#include "wf_log.h"

/* Flights per call. */
#define START_FLIGHTS 2
#define ACTIVATE_FLIGHTS 2
#define ACTIVATE_IDEM_FLIGHTS 2
#define COMPLETE_FLIGHTS 2
#define COMPLETE_OLD_KEY_FLIGHTS 3
#define SIGNAL_FLIGHTS 3
#define SIGNAL_START_FLIGHTS 8
/* Transactions per call (COMMITs, and statements run on their own). */
#define START_TX 1
#define ACTIVATE_TX 1
#define COMPLETE_TX 1
#define COMPLETE_OLD_KEY_TX 2
#define SIGNAL_TX 2
#define SIGNAL_START_TX 2

static const char *dsn;
static char schema[64];
static char *store_dsn;
static wf_store *st;
static wf_arena *arena;

static void
setup(void)
{
    snprintf(schema, sizeof schema, "wf_rt_%d", (int)getpid());
    free(store_dsn);
    store_dsn = wf_test_pg_fresh_schema(dsn, schema);
    wf_store_pg_config cfg = {store_dsn, 2, 1000, 2};
    wf_error err = {0};
    st = wf_store_pg_new(&cfg, &err);
    ck_assert_msg(st != NULL, "postgres store: %s", err.msg);
    arena = wf_arena_new();
    ck_assert_ptr_nonnull(arena);
}

static void
teardown(void)
{
    kit_teardown();
    wf_test_pg_drop_schema(dsn, schema);
}

static wf_runtime_ctx
ctx(void)
{
    return kit_ctx("t");
}

/* ---- counting ---------------------------------------------------------------------------- */

typedef struct counts {
    int64_t flights, statements, transactions;
} counts;

static counts
now_counts(void)
{
    wf_store_stats s;
    wf_store_get_stats(st, &s);
    return (counts){s.flights, s.statements, s.transactions};
}

static counts
since(counts before)
{
    counts c = now_counts();
    return (counts){c.flights - before.flights, c.statements - before.statements,
                    c.transactions - before.transactions};
}

/* ---- requests ---------------------------------------------------------------------------- */

static wf_uow_idem
idem(const char *method)
{
    return kit_request(arena, method);
}

/* s -> step (AUTO job "ship") -> e, and s -> paid (MSG "payment" by
 * aggregate) -> e */
static void
deploy_nets(void)
{
    static wf_transition tj[] = {{.id = "step", .trigger = WF_TRIGGER_AUTO, .job_type = "ship"}};
    kit_deploy_line(ctx(), "jobs", tj);
    kit_deploy_msg_net(ctx(), "msg", WF_CORRELATION_AGGREGATE);
}

static wf_code
start(const char *key, const char *aggregate_id, wf_instance_row *in)
{
    wf_ref_ctx c = ctx().ref;
    wf_start_spec spec = kit_order_spec(key, aggregate_id);
    wf_uow_idem i = idem("StartInstance");
    *in = kit_start(&c, &spec, &i);
    return WF_OK;
}

static wf_runtime_activated
activate(bool with_request_id)
{
    wf_runtime_ctx c = ctx();
    wf_runtime_activation a = {.job_type = "ship", .worker = "w", .max_jobs = 1, .lease_ms = 60000};
    wf_uow_idem i = idem("ActivateJobs");
    wf_runtime_activated got;
    wf_error err;
    wf_code rc =
        wf_runtime_activate_recorded(&c, &a, with_request_id ? &i : NULL, true, &got, &err);
    ck_assert_msg(rc == WF_OK, "activate: %s %s", wf_code_reason(rc), err.msg);
    ck_assert_uint_eq(got.n, 1);
    return got;
}

#define ASSERT_FLIGHTS(what, got, want, want_tx)                                                   \
    do {                                                                                           \
        fprintf(stderr, "%-34s %lld flights, %lld statements, %lld transactions\n", what,          \
                (long long)(got).flights, (long long)(got).statements,                             \
                (long long)(got).transactions);                                                    \
        ck_assert_msg((got).flights == (want), "%s: %lld flights, want %d", what,                  \
                      (long long)(got).flights, (int)(want));                                      \
        ck_assert_msg((got).transactions == (want_tx), "%s: %lld transactions, want %d", what,     \
                      (long long)(got).transactions, (int)(want_tx));                              \
    } while (0)

/* ---- cases ------------------------------------------------------------------------------- */

/* A retry replays, also when the body sends nothing before its commit
 * (the definition named by version is cached): the lookup then rides
 * with the commit, whose record fails, and is read again on its own. */
WF_TEST(test_replay_when_the_lookup_rides_with_the_commit)
{
    deploy_nets();
    wf_ref_ctx c = ctx().ref;
    wf_start_spec spec = {.definition_key = "jobs", .version = 1};
    wf_instance_row first, again;
    wf_error err;
    for (int i = 0; i < 2; i++) { /* the second caches version 1 */
        wf_uow_idem w = idem("StartInstance");
        ck_assert_int_eq(wf_instances_start(&c, &spec, &w, &first, &err), WF_OK);
    }
    wf_uow_idem i1 = idem("StartInstance");
    ck_assert_int_eq(wf_instances_start(&c, &spec, &i1, &first, &err), WF_OK);
    ck_assert(!i1.replayed);
    wf_uow_idem i2 = i1;
    counts c0 = now_counts();
    wf_code rc = wf_instances_start(&c, &spec, &i2, &again, &err);
    ck_assert_msg(rc == WF_OK, "replay: %s %s", wf_code_reason(rc), err.msg);
    ck_assert(i2.replayed);
    ck_assert_int_le(since(c0).flights, 4);
    i2.request_hash = "other";
    ck_assert_int_eq(wf_instances_start(&c, &spec, &i2, &again, &err), WF_E_REQUEST_ID_REUSED);
}
END_TEST

/* Deferred writes of a unit of work rolled back before its commit are
 * sent with the ROLLBACK (one flight) and leave nothing behind; the
 * connection stays usable. A stale instance version fails at commit. */
WF_TEST(test_deferred_writes_rolled_back_or_refused)
{
    wf_store_ctx sc = {"default", 0, arena};
    wf_instance_row in = {.id = "r1",
                          .definition_key = "k",
                          .definition_version = 1,
                          .root_id = "r1",
                          .status = WF_INSTANCE_RUNNING,
                          .variables_json = "{}",
                          .created_at = 1,
                          .updated_at = 1};
    wf_store_changes ch = {.instances = &in, .n_instances = 1};
    wf_tx *tx = NULL;
    wf_error err;
    counts c0 = now_counts();
    ck_assert_int_eq(wf_store_begin(st, &sc, &tx, &err), WF_OK);
    wf_tx_defer_writes(tx);
    ck_assert_int_eq(wf_tx_apply(tx, &ch, &err), WF_OK);
    wf_tx_rollback(tx);
    ck_assert_int_eq(since(c0).flights, 1);
    wf_instance_row got;
    ck_assert_int_eq(wf_store_get_instance(st, &sc, "r1", &got, &err), WF_E_INSTANCE_NOT_FOUND);

    /* Written for good, then a stale update (version 0 again is "new":
     * the insert conflicts; version 5 does not match) fails the commit. */
    ck_assert_int_eq(wf_store_begin(st, &sc, &tx, &err), WF_OK);
    wf_tx_defer_writes(tx);
    ck_assert_int_eq(wf_tx_apply(tx, &ch, &err), WF_OK);
    ck_assert_int_eq(wf_tx_commit(tx, &err), WF_OK);
    in.version = 5;
    in.status = WF_INSTANCE_COMPLETED;
    ck_assert_int_eq(wf_store_begin(st, &sc, &tx, &err), WF_OK);
    wf_tx_defer_writes(tx);
    ck_assert_int_eq(wf_tx_apply(tx, &ch, &err), WF_OK);
    ck_assert_int_eq(wf_tx_commit(tx, &err), WF_E_CONFLICT);
    ck_assert_int_eq(wf_store_get_instance(st, &sc, "r1", &got, &err), WF_OK);
    ck_assert_int_eq(got.status, WF_INSTANCE_RUNNING);
    ck_assert_int_eq(got.version, 1);
}
END_TEST

WF_TEST(test_round_trips_per_call)
{
    deploy_nets();
    wf_instance_row in;
    /* Warm: the definitions are cached, the statements prepared (one
     * instance per kind). */
    start("jobs", NULL, &in);
    start("jobs", NULL, &in);
    start("jobs", NULL, &in);
    start("msg", "warm", &in);
    (void)activate(false);

    counts c0 = now_counts();
    start("jobs", NULL, &in);
    ASSERT_FLIGHTS("StartInstance (request id)", since(c0), START_FLIGHTS, START_TX);

    c0 = now_counts();
    wf_runtime_activated got = activate(false);
    ASSERT_FLIGHTS("ActivateJobs", since(c0), ACTIVATE_FLIGHTS, ACTIVATE_TX);

    c0 = now_counts();
    got = activate(true);
    ASSERT_FLIGHTS("ActivateJobs (request id)", since(c0), ACTIVATE_IDEM_FLIGHTS, ACTIVATE_TX);

    wf_runtime_ctx c = ctx();
    wf_error err;
    c0 = now_counts();
    wf_uow_idem i = idem("CompleteJob");
    wf_code rc = wf_runtime_complete_job(&c, got.rows[0].key, "{}", &i, &err);
    ck_assert_msg(rc == WF_OK, "complete: %s %s", wf_code_reason(rc), err.msg);
    ASSERT_FLIGHTS("CompleteJob (request id)", since(c0), COMPLETE_FLIGHTS, COMPLETE_TX);

    /* A key as made before keys named their instance (a bare UUID)
     * still completes its job, after a read by key. */
    start("jobs", NULL, &in);
    got = activate(false);
    wf_test_pg_admin(dsn, "UPDATE %s.jobs SET key = substring(key FROM position('.' IN key) + 1)",
                     schema);
    const char *bare = strchr(got.rows[0].key, '.') + 1;
    c0 = now_counts();
    i = idem("CompleteJob");
    rc = wf_runtime_complete_job(&c, bare, "{}", &i, &err);
    ck_assert_msg(rc == WF_OK, "complete (bare key): %s %s", wf_code_reason(rc), err.msg);
    ASSERT_FLIGHTS("CompleteJob (a bare UUID key)", since(c0), COMPLETE_OLD_KEY_FLIGHTS,
                   COMPLETE_OLD_KEY_TX);
    /* A spent key of either form: JOB_LEASE_LOST; neither form: not found. */
    ck_assert_int_eq(wf_runtime_complete_job(&c, bare, "{}", NULL, &err), WF_E_JOB_LEASE_LOST);
    ck_assert_int_eq(wf_runtime_complete_job(&c, got.rows[0].key, "{}", NULL, &err),
                     WF_E_JOB_LEASE_LOST);
    ck_assert_int_eq(wf_runtime_complete_job(&c, "x.not-a-uuid", "{}", NULL, &err),
                     WF_E_JOB_NOT_FOUND);

    start("msg", "A-1", &in);
    wf_runtime_send_signal_in s = {
        .name = "payment", .aggregate_type = "order", .aggregate_id = "A-1", .has_aggregate = true};
    wf_runtime_send_signal_out out;
    c0 = now_counts();
    i = idem("SendSignal");
    rc = wf_runtime_send_signal(&c, &s, &i, &out, &err);
    ck_assert_msg(rc == WF_OK, "send: %s %s", wf_code_reason(rc), err.msg);
    ck_assert_int_eq(out.outcome, WF_SIGNAL_CORRELATED);
    ASSERT_FLIGHTS("SendSignal by aggregate (request id)", since(c0), SIGNAL_FLIGHTS, SIGNAL_TX);

    /* Correlate or start, nobody of the aggregate there: it starts one. */
    wf_start_spec spec = {.definition_key = "msg"};
    s.aggregate_id = "A-2";
    s.start = &spec;
    c0 = now_counts();
    i = idem("SendSignal");
    rc = wf_runtime_send_signal(&c, &s, &i, &out, &err);
    ck_assert_msg(rc == WF_OK, "send with start: %s %s", wf_code_reason(rc), err.msg);
    ck_assert_int_eq(out.outcome, WF_SIGNAL_STARTED);
    ASSERT_FLIGHTS("SendSignal with start (request id)", since(c0), SIGNAL_START_FLIGHTS,
                   SIGNAL_START_TX);
}
END_TEST

int
main(void)
{
    dsn = wf_test_pg_dsn();
    kit_fixture(&st, &arena);
    wf_test_quiet_log();
    return wf_test_run(wf_test_suite("round_trips", "flights", setup, teardown, 60));
}
