/*
 * test_e2e_suspend: SuspendInstance and ResumeInstance through the real
 * gRPC client, on the store WF_TEST_STORE names (memory and Postgres).
 *
 * While a root is SUSPENDED its tree leases no job, fires no timer and
 * correlates no signal (they are buffered, their TTL counting), and task
 * operations answer INSTANCE_SUSPENDED; reads keep working; a job leased
 * before the suspension completes and what it enables waits. At resume
 * the jobs are activated, due timers fire on the next pass and the
 * buffered signals are consumed. Every refusal has its code and reason,
 * and a request id replays the first answer.
 *
 * The in-process server runs no background scheduler: timers and signal
 * expiry move only by RunSchedulerPass, which is tenant-scoped, so each
 * test works in a tenant of its own (Postgres keeps rows between runs).
 */
#include <stdio.h>
#include <string.h>

#include "net_kit.h"
#include "store.h"
#include "wf_id.h"

#define I_SUSPENDED WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_SUSPENDED
#define I_CANCELLED WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_CANCELLED
#define OUT_BUFFERED WORKFLOW__V1__SIGNAL_OUTCOME__SIGNAL_OUTCOME_BUFFERED
#define OUT_DROPPED WORKFLOW__V1__SIGNAL_OUTCOME__SIGNAL_OUTCOME_DROPPED
#define OUT_CORRELATED WORKFLOW__V1__SIGNAL_OUTCOME__SIGNAL_OUTCOME_CORRELATED

static char *tenant; /* this test's tenant */

static void
suspend_setup(void)
{
    tenant = setup_tenant(NULL, "susp");
}

/* ---- calls --------------------------------------------------------------------------------- */

static Workflow__V1__Instance *
suspend_c(wf_client *c, const char *id, const char *reason, const char *rid, wf_client_status *st)
{
    Workflow__V1__SuspendInstanceRequest req = WORKFLOW__V1__SUSPEND_INSTANCE_REQUEST__INIT;
    req.instance_id = (char *)id;
    req.reason = (char *)(reason != NULL ? reason : "");
    req.request_id = (char *)(rid != NULL ? rid : "");
    Workflow__V1__SuspendInstanceResponse *r =
        call(c, "SuspendInstance", &req, &workflow__v1__suspend_instance_response__descriptor, st);
    return r != NULL ? r->instance : NULL;
}

static Workflow__V1__Instance *
resume_c(wf_client *c, const char *id, const char *reason, const char *rid, wf_client_status *st)
{
    Workflow__V1__ResumeInstanceRequest req = WORKFLOW__V1__RESUME_INSTANCE_REQUEST__INIT;
    req.instance_id = (char *)id;
    req.reason = (char *)(reason != NULL ? reason : "");
    req.request_id = (char *)(rid != NULL ? rid : "");
    Workflow__V1__ResumeInstanceResponse *r =
        call(c, "ResumeInstance", &req, &workflow__v1__resume_instance_response__descriptor, st);
    return r != NULL ? r->instance : NULL;
}

static Workflow__V1__Instance *
suspend_ok(const char *id)
{
    wf_client_status st;
    Workflow__V1__Instance *in = suspend_c(me("ops"), id, "audit", NULL, &st);
    ck_ok(st);
    ck_assert_int_eq(in->status, I_SUSPENDED);
    return in;
}

static Workflow__V1__Instance *
resume_ok(const char *id)
{
    wf_client_status st;
    Workflow__V1__Instance *in = resume_c(me("ops"), id, "audit done", NULL, &st);
    ck_ok(st);
    return in;
}

static int
status_of(const char *id)
{
    return get_instance_as(me("reader"), id)->instance->status;
}

static size_t
activate_n(const char *type, int64_t wait_ms)
{
    wf_client_status st;
    Workflow__V1__ActivateJobsResponse *r = activate_c(me(NULL), type, 5, 60000, wait_ms, &st);
    ck_ok(st);
    return r->n_jobs;
}

static Workflow__V1__Job *
tenant_job(const char *type)
{
    wf_client_status st;
    Workflow__V1__ActivateJobsResponse *r = activate_c(me(NULL), type, 5, 60000, 2000, &st);
    ck_ok(st);
    ck_assert_msg(r->n_jobs == 1, "%zu jobs of %s", r->n_jobs, type);
    return r->jobs[0];
}

static void
complete_ok(const Workflow__V1__Job *j)
{
    wf_client_status st;
    complete_job_c(me(NULL), j->key, "{\"done\":true}", &st);
    ck_ok(st);
}

static Workflow__V1__SendSignalResponse *
send_sig(const char *name, const char *instance_id, int64_t ttl_ms)
{
    Workflow__V1__SendSignalRequest req = WORKFLOW__V1__SEND_SIGNAL_REQUEST__INIT;
    req.name = (char *)name;
    req.target_case = WORKFLOW__V1__SEND_SIGNAL_REQUEST__TARGET_INSTANCE_ID;
    req.instance_id = (char *)instance_id;
    req.payload_json = "{\"paid\":true}";
    if (ttl_ms > 0)
        req.buffer_ttl = dur(ttl_ms);
    wf_client_status st;
    Workflow__V1__SendSignalResponse *r =
        call(me("shop"), "SendSignal", &req, &workflow__v1__send_signal_response__descriptor, &st);
    ck_ok(st);
    return r;
}

