/*
 * End-to-end tests of composition in step lists (DEFINITION_KIND_STEPS)
 * over gRPC, on the memory store and on Postgres (WF_TEST_STORE=pg):
 *   - a call step starts another step list as a child in the caller's
 *     tree, its input mapped, its output merged before the next step;
 *     GetInstance names the call step as current and lists the call;
 *   - a child failing for good is the caller's CALL_CHILD_FAILED incident
 *     at the call step; RetryInstance of the child resolves both;
 *   - cancel of the caller cancels the child, suspend holds its jobs;
 *   - a later step failing compensates the job steps before the call and
 *     leaves the completed child as it is;
 *   - for_each on a job step (ALL): a job per item with its item and index,
 *     the outputs in item order, the progress in GetInstance;
 *   - for_each on a user step (ANY): a task per approver, the first answer
 *     completes the step and cancels the other tasks;
 *   - deploy: the call and for-each fields come back from GetDefinition;
 *     bad combinations are refused at the step's paths.
 *
 * Postgres keeps rows between runs: keys and job types are unique per test
 * (u()).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/status.h>
#include <jansson.h>

#include "net_kit.h"
#include "test_support.h"
#include "workflow/v1/workflow.pb-c.h"

#define I_CANCELLED WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_CANCELLED
#define I_SUSPENDED WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_SUSPENDED
#define M_ANY WORKFLOW__V1__COMPLETION_MODE__COMPLETION_MODE_ANY

static Workflow__V1__DeployDefinitionResponse *
deploy_steps(const sb *b)
{
    wf_client_status st;
    Workflow__V1__DeployDefinitionResponse *r = deploy_d(as("dev"), &b->d, false, &st);
    ck_ok(st);
    return r;
}

/* The id of GetInstance's only current step. */
static const char *
current_step(const char *id)
{
    Workflow__V1__GetInstanceResponse *g = get_instance(id);
    ck_assert_uint_eq(g->n_current_steps, 1);
    return g->current_steps[0]->id;
}

static void
complete_ok(const char *job_key, const char *vars)
{
    wf_client_status st;
    complete_job_c(as(NULL), job_key, vars, &st);
    ck_ok(st);
}

/* A child step list of key: one job step "charge" of type, one attempt. */
static void
deploy_child(const char *key, const char *type)
{
    sb *c = steps_new(key);
    job_step(c, "charge", type, 1);
    ck_assert(deploy_steps(c)->created);
}

/* A caller step list of key: call step "pay" of child ({amount: .total}
 * in, {receipt} out), then a job step "ship" of ship_type. */
static void
deploy_caller(const char *key, const char *child, const char *ship_type)
{
    sb *b = steps_new(key);
    call_step(b, "pay", child, "{amount: .total}", "{receipt}");
    job_step(b, "ship", ship_type, 0);
    ck_assert(deploy_steps(b)->created);
}

/* ---- call steps ----------------------------------------------------------------------------- */

WF_TEST(test_call_step_uses_the_childs_output)
{
    char *child = u("payment"), *parent = u("order"), *charge = u("charge"), *ship = u("ship");
    deploy_child(child, charge);
    deploy_caller(parent, child, ship);
    Workflow__V1__Instance *in = start_boss(parent, "{\"total\": 120, \"note\": \"x\"}");
    ck_assert_int_eq(in->status, I_RUNNING);

    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_uint_eq(g->n_current_steps, 1);
    ck_assert_str_eq(g->current_steps[0]->id, "pay");
    ck_assert_uint_eq(g->n_calls, 1);
    ck_assert_str_eq(g->calls[0]->transition_id, "pay");
    ck_assert_str_eq(g->calls[0]->definition_key, child);
    ck_assert_int_eq(g->calls[0]->status, I_RUNNING);
    ck_assert_uint_eq(g->n_children, 1);
    Workflow__V1__Instance *c = g->children[0];
    ck_assert_str_eq(c->id, g->calls[0]->instance_id);
    ck_assert_str_eq(c->root_instance_id, in->id);
    ck_assert_str_eq(var_of(c->variables_json, "amount"), "120");
    ck_assert_str_eq(var_of(c->variables_json, "note"), "");
    ck_assert_str_eq(current_step(c->id), "charge");

    Workflow__V1__Job *j = one_job(charge);
    ck_assert_str_eq(j->instance_id, c->id);
    complete_ok(j->key, "{\"receipt\": \"r-1\", \"fee\": 2}");

    /* The output is merged before the next step begins: its job sees it. */
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_RUNNING);
    ck_assert_str_eq(g->current_steps[0]->id, "ship");
    ck_assert_int_eq(g->calls[0]->status, I_COMPLETED);
    j = one_job(ship);
    ck_assert_str_eq(var_of(j->variables_json, "receipt"), "\"r-1\"");
    ck_assert_str_eq(var_of(j->variables_json, "fee"), "");
    complete_ok(j->key, NULL);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
}
END_TEST

