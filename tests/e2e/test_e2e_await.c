/*
 * End-to-end tests of waiting for a result in the same call, on the
 * memory store and on Postgres (WF_TEST_STORE=pg), through a real gRPC
 * client: AwaitInstance for each condition (ended, step_enabled,
 * place_marked), a wait that runs out (OK, timed_out, the view), the
 * call's deadline bounding the wait, an instance ending while it is
 * awaited, StartInstance with await_result answered once a worker's job
 * completes (a net and a step list), SendSignal with await_result, the
 * refusals (unknown names, bad timeouts, an aggregate target, another
 * tenant's instance), a thousand waiting calls that leave the server
 * answering other calls promptly, and waiting calls that commits on other
 * roots do not wake.
 *
 * Keys and job types are unique per test (Postgres keeps rows between runs).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/status.h>

#include "load_kit.h"
#include "net_kit.h"
#include "test_support.h"
#include "wf_time.h"
#include "workflow/v1/workflow.pb-c.h"

#define SVC "/workflow.v1.WorkflowService/"
#define I_CANCELLED WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_CANCELLED
#define COND_ENDED WORKFLOW__V1__AWAIT_UNTIL__CONDITION_ENDED
#define COND_STEP WORKFLOW__V1__AWAIT_UNTIL__CONDITION_STEP_ENABLED
#define COND_PLACE WORKFLOW__V1__AWAIT_UNTIL__CONDITION_PLACE_MARKED

/* A condition in ta: ENDED (name NULL), STEP or PLACE of name. */
static Workflow__V1__AwaitUntil *
until(int kind, const char *name)
{
    Workflow__V1__AwaitUntil *u = wf_arena_calloc(ta, 1, sizeof *u);
    workflow__v1__await_until__init(u);
    u->condition_case = kind;
    if (kind == COND_ENDED)
        u->ended = true;
    else if (kind == COND_STEP)
        u->step_enabled = (char *)name;
    else
        u->place_marked = (char *)name;
    return u;
}

/* A timeout in ta: ms < 0 = unset. */
static Google__Protobuf__Duration *
timeout_of(int64_t ms)
{
    if (ms < 0)
        return NULL;
    Google__Protobuf__Duration *d = wf_arena_calloc(ta, 1, sizeof *d);
    google__protobuf__duration__init(d);
    d->seconds = ms / 1000;
    d->nanos = (int32_t)(ms % 1000) * 1000000;
    return d;
}

static Workflow__V1__AwaitInstanceResponse *
await_c(wf_client *c, const char *id, Workflow__V1__AwaitUntil *u, int64_t timeout_ms,
        wf_client_status *st)
{
    Workflow__V1__AwaitInstanceRequest req = WORKFLOW__V1__AWAIT_INSTANCE_REQUEST__INIT;
    req.instance_id = (char *)id;
    req.until = u;
    req.timeout = timeout_of(timeout_ms);
    return call(c, "AwaitInstance", &req, &workflow__v1__await_instance_response__descriptor, st);
}

/* One call on a thread of its own (the client's calls are thread-safe;
 * net_kit's call() keeps responses in ta and is not): the response is
 * the caller's to free. */
typedef struct waiter {
    wf_client *c;
    const char *method;
    const ProtobufCMessage *req;
    const ProtobufCMessageDescriptor *desc;
    int timeout_ms;
    ProtobufCMessage *resp;
    wf_client_status st;
    pthread_t th;
} waiter;

static void *
waiter_run(void *arg)
{
    waiter *w = arg;
    char path[128];
    snprintf(path, sizeof path, SVC "%s", w->method);
    wf_client_call_opts o = {.timeout_ms = w->timeout_ms};
    wf_client_call(w->c, path, w->req, w->desc, &w->resp, &o, &w->st);
    return NULL;
}

static void
waiter_start(waiter *w)
{
    ck_assert_int_eq(pthread_create(&w->th, NULL, waiter_run, w), 0);
}

static void *
waiter_join(waiter *w)
{
    pthread_join(w->th, NULL);
    ck_ok(w->st);
    return w->resp;
}

