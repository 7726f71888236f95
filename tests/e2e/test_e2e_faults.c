/*
 * Fault injection against Postgres: the acceptance of "survive database
 * faults", checked end to end.
 *
 *  - postgres_killed: Postgres is killed (pg_ctl stop -m immediate) while 6
 *    client threads load an in-process server on Postgres, and started
 *    again 3 s later. Every call returns OK or UNAVAILABLE within its
 *    deadline (+500 ms), calls fail during the outage, health goes
 *    NOT_SERVING and back to SERVING, calls succeed again on the SAME
 *    server within 10 s of the restart, and every StartInstance that
 *    returned OK is still there afterwards.
 *  - concurrent_migration: three workflowd processes released at the same
 *    moment against an empty database migrate it exactly once, all three
 *    serve, and each exits 0 within 5 s of SIGTERM.
 *
 * Needs WF_TEST_PG_DSN (both cases) and WF_TEST_PG_CTL ("pg.sh ctl DIR",
 * the kill case); test.sh exports both. Without them it prints
 * "skipped: ..." and exits 77 (skipped).
 *
 * With WF_TEST_PG_DURABLE=1 (test_e2e_faults_durable: a cluster of its own
 * made by tests/support/own_pg.sh --durable) the kill case first checks that the
 * cluster runs as production does, fsync, synchronous_commit and
 * full_page_writes on, and leaves the server's sessions at the cluster's
 * settings: the kill then tests durability as deployed.
 *
 * Cleanup does not depend on the test process surviving: in fork mode a
 * failed assertion _exit()s the test child (no checked teardown, no atexit
 * handler runs) and a timeout SIGKILLs it. So the unchecked teardowns, which
 * run in the parent runner, start Postgres again when it is down and drop
 * the scratch database, and every spawned workflowd dies with the test
 * child (PR_SET_PDEATHSIG). The suite stops the shared cluster: it must not
 * run in parallel with other Postgres suites (RUN_SERIAL in CMake).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <grpc/status.h>
#include <libpq-fe.h>

#include "grpc/health/v1/health.pb-c.h"
#include "pg/pool.h" /* wf_store_pg_migrations: the migrations embedded in workflowd */
#include "test_support.h"
#include "wf_id.h"
#include "wf_time.h"
#include "workflow/v1/workflow.pb-c.h"

#ifndef WORKFLOWD_PATH
#error "WORKFLOWD_PATH must name the workflowd binary (see tests/CMakeLists.txt)"
#endif

#define SVC "/workflow.v1.WorkflowService/"
#define SERVING GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING
#define NOT_SERVING GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING

/* ---- shared helpers ------------------------------------------------------------------------ */