WF_TEST(test_call_step_child_failure_is_retried_on_the_child)
{
    char *child = u("payment"), *parent = u("order"), *charge = u("charge"), *ship = u("ship");
    deploy_child(child, charge);
    deploy_caller(parent, child, ship);
    Workflow__V1__Instance *in = start_boss(parent, "{\"total\": 5}");
    Workflow__V1__Job *j = one_job(charge);
    wf_client_status st;
    ck_assert_int_eq(fail_job(j->key, "card declined", 0, -1, &st), 0);

    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_FAILED);
    ck_assert_msg(strstr(g->last_error, "card declined") != NULL, "%s", g->last_error);
    ck_assert_str_eq(g->current_steps[0]->id, "pay");
    ck_assert_int_eq(g->calls[0]->status, I_FAILED);
    Workflow__V1__ListIncidentsRequest lr = WORKFLOW__V1__LIST_INCIDENTS_REQUEST__INIT;
    lr.definition_key = parent;
    Workflow__V1__ListIncidentsResponse *li = call(
        as(NULL), "ListIncidents", &lr, &workflow__v1__list_incidents_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(li->n_incidents, 1);
    ck_assert_str_eq(li->incidents[0]->code, "CALL_CHILD_FAILED");
    ck_assert_str_eq(li->incidents[0]->transition_id, "pay");

    /* Retrying the caller changes nothing; retrying the child resolves
     * both. */
    ck_assert_int_eq(retry_c(in->id, &st)->status, I_FAILED);
    ck_ok(st);
    ck_assert_int_eq(retry_c(j->instance_id, &st)->status, I_RUNNING);
    ck_ok(st);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_RUNNING);
    complete_ok(one_job(charge)->key, "{\"receipt\": \"r-2\"}");
    j = one_job(ship);
    ck_assert_str_eq(var_of(j->variables_json, "receipt"), "\"r-2\"");
    complete_ok(j->key, NULL);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
}
END_TEST

WF_TEST(test_call_step_cancel_and_suspend_reach_the_child)
{
    char *child = u("payment"), *parent = u("order"), *charge = u("charge"), *ship = u("ship");
    deploy_child(child, charge);
    deploy_caller(parent, child, ship);

    Workflow__V1__Instance *in = start_boss(parent, NULL);
    Workflow__V1__SuspendInstanceRequest sr = WORKFLOW__V1__SUSPEND_INSTANCE_REQUEST__INIT;
    sr.instance_id = in->id;
    wf_client_status st;
    call(as("ops"), "SuspendInstance", &sr, &workflow__v1__suspend_instance_response__descriptor,
         &st);
    ck_ok(st);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_SUSPENDED);
    ck_assert_uint_eq(activate(charge, 5, 0, 0)->n_jobs, 0);
    Workflow__V1__ResumeInstanceRequest rr = WORKFLOW__V1__RESUME_INSTANCE_REQUEST__INIT;
    rr.instance_id = in->id;
    call(as("ops"), "ResumeInstance", &rr, &workflow__v1__resume_instance_response__descriptor,
         &st);
    ck_ok(st);
    Workflow__V1__Job *j = one_job(charge);

    Workflow__V1__CancelInstanceRequest cr = WORKFLOW__V1__CANCEL_INSTANCE_REQUEST__INIT;
    cr.instance_id = in->id;
    call(as("ops"), "CancelInstance", &cr, &workflow__v1__cancel_instance_response__descriptor,
         &st);
    ck_ok(st);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_CANCELLED);
    ck_assert_int_eq(g->children[0]->status, I_CANCELLED);
    ck_assert_uint_eq(g->n_current_steps, 0);
    ck_assert_int_ne(complete_job_c(as(NULL), j->key, NULL, &st), 0);
}
END_TEST

