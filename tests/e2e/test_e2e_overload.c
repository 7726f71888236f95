/*
 * End-to-end tests of the server under overload, on the memory store and
 * on Postgres (WF_TEST_STORE=pg):
 *
 * - Health Check, on fresh connections, answers within a small bound while
 *   every pool thread is held by slow guard evaluations or by deploys that
 *   compile hundreds of new guards.
 * - Backpressure: a small pool under many callers refuses the excess at
 *   once (RESOURCE_EXHAUSTED OVERLOADED, RetryInfo) and accepted calls wait
 *   a bounded time; the metrics count the refusals.
 * - The expression queue: past one waiting evaluation, guard calls fail at
 *   once with EXPRESSION_LIMIT and unrelated calls go on (on the memory
 *   store as well: a guard's evaluation does not hold the store's lock).
 *
 * Figures are printed so that they can be quoted.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/status.h>

#include "expr.h"
#include "grpc/health/v1/health.pb-c.h"
#include "load_kit.h"
#include "test_support.h"
#include "wf_time.h"
#include "workflow/v1/workflow.pb-c.h"

#define SVC "/workflow.v1.WorkflowService/"
#define WF_TEST_RETRY_DELAY_MS 200 /* rpc_status.h */

/* The time bounds below hold for a plain build on a quiet machine;
 * AddressSanitizer and a loaded machine make every call several times
 * slower, so they stretch by this factor (wf_test_time_scale). */
#define SLOW ((int64_t)wf_test_time_scale())

/* The variables of the guarded starts (slow_vars). */
static const char *load_vars;

/* Expressions in worker processes; a call joins the expression bulkhead
 * after slow_ms of an evaluation (0: the default). */
static void
isolate(int timeout_ms, int workers, int slow_ms)
{
    expr_isolate(timeout_ms, workers, slow_ms);
    load_vars = slow_vars(ta, 400);
}

static void
setup8(void)
{
    const char *env[] = {"WF_THREADS=8", NULL};
    setup_with(env);
}

/* ---- load ------------------------------------------------------------------------------- */

typedef struct loader {
    const char *key;
    int rounds;
    pthread_t th;
} loader;

static void *
slow_starts(void *arg)
{
    loader *l = arg;
    wf_client *c = wf_test_client(&ts, NULL, NULL, "load");
    for (int i = 0; i < l->rounds; i++) {
        Workflow__V1__StartInstanceRequest req = WORKFLOW__V1__START_INSTANCE_REQUEST__INIT;
        req.definition_key = (char *)l->key;
        req.variables_json = (char *)load_vars;
        ProtobufCMessage *resp = NULL;
        wf_client_status st;
        wf_client_call_opts o = {.timeout_ms = 30000};
        wf_client_call(c, SVC "StartInstance", &req.base,
                       &workflow__v1__start_instance_response__descriptor, &resp, &o, &st);
        if (resp != NULL)
            protobuf_c_message_free_unpacked(resp, NULL);
    }
    wf_client_free(c);
    return NULL;
}

/* One Health Check on a connection of its own; its latency in ms, or -1
 * when it failed. */
static int64_t
health_check_ms(const char *service)
{
    wf_client *c = wf_test_client(&ts, NULL, NULL, NULL);
    Grpc__Health__V1__HealthCheckRequest req = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
    req.service = (char *)service;
    ProtobufCMessage *resp = NULL;
    wf_client_status st;
    wf_client_call_opts o = {.timeout_ms = 20000};
    int64_t t0 = wf_mono_ms();
    int code = wf_client_call(c, "/grpc.health.v1.Health/Check", &req.base,
                              &grpc__health__v1__health_check_response__descriptor, &resp, &o, &st);
    int64_t ms = wf_mono_ms() - t0;
    if (resp != NULL)
        protobuf_c_message_free_unpacked(resp, NULL);
    wf_client_free(c);
    return code == GRPC_STATUS_OK ? ms : -1;
}

typedef struct deployer {
    Workflow__V1__Definition *def;
    int64_t ms;
    int code;
    pthread_t th;
} deployer;

/* DeployDefinition{validate_only} of a net of 100 new guards. */
static void *
wide_deploy(void *arg)
{
    deployer *dp = arg;
    wf_client *c = wf_test_client(&ts, NULL, NULL, "load");
    Workflow__V1__DeployDefinitionRequest req = WORKFLOW__V1__DEPLOY_DEFINITION_REQUEST__INIT;
    req.definition = dp->def;
    req.validate_only = true;
    ProtobufCMessage *resp = NULL;
    wf_client_status st;
    wf_client_call_opts o = {.timeout_ms = 60000};
    int64_t t0 = wf_mono_ms();
    dp->code =
        wf_client_call(c, SVC "DeployDefinition", &req.base,
                       &workflow__v1__deploy_definition_response__descriptor, &resp, &o, &st);
    dp->ms = wf_mono_ms() - t0;
    if (resp != NULL)
        protobuf_c_message_free_unpacked(resp, NULL);
    wf_client_free(c);
    return NULL;
}

