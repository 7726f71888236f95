/*
 * test_store_buffers.c: the buffer guard of the Postgres store.
 *
 * The plan guard (test_store_plans.c) reads the shape of every plan: no
 * Seq Scan, no Sort over a backlog. A plan can pass it and still read a
 * whole tenant to return one row: an index scan whose condition bounds
 * only the tenant, with the rest as a filter. This suite runs the engine's
 * hot calls (StartInstance, ActivateJobs, CompleteJob, SendSignal by
 * aggregate, a definition's live totals) through the real store with every statement planned
 * generically (plan_cache_mode = force_generic_plan on the store's
 * connections) and reads, from pg_stat_statements, the shared buffers
 * each statement touched per call. A statement fails when it reads more
 * than BASE + PER_ROW x (rows it returned or wrote) buffers per call.
 *
 * Two phases, each on a backlog of its own in the same tenant:
 *  (a) the tables are new and never analysed: the statements are planned
 *      while they are empty (a warm-up call each), then the tables are
 *      filled a little, then fifty times more, without ANALYZE (autovacuum
 *      is off for them), as after a deploy when traffic grows faster than
 *      autovacuum analyses. Plans made on empty or small tables stay
 *      cached until the statistics change: the store's own ANALYZE of a
 *      table that grew (migrations/0015, run by its background thread
 *      after commits) is what must make them plan again, and the suite
 *      waits for it after each fill (a bounded wait: without it, the
 *      measure fails);
 *  (b) the tables are analysed and then grown again with values the
 *      statistics never saw.
 *
 * Needs WF_TEST_PG_DSN (a superuser DSN) on a server that loads
 * pg_stat_statements (tests/support/pg.sh does); skipped without the DSN.
 * Runs in its own schema, as its own role (pg_stat_statements keeps the
 * role: the figures are this suite's alone, whatever else runs).
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
#include "signals.h"
#include "store.h"
#include "test_pg.h"
#include "test_support.h"
#include "wf_log.h"

/* The bound: a lookup by key descends a few index levels and reads a
 * heap page; a write touches each index of its table once. 48 covers the
 * widest write (an instance row and its indexes); a scan of the tenant's
 * rows reads hundreds to thousands. */
#define BASE_BUFFERS 48
#define PER_ROW_BUFFERS 8
/* Rows of each backlog table put in per phase. */
#define BACKLOG 20000
/* Calls of each kind measured per phase. */
#define CALLS 40

static const char *dsn;
static char schema[64], role[64];
static char *store_dsn;
static wf_store *st;
static wf_arena *arena;
static PGconn *admin;

static void
exec_ok(const char *sql)
{
    PGresult *res = PQexec(admin, sql);
    ExecStatusType s = PQresultStatus(res);
    ck_assert_msg(s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK, "%.300s: %s", sql,
                  PQerrorMessage(admin));
    PQclear(res);
}

/* The store's DSN: dsn's server and database, as role, in schema, with
 * every statement planned generically. */
static char *
store_conninfo(void)
{
    PQconninfoOption *opts = PQconninfoParse(dsn, NULL);
    ck_assert_ptr_nonnull(opts);
    size_t cap = 1024, len = 0;
    char *out = malloc(cap);
    ck_assert_ptr_nonnull(out);
    out[0] = '\0';
    for (PQconninfoOption *o = opts; o->keyword != NULL; o++) {
        if (o->val == NULL || o->val[0] == '\0' || strcmp(o->keyword, "user") == 0 ||
            strcmp(o->keyword, "options") == 0 || strcmp(o->keyword, "password") == 0)
            continue;
        len += (size_t)snprintf(out + len, cap - len, "%s='%s' ", o->keyword, o->val);
        ck_assert_uint_lt(len, cap - 200);
    }
    snprintf(out + len, cap - len,
             "user='%s' options='-csearch_path=%s -cplan_cache_mode=force_generic_plan'", role,
             schema);
    PQconninfoFree(opts);
    return out;
}

static wf_runtime_ctx
ctx(void)
{
    return kit_ctx("t");
}