/* s -> a (USER of alice) -> m -> b (USER of alice) -> e */
static const char *
two_tasks(void)
{
    char *key = u("await2");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "m", NORMAL);
    place(n, "e", END);
    Workflow__V1__Transition *ts_[2] = {trans(n, "a", T_USER), trans(n, "b", T_USER)};
    for (int i = 0; i < 2; i++) {
        Workflow__V1__Assignee *as_ = wf_arena_calloc(ta, 1, sizeof *as_);
        workflow__v1__assignee__init(as_);
        as_->kind = A_USER;
        as_->ids = wf_arena_calloc(ta, 2, sizeof *as_->ids);
        as_->ids[as_->n_ids++] = "alice";
        ts_[i]->assignee = as_;
    }
    arc(n, "s", "a");
    arc(n, "a", "m");
    arc(n, "m", "b");
    arc(n, "b", "e");
    deploy(n);
    return key;
}

static void
complete_open_task(const char *id, const char *transition)
{
    Workflow__V1__Task *t = task_of(get_instance(id), transition, TS_OPEN);
    ck_assert_ptr_nonnull(t);
    wf_client_status st;
    ck_assert_ptr_nonnull(complete_task_as("alice", t->id, NULL, &st));
}

WF_TEST(test_await_timeout_answers_the_view)
{
    const char *key = two_tasks();
    Workflow__V1__Instance *in = start_boss(key, NULL);
    wf_client_status st;
    /* 0: one check, at once. */
    Workflow__V1__AwaitInstanceResponse *r =
        await_c(as(NULL), in->id, until(COND_ENDED, NULL), 0, &st);
    ck_ok(st);
    ck_assert(r->timed_out);
    ck_assert_ptr_nonnull(r->view);
    ck_assert_str_eq(r->view->instance->id, in->id);
    ck_assert_int_eq(r->view->instance->status, I_RUNNING);
    ck_assert_int_eq(marking(r->view, "s"), 1); /* a's task is open on it */
    ck_assert_ptr_nonnull(task_of(r->view, "a", TS_OPEN));
    /* A wait that runs out: OK, never an error. */
    int64_t t0 = wf_mono_ms();
    r = await_c(as(NULL), in->id, until(COND_PLACE, "m"), 300, &st);
    ck_ok(st);
    ck_assert(r->timed_out);
    ck_assert_int_eq(r->view->instance->status, I_RUNNING);
    ck_assert_int_ge(wf_mono_ms() - t0, 300);
}
END_TEST

WF_TEST(test_await_deadline_bounds_the_wait)
{
    const char *key = two_tasks();
    Workflow__V1__Instance *in = start_boss(key, NULL);
    Workflow__V1__AwaitInstanceRequest req = WORKFLOW__V1__AWAIT_INSTANCE_REQUEST__INIT;
    req.instance_id = (char *)in->id;
    req.until = until(COND_ENDED, NULL);
    /* No timeout (the longest wait), a deadline of 1.5 s times the scale:
     * the view comes before the deadline, timed out. */
    waiter w = {.c = as(NULL),
                .method = "AwaitInstance",
                .req = &req.base,
                .desc = &workflow__v1__await_instance_response__descriptor,
                .timeout_ms = 1500 * wf_test_time_scale()};
    waiter_start(&w);
    Workflow__V1__AwaitInstanceResponse *r = waiter_join(&w);
    ck_assert(r->timed_out);
    ck_assert_int_eq(r->view->instance->status, I_RUNNING);
    protobuf_c_message_free_unpacked(&r->base, NULL);
}
END_TEST

WF_TEST(test_await_step_and_place_reached)
{
    const char *key = two_tasks();
    Workflow__V1__Instance *in = start_boss(key, NULL);
    Workflow__V1__AwaitInstanceRequest req = WORKFLOW__V1__AWAIT_INSTANCE_REQUEST__INIT;
    req.instance_id = (char *)in->id;
    req.until = until(COND_STEP, "b");
    req.timeout = timeout_of(30000);
    waiter w = {.c = as(NULL),
                .method = "AwaitInstance",
                .req = &req.base,
                .desc = &workflow__v1__await_instance_response__descriptor};
    waiter_start(&w);
    await_started("AwaitInstance", 1);
    complete_open_task(in->id, "a");
    Workflow__V1__AwaitInstanceResponse *r = waiter_join(&w);
    ck_assert(!r->timed_out);
    ck_assert_int_eq(marking(r->view, "m"), 1);
    ck_assert_ptr_nonnull(task_of(r->view, "b", TS_OPEN));
    protobuf_c_message_free_unpacked(&r->base, NULL);
    /* The place is marked now: answered at once. */
    wf_client_status st;
    Workflow__V1__AwaitInstanceResponse *p =
        await_c(as(NULL), in->id, until(COND_PLACE, "m"), 10000, &st);
    ck_ok(st);
    ck_assert(!p->timed_out);
    ck_assert_int_eq(marking(p->view, "m"), 1);
}
END_TEST

