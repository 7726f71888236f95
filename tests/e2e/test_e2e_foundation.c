/*
 * End-to-end tests of the service foundation through a real gRPC client:
 * authentication per reason, actor, unknown methods, malformed and oversized
 * requests, deadlines, health Check and Watch, and shutdown under load.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include <grpc/status.h>

#include "grpc/health/v1/health.pb-c.h"
#include "test_support.h"
#include "wf_time.h"
#include "workflow/v1/workflow.pb-c.h"

#define SVC "/workflow.v1.WorkflowService/"

static wf_test_server ts;

static void
setup(void)
{
    const char *env[] = {"WF_API_KEYS=k1,k2=tenant-b", "WF_MAX_MESSAGE_BYTES=65536", NULL};
    wf_test_server_start(&ts, env);
}

static void
teardown(void)
{
    if (ts.srv != NULL)
        wf_test_server_stop(&ts, 1000);
}

/* GetTask with an unknown id: the cheapest call that passes the whole chain. */
static int
get_task(wf_client *c, wf_client_status *st)
{
    Workflow__V1__GetTaskRequest req = WORKFLOW__V1__GET_TASK_REQUEST__INIT;
    req.task_id = "00000000-0000-7000-8000-000000000000";
    ProtobufCMessage *resp = NULL;
    int code = wf_client_call(c, SVC "GetTask", &req.base,
                              &workflow__v1__get_task_response__descriptor, &resp, NULL, st);
    if (resp != NULL)
        protobuf_c_message_free_unpacked(resp, NULL);
    return code;
}

static int
health(wf_client *c, const char *service, int *status, wf_client_status *st)
{
    Grpc__Health__V1__HealthCheckRequest req = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
    req.service = (char *)service;
    ProtobufCMessage *resp = NULL;
    int code =
        wf_client_call(c, "/grpc.health.v1.Health/Check", &req.base,
                       &grpc__health__v1__health_check_response__descriptor, &resp, NULL, st);
    if (resp != NULL) {
        *status = ((Grpc__Health__V1__HealthCheckResponse *)resp)->status;
        protobuf_c_message_free_unpacked(resp, NULL);
    }
    return code;
}

WF_TEST(test_health_check_needs_no_key)
{
    wf_client *c = wf_test_client(&ts, NULL, NULL, NULL);
    wf_client_status st;
    int status = -1;
    ck_assert_int_eq(health(c, "", &status, &st), GRPC_STATUS_OK);
    ck_assert_int_eq(status, GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING);
    ck_assert_int_eq(health(c, "workflow.v1.WorkflowService", &status, &st), GRPC_STATUS_OK);
    ck_assert_int_eq(status, GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING);
    ck_assert_int_eq(health(c, "liveness", &status, &st), GRPC_STATUS_OK);
    ck_assert_int_eq(health(c, "no.such.Service", &status, &st), GRPC_STATUS_NOT_FOUND);
    wf_client_free(c);
}
END_TEST

WF_TEST(test_auth_refusals_carry_reasons)
{
    wf_client_status st;
    wf_client *none = wf_test_client(&ts, NULL, NULL, NULL);
    ck_assert_int_eq(get_task(none, &st), GRPC_STATUS_UNAUTHENTICATED);
    ck_assert_str_eq(st.reason, "API_KEY_MISSING");
    ck_assert_str_eq(st.domain, "workflow.v1");
    wf_client_free(none);

    wf_client *wrong = wf_test_client(&ts, "k3", NULL, NULL);
    ck_assert_int_eq(get_task(wrong, &st), GRPC_STATUS_UNAUTHENTICATED);
    ck_assert_str_eq(st.reason, "API_KEY_INVALID");
    ck_assert_ptr_null(strstr(st.message, "k3"));
    wf_client_free(wrong);

    wf_client *other = wf_test_client(&ts, "k2", "tenant-a", NULL);
    ck_assert_int_eq(get_task(other, &st), GRPC_STATUS_PERMISSION_DENIED);
    ck_assert_str_eq(st.reason, "TENANT_FORBIDDEN");
    wf_client_free(other);
}
END_TEST

