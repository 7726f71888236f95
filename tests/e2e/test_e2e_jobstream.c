/*
 * End-to-end tests of job push (StreamActivatedJobs) and batched
 * completion (CompleteJobs), on the memory store and on Postgres
 * (WF_TEST_STORE=pg): jobs pushed in backlog order, never more held than
 * the credit, a completion (CompleteJob or CompleteJobs, on this server)
 * giving credit back, two streams of one type never sharing a job, an
 * expired lease bringing the job back, variables picked by name,
 * CompleteJobs with one outcome per item, bad requests, and the ends of a
 * stream: client cancel, deadline and server shutdown.
 *
 * Job types are unique per test (Postgres keeps rows between runs).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/status.h>

#include "net_kit.h"
#include "net_runtime.h"
#include "test_support.h"
#include "wf_time.h"
#include "workflow/v1/workflow.pb-c.h"

/* s -> work (AUTO type) -> e */
static const char *
job_def(const char *type)
{
    char *key = u("push");
    deploy(job_net(key, type, 0, 0));
    return key;
}

/* Opens a job stream of type as worker "ws" (lease_ms 0 = unset), with the
 * client's deadline (timeout_ms 0: none). */
static wf_client_stream *
open_stream(const char *type, int credit, int64_t lease_ms, int timeout_ms)
{
    Workflow__V1__StreamActivatedJobsRequest req =
        WORKFLOW__V1__STREAM_ACTIVATED_JOBS_REQUEST__INIT;
    req.job_type = (char *)type;
    req.worker = "ws";
    req.credit = credit;
    if (lease_ms > 0)
        req.lease = dur(lease_ms);
    wf_client_call_opts o = {0};
    if (timeout_ms > 0)
        o.timeout_ms = timeout_ms;
    else
        o.no_deadline = 1;
    wf_client_stream *s = wf_client_stream_jobs(as(NULL), &req, &o);
    ck_assert_ptr_nonnull(s);
    return s;
}

/* The next pushed job within wait_ms (kept until teardown), else NULL with
 * *ended telling whether the stream ended (st filled). */
static Workflow__V1__Job *
next_job(wf_client_stream *s, int wait_ms, int *ended, wf_client_status *st)
{
    Workflow__V1__Job *j = NULL;
    memset(st, 0, sizeof *st);
    int r = wf_client_next_job(s, wait_ms, &j, st);
    *ended = r == 0;
    if (r != 1)
        return NULL;
    Workflow__V1__Job *copy = wf_arena_calloc(ta, 1, sizeof *copy);
    *copy = *j;
    copy->key = wf_arena_strdup(ta, j->key);
    copy->id = wf_arena_strdup(ta, j->id);
    copy->instance_id = wf_arena_strdup(ta, j->instance_id);
    copy->variables_json = wf_arena_strdup(ta, j->variables_json);
    copy->worker = wf_arena_strdup(ta, j->worker);
    copy->lease_expires_at = NULL;
    copy->activatable_at = NULL;
    copy->transition_id = copy->job_type = copy->idempotency_key = NULL;
    copy->root_instance_id = copy->error_message = NULL;
    protobuf_c_message_free_unpacked(&j->base, NULL);
    return copy;
}

static Workflow__V1__Job *
must_next(wf_client_stream *s, int wait_ms)
{
    int ended;
    wf_client_status st;
    /* A bound for what must come: it stretches with the load. */
    wait_ms *= wf_test_time_scale_now();
    Workflow__V1__Job *j = next_job(s, wait_ms, &ended, &st);
    ck_assert_msg(j != NULL, "no job pushed within %d ms (ended %d: %s %s)", wait_ms, ended,
                  wf_client_code_name(st.code), st.message);
    return j;
}

static void
must_not_push(wf_client_stream *s, int wait_ms)
{
    int ended;
    wf_client_status st;
    Workflow__V1__Job *j = next_job(s, wait_ms, &ended, &st);
    ck_assert_msg(j == NULL && !ended, "pushed %s (ended %d)", j != NULL ? j->id : "-", ended);
}