static const char *
env_nonempty(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

static void
sleep_ms(int64_t ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Runs "$WF_TEST_PG_CTL args" (pg_ctl on the test cluster). Its output goes
 * to stderr, or nowhere when quiet. Returns pg_ctl's exit status, -1 when
 * it could not be run. */
static int
pg_ctl(const char *args, bool quiet)
{
    const char *ctl = env_nonempty("WF_TEST_PG_CTL");
    if (ctl == NULL)
        return -1;
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s %s", ctl, args, quiet ? ">/dev/null 2>&1" : "1>&2");
    int rc = system(cmd);
    if (rc == -1 || !WIFEXITED(rc))
        return -1;
    return WEXITSTATUS(rc);
}

/* Starts Postgres again when it is not running (pg_ctl status: 3). Runs in
 * the parent runner after the kill case, whatever became of the child. */
static void
pg_ensure_running(void)
{
    if (env_nonempty("WF_TEST_PG_CTL") == NULL)
        return;
    int st = pg_ctl("status", true);
    if (st == 0)
        return;
    fprintf(stderr,
            "faults: Postgres is not running after the test (pg_ctl status %d); "
            "starting it again\n",
            st);
    if (pg_ctl("start -w -t 60", false) != 0)
        fprintf(stderr, "faults: could NOT start Postgres again\n");
}

/* Appends key='value' (conninfo quoting) to out. False when it does not fit. */
static bool
ci_append(char *out, size_t cap, const char *key, const char *val)
{
    size_t n = strlen(out);
    int k = snprintf(out + n, cap - n, "%s%s='", n > 0 ? " " : "", key);
    if (k < 0 || (size_t)k >= cap - n)
        return false;
    n += (size_t)k;
    for (const char *p = val; *p != '\0'; p++) {
        if (n + 3 >= cap)
            return false;
        if (*p == '\'' || *p == '\\')
            out[n++] = '\\';
        out[n++] = *p;
    }
    if (n + 2 > cap)
        return false;
    out[n++] = '\'';
    out[n] = '\0';
    return true;
}

/* WF_TEST_PG_DSN as a key=value conninfo: dbname replaced by db (when not
 * NULL), extra_options appended to the server options (when not NULL). */
static bool
conninfo(char *out, size_t cap, const char *db, const char *extra_options)
{
    char *errmsg = NULL;
    PQconninfoOption *opts = PQconninfoParse(getenv("WF_TEST_PG_DSN"), &errmsg);
    if (opts == NULL) {
        fprintf(stderr, "faults: cannot parse WF_TEST_PG_DSN: %s\n",
                errmsg != NULL ? errmsg : "out of memory");
        PQfreemem(errmsg);
        return false;
    }
    bool ok = true;
    const char *old_options = NULL;
    out[0] = '\0';
    for (PQconninfoOption *o = opts; ok && o->keyword != NULL; o++) {
        if (o->val == NULL || o->val[0] == '\0' ||
            (db != NULL && strcmp(o->keyword, "dbname") == 0))
            continue;
        if (strcmp(o->keyword, "options") == 0) {
            old_options = o->val;
            continue;
        }
        ok = ci_append(out, cap, o->keyword, o->val);
    }
    if (ok && db != NULL)
        ok = ci_append(out, cap, "dbname", db);
    char merged[512];
    snprintf(merged, sizeof merged, "%s%s%s", old_options != NULL ? old_options : "",
             old_options != NULL && extra_options != NULL ? " " : "",
             extra_options != NULL ? extra_options : "");
    if (ok && merged[0] != '\0')
        ok = ci_append(out, cap, "options", merged);
    PQconninfoFree(opts);
    return ok;
}

static void
no_notices(void *arg, const char *message)
{
    (void)arg;
    (void)message; /* "does not exist, skipping" and the like */
}

/* Runs one SQL command on a new connection; errbuf gets the error. */
static bool
sql_command(const char *ci, const char *sql, char *errbuf, size_t cap)
{
    PGconn *c = PQconnectdb(ci);
    bool ok = PQstatus(c) == CONNECTION_OK;
    if (ok) {
        PQsetNoticeProcessor(c, no_notices, NULL);
        PGresult *r = PQexec(c, sql);
        ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        if (!ok)
            snprintf(errbuf, cap, "%s", PQresultErrorMessage(r));
        PQclear(r);
    } else {
        snprintf(errbuf, cap, "%s", PQerrorMessage(c));
    }
    PQfinish(c);
    return ok;
}

/* The value of a server setting (SHOW name) into out; on failure out
 * gets the error. */
static bool
show_setting(const char *ci, const char *name, char *out, size_t cap)
{
    PGconn *c = PQconnectdb(ci);
    bool ok = PQstatus(c) == CONNECTION_OK;
    if (ok) {
        char sql[128];
        snprintf(sql, sizeof sql, "SHOW %s", name);
        PGresult *r = PQexec(c, sql);
        ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
        snprintf(out, cap, "%s", ok ? PQgetvalue(r, 0, 0) : PQresultErrorMessage(r));
        PQclear(r);
    } else {
        snprintf(out, cap, "%s", PQerrorMessage(c));
    }
    PQfinish(c);
    return ok;
}

/* Health Check of the readiness service (""): the gRPC code; *status set on OK. */
static int
health(wf_client *c, int *status, wf_client_status *st)
{
    Grpc__Health__V1__HealthCheckRequest req = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
    req.service = "";
    ProtobufCMessage *resp = NULL;
    int code =
        wf_client_call(c, "/grpc.health.v1.Health/Check", &req.base,
                       &grpc__health__v1__health_check_response__descriptor, &resp, NULL, st);
    if (resp != NULL) {
        *status = (int)((Grpc__Health__V1__HealthCheckResponse *)resp)->status;
        protobuf_c_message_free_unpacked(resp, NULL);
    }
    return code;
}

/* 8 random hex digits (the random tail of a UUIDv7). */
static void
random_suffix(char out[9])
{
    char id[WF_UUID_LEN + 1];
    wf_uuid7(id);
    snprintf(out, 9, "%.8s", id + 28);
}

/* ==== 1. Postgres killed under load ======================================== */

#define LOAD_THREADS 6
#define LOAD_MS 12000   /* the load runs this long (longer only while recovering) */
#define KILL_AT_MS 3000 /* Postgres is killed this long after the load starts */
#define OUTAGE_MS 3000  /* and started again this long after it is down */
#define CALL_DEADLINE_MS 2000
/* A call may take its deadline plus this (more under sanitizers and load). */
#define CALL_SLACK_MS (500 * wf_test_time_scale())
/* Calls must succeed again this soon after the restart. */
#define RECOVERY_MS (10000 * wf_test_time_scale())
#define FAIL_PAUSE_MS 10 /* a client's pause after a failed call */
#define POOL_SIZE "4"

enum { M_START, M_GET, M_N };
static const char *const method_names[M_N] = {"StartInstance", "GetInstance"};

typedef struct acked {
    char *id;
    int64_t at; /* mono ms when StartInstance returned OK */
} acked;

/* What one load thread saw; read by the test after the thread is joined. */
typedef struct load_stats {
    long ok[M_N], unavail_server[M_N], unavail_client[M_N], other[M_N];
    long late;        /* calls over their deadline + slack */
    long outage_fail; /* failed calls overlapping [kill, restart done] */
    long outage_ok;   /* OK calls entirely inside [kill done, restart begin] */
    int64_t worst_ms;
    char worst_what[64];
    acked *acks; /* every StartInstance that returned OK */
    size_t nacks, cap;
    int nnotes;
    char notes[4][320]; /* the first unexpected outcomes */
} load_stats;

static wf_test_server ts;
static char run_key[64], run_actor[64];
static load_stats stats[LOAD_THREADS];
static pthread_t load_th[LOAD_THREADS];
static bool load_started[LOAD_THREADS];
static atomic_int load_stop;
/* Phase marks, mono ms; 0 = not reached yet. */
static _Atomic int64_t kill_begin_ms, kill_done_ms, restart_begin_ms, restart_done_ms;
static _Atomic int64_t first_ok_after_restart_ms;

static void note(load_stats *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
note(load_stats *s, const char *fmt, ...)
{
    if (s->nnotes >= 4)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->notes[s->nnotes++], sizeof s->notes[0], fmt, ap);
    va_end(ap);
}

static void
record(load_stats *s, int m, int64_t t0, int64_t t1, const wf_client_status *st)
{
    int64_t ms = t1 - t0;
    if (ms > s->worst_ms) {
        s->worst_ms = ms;
        snprintf(s->worst_what, sizeof s->worst_what, "%s %s", method_names[m],
                 wf_client_code_name(st->code));
    }
    if (ms > CALL_DEADLINE_MS + CALL_SLACK_MS) {
        s->late++;
        note(s, "%s took %lld ms (%s %s: %s)", method_names[m], (long long)ms,
             wf_client_code_name(st->code), st->reason, st->message);
    }
    int64_t kb = atomic_load(&kill_begin_ms), kd = atomic_load(&kill_done_ms);
    int64_t rb = atomic_load(&restart_begin_ms), rd = atomic_load(&restart_done_ms);
    if (st->code == GRPC_STATUS_OK) {
        s->ok[m]++;
        if (kd != 0 && t0 >= kd && rb == 0)
            s->outage_ok++;
        if (rd != 0 && t0 >= rd) {
            int64_t cur = atomic_load(&first_ok_after_restart_ms);
            while ((cur == 0 || t1 < cur) &&
                   !atomic_compare_exchange_weak(&first_ok_after_restart_ms, &cur, t1))
                ;
        }
        return;
    }
    if (kb != 0 && t1 >= kb && (rd == 0 || t0 < rd))
        s->outage_fail++;
    if (st->code == GRPC_STATUS_UNAVAILABLE && strcmp(st->reason, "STORE_UNAVAILABLE") == 0) {
        s->unavail_server[m]++;
    } else if (st->code == GRPC_STATUS_UNAVAILABLE && st->reason[0] == '\0') {
        s->unavail_client[m]++; /* the channel's own UNAVAILABLE: no ErrorInfo */
    } else {
        s->other[m]++;
        note(s, "%s after %lld ms: %s reason=\"%s\": %s", method_names[m], (long long)ms,
             wf_client_code_name(st->code), st->reason, st->message);
    }
}

static bool
keep_ack(load_stats *s, const char *id, int64_t at)
{
    if (s->nacks == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        acked *a = realloc(s->acks, cap * sizeof *a);
        if (a == NULL)
            return false;
        s->acks = a;
        s->cap = cap;
    }
    char *dup = strdup(id);
    if (dup == NULL)
        return false;
    s->acks[s->nacks++] = (acked){dup, at};
    return true;
}

/* One client: StartInstance, then GetInstance of the newest instance it
 * started (the one just started, or the last one when the start failed),
 * until load_stop. Bounded by a hard 60 s cap as well. */
static void *
load_main(void *arg)
{
    load_stats *s = arg;
    wf_client_options o = {.target = ts.target, .actor = run_actor, .timeout_ms = CALL_DEADLINE_MS};
    wf_client *c = wf_client_new(&o);
    if (c == NULL) {
        note(s, "could not create a client");
        return NULL;
    }
    int64_t hard_end = wf_mono_ms() + 60000;
    while (!atomic_load(&load_stop) && wf_mono_ms() < hard_end) {
        Workflow__V1__StartInstanceRequest sreq = WORKFLOW__V1__START_INSTANCE_REQUEST__INIT;
        sreq.definition_key = run_key;
        sreq.variables_json = "{}";
        ProtobufCMessage *resp = NULL;
        wf_client_status st;
        int64_t t0 = wf_mono_ms();
        wf_client_call(c, SVC "StartInstance", &sreq.base,
                       &workflow__v1__start_instance_response__descriptor, &resp, NULL, &st);
        int64_t t1 = wf_mono_ms();
        record(s, M_START, t0, t1, &st);
        bool started = st.code == GRPC_STATUS_OK;
        if (started) {
            Workflow__V1__StartInstanceResponse *r = (void *)resp;
            if (r->instance == NULL || r->instance->id == NULL || r->instance->id[0] == '\0')
                note(s, "StartInstance returned OK without an instance id");
            else if (!keep_ack(s, r->instance->id, t1))
                note(s, "out of memory");
        }
        if (resp != NULL)
            protobuf_c_message_free_unpacked(resp, NULL);
        if (s->nacks > 0) {
            const char *id = s->acks[s->nacks - 1].id;
            Workflow__V1__GetInstanceRequest greq = WORKFLOW__V1__GET_INSTANCE_REQUEST__INIT;
            greq.instance_id = (char *)id;
            resp = NULL;
            t0 = wf_mono_ms();
            wf_client_call(c, SVC "GetInstance", &greq.base,
                           &workflow__v1__get_instance_response__descriptor, &resp, NULL, &st);
            t1 = wf_mono_ms();
            record(s, M_GET, t0, t1, &st);
            if (st.code == GRPC_STATUS_OK) {
                Workflow__V1__GetInstanceResponse *g = (void *)resp;
                if (g->instance == NULL || strcmp(g->instance->id, id) != 0)
                    note(s, "GetInstance %s returned another instance", id);
            } else {
                started = false;
            }
            if (resp != NULL)
                protobuf_c_message_free_unpacked(resp, NULL);
        }
        if (!started)
            sleep_ms(FAIL_PAUSE_MS);
    }
    wf_client_free(c);
    return NULL;
}

static void
setup_kill(void)
{
    char sfx[9];
    random_suffix(sfx);
    snprintf(run_key, sizeof run_key, "faults-%s", sfx);
    snprintf(run_actor, sizeof run_actor, "loader-%s", sfx);
    /* The fast cluster of pg.sh runs with synchronous_commit=off: there a
     * crash may lose commits of the last few hundred ms, by Postgres' own
     * design and whatever the service does. The server's sessions ask for
     * synchronous commit, so that "no acknowledged write is lost" tests the
     * service, not that setting. A durable cluster (pg.sh --durable) is
     * checked to be one and used as it is. */
    static char dburl[2048];
    char ci[2000];
    const char *durable = env_nonempty("WF_TEST_PG_DURABLE");
    if (durable != NULL && strcmp(durable, "1") == 0) {
        const char *const names[] = {"fsync", "synchronous_commit", "full_page_writes"};
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            char val[256];
            ck_assert_msg(show_setting(getenv("WF_TEST_PG_DSN"), names[i], val, sizeof val),
                          "SHOW %s failed: %s", names[i], val);
            ck_assert_msg(strcmp(val, "on") == 0,
                          "WF_TEST_PG_DURABLE=1 but the cluster runs with %s = %s", names[i], val);
        }
        printf("faults/kill: durable cluster (fsync, synchronous_commit, full_page_writes on)\n");
        fflush(stdout);
        ck_assert_msg(conninfo(ci, sizeof ci, NULL, NULL),
                      "cannot build a conninfo from WF_TEST_PG_DSN");
    } else {
        ck_assert_msg(conninfo(ci, sizeof ci, NULL, "-c synchronous_commit=on"),
                      "cannot build a conninfo from WF_TEST_PG_DSN");
    }
    snprintf(dburl, sizeof dburl, "DATABASE_URL=%s", ci);
    const char *env[] = {dburl, "WF_DB_POOL_SIZE=" POOL_SIZE, "WF_THREADS=4", NULL};
    wf_test_server_start(&ts, env);
}

static void
teardown_kill(void)
{
    atomic_store(&load_stop, 1);
    for (int i = 0; i < LOAD_THREADS; i++)
        if (load_started[i])
            pthread_join(load_th[i], NULL);
    for (int i = 0; i < LOAD_THREADS; i++) {
        for (size_t k = 0; k < stats[i].nacks; k++)
            free(stats[i].acks[k].id);
        free(stats[i].acks);
        memset(&stats[i], 0, sizeof stats[i]);
    }
    if (ts.srv != NULL)
        wf_test_server_stop(&ts, 1000);
}

/* Parent runner, after the case: Postgres must be up whatever happened. */
static void
unchecked_teardown_kill(void)
{
    pg_ensure_running();
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every id ListInstances returns for run_key, sorted; *n set. */
static char **
list_all(wf_client *c, size_t max_pages, size_t *n)
{
    char **ids = NULL;
    size_t cap = 0;
    *n = 0;
    char *token = strdup("");
    ck_assert_ptr_nonnull(token);
    for (size_t page = 0; page < max_pages; page++) {
        Workflow__V1__ListInstancesRequest req = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
        req.definition_key = run_key;
        req.page_size = 500;
        req.page_token = token;
        ProtobufCMessage *resp = NULL;
        wf_client_status st;
        wf_client_call(c, SVC "ListInstances", &req.base,
                       &workflow__v1__list_instances_response__descriptor, &resp, NULL, &st);
        ck_assert_msg(st.code == GRPC_STATUS_OK, "ListInstances after the restart: %s %s: %s",
                      wf_client_code_name(st.code), st.reason, st.message);
        Workflow__V1__ListInstancesResponse *r = (void *)resp;
        for (size_t i = 0; i < r->n_instances; i++) {
            if (*n == cap) {
                cap = cap ? cap * 2 : 1024;
                ids = realloc(ids, cap * sizeof *ids);
                ck_assert_ptr_nonnull(ids);
            }
            ids[(*n)++] = strdup(r->instances[i]->id);
        }
        free(token);
        token = strdup(r->next_page_token != NULL ? r->next_page_token : "");
        protobuf_c_message_free_unpacked(resp, NULL);
        ck_assert_ptr_nonnull(token);
        if (token[0] == '\0')
            break;
        ck_assert_msg(page + 1 < max_pages, "ListInstances did not end after %zu pages", max_pages);
    }
    free(token);
    if (*n > 0)
        qsort(ids, *n, sizeof *ids, cmp_str);
    return ids;
}

START_TEST(test_postgres_killed_under_load)
{
    int64_t t0 = wf_mono_ms();
    for (int i = 0; i < LOAD_THREADS; i++) {
        ck_assert_int_eq(pthread_create(&load_th[i], NULL, load_main, &stats[i]), 0);
        load_started[i] = true;
    }
    wf_client_options ho = {.target = ts.target, .timeout_ms = 1000};
    wf_client *hc = wf_client_new(&ho);
    ck_assert_ptr_nonnull(hc);

    /* Nothing is asserted from the kill until Postgres is back: a failed
     * assertion would leave it down for this process (the parent runner
     * would start it again, but only after the case). */
    sleep_ms(t0 + KILL_AT_MS - wf_mono_ms());
    atomic_store(&kill_begin_ms, wf_mono_ms());
    int stop_rc = pg_ctl("stop -m immediate -w", false);
    atomic_store(&kill_done_ms, wf_mono_ms());

    /* The outage: poll readiness. */
    int64_t not_serving_at = 0, down_until = atomic_load(&kill_done_ms) + OUTAGE_MS;
    long health_polls = 0, health_failed = 0;
    while (wf_mono_ms() < down_until) {
        int status = -1;
        wf_client_status hs;
        health_polls++;
        if (health(hc, &status, &hs) != GRPC_STATUS_OK)
            health_failed++;
        else if (status == NOT_SERVING && not_serving_at == 0)
            not_serving_at = wf_mono_ms();
        sleep_ms(100);
    }
    atomic_store(&restart_begin_ms, wf_mono_ms());
    int start_rc = pg_ctl("start -w -t 60", false);
    atomic_store(&restart_done_ms, wf_mono_ms());
    int64_t rd = atomic_load(&restart_done_ms);

    /* Recovery, on the same server: readiness SERVING again and an OK call
     * started after the restart; the load runs at least LOAD_MS. */
    int64_t serving_at = 0;
    for (;;) {
        int64_t now = wf_mono_ms();
        bool recovered = serving_at != 0 && atomic_load(&first_ok_after_restart_ms) != 0;
        if (now >= rd + RECOVERY_MS || (recovered && now >= t0 + LOAD_MS))
            break;
        if (serving_at == 0) {
            int status = -1;
            wf_client_status hs;
            if (health(hc, &status, &hs) == GRPC_STATUS_OK && status == SERVING)
                serving_at = wf_mono_ms();
        }
        sleep_ms(50);
    }
    atomic_store(&load_stop, 1);
    for (int i = 0; i < LOAD_THREADS; i++) {
        pthread_join(load_th[i], NULL);
        load_started[i] = false;
    }
    wf_client_free(hc);

    /* ---- the numbers ---- */
    load_stats t = {0};
    size_t nacks = 0;
    char worst_what[64] = "";
    for (int i = 0; i < LOAD_THREADS; i++) {
        load_stats *s = &stats[i];
        for (int m = 0; m < M_N; m++) {
            t.ok[m] += s->ok[m];
            t.unavail_server[m] += s->unavail_server[m];
            t.unavail_client[m] += s->unavail_client[m];
            t.other[m] += s->other[m];
        }
        t.late += s->late;
        t.outage_fail += s->outage_fail;
        t.outage_ok += s->outage_ok;
        if (s->worst_ms > t.worst_ms) {
            t.worst_ms = s->worst_ms;
            snprintf(worst_what, sizeof worst_what, "%s", s->worst_what);
        }
        nacks += s->nacks;
        for (int k = 0; k < s->nnotes; k++)
            fprintf(stderr, "faults: thread %d: %s\n", i, s->notes[k]);
    }
    int64_t first_ok = atomic_load(&first_ok_after_restart_ms);
    for (int m = 0; m < M_N; m++)
        printf("faults/kill: %-13s OK %ld, UNAVAILABLE %ld (STORE_UNAVAILABLE %ld, client-side "
               "%ld), other %ld\n",
               method_names[m], t.ok[m], t.unavail_server[m] + t.unavail_client[m],
               t.unavail_server[m], t.unavail_client[m], t.other[m]);
    printf("faults/kill: worst call %lld ms (%s; budget %d ms), over budget %ld; failed during "
           "the outage %ld, OK inside it %ld\n",
           (long long)t.worst_ms, worst_what, CALL_DEADLINE_MS + CALL_SLACK_MS, t.late,
           t.outage_fail, t.outage_ok);
    printf("faults/kill: pg stop took %lld ms, start -w %lld ms; health NOT_SERVING %lld ms after "
           "the kill (%ld polls, %ld failed), SERVING %lld ms after the restart; first OK call "
           "%lld ms after the restart\n",
           (long long)(atomic_load(&kill_done_ms) - atomic_load(&kill_begin_ms)),
           (long long)(rd - atomic_load(&restart_begin_ms)),
           (long long)(not_serving_at ? not_serving_at - atomic_load(&kill_done_ms) : -1),
           health_polls, health_failed, (long long)(serving_at ? serving_at - rd : -1),
           (long long)(first_ok ? first_ok - rd : -1));
    fflush(stdout);

    ck_assert_msg(stop_rc == 0, "pg_ctl stop -m immediate failed (%d)", stop_rc);
    ck_assert_msg(start_rc == 0, "pg_ctl start -w failed (%d)", start_rc);
    ck_assert_msg(t.ok[M_START] > 0, "no StartInstance succeeded");
    long other = t.other[M_START] + t.other[M_GET];
    ck_assert_msg(other == 0,
                  "%ld calls returned neither OK nor UNAVAILABLE (first ones on stderr)", other);
    ck_assert_msg(t.late == 0, "%ld calls took longer than %d ms (worst %lld ms)", t.late,
                  CALL_DEADLINE_MS + CALL_SLACK_MS, (long long)t.worst_ms);
    ck_assert_msg(t.outage_fail > 0, "no call failed during the outage: was Postgres killed?");
    ck_assert_msg(t.outage_ok == 0, "%ld calls succeeded while Postgres was down", t.outage_ok);
    ck_assert_msg(not_serving_at != 0, "health never reported NOT_SERVING during the outage");
    ck_assert_msg(serving_at != 0, "health not SERVING within %d ms of the restart", RECOVERY_MS);
    ck_assert_msg(first_ok != 0, "no call succeeded within %d ms of the restart", RECOVERY_MS);
    ck_assert_int_le(first_ok - rd, RECOVERY_MS);

    /* No acknowledged write lost: every instance whose StartInstance
     * returned OK is listed after the restart, and the last one each
     * client got before the kill (the most at risk) reads back. */
    wf_client_options vo = {.target = ts.target, .actor = run_actor, .timeout_ms = 10000};
    wf_client *vc = wf_client_new(&vo);
    ck_assert_ptr_nonnull(vc);
    size_t nlisted = 0;
    char **listed = list_all(vc, nacks / 500 + 20, &nlisted);
    size_t missing = 0;
    int64_t kb = atomic_load(&kill_begin_ms);
    for (int i = 0; i < LOAD_THREADS; i++) {
        const acked *last_before = NULL;
        for (size_t k = 0; k < stats[i].nacks; k++) {
            const acked *a = &stats[i].acks[k];
            if (nlisted == 0 || bsearch(&a->id, listed, nlisted, sizeof *listed, cmp_str) == NULL) {
                if (missing++ < 5)
                    fprintf(stderr,
                            "faults: acknowledged instance %s (acked %lld ms %s the kill) "
                            "is not listed\n",
                            a->id, (long long)(a->at >= kb ? a->at - kb : kb - a->at),
                            a->at >= kb ? "after" : "before");
            }
            if (a->at < kb)
                last_before = a;
        }
        if (last_before != NULL) {
            Workflow__V1__GetInstanceRequest greq = WORKFLOW__V1__GET_INSTANCE_REQUEST__INIT;
            greq.instance_id = last_before->id;
            ProtobufCMessage *resp = NULL;
            wf_client_status st;
            wf_client_call(vc, SVC "GetInstance", &greq.base,
                           &workflow__v1__get_instance_response__descriptor, &resp, NULL, &st);
            ck_assert_msg(st.code == GRPC_STATUS_OK,
                          "GetInstance %s (acknowledged %lld ms before the kill): %s %s: %s",
                          last_before->id, (long long)(kb - last_before->at),
                          wf_client_code_name(st.code), st.reason, st.message);
            protobuf_c_message_free_unpacked(resp, NULL);
        }
    }
    printf("faults/kill: %zu acknowledged starts, %zu missing after the restart; %zu instances "
           "listed (%zd committed without an OK reaching the client)\n",
           nacks, missing, nlisted, (ssize_t)nlisted - (ssize_t)(nacks - missing));
    fflush(stdout);
    for (size_t i = 0; i < nlisted; i++)
        free(listed[i]);
    free(listed);
    wf_client_free(vc);
    ck_assert_msg(missing == 0, "%zu acknowledged StartInstance calls were lost", missing);
}
END_TEST

/* ==== 2. Three processes migrate an empty database ========================= */

#define NPROC 3
#define READY_MS 60000 /* generous: sanitizer builds start slowly */
#define TERM_MS (5000 * wf_test_time_scale())

static char mig_db[64];    /* chosen by the parent runner, so that it can drop it */
static char mig_dir[256];  /* logs of the spawned servers */
static pid_t procs[NPROC]; /* 0 = not running (reaped) */

static void
log_path(int i, char *out, size_t cap)
{
    snprintf(out, cap, "%s/workflowd-%d.log", mig_dir, i);
}

/* The whole log of server i ("" when unreadable), malloc'd. */
static char *
read_log(int i)
{
    char path[320];
    log_path(i, path, sizeof path);
    FILE *f = fopen(path, "r");
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap + 1);
    ck_assert_ptr_nonnull(buf);
    if (f != NULL) {
        n = fread(buf, 1, cap, f);
        fclose(f);
    }
    buf[n] = '\0';
    return buf;
}

static long
count_in(const char *hay, const char *needle)
{
    long n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* The port from "serving ... on port N", 0 while not logged yet. */
static int
logged_port(int i)
{
    char *log = read_log(i);
    const char *p = strstr(log, "\"event\":\"startup\"");
    int port = 0;
    if (p != NULL && (p = strstr(p, "serving workflow.v1.WorkflowService on port ")) != NULL)
        port = (int)strtol(p + strlen("serving workflow.v1.WorkflowService on port "), NULL, 10);
    free(log);
    return port;
}

static void
describe_status(int status, char *out, size_t cap)
{
    if (WIFEXITED(status))
        snprintf(out, cap, "exit %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(out, cap, "signal %d", WTERMSIG(status));
    else
        snprintf(out, cap, "status %#x", status);
}

static void
unchecked_setup_mig(void)
{
    char sfx[9];
    random_suffix(sfx);
    snprintf(mig_db, sizeof mig_db, "wf_mig_%s", sfx);
    snprintf(mig_dir, sizeof mig_dir, "%s/wf-faults-XXXXXX",
             env_nonempty("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(mig_dir) == NULL) {
        perror("faults: mkdtemp");
        exit(1);
    }
}

/* Parent runner: drop the scratch database and the logs, whatever became
 * of the child (its workflowd processes died with it). */
static void
unchecked_teardown_mig(void)
{
    char ci[2048], sql[160], err[512] = "";
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", mig_db);
    if (!conninfo(ci, sizeof ci, NULL, NULL) || !sql_command(ci, sql, err, sizeof err))
        fprintf(stderr, "faults: could not drop database %s: %s\n", mig_db, err);
    for (int i = 0; i < NPROC; i++) {
        char path[320];
        log_path(i, path, sizeof path);
        unlink(path);
    }
    rmdir(mig_dir);
}

/* Child, when the case passed: no process outlives it either way. */
static void
teardown_mig(void)
{
    for (int i = 0; i < NPROC; i++) {
        if (procs[i] > 0) {
            kill(procs[i], SIGKILL);
            waitpid(procs[i], NULL, 0);
            procs[i] = 0;
        }
    }
}

START_TEST(test_three_servers_migrate_an_empty_database_once)
{
    char admin[2048], dbci[2048], sql[160], err[512] = "";
    ck_assert(conninfo(admin, sizeof admin, NULL, NULL));
    ck_assert(conninfo(dbci, sizeof dbci, mig_db, NULL));
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", mig_db);
    ck_assert_msg(sql_command(admin, sql, err, sizeof err), "%s: %s", sql, err);

    /* Everything exec needs is built before the first fork. */
    static char e_db[2100];
    snprintf(e_db, sizeof e_db, "DATABASE_URL=%s", dbci);
    /* WF_LOG_LEVEL=info, not warn: the "serving ... on port N" line that
     * tells the port (WF_ADDR=...:0) is logged at info. */
    char *envp[16] = {e_db,
                      "WF_API_KEYS=k",
                      "WF_ADDR=127.0.0.1:0",
                      "WF_DRAIN_SECONDS=0",
                      "WF_LOG_LEVEL=info",
                      "WF_THREADS=2"};
    size_t ne = 6;
    static char pass[3][1024];
    const char *pass_names[3] = {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"};
    for (int i = 0; i < 3; i++)
        if (getenv(pass_names[i]) != NULL) {
            snprintf(pass[i], sizeof pass[i], "%s=%s", pass_names[i], getenv(pass_names[i]));
            envp[ne++] = pass[i];
        }
    envp[ne] = NULL;
    char *argv[] = {WORKFLOWD_PATH, NULL};
    int logfd[NPROC];
    for (int i = 0; i < NPROC; i++) {
        char path[320];
        log_path(i, path, sizeof path);
        logfd[i] = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ck_assert_msg(logfd[i] >= 0, "%s: %s", path, strerror(errno));
    }
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    ck_assert_int_ge(devnull, 0);

    /* Each child waits on the gate pipe; closing its write end releases all
     * three at the same moment. */
    int gate[2];
    ck_assert_int_eq(pipe(gate), 0);
    ck_assert_int_eq(fcntl(gate[0], F_SETFD, FD_CLOEXEC), 0);
    ck_assert_int_eq(fcntl(gate[1], F_SETFD, FD_CLOEXEC), 0);
    pid_t me = getpid();
    for (int i = 0; i < NPROC; i++) {
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            /* Dies with the test process, even when that one is killed. */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != me)
                _exit(126);
            close(gate[1]);
            dup2(devnull, 0);
            dup2(logfd[i], 1);
            dup2(logfd[i], 2);
            char b;
            while (read(gate[0], &b, 1) < 0 && errno == EINTR)
                ;
            execve(WORKFLOWD_PATH, argv, envp);
            _exit(127);
        }
        procs[i] = pid;
    }
    for (int i = 0; i < NPROC; i++)
        close(logfd[i]);
    close(devnull);
    close(gate[0]);
    int64_t t_go = wf_mono_ms();
    close(gate[1]); /* go */

    /* Ready: each logs its port; none may exit meanwhile. */
    int ports[NPROC] = {0};
    int64_t ready_ms[NPROC] = {0};
    int nready = 0;
    while (nready < NPROC && wf_mono_ms() < t_go + READY_MS) {
        for (int i = 0; i < NPROC; i++) {
            if (ports[i] != 0)
                continue;
            int status = 0;
            if (waitpid(procs[i], &status, WNOHANG) == procs[i]) {
                procs[i] = 0;
                char how[64];
                describe_status(status, how, sizeof how);
                char *log = read_log(i);
                ck_assert_msg(0, "workflowd %d ended (%s) before serving; its log:\n%.1500s", i,
                              how, log);
            }
            if ((ports[i] = logged_port(i)) != 0) {
                ready_ms[i] = wf_mono_ms() - t_go;
                nready++;
            }
        }
        if (nready < NPROC)
            sleep_ms(20);
    }
    ck_assert_msg(nready == NPROC, "only %d of %d servers logged their port within %d ms", nready,
                  NPROC, READY_MS);
    for (int i = 0; i < NPROC; i++) {
        ck_assert_int_gt(ports[i], 0);
        ck_assert_int_ne(ports[i], 50051);
        for (int j = 0; j < i; j++)
            ck_assert_int_ne(ports[i], ports[j]);
    }

    /* Migrated exactly once: every embedded migration recorded once, and
     * its SQL run by exactly one of the three ("db_migrated" is logged
     * right after a migration is applied). */
    PGconn *db = PQconnectdb(dbci);
    ck_assert_msg(PQstatus(db) == CONNECTION_OK, "%s", PQerrorMessage(db));
    PGresult *r = PQexec(db, "SELECT version, count(*) FROM schema_migrations "
                             "GROUP BY version ORDER BY version");
    ck_assert_msg(PQresultStatus(r) == PGRES_TUPLES_OK, "%s", PQresultErrorMessage(r));
    int nrows = PQntuples(r);
    ck_assert_msg(nrows == wf_store_pg_n_migrations, "schema_migrations has %d versions, want %d",
                  nrows, wf_store_pg_n_migrations);
    for (int i = 0; i < nrows; i++) {
        ck_assert_int_eq(atoi(PQgetvalue(r, i, 0)), wf_store_pg_migrations[i].version);
        ck_assert_msg(atol(PQgetvalue(r, i, 1)) == 1, "version %s recorded %s times",
                      PQgetvalue(r, i, 0), PQgetvalue(r, i, 1));
    }
    PQclear(r);
    PQfinish(db);
    long applied = 0, errors = 0;
    char who[64] = "";
    for (int i = 0; i < NPROC; i++) {
        char *log = read_log(i);
        long n = count_in(log, "\"event\":\"db_migrated\"");
        applied += n;
        errors += count_in(log, "\"level\":\"error\"");
        if (n > 0)
            snprintf(who + strlen(who), sizeof who - strlen(who), "%s%d", who[0] ? "," : "", i);
        free(log);
    }
    ck_assert_msg(applied == wf_store_pg_n_migrations,
                  "the servers applied %ld migrations between them, want %d", applied,
                  wf_store_pg_n_migrations);
    ck_assert_msg(errors == 0, "the servers logged %ld errors", errors);

    /* All three alive and serving, on the migrated schema. */
    for (int i = 0; i < NPROC; i++) {
        int status = 0;
        ck_assert_msg(waitpid(procs[i], &status, WNOHANG) == 0, "workflowd %d is gone", i);
        char target[64];
        snprintf(target, sizeof target, "127.0.0.1:%d", ports[i]);
        wf_client_options o = {
            .target = target, .api_key = "k", .actor = "migrator", .timeout_ms = 5000};
        wf_client *c = wf_client_new(&o);
        ck_assert_ptr_nonnull(c);
        int hs = -1;
        wf_client_status st;
        ck_assert_msg(health(c, &hs, &st) == GRPC_STATUS_OK, "health of %d: %s %s", i,
                      wf_client_code_name(st.code), st.message);
        ck_assert_msg(hs == SERVING, "workflowd %d is not SERVING (%d)", i, hs);
        Workflow__V1__StartInstanceRequest req = WORKFLOW__V1__START_INSTANCE_REQUEST__INIT;
        req.definition_key = "faults-migration";
        req.variables_json = "{}";
        ProtobufCMessage *resp = NULL;
        wf_client_call(c, SVC "StartInstance", &req.base,
                       &workflow__v1__start_instance_response__descriptor, &resp, NULL, &st);
        ck_assert_msg(st.code == GRPC_STATUS_OK, "StartInstance on %d: %s %s: %s", i,
                      wf_client_code_name(st.code), st.reason, st.message);
        protobuf_c_message_free_unpacked(resp, NULL);
        wf_client_free(c);
    }

    /* SIGTERM: each exits 0 within 5 s. */
    int64_t term_at[NPROC], exit_ms[NPROC];
    int exit_status[NPROC];
    for (int i = 0; i < NPROC; i++) {
        ck_assert_int_eq(kill(procs[i], SIGTERM), 0);
        term_at[i] = wf_mono_ms();
        exit_ms[i] = -1;
    }
    for (int left = NPROC; left > 0 && wf_mono_ms() < term_at[NPROC - 1] + TERM_MS + 100;) {
        for (int i = 0; i < NPROC; i++) {
            if (procs[i] > 0 && waitpid(procs[i], &exit_status[i], WNOHANG) == procs[i]) {
                procs[i] = 0;
                exit_ms[i] = wf_mono_ms() - term_at[i];
                left--;
            }
        }
        if (left > 0)
            sleep_ms(10);
    }
    printf("faults/migrate: 3 servers released together, serving after %lld, %lld, %lld ms on "
           "ports %d, %d, %d; %d migration(s) recorded once each, applied by server %s; exit "
           "after SIGTERM in %lld, %lld, %lld ms\n",
           (long long)ready_ms[0], (long long)ready_ms[1], (long long)ready_ms[2], ports[0],
           ports[1], ports[2], wf_store_pg_n_migrations, who, (long long)exit_ms[0],
           (long long)exit_ms[1], (long long)exit_ms[2]);
    fflush(stdout);
    for (int i = 0; i < NPROC; i++) {
        ck_assert_msg(exit_ms[i] >= 0 && exit_ms[i] <= TERM_MS,
                      "workflowd %d did not exit within %d ms of SIGTERM", i, TERM_MS);
        char how[64];
        describe_status(exit_status[i], how, sizeof how);
        if (!WIFEXITED(exit_status[i]) || WEXITSTATUS(exit_status[i]) != 0) {
            char *log = read_log(i);
            ck_assert_msg(0, "workflowd %d ended with %s after SIGTERM; its log:\n%.1500s", i, how,
                          log);
        }
    }

    snprintf(sql, sizeof sql, "DROP DATABASE %s", mig_db);
    ck_assert_msg(sql_command(admin, sql, err, sizeof err), "%s: %s", sql, err);
}
END_TEST

/* ---- suite ------------------------------------------------------------------------------- */

int
main(void)
{
    /* The store is chosen here, not by WF_TEST_STORE. */
    unsetenv("WF_TEST_STORE");
    if (env_nonempty("WF_TEST_PG_DSN") == NULL) {
        printf("skipped: WF_TEST_PG_DSN is not set (test.sh sets it)\n");
        return 77; /* CTest SKIP_RETURN_CODE */
    }
    Suite *s = suite_create("e2e_faults");
    if (env_nonempty("WF_TEST_PG_CTL") != NULL) {
        TCase *k = tcase_create("postgres_killed");
        tcase_add_unchecked_fixture(k, NULL, unchecked_teardown_kill);
        tcase_add_checked_fixture(k, setup_kill, teardown_kill);
        tcase_set_timeout(k, 120);
        tcase_add_test(k, test_postgres_killed_under_load);
        suite_add_tcase(s, k);
    } else {
        printf("skipped: test_postgres_killed_under_load: WF_TEST_PG_CTL is not set "
               "(test.sh sets it)\n");
    }
    TCase *m = tcase_create("concurrent_migration");
    tcase_add_unchecked_fixture(m, unchecked_setup_mig, unchecked_teardown_mig);
    tcase_add_checked_fixture(m, NULL, teardown_mig);
    tcase_set_timeout(m, 120);
    tcase_add_test(m, test_three_servers_migrate_an_empty_database_once);
    suite_add_tcase(s, m);

    return wf_test_run_mode(s, CK_FORK); /* the cleanup above relies on fork mode */
}
