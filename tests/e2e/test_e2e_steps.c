/*
 * End-to-end tests of step-list definitions (DEFINITION_KIND_STEPS) over
 * gRPC, on the memory store and on Postgres (WF_TEST_STORE=pg): deploy and
 * GetDefinition (the steps and the compiled net; identical content keeps
 * its version), validation at step paths, a run of job steps with `next`
 * rules, a worker's next_step goto and its refusals, await steps whose
 * signal or timeout comes first (on_timeout, or the step fails), a stale
 * timeout, a buffered signal, sleep and user steps, retries reset per step,
 * and compensation in reverse order.
 *
 * Postgres keeps rows between runs: keys and job types carry a per-test
 * suffix.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/status.h>

#include "net_kit.h"
#include "test_support.h"
#include "workflow/v1/workflow.pb-c.h"

#define I_COMPENSATED WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_COMPENSATED

/* ---- building step lists (job_step, next_rule: the kit's) -------------------------------- */

static Workflow__V1__Step *
await_step(sb *b, const char *id, const char *signal, int64_t timeout_ms, const char *on_timeout)
{
    Workflow__V1__Step *s = step(b, id);
    s->await_signal = wf_arena_calloc(ta, 1, sizeof *s->await_signal);
    workflow__v1__await_step__init(s->await_signal);
    s->await_signal->signal_name = (char *)signal;
    s->await_signal->correlation = WORKFLOW__V1__CORRELATION__CORRELATION_AGGREGATE;
    if (timeout_ms > 0)
        s->await_signal->timeout = dur(timeout_ms);
    if (on_timeout != NULL)
        s->await_signal->on_timeout = (char *)on_timeout;
    return s;
}

static Workflow__V1__DeployDefinitionResponse *
deploy_steps(const sb *b)
{
    wf_client_status st;
    Workflow__V1__DeployDefinitionResponse *r = deploy_d(as("dev"), &b->d, false, &st);
    ck_ok(st);
    return r;
}

static void
no_job(const char *type)
{
    Workflow__V1__ActivateJobsResponse *r = activate(type, 5, 0, 0);
    ck_assert_msg(r->n_jobs == 0, "%zu jobs of %s", r->n_jobs, type);
}

static int
complete_to(const Workflow__V1__Job *j, const char *vars, const char *next_step,
            wf_client_status *st)
{
    Workflow__V1__CompleteJobRequest req = WORKFLOW__V1__COMPLETE_JOB_REQUEST__INIT;
    req.job_key = j->key;
    req.variables_json = (char *)(vars != NULL ? vars : "");
    req.next_step = (char *)(next_step != NULL ? next_step : "");
    call(as(NULL), "CompleteJob", &req, &workflow__v1__complete_job_response__descriptor, st);
    return st->code;
}

static void
complete_ok(const Workflow__V1__Job *j, const char *vars)
{
    wf_client_status st;
    complete_to(j, vars, NULL, &st);
    ck_ok(st);
}

/* The ids of GetInstance's current_steps, space-separated (static). */
static const char *
current(const char *id)
{
    static char out[512];
    Workflow__V1__GetInstanceResponse *g = get_instance(id);
    out[0] = '\0';
    for (size_t i = 0; i < g->n_current_steps; i++) {
        size_t n = strlen(out);
        snprintf(out + n, sizeof out - n, "%s%s", i ? " " : "", g->current_steps[i]->id);
    }
    return out;
}

static Workflow__V1__SendSignalResponse *
send_agg(const char *name, const char *agg_id, const char *payload, int64_t ttl_ms)
{
    Workflow__V1__SendSignalRequest req = WORKFLOW__V1__SEND_SIGNAL_REQUEST__INIT;
    Workflow__V1__Aggregate agg = WORKFLOW__V1__AGGREGATE__INIT;
    wf_client_status st;
    agg.type = "order";
    agg.id = (char *)agg_id;
    req.name = (char *)name;
    req.target_case = WORKFLOW__V1__SEND_SIGNAL_REQUEST__TARGET_AGGREGATE;
    req.aggregate = &agg;
    req.payload_json = (char *)(payload != NULL ? payload : "");
    if (ttl_ms > 0)
        req.buffer_ttl = dur(ttl_ms);
    Workflow__V1__SendSignalResponse *r =
        call(as(NULL), "SendSignal", &req, &workflow__v1__send_signal_response__descriptor, &st);
    ck_ok(st);
    return r;
}