WF_TEST(test_await_instance_ending_while_waiting)
{
    const char *key = two_tasks();
    Workflow__V1__Instance *in = start_boss(key, NULL);
    Workflow__V1__AwaitInstanceRequest req = WORKFLOW__V1__AWAIT_INSTANCE_REQUEST__INIT;
    req.instance_id = (char *)in->id;
    req.until = until(COND_ENDED, NULL);
    req.timeout = timeout_of(30000);
    waiter w = {.c = as(NULL),
                .method = "AwaitInstance",
                .req = &req.base,
                .desc = &workflow__v1__await_instance_response__descriptor};
    waiter_start(&w);
    await_started("AwaitInstance", 1);
    Workflow__V1__CancelInstanceRequest creq = WORKFLOW__V1__CANCEL_INSTANCE_REQUEST__INIT;
    creq.instance_id = (char *)in->id;
    wf_client_status st;
    call(as("boss"), "CancelInstance", &creq, &workflow__v1__cancel_instance_response__descriptor,
         &st);
    ck_ok(st);
    Workflow__V1__AwaitInstanceResponse *r = waiter_join(&w);
    ck_assert(!r->timed_out);
    ck_assert_int_eq(r->view->instance->status, I_CANCELLED);
    protobuf_c_message_free_unpacked(&r->base, NULL);
}
END_TEST

/* StartInstance of key with await_result ended, answered on its thread
 * while this one completes the job of type. */
static void
start_awaits_job(const char *key, const char *type)
{
    Workflow__V1__StartInstanceRequest req = WORKFLOW__V1__START_INSTANCE_REQUEST__INIT;
    Workflow__V1__AwaitResult aw = WORKFLOW__V1__AWAIT_RESULT__INIT;
    aw.until = until(COND_ENDED, NULL);
    aw.timeout = timeout_of(30000);
    req.definition_key = (char *)key;
    req.variables_json = "{\"n\": 1}";
    req.await_result = &aw;
    waiter w = {.c = as("boss"),
                .method = "StartInstance",
                .req = &req.base,
                .desc = &workflow__v1__start_instance_response__descriptor};
    waiter_start(&w);
    Workflow__V1__Job *job = one_job(type);
    wf_client_status st;
    ck_assert_int_eq(complete_job_c(as(NULL), job->key, "{\"paid\": true}", &st), 0);
    Workflow__V1__StartInstanceResponse *r = waiter_join(&w);
    ck_assert(!r->timed_out);
    ck_assert_ptr_nonnull(r->view);
    ck_assert_str_eq(r->view->instance->id, r->instance->id);
    ck_assert_str_eq(r->instance->id, job->instance_id);
    ck_assert_int_eq(r->view->instance->status, I_COMPLETED);
    ck_assert_ptr_nonnull(strstr(r->view->instance->variables_json, "\"paid\""));
    protobuf_c_message_free_unpacked(&r->base, NULL);
}

WF_TEST(test_start_awaits_a_net_completed_by_a_worker)
{
    char *type = u("await.pay");
    char *key = u("awaitnet");
    deploy(job_net(key, type, 3, 0));
    start_awaits_job(key, type);
}
END_TEST

