/*
 * test_store_pg.c: the store contract suite on Postgres, plus the cases
 * only Postgres has: pool exhaustion, deadlines on acquire, a restart
 * under load, an unreachable server, a DSN whose first host hangs (a
 * failover target list), a server that turned read-only, concurrent
 * migration, transactions
 * committing out of insertion order, the sequencer (busy elsewhere, a
 * backlog), and the listener across replicas and across a restart.
 *
 * Needs WF_TEST_PG_DSN (a superuser DSN, e.g. from tests/support/pg.sh);
 * without it prints one "skipped" line and exits 77 (skipped). The restart case also
 * needs WF_TEST_PG_CTL, a command prefix that runs pg_ctl on that cluster
 * (e.g. "tests/support/pg.sh ctl DIR"). Each case runs in its own schema
 * (search_path), created fresh and migrated by the store itself.
 */
#include "store_test.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pg/pool.h" /* wf_store_pg_n_migrations */
#include "test_pg.h"
#include "wf_log.h"
#include "wf_time.h"

static const char *dsn;
static char schema[64];
static char *store_dsn;

/* A fresh schema for this test process, and a DSN whose search_path is it. */
static void
fresh_schema(void)
{
    snprintf(schema, sizeof schema, "wf_t_%d", (int)getpid());
    free(store_dsn);
    store_dsn = wf_test_pg_fresh_schema(dsn, schema);
}

static wf_store *
open_with(int pool_size, int acquire_ms)
{
    wf_store_pg_config cfg = {store_dsn, pool_size, acquire_ms, 2};
    wf_error err = {0};
    wf_store *st = wf_store_pg_new(&cfg, &err);
    ck_assert_msg(st != NULL, "postgres store: %s", err.msg);
    return st;
}

static wf_store *
pg_open(int pool_size)
{
    fresh_schema();
    return open_with(pool_size, 1000);
}

static void
pg_close(wf_store *st)
{
    wf_store_free(st);
    wf_test_pg_drop_schema(dsn, schema);
    free(store_dsn);
    store_dsn = NULL;
}

static const store_factory pg_factory = {"postgres", pg_open, pg_close};

static void
sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- Postgres-only cases ------------------------------------------------- */

static wf_store *st;
static wf_arena *arena;

static void
setup(void)
{
    fresh_schema();
    arena = wf_arena_new();
}

static void
teardown(void)
{
    wf_arena_free(arena);
    wf_test_pg_drop_schema(dsn, schema);
    free(store_dsn);
    store_dsn = NULL;
}