/* The id of the instance's only timer. */
static char *
timer_id(const char *id)
{
    Workflow__V1__GetInstanceResponse *g = get_instance(id);
    ck_assert_uint_eq(g->n_timers, 1);
    return wf_arena_strdup(ta, g->timers[0]->id);
}

/* ---- tests ----------------------------------------------------------------------------------- */

WF_TEST(test_deploy_and_get_definition)
{
    char *key = u("steps-def"), *ta_ = u("a"), *tb = u("b");
    sb *b = steps_new(key);
    Workflow__V1__Step *a = job_step(b, "a", ta_, 2);
    a->name = "Do a";
    next_rule(a, ".skip == true", "c");
    job_step(b, "b", tb, 0);
    await_step(b, "c", "go", 60000, "b");
    Workflow__V1__DeployDefinitionResponse *r = deploy_steps(b);
    ck_assert(r->created);
    ck_assert_int_eq(r->definition->kind, WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_STEPS);
    int32_t version = r->definition->version;

    Workflow__V1__GetDefinitionRequest req = WORKFLOW__V1__GET_DEFINITION_REQUEST__INIT;
    wf_client_status st;
    req.key = key;
    Workflow__V1__GetDefinitionResponse *g = call(
        as(NULL), "GetDefinition", &req, &workflow__v1__get_definition_response__descriptor, &st);
    ck_ok(st);
    const Workflow__V1__Definition *d = g->definition;
    ck_assert_int_eq(d->kind, WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_STEPS);
    ck_assert_int_eq(d->termination, WORKFLOW__V1__TERMINATION__TERMINATION_UNSPECIFIED);
    ck_assert_uint_eq(d->n_steps, 3);
    ck_assert_str_eq(d->steps[0]->id, "a");
    ck_assert_str_eq(d->steps[0]->name, "Do a");
    ck_assert_str_eq(d->steps[0]->job->job_type, ta_);
    ck_assert_int_eq(d->steps[0]->retry->max_attempts, 2);
    ck_assert_uint_eq(d->steps[0]->n_next, 1);
    ck_assert_str_eq(d->steps[0]->next[0]->step, "c");
    ck_assert_str_eq(d->steps[2]->await_signal->signal_name, "go");
    ck_assert_str_eq(d->steps[2]->await_signal->on_timeout, "b");
    ck_assert_int_eq(d->steps[2]->await_signal->timeout->seconds, 60);
    /* The compiled net: start, 3 step places, end; :begin, 3 steps, c's timeout. */
    ck_assert_uint_eq(d->n_places, 5);
    ck_assert_uint_eq(d->n_transitions, 5);
    ck_assert_uint_ge(d->n_arcs, 9);
    ck_assert_str_eq(d->places[1]->id, "a:ready");
    ck_assert_str_eq(d->places[1]->name, "Do a");

    /* Identical content: the same version. */
    r = deploy_steps(b);
    ck_assert(!r->created);
    ck_assert_int_eq(r->definition->version, version);
    /* Changed content: the next one. */
    b->s[1]->name = "Do b";
    r = deploy_steps(b);
    ck_assert(r->created);
    ck_assert_int_eq(r->definition->version, version + 1);
}
END_TEST