/* The events of root's tree in this tenant, read from the store. */
static wf_event_row *
events(const char *root, size_t *n)
{
    wf_store_ctx sc = {tenant, 0, ta};
    wf_event_filter f = {.instance_id = root};
    wf_event_row *ev = NULL;
    wf_error err;
    ck_assert_int_eq(wf_store_read_events(ts.app.store, &sc, 0, &f, 1000, &ev, n, &err), WF_OK);
    return ev;
}

static size_t
count_type(const char *root, const char *type)
{
    size_t n, k = 0;
    wf_event_row *ev = events(root, &n);
    for (size_t i = 0; i < n; i++)
        k += strcmp(ev[i].type, type) == 0;
    return k;
}

/* A net root waiting on a job of a fresh type (*type). */
static Workflow__V1__Instance *
job_instance(const char **type)
{
    const char *key = u("susp-job");
    *type = u("charge");
    nb *n = one_step(key, "charge", T_AUTO);
    n->t[0]->job_type = (char *)*type;
    deploy_as(me("dev"), n);
    return start_order(me("boss"), key, NULL, NULL, NULL);
}

/* A net root awaiting signal "paid" by instance id. */
static Workflow__V1__Instance *
msg_instance(void)
{
    const char *key = u("susp-msg");
    nb *n = one_step(key, "recv", T_MSG);
    n->t[0]->signal_name = "paid";
    deploy_as(me("dev"), n);
    return start_order(me("boss"), key, NULL, NULL, NULL);
}

/* An AD_HOC root with one personal task for ann (*task) under a child. */
static Workflow__V1__AssignToResponse *
referral_tree(Workflow__V1__Instance **root, const char *assignee, Workflow__V1__AssigneeKind kind)
{
    wf_client_status st;
    *root = start_v(me("boss"), u("susp-adhoc"), 0, NULL, &st);
    ck_ok(st);
    Workflow__V1__AssignToRequest r = WORKFLOW__V1__ASSIGN_TO_REQUEST__INIT;
    Workflow__V1__Assignee a = WORKFLOW__V1__ASSIGNEE__INIT;
    char *ids[1] = {(char *)assignee};
    r.parent_instance_id = (*root)->id;
    r.title = "Review";
    a.kind = kind;
    a.ids = ids;
    a.n_ids = 1;
    r.assignee = &a;
    Workflow__V1__AssignToResponse *resp =
        call(me("boss"), "AssignTo", &r, &workflow__v1__assign_to_response__descriptor, &st);
    ck_ok(st);
    return resp;
}

static Workflow__V1__Task *
task_op(wf_client *c, const char *method, const char *task_id, wf_client_status *st)
{
    Workflow__V1__ClaimTaskRequest req = WORKFLOW__V1__CLAIM_TASK_REQUEST__INIT;
    req.task_id = (char *)task_id;
    Workflow__V1__ClaimTaskResponse *r =
        call(c, method, &req, &workflow__v1__claim_task_response__descriptor, st);
    return r != NULL ? r->task : NULL;
}

static void
complete_task_c(wf_client *c, const char *task_id, wf_client_status *st)
{
    Workflow__V1__CompleteTaskRequest req = WORKFLOW__V1__COMPLETE_TASK_REQUEST__INIT;
    req.task_id = (char *)task_id;
    call(c, "CompleteTask", &req, &workflow__v1__complete_task_response__descriptor, st);
}

/* ---- jobs ----------------------------------------------------------------------------------- */

/* No job of a suspended tree is activated, by a plain call nor by a long
 * poll; the resume activates it and the instance completes. The events
 * name the actor and the reason. */
WF_TEST(test_job_is_not_activated_while_suspended_and_is_after_resume)
{
    const char *type;
    Workflow__V1__Instance *in = job_instance(&type);
    Workflow__V1__Instance *s = suspend_ok(in->id);
    ck_assert_str_eq(s->id, in->id);
    ck_assert_uint_eq(activate_n(type, 0), 0);
    ck_assert_uint_eq(activate_n(type, 300), 0); /* a long poll finds nothing either */
    ck_assert_int_eq(status_of(in->id), I_SUSPENDED);

    Workflow__V1__Instance *r = resume_ok(in->id);
    ck_assert_int_eq(r->status, I_RUNNING);
    complete_ok(tenant_job(type));
    ck_assert_int_eq(status_of(in->id), I_COMPLETED);

    size_t n;
    wf_event_row *ev = events(in->id, &n);
    int seen = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(ev[i].type, "INSTANCE_SUSPENDED") == 0) {
            ck_assert_str_eq(ev[i].actor, "ops");
            ck_assert_str_eq(ev[i].instance_id, in->id);
            ck_assert_ptr_nonnull(strstr(ev[i].data_json, "\"reason\":\"audit\""));
            seen |= 1;
        } else if (strcmp(ev[i].type, "INSTANCE_RESUMED") == 0) {
            ck_assert_int_eq(seen, 1); /* after the suspension */
            ck_assert_str_eq(ev[i].actor, "ops");
            ck_assert_ptr_nonnull(strstr(ev[i].data_json, "\"reason\":\"audit done\""));
            seen |= 2;
        } else if (strcmp(ev[i].type, "JOB_ACTIVATED") == 0) {
            ck_assert_int_eq(seen, 3); /* only after the resume */
        }
    }
    ck_assert_int_eq(seen, 3);
}
END_TEST