/* A later step failing for good compensates the job steps before the call;
 * the call step is passed over and its completed child left as it is. */
WF_TEST(test_saga_passes_over_a_completed_call_step)
{
    char *child = u("payment"), *parent = u("order"), *charge = u("charge");
    char *reserve = u("reserve"), *release = u("release"), *ship = u("ship");
    deploy_child(child, charge);
    sb *b = steps_new(parent);
    job_step(b, "reserve", reserve, 0)->compensation_job_type = release;
    call_step(b, "pay", child, NULL, "{receipt}");
    job_step(b, "ship", ship, 1);
    deploy_steps(b);
    Workflow__V1__Instance *in = start_boss(parent, NULL);
    complete_ok(one_job(reserve)->key, NULL);
    complete_ok(one_job(charge)->key, "{\"receipt\": \"r-3\"}");
    wf_client_status st;
    ck_assert_int_eq(fail_job(one_job(ship)->key, "no carrier", 0, -1, &st), 0);
    Workflow__V1__Job *j = one_job(release);
    ck_assert(j->compensation);
    ck_assert_str_eq(j->transition_id, "reserve");
    ck_assert_str_eq(var_of(j->variables_json, "receipt"), "\"r-3\"");
    complete_ok(j->key, NULL);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status,
                     WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_COMPENSATED);
    ck_assert_int_eq(g->children[0]->status, I_COMPLETED);
    ck_assert_uint_eq(activate(charge, 5, 0, 0)->n_jobs, 0);
}
END_TEST

/* ---- for_each -------------------------------------------------------------------------------- */

WF_TEST(test_for_each_job_step_all_collects_outputs_in_item_order)
{
    char *key = u("lines"), *charge = u("charge"), *after = u("after");
    sb *b = steps_new(key);
    step_for_each(job_step(b, "charge", charge, 0), ".lines", "line", "charged", 0, 0);
    job_step(b, "after", after, 0);
    deploy_steps(b);
    Workflow__V1__Instance *in = start_boss(key, "{\"lines\": [\"a\", \"b\", \"c\"]}");

    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_str_eq(g->current_steps[0]->id, "charge");
    ck_assert_uint_eq(g->n_for_each, 1);
    ck_assert_str_eq(g->for_each[0]->transition_id, "charge");
    ck_assert_int_eq(g->for_each[0]->total, 3);
    ck_assert_int_eq(g->for_each[0]->completed, 0);
    ck_assert_int_eq(g->for_each[0]->required, 3);

    Workflow__V1__ActivateJobsResponse *r = activate(charge, 4, 0, 500);
    ck_assert_uint_eq(r->n_jobs, 3);
    /* Complete in reverse item order; each output names its item. */
    for (size_t k = 3; k-- > 0;) {
        const Workflow__V1__Job *j = r->jobs[k];
        const char *line = var_of(j->variables_json, "line");
        const char *ix = var_of(j->variables_json, "line_index");
        ck_assert_msg(ix[0] != '\0', "no line_index in %s", j->variables_json);
        char out[64];
        snprintf(out, sizeof out, "{\"done\": %s, \"at\": %s}", line, ix);
        complete_ok(j->key, out);
    }
    g = get_instance(in->id);
    ck_assert_str_eq(g->current_steps[0]->id, "after");
    ck_assert_uint_eq(g->n_for_each, 0);
    json_t *charged = json_loads(var_of(g->instance->variables_json, "charged"), 0, NULL);
    ck_assert_msg(json_is_array(charged) && json_array_size(charged) == 3, "%s",
                  g->instance->variables_json);
    static const char *const want[] = {"a", "b", "c"};
    for (size_t k = 0; k < 3; k++) {
        json_t *e = json_array_get(charged, k);
        ck_assert_str_eq(json_string_value(json_object_get(e, "done")), want[k]);
        ck_assert_int_eq(json_integer_value(json_object_get(e, "at")), (json_int_t)k);
    }
    json_decref(charged);
    ck_assert_str_eq(var_of(g->instance->variables_json, "done"), "");
    complete_ok(one_job(after)->key, NULL);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
}
END_TEST