static Workflow__V1__CompleteJobsResponse *
complete_jobs(const char *const *keys, size_t n, wf_client_status *st)
{
    Workflow__V1__CompleteJobsRequest req = WORKFLOW__V1__COMPLETE_JOBS_REQUEST__INIT;
    Workflow__V1__CompleteJobRequest *items = wf_arena_calloc(ta, n + 1, sizeof *items);
    Workflow__V1__CompleteJobRequest **ptrs = wf_arena_calloc(ta, n + 1, sizeof *ptrs);
    for (size_t i = 0; i < n; i++) {
        workflow__v1__complete_job_request__init(&items[i]);
        items[i].job_key = (char *)keys[i];
        ptrs[i] = &items[i];
    }
    req.completions = ptrs;
    req.n_completions = n;
    return call(as(NULL), "CompleteJobs", &req, &workflow__v1__complete_jobs_response__descriptor,
                st);
}

WF_TEST(test_push_order_and_credit)
{
    char *type = u("pushed");
    const char *key = job_def(type);
    Workflow__V1__Instance *in[5];
    for (int i = 0; i < 5; i++)
        in[i] = start_boss(key, "{\"a\":1,\"b\":2}");
    wf_client_stream *s = open_stream(type, 2, 0, 0);
    /* The oldest two, in order; then nothing while the stream holds two. */
    Workflow__V1__Job *j0 = must_next(s, 3000), *j1 = must_next(s, 3000);
    ck_assert_str_eq(j0->instance_id, in[0]->id);
    ck_assert_str_eq(j1->instance_id, in[1]->id);
    ck_assert_str_eq(j0->worker, "ws");
    ck_assert_str_ne(j0->key, "");
    ck_assert_str_eq(j0->variables_json, "{\"a\":1,\"b\":2}");
    must_not_push(s, 1500);
    ck_assert_str_eq(get_instance(in[2]->id)->jobs[0]->key, ""); /* not leased */
    /* A completion gives one credit back: the next oldest comes. */
    wf_client_status st;
    ck_assert_int_eq(complete_job_c(as(NULL), j0->key, NULL, &st), GRPC_STATUS_OK);
    int64_t t0 = wf_mono_ms();
    Workflow__V1__Job *j2 = must_next(s, 3000);
    ck_assert_str_eq(j2->instance_id, in[2]->id);
    /* At once (the completion wakes the stream), not at a recheck. */
    ck_assert_msg(wf_mono_ms() - t0 < 700 * wf_test_time_scale(),
                  "pushed %lld ms after the completion", (long long)(wf_mono_ms() - t0));
    must_not_push(s, 600);
    /* CompleteJobs gives back one credit per completed item. */
    const char *keys[2] = {j1->key, j2->key};
    Workflow__V1__CompleteJobsResponse *r = complete_jobs(keys, 2, &st);
    ck_ok(st);
    ck_assert_uint_eq(r->n_results, 2);
    ck_assert_int_eq(r->results[0]->code, 0);
    ck_assert_int_eq(r->results[1]->code, 0);
    Workflow__V1__Job *j3 = must_next(s, 3000), *j4 = must_next(s, 3000);
    ck_assert_str_eq(j3->instance_id, in[3]->id);
    ck_assert_str_eq(j4->instance_id, in[4]->id);
    /* A completion this server does not see (another replica's) gives the
     * credit back at the stream's recheck. */
    Workflow__V1__Instance *in5 = start_boss(key, NULL);
    must_not_push(s, 300);
    wf_arena *a = wf_arena_new();
    wf_runtime_ctx ctx = {.ref = {.store = ts.app.store,
                                  .tenant = "default",
                                  .deadline_ms = wf_mono_ms() + 10000,
                                  .arena = a}};
    wf_error err;
    wf_code rc = wf_runtime_complete_job(&ctx, j3->key, NULL, NULL, &err);
    wf_arena_free(a);
    ck_assert_msg(rc == WF_OK, "complete: %s", err.msg);
    /* The recheck looks at keys held at least VERIFY_MS (5 s), every
     * VERIFY_MS: up to twice that after the completion. */
    Workflow__V1__Job *j5 = must_next(s, 12000);
    ck_assert_str_eq(j5->instance_id, in5->id);
    wf_client_stream_close(s);
    ck_assert_int_eq(get_instance(in[0]->id)->instance->status, I_COMPLETED);
    ck_assert_int_eq(get_instance(in[2]->id)->instance->status, I_COMPLETED);
}
END_TEST