WF_TEST(test_start_awaits_a_step_list_completed_by_a_worker)
{
    char *type = u("await.step");
    char *key = u("awaitsteps");
    Workflow__V1__Definition d = WORKFLOW__V1__DEFINITION__INIT;
    Workflow__V1__Step step = WORKFLOW__V1__STEP__INIT;
    Workflow__V1__JobStep job = WORKFLOW__V1__JOB_STEP__INIT;
    Workflow__V1__Step *steps[1] = {&step};
    job.job_type = type;
    step.id = "pay";
    step.job = &job;
    d.key = key;
    d.kind = WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_STEPS;
    d.steps = steps;
    d.n_steps = 1;
    wf_client_status st;
    ck_assert_ptr_nonnull(deploy_d(as("dev"), &d, false, &st));
    /* The step is reached: answered while its job waits for a worker. */
    Workflow__V1__StartInstanceRequest req = WORKFLOW__V1__START_INSTANCE_REQUEST__INIT;
    Workflow__V1__AwaitResult aw = WORKFLOW__V1__AWAIT_RESULT__INIT;
    aw.until = until(COND_STEP, "pay");
    aw.timeout = timeout_of(10000);
    req.definition_key = key;
    req.await_result = &aw;
    Workflow__V1__StartInstanceResponse *r = call(
        as("boss"), "StartInstance", &req, &workflow__v1__start_instance_response__descriptor, &st);
    ck_ok(st);
    ck_assert(!r->timed_out);
    ck_assert_uint_eq(r->view->n_current_steps, 1);
    ck_assert_str_eq(r->view->current_steps[0]->id, "pay");
    /* Its job is then completed by a worker while the next start waits. */
    Workflow__V1__Job *first = one_job(type);
    ck_assert_int_eq(complete_job_c(as(NULL), first->key, NULL, &st), 0);
    start_awaits_job(key, type);
}
END_TEST

/* s -> go (MSG "go", instance) -> m -> b (USER of alice) -> e */
static const char *
signal_net(void)
{
    char *key = u("awaitsig");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "m", NORMAL);
    place(n, "e", END);
    trans(n, "go", T_MSG)->signal_name = "go";
    Workflow__V1__Transition *b = trans(n, "b", T_USER);
    Workflow__V1__Assignee *a = wf_arena_calloc(ta, 1, sizeof *a);
    workflow__v1__assignee__init(a);
    a->kind = A_USER;
    a->ids = wf_arena_calloc(ta, 2, sizeof *a->ids);
    a->ids[a->n_ids++] = "alice";
    b->assignee = a;
    arc(n, "s", "go");
    arc(n, "go", "m");
    arc(n, "m", "b");
    arc(n, "b", "e");
    deploy(n);
    return key;
}

static Workflow__V1__SendSignalResponse *
signal_await(const char *id, Workflow__V1__AwaitUntil *u_, wf_client_status *st)
{
    Workflow__V1__SendSignalRequest req = WORKFLOW__V1__SEND_SIGNAL_REQUEST__INIT;
    Workflow__V1__AwaitResult aw = WORKFLOW__V1__AWAIT_RESULT__INIT;
    aw.until = u_;
    aw.timeout = timeout_of(10000);
    req.name = "go";
    req.target_case = WORKFLOW__V1__SEND_SIGNAL_REQUEST__TARGET_INSTANCE_ID;
    req.instance_id = (char *)id;
    req.payload_json = "{\"ok\": 1}";
    req.await_result = &aw;
    return call(as(NULL), "SendSignal", &req, &workflow__v1__send_signal_response__descriptor, st);
}

WF_TEST(test_send_signal_awaits_the_next_step)
{
    const char *key = signal_net();
    Workflow__V1__Instance *in = start_boss(key, NULL);
    wf_client_status st;
    Workflow__V1__SendSignalResponse *r = signal_await(in->id, until(COND_STEP, "b"), &st);
    ck_ok(st);
    ck_assert_int_eq(r->outcome, WORKFLOW__V1__SIGNAL_OUTCOME__SIGNAL_OUTCOME_CORRELATED);
    ck_assert(!r->timed_out);
    ck_assert_ptr_nonnull(r->view);
    ck_assert_ptr_nonnull(task_of(r->view, "b", TS_OPEN));
    ck_assert_ptr_nonnull(strstr(r->view->instance->variables_json, "\"ok\""));
    /* A second signal finds no wait (DROPPED): the view still answers. */
    r = signal_await(in->id, until(COND_PLACE, "m"), &st);
    ck_ok(st);
    ck_assert_int_eq(r->outcome, WORKFLOW__V1__SIGNAL_OUTCOME__SIGNAL_OUTCOME_DROPPED);
    ck_assert(!r->timed_out);
    ck_assert_int_eq(marking(r->view, "m"), 1); /* b's task is open on it */
}
END_TEST