/* A long poll waiting while the tree is suspended gets the job when the
 * tree is resumed. */
WF_TEST(test_waiting_worker_gets_the_job_at_resume)
{
    const char *type;
    Workflow__V1__Instance *in = job_instance(&type);
    suspend_ok(in->id);
    ck_assert_uint_eq(activate_n(type, 0), 0);
    resume_ok(in->id);
    ck_assert_uint_eq(activate_n(type, 2000), 1);
}
END_TEST

/* A job stream of the type pushes nothing while the tree is suspended and
 * pushes the job once it is resumed. */
WF_TEST(test_job_stream_pushes_nothing_while_suspended)
{
    const char *type;
    Workflow__V1__Instance *in = job_instance(&type);
    suspend_ok(in->id);
    Workflow__V1__StreamActivatedJobsRequest req =
        WORKFLOW__V1__STREAM_ACTIVATED_JOBS_REQUEST__INIT;
    req.job_type = (char *)type;
    req.worker = "ws";
    req.credit = 5;
    wf_client_call_opts o = {.timeout_ms = 10000};
    wf_client_stream *s = wf_client_stream_jobs(me(NULL), &req, &o);
    ck_assert_ptr_nonnull(s);
    Workflow__V1__Job *j = NULL;
    wf_client_status st;
    ck_assert_int_eq(wf_client_next_job(s, 500, &j, &st), -1);
    resume_ok(in->id);
    ck_assert_int_eq(wf_client_next_job(s, 3000, &j, &st), 1);
    ck_assert_str_eq(j->instance_id, in->id);
    protobuf_c_message_free_unpacked(&j->base, NULL);
    wf_client_stream_close(s);
}
END_TEST

/* A job leased before the suspension may complete: the output is merged,
 * the token moves, and the next job is created but not activated until
 * the resume. */
WF_TEST(test_job_leased_before_the_suspension_completes_and_its_successor_waits)
{
    const char *key = u("susp-two");
    const char *a = u("reserve"), *b = u("ship");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "p", NORMAL);
    place(n, "e", END);
    trans(n, "reserve", T_AUTO)->job_type = (char *)a;
    trans(n, "ship", T_AUTO)->job_type = (char *)b;
    arc(n, "s", "reserve");
    arc(n, "reserve", "p");
    arc(n, "p", "ship");
    arc(n, "ship", "e");
    deploy_as(me("dev"), n);
    Workflow__V1__Instance *in = start_order(me("boss"), key, NULL, NULL, NULL);

    Workflow__V1__Job *j = tenant_job(a);
    suspend_ok(in->id);
    complete_ok(j);
    Workflow__V1__GetInstanceResponse *g = get_instance_as(me("reader"), in->id);
    ck_assert_int_eq(g->instance->status, I_SUSPENDED);
    ck_assert_int_eq(marking(g, "p"), 1);
    ck_assert_ptr_nonnull(strstr(g->instance->variables_json, "\"done\":true"));
    ck_assert_uint_eq(g->n_jobs, 1); /* ship's job exists */
    ck_assert_uint_eq(activate_n(b, 0), 0);

    resume_ok(in->id);
    complete_ok(tenant_job(b));
    ck_assert_int_eq(status_of(in->id), I_COMPLETED);
}
END_TEST

/* A leased job that fails for good while suspended is an incident: the
 * instance is FAILED (the suspension ends with it) and RetryInstance
 * resumes the work. A retryable failure waits for the resume. */
WF_TEST(test_leased_job_failing_while_suspended)
{
    const char *key = u("susp-fail-lease");
    const char *type = u("flaky");
    nb *n = one_step(key, "work", T_AUTO);
    with_job(n->t[0], type, 2, 1);
    deploy_as(me("dev"), n);
    Workflow__V1__Instance *in = start_order(me("boss"), key, NULL, NULL, NULL);
    Workflow__V1__FailJobRequest fr = WORKFLOW__V1__FAIL_JOB_REQUEST__INIT;
    wf_client_status st;
    fr.job_key = tenant_job(type)->key;
    fr.error_message = "busy";
    suspend_ok(in->id);
    call(me(NULL), "FailJob", &fr, &workflow__v1__fail_job_response__descriptor, &st);
    ck_ok(st);
    sleep_ms(50); /* past the backoff */
    ck_assert_uint_eq(activate_n(type, 0), 0);
    resume_ok(in->id);
    fr.job_key = tenant_job(type)->key;
    suspend_ok(in->id);
    call(me(NULL), "FailJob", &fr, &workflow__v1__fail_job_response__descriptor, &st);
    ck_ok(st);
    ck_assert_int_eq(status_of(in->id), I_FAILED);
}
END_TEST