WF_TEST(test_validation_names_steps)
{
    sb *b = steps_new(u("steps-bad"));
    Workflow__V1__Step *a = job_step(b, "a", "t", 0);
    next_rule(a, ".x", "ghost");
    job_step(b, "a", "t", 0);
    step(b, "empty");
    await_step(b, "w", "s", 0, "a");
    wf_client_status st;
    Workflow__V1__DeployDefinitionResponse *r = deploy_d(as("dev"), &b->d, true, &st);
    ck_ok(st);
    const char *want[][2] = {{"UNKNOWN_STEP", "steps[0].next[0].step"},
                             {"DUPLICATE_ID", "steps[1].id"},
                             {"STEP_KIND_MISSING", "steps[2]"},
                             {"STEP_FIELD_CONFLICT", "steps[3].await_signal.on_timeout"}};
    for (size_t k = 0; k < 4; k++) {
        bool found = false;
        for (size_t i = 0; i < r->n_errors && !found; i++)
            found = strcmp(r->errors[i]->code, want[k][0]) == 0 &&
                    strcmp(r->errors[i]->path, want[k][1]) == 0;
        ck_assert_msg(found, "no %s at %s", want[k][0], want[k][1]);
    }
    /* A real deploy is refused with every error. */
    deploy_d(as("dev"), &b->d, false, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "DEFINITION_INVALID");
    /* An empty list, and a net given on a STEPS definition. */
    sb *e = steps_new(u("steps-empty"));
    r = deploy_d(as("dev"), &e->d, true, &st);
    ck_ok(st);
    ck_assert_uint_eq(r->n_errors, 1);
    ck_assert_str_eq(r->errors[0]->code, "STEPS_EMPTY");
}
END_TEST

WF_TEST(test_jobs_and_next_rules)
{
    char *key = u("steps-run"), *ja = u("a"), *jb = u("b"), *jc = u("c");
    sb *b = steps_new(key);
    Workflow__V1__Step *a = job_step(b, "a", ja, 0);
    next_rule(a, ".route == \"c\"", "c");
    next_rule(a, ".route != null", "b"); /* also true for "c": the first rule wins */
    job_step(b, "b", jb, 0);
    job_step(b, "c", jc, 0);
    deploy_steps(b);

    /* Rule 0: a -> c, b is skipped. */
    Workflow__V1__Instance *in = start_v(as("boss"), key, 0, "{}", &(wf_client_status){0});
    ck_assert_str_eq(current(in->id), "a");
    Workflow__V1__Job *j = one_job(ja);
    ck_assert_str_eq(j->transition_id, "a");
    complete_ok(j, "{\"route\":\"c\"}");
    no_job(jb);
    ck_assert_str_eq(current(in->id), "c");
    complete_ok(one_job(jc), "{\"done\":true}");
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_uint_eq(g->n_current_steps, 0);
    ck_assert_ptr_nonnull(strstr(g->instance->variables_json, "\"done\":true"));

    /* No rule matches: the following steps, in order. */
    in = start_v(as("boss"), key, 0, "{}", &(wf_client_status){0});
    complete_ok(one_job(ja), "{}");
    ck_assert_str_eq(current(in->id), "b");
    complete_ok(one_job(jb), "{}");
    complete_ok(one_job(jc), "{}");
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
}
END_TEST