WF_TEST(test_await_refusals)
{
    const char *key = two_tasks();
    Workflow__V1__Instance *in = start_boss(key, NULL);
    wf_client_status st;
    ck_assert_ptr_null(await_c(as(NULL), in->id, until(COND_STEP, "nope"), 0, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "UNKNOWN_STEP");
    ck_assert_ptr_null(await_c(as(NULL), in->id, until(COND_PLACE, "nope"), 0, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "UNKNOWN_PLACE");
    ck_assert_ptr_null(await_c(as(NULL), in->id, until(COND_PLACE, ""), 0, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_ptr_null(await_c(as(NULL), in->id, NULL, 0, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert(has_violation(&st, "until", NULL));
    ck_assert_ptr_null(await_c(as(NULL), in->id, until(COND_ENDED, NULL), 60001, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert(has_violation(&st, "timeout", NULL));
    Google__Protobuf__Duration neg = GOOGLE__PROTOBUF__DURATION__INIT;
    neg.seconds = -1;
    Workflow__V1__AwaitInstanceRequest req = WORKFLOW__V1__AWAIT_INSTANCE_REQUEST__INIT;
    req.instance_id = (char *)in->id;
    req.until = until(COND_ENDED, NULL);
    req.timeout = &neg;
    ck_assert_ptr_null(call(as(NULL), "AwaitInstance", &req,
                            &workflow__v1__await_instance_response__descriptor, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    /* Another tenant's instance is not found, as GetInstance answers. */
    ck_assert_ptr_null(
        await_c(as_tenant("elsewhere", NULL), in->id, until(COND_ENDED, NULL), 0, &st));
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "INSTANCE_NOT_FOUND");
    /* StartInstance checks the names before anything starts. */
    Workflow__V1__StartInstanceRequest sreq = WORKFLOW__V1__START_INSTANCE_REQUEST__INIT;
    Workflow__V1__AwaitResult aw = WORKFLOW__V1__AWAIT_RESULT__INIT;
    aw.until = until(COND_STEP, "nope");
    sreq.definition_key = (char *)key;
    sreq.await_result = &aw;
    ck_assert_ptr_null(call(as("boss"), "StartInstance", &sreq,
                            &workflow__v1__start_instance_response__descriptor, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "UNKNOWN_STEP");
    Workflow__V1__ListInstancesRequest lreq = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
    lreq.definition_key = (char *)key;
    lreq.started_by = "boss";
    Workflow__V1__ListInstancesResponse *l =
        call(as("boss"), "ListInstances", &lreq, &workflow__v1__list_instances_response__descriptor,
             &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_instances, 1); /* only the one started above */
    /* SendSignal awaits one instance only: an aggregate is refused before
     * any delivery. */
    Workflow__V1__SendSignalRequest greq = WORKFLOW__V1__SEND_SIGNAL_REQUEST__INIT;
    Workflow__V1__Aggregate agg = WORKFLOW__V1__AGGREGATE__INIT;
    agg.type = "order";
    agg.id = u("o");
    greq.name = "go";
    greq.target_case = WORKFLOW__V1__SEND_SIGNAL_REQUEST__TARGET_AGGREGATE;
    greq.aggregate = &agg;
    aw.until = until(COND_ENDED, NULL);
    greq.await_result = &aw;
    ck_assert_ptr_null(
        call(as(NULL), "SendSignal", &greq, &workflow__v1__send_signal_response__descriptor, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "AWAIT_NEEDS_ONE_INSTANCE");
    /* And a name its instance's net does not have. */
    ck_assert_ptr_null(signal_await(in->id, until(COND_STEP, "nope"), &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "UNKNOWN_STEP");
}
END_TEST

/* ---- across replicas ---------------------------------------------------------------------- */

/* The worker on replica b: activates one job of type (waiting up to 10 s
 * times the scale) and completes it, both through b. */
static void
complete_job_through(wf_test_server *b, const char *type)
{
    wf_client *c = wf_test_client(b, NULL, NULL, NULL);
    Workflow__V1__ActivateJobsRequest areq = WORKFLOW__V1__ACTIVATE_JOBS_REQUEST__INIT;
    areq.job_type = (char *)type;
    areq.worker = "w-b";
    areq.max_jobs = 1;
    areq.wait = dur(10000 * wf_test_time_scale());
    ProtobufCMessage *m = NULL;
    wf_client_status st;
    wf_client_call_opts o = {.timeout_ms = 20000 * wf_test_time_scale()};
    wf_client_call(c, SVC "ActivateJobs", &areq.base,
                   &workflow__v1__activate_jobs_response__descriptor, &m, &o, &st);
    ck_ok(st);
    Workflow__V1__ActivateJobsResponse *r = (void *)m;
    ck_assert_uint_eq(r->n_jobs, 1);
    Workflow__V1__CompleteJobRequest creq = WORKFLOW__V1__COMPLETE_JOB_REQUEST__INIT;
    creq.job_key = r->jobs[0]->key;
    creq.variables_json = "{\"by\": \"b\"}";
    ProtobufCMessage *done = NULL;
    wf_client_call(c, SVC "CompleteJob", &creq.base,
                   &workflow__v1__complete_job_response__descriptor, &done, NULL, &st);
    ck_ok(st);
    protobuf_c_message_free_unpacked(done, NULL);
    protobuf_c_message_free_unpacked(m, NULL);
    wf_client_free(c);
}

/* Postgres, two replicas: a call waits on this one (ts) while the other
 * does the work and is stopped at once (its commit reaches ts only
 * through the store); the wait still ends with the completed instance. On
 * the memory store (one replica per store) the work is done here. */
WF_TEST(test_wait_spans_the_stop_of_the_working_replica)
{
    char *type = u("await.rep");
    char *key = u("awaitrep");
    deploy(job_net(key, type, 3, 0));
    Workflow__V1__Instance *in = start_boss(key, NULL);
    Workflow__V1__AwaitInstanceRequest req = WORKFLOW__V1__AWAIT_INSTANCE_REQUEST__INIT;
    req.instance_id = (char *)in->id;
    req.until = until(COND_ENDED, NULL);
    req.timeout = timeout_of(60000);
    waiter w = {.c = as(NULL),
                .method = "AwaitInstance",
                .req = &req.base,
                .desc = &workflow__v1__await_instance_response__descriptor,
                .timeout_ms = 90000};
    waiter_start(&w);
    await_started("AwaitInstance", 1);
    if (wf_test_store_is_pg()) {
        wf_test_server b = {0};
        wf_test_server_start(&b, NULL);
        complete_job_through(&b, type);
        wf_test_server_stop(&b, 0);
    } else {
        complete_job_through(&ts, type);
    }
    Workflow__V1__AwaitInstanceResponse *r = waiter_join(&w);
    ck_assert(!r->timed_out);
    ck_assert_int_eq(r->view->instance->status, I_COMPLETED);
    ck_assert_ptr_nonnull(strstr(r->view->instance->variables_json, "\"by\""));
    protobuf_c_message_free_unpacked(&r->base, NULL);
}
END_TEST

/* ---- a thousand waiting calls ------------------------------------------------------------ */

#define WAITERS 1000
#define CLIENTS 4

static long
rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    if (f != NULL)
        fclose(f);
    return kib;
}

/* The slowest of 20 GetInstance calls of id, in ms. */
static int64_t
slowest_get(const char *id)
{
    int64_t worst = 0;
    for (int i = 0; i < 20; i++) {
        int64_t t0 = wf_mono_ms();
        get_instance(id);
        int64_t d = wf_mono_ms() - t0;
        worst = d > worst ? d : worst;
    }
    return worst;
}

/* n AwaitInstance calls of instance id until it ends, spread over the
 * clients cs[0..nc), each running once this returns. */
static void
open_waiters(wf_client_stream **s, int n, wf_client **cs, int nc, const char *id)
{
    Workflow__V1__AwaitInstanceRequest req = WORKFLOW__V1__AWAIT_INSTANCE_REQUEST__INIT;
    req.instance_id = (char *)id;
    req.until = until(COND_ENDED, NULL);
    req.timeout = timeout_of(60000);
    long long taken = started_calls("AwaitInstance");
    wf_client_call_opts o = {.timeout_ms = 90000};
    for (int i = 0; i < n; i++) {
        s[i] = wf_client_stream_open(cs[i % nc], SVC "AwaitInstance", &req.base, &o);
        ck_assert_ptr_nonnull(s[i]);
    }
    await_started("AwaitInstance", taken + n);
}

/* Cancels instance id: each of the n waiters answers with its view,
 * CANCELLED, not timed out. */
static void
cancel_and_answer(const char *id, wf_client_stream **s, int n)
{
    Workflow__V1__CancelInstanceRequest creq = WORKFLOW__V1__CANCEL_INSTANCE_REQUEST__INIT;
    creq.instance_id = (char *)id;
    wf_client_status st;
    call(as("boss"), "CancelInstance", &creq, &workflow__v1__cancel_instance_response__descriptor,
         &st);
    ck_ok(st);
    for (int i = 0; i < n; i++) {
        ProtobufCMessage *m = NULL;
        ck_assert_int_eq(wf_client_stream_next(
                             s[i], &workflow__v1__await_instance_response__descriptor, &m, &st),
                         1);
        Workflow__V1__AwaitInstanceResponse *r = (void *)m;
        ck_assert(!r->timed_out);
        ck_assert_int_eq(r->view->instance->status, I_CANCELLED);
        protobuf_c_message_free_unpacked(m, NULL);
        wf_client_stream_close(s[i]);
    }
}

WF_TEST(test_a_thousand_waiting_calls)
{
    const char *key = two_tasks();
    Workflow__V1__Instance *in = start_boss(key, NULL);
    wf_client *cs[CLIENTS];
    for (int i = 0; i < CLIENTS; i++)
        cs[i] = wf_test_client(&ts, NULL, NULL, NULL);
    long before = rss_kib();
    static wf_client_stream *s[WAITERS];
    open_waiters(s, WAITERS, cs, CLIENTS, in->id);
    long after = rss_kib();
    printf("a thousand waiting calls: RSS %+ld KiB (%.1f KiB a call, client and server)\n",
           after - before, (double)(after - before) / WAITERS);
    /* The server's threads are free: other calls answer promptly. */
    int64_t worst = slowest_get(in->id);
    ck_assert_msg(worst < 1000 * wf_test_time_scale_now(), "GetInstance took %lld ms",
                  (long long)worst);
    /* The instance ends: every waiter answers with its view. */
    cancel_and_answer(in->id, s, WAITERS);
    for (int i = 0; i < CLIENTS; i++)
        wf_client_free(cs[i]);
}
END_TEST

/* Commits on other roots wake no waiting call: 200 calls await one
 * instance while 30 others start, then the instance is cancelled. Each
 * waiter is woken by its root once (the cancel); were every commit to
 * wake every waiter, the 30 starts would add thousands of wake-ups. The
 * timed looks (every few seconds) are not counted. */
WF_TEST(test_waiters_sleep_through_other_roots)
{
    enum { N = 200, OTHERS = 30 };
    const char *key = two_tasks();
    Workflow__V1__Instance *in = start_boss(key, NULL);
    wf_client *c = wf_test_client(&ts, NULL, NULL, NULL);
    static wf_client_stream *s[N];
    open_waiters(s, N, &c, 1, in->id);
    uint64_t before = __atomic_load_n(&ts.app.await_wakeups, __ATOMIC_RELAXED);
    for (int i = 0; i < OTHERS; i++)
        ck_assert_ptr_nonnull(start_boss(key, NULL));
    cancel_and_answer(in->id, s, N);
    uint64_t woken = __atomic_load_n(&ts.app.await_wakeups, __ATOMIC_RELAXED) - before;
    printf("%d waiters, %d commits on other roots: %llu wake-ups\n", N, OTHERS,
           (unsigned long long)woken);
    ck_assert_msg(woken <= N + N / 4, "%llu wake-ups for %d waiters", (unsigned long long)woken, N);
    wf_client_free(c);
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite("e2e_await", wf_test_store_name(), setup, teardown, 120));
}