/* A call step with for_each: one child per item, the outputs in item
 * order, then the next step. */
WF_TEST(test_for_each_call_step_calls_once_per_item)
{
    char *child = u("payment"), *key = u("lines"), *charge = u("charge"), *after = u("after");
    deploy_child(child, charge);
    sb *b = steps_new(key);
    step_for_each(call_step(b, "pay", child, "{amount: .line}", "{receipt}"), ".lines", "line",
                  "paid", 0, 0);
    job_step(b, "after", after, 0);
    deploy_steps(b);
    Workflow__V1__Instance *in = start_boss(key, "{\"lines\": [5, 7, 9]}");

    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_str_eq(g->current_steps[0]->id, "pay");
    ck_assert_uint_eq(g->n_calls, 3);
    ck_assert_uint_eq(g->n_for_each, 1);
    ck_assert_int_eq(g->for_each[0]->total, 3);
    Workflow__V1__ActivateJobsResponse *r = activate(charge, 4, 0, 500);
    ck_assert_uint_eq(r->n_jobs, 3);
    for (size_t k = 3; k-- > 0;) { /* out of item order */
        const Workflow__V1__Job *j = r->jobs[k];
        char out[64];
        snprintf(out, sizeof out, "{\"receipt\": \"r-%s\"}", var_of(j->variables_json, "amount"));
        complete_ok(j->key, out);
    }
    g = get_instance(in->id);
    ck_assert_str_eq(g->current_steps[0]->id, "after");
    json_t *paid = json_loads(var_of(g->instance->variables_json, "paid"), 0, NULL);
    ck_assert_msg(json_is_array(paid) && json_array_size(paid) == 3, "%s",
                  g->instance->variables_json);
    static const char *const want[] = {"r-5", "r-7", "r-9"};
    for (size_t k = 0; k < 3; k++)
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(paid, k), "receipt")),
                         want[k]);
    json_decref(paid);
    complete_ok(one_job(after)->key, NULL);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
}
END_TEST

WF_TEST(test_for_each_user_step_any_cancels_the_other_tasks)
{
    char *key = u("approve");
    sb *b = steps_new(key);
    step_for_each(user_step(b, "ask", NULL, ".approver"), ".approvers", "approver", "answers",
                  M_ANY, 0);
    deploy_steps(b);
    Workflow__V1__Instance *in = start_boss(key, "{\"approvers\": [\"ann\", \"ben\", \"cy\"]}");
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_str_eq(g->current_steps[0]->id, "ask");
    ck_assert_uint_eq(g->n_for_each, 1);
    ck_assert_int_eq(g->for_each[0]->total, 3);
    ck_assert_int_eq(g->for_each[0]->required, 1);
    ck_assert_uint_eq(g->n_tasks, 3);
    const char *ben = NULL;
    for (size_t i = 0; i < g->n_tasks; i++) {
        ck_assert_int_eq(g->tasks[i]->status, TS_OPEN);
        ck_assert_str_eq(g->tasks[i]->transition_id, "ask");
        if (strcmp(g->tasks[i]->assignee_id, "ben") == 0)
            ben = g->tasks[i]->id;
    }
    ck_assert_ptr_nonnull(ben);
    wf_client_status st;
    complete_task_as("ben", ben, "{\"ok\": true}", &st);
    ck_ok(st);

    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_str_eq(var_of(g->instance->variables_json, "answers"), "[null,{\"ok\":true},null]");
    int cancelled = 0;
    for (size_t i = 0; i < g->n_tasks; i++)
        cancelled += g->tasks[i]->status == TS_CANCELLED;
    ck_assert_int_eq(cancelled, 2);
}
END_TEST

/* ---- deploy ---------------------------------------------------------------------------------- */