WF_TEST(test_worker_goto)
{
    char *key = u("steps-goto"), *ja = u("a"), *jb = u("b"), *jc = u("c");
    sb *b = steps_new(key);
    Workflow__V1__Step *a = job_step(b, "a", ja, 0);
    next_rule(a, "true", "b"); /* overridden by the worker */
    job_step(b, "b", jb, 0);
    job_step(b, "c", jc, 0);
    deploy_steps(b);
    Workflow__V1__Instance *in = start_v(as("boss"), key, 0, "{}", &(wf_client_status){0});
    Workflow__V1__Job *j = one_job(ja);

    /* Not a step: refused, nothing changed, the job stays activated. */
    wf_client_status st;
    complete_to(j, "{\"x\":1}", "nowhere", &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "UNKNOWN_STEP");
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_str_eq(current(in->id), "a");
    ck_assert(strstr(g->instance->variables_json, "\"x\"") == NULL);

    /* goto c: b and the rule are skipped. */
    complete_to(j, "{\"x\":1}", "c", &st);
    ck_ok(st);
    no_job(jb);
    ck_assert_str_eq(current(in->id), "c");
    /* goto back to a (a loop), then straight through. */
    complete_to(one_job(jc), NULL, "a", &st);
    ck_ok(st);
    ck_assert_str_eq(current(in->id), "a");
    complete_ok(one_job(ja), "{}");
    complete_ok(one_job(jb), "{}");
    complete_ok(one_job(jc), "{}");
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
    ck_assert_int_eq(count_of(event_types(in->id), "JOB_COMPLETED"), 5);

    /* next_step on a job of a NET definition. */
    char *nkey = u("net-goto"), *nj = u("nj");
    nb *n = net_new(nkey);
    place(n, "s", START);
    place(n, "e", END);
    with_job(trans(n, "t", T_AUTO), nj, 1, 0);
    arc(n, "s", "t");
    arc(n, "t", "e");
    deploy(n);
    start_v(as("boss"), nkey, 0, "{}", &st);
    ck_ok(st);
    j = one_job(nj);
    complete_to(j, NULL, "e", &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    complete_ok(j, NULL);
}
END_TEST

/* a job -> wait (signal "go" by aggregate, timeout) -> after job; late job
 * for on_timeout. */
static char *
await_list(const char *on_timeout, char **after, char **late)
{
    char *key = u("steps-await");
    *after = u("after");
    *late = u("late");
    sb *b = steps_new(key);
    await_step(b, "wait", "go", 3600 * 1000, on_timeout);
    job_step(b, "after", *after, 0);
    job_step(b, "late", *late, 0);
    deploy_steps(b);
    return key;
}

WF_TEST(test_await_signal_first)
{
    char *after, *late, *key = await_list("late", &after, &late);
    char *agg = u("o");
    Workflow__V1__Instance *in = start_order(as("boss"), key, agg, "{}", NULL);
    ck_assert_str_eq(current(in->id), "wait");
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_uint_eq(g->n_awaiting_signals, 1);
    ck_assert_str_eq(g->awaiting_signals[0]->transition_id, "wait");
    ck_assert_ptr_nonnull(g->awaiting_signals[0]->times_out_at);
    char *tid = timer_id(in->id);
    Workflow__V1__SendSignalResponse *r = send_agg("go", agg, "{\"carrier\":\"DHL\"}", 0);
    ck_assert_int_eq(r->outcome, WORKFLOW__V1__SIGNAL_OUTCOME__SIGNAL_OUTCOME_CORRELATED);
    ck_assert_str_eq(current(in->id), "after");
    ck_assert_ptr_nonnull(strstr(get_instance(in->id)->instance->variables_json, "DHL"));
    /* The timeout was withdrawn: a stale firing does nothing. */
    ck_assert(!fire_timer(in->id, tid));
    complete_ok(one_job(after), "{}");
    complete_ok(one_job(late), "{}");
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
}
END_TEST

WF_TEST(test_await_timeout_goes_to_on_timeout)
{
    char *after, *late, *key = await_list("late", &after, &late);
    char *agg = u("o");
    Workflow__V1__Instance *in = start_order(as("boss"), key, agg, "{}", NULL);
    ck_assert(fire_timer(in->id, timer_id(in->id)));
    ck_assert_str_eq(current(in->id), "late");
    no_job(after);
    /* The wait was withdrawn: the signal is dropped (no buffer). */
    Workflow__V1__SendSignalResponse *r = send_agg("go", agg, "{}", 0);
    ck_assert_int_eq(r->outcome, WORKFLOW__V1__SIGNAL_OUTCOME__SIGNAL_OUTCOME_DROPPED);
    complete_ok(one_job(late), "{}");
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
}
END_TEST

WF_TEST(test_await_timeout_fails_the_step)
{
    char *after, *late, *key = await_list(NULL, &after, &late);
    Workflow__V1__Instance *in = start_order(as("boss"), key, u("o"), "{}", NULL);
    char *old_timer = timer_id(in->id);
    ck_assert(fire_timer(in->id, old_timer));
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_FAILED);
    ck_assert_uint_eq(g->n_timers, 0);
    ck_assert_ptr_nonnull(strstr(g->last_error, "step \"wait\" timed out"));
    ck_assert_str_eq(current(in->id), "wait");
    ck_assert_int_eq(count_of(event_types(in->id), "INSTANCE_FAILED"), 1);
    no_job(after);

    /* RetryInstance: the step waits again, a whole timeout from now. */
    Workflow__V1__RetryInstanceRequest rq = WORKFLOW__V1__RETRY_INSTANCE_REQUEST__INIT;
    wf_client_status st;
    rq.instance_id = in->id;
    Workflow__V1__RetryInstanceResponse *rr = call(
        as("ops"), "RetryInstance", &rq, &workflow__v1__retry_instance_response__descriptor, &st);
    ck_ok(st);
    ck_assert_int_eq(rr->instance->status, I_RUNNING);
    g = get_instance(in->id);
    ck_assert_str_eq(g->last_error, "");
    ck_assert_uint_eq(g->n_timers, 1);
    ck_assert_str_ne(g->timers[0]->id, old_timer);
    ck_assert_str_eq(g->timers[0]->transition_id, "wait:timeout");
    send_agg("go", in->aggregate->id, "{}", 0);
    ck_assert_str_eq(current(in->id), "after");
}
END_TEST

