/*
 * test_e2e_scheduler: RunSchedulerPass through the real gRPC client, on
 * the store WF_TEST_STORE names (the suite runs on memory and Postgres).
 *
 * The in-process server runs no background scheduler, so every timer,
 * lease expiry, signal expiry and retention sweep seen here was done by
 * the pass the test asked for. Each test works in a tenant of its own
 * (Postgres keeps rows between runs, and the pass is tenant-scoped), and
 * the server keeps request records, expired signals and the events of
 * ended instances for one second only, so retention can be watched.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "net_kit.h"
#include "wf_id.h"
#include "wf_time.h"

#define SVC "/workflow.v1.WorkflowService/"

static char *tenant; /* this test's tenant */

static void
sched_setup(void)
{
    static const char *const env[] = {"WF_IDEMPOTENCY_RETENTION=1s", "WF_SIGNAL_RETENTION=1s",
                                      "WF_EVENT_RETENTION=1s", NULL};
    tenant = setup_tenant(env, "sched");
}

static Workflow__V1__RunSchedulerPassResponse *
tick_c(wf_client *c)
{
    Workflow__V1__RunSchedulerPassRequest req = WORKFLOW__V1__RUN_SCHEDULER_PASS_REQUEST__INIT;
    wf_client_status st;
    Workflow__V1__RunSchedulerPassResponse *r = call(
        c, "RunSchedulerPass", &req, &workflow__v1__run_scheduler_pass_response__descriptor, &st);
    ck_ok(st);
    return r;
}

static Workflow__V1__Instance *
start_req(wf_client *c, const char *key, const char *request_id, const char *agg_id)
{
    return start_order(c, key, agg_id, NULL, request_id);
}

/* Events of instance_id's tree (of one type when type != 0), history only. */
static size_t
count_events(wf_client *c, const char *instance_id, Workflow__V1__EventType type)
{
    Workflow__V1__WatchEventsRequest req = WORKFLOW__V1__WATCH_EVENTS_REQUEST__INIT;
    Workflow__V1__EventType types[1] = {type};
    req.instance_id = (char *)instance_id;
    if (type != 0) {
        req.types = types;
        req.n_types = 1;
    }
    wf_client_stream *s = wf_client_stream_open(c, SVC "WatchEvents", &req.base, NULL);
    ck_assert_ptr_nonnull(s);
    size_t n = 0;
    ProtobufCMessage *m;
    wf_client_status st;
    while (n < 10000 && wf_client_stream_next(s, &workflow__v1__watch_events_response__descriptor,
                                              &m, &st) == 1) {
        n++;
        protobuf_c_message_free_unpacked(m, NULL);
    }
    ck_ok(st);
    wf_client_stream_close(s);
    return n;
}

static Workflow__V1__ActivateJobsResponse *
activate_as(wf_client *c, const char *type, int64_t lease_ms)
{
    Workflow__V1__ActivateJobsRequest req = WORKFLOW__V1__ACTIVATE_JOBS_REQUEST__INIT;
    wf_client_status st;
    req.job_type = (char *)type;
    req.worker = "w1";
    req.max_jobs = 1;
    req.lease = dur(lease_ms);
    Workflow__V1__ActivateJobsResponse *r =
        call(c, "ActivateJobs", &req, &workflow__v1__activate_jobs_response__descriptor, &st);
    ck_ok(st);
    return r;
}

/* ---- lease expiry --------------------------------------------------------------------------- */

/* A lease that runs out: the pass ends it once (JOB_LEASE_EXPIRED), the
 * job is activatable again without spending an attempt, and the stale key
 * is refused with JOB_LEASE_LOST while the new one completes the job. */