static void
setup(void)
{
    admin = wf_test_pg_connect(dsn);
    snprintf(schema, sizeof schema, "wf_buf_%d", (int)getpid());
    snprintf(role, sizeof role, "wf_buf_%d", (int)getpid());
    char sql[512];
    PGresult *res = PQexec(admin, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    PQclear(res); /* a concurrent suite may have made it: checked below */
    res = PQexec(admin, "SELECT count(*) FROM pg_stat_statements LIMIT 1");
    ck_assert_msg(PQresultStatus(res) == PGRES_TUPLES_OK,
                  "pg_stat_statements is not available (shared_preload_libraries, as "
                  "tests/support/pg.sh sets it): %s",
                  PQerrorMessage(admin));
    PQclear(res);
    snprintf(sql, sizeof sql,
             "DROP SCHEMA IF EXISTS %s CASCADE; DROP ROLE IF EXISTS %s; CREATE ROLE %s LOGIN "
             "SUPERUSER; CREATE SCHEMA %s AUTHORIZATION %s",
             schema, role, role, schema, role);
    exec_ok(sql);
    store_dsn = store_conninfo();
    wf_store_pg_config cfg = {store_dsn, 2, 2000, 2};
    wf_error err = {0};
    st = wf_store_pg_new(&cfg, &err);
    ck_assert_msg(st != NULL, "postgres store: %s", err.msg);
    snprintf(sql, sizeof sql, "SET search_path = %s, public", schema);
    exec_ok(sql);
    /* Statistics change only when this suite says so. */
    snprintf(sql, sizeof sql,
             "DO $$ DECLARE t text; BEGIN FOR t IN SELECT tablename FROM pg_tables WHERE "
             "schemaname = '%s' LOOP EXECUTE format('ALTER TABLE %%I SET "
             "(autovacuum_enabled = false)', t); END LOOP; END $$",
             schema);
    exec_ok(sql);
    arena = wf_arena_new();
    ck_assert_ptr_nonnull(arena);
}

static void
teardown(void)
{
    kit_teardown();
    char sql[256];
    snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE; DROP ROLE IF EXISTS %s", schema,
             role);
    exec_ok(sql);
    PQfinish(admin);
    free(store_dsn);
    store_dsn = NULL;
}

/* ---- the backlog: rows of the tenant the calls run in, under other roots ----------------- */

/* Rows g of phase p: ids and roots of their own ('b<p>-<g>'), spread over
 * 5000 roots, so that a read of one root that walks the tenant reads
 * them all. The jobs wait in one queue, "queued", which each round
 * leases one of: a read of the whole queue shows there, and one job type
 * is what makes a generic plan join the leased rows back by a hash join
 * over every job. */