/* Health checks every 50 ms for rounds rounds: the worst latency, failures counted. */
static int64_t
probe_health(int rounds, int *failed, int64_t *p50)
{
    int64_t lat[64];
    size_t n = 0;
    const char *services[] = {"", "liveness", "readiness"};
    for (int i = 0; i < rounds && i < 64; i++) {
        int64_t ms = health_check_ms(services[i % 3]);
        if (ms < 0)
            (*failed)++;
        else
            lat[n++] = ms;
        sleep_ms(50);
    }
    *p50 = percentile(lat, n, 0.5);
    return percentile(lat, n, 1.0);
}

WF_CASE_TEST(wf_test_store_name(), test_health_answers_while_deploys_compile)
{
    isolate(1000, 10, 0);
    enum { NDEP = 8 };
    deployer dp[NDEP];
    int salt = (int)(wf_now_us() % 1000000) * 100;
    long long before = started_calls("DeployDefinition");
    for (int i = 0; i < NDEP; i++) {
        dp[i] = (deployer){.def = wide_net(ta, u("wide"), 100, salt + i * 1000)};
        pthread_create(&dp[i].th, NULL, wide_deploy, &dp[i]);
    }
    await_started("DeployDefinition", before + NDEP); /* every deploy is compiling */
    int failed = 0;
    int64_t p50, mx = probe_health(30, &failed, &p50);
    int64_t dmax = 0;
    for (int i = 0; i < NDEP; i++) {
        pthread_join(dp[i].th, NULL);
        if (dp[i].ms > dmax)
            dmax = dp[i].ms;
    }
    printf("health under %d deploys of 100 new guards (%s): p50 %lld ms, max %lld ms, %d "
           "failed; slowest deploy %lld ms\n",
           NDEP, wf_test_store_name(), (long long)p50, (long long)mx, failed, (long long)dmax);
    ck_assert_int_eq(failed, 0);
    /* A fresh connection and one call, on a machine whose CPUs the
     * expression workers saturate: far below the seconds of a starved pool. */
    ck_assert_msg(mx < 1000 * SLOW, "a health check took %lld ms", (long long)mx);
}
END_TEST

WF_CASE_TEST(wf_test_store_name(), test_health_answers_while_slow_guards_hold_the_pool)
{
    isolate(1000, 10, 0);
    char *key = deploy_slow();
    enum { NLOAD = 16 };
    loader l[NLOAD];
    long long before = started_calls("StartInstance");
    for (int i = 0; i < NLOAD; i++) {
        l[i] = (loader){.key = key, .rounds = 2};
        pthread_create(&l[i].th, NULL, slow_starts, &l[i]);
    }
    await_started("StartInstance", before + 8); /* the pool's 8 threads are busy */
    int64_t lat[40];
    size_t n = 0;
    int failed = 0;
    const char *services[] = {"", "liveness", "readiness"};
    for (int i = 0; i < 30; i++) {
        int64_t ms = health_check_ms(services[i % 3]);
        if (ms < 0)
            failed++;
        else
            lat[n++] = ms;
        sleep_ms(50);
    }
    for (int i = 0; i < NLOAD; i++)
        pthread_join(l[i].th, NULL);
    int64_t p50 = percentile(lat, n, 0.5), mx = percentile(lat, n, 1.0);
    printf("health under slow guards (%s): %zu checks, p50 %lld ms, max %lld ms, %d failed\n",
           wf_test_store_name(), n, (long long)p50, (long long)mx, failed);
    ck_assert_int_eq(failed, 0);
    /* A fresh connection and one call, on a machine whose CPUs the
     * expression workers saturate: far below the seconds of a starved pool. */
    ck_assert_msg(mx < 1000 * SLOW, "a health check took %lld ms", (long long)mx);
}
END_TEST

/* ---- backpressure -------------------------------------------------------------------------- */

static void
setup_small_pool(void)
{
    const char *env[] = {"WF_THREADS=2", "WF_MAX_QUEUED_CALLS=4", NULL};
    setup_with(env);
}

typedef struct caller {
    const char *key;
    int rounds;
    int64_t ok_ms[16], refused_ms[16];
    int nok, nrefused, nother;
    int retry_ms;
    char other[128];
    pthread_t th;
} caller;