/* ---- timers --------------------------------------------------------------------------------- */

/* A due timer of a suspended tree is not fired by a pass; the first pass
 * after the resume fires it. */
WF_TEST(test_due_timer_waits_while_suspended_and_fires_after_resume)
{
    const char *key = u("susp-timer");
    nb *n = one_step(key, "go", T_TIME);
    n->t[0]->delay = dur(1);
    deploy_as(me("dev"), n);
    Workflow__V1__Instance *in = start_order(me("boss"), key, NULL, NULL, NULL);
    suspend_ok(in->id);
    sleep_ms(50);
    ck_assert_int_eq(scheduler_pass()->timers_fired, 0);
    ck_assert_int_eq(scheduler_pass()->timers_fired, 0);
    Workflow__V1__GetInstanceResponse *g = get_instance_as(me("reader"), in->id);
    ck_assert_int_eq(g->instance->status, I_SUSPENDED);
    ck_assert_uint_eq(g->n_timers, 1);
    ck_assert_int_eq(marking(g, "start"), 1);

    resume_ok(in->id);
    /* On Postgres a scheduler of another suite may take the timer first:
     * that it fired is what counts. */
    ck_assert_int_le(scheduler_pass()->timers_fired, 1);
    ck_assert_int_eq(status_of(in->id), I_COMPLETED);
}
END_TEST

/* ---- signals -------------------------------------------------------------------------------- */

/* A signal for a suspended instance that awaits it is buffered, not
 * correlated; the resume consumes it and the instance moves on. */
WF_TEST(test_signal_is_buffered_while_suspended_and_consumed_at_resume)
{
    Workflow__V1__Instance *in = msg_instance();
    suspend_ok(in->id);
    Workflow__V1__SendSignalResponse *r = send_sig("paid", in->id, 60000);
    ck_assert_int_eq(r->outcome, OUT_BUFFERED);
    ck_assert_ptr_nonnull(r->expires_at);
    Workflow__V1__GetInstanceResponse *g = get_instance_as(me("reader"), in->id);
    ck_assert_int_eq(g->instance->status, I_SUSPENDED);
    ck_assert_uint_eq(g->n_buffered_signals, 1);
    ck_assert_uint_eq(count_type(in->id, "SIGNAL_CONSUMED"), 0);

    Workflow__V1__Instance *res = resume_ok(in->id);
    ck_assert_int_eq(res->status, I_COMPLETED); /* consumed in the resume */
    ck_assert_ptr_nonnull(strstr(res->variables_json, "\"paid\":true"));
    ck_assert_uint_eq(count_type(in->id, "SIGNAL_CONSUMED"), 1);

    Workflow__V1__ListSignalsRequest lr = WORKFLOW__V1__LIST_SIGNALS_REQUEST__INIT;
    lr.target_case = WORKFLOW__V1__LIST_SIGNALS_REQUEST__TARGET_INSTANCE_ID;
    lr.instance_id = in->id;
    wf_client_status st;
    Workflow__V1__ListSignalsResponse *l =
        call(me("ops"), "ListSignals", &lr, &workflow__v1__list_signals_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_signals, 1);
    ck_assert_ptr_nonnull(l->signals[0]->consumed_at);
    ck_assert_str_eq(l->signals[0]->consumed_by_instance, in->id);
}
END_TEST

/* The buffer's TTL keeps counting while suspended: a signal that expired
 * is not consumed at resume, and a signal without buffer_ttl is dropped. */
WF_TEST(test_signal_ttl_counts_while_suspended)
{
    Workflow__V1__Instance *in = msg_instance();
    suspend_ok(in->id);
    ck_assert_int_eq(send_sig("paid", in->id, 0)->outcome, OUT_DROPPED);
    ck_assert_int_eq(send_sig("paid", in->id, 200)->outcome, OUT_BUFFERED);
    sleep_ms(400);
    /* This pass expires it (or a scheduler of another suite on the same
     * Postgres did already). */
    ck_assert_int_le(scheduler_pass()->signals_expired, 1);
    Workflow__V1__ListSignalsRequest lr = WORKFLOW__V1__LIST_SIGNALS_REQUEST__INIT;
    lr.target_case = WORKFLOW__V1__LIST_SIGNALS_REQUEST__TARGET_INSTANCE_ID;
    lr.instance_id = in->id;
    wf_client_status st;
    Workflow__V1__ListSignalsResponse *l =
        call(me("ops"), "ListSignals", &lr, &workflow__v1__list_signals_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_signals, 2); /* DROPPED, then the expired one */
    ck_assert(l->signals[1]->expired);
    Workflow__V1__Instance *res = resume_ok(in->id);
    ck_assert_int_eq(res->status, I_RUNNING); /* still waiting */
    ck_assert_uint_eq(count_type(in->id, "SIGNAL_CONSUMED"), 0);
    /* Running again, a signal correlates at once. */
    ck_assert_int_eq(send_sig("paid", in->id, 0)->outcome, OUT_CORRELATED);
    ck_assert_int_eq(status_of(in->id), I_COMPLETED);
}
END_TEST