WF_TEST(test_push_waits_for_new_jobs_and_picks_variables)
{
    char *type = u("later");
    const char *key = job_def(type);
    Workflow__V1__StreamActivatedJobsRequest req =
        WORKFLOW__V1__STREAM_ACTIVATED_JOBS_REQUEST__INIT;
    req.job_type = type;
    req.credit = 5;
    char *names[2] = {"a", "c"};
    req.fetch_variables = names;
    req.n_fetch_variables = 2;
    wf_client_call_opts o = {0};
    o.no_deadline = 1;
    wf_client_stream *s = wf_client_stream_jobs(as(NULL), &req, &o);
    must_not_push(s, 300);
    /* A job created while the stream waits is pushed at once (the commit
     * wakes it), well within the stream's one-second recheck. */
    int64_t t0 = wf_mono_ms();
    Workflow__V1__Instance *in = start_boss(key, "{\"a\":1,\"b\":2,\"c\":[3]}");
    Workflow__V1__Job *j = must_next(s, 3000);
    ck_assert_str_eq(j->instance_id, in->id);
    ck_assert_str_eq(j->variables_json, "{\"a\":1,\"c\":[3]}");
    ck_assert_msg(wf_mono_ms() - t0 < 900 * wf_test_time_scale(), "pushed after %lld ms",
                  (long long)(wf_mono_ms() - t0));
    wf_client_stream_close(s);
}
END_TEST

WF_TEST(test_another_tenant_gives_no_credit_back)
{
    char *type = u("tenant");
    const char *key = job_def(type);
    start_boss(key, NULL);
    start_boss(key, NULL);
    wf_client_stream *s = open_stream(type, 1, 0, 0);
    Workflow__V1__Job *j = must_next(s, 3000);
    /* The key means nothing in another tenant: refused, and the stream
     * still holds its job. */
    wf_client_status st;
    complete_job_c(as_tenant(u("other"), NULL), j->key, NULL, &st);
    ck_assert_int_ne(st.code, GRPC_STATUS_OK);
    must_not_push(s, 700);
    ck_assert_int_eq(complete_job_c(as(NULL), j->key, NULL, &st), GRPC_STATUS_OK);
    must_next(s, 3000);
    wf_client_stream_close(s);
}
END_TEST

WF_TEST(test_two_streams_never_share_a_job)
{
    char *type = u("shared");
    const char *key = job_def(type);
    wf_client_stream *a = open_stream(type, 3, 0, 0), *b = open_stream(type, 3, 0, 0);
    for (int i = 0; i < 6; i++)
        start_boss(key, NULL);
    const char *ids[6];
    for (int i = 0; i < 3; i++)
        ids[i] = must_next(a, 3000)->id;
    for (int i = 3; i < 6; i++)
        ids[i] = must_next(b, 3000)->id;
    for (int i = 0; i < 6; i++)
        for (int k = i + 1; k < 6; k++)
            ck_assert_str_ne(ids[i], ids[k]);
    must_not_push(a, 300);
    must_not_push(b, 300);
    wf_client_stream_close(a);
    wf_client_stream_close(b);
}
END_TEST