static void
fill(int phase, int rows)
{
    static const char *const tmpl[] = {
        "INSERT INTO instances (tenant_id, id, root_id, definition_key, definition_version, "
        "status, aggregate_type, aggregate_id, started_by, created_at, updated_at, ended_at, "
        "version, variables_json) SELECT 'default', 'b%1$d-' || g, 'b%1$d-' || g, 'other', 1, "
        "1 + g %% 2, 'order', 'x' || g %% 5000, 'u' || g %% 100, g, g, 0, 1, '{\"n\": 1}' "
        "FROM generate_series(1, %2$d) g",
        "INSERT INTO tasks (tenant_id, id, root_id, instance_id, assignee_kind, assignee_id, "
        "status, created_at) SELECT 'default', 'bk%1$d-' || g, 'b%1$d-' || (g %% 5000 + 1), "
        "'b%1$d-' || (g %% 5000 + 1), 1, 'u' || g %% 100, 1, g FROM generate_series(1, %2$d) g",
        "INSERT INTO tokens (tenant_id, id, root_id, instance_id, place_id, created_seq) SELECT "
        "'default', 'bo%1$d-' || g, 'b%1$d-' || (g %% 5000 + 1), 'b%1$d-' || (g %% 5000 + 1), "
        "'p', g FROM generate_series(1, %2$d) g",
        "INSERT INTO work_items (tenant_id, id, root_id, instance_id, transition_id, trigger, "
        "state, enabled_at) SELECT 'default', 'bw%1$d-' || g, 'b%1$d-' || (g %% 5000 + 1), "
        "'b%1$d-' || (g %% 5000 + 1), 'tr', 1, 1 + g %% 4, g FROM generate_series(1, %2$d) g",
        "INSERT INTO jobs (tenant_id, id, key, root_id, instance_id, job_type, state, attempt, "
        "max_attempts, activatable_at, created_at, priority, activation_rank) SELECT 'default', "
        "'bj%1$d-' || g, 'b%1$d-' || (g %% 5000 + 1) || '.k' || g, 'b%1$d-' || (g %% 5000 + 1), "
        "'b%1$d-' || (g %% 5000 + 1), 'queued', 1, 1, 3, %1$d * 1000000 + g, g, g %% 101, "
        "%1$d * 1000000 + g - (g %% 101) * 1000000 FROM generate_series(1, %2$d) g",
        /* A type whose jobs carry fairness keys: three in four of one key,
         * the others spread over 300 keys. */
        "INSERT INTO jobs (tenant_id, id, key, root_id, instance_id, job_type, state, attempt, "
        "max_attempts, activatable_at, created_at, priority, activation_rank, fairness_key) "
        "SELECT 'default', 'bf%1$d-' || g, 'b%1$d-' || (g %% 5000 + 1) || '.f' || g, "
        "'b%1$d-' || (g %% 5000 + 1), 'b%1$d-' || (g %% 5000 + 1), 'fair', 1, 1, 3, g, g, 50, "
        "g - 50000000, CASE WHEN g %% 4 = 0 THEN 'k%1$d-' || g %% 300 ELSE 'big%1$d' END "
        "FROM generate_series(1, %2$d) g",
        "INSERT INTO timers (tenant_id, id, root_id, instance_id, due_at, created_at) SELECT "
        "'default', 'bm%1$d-' || g, 'b%1$d-' || (g %% 5000 + 1), 'b%1$d-' || (g %% 5000 + 1), "
        "4000000000000000 + g, g FROM generate_series(1, %2$d) g",
        "INSERT INTO subscriptions (tenant_id, id, root_id, instance_id, signal_name, "
        "aggregate_type, aggregate_id, created_at) SELECT 'default', 'bb%1$d-' || g, "
        "'b%1$d-' || (g %% 5000 + 1), 'b%1$d-' || (g %% 5000 + 1), 'payment', 'order', "
        "'x' || g %% 5000, g FROM generate_series(1, %2$d) g",
        "INSERT INTO events (tenant_id, root_id, instance_id, type, sequence, time) SELECT "
        "'default', 'b%1$d-' || (g %% 5000 + 1), 'b%1$d-' || (g %% 5000 + 1), 'T', "
        "%1$d * 1000000 + g, g FROM generate_series(1, %2$d) g",
        "INSERT INTO idempotency (tenant_id, method, request_id, created_at) SELECT 'default', "
        "'StartInstance', 'b%1$d-' || g, g FROM generate_series(1, %2$d) g",
        /* Signals fanned out to the roots' aggregates, each delivered to
         * one root (the log of ListSignals by instance). */
        "INSERT INTO signals (tenant_id, id, name, aggregate_type, aggregate_id, payload_json, "
        "outcome, received_at) SELECT 'default', 'bs%1$d-' || g, 'payment', 'order', "
        "'x' || g %% 5000, '{}', 1, g FROM generate_series(1, %2$d) g",
        "INSERT INTO signal_deliveries (tenant_id, signal_log_id, instance_id, root_id, "
        "aggregate_type, aggregate_id, seq, state, created_at, done_at, received_at) SELECT "
        "'default', 'bs%1$d-' || g, 'b%1$d-' || (g %% 5000 + 1), 'b%1$d-' || (g %% 5000 + 1), "
        "'order', 'x' || g %% 5000, 1, 1, g, g, g FROM generate_series(1, %2$d) g",
    };
    for (size_t i = 0; i < sizeof tmpl / sizeof tmpl[0]; i++) {
        char sql[1024];
        snprintf(sql, sizeof sql, tmpl[i], phase, rows);
        exec_ok(sql);
    }
}

/* ---- the calls ------------------------------------------------------------------------------ */

static wf_uow_idem
idem(const char *method)
{
    return kit_request(arena, method);
}

/* One of each hot call: a job's life (start, activate, complete), a
 * signal by aggregate to a waiting instance, and the signal log of an
 * instance of the backlog that fan-outs were delivered to. */