static void
make_root(wf_store *s, const char *id)
{
    wf_store_ctx ctx = {"t1", 0, arena};
    wf_instance_row r = {.id = (char *)id,
                         .definition_key = "d",
                         .definition_version = 1,
                         .root_id = (char *)id,
                         .status = WF_INSTANCE_RUNNING,
                         .variables_json = "{\"n\":0}",
                         .created_at = wf_now_us(),
                         .updated_at = wf_now_us()};
    wf_error err = {0};
    wf_tx *tx = NULL;
    ck_assert_int_eq(wf_store_begin(s, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_apply(tx, &(wf_store_changes){.instances = &r, .n_instances = 1}, &err),
                     WF_OK);
    ck_assert_int_eq(wf_tx_commit(tx, &err), WF_OK);
}

/* A request id recorded twice (two calls racing with one id): Postgres
 * answers a unique violation, whose DETAIL quotes the key (tenant, method,
 * request id). The engine expects to lose such races now and then, so the
 * failure is CONFLICT, logged at debug level with the primary message only. */
WF_CASE_TEST("postgres", test_expected_race_is_a_debug_line_without_detail)
{
    st = open_with(2, 1000);
    wf_store_ctx ctx = {"t1", 0, arena};
    wf_idempotency_row row = {.tenant = "t1",
                              .method = "StartInstance",
                              .request_id = "req-secret-42",
                              .request_hash = "h",
                              .response = (unsigned char *)"r",
                              .response_len = 1,
                              .created_at = wf_now_us()};
    wf_error err = {0};
    wf_tx *tx = NULL;
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_commit_recorded(tx, &row, &err), WF_OK);

    FILE *cap = tmpfile();
    ck_assert_ptr_nonnull(cap);
    fflush(stderr);
    int saved = dup(2);
    dup2(fileno(cap), 2);
    wf_log_level was = wf_log_threshold;
    wf_log_threshold = WF_LOG_DEBUG;
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    wf_code rc = wf_tx_commit_recorded(tx, &row, &err);
    wf_log_threshold = was;
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char buf[8192];
    ssize_t n = pread(fileno(cap), buf, sizeof buf - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    fclose(cap);
    ck_assert_int_eq(rc, WF_E_CONFLICT);
    ck_assert_msg(strstr(buf, "\"level\":\"debug\",\"event\":\"db_error\"") != NULL, "%s", buf);
    ck_assert_msg(strstr(buf, "sqlstate=23505") != NULL, "%s", buf);
    ck_assert_msg(strstr(buf, "\"level\":\"warn\"") == NULL, "%s", buf);
    ck_assert_msg(strstr(buf, "DETAIL") == NULL && strstr(buf, "req-secret-42") == NULL, "%s", buf);
    wf_store_free(st);
}
END_TEST

/* A deploy that read "no definition" and an auto-creation of the same
 * key that commits before the deploy stores: the deploy's put sees the
 * other kind in the statement that numbers its version and stores
 * nothing (it once stored a NET version 2 on top of an AD_HOC 1). */
WF_CASE_TEST("postgres", test_racing_puts_of_two_kinds_keep_one)
{
    st = open_with(2, 1000);
    wf_store_ctx ctx = {"t1", 0, arena};
    wf_error err = {0};
    wf_tx *deploy = NULL, *create = NULL;
    wf_definition_row d;
    bool found = true;
    int32_t v = 0;
    ck_assert_int_eq(wf_store_begin(st, &ctx, &deploy, &err), WF_OK);
    ck_assert_int_eq(wf_tx_get_definition(deploy, "k", 0, &d, &found, &err), WF_OK);
    ck_assert(!found);
    wf_definition_row adhoc = {.key = "k",
                               .kind = WF_DEF_AD_HOC,
                               .content_hash = "a",
                               .created_at = wf_now_us(),
                               .created_by = "u"};
    ck_assert_int_eq(wf_store_begin(st, &ctx, &create, &err), WF_OK);
    ck_assert_int_eq(wf_tx_put_definition(create, &adhoc, &v, &err), WF_OK);
    ck_assert_int_eq(wf_tx_commit(create, &err), WF_OK);
    ck_assert_int_eq(v, 1);
    wf_definition_row net = adhoc;
    net.kind = WF_DEF_NET;
    net.content_hash = "n";
    ck_assert_int_eq(wf_tx_put_definition(deploy, &net, &v, &err), WF_E_DEFINITION_KIND_CONFLICT);
    wf_tx_rollback(deploy);
    ck_assert_int_eq(wf_store_get_definition(st, &ctx, "k", 0, &d, &err), WF_OK);
    ck_assert_int_eq(d.version, 1);
    ck_assert_int_eq(d.kind, WF_DEF_AD_HOC);
    wf_store_free(st);
}
END_TEST

WF_CASE_TEST("postgres", test_pool_exhaustion_is_unavailable)
{
    st = open_with(1, 300);
    wf_store_ctx ctx = {"t1", 0, arena};
    wf_error err = {0};
    wf_tx *held = NULL;
    ck_assert_int_eq(wf_store_begin(st, &ctx, &held, &err), WF_OK);
    wf_store_stats stats;
    wf_store_get_stats(st, &stats);
    ck_assert_int_eq(stats.pool_size, 1);
    ck_assert_int_eq(stats.in_use, 1);

    int64_t t0 = wf_mono_ms();
    wf_instance_row r;
    wf_code rc = wf_store_get_instance(st, &ctx, "x", &r, &err);
    int64_t took = wf_mono_ms() - t0;
    ck_assert_msg(rc == WF_E_STORE_UNAVAILABLE, "got %s", wf_code_reason(rc));
    ck_assert_str_eq(err.msg, "could not get a database connection: all 1 are busy");
    ck_assert_msg(took >= 280 && took < 1500, "took %" PRId64 " ms", took);

    /* The call's deadline bounds the wait when it is shorter. */
    wf_store_ctx soon = {"t1", wf_mono_ms() + 100, arena};
    t0 = wf_mono_ms();
    rc = wf_store_get_instance(st, &soon, "x", &r, &err);
    took = wf_mono_ms() - t0;
    ck_assert_msg(rc == WF_E_DEADLINE_EXCEEDED, "got %s", wf_code_reason(rc));
    ck_assert_msg(took < 250, "took %" PRId64 " ms", took);

    wf_tx_rollback(held);
    ck_assert_int_eq(wf_store_get_instance(st, &ctx, "x", &r, &err), WF_E_INSTANCE_NOT_FOUND);
    wf_store_get_stats(st, &stats);
    ck_assert_int_eq(stats.in_use, 0);
    wf_store_free(st);
}
END_TEST

WF_CASE_TEST("postgres", test_unreachable_server_fails_fast)
{
    wf_store_pg_config cfg = {"postgresql://postgres@127.0.0.1:1/postgres", 2, 500, 2};
    wf_error err = {0};
    int64_t t0 = wf_mono_ms();
    wf_store *s = wf_store_pg_new(&cfg, &err);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(err.code, WF_E_STORE_UNAVAILABLE);
    /* At the store's start the error says why (libpq's reason, on one line). */
    ck_assert_msg(
        strncmp(err.msg, "could not connect to the database: connection to server at", 58) == 0 &&
            strstr(err.msg, "Connection refused Is the server running") != NULL,
        "%s", err.msg);
    ck_assert_int_lt(wf_mono_ms() - t0, 3000);
}
END_TEST

/* Appends key='value' (conninfo quoting) to out. */
static void
conninfo_add(char *out, size_t cap, const char *key, const char *val)
{
    size_t n = strlen(out);
    n += (size_t)snprintf(out + n, cap - n, "%s%s='", n > 0 ? " " : "", key);
    for (const char *c = val; *c != '\0' && n + 3 < cap; c++) {
        if (*c == '\'' || *c == '\\')
            out[n++] = '\\';
        out[n++] = *c;
    }
    ck_assert_uint_lt(n + 2, cap);
    out[n++] = '\'';
    out[n] = '\0';
}

/* The failover DSN of a primary and its standby (host=a,b port=p,q
 * target_session_attrs=read-write) whose first host hangs: a port that
 * completes the TCP handshake and never answers, as a frozen server or a
 * host that went away behind a firewall. The pool must give each host its
 * own connect timeout, reach the second one, and go there first from then
 * on. */
WF_CASE_TEST("postgres", test_hung_first_host_is_passed_over)
{
    int tarpit = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(tarpit, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    ck_assert_int_eq(bind(tarpit, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(listen(tarpit, 64), 0); /* never accepted */
    ck_assert_int_eq(getsockname(tarpit, (struct sockaddr *)&sa, &len), 0);

    PQconninfoOption *opts = PQconninfoParse(store_dsn, NULL);
    ck_assert_ptr_nonnull(opts);
    char multi[2048] = "", hosts[512], ports[64];
    const char *host = "127.0.0.1", *port = "5432";
    for (PQconninfoOption *o = opts; o->keyword != NULL; o++) {
        if (o->val == NULL || o->val[0] == '\0')
            continue;
        if (strcmp(o->keyword, "host") == 0)
            host = o->val;
        else if (strcmp(o->keyword, "port") == 0)
            port = o->val;
        else if (strcmp(o->keyword, "hostaddr") != 0 &&
                 strcmp(o->keyword, "target_session_attrs") != 0)
            conninfo_add(multi, sizeof multi, o->keyword, o->val);
    }
    snprintf(hosts, sizeof hosts, "127.0.0.1,%s", host);
    snprintf(ports, sizeof ports, "%d,%s", (int)ntohs(sa.sin_port), port);
    conninfo_add(multi, sizeof multi, "host", hosts);
    conninfo_add(multi, sizeof multi, "port", ports);
    conninfo_add(multi, sizeof multi, "target_session_attrs", "read-write");
    PQconninfoFree(opts);

    /* Opening connects once (the migrations): 2 s on the hung host, then
     * the real one. */
    wf_store_pg_config cfg = {multi, 2, 1000, 2};
    wf_error err = {0};
    int64_t t0 = wf_mono_ms();
    st = wf_store_pg_new(&cfg, &err);
    int64_t took = wf_mono_ms() - t0;
    ck_assert_msg(st != NULL, "open over a hung first host: %s (after %" PRId64 " ms)", err.msg,
                  took);
    ck_assert_msg(took >= 1500 && took < 5000, "open took %" PRId64 " ms", took);

    /* The pool's connections go to the host that answered, at once. */
    t0 = wf_mono_ms();
    make_root(st, "r1");
    wf_instance_row r;
    wf_store_ctx ctx = {"t1", wf_mono_ms() + 3000, arena};
    ck_assert_int_eq(wf_store_get_instance(st, &ctx, "r1", &r, &err), WF_OK);
    took = wf_mono_ms() - t0;
    ck_assert_msg(took < 1000, "calls after the open took %" PRId64 " ms", took);
    ck_assert(wf_store_ready(st));
    wf_store_free(st);
    close(tarpit);
}
END_TEST

/* A server that takes no writes (a standby the DSN reached, a primary made
 * read-only during a failover): writes fail STORE_UNAVAILABLE, retryable,
 * not INTERNAL, and reads still work. Sessions of a role of this case's
 * own are made read-only (ALTER ROLE ... SET default_transaction_read_only)
 * after the store opened, and the open ones are ended, so that the pool
 * reconnects into read-only sessions. */
WF_CASE_TEST("postgres", test_read_only_server_is_unavailable)
{
    char role[64];
    snprintf(role, sizeof role, "wf_ro_%d", (int)getpid());
    wf_test_pg_admin(dsn, "DROP ROLE IF EXISTS %s", role);
    wf_test_pg_admin(dsn, "CREATE ROLE %s LOGIN SUPERUSER", role);
    PQconninfoOption *opts = PQconninfoParse(store_dsn, NULL);
    ck_assert_ptr_nonnull(opts);
    char ro[2048] = "";
    for (PQconninfoOption *o = opts; o->keyword != NULL; o++)
        if (o->val != NULL && o->val[0] != '\0' && strcmp(o->keyword, "user") != 0)
            conninfo_add(ro, sizeof ro, o->keyword, o->val);
    conninfo_add(ro, sizeof ro, "user", role);
    PQconninfoFree(opts);

    st = open_with(2, 1000);
    wf_store_free(st); /* the schema is migrated; the role's store follows */
    wf_store_pg_config cfg = {ro, 2, 1000, 2};
    wf_error err = {0};
    st = wf_store_pg_new(&cfg, &err);
    ck_assert_msg(st != NULL, "store as %s: %s", role, err.msg);
    make_root(st, "r1");

    wf_test_pg_admin(dsn, "ALTER ROLE %s SET default_transaction_read_only = on", role);
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '%s'", role);
    PGconn *admin = wf_test_pg_connect(dsn);
    PGresult *res = PQexec(admin, sql);
    ck_assert_int_eq(PQresultStatus(res), PGRES_TUPLES_OK);
    PQclear(res);
    PQfinish(admin);

    wf_store_ctx ctx = {"t1", 0, arena};
    wf_instance_row r = {.id = "r2",
                         .definition_key = "d",
                         .definition_version = 1,
                         .root_id = "r2",
                         .status = WF_INSTANCE_RUNNING,
                         .variables_json = "{}",
                         .created_at = wf_now_us(),
                         .updated_at = wf_now_us()};
    /* The first calls may still meet a session that was just ended. */
    wf_code rc = WF_OK;
    for (int attempt = 0; attempt < 20; attempt++) {
        wf_tx *tx = NULL;
        err = (wf_error){0};
        rc = wf_store_begin(st, &ctx, &tx, &err);
        if (rc == WF_OK) {
            rc = wf_tx_apply(tx, &(wf_store_changes){.instances = &r, .n_instances = 1}, &err);
            if (rc == WF_OK)
                rc = wf_tx_commit(tx, &err);
            else
                wf_tx_rollback(tx);
        }
        if (rc != WF_E_STORE_UNAVAILABLE || strstr(err.msg, "read-only") != NULL)
            break;
        sleep_ms(300);
    }
    ck_assert_msg(rc == WF_E_STORE_UNAVAILABLE, "write on a read-only server: %s (%s)",
                  wf_code_reason(rc), err.msg);
    ck_assert_str_eq(err.msg, "could not write to the database: the server is read-only");
    wf_instance_row got;
    ck_assert_int_eq(wf_store_get_instance(st, &ctx, "r1", &got, &err), WF_OK);
    wf_store_free(st);
    st = NULL;
    wf_test_pg_admin(dsn, "DROP OWNED BY %s", role);
    wf_test_pg_admin(dsn, "DROP ROLE %s", role);
}
END_TEST

WF_CASE_TEST("postgres", test_ready_and_dirty_connection_reuse)
{
    st = open_with(1, 1000);
    ck_assert(wf_store_ready(st));
    make_root(st, "r1");
    /* A unit of work abandoned after a failure leaves its connection in an
     * aborted transaction; the pool must roll it back before reuse. */
    wf_store_ctx ctx = {"t1", 0, arena};
    wf_error err = {0};
    wf_tx *tx = NULL;
    wf_instance_row dup = {.id = "r1",
                           .definition_key = "d",
                           .root_id = "r1",
                           .status = WF_INSTANCE_RUNNING,
                           .created_at = 1,
                           .updated_at = 1};
    ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(
        wf_tx_apply(tx, &(wf_store_changes){.instances = &dup, .n_instances = 1}, &err),
        WF_E_CONFLICT);
    wf_tx_rollback(tx);
    wf_instance_row r;
    ck_assert_int_eq(wf_store_get_instance(st, &ctx, "r1", &r, &err), WF_OK);
    ck_assert_int_eq(r.version, 1);
    wf_store_free(st);
}
END_TEST

/* ---- restart under load ---------------------------------------------------- */

#define LOAD_THREADS 4
#define CALL_DEADLINE_MS 2000

typedef struct load_stats {
    int ok, unavailable, other, ok_after_restart;
    int64_t worst_ms;
    wf_code other_code;
} load_stats;

static volatile int load_stop;
static volatile int restarted;
static load_stats load[LOAD_THREADS];

static void
record(load_stats *ls, wf_code rc, int64_t took)
{
    if (took > ls->worst_ms)
        ls->worst_ms = took;
    if (rc == WF_OK) {
        ls->ok++;
        ls->ok_after_restart += restarted;
    } else if (rc == WF_E_STORE_UNAVAILABLE) {
        ls->unavailable++;
    } else {
        ls->other++;
        ls->other_code = rc;
    }
}

static void *
load_loop(void *arg)
{
    load_stats *ls = arg;
    wf_arena *a = wf_arena_new();
    while (!load_stop) {
        wf_store_ctx ctx = {"t1", wf_mono_ms() + CALL_DEADLINE_MS, a};
        wf_error err = {0};
        wf_tx *tx = NULL;
        wf_aggregate g;
        int64_t t0 = wf_mono_ms();
        wf_code rc = wf_store_begin(st, &ctx, &tx, &err);
        if (rc == WF_OK)
            rc = wf_tx_lock_root(tx, "r1", &g, &err);
        if (rc == WF_OK) {
            wf_instance_row upd = g.instances[0];
            upd.updated_at = wf_now_us();
            rc = wf_tx_apply(tx, &(wf_store_changes){.instances = &upd, .n_instances = 1}, &err);
        }
        if (rc == WF_OK)
            rc = wf_tx_commit(tx, &err);
        else
            wf_tx_rollback(tx);
        record(ls, rc, wf_mono_ms() - t0);

        wf_instance_row r;
        t0 = wf_mono_ms();
        ctx.deadline_ms = t0 + CALL_DEADLINE_MS;
        rc = wf_store_get_instance(st, &ctx, "r1", &r, &err);
        record(ls, rc, wf_mono_ms() - t0);
        sleep_ms(10);
    }
    wf_arena_free(a);
    return NULL;
}

static void
pg_ctl(const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s >/dev/null 2>&1", getenv("WF_TEST_PG_CTL"), args);
    ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);
}

WF_CASE_TEST("postgres", test_restart_under_load_fails_fast_then_recovers)
{
    const char *ctl = getenv("WF_TEST_PG_CTL");
    if (ctl == NULL || ctl[0] == '\0') {
        printf("skipped restart case: WF_TEST_PG_CTL not set\n");
        return;
    }
    st = open_with(LOAD_THREADS, 1000);
    make_root(st, "r1");
    pthread_t th[LOAD_THREADS];
    for (int i = 0; i < LOAD_THREADS; i++)
        pthread_create(&th[i], NULL, load_loop, &load[i]);
    sleep_ms(500);
    pg_ctl("stop -m fast -w");
    sleep_ms(2000); /* the outage: every call must come back fast */
    pg_ctl("start -w -t 60");
    restarted = 1;
    int64_t until = wf_mono_ms() + 15000;
    int ok_after = 0;
    while (wf_mono_ms() < until && ok_after < 20) {
        sleep_ms(100);
        ok_after = 0;
        for (int i = 0; i < LOAD_THREADS; i++)
            ok_after += load[i].ok_after_restart;
    }
    load_stop = 1;
    for (int i = 0; i < LOAD_THREADS; i++)
        pthread_join(th[i], NULL);

    load_stats all = {0};
    for (int i = 0; i < LOAD_THREADS; i++) {
        all.ok += load[i].ok;
        all.unavailable += load[i].unavailable;
        all.other += load[i].other;
        all.ok_after_restart += load[i].ok_after_restart;
        if (load[i].worst_ms > all.worst_ms)
            all.worst_ms = load[i].worst_ms;
        if (load[i].other)
            all.other_code = load[i].other_code;
    }
    printf("restart: ok=%d unavailable=%d other=%d ok_after_restart=%d worst=%" PRId64 "ms\n",
           all.ok, all.unavailable, all.other, all.ok_after_restart, all.worst_ms);
    ck_assert_msg(all.other == 0, "%d calls returned %s", all.other,
                  wf_code_reason(all.other_code));
    ck_assert_int_gt(all.unavailable, 0);
    ck_assert_msg(all.worst_ms < CALL_DEADLINE_MS, "a call took %" PRId64 " ms", all.worst_ms);
    ck_assert_int_ge(all.ok_after_restart, 20);
    wf_store_free(st);
}
END_TEST

/* ---- three replicas migrating one empty database ---------------------------- */

WF_CASE_TEST("postgres", test_concurrent_migration_applies_once)
{
    int gate[2];
    ck_assert_int_eq(pipe(gate), 0);
    pid_t kids[3];
    for (int i = 0; i < 3; i++) {
        kids[i] = fork();
        ck_assert_int_ge(kids[i], 0);
        if (kids[i] == 0) {
            char c;
            close(gate[1]);
            if (read(gate[0], &c, 1) < 0) /* returns when the parent closes */
                _exit(3);
            wf_store_pg_config cfg = {store_dsn, 1, 1000, 2};
            wf_error err = {0};
            wf_store *s = wf_store_pg_new(&cfg, &err);
            int ok = s != NULL && wf_store_ready(s);
            wf_store_free(s);
            _exit(ok ? 0 : 1);
        }
    }
    close(gate[0]);
    close(gate[1]); /* all three start now */
    for (int i = 0; i < 3; i++) {
        int status = 0;
        ck_assert_int_eq(waitpid(kids[i], &status, 0), kids[i]);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "replica %d failed", i);
    }
    PGconn *pg = PQconnectdb(store_dsn);
    ck_assert_int_eq(PQstatus(pg), CONNECTION_OK);
    PGresult *res = PQexec(pg, "SELECT count(*), count(DISTINCT version), min(version), "
                               "max(version) FROM schema_migrations");
    ck_assert_int_eq(PQresultStatus(res), PGRES_TUPLES_OK);
    ck_assert_int_eq(atoi(PQgetvalue(res, 0, 0)), wf_store_pg_n_migrations);
    ck_assert_int_eq(atoi(PQgetvalue(res, 0, 1)), wf_store_pg_n_migrations);
    ck_assert_int_eq(atoi(PQgetvalue(res, 0, 2)), 1);
    PQclear(res);
    PQfinish(pg);
}
END_TEST

/* ---- event sequence ------------------------------------------------------- */

static PGconn *
store_conn(void)
{
    return wf_test_pg_connect(store_dsn);
}

/* The first column of the first row of sql, as a number. */
static long long
scalar(PGconn *pg, const char *sql)
{
    PGresult *res = PQexec(pg, sql);
    ck_assert_msg(PQresultStatus(res) == PGRES_TUPLES_OK, "%s: %s", sql, PQerrorMessage(pg));
    long long v = atoll(PQgetvalue(res, 0, 0));
    PQclear(res);
    return v;
}

static void
exec_ok(PGconn *pg, const char *sql)
{
    PGresult *res = PQexec(pg, sql);
    ck_assert_msg(PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK,
                  "%s: %s", sql, PQerrorMessage(pg));
    PQclear(res);
}

static wf_tx *
begin_with_events(wf_store_ctx *ctx, const char *root, const char *const *types, size_t n)
{
    wf_error err = {0};
    wf_tx *tx = NULL;
    wf_aggregate g;
    wf_event_row ev[4];
    ck_assert_uint_le(n, 4);
    for (size_t i = 0; i < n; i++)
        ev[i] = (wf_event_row){0,    NULL, (char *)root, (char *)root, (char *)types[i],
                               NULL, "{}", wf_now_us()};
    ck_assert_int_eq(wf_store_begin(st, ctx, &tx, &err), WF_OK);
    ck_assert_int_eq(wf_tx_lock_root(tx, root, &g, &err), WF_OK);
    ck_assert_msg(wf_tx_apply(tx, &(wf_store_changes){.events = ev, .n_events = n}, &err) == WF_OK,
                  "apply: %s", err.msg);
    return tx;
}

/* The case: T1 writes first but commits last. A reader between the
 * two commits gets T2's events only; resuming from the last sequence it
 * saw it then gets T1's: each event once, T2's first. (With sequences
 * taken at insert, T1's events had the smaller numbers and were skipped.) */
WF_CASE_TEST("postgres", test_out_of_order_commits_are_read_once_in_order)
{
    st = open_with(4, 1000);
    make_root(st, "r1");
    make_root(st, "r2");
    wf_store_ctx ctx = {"t1", 0, arena};
    wf_error err = {0};
    const char *t1_types[] = {"T1_A", "T1_B"}, *t2_types[] = {"T2_A"};
    wf_tx *t1 = begin_with_events(&ctx, "r1", t1_types, 2);
    wf_tx *t2 = begin_with_events(&ctx, "r2", t2_types, 1);
    ck_assert_int_eq(wf_tx_commit(t2, &err), WF_OK);

    wf_event_row *rows;
    size_t n;
    ck_assert_int_eq(wf_store_read_events(st, &ctx, 0, NULL, 0, &rows, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(rows[0].type, "T2_A");
    ck_assert_int_eq(rows[0].sequence, 1);
    int64_t last = rows[0].sequence;
    /* Still nothing more while T1 is open. */
    ck_assert_int_eq(wf_store_read_events(st, &ctx, last, NULL, 0, &rows, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 0);

    ck_assert_int_eq(wf_tx_commit(t1, &err), WF_OK);
    ck_assert_int_eq(wf_store_read_events(st, &ctx, last, NULL, 0, &rows, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(rows[0].type, "T1_A");
    ck_assert_str_eq(rows[1].type, "T1_B");
    ck_assert_int_eq(rows[0].sequence, 2);
    ck_assert_int_eq(rows[1].sequence, 3);
    ck_assert_int_eq(wf_store_read_events(st, &ctx, 3, NULL, 0, &rows, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 0);

    /* T1's rows were inserted first: numbering followed visibility, not
     * insertion. */
    PGconn *pg = store_conn();
    ck_assert_int_eq(scalar(pg, "SELECT count(*) FROM events e1 JOIN events e2 ON e1.id < e2.id "
                                "WHERE e1.type = 'T1_B' AND e2.type = 'T2_A'"),
                     1);
    PQfinish(pg);
    wf_store_free(st);
}
END_TEST

/* A session that holds the sequencer lock (stuck, or slow) delays a read
 * by at most about a second, or half its deadline: the read then returns
 * what is numbered (nothing new here), never an error and never a gap;
 * once the lock is free the next read gets the event. */
WF_CASE_TEST("postgres", test_sequencer_busy_elsewhere_delays_reads_boundedly)
{
    st = open_with(2, 1000);
    make_root(st, "r1");
    wf_store_ctx ctx = {"t1", 0, arena};
    wf_error err = {0};
    const char *types[] = {"E"};
    ck_assert_int_eq(wf_tx_commit(begin_with_events(&ctx, "r1", types, 1), &err), WF_OK);

    PGconn *holder = store_conn();
    exec_ok(holder, "BEGIN");
    exec_ok(holder, "SELECT pg_advisory_xact_lock(7318240518)");
    wf_event_row *rows;
    size_t n;
    wf_store_ctx c = {"t1", wf_mono_ms() + 5000, arena};
    int64_t t0 = wf_mono_ms();
    ck_assert_int_eq(wf_store_read_events(st, &c, 0, NULL, 0, &rows, &n, &err), WF_OK);
    int64_t took = wf_mono_ms() - t0;
    ck_assert_uint_eq(n, 0);
    ck_assert_msg(took >= 900 && took < 2500, "took %" PRId64 " ms", took);
    /* A short deadline waits half of it. */
    c.deadline_ms = wf_mono_ms() + 400;
    t0 = wf_mono_ms();
    ck_assert_int_eq(wf_store_read_events(st, &c, 0, NULL, 0, &rows, &n, &err), WF_OK);
    took = wf_mono_ms() - t0;
    ck_assert_uint_eq(n, 0);
    ck_assert_msg(took >= 150 && took < 400, "took %" PRId64 " ms", took);

    exec_ok(holder, "COMMIT");
    PQfinish(holder);
    ck_assert_int_eq(wf_store_read_events(st, &ctx, 0, NULL, 0, &rows, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(rows[0].sequence, 1);
    wf_store_free(st);
}
END_TEST

/* Nobody read for a while: a backlog larger than one batch is numbered by
 * wf_store_sequence_events in id order, and a read numbers a backlog too. */
WF_CASE_TEST("postgres", test_sequence_events_catches_up_a_backlog)
{
    enum { BACKLOG = 2500 };
    st = open_with(2, 1000);
    make_root(st, "r1");
    wf_store_ctx ctx = {"t1", wf_mono_ms() + 30000, arena};
    wf_error err = {0};
    wf_event_row *ev = wf_arena_calloc(arena, BACKLOG, sizeof *ev);
    for (int i = 0; i < BACKLOG; i++)
        ev[i] = (wf_event_row){0, NULL, "r1", "r1", "E", NULL, wf_arena_printf(arena, "%d", i), 1};
    for (int round = 0; round < 2; round++) {
        wf_tx *tx = NULL;
        ck_assert_int_eq(wf_store_begin(st, &ctx, &tx, &err), WF_OK);
        ck_assert_int_eq(
            wf_tx_apply(tx, &(wf_store_changes){.events = ev, .n_events = BACKLOG}, &err), WF_OK);
        ck_assert_int_eq(wf_tx_commit(tx, &err), WF_OK);
        if (round == 1)
            break;
        PGconn *pg = store_conn();
        ck_assert_int_eq(scalar(pg, "SELECT count(*) FROM events WHERE sequence IS NULL"), BACKLOG);
        PQfinish(pg);
        ck_assert_int_eq(wf_store_sequence_events(st, &ctx, &err), WF_OK);
    }
    /* The second backlog is numbered by a read. */
    wf_event_row *rows;
    size_t n;
    ck_assert_int_eq(wf_store_read_events(st, &ctx, BACKLOG - 2, NULL, 5, &rows, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 5);
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(rows[i].sequence, BACKLOG - 1 + (int64_t)i);
        ck_assert_int_eq(atoi(rows[i].data_json), (BACKLOG - 2 + (int)i) % BACKLOG);
    }
    PGconn *pg = store_conn();
    ck_assert_int_eq(scalar(pg, "SELECT count(*) FROM events WHERE sequence IS NULL"), 0);
    ck_assert_int_eq(scalar(pg, "SELECT max(sequence) FROM events"), 2 * BACKLOG);
    ck_assert_int_eq(scalar(pg, "SELECT last FROM event_sequencer"), 2 * BACKLOG);
    /* Dense, and in id order. */
    ck_assert_int_eq(scalar(pg, "SELECT count(*) FROM (SELECT sequence, row_number() OVER "
                                "(ORDER BY id) AS k FROM events) x WHERE sequence <> k"),
                     0);
    PQfinish(pg);
    wf_store_free(st);
}
END_TEST

/* ---- listener ---------------------------------------------------------------- */

static notes heard_a, heard_b;

static void
commit_event_and_job(wf_store *s, const char *job_id, const char *type)
{
    wf_store_ctx ctx = {"t1", wf_mono_ms() + 2000, arena};
    wf_event_row ev = {0, NULL, "r1", "r1", "E", NULL, "{}", 1};
    wf_job_row job = {.id = (char *)job_id,
                      .root_id = "r1",
                      .instance_id = "r1",
                      .job_type = (char *)type,
                      .state = WF_JOB_ACTIVATABLE,
                      .attempt = 1,
                      .max_attempts = 3,
                      .activatable_at = 1,
                      .created_at = 1};
    wf_error err = {0};
    wf_tx *tx = NULL;
    wf_code rc = wf_store_begin(s, &ctx, &tx, &err);
    if (rc == WF_OK)
        rc = wf_tx_apply(
            tx, &(wf_store_changes){.events = &ev, .n_events = 1, .jobs = &job, .n_jobs = 1}, &err);
    if (rc == WF_OK)
        rc = wf_tx_commit(tx, &err);
    else
        wf_tx_rollback(tx);
    ck_assert_msg(rc == WF_OK, "commit: %s", err.msg);
}

/* Two store objects on one database (two replicas): a commit on either
 * wakes the listeners of both. Freeing a store stops its listener fast. */
WF_CASE_TEST("postgres", test_listener_hears_other_replicas)
{
    char type_a[32], type_b[32];
    snprintf(type_a, sizeof type_a, "a-%d", (int)getpid());
    snprintf(type_b, sizeof type_b, "b-%d", (int)getpid());
    st = open_with(2, 1000);
    wf_store *st2 = open_with(2, 1000);
    make_root(st, "r1");
    notes_init(&heard_a);
    notes_init(&heard_b);
    wf_error err = {0};
    ck_assert_int_eq(wf_store_set_listener(st, notes_fn, &heard_a, &err), WF_OK);
    ck_assert_int_eq(wf_store_set_listener(st2, notes_fn, &heard_b, &err), WF_OK);

    int from_a = notes_count(&heard_a), from_b = notes_count(&heard_b);
    commit_event_and_job(st, "ja", type_a);
    ck_assert(notes_wait(&heard_a, from_a, "wf_events", "r1", 5000) >= 0);
    ck_assert(notes_wait(&heard_b, from_b, "wf_events", "r1", 5000) >= 0);
    ck_assert(notes_wait(&heard_a, from_a, "wf_jobs", type_a, 5000) >= 0);
    ck_assert(notes_wait(&heard_b, from_b, "wf_jobs", type_a, 5000) >= 0);
    commit_event_and_job(st2, "jb", type_b);
    ck_assert(notes_wait(&heard_a, from_a, "wf_jobs", type_b, 5000) >= 0);
    ck_assert(notes_wait(&heard_b, from_b, "wf_jobs", type_b, 5000) >= 0);

    int64_t t0 = wf_mono_ms();
    wf_store_free(st2);
    int64_t took = wf_mono_ms() - t0;
    ck_assert_msg(took < 1000, "stopping the listener took %" PRId64 " ms", took);
    wf_store_free(st);
}
END_TEST

/* Wake-ups leave the writing transactions: no trigger notifies on events
 * or jobs, and a burst of commits on one replica reaches another as fewer
 * notifications than commits (coalesced after commit), the last commit's
 * included. */
#define BURST_THREADS 4
#define BURST_COMMITS 50

struct burst {
    wf_store *st;
    int thread;
    const char *type;
};

static void *
burst_main(void *arg)
{
    struct burst *b = arg;
    wf_arena *a = wf_arena_new();
    for (int i = 0; i < BURST_COMMITS && a != NULL; i++) {
        char id[32];
        snprintf(id, sizeof id, "jb-%d-%d", b->thread, i);
        wf_store_ctx ctx = {"t1", wf_mono_ms() + 5000, a};
        wf_event_row ev = {0, NULL, "r1", "r1", "E", NULL, "{}", 1};
        wf_job_row job = {.id = id,
                          .root_id = "r1",
                          .instance_id = "r1",
                          .job_type = (char *)b->type,
                          .state = WF_JOB_ACTIVATABLE,
                          .attempt = 1,
                          .max_attempts = 3,
                          .activatable_at = 1,
                          .created_at = 1};
        wf_error err = {0};
        wf_tx *tx = NULL;
        wf_code rc = wf_store_begin(b->st, &ctx, &tx, &err);
        if (rc == WF_OK)
            rc = wf_tx_apply(
                tx, &(wf_store_changes){.events = &ev, .n_events = 1, .jobs = &job, .n_jobs = 1},
                &err);
        if (rc == WF_OK)
            rc = wf_tx_commit(tx, &err);
        else
            wf_tx_rollback(tx);
        ck_assert_msg(rc == WF_OK, "commit: %s", err.msg);
    }
    wf_arena_free(a);
    return NULL;
}

WF_CASE_TEST("postgres", test_commits_notify_after_commit_coalesced)
{
    char type[32], last[32];
    snprintf(type, sizeof type, "burst-%d", (int)getpid());
    snprintf(last, sizeof last, "last-%d", (int)getpid());
    st = open_with(BURST_THREADS + 1, 2000);
    wf_store *st2 = open_with(1, 1000);
    make_root(st, "r1");
    PGconn *pg = store_conn();
    ck_assert_int_eq(scalar(pg, "SELECT count(*) FROM pg_trigger WHERE tgrelid IN "
                                "('events'::regclass, 'jobs'::regclass) AND NOT tgisinternal"),
                     0);
    PQfinish(pg);
    notes_init(&heard_b);
    wf_error err = {0};
    ck_assert_int_eq(wf_store_set_listener(st2, notes_fn, &heard_b, &err), WF_OK);

    int from = notes_count(&heard_b);
    pthread_t th[BURST_THREADS];
    struct burst b[BURST_THREADS];
    for (int i = 0; i < BURST_THREADS; i++) {
        b[i] = (struct burst){st, i, type};
        ck_assert_int_eq(pthread_create(&th[i], NULL, burst_main, &b[i]), 0);
    }
    for (int i = 0; i < BURST_THREADS; i++)
        pthread_join(th[i], NULL);
    /* Notifications arrive in the order they were sent: once the last
     * commit's is here, every earlier one is. */
    commit_event_and_job(st, "j-last", last);
    int at = notes_wait(&heard_b, from, "wf_jobs", last, 5000);
    ck_assert_int_ge(at, 0);
    int events = 0, jobs = 0;
    for (int i = from; i <= at; i++) {
        events += notes_find(&heard_b, i, i + 1, "wf_events", "r1") == i;
        jobs += notes_find(&heard_b, i, i + 1, "wf_jobs", type) == i;
    }
    const int commits = BURST_THREADS * BURST_COMMITS + 1;
    ck_assert_int_ge(events, 1);
    ck_assert_int_ge(jobs, 1);
    ck_assert_msg(events < commits && jobs < commits,
                  "%d commits, %d wf_events and %d wf_jobs notifications", commits, events, jobs);
    printf("coalesced wake-ups: %d commits, %d wf_events, %d wf_jobs notifications\n", commits,
           events, jobs);
    wf_store_free(st2);
    wf_store_free(st);
}
END_TEST

/* The listener reconnects after Postgres restarts, says so with one
 * ("wf_jobs", "") wake-up (what was sent meanwhile is lost), and hears
 * commits again. */
WF_CASE_TEST("postgres", test_listener_survives_restart)
{
    const char *ctl = getenv("WF_TEST_PG_CTL");
    if (ctl == NULL || ctl[0] == '\0') {
        printf("skipped listener restart case: WF_TEST_PG_CTL not set\n");
        return;
    }
    char type[32];
    snprintf(type, sizeof type, "r-%d", (int)getpid());
    st = open_with(2, 1000);
    make_root(st, "r1");
    notes_init(&heard_a);
    wf_error err = {0};
    ck_assert_int_eq(wf_store_set_listener(st, notes_fn, &heard_a, &err), WF_OK);
    commit_event_and_job(st, "j0", type);
    ck_assert(notes_wait(&heard_a, 0, "wf_jobs", type, 5000) >= 0);

    pg_ctl("stop -m fast -w");
    sleep_ms(1000);
    int from = notes_count(&heard_a);
    pg_ctl("start -w -t 60");
    int at = notes_wait(&heard_a, from, "wf_jobs", "", 5000);
    ck_assert_msg(at >= 0, "the listener did not come back");
    ck_assert(notes_find(&heard_a, from, at, "wf_events", "") >= 0);

    /* Commit again (the pool may still be backing off for a moment). */
    from = notes_count(&heard_a);
    int64_t until = wf_mono_ms() + 5000;
    wf_code rc;
    do {
        wf_store_ctx ctx = {"t1", wf_mono_ms() + 2000, arena};
        wf_event_row ev = {0, NULL, "r1", "r1", "E", NULL, "{}", 1};
        wf_job_row job = {.id = "j1",
                          .root_id = "r1",
                          .instance_id = "r1",
                          .job_type = type,
                          .state = WF_JOB_ACTIVATABLE,
                          .attempt = 1,
                          .max_attempts = 3,
                          .activatable_at = 1,
                          .created_at = 1};
        wf_tx *tx = NULL;
        rc = wf_store_begin(st, &ctx, &tx, &err);
        if (rc == WF_OK)
            rc = wf_tx_apply(
                tx, &(wf_store_changes){.events = &ev, .n_events = 1, .jobs = &job, .n_jobs = 1},
                &err);
        if (rc == WF_OK)
            rc = wf_tx_commit(tx, &err);
        else
            wf_tx_rollback(tx);
        if (rc != WF_OK)
            sleep_ms(100);
    } while (rc != WF_OK && wf_mono_ms() < until);
    ck_assert_msg(rc == WF_OK, "commit after restart: %s", err.msg);
    ck_assert(notes_wait(&heard_a, from, "wf_jobs", type, 5000) >= 0);
    ck_assert(notes_wait(&heard_a, from, "wf_events", "r1", 5000) >= 0);
    wf_store_free(st);
}
END_TEST

int
main(void)
{
    dsn = wf_test_pg_dsn();
    /* Expected failures (outages, conflicts) log warnings; keep the run
     * readable unless asked. */
    if (getenv("WF_TEST_LOG") == NULL)
        wf_log_threshold = WF_LOG_ERROR;
    contract_factory = &pg_factory;
    Suite *s = store_contract_suite("store_pg");
    wf_test_add_case(s, &(wf_test_case){"postgres", setup, teardown, 90});
    return store_run_suite(s);
}