/* ---- tasks and reads ------------------------------------------------------------------------ */

/* Task operations in a suspended referral tree answer INSTANCE_SUSPENDED,
 * so does AssignTo under it; reads and SetVariables work; after the
 * resume the same operations succeed. A child id is refused with
 * INSTANCE_NOT_ROOT. */
WF_TEST(test_task_operations_are_refused_in_a_suspended_tree)
{
    Workflow__V1__Instance *root;
    Workflow__V1__AssignToResponse *a = referral_tree(&root, "ann", A_USER);
    const char *task = a->tasks[0]->id;
    wf_client_status st;
    suspend_c(me("ops"), a->instance_id, NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "INSTANCE_NOT_ROOT");
    ck_assert_ptr_nonnull(strstr(st.message, root->id));
    resume_c(me("ops"), a->instance_id, NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "INSTANCE_NOT_ROOT");
    suspend_ok(root->id);

    task_op(me("ann"), "ClaimTask", task, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "INSTANCE_SUSPENDED");
    complete_task_c(me("ann"), task, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "INSTANCE_SUSPENDED");
    Workflow__V1__CompleteAndEndRequest ce = WORKFLOW__V1__COMPLETE_AND_END_REQUEST__INIT;
    ce.task_id = (char *)task;
    call(me("ann"), "CompleteAndEnd", &ce, &workflow__v1__complete_and_end_response__descriptor,
         &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "INSTANCE_SUSPENDED");
    Workflow__V1__AssignToRequest r = WORKFLOW__V1__ASSIGN_TO_REQUEST__INIT;
    Workflow__V1__Assignee as_ = WORKFLOW__V1__ASSIGNEE__INIT;
    char *ids[1] = {"bob"};
    r.parent_instance_id = root->id;
    r.title = "More";
    as_.kind = A_USER;
    as_.ids = ids;
    as_.n_ids = 1;
    r.assignee = &as_;
    call(me("boss"), "AssignTo", &r, &workflow__v1__assign_to_response__descriptor, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "INSTANCE_SUSPENDED");

    /* Reads keep working. */
    Workflow__V1__GetInstanceResponse *g = get_instance_as(me("reader"), root->id);
    ck_assert_int_eq(g->instance->status, I_SUSPENDED);
    ck_assert_uint_eq(g->n_children, 1);
    ck_assert_int_eq(g->children[0]->status, I_RUNNING); /* children keep their status */
    Workflow__V1__ListTasksRequest lt = WORKFLOW__V1__LIST_TASKS_REQUEST__INIT;
    lt.user = "ann";
    Workflow__V1__ListTasksResponse *tl =
        call(me("ann"), "ListTasks", &lt, &workflow__v1__list_tasks_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(tl->n_tasks, 1);
    Workflow__V1__GetTaskRequest gt = WORKFLOW__V1__GET_TASK_REQUEST__INIT;
    gt.task_id = (char *)task;
    call(me("ann"), "GetTask", &gt, &workflow__v1__get_task_response__descriptor, &st);
    ck_ok(st);
    Workflow__V1__GetCompletionRequest gc = WORKFLOW__V1__GET_COMPLETION_REQUEST__INIT;
    gc.instance_id = a->instance_id;
    call(me("ann"), "GetCompletion", &gc, &workflow__v1__get_completion_response__descriptor, &st);
    ck_ok(st);
    /* SetVariables is allowed: it fires nothing. */
    Workflow__V1__SetVariablesRequest sv = WORKFLOW__V1__SET_VARIABLES_REQUEST__INIT;
    sv.instance_id = root->id;
    sv.variables_json = "{\"fixed\":1}";
    Workflow__V1__SetVariablesResponse *svr = call(
        me("ops"), "SetVariables", &sv, &workflow__v1__set_variables_response__descriptor, &st);
    ck_ok(st);
    ck_assert_int_eq(svr->instance->status, I_SUSPENDED);

    resume_ok(root->id);
    complete_task_c(me("ann"), task, &st);
    ck_ok(st);
}
END_TEST

/* Claim and release of a group task, and the completion of a net's USER
 * task, are refused while suspended; ListWorkItems and WatchEvents read. */
WF_TEST(test_claim_release_and_net_task_are_refused_while_suspended)
{
    Workflow__V1__Instance *root;
    Workflow__V1__AssignToResponse *a =
        referral_tree(&root, "clerks", WORKFLOW__V1__ASSIGNEE_KIND__ASSIGNEE_KIND_GROUP);
    const char *task = a->tasks[0]->id;
    wf_client_status st;
    wf_client *clerk = as_groups(tenant, "cid", "clerks");
    task_op(clerk, "ClaimTask", task, &st);
    ck_ok(st);
    suspend_ok(root->id);
    task_op(clerk, "ReleaseTask", task, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "INSTANCE_SUSPENDED");
    task_op(clerk, "ClaimTask", task, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "INSTANCE_SUSPENDED");
    resume_ok(root->id);
    task_op(clerk, "ReleaseTask", task, &st);
    ck_ok(st);

    /* A net's USER task. */
    const char *key = u("susp-user");
    nb *n = one_step(key, "approve", T_USER);
    Workflow__V1__Assignee *as_ = wf_arena_alloc(ta, sizeof *as_);
    workflow__v1__assignee__init(as_);
    char **ids = wf_arena_alloc(ta, sizeof *ids);
    ids[0] = "ann";
    as_->kind = A_USER;
    as_->ids = ids;
    as_->n_ids = 1;
    n->t[0]->assignee = as_;
    deploy_as(me("dev"), n);
    Workflow__V1__Instance *in = start_order(me("boss"), key, NULL, NULL, NULL);
    Workflow__V1__GetInstanceResponse *g = get_instance_as(me("reader"), in->id);
    ck_assert_uint_eq(g->n_tasks, 1);
    suspend_ok(in->id);
    complete_task_c(me("ann"), g->tasks[0]->id, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "INSTANCE_SUSPENDED");

    Workflow__V1__ListWorkItemsRequest lw = WORKFLOW__V1__LIST_WORK_ITEMS_REQUEST__INIT;
    lw.instance_id = in->id;
    Workflow__V1__ListWorkItemsResponse *wl =
        call(me("reader"), "ListWorkItems", &lw,
             &workflow__v1__list_work_items_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(wl->n_work_items, 1);
    Workflow__V1__WatchEventsRequest we = WORKFLOW__V1__WATCH_EVENTS_REQUEST__INIT;
    Workflow__V1__EventType types[1] = {WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_INSTANCE_SUSPENDED};
    we.instance_id = in->id;
    we.types = types;
    we.n_types = 1;
    wf_client_stream *s = wf_client_stream_open(
        me("reader"), "/workflow.v1.WorkflowService/WatchEvents", &we.base, NULL);
    ck_assert_ptr_nonnull(s);
    ProtobufCMessage *m;
    ck_assert_int_eq(
        wf_client_stream_next(s, &workflow__v1__watch_events_response__descriptor, &m, &st), 1);
    Workflow__V1__WatchEventsResponse *wr = (Workflow__V1__WatchEventsResponse *)m;
    ck_assert_int_eq(wr->event->type, WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_INSTANCE_SUSPENDED);
    ck_assert_str_eq(wr->event->actor, "ops");
    protobuf_c_message_free_unpacked(m, NULL);
    wf_client_stream_close(s);

    resume_ok(in->id);
    complete_task_c(me("ann"), g->tasks[0]->id, &st);
    ck_ok(st);
    ck_assert_int_eq(status_of(in->id), I_COMPLETED);
}
END_TEST

/* ModifyInstance of a suspended net root answers INSTANCE_SUSPENDED, as
 * task operations there do, and changes nothing; resumed, it applies. */
WF_TEST(test_modify_is_refused_while_suspended)
{
    const char *type;
    Workflow__V1__Instance *in = job_instance(&type);
    suspend_ok(in->id);
    Workflow__V1__TokenOperation o = WORKFLOW__V1__TOKEN_OPERATION__INIT;
    o.kind = WORKFLOW__V1__TOKEN_OPERATION_KIND__TOKEN_OPERATION_KIND_MOVE;
    o.place_id = "start";
    o.to_place_id = "end";
    o.count = 1;
    Workflow__V1__TokenOperation *ops[] = {&o};
    Workflow__V1__ModifyInstanceRequest r = WORKFLOW__V1__MODIFY_INSTANCE_REQUEST__INIT;
    r.instance_id = (char *)in->id;
    r.operations = ops;
    r.n_operations = 1;
    r.reason = "skip the charge";
    wf_client_status st;
    call(me("ops"), "ModifyInstance", &r, &workflow__v1__modify_instance_response__descriptor, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "INSTANCE_SUSPENDED");
    Workflow__V1__GetInstanceResponse *g = get_instance_as(me("reader"), in->id);
    ck_assert_int_eq(g->instance->status, I_SUSPENDED);
    ck_assert_int_eq(marking(g, "start"), 1);
    ck_assert_uint_eq(g->n_jobs, 1);
    ck_assert_int_eq(count_of(event_types(in->id), "INSTANCE_MODIFIED"), 0);
    resume_ok(in->id);
    Workflow__V1__ModifyInstanceResponse *m = call(
        me("ops"), "ModifyInstance", &r, &workflow__v1__modify_instance_response__descriptor, &st);
    ck_ok(st);
    ck_assert_int_eq(m->instance->status, I_COMPLETED);
}
END_TEST

/* ---- listings ------------------------------------------------------------------------------- */

/* ListInstances finds a suspended root by status SUSPENDED and by state
 * OPEN (an AD_HOC root without referral, suspended, is OPEN, not
 * NOT_STARTED). */
WF_TEST(test_list_instances_by_status_suspended_and_state_open)
{
    wf_client_status st;
    Workflow__V1__Instance *adhoc = start_v(me("boss"), u("susp-list"), 0, NULL, &st);
    ck_ok(st);
    const char *type;
    Workflow__V1__Instance *net = job_instance(&type);
    suspend_ok(adhoc->id);

    Workflow__V1__ListInstancesRequest lr = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
    lr.started_by = "boss";
    lr.status = I_SUSPENDED;
    Workflow__V1__ListInstancesResponse *l = call(
        me("boss"), "ListInstances", &lr, &workflow__v1__list_instances_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_instances, 1);
    ck_assert_str_eq(l->instances[0]->id, adhoc->id);

    lr.status = 0;
    lr.state = WORKFLOW__V1__PROCESS_STATE__PROCESS_STATE_OPEN;
    l = call(me("boss"), "ListInstances", &lr, &workflow__v1__list_instances_response__descriptor,
             &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_instances, 2);
    (void)net;

    lr.state = WORKFLOW__V1__PROCESS_STATE__PROCESS_STATE_NOT_STARTED;
    l = call(me("boss"), "ListInstances", &lr, &workflow__v1__list_instances_response__descriptor,
             &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_instances, 0);
}
END_TEST

/* ---- refusals ------------------------------------------------------------------------------- */

WF_TEST(test_unknown_and_foreign_ids_are_not_found)
{
    wf_client_status st;
    char id[WF_UUID_LEN + 1];
    wf_uuid7(id);
    suspend_c(me("ops"), id, NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "INSTANCE_NOT_FOUND");
    resume_c(me("ops"), id, NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "INSTANCE_NOT_FOUND");
    suspend_c(me("ops"), "x", NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "INSTANCE_NOT_FOUND");

    const char *type;
    Workflow__V1__Instance *in = job_instance(&type);
    wf_client *other = as_tenant(wf_arena_printf(ta, "%s-other", tenant), "ops");
    suspend_c(other, in->id, NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "INSTANCE_NOT_FOUND");
    suspend_ok(in->id);
    resume_c(other, in->id, NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "INSTANCE_NOT_FOUND");
    ck_assert_int_eq(status_of(in->id), I_SUSPENDED);
}
END_TEST

WF_TEST(test_invalid_requests_are_refused)
{
    wf_client_status st;
    suspend_c(me("ops"), "", NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    resume_c(me("ops"), "", NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    const char *type;
    Workflow__V1__Instance *in = job_instance(&type);
    char *big = wf_arena_alloc(ta, 1026);
    memset(big, 'r', 1025);
    big[1025] = '\0';
    suspend_c(me("ops"), in->id, big, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    big[1024] = '\0'; /* exactly 1024 bytes is accepted */
    suspend_c(me("ops"), in->id, big, NULL, &st);
    ck_ok(st);
    suspend_c(me(NULL), in->id, NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "ACTOR_MISSING");
    resume_c(me(NULL), in->id, NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "ACTOR_MISSING");
}
END_TEST

/* Ended instances are refused both ways; FAILED and COMPENSATING ones
 * cannot be suspended (resuming them changes nothing). */
WF_TEST(test_ended_failed_and_compensating_instances_cannot_be_suspended)
{
    wf_client_status st;
    const char *type;
    Workflow__V1__Instance *done = job_instance(&type);
    complete_ok(tenant_job(type));
    suspend_c(me("ops"), done->id, NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "INSTANCE_NOT_RUNNING");
    resume_c(me("ops"), done->id, NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "INSTANCE_NOT_RUNNING");

    /* FAILED: a job out of attempts. */
    const char *key = u("susp-fail");
    const char *ftype = u("flaky");
    nb *n = one_step(key, "work", T_AUTO);
    with_job(n->t[0], ftype, 1, 0);
    deploy_as(me("dev"), n);
    Workflow__V1__Instance *failed = start_order(me("boss"), key, NULL, NULL, NULL);
    Workflow__V1__FailJobRequest fr = WORKFLOW__V1__FAIL_JOB_REQUEST__INIT;
    fr.job_key = tenant_job(ftype)->key;
    fr.error_message = "boom";
    call(me(NULL), "FailJob", &fr, &workflow__v1__fail_job_response__descriptor, &st);
    ck_ok(st);
    ck_assert_int_eq(status_of(failed->id), I_FAILED);
    suspend_c(me("ops"), failed->id, NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "INSTANCE_NOT_RUNNING");
    ck_assert_ptr_nonnull(strstr(st.message, "FAILED"));
    Workflow__V1__Instance *r = resume_c(me("ops"), failed->id, NULL, NULL, &st);
    ck_ok(st);
    ck_assert_int_eq(r->status, I_FAILED);

    /* COMPENSATING: a cancel with compensation of a completed step. */
    key = u("susp-saga");
    const char *step = u("reserve"), *undo = u("release"), *next = u("ship");
    n = net_new(key);
    place(n, "s", START);
    place(n, "p", NORMAL);
    place(n, "e", END);
    Workflow__V1__Transition *t = trans(n, "reserve", T_AUTO);
    t->job_type = (char *)step;
    t->compensation_job_type = (char *)undo;
    trans(n, "ship", T_AUTO)->job_type = (char *)next;
    arc(n, "s", "reserve");
    arc(n, "reserve", "p");
    arc(n, "p", "ship");
    arc(n, "ship", "e");
    deploy_as(me("dev"), n);
    Workflow__V1__Instance *saga = start_order(me("boss"), key, NULL, NULL, NULL);
    complete_ok(tenant_job(step));
    Workflow__V1__CancelInstanceRequest cr = WORKFLOW__V1__CANCEL_INSTANCE_REQUEST__INIT;
    cr.instance_id = saga->id;
    cr.compensate = true;
    call(me("ops"), "CancelInstance", &cr, &workflow__v1__cancel_instance_response__descriptor,
         &st);
    ck_ok(st);
    ck_assert_int_eq(status_of(saga->id),
                     WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_COMPENSATING);
    suspend_c(me("ops"), saga->id, NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "INSTANCE_NOT_RUNNING");
    ck_assert_ptr_nonnull(strstr(st.message, "COMPENSATING"));
}
END_TEST

/* Suspending a suspended instance and resuming a running one answer OK
 * and change nothing: no second event. A suspended instance can be
 * cancelled. */
WF_TEST(test_repeated_suspend_and_resume_are_idempotent)
{
    const char *type;
    Workflow__V1__Instance *in = job_instance(&type);
    wf_client_status st;
    Workflow__V1__Instance *r = resume_c(me("ops"), in->id, NULL, NULL, &st);
    ck_ok(st);
    ck_assert_int_eq(r->status, I_RUNNING);
    ck_assert_uint_eq(count_type(in->id, "INSTANCE_RESUMED"), 0);
    suspend_ok(in->id);
    suspend_ok(in->id);
    ck_assert_uint_eq(count_type(in->id, "INSTANCE_SUSPENDED"), 1);
    resume_ok(in->id);
    resume_ok(in->id);
    ck_assert_uint_eq(count_type(in->id, "INSTANCE_RESUMED"), 1);

    suspend_ok(in->id);
    Workflow__V1__CancelInstanceRequest cr = WORKFLOW__V1__CANCEL_INSTANCE_REQUEST__INIT;
    cr.instance_id = in->id;
    Workflow__V1__CancelInstanceResponse *c = call(
        me("ops"), "CancelInstance", &cr, &workflow__v1__cancel_instance_response__descriptor, &st);
    ck_ok(st);
    ck_assert_int_eq(c->instance->status, I_CANCELLED);
}
END_TEST

/* A request id replays the first answer without applying twice; reused
 * with another request it is REQUEST_ID_REUSED. */
WF_TEST(test_request_id_replays_the_first_answer)
{
    const char *type;
    Workflow__V1__Instance *in = job_instance(&type);
    const char *rid = u("rid-suspend");
    wf_client_status st;
    Workflow__V1__Instance *a = suspend_c(me("ops"), in->id, "audit", rid, &st);
    ck_ok(st);
    resume_ok(in->id);
    Workflow__V1__Instance *b = suspend_c(me("ops"), in->id, "audit", rid, &st);
    ck_ok(st);
    ck_assert_int_eq(b->status, I_SUSPENDED); /* the first answer, not applied again */
    ck_assert_str_eq(b->id, a->id);
    ck_assert_int_eq(b->updated_at->seconds, a->updated_at->seconds);
    ck_assert_int_eq(b->updated_at->nanos, a->updated_at->nanos);
    ck_assert_int_eq(status_of(in->id), I_RUNNING);
    ck_assert_uint_eq(count_type(in->id, "INSTANCE_SUSPENDED"), 1);
    suspend_c(me("ops"), in->id, "other reason", rid, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "REQUEST_ID_REUSED");

    const char *rid2 = u("rid-resume");
    suspend_ok(in->id);
    Workflow__V1__Instance *c = resume_c(me("ops"), in->id, NULL, rid2, &st);
    ck_ok(st);
    suspend_ok(in->id);
    Workflow__V1__Instance *d = resume_c(me("ops"), in->id, NULL, rid2, &st);
    ck_ok(st);
    ck_assert_int_eq(d->status, I_RUNNING);
    ck_assert_int_eq(d->updated_at->nanos, c->updated_at->nanos);
    ck_assert_int_eq(status_of(in->id), I_SUSPENDED);
    /* The resume_ok above and the first call with rid2; not the replay. */
    ck_assert_uint_eq(count_type(in->id, "INSTANCE_RESUMED"), 2);
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite("e2e_suspend", "suspend", suspend_setup, teardown, 30));
}