static void
round_of_calls(void)
{
    static int rounds; /* each round names an aggregate of its own */
    int n = ++rounds;
    wf_runtime_ctx c = ctx();
    wf_error err;
    char agg[32];
    snprintf(agg, sizeof agg, "w-%d", n);
    wf_start_spec spec = kit_order_spec("jobs", NULL);
    wf_uow_idem i = idem("StartInstance");
    (void)kit_start(&c.ref, &spec, &i);
    spec = kit_order_spec("msg", agg);
    i = idem("StartInstance");
    (void)kit_start(&c.ref, &spec, &i);

    wf_runtime_activation a = {.job_type = "ship", .worker = "w", .max_jobs = 1, .lease_ms = 60000};
    wf_runtime_activated got;
    i = idem("ActivateJobs");
    wf_code rc = wf_runtime_activate_recorded(&c, &a, &i, true, &got, &err);
    ck_assert_msg(rc == WF_OK, "activate: %s %s", wf_code_reason(rc), err.msg);
    ck_assert_uint_eq(got.n, 1);
    i = idem("CompleteJob");
    rc = wf_runtime_complete_job(&c, got.rows[0].key, "{}", &i, &err);
    ck_assert_msg(rc == WF_OK, "complete: %s %s", wf_code_reason(rc), err.msg);
    a.job_type = "queued";
    i = idem("ActivateJobs");
    rc = wf_runtime_activate_recorded(&c, &a, &i, true, &got, &err);
    ck_assert_msg(rc == WF_OK, "activate (queue): %s %s", wf_code_reason(rc), err.msg);
    /* A pass over fairness keys (a larger pass costs the UPDATE about 20
     * buffers a job, with or without keys: beyond PER_ROW_BUFFERS). */
    a.job_type = "fair";
    i = idem("ActivateJobs");
    rc = wf_runtime_activate_recorded(&c, &a, &i, true, &got, &err);
    ck_assert_msg(rc == WF_OK, "activate (keys): %s %s", wf_code_reason(rc), err.msg);
    ck_assert_uint_le(got.n, 1);

    wf_runtime_send_signal_in s = {
        .name = "payment", .aggregate_type = "order", .aggregate_id = agg, .has_aggregate = true};
    wf_runtime_send_signal_out out;
    i = idem("SendSignal");
    rc = wf_runtime_send_signal(&c, &s, &i, &out, &err);
    ck_assert_msg(rc == WF_OK, "send: %s %s", wf_code_reason(rc), err.msg);
    ck_assert_int_eq(out.outcome, WF_SIGNAL_CORRELATED);

    wf_runtime_list_signals_in q = {.instance_id = "b2-7"};
    wf_signal_row *rows;
    size_t nrows;
    char *next;
    rc = wf_runtime_list_signals(&c, &q, &rows, &nrows, &next, &err);
    ck_assert_msg(rc == WF_OK, "list signals: %s %s", wf_code_reason(rc), err.msg);

    wf_fleet_counts fc;
    rc = wf_runtime_definition_statistics(&c, "jobs", 0, &fc, &err);
    ck_assert_msg(rc == WF_OK, "statistics: %s %s", wf_code_reason(rc), err.msg);
}

/* Calls until the store has analysed every table fill() grew, since it
 * grew (up to 30 s; the measure after it fails when it never does): each
 * of 64 KB or more has statistics, taken at no less than a quarter of its
 * size now (the store's rule, migrations/0015). */
static void
await_statistics(void)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM pg_class WHERE relnamespace = '%s'::regnamespace AND "
             "relname IN ('instances', 'tasks', 'tokens', 'work_items', 'jobs', 'timers', "
             "'subscriptions', 'events', 'idempotency') AND pg_relation_size(oid) >= 65536 AND "
             "(reltuples < 0 OR pg_relation_size(oid) / 8192 >= 4 * greatest(relpages, 1))",
             schema);
    for (int i = 0; i < 300; i++) {
        round_of_calls();
        PGresult *res = PQexec(admin, sql);
        ck_assert_msg(PQresultStatus(res) == PGRES_TUPLES_OK, "%s", PQerrorMessage(admin));
        bool done = atoi(PQgetvalue(res, 0, 0)) == 0;
        PQclear(res);
        if (done)
            return;
        usleep(100 * 1000);
    }
    fprintf(stderr, "the store did not analyse the grown tables within 30 s\n");
}

/* ---- the counts ----------------------------------------------------------------------------- */

#define MAX_STMTS 256