WF_TEST(test_await_timeout_compensates)
{
    char *key = u("steps-await-saga"), *ja = u("a"), *undo = u("undo");
    sb *b = steps_new(key);
    job_step(b, "a", ja, 0)->compensation_job_type = undo;
    await_step(b, "wait", "go", 3600 * 1000, NULL);
    deploy_steps(b);
    Workflow__V1__Instance *in = start_order(as("boss"), key, u("o"), "{}", NULL);
    complete_ok(one_job(ja), "{}");
    ck_assert(fire_timer(in->id, timer_id(in->id)));
    ck_assert_int_eq(get_instance(in->id)->instance->status,
                     WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_COMPENSATING);
    complete_ok(one_job(undo), "{}");
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPENSATED);
    ck_assert_int_eq(count_of(event_types(in->id), "COMPENSATION_STARTED"), 1);
}
END_TEST

WF_TEST(test_buffered_signal_meets_a_later_await)
{
    char *key = u("steps-buf"), *first = u("first");
    sb *b = steps_new(key);
    job_step(b, "first", first, 0);
    await_step(b, "wait", "go", 0, NULL);
    deploy_steps(b);
    char *agg = u("o");
    Workflow__V1__Instance *in = start_order(as("boss"), key, agg, "{}", NULL);
    Workflow__V1__SendSignalResponse *r = send_agg("go", agg, "{\"early\":true}", 60000);
    ck_assert_int_eq(r->outcome, WORKFLOW__V1__SIGNAL_OUTCOME__SIGNAL_OUTCOME_BUFFERED);
    complete_ok(one_job(first), "{}");
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_ptr_nonnull(strstr(g->instance->variables_json, "\"early\":true"));
}
END_TEST