WF_TEST(test_deploy_keeps_call_and_for_each_fields)
{
    char *key = u("shape"), *child = u("child");
    sb *b = steps_new(key);
    Workflow__V1__Step *c = call_step(b, "pay", child, "{a: .x}", "{r}");
    c->call->version = 2;
    step_for_each(job_step(b, "each", u("t"), 0), ".xs", "x", "ys", M_ANY, 0);
    Workflow__V1__Definition *d = deploy_steps(b)->definition;
    ck_assert_uint_eq(d->n_steps, 2);
    ck_assert_ptr_nonnull(d->steps[0]->call);
    ck_assert_str_eq(d->steps[0]->call->definition_key, child);
    ck_assert_int_eq(d->steps[0]->call->version, 2);
    ck_assert_str_eq(d->steps[0]->call->input_expression, "{a: .x}");
    ck_assert_str_eq(d->steps[0]->call->output_expression, "{r}");
    ck_assert_str_eq(d->steps[1]->for_each, ".xs");
    ck_assert_str_eq(d->steps[1]->for_each_item, "x");
    ck_assert_str_eq(d->steps[1]->for_each_output, "ys");
    ck_assert_ptr_nonnull(d->steps[1]->for_each_completion);
    ck_assert_int_eq(d->steps[1]->for_each_completion->mode, M_ANY);
    /* The compiled net: a CALL transition named after the step. */
    int found = 0;
    for (size_t i = 0; i < d->n_transitions; i++)
        if (strcmp(d->transitions[i]->id, "pay") == 0) {
            ck_assert_int_eq(d->transitions[i]->trigger, WORKFLOW__V1__TRIGGER__TRIGGER_CALL);
            ck_assert_str_eq(d->transitions[i]->call_definition_key, child);
            found++;
        }
    ck_assert_int_eq(found, 1);
}
END_TEST

WF_TEST(test_deploy_refuses_bad_combinations_at_step_paths)
{
    wf_client_status st;
    sb *b = steps_new(u("bad"));
    call_step(b, "nokey", "", NULL, NULL);
    Workflow__V1__Step *w = step(b, "wait");
    w->await_signal = wf_arena_calloc(ta, 1, sizeof *w->await_signal);
    workflow__v1__await_step__init(w->await_signal);
    w->await_signal->signal_name = "go";
    step_for_each(w, ".xs", NULL, NULL, 0, 0);
    Workflow__V1__Step *z = step(b, "nap");
    z->sleep = wf_arena_calloc(ta, 1, sizeof *z->sleep);
    workflow__v1__sleep_step__init(z->sleep);
    z->sleep->duration = dur(1000);
    z->for_each_sequential = true;
    call_step(b, "maps", "x", "{", NULL)->compensation_job_type = "undo";
    ck_assert_ptr_null(deploy_d(as("dev"), &b->d, false, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "DEFINITION_INVALID");
    ck_assert(has_violation(&st, "definition.steps[0].call.definition_key", "CALL_KEY_MISSING"));
    ck_assert(has_violation(&st, "definition.steps[1].for_each", "STEP_FIELD_CONFLICT"));
    ck_assert(has_violation(&st, "definition.steps[2].for_each", "STEP_FIELD_CONFLICT"));
    ck_assert(
        has_violation(&st, "definition.steps[3].call.input_expression", "EXPRESSION_INVALID"));
    ck_assert(
        has_violation(&st, "definition.steps[3].compensation_job_type", "STEP_FIELD_CONFLICT"));

    /* require_deployed: the key must have a definition at deploy. */
    char *later = u("later");
    b = steps_new(u("strict"));
    call_step(b, "pay", later, NULL, NULL)->call->require_deployed = true;
    ck_assert_ptr_null(deploy_d(as("dev"), &b->d, false, &st));
    ck_assert(
        has_violation(&st, "definition.steps[0].call.definition_key", "CALL_DEFINITION_NOT_FOUND"));
    deploy_child(later, u("charge"));
    ck_assert_ptr_nonnull(deploy_d(as("dev"), &b->d, false, &st));
    ck_ok(st);
}
END_TEST

int
main(void)
{
    return wf_test_run(
        wf_test_suite("e2e_steps_compose", wf_test_store_name(), setup, teardown, 60));
}