typedef struct stmt_count {
    char queryid[32];
    char query[96];
    double calls, rows, buffers;
} stmt_count;

static size_t
snapshot(stmt_count *out)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT queryid::text, left(regexp_replace(query, '\\s+', ' ', 'g'), 95), calls, "
             "rows, shared_blks_hit + shared_blks_read FROM pg_stat_statements s JOIN pg_roles r "
             "ON r.oid = s.userid WHERE r.rolname = '%s' AND toplevel",
             role);
    PGresult *res = PQexec(admin, sql);
    ck_assert_msg(PQresultStatus(res) == PGRES_TUPLES_OK, "%s", PQerrorMessage(admin));
    size_t n = (size_t)PQntuples(res);
    ck_assert_uint_le(n, MAX_STMTS);
    for (size_t r = 0; r < n; r++) {
        stmt_count *s = &out[r];
        snprintf(s->queryid, sizeof s->queryid, "%s", PQgetvalue(res, (int)r, 0));
        snprintf(s->query, sizeof s->query, "%s", PQgetvalue(res, (int)r, 1));
        s->calls = atof(PQgetvalue(res, (int)r, 2));
        s->rows = atof(PQgetvalue(res, (int)r, 3));
        s->buffers = atof(PQgetvalue(res, (int)r, 4));
    }
    PQclear(res);
    return n;
}

/* Runs CALLS rounds and checks every statement they ran; returns how many
 * failed, printing each statement's figures. */
static int
measure(const char *phase)
{
    static stmt_count before[MAX_STMTS], after[MAX_STMTS];
    size_t nb = snapshot(before);
    for (int k = 0; k < CALLS; k++)
        round_of_calls();
    size_t na = snapshot(after);
    int failed = 0, checked = 0;
    fprintf(stderr, "%s: buffers per call, rows per call, calls\n", phase);
    for (size_t i = 0; i < na; i++) {
        stmt_count d = after[i];
        for (size_t j = 0; j < nb; j++)
            if (strcmp(before[j].queryid, d.queryid) == 0) {
                d.calls -= before[j].calls;
                d.rows -= before[j].rows;
                d.buffers -= before[j].buffers;
            }
        /* The store's first ANALYZE of a grown table is background work
         * that reads the tables by design. */
        if (d.calls < 1 || strstr(d.query, "wf_analyze_grown_tables") != NULL)
            continue;
        checked++;
        double per_call = d.buffers / d.calls, rows = d.rows / d.calls;
        bool bad = per_call > BASE_BUFFERS + PER_ROW_BUFFERS * rows;
        failed += bad;
        fprintf(stderr, "  %s %8.1f %6.1f %6.0f  %s\n", bad ? "FAIL" : "    ", per_call, rows,
                d.calls, d.query);
    }
    ck_assert_int_gt(checked, 10);
    return failed;
}

WF_TEST(test_buffers_per_call_on_unanalysed_and_grown_tables)
{
    static wf_transition tj[] = {{.id = "step", .trigger = WF_TRIGGER_AUTO, .job_type = "ship"}};
    kit_deploy_line(ctx(), "jobs", tj);
    kit_deploy_msg_net(ctx(), "msg", WF_CORRELATION_AGGREGATE);
    /* Planned on empty tables: a round on each of the store's two
     * connections. */
    for (int k = 0; k < 3; k++)
        round_of_calls();
    /* Small: the store's first statistics; the calls plan again on them. */
    fill(1, BACKLOG / 50);
    await_statistics();
    for (int k = 0; k < 3; k++)
        round_of_calls();
    /* Grown fifty times. */
    fill(2, BACKLOG);
    await_statistics();
    int failed = measure("planned on empty, then small tables, then grown");

    exec_ok("ANALYZE");
    fill(3, BACKLOG);
    failed += measure("analysed, then grown with values it never saw");
    ck_assert_msg(failed == 0,
                  "%d statements read more than %d + %d per row buffers per call (see above)",
                  failed, BASE_BUFFERS, PER_ROW_BUFFERS);
}
END_TEST

int
main(void)
{
    dsn = wf_test_pg_dsn();
    kit_fixture(&st, &arena);
    wf_test_quiet_log();
    return wf_test_run(wf_test_suite("store_buffers", "buffers", setup, teardown, 300));
}