WF_TEST(test_sleep_and_user_steps)
{
    char *key = u("steps-su"), *last = u("last");
    sb *b = steps_new(key);
    Workflow__V1__Step *z = step(b, "nap");
    z->sleep = wf_arena_calloc(ta, 1, sizeof *z->sleep);
    workflow__v1__sleep_step__init(z->sleep);
    z->sleep->duration = dur(3600 * 1000);
    Workflow__V1__Step *ok = step(b, "approve");
    ok->name = "Approve the order";
    ok->user = wf_arena_calloc(ta, 1, sizeof *ok->user);
    workflow__v1__user_step__init(ok->user);
    ok->user->assignee = wf_arena_calloc(ta, 1, sizeof *ok->user->assignee);
    workflow__v1__assignee__init(ok->user->assignee);
    ok->user->assignee->kind = A_USER;
    ok->user->assignee->ids = (char *[]){"alice"};
    ok->user->assignee->n_ids = 1;
    next_rule(ok, ".approved == false", "approve"); /* ask again */
    job_step(b, "last", last, 0);
    deploy_steps(b);

    Workflow__V1__Instance *in = start_v(as("boss"), key, 0, "{}", &(wf_client_status){0});
    ck_assert_str_eq(current(in->id), "nap");
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_str_eq(g->current_steps[0]->name, "nap");
    ck_assert_str_eq(g->timers[0]->transition_id, "nap");
    ck_assert(fire_timer(in->id, timer_id(in->id)));
    g = get_instance(in->id);
    ck_assert_str_eq(current(in->id), "approve");
    ck_assert_str_eq(g->current_steps[0]->name, "Approve the order");
    ck_assert_uint_eq(g->n_tasks, 1);
    ck_assert_str_eq(g->tasks[0]->transition_id, "approve");
    ck_assert_str_eq(g->tasks[0]->title, "Approve the order");

    Workflow__V1__CompleteTaskRequest req = WORKFLOW__V1__COMPLETE_TASK_REQUEST__INIT;
    wf_client_status st;
    req.task_id = g->tasks[0]->id;
    req.variables_json = "{\"approved\":false}";
    call(as("alice"), "CompleteTask", &req, &workflow__v1__complete_task_response__descriptor, &st);
    ck_ok(st);
    g = get_instance(in->id);
    ck_assert_str_eq(current(in->id), "approve");
    ck_assert_uint_eq(g->n_tasks, 2);
    Workflow__V1__Task *open = g->tasks[0]->status == TS_OPEN ? g->tasks[0] : g->tasks[1];
    req.task_id = open->id;
    req.variables_json = "{\"approved\":true}";
    call(as("alice"), "CompleteTask", &req, &workflow__v1__complete_task_response__descriptor, &st);
    ck_ok(st);
    ck_assert_str_eq(current(in->id), "last");
    complete_ok(one_job(last), "{}");
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
}
END_TEST

/* A user step for several people: its join names the step's USER
 * transition, for ALL and for ANY. */
WF_TEST(test_user_step_join_names_its_transition)
{
    static const Workflow__V1__CompletionMode modes[] = {
        WORKFLOW__V1__COMPLETION_MODE__COMPLETION_MODE_ALL,
        WORKFLOW__V1__COMPLETION_MODE__COMPLETION_MODE_ANY};
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        char *key = u("steps-join");
        sb *b = steps_new(key);
        Workflow__V1__Step *ok = step(b, "sign");
        ok->user = wf_arena_calloc(ta, 1, sizeof *ok->user);
        workflow__v1__user_step__init(ok->user);
        ok->user->assignee = wf_arena_calloc(ta, 1, sizeof *ok->user->assignee);
        workflow__v1__assignee__init(ok->user->assignee);
        ok->user->assignee->kind = A_USERS;
        ok->user->assignee->ids = (char *[]){"alice", "bob"};
        ok->user->assignee->n_ids = 2;
        ok->user->completion = wf_arena_calloc(ta, 1, sizeof *ok->user->completion);
        workflow__v1__completion_policy__init(ok->user->completion);
        ok->user->completion->mode = modes[m];
        deploy_steps(b);

        Workflow__V1__Instance *in = start_v(as("boss"), key, 0, "{}", &(wf_client_status){0});
        Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
        ck_assert_uint_eq(g->n_tasks, 2);
        ck_assert_uint_eq(g->n_joins, 1);
        ck_assert_str_eq(g->joins[0]->instance_id, in->id);
        ck_assert_str_eq(g->joins[0]->transition_id, g->tasks[0]->transition_id);
        ck_assert_str_eq(g->joins[0]->transition_id, "sign");
        ck_assert_int_eq(g->joins[0]->mode, modes[m]);
        ck_assert_int_eq(g->joins[0]->required, m == 0 ? 2 : 1);
        ck_assert_int_eq(g->joins[0]->total, 2);
    }
}
END_TEST