WF_TEST(test_accepted_keys_pass_the_chain)
{
    wf_client_status st;
    const char *keys[][2] = {{"k1", NULL}, {"k1", "tenant-a"}, {"k2", NULL}, {"k2", "tenant-b"}};
    for (size_t i = 0; i < 4; i++) {
        wf_client *c = wf_test_client(&ts, keys[i][0], keys[i][1], NULL);
        int code = get_task(c, &st);
        /* Past authentication the answer is the handler's, whatever it is. */
        ck_assert_msg(code == GRPC_STATUS_NOT_FOUND || code == GRPC_STATUS_UNIMPLEMENTED,
                      "case %zu: %s %s", i, wf_client_code_name(code), st.reason);
        ck_assert(strcmp(st.reason, "TASK_NOT_FOUND") == 0 ||
                  strcmp(st.reason, "UNIMPLEMENTED") == 0);
        wf_client_free(c);
    }
}
END_TEST

WF_TEST(test_bearer_header_is_accepted)
{
    wf_client *c = wf_test_client(&ts, NULL, NULL, NULL);
    wf_client_md md[] = {{"authorization", "Bearer k1"}};
    wf_client_call_opts o = {.md = md, .nmd = 1};
    Workflow__V1__GetTaskRequest req = WORKFLOW__V1__GET_TASK_REQUEST__INIT;
    req.task_id = "00000000-0000-7000-8000-000000000000";
    wf_client_status st;
    int code = wf_client_call(c, SVC "GetTask", &req.base, NULL, NULL, &o, &st);
    ck_assert_int_ne(code, GRPC_STATUS_UNAUTHENTICATED);
    wf_client_free(c);
}
END_TEST

WF_TEST(test_actor_is_required_where_declared)
{
    wf_client *c = wf_test_client(&ts, "k1", NULL, NULL);
    Workflow__V1__ClaimTaskRequest req = WORKFLOW__V1__CLAIM_TASK_REQUEST__INIT;
    req.task_id = "00000000-0000-7000-8000-000000000000";
    wf_client_status st;
    ck_assert_int_eq(wf_client_call(c, SVC "ClaimTask", &req.base, NULL, NULL, NULL, &st),
                     GRPC_STATUS_INVALID_ARGUMENT);
    ck_assert_str_eq(st.reason, "ACTOR_MISSING");
    wf_client_free(c);
}
END_TEST

WF_TEST(test_unknown_method_is_unimplemented_at_once)
{
    wf_client *c = wf_test_client(&ts, "k1", NULL, NULL);
    wf_client_status st;
    int64_t t0 = wf_mono_ms();
    ck_assert_int_eq(wf_client_call_raw(c, SVC "Nope", "", 0, NULL, NULL, NULL, &st),
                     GRPC_STATUS_UNIMPLEMENTED);
    ck_assert_int_lt(wf_mono_ms() - t0, 2000);
    ck_assert_str_eq(st.reason, "UNIMPLEMENTED");
    ck_assert_int_eq(wf_client_call_raw(c, "/other.Service/Method", "", 0, NULL, NULL, NULL, &st),
                     GRPC_STATUS_UNIMPLEMENTED);
    wf_client_free(c);
}
END_TEST

WF_TEST(test_malformed_protobuf_is_invalid_argument)
{
    wf_client *c = wf_test_client(&ts, "k1", NULL, NULL);
    wf_client_status st;
    const char junk[] = "\xff\xff\xff\xff";
    ck_assert_int_eq(wf_client_call_raw(c, SVC "GetTask", junk, 4, NULL, NULL, NULL, &st),
                     GRPC_STATUS_INVALID_ARGUMENT);
    ck_assert_str_eq(st.reason, "INVALID_ARGUMENT");
    wf_client_free(c);
}
END_TEST