static void *
guarded_starts(void *arg)
{
    caller *cl = arg;
    wf_client *c = wf_test_client(&ts, NULL, NULL, "load");
    for (int i = 0; i < cl->rounds && i < 16; i++) {
        Workflow__V1__StartInstanceRequest req = WORKFLOW__V1__START_INSTANCE_REQUEST__INIT;
        req.definition_key = (char *)cl->key;
        req.variables_json = (char *)load_vars;
        ProtobufCMessage *resp = NULL;
        wf_client_status st;
        wf_client_call_opts o = {.timeout_ms = (int)(30000 * SLOW)};
        int64_t t0 = wf_now_us();
        int code =
            wf_client_call(c, SVC "StartInstance", &req.base,
                           &workflow__v1__start_instance_response__descriptor, &resp, &o, &st);
        int64_t us = wf_now_us() - t0;
        if (resp != NULL)
            protobuf_c_message_free_unpacked(resp, NULL);
        if (code == GRPC_STATUS_OK) {
            cl->ok_ms[cl->nok++] = us;
        } else if (code == GRPC_STATUS_RESOURCE_EXHAUSTED && strcmp(st.reason, "OVERLOADED") == 0) {
            cl->refused_ms[cl->nrefused++] = us;
            cl->retry_ms = st.retry_delay_ms;
        } else {
            cl->nother++;
            snprintf(cl->other, sizeof cl->other, "%s %s: %.60s", wf_client_code_name(code),
                     st.reason, st.message);
        }
    }
    wf_client_free(c);
    return NULL;
}

WF_CASE_TEST("backpressure", test_overload_refuses_at_once_and_bounds_the_wait_of_accepted_calls)
{
    /* Guards of tens of ms: the budgets are far above them however slow
     * the machine, so that every failure here is a refusal, not a timeout
     * nor a full expression bulkhead. */
    isolate((int)(5000 * SLOW), 4, (int)(5000 * SLOW));
    load_vars = slow_vars(ta, 60);
    char *key = deploy_slow();
    /* One call alone: the unit of the bounds below. */
    caller one = {.key = key, .rounds = 3};
    guarded_starts(&one);
    ck_assert_msg(one.nok == 3, "alone: %s", one.other);
    int64_t alone_us = one.ok_ms[0];
    for (int i = 1; i < one.nok; i++)
        if (one.ok_ms[i] < alone_us)
            alone_us = one.ok_ms[i];

    enum { NCALLERS = 24, ROUNDS = 4 };
    static caller cl[NCALLERS];
    for (int i = 0; i < NCALLERS; i++) {
        cl[i] = (caller){.key = key, .rounds = ROUNDS};
        pthread_create(&cl[i].th, NULL, guarded_starts, &cl[i]);
    }
    int64_t ok[NCALLERS * ROUNDS], refused[NCALLERS * ROUNDS];
    size_t nok = 0, nref = 0;
    int nother = 0, retry_ms = 0;
    const char *other = "";
    for (int i = 0; i < NCALLERS; i++) {
        pthread_join(cl[i].th, NULL);
        for (int k = 0; k < cl[i].nok; k++)
            ok[nok++] = cl[i].ok_ms[k];
        for (int k = 0; k < cl[i].nrefused; k++)
            refused[nref++] = cl[i].refused_ms[k];
        nother += cl[i].nother;
        if (cl[i].nother > 0)
            other = cl[i].other;
        if (cl[i].nrefused > 0)
            retry_ms = cl[i].retry_ms;
    }
    int64_t ok50 = percentile(ok, nok, 0.5), ok99 = percentile(ok, nok, 0.99);
    int64_t ref50 = percentile(refused, nref, 0.5), ref99 = percentile(refused, nref, 0.99);
    printf("overload (%s, 2 threads, WF_MAX_QUEUED_CALLS=4, %d callers x %d): one call alone "
           "%.1f ms; accepted %zu p50 %.1f ms p99 %.1f ms; refused %zu p50 %.2f ms p99 %.2f ms\n",
           wf_test_store_name(), NCALLERS, ROUNDS, alone_us / 1e3, nok, ok50 / 1e3, ok99 / 1e3,
           nref, ref50 / 1e3, ref99 / 1e3);
    ck_assert_msg(nother == 0, "%d calls failed otherwise: %s", nother, other);
    ck_assert_msg(nref > 0, "no call was refused");
    ck_assert_msg(nok > 0, "no call was accepted");
    ck_assert_int_eq(retry_ms, WF_TEST_RETRY_DELAY_MS);
    /* Refusals take no thread: they come back fast whatever the load. */
    ck_assert_msg(ref99 < 200 * 1000 * SLOW, "refused p99 %lld us", (long long)ref99);
    /* An accepted call waits behind at most the queue and the running
     * calls ((4 + 2) / 2 calls' time on two threads), never towards its
     * 30 s deadline: a third of it leaves room for a loaded machine and
     * sanitizers. */
    ck_assert_msg(ok99 < 10 * 1000 * 1000 * SLOW, "accepted p99 %lld us, alone %lld us",
                  (long long)ok99, (long long)alone_us);

    /* The figures reach the metrics. */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    wf_rpc_server_render_metrics(ts.srv, f);
    fclose(f);
    char want[96];
    snprintf(want, sizeof want, "workflow_rpc_refused_total{reason=\"OVERLOADED\"} %zu\n", nref);
    ck_assert_msg(strstr(text, want) != NULL, "%s", text);
    ck_assert_ptr_nonnull(strstr(text, "workflow_rpc_queued_calls 0\n"));
    free(text);

    /* Health is never refused, however full the queue. */
    ck_assert_int_ge(health_check_ms(""), 0);
}
END_TEST