WF_TEST(test_retries_reset_per_step)
{
    char *key = u("steps-retry"), *ja = u("a"), *jb = u("b");
    sb *b = steps_new(key);
    job_step(b, "a", ja, 2);
    job_step(b, "b", jb, 2);
    deploy_steps(b);
    Workflow__V1__Instance *in = start_v(as("boss"), key, 0, "{}", &(wf_client_status){0});
    wf_client_status st;
    Workflow__V1__Job *j = one_job(ja);
    ck_assert_int_eq(j->attempt, 1);
    fail_job(j->key, "flaky", 1, 0, &st);
    ck_ok(st);
    j = one_job(ja);
    ck_assert_int_eq(j->attempt, 2);
    complete_ok(j, "{}");
    /* The next step starts with every attempt. */
    j = one_job(jb);
    ck_assert_int_eq(j->attempt, 1);
    ck_assert_int_eq(j->max_attempts, 2);
    fail_job(j->key, "flaky", 1, 0, &st);
    ck_ok(st);
    complete_ok(one_job(jb), "{}");
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
}
END_TEST

WF_TEST(test_fail_compensates_in_reverse_order)
{
    char *key = u("steps-saga"), *ja = u("a"), *jb = u("b"), *jc = u("c"), *ua = u("undo-a"),
         *ub = u("undo-b");
    sb *b = steps_new(key);
    job_step(b, "a", ja, 0)->compensation_job_type = ua;
    job_step(b, "b", jb, 0)->compensation_job_type = ub;
    job_step(b, "c", jc, 3);
    deploy_steps(b);
    Workflow__V1__Instance *in = start_v(as("boss"), key, 0, "{}", &(wf_client_status){0});
    complete_ok(one_job(ja), "{}");
    complete_ok(one_job(jb), "{}");
    wf_client_status st;
    /* retryable=false is "fail": no other attempt. */
    fail_job(one_job(jc)->key, "card declined", 0, -1, &st);
    ck_ok(st);
    ck_assert_int_eq(get_instance(in->id)->instance->status,
                     WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_COMPENSATING);
    no_job(ua); /* one at a time, newest first */
    Workflow__V1__Job *j = one_job(ub);
    ck_assert(j->compensation);
    ck_assert_str_eq(j->transition_id, "b");
    /* A compensation job has no next step. */
    complete_to(j, NULL, "a", &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    complete_ok(j, "{}");
    complete_ok(one_job(ua), "{}");
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPENSATED);

    /* Without a compensable step, fail is an incident naming the step. */
    char *k2 = u("steps-fail"), *jx = u("x");
    sb *b2 = steps_new(k2);
    job_step(b2, "x", jx, 0);
    deploy_steps(b2);
    in = start_v(as("boss"), k2, 0, "{}", &st);
    fail_job(one_job(jx)->key, "broken", 0, -1, &st);
    ck_ok(st);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_FAILED);
    ck_assert_ptr_nonnull(strstr(g->last_error, "\"x\""));
    ck_assert_str_eq(current(in->id), "x");
}
END_TEST

WF_TEST(test_instances_keep_their_version)
{
    char *key = u("steps-pin"), *ja = u("a"), *jb = u("b");
    sb *b = steps_new(key);
    job_step(b, "a", ja, 0);
    deploy_steps(b);
    Workflow__V1__Instance *in = start_v(as("boss"), key, 0, "{}", &(wf_client_status){0});
    ck_assert_int_eq(in->definition_version, 1);
    /* Version 2 adds a step; the running instance still ends after a. */
    job_step(b, "b", jb, 0);
    ck_assert_int_eq(deploy_steps(b)->definition->version, 2);
    Workflow__V1__Job *j = one_job(ja);
    /* b is no step of version 1. */
    wf_client_status st;
    complete_to(j, NULL, "b", &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "UNKNOWN_STEP");
    complete_ok(j, "{}");
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
    no_job(jb);
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite("e2e_steps", wf_test_store_name(), setup, teardown, 60));
}