WF_TEST(test_oversized_request_is_too_large)
{
    wf_client *c = wf_test_client(&ts, "k1", NULL, "alice");
    static char big[100 * 1024];
    memset(big, 'a', sizeof big - 1);
    big[0] = '"';
    big[sizeof big - 2] = '"';
    big[sizeof big - 1] = '\0';
    Workflow__V1__StartInstanceRequest req = WORKFLOW__V1__START_INSTANCE_REQUEST__INIT;
    req.definition_key = "big";
    req.variables_json = big;
    wf_client_status st;
    ck_assert_int_eq(wf_client_call(c, SVC "StartInstance", &req.base, NULL, NULL, NULL, &st),
                     GRPC_STATUS_RESOURCE_EXHAUSTED);
    ck_assert_str_eq(st.reason, "TOO_LARGE");
    wf_client_free(c);
}
END_TEST

WF_TEST(test_deadline_exceeded)
{
    wf_client *c = wf_test_client(&ts, "k1", NULL, NULL);
    /* A deadline already past when the call starts. (A 1 ms deadline is not
     * reliable: grpc rounds deadlines up to whole milliseconds, and the
     * server's own check is covered by the interceptor unit tests.) */
    wf_client_call_opts o = {.timeout_ms = -1};
    Workflow__V1__GetTaskRequest req = WORKFLOW__V1__GET_TASK_REQUEST__INIT;
    wf_client_status st;
    ck_assert_int_eq(wf_client_call(c, SVC "GetTask", &req.base, NULL, NULL, &o, &st),
                     GRPC_STATUS_DEADLINE_EXCEEDED);
    wf_client_free(c);
}
END_TEST

WF_TEST(test_health_watch_sees_drain)
{
    wf_client *c = wf_test_client(&ts, NULL, NULL, NULL);
    Grpc__Health__V1__HealthCheckRequest req = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
    wf_client_call_opts o = {.timeout_ms = 10000};
    wf_client_stream *s = wf_client_stream_open(c, "/grpc.health.v1.Health/Watch", &req.base, &o);
    ck_assert_ptr_nonnull(s);
    ProtobufCMessage *m = NULL;
    wf_client_status st;
    ck_assert_int_eq(
        wf_client_stream_next(s, &grpc__health__v1__health_check_response__descriptor, &m, &st), 1);
    ck_assert_int_eq(((Grpc__Health__V1__HealthCheckResponse *)m)->status,
                     GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING);
    protobuf_c_message_free_unpacked(m, NULL);

    wf_rpc_server_drain(ts.srv);
    ck_assert_int_eq(
        wf_client_stream_next(s, &grpc__health__v1__health_check_response__descriptor, &m, &st), 1);
    ck_assert_int_eq(((Grpc__Health__V1__HealthCheckResponse *)m)->status,
                     GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING);
    protobuf_c_message_free_unpacked(m, NULL);

    /* Liveness stays SERVING while readiness drains. */
    int status = -1;
    wf_client_status hs;
    ck_assert_int_eq(health(c, "liveness", &status, &hs), GRPC_STATUS_OK);
    ck_assert_int_eq(status, GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING);
    ck_assert_int_eq(health(c, "", &status, &hs), GRPC_STATUS_OK);
    ck_assert_int_eq(status, GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING);

    /* Stopping the server ends the stream with a retryable status. */
    int64_t t0 = wf_mono_ms();
    wf_test_server_stop(&ts, 5000);
    ck_assert_int_lt(wf_mono_ms() - t0, 3000);
    ck_assert_int_eq(
        wf_client_stream_next(s, &grpc__health__v1__health_check_response__descriptor, &m, &st), 0);
    ck_assert_int_eq(st.code, GRPC_STATUS_UNAVAILABLE);
    wf_client_stream_close(s);
    wf_client_free(c);
}
END_TEST

/* ---- wait-for-ready ------------------------------------------------------------ */

struct waiting_call {
    wf_client *c;
    atomic_int code; /* -1 until the call returns */
};

static void *
waiting_health(void *arg)
{
    struct waiting_call *w = arg;
    wf_client_status st;
    int status = -1;
    atomic_store(&w->code, health(w->c, "", &status, &st));
    return NULL;
}