WF_TEST(test_expired_lease_is_reported_once_and_the_job_comes_back)
{
    wf_client *c = me("boss");
    const char *key = u("lease");
    const char *type = u("charge");
    nb *n = one_step(key, "charge", T_AUTO);
    n->t[0]->job_type = (char *)type;
    deploy_as(c, n);
    Workflow__V1__Instance *in = start_req(c, key, NULL, NULL);

    Workflow__V1__ActivateJobsResponse *a = activate_as(c, type, 200);
    ck_assert_uint_eq(a->n_jobs, 1);
    const char *stale = a->jobs[0]->key;
    int32_t attempt = a->jobs[0]->attempt;
    /* Not run out yet: nothing to expire. */
    ck_assert_int_eq(tick_c(c)->leases_expired, 0);
    sleep_ms(400);

    ck_assert_int_eq(tick_c(c)->leases_expired, 1);
    ck_assert_int_eq(tick_c(c)->leases_expired, 0);
    ck_assert_uint_eq(
        count_events(c, in->id, WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_JOB_LEASE_EXPIRED), 1);

    Workflow__V1__CompleteJobRequest done = WORKFLOW__V1__COMPLETE_JOB_REQUEST__INIT;
    wf_client_status st;
    done.job_key = (char *)stale;
    call(c, "CompleteJob", &done, &workflow__v1__complete_job_response__descriptor, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "JOB_LEASE_LOST");

    a = activate_as(c, type, 60000);
    ck_assert_uint_eq(a->n_jobs, 1);
    ck_assert_str_ne(a->jobs[0]->key, stale);
    ck_assert_int_eq(a->jobs[0]->attempt, attempt); /* an expiry spends no attempt */
    done.job_key = a->jobs[0]->key;
    call(c, "CompleteJob", &done, &workflow__v1__complete_job_response__descriptor, &st);
    ck_ok(st);
    ck_assert_int_eq(get_instance_as(c, in->id)->instance->status, I_COMPLETED);
    ck_assert_uint_eq(
        count_events(c, in->id, WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_JOB_LEASE_EXPIRED), 1);
}
END_TEST

/* ---- signal TTL ----------------------------------------------------------------------------- */

/* A buffered signal past its TTL is shown expired in the delivery log and
 * is never consumed by an instance that awaits it afterwards. */
WF_TEST(test_buffered_signal_past_its_ttl_expires_and_is_never_consumed)
{
    wf_client *c = me("boss");
    const char *agg = u("order");
    Workflow__V1__SendSignalRequest req = WORKFLOW__V1__SEND_SIGNAL_REQUEST__INIT;
    Workflow__V1__Aggregate ag = WORKFLOW__V1__AGGREGATE__INIT;
    ag.type = "order";
    ag.id = (char *)agg;
    req.name = "paid";
    req.target_case = WORKFLOW__V1__SEND_SIGNAL_REQUEST__TARGET_AGGREGATE;
    req.aggregate = &ag;
    req.buffer_ttl = dur(200);
    wf_client_status st;
    Workflow__V1__SendSignalResponse *sent =
        call(c, "SendSignal", &req, &workflow__v1__send_signal_response__descriptor, &st);
    ck_ok(st);
    ck_assert_int_eq(sent->outcome, WORKFLOW__V1__SIGNAL_OUTCOME__SIGNAL_OUTCOME_BUFFERED);
    sleep_ms(400);
    ck_assert_int_eq(tick_c(c)->signals_expired, 1);

    Workflow__V1__ListSignalsRequest lr = WORKFLOW__V1__LIST_SIGNALS_REQUEST__INIT;
    lr.target_case = WORKFLOW__V1__LIST_SIGNALS_REQUEST__TARGET_AGGREGATE;
    lr.aggregate = &ag;
    Workflow__V1__ListSignalsResponse *l =
        call(c, "ListSignals", &lr, &workflow__v1__list_signals_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_signals, 1);
    ck_assert(l->signals[0]->expired);
    ck_assert_ptr_null(l->signals[0]->consumed_at);
    ck_assert_int_eq(l->signals[0]->outcome, WORKFLOW__V1__SIGNAL_OUTCOME__SIGNAL_OUTCOME_BUFFERED);

    /* An instance of the aggregate that now awaits "paid" keeps waiting. */
    const char *key = u("await");
    nb *n = one_step(key, "recv", T_MSG);
    n->t[0]->signal_name = "paid";
    n->t[0]->correlation = WORKFLOW__V1__CORRELATION__CORRELATION_AGGREGATE;
    deploy_as(c, n);
    Workflow__V1__Instance *in = start_req(c, key, NULL, agg);
    Workflow__V1__GetInstanceResponse *g = get_instance_as(c, in->id);
    ck_assert_int_eq(g->instance->status, I_RUNNING);
    ck_assert_uint_eq(g->n_awaiting_signals, 1);
    ck_assert_uint_eq(g->n_buffered_signals, 0);
    ck_assert_uint_eq(count_events(c, in->id, WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_SIGNAL_CONSUMED),
                      0);
}
END_TEST