/* ---- the expression queue ------------------------------------------------------------------ */

/* The expression bulkhead holds every slow caller of the case: what
 * refuses them here is the expression queue. */
static void
setup_four(void)
{
    const char *env[] = {"WF_THREADS=4", "WF_BULKHEAD_EXPR=16", NULL};
    setup_with(env);
}

WF_CASE_TEST("expression_queue", test_a_full_expression_queue_refuses_at_once)
{
    /* On the memory store too: a unit of work lets the store's lock go
     * while it waits for an expression (wf_tx_pause), so guard calls reach
     * the expression queue instead of queueing on the store. */
    wf_expr_configure(&(wf_expr_options){.isolation = WF_EXPR_PROCESS,
                                         .timeout_ms = 1000,
                                         .memory_mb = 256,
                                         .workers = 1,
                                         .recycle_after = 1000,
                                         .max_queued = 1});
    load_vars = slow_vars(ta, 400);
    char *slow = deploy_slow(), *plain = deploy_plain();
    enum { NSLOW = 6 };
    static caller cl[NSLOW];
    long long before = started_calls("StartInstance");
    for (int i = 0; i < NSLOW; i++) {
        cl[i] = (caller){.key = slow, .rounds = 2};
        pthread_create(&cl[i].th, NULL, guarded_starts, &cl[i]);
    }
    /* The worker evaluates one guard and one waits: the queue is full. */
    await_started("StartInstance", before + 2);
    /* Unrelated calls meanwhile: StartInstance of a net without guards. */
    wf_client *c = wf_test_client(&ts, NULL, NULL, "other");
    int64_t lat[20];
    size_t n = 0;
    for (int i = 0; i < 20; i++) {
        Workflow__V1__StartInstanceRequest req = WORKFLOW__V1__START_INSTANCE_REQUEST__INIT;
        req.definition_key = plain;
        ProtobufCMessage *resp = NULL;
        wf_client_status st;
        int64_t t0 = wf_mono_ms();
        int code =
            wf_client_call(c, SVC "StartInstance", &req.base,
                           &workflow__v1__start_instance_response__descriptor, &resp, NULL, &st);
        lat[n++] = wf_mono_ms() - t0;
        if (resp != NULL)
            protobuf_c_message_free_unpacked(resp, NULL);
        ck_assert_msg(code == 0, "unrelated call: %s %s", wf_client_code_name(code), st.reason);
        sleep_ms(50);
    }
    wf_client_free(c);
    int limit = 0, okc = 0;
    int64_t lim_max = 0;
    for (int i = 0; i < NSLOW; i++) {
        pthread_join(cl[i].th, NULL);
        /* guarded_starts files EXPRESSION_LIMIT under "other". */
        if (cl[i].nother > 0)
            ck_assert_msg(strstr(cl[i].other, "EXPRESSION_LIMIT") != NULL, "%s", cl[i].other);
        limit += cl[i].nother;
        okc += cl[i].nok;
        (void)lim_max;
    }
    int64_t p50 = percentile(lat, n, 0.5), mx = percentile(lat, n, 1.0);
    printf("expression queue (%s, 1 worker, 1 waiting, %d slow callers x 2): %d EXPRESSION_LIMIT, "
           "%d ok; unrelated StartInstance p50 %lld ms, max %lld ms\n",
           wf_test_store_name(), NSLOW, limit, okc, (long long)p50, (long long)mx);
    ck_assert_int_eq(limit, NSLOW * 2);
    /* No unrelated call waits for an expression worker. */
    ck_assert_msg(mx < 1000 * SLOW, "unrelated max %lld ms", (long long)mx);
}
END_TEST

int
main(int argc, char **argv)
{
    /* The expression workers are this binary. */
    if (argc > 1 && strcmp(argv[1], WF_EXPR_WORKER_ARG) == 0)
        return wf_expr_worker_main(argc, argv);
    const wf_test_case cases[] = {{wf_test_store_name(), setup8, teardown, 120},
                                  {"backpressure", setup_small_pool, teardown, 120},
                                  {"expression_queue", setup_four, teardown, 120},
                                  {NULL}};
    return wf_test_run(wf_test_suite_of("e2e_overload", cases));
}