/* With no server listening, a fail-fast call answers UNAVAILABLE at once;
 * a wait-for-ready call waits and succeeds once a server comes up on the
 * address (a worker outliving a restart), within its deadline. */
WF_TEST(test_wait_for_ready_waits_for_the_server)
{
    int port = ts.port;
    char addr[64];
    snprintf(addr, sizeof addr, "WF_ADDR=127.0.0.1:%d", port);
    wf_test_server_stop(&ts, 0);

    wf_client_options o = {.target = ts.target, .timeout_ms = 8000};
    wf_client *fast = wf_client_new(&o);
    o.wait_for_ready = 1;
    struct waiting_call w = {.c = wf_client_new(&o), .code = -1};
    wf_client_status st;
    int status = -1;
    int64_t t0 = wf_mono_ms();
    ck_assert_int_eq(health(fast, "", &status, &st), GRPC_STATUS_UNAVAILABLE);
    ck_assert_int_lt(wf_mono_ms() - t0, 3000);

    pthread_t th;
    pthread_create(&th, NULL, waiting_health, &w);
    struct timespec pause = {0, 500 * 1000 * 1000};
    nanosleep(&pause, NULL);
    int code = atomic_load(&w.code);
    ck_assert_int_eq(code, -1); /* still waiting */
    const char *env[] = {addr, "WF_API_KEYS=k1", NULL};
    wf_test_server_start(&ts, env);
    ck_assert_int_eq(ts.port, port);
    pthread_join(th, NULL);
    code = atomic_load(&w.code);
    ck_assert_int_eq(code, GRPC_STATUS_OK);
    wf_client_free(w.c);
    wf_client_free(fast);
}
END_TEST

/* ---- shutdown while calls are in flight ------------------------------------ */

static atomic_int ok_calls, retryable_calls, bad_calls;
static atomic_int stop_load;

static void *
load_thread(void *arg)
{
    (void)arg;
    /* Fail fast: calls made after the stop must answer UNAVAILABLE at once,
     * not wait for a server that is gone. */
    wf_client_options o = {.target = ts.target, .api_key = "k1", .timeout_ms = 5000};
    wf_client *c = wf_client_new(&o);
    while (!atomic_load(&stop_load)) {
        wf_client_status st;
        int status = -1;
        int code = health(c, "", &status, &st);
        if (code == GRPC_STATUS_OK)
            atomic_fetch_add(&ok_calls, 1);
        else if (code == GRPC_STATUS_UNAVAILABLE || code == GRPC_STATUS_CANCELLED)
            atomic_fetch_add(&retryable_calls, 1);
        else
            atomic_fetch_add(&bad_calls, 1);
        code = get_task(c, &st);
        if (code == GRPC_STATUS_UNAVAILABLE || code == GRPC_STATUS_CANCELLED)
            atomic_fetch_add(&retryable_calls, 1);
        else if (code != GRPC_STATUS_NOT_FOUND && code != GRPC_STATUS_UNIMPLEMENTED)
            atomic_fetch_add(&bad_calls, 1);
    }
    wf_client_free(c);
    return NULL;
}

WF_TEST(test_shutdown_during_a_burst)
{
    pthread_t th[6];
    for (int i = 0; i < 6; i++)
        pthread_create(&th[i], NULL, load_thread, NULL);
    struct timespec t = {0, 300 * 1000 * 1000};
    nanosleep(&t, NULL);
    wf_rpc_server_drain(ts.srv);
    nanosleep(&t, NULL);
    int64_t t0 = wf_mono_ms();
    wf_test_server_stop(&ts, 2000);
    ck_assert_int_lt(wf_mono_ms() - t0, 3000);
    nanosleep(&t, NULL);
    atomic_store(&stop_load, 1);
    for (int i = 0; i < 6; i++)
        pthread_join(th[i], NULL);
    ck_assert_int_gt(atomic_load(&ok_calls), 0);
    ck_assert_int_gt(atomic_load(&retryable_calls), 0); /* calls after the stop */
    ck_assert_int_eq(atomic_load(&bad_calls), 0);
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite("e2e_foundation", "foundation", setup, teardown, 30));
}