/* ---- retention ------------------------------------------------------------------------------ */

/* Request records older than the retention go: a replay after that runs
 * again. Events of an ended instance go once it has been ended longer
 * than the event retention; a running instance keeps all of its events. */
WF_TEST(test_retention_removes_old_records_and_ended_events_only)
{
    wf_client *c = me("boss");
    const char *done_key = u("quick");
    nb *n = one_step(done_key, "go", T_TIME);
    n->t[0]->delay = dur(1);
    deploy_as(c, n);
    const char *live_key = u("slow");
    n = one_step(live_key, "wait", T_TIME);
    n->t[0]->delay = dur(3600 * 1000);
    deploy_as(c, n);

    const char *rid = u("req");
    Workflow__V1__Instance *first = start_req(c, done_key, rid, NULL);
    ck_assert_str_eq(start_req(c, done_key, rid, NULL)->id, first->id); /* a replay */
    Workflow__V1__Instance *live = start_req(c, live_key, NULL, NULL);
    sleep_ms(50);
    Workflow__V1__RunSchedulerPassResponse *r = tick_c(c); /* fires "go": first ends */
    ck_assert_int_eq(r->timers_fired, 1);
    ck_assert_int_eq(get_instance_as(c, first->id)->instance->status, I_COMPLETED);
    size_t live_events = count_events(c, live->id, 0);
    ck_assert_uint_gt(live_events, 0);
    ck_assert_uint_gt(count_events(c, first->id, 0), 0);

    sleep_ms(1200); /* past every retention of this server */
    r = tick_c(c);
    ck_assert_int_eq(r->timers_fired, 0);
    ck_assert_int_ge(r->rows_removed, 1 + 4); /* the request record, the ended tree's events */
    ck_assert_uint_eq(count_events(c, first->id, 0), 0);
    ck_assert_uint_eq(count_events(c, live->id, 0), live_events);
    /* The instance itself stays; only its history went. */
    ck_assert_int_eq(get_instance_as(c, first->id)->instance->status, I_COMPLETED);

    /* The request id is forgotten: the same request runs again. */
    Workflow__V1__Instance *again = start_req(c, done_key, rid, NULL);
    ck_assert_str_ne(again->id, first->id);
}
END_TEST

/* ---- tenants and bad input ------------------------------------------------------------------- */

/* My pass fires my due timers, never another tenant's. */
WF_TEST(test_pass_is_scoped_to_the_callers_tenant)
{
    char *other = wf_arena_printf(ta, "%s-b", tenant);
    wf_client *mine = me("boss"), *theirs = as_tenant(other, "boss");
    const char *key = u("due");
    nb *n = one_step(key, "go", T_TIME);
    n->t[0]->delay = dur(1);
    deploy_as(mine, n);
    deploy_as(theirs, n);
    Workflow__V1__Instance *a = start_req(mine, key, NULL, NULL);
    Workflow__V1__Instance *b = start_req(theirs, key, NULL, NULL);
    sleep_ms(50);

    ck_assert_int_eq(tick_c(mine)->timers_fired, 1);
    ck_assert_int_eq(get_instance_as(mine, a->id)->instance->status, I_COMPLETED);
    Workflow__V1__GetInstanceResponse *g = get_instance_as(theirs, b->id);
    ck_assert_int_eq(g->instance->status, I_RUNNING);
    ck_assert_uint_eq(g->n_timers, 1);
    ck_assert_int_eq(tick_c(mine)->timers_fired, 0);

    ck_assert_int_eq(tick_c(theirs)->timers_fired, 1);
    ck_assert_int_eq(get_instance_as(theirs, b->id)->instance->status, I_COMPLETED);
}
END_TEST