WF_TEST(test_lease_expiry_brings_the_job_back)
{
    char *type = u("expire");
    const char *key = job_def(type);
    Workflow__V1__Instance *in = start_boss(key, NULL);
    wf_client_stream *s = open_stream(type, 1, 300, 0);
    Workflow__V1__Job *first = must_next(s, 3000);
    ck_assert_str_eq(first->instance_id, in->id);
    sleep_ms(450);
    /* The run-out lease comes back through a scheduler pass; the stream's
     * credit came back with the lease's end, so it takes the job again. */
    Workflow__V1__RunSchedulerPassRequest tick = WORKFLOW__V1__RUN_SCHEDULER_PASS_REQUEST__INIT;
    wf_client_status st;
    call(as(NULL), "RunSchedulerPass", &tick,
         &workflow__v1__run_scheduler_pass_response__descriptor, &st);
    ck_ok(st);
    Workflow__V1__Job *second = must_next(s, 3000);
    ck_assert_str_eq(second->id, first->id);
    ck_assert_str_ne(second->key, first->key);
    ck_assert_int_eq(second->attempt, 1); /* an expired lease spends no attempt */
    complete_job_c(as(NULL), first->key, NULL, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "JOB_LEASE_LOST");
    wf_client_stream_close(s);
}
END_TEST