/* Many roots' timers in one pass: claimed a batch at a time and fired in
 * batch units of work over many roots (more roots than one batch holds),
 * each timer once, with its event, each instance completed. */
WF_TEST(test_pass_fires_many_roots_timers_in_batches)
{
    enum { N = 120 };
    wf_client *c = me("boss");
    const char *key = u("many");
    nb *n = one_step(key, "go", T_TIME);
    n->t[0]->delay = dur(1);
    deploy_as(c, n);
    Workflow__V1__Instance *in[N];
    for (int i = 0; i < N; i++)
        in[i] = start_req(c, key, NULL, NULL);
    sleep_ms(50);

    ck_assert_int_eq(tick_c(c)->timers_fired, N);
    for (int i = 0; i < N; i++) {
        Workflow__V1__GetInstanceResponse *g = get_instance_as(c, in[i]->id);
        ck_assert_int_eq(g->instance->status, I_COMPLETED);
        ck_assert_uint_eq(g->n_timers, 0);
        if (i % 10 == 0)
            ck_assert_uint_eq(
                count_events(c, in[i]->id, WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_TIMER_FIRED), 1);
    }
    ck_assert_int_eq(tick_c(c)->timers_fired, 0);
}
END_TEST

/* Keys bound to a tenant: a pass for another tenant is forbidden, a call
 * without a key unauthenticated, and a body that is not the request
 * message invalid. */
WF_TEST(test_bad_calls_get_the_right_code)
{
    static const char *const env[] = {"WF_API_KEYS=k-a=tenant-a", NULL};
    wf_test_server_stop(&ts, 1000);
    wf_test_server_start(&ts, env);
    Workflow__V1__RunSchedulerPassRequest req = WORKFLOW__V1__RUN_SCHEDULER_PASS_REQUEST__INIT;
    const ProtobufCMessageDescriptor *d = &workflow__v1__run_scheduler_pass_response__descriptor;
    wf_client_status st;

    wf_client *other = wf_test_client(&ts, "k-a", "tenant-b", NULL);
    ck_assert_ptr_null(call(other, "RunSchedulerPass", &req, d, &st));
    ck_fails(st, GRPC_STATUS_PERMISSION_DENIED, "TENANT_FORBIDDEN");
    wf_client_free(other);

    wf_client *anon = wf_test_client(&ts, NULL, "tenant-a", NULL);
    ck_assert_ptr_null(call(anon, "RunSchedulerPass", &req, d, &st));
    ck_fails(st, GRPC_STATUS_UNAUTHENTICATED, "API_KEY_MISSING");
    wf_client_free(anon);

    wf_client *ok = wf_test_client(&ts, "k-a", "tenant-a", NULL);
    ProtobufCMessage *resp = NULL;
    static const unsigned char junk[] = {0xff, 0xff, 0xff};
    wf_client_call_raw(ok, SVC "RunSchedulerPass", junk, sizeof junk, d, &resp, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    Workflow__V1__RunSchedulerPassResponse *r = call(ok, "RunSchedulerPass", &req, d, &st);
    ck_ok(st);
    ck_assert_int_eq(r->timers_fired + r->leases_expired + r->signals_expired, 0);
    wf_client_free(ok);
}
END_TEST

int
main(void)
{
    return wf_test_run(
        wf_test_suite("e2e_scheduler", "run_scheduler_pass", sched_setup, teardown, 60));
}