WF_TEST(test_complete_jobs_mixed_outcomes)
{
    char *type = u("mixed");
    const char *key = job_def(type);
    Workflow__V1__Instance *i0 = start_boss(key, NULL), *i1 = start_boss(key, NULL);
    wf_client_stream *s = open_stream(type, 2, 0, 0);
    Workflow__V1__Job *j0 = must_next(s, 3000), *j1 = must_next(s, 3000);
    wf_client_stream_close(s);
    wf_client_status st;
    ck_assert_int_eq(complete_job_c(as(NULL), j0->key, NULL, &st), GRPC_STATUS_OK);
    /* One OK, one spent key, one that never was a key, one bad JSON. */
    const char *keys[3] = {j1->key, j0->key, "not-a-key"};
    Workflow__V1__CompleteJobsResponse *r = complete_jobs(keys, 3, &st);
    ck_ok(st);
    ck_assert_uint_eq(r->n_results, 3);
    ck_assert_str_eq(r->results[0]->job_key, j1->key);
    ck_assert_int_eq(r->results[0]->code, GRPC_STATUS_OK);
    ck_assert_str_eq(r->results[0]->reason, "");
    ck_assert_int_eq(r->results[1]->code, GRPC_STATUS_FAILED_PRECONDITION);
    ck_assert_str_eq(r->results[1]->reason, "JOB_LEASE_LOST");
    ck_assert_str_ne(r->results[1]->message, "");
    ck_assert_int_eq(r->results[2]->code, GRPC_STATUS_NOT_FOUND);
    ck_assert_str_eq(r->results[2]->reason, "JOB_NOT_FOUND");
    ck_assert_int_eq(get_instance(i0->id)->instance->status, I_COMPLETED);
    ck_assert_int_eq(get_instance(i1->id)->instance->status, I_COMPLETED);
    ck_assert_int_eq(count_of(event_types(i1->id), "JOB_COMPLETED"), 1);
    /* An empty batch, and a batch over the limit, are refused whole. */
    complete_jobs(keys, 0, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    const char *many[501];
    for (int i = 0; i < 501; i++)
        many[i] = "not-a-key";
    complete_jobs(many, 501, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    /* An item's request id is CompleteJob's: the retry answers OK once more
     * without completing twice, through either method. */
    Workflow__V1__Instance *i2 = start_boss(key, NULL);
    s = open_stream(type, 1, 0, 0);
    Workflow__V1__Job *j2 = must_next(s, 3000);
    wf_client_stream_close(s);
    Workflow__V1__CompleteJobRequest item = WORKFLOW__V1__COMPLETE_JOB_REQUEST__INIT;
    item.job_key = j2->key;
    item.request_id = u("cjs");
    Workflow__V1__CompleteJobRequest *items[1] = {&item};
    Workflow__V1__CompleteJobsRequest req = WORKFLOW__V1__COMPLETE_JOBS_REQUEST__INIT;
    req.completions = items;
    req.n_completions = 1;
    for (int k = 0; k < 2; k++) {
        r = call(as(NULL), "CompleteJobs", &req, &workflow__v1__complete_jobs_response__descriptor,
                 &st);
        ck_ok(st);
        ck_assert_int_eq(r->results[0]->code, GRPC_STATUS_OK);
    }
    call(as(NULL), "CompleteJob", &item, &workflow__v1__complete_job_response__descriptor, &st);
    ck_ok(st);
    ck_assert_int_eq(count_of(event_types(i2->id), "JOB_COMPLETED"), 1);
}
END_TEST

/* The status a stream of req ends with before pushing anything. */
static void
stream_fails(const Workflow__V1__StreamActivatedJobsRequest *req, const char *why)
{
    wf_client_call_opts o = {0};
    wf_client_stream *s = wf_client_stream_jobs(as(NULL), req, &o);
    ck_assert_ptr_nonnull(s);
    int ended;
    wf_client_status st;
    ck_assert_ptr_null(next_job(s, 3000, &ended, &st));
    ck_assert_msg(ended, "%s: the stream did not end", why);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    wf_client_stream_close(s);
}

WF_TEST(test_bad_stream_requests)
{
    Workflow__V1__StreamActivatedJobsRequest req =
        WORKFLOW__V1__STREAM_ACTIVATED_JOBS_REQUEST__INIT;
    req.credit = 1;
    stream_fails(&req, "empty job type");
    req.job_type = u("bad");
    req.credit = 0;
    stream_fails(&req, "zero credit");
    req.credit = 1001;
    stream_fails(&req, "credit above 1000");
    req.credit = 1;
    req.lease = dur(25LL * 3600 * 1000);
    stream_fails(&req, "lease above 24 h");
    req.lease = NULL;
    char *names[65];
    for (int i = 0; i < 65; i++)
        names[i] = "v";
    req.fetch_variables = names;
    req.n_fetch_variables = 65;
    stream_fails(&req, "65 variable names");
}
END_TEST

WF_TEST(test_cancel_and_deadline_end_the_stream)
{
    char *type = u("ends");
    const char *key = job_def(type);
    /* The deadline ends a waiting stream. */
    wf_client_stream *s = open_stream(type, 1, 0, 400);
    int ended;
    wf_client_status st;
    ck_assert_ptr_null(next_job(s, 3000, &ended, &st));
    ck_assert(ended);
    ck_assert_int_eq(st.code, GRPC_STATUS_DEADLINE_EXCEEDED);
    wf_client_stream_close(s);
    /* A cancelled stream takes nothing more: the job goes to the next
     * worker that asks. */
    s = open_stream(type, 1, 0, 0);
    must_not_push(s, 200);
    wf_client_stream_close(s);
    sleep_ms(100);
    Workflow__V1__Instance *in = start_boss(key, NULL);
    sleep_ms(300);
    Workflow__V1__ActivateJobsResponse *r = activate(type, 1, 0, 0);
    ck_assert_uint_eq(r->n_jobs, 1);
    ck_assert_str_eq(r->jobs[0]->instance_id, in->id);
}
END_TEST

static void *
stop_server(void *arg)
{
    (void)arg;
    sleep_ms(300);
    wf_test_server_stop(&ts, 5000);
    return NULL;
}

WF_TEST(test_shutdown_ends_the_stream_unavailable)
{
    char *type = u("shutdown");
    wf_client_stream *s = open_stream(type, 1, 0, 0);
    must_not_push(s, 200);
    pthread_t t;
    pthread_create(&t, NULL, stop_server, NULL);
    int64_t t0 = wf_mono_ms();
    int ended = 0;
    wf_client_status st;
    while (!ended && wf_mono_ms() - t0 < 5000)
        ck_assert_ptr_null(next_job(s, 200, &ended, &st));
    pthread_join(t, NULL);
    ts.srv = NULL;
    ck_assert(ended);
    ck_assert_msg(st.code == GRPC_STATUS_UNAVAILABLE, "ended with %s",
                  wf_client_code_name(st.code));
    /* Well before the 5 s grace: open streams are ended first. */
    ck_assert_msg(wf_mono_ms() - t0 < 3000 * wf_test_time_scale(), "ended after %lld ms",
                  (long long)(wf_mono_ms() - t0));
    wf_client_stream_close(s);
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite("e2e_jobstream", wf_test_store_name(), setup, teardown, 60));
}
