/*
 * End-to-end tests of for-each (multi-instance) AUTO transitions, on the
 * memory store and on Postgres (WF_TEST_STORE=pg), through a real gRPC
 * client: one job per item with the item and its index in its variables,
 * the outputs collected in item order, the joins ALL, ANY and QUORUM
 * (the remaining items withdrawn once), sequential items one at a time,
 * GetInstance's progress, the incidents of an expression that gives no
 * array, an empty one or too many items, a failed item's incident and its
 * retry, the deploy's refusals, and 32 concurrent completions of one
 * for-each (ALL and QUORUM): every item once, the join once.
 *
 * Job types and keys are unique per test (Postgres keeps rows between
 * runs).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/status.h>
#include <jansson.h>

#include "net_kit.h"
#include "test_support.h"
#include "workflow/v1/workflow.pb-c.h"

#define M_ALL WORKFLOW__V1__COMPLETION_MODE__COMPLETION_MODE_ALL
#define M_ANY WORKFLOW__V1__COMPLETION_MODE__COMPLETION_MODE_ANY
#define M_QUORUM WORKFLOW__V1__COMPLETION_MODE__COMPLETION_MODE_QUORUM

static void
setup_max3(void)
{
    static const char *env[] = {"WF_FOREACH_MAX_ITEMS=3", NULL};
    setup_with(env);
}

/* s -> each (AUTO job of type, for_each .lines, output "charged") -> e,
 * with join mode (0 = unset) and quorum; deployed, its transition. */
static Workflow__V1__Transition *
each_net(const char *type, Workflow__V1__CompletionMode mode, int quorum, bool sequential,
         const char **key)
{
    nb *n = job_net(u("each"), type, 1, 0);
    Workflow__V1__Transition *t = n->t[0];
    t->for_each = ".lines";
    t->for_each_output = "charged";
    t->for_each_sequential = sequential;
    if (mode != 0) {
        Workflow__V1__CompletionPolicy *c = wf_arena_calloc(ta, 1, sizeof *c);
        workflow__v1__completion_policy__init(c);
        c->mode = mode;
        c->quorum = quorum;
        t->for_each_completion = c;
    }
    deploy(n);
    *key = n->d.key;
    return t;
}

/* {"lines": [{"sku": "s0"}, ... ]} of n lines (in ta). */
static const char *
lines_of(int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_pack("{s:s+}", "sku", "s", wf_arena_printf(ta, "%d", i)));
    return json_in_ta(json_pack("{s:o}", "lines", a));
}

/* The index of job j's item, checked against its item. */
static int
item_index(const Workflow__V1__Job *j)
{
    json_t *v = json_parsed(j->variables_json);
    json_t *ix = json_object_get(v, "item_index");
    ck_assert_msg(json_is_integer(ix), "no item_index in %s", j->variables_json);
    int i = (int)json_integer_value(ix);
    char want[16];
    snprintf(want, sizeof want, "s%d", i);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(v, "item"), "sku")), want);
    json_decref(v);
    return i;
}

/* Activates exactly n jobs of type (the test fails otherwise). */
static Workflow__V1__ActivateJobsResponse *
take_jobs(const char *type, int n)
{
    Workflow__V1__ActivateJobsResponse *r = activate(type, n + 1, 0, 500);
    ck_assert_msg(r->n_jobs == (size_t)n, "%zu jobs of %s, want %d", r->n_jobs, type, n);
    return r;
}

static void
complete_ok(const char *key, const char *vars)
{
    wf_client_status st;
    complete_job_c(as(NULL), key, vars, &st);
    ck_ok(st);
}

/* The for-each progress of instance id's only for-each transition. */
static Workflow__V1__ForEachProgress *
progress(const char *id)
{
    Workflow__V1__GetInstanceResponse *g = get_instance(id);
    ck_assert_uint_eq(g->n_for_each, 1);
    return g->for_each[0];
}

static int
count_type(const char *root, const char *type)
{
    size_t n;
    wf_event_row *ev = events_of(root, &n);
    int k = 0;
    for (size_t i = 0; i < n; i++)
        k += strcmp(ev[i].type, type) == 0;
    return k;
}

/* The instance's "charged" variable. */
static json_t *
charged(const char *id)
{
    Workflow__V1__GetInstanceResponse *g = get_instance(id);
    json_t *v = json_parsed(g->instance->variables_json);
    json_t *c = json_incref(json_object_get(v, "charged"));
    json_decref(v);
    ck_assert_msg(json_is_array(c), "charged: %s", g->instance->variables_json);
    return c;
}

static int
amount_at(json_t *arr, size_t i)
{
    return (int)json_integer_value(json_object_get(json_array_get(arr, i), "amount"));
}

/* ---- joins ------------------------------------------------------------------------------ */

WF_CASE_TEST("default", test_parallel_all_collects_outputs_in_item_order)
{
    char *type = u("charge");
    const char *key;
    each_net(type, 0, 0, false, &key);
    Workflow__V1__Instance *in = start_boss(key, lines_of(3));
    Workflow__V1__ForEachProgress *p = progress(in->id);
    ck_assert_int_eq(p->total, 3);
    ck_assert_int_eq(p->completed, 0);
    ck_assert_int_eq(p->required, 3);
    ck_assert_int_eq(p->mode, M_ALL);
    ck_assert(!p->sequential);
    ck_assert_str_eq(p->transition_id, "work");
    Workflow__V1__ActivateJobsResponse *r = take_jobs(type, 3);
    /* Completed last item first: the outputs still land in item order. */
    int order[3];
    for (int k = 0; k < 3; k++)
        order[k] = item_index(r->jobs[k]);
    for (int k = 2; k >= 0; k--) {
        char vars[64];
        snprintf(vars, sizeof vars, "{\"amount\": %d}", order[k] * 10);
        complete_ok(r->jobs[k]->key, vars);
        if (k > 0) {
            ck_assert_int_eq(progress(in->id)->completed, 3 - k);
            ck_assert_int_eq(get_instance(in->id)->instance->status, I_RUNNING);
        }
    }
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_uint_eq(g->n_for_each, 0);
    json_t *c = charged(in->id);
    ck_assert_uint_eq(json_array_size(c), 3);
    for (size_t i = 0; i < 3; i++)
        ck_assert_int_eq(amount_at(c, i), (int)i * 10);
    json_decref(c);
    /* An item's output is merged only as an element of the array. */
    json_t *v = json_parsed(g->instance->variables_json);
    ck_assert_ptr_null(json_object_get(v, "amount"));
    json_decref(v);
    ck_assert_int_eq(count_type(in->id, "FOREACH_ITEM_COMPLETED"), 3);
    ck_assert_int_eq(count_type(in->id, "TRANSITION_FIRED"), 1);
    ck_assert_int_eq(count_type(in->id, "FOREACH_ITEMS_WITHDRAWN"), 0);
}
END_TEST

/* ANY and QUORUM: the join at the k-th completion, the rest withdrawn once. */
static void
check_partial_join(Workflow__V1__CompletionMode mode, int quorum, int items)
{
    char *type = u("approve");
    const char *key;
    each_net(type, mode, quorum, false, &key);
    Workflow__V1__Instance *in = start_boss(key, lines_of(items));
    int need = mode == M_ANY ? 1 : quorum;
    ck_assert_int_eq(progress(in->id)->required, need);
    Workflow__V1__ActivateJobsResponse *r = take_jobs(type, items);
    for (int k = 0; k < need; k++) {
        char vars[64];
        snprintf(vars, sizeof vars, "{\"amount\": %d}", item_index(r->jobs[k]) + 1);
        complete_ok(r->jobs[k]->key, vars);
    }
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
    /* The withdrawn items' jobs are gone: their completion is refused. */
    for (int k = need; k < items; k++) {
        wf_client_status st;
        complete_job_c(as(NULL), r->jobs[k]->key, "{\"amount\": 99}", &st);
        ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "JOB_LEASE_LOST");
    }
    ck_assert_int_eq(count_type(in->id, "FOREACH_ITEMS_WITHDRAWN"), 1);
    ck_assert_int_eq(count_type(in->id, "FOREACH_ITEM_COMPLETED"), need);
    ck_assert_int_eq(count_type(in->id, "TRANSITION_FIRED"), 1);
    json_t *c = charged(in->id);
    ck_assert_uint_eq(json_array_size(c), (size_t)items);
    int set = 0;
    for (int i = 0; i < items; i++) {
        json_t *e = json_array_get(c, (size_t)i);
        if (json_is_null(e))
            continue;
        set++;
        ck_assert_int_eq(amount_at(c, (size_t)i), i + 1);
    }
    ck_assert_int_eq(set, need);
    json_decref(c);
}

WF_CASE_TEST("default", test_parallel_any_withdraws_the_rest)
{
    check_partial_join(M_ANY, 0, 3);
}
END_TEST

WF_CASE_TEST("default", test_parallel_quorum_withdraws_the_rest)
{
    check_partial_join(M_QUORUM, 3, 5);
}
END_TEST

WF_CASE_TEST("default", test_sequential_runs_items_one_at_a_time)
{
    char *type = u("seq");
    const char *key;
    each_net(type, 0, 0, true, &key);
    Workflow__V1__Instance *in = start_boss(key, lines_of(3));
    ck_assert(progress(in->id)->sequential);
    for (int i = 0; i < 3; i++) {
        Workflow__V1__ActivateJobsResponse *r = take_jobs(type, 1);
        ck_assert_int_eq(item_index(r->jobs[0]), i);
        char vars[64];
        snprintf(vars, sizeof vars, "{\"amount\": %d}", i);
        complete_ok(r->jobs[0]->key, vars);
    }
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
    json_t *c = charged(in->id);
    for (size_t i = 0; i < 3; i++)
        ck_assert_int_eq(amount_at(c, i), (int)i);
    json_decref(c);
}
END_TEST

WF_CASE_TEST("default", test_sequential_quorum_stops_starting_items)
{
    char *type = u("seqq");
    const char *key;
    each_net(type, M_QUORUM, 2, true, &key);
    Workflow__V1__Instance *in = start_boss(key, lines_of(4));
    for (int i = 0; i < 2; i++)
        complete_ok(take_jobs(type, 1)->jobs[0]->key, "{\"amount\": 1}");
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
    ck_assert_uint_eq(activate(type, 5, 0, 0)->n_jobs, 0);
    /* No item was running when the join fired: nothing to withdraw. */
    ck_assert_int_eq(count_type(in->id, "FOREACH_ITEMS_WITHDRAWN"), 0);
}
END_TEST

/* ---- tasks ------------------------------------------------------------------------------ */

/* s -> ask (USER, one task per approver of .approvers, assigned to the
 * item; output "answers") -> e; deployed, its key. */
static const char *
task_net(Workflow__V1__CompletionMode mode, int quorum, bool sequential)
{
    nb *n = one_step(u("ask"), "ask", T_USER);
    Workflow__V1__Transition *t = n->t[0];
    t->assignee = wf_arena_calloc(ta, 1, sizeof *t->assignee);
    workflow__v1__assignee__init(t->assignee);
    t->assignee->kind = A_USER;
    t->assignee->ids_expression = ".approver";
    t->for_each = ".approvers";
    t->for_each_item = "approver";
    t->for_each_output = "answers";
    t->for_each_sequential = sequential;
    if (mode != 0) {
        Workflow__V1__CompletionPolicy *c = wf_arena_calloc(ta, 1, sizeof *c);
        workflow__v1__completion_policy__init(c);
        c->mode = mode;
        c->quorum = quorum;
        t->for_each_completion = c;
    }
    deploy(n);
    return n->d.key;
}

/* The task of instance id assigned to who, with status (0 = any). */
static Workflow__V1__Task *
task_for(const char *id, const char *who, int status)
{
    Workflow__V1__GetInstanceResponse *g = get_instance(id);
    for (size_t i = 0; i < g->n_tasks; i++)
        if (strcmp(g->tasks[i]->assignee_id, who) == 0 &&
            (status == 0 || (int)g->tasks[i]->status == status))
            return g->tasks[i];
    return NULL;
}

static void
answer(const char *id, const char *who, const char *vars)
{
    Workflow__V1__Task *t = task_for(id, who, TS_OPEN);
    ck_assert_msg(t != NULL, "no open task for %s", who);
    wf_client_status st;
    complete_task_as(who, t->id, vars, &st);
    ck_ok(st);
}

#define APPROVERS "{\"approvers\": [\"ann\", \"ben\", \"cy\"]}"

WF_CASE_TEST("default", test_tasks_all_one_per_approver)
{
    const char *key = task_net(0, 0, false);
    Workflow__V1__Instance *in = start_boss(key, APPROVERS);
    ck_assert_uint_eq(get_instance(in->id)->n_tasks, 3);
    ck_assert_int_eq(progress(in->id)->total, 3);
    answer(in->id, "cy", "{\"ok\": 3}");
    answer(in->id, "ann", "{\"ok\": 1}");
    ck_assert_int_eq(progress(in->id)->completed, 2);
    ck_assert_uint_eq(get_instance(in->id)->n_joins, 0);
    answer(in->id, "ben", "{\"ok\": 2}");
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    json_t *v = json_parsed(g->instance->variables_json);
    json_t *a = json_object_get(v, "answers");
    ck_assert_uint_eq(json_array_size(a), 3);
    for (size_t i = 0; i < 3; i++)
        ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(a, i), "ok")),
                         (int)i + 1);
    ck_assert_ptr_null(json_object_get(v, "ok"));
    json_decref(v);
    ck_assert_int_eq(count_type(in->id, "FOREACH_ITEM_COMPLETED"), 3);
}
END_TEST

WF_CASE_TEST("default", test_tasks_quorum_cancels_the_rest_once)
{
    const char *key = task_net(M_QUORUM, 2, false);
    Workflow__V1__Instance *in = start_boss(key, APPROVERS);
    answer(in->id, "ben", "{\"ok\": true}");
    answer(in->id, "cy", "{\"ok\": false}");
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
    Workflow__V1__Task *left = task_for(in->id, "ann", 0);
    ck_assert_ptr_nonnull(left);
    ck_assert_int_eq(left->status, TS_CANCELLED);
    wf_client_status st;
    complete_task_as("ann", left->id, NULL, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "TASK_NOT_OPEN");
    ck_assert_int_eq(count_type(in->id, "FOREACH_ITEMS_WITHDRAWN"), 1);
    ck_assert_int_eq(count_type(in->id, "TRANSITION_FIRED"), 1);
}
END_TEST

WF_CASE_TEST("default", test_tasks_any_sequential)
{
    const char *key = task_net(M_ANY, 0, true);
    Workflow__V1__Instance *in = start_boss(key, APPROVERS);
    /* One at a time: only the first approver has a task. */
    ck_assert_uint_eq(get_instance(in->id)->n_tasks, 1);
    ck_assert_ptr_nonnull(task_for(in->id, "ann", TS_OPEN));
    answer(in->id, "ann", NULL);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_uint_eq(g->n_tasks, 1);
}
END_TEST

WF_CASE_TEST("default", test_tasks_sequential_all_in_order)
{
    const char *key = task_net(0, 0, true);
    Workflow__V1__Instance *in = start_boss(key, APPROVERS);
    const char *who[3] = {"ann", "ben", "cy"};
    for (int i = 0; i < 3; i++) {
        ck_assert_uint_eq(get_instance(in->id)->n_tasks, (size_t)i + 1);
        answer(in->id, who[i], NULL);
    }
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
}
END_TEST

/* ---- incidents ---------------------------------------------------------------------------- */

/* s -> prep (job) -> p -> work (for-each job) -> e. */
static const char *
prep_net(const char *prep_type, const char *type)
{
    nb *n = net_new(u("prep"));
    place(n, "s", START);
    place(n, "p", NORMAL);
    place(n, "e", END);
    with_job(trans(n, "prep", T_AUTO), prep_type, 1, 0);
    Workflow__V1__Transition *t = trans(n, "work", T_AUTO);
    with_job(t, type, 1, 0);
    t->for_each = ".lines";
    arc(n, "s", "prep");
    arc(n, "prep", "p");
    arc(n, "p", "work");
    arc(n, "work", "e");
    deploy(n);
    return n->d.key;
}

static Workflow__V1__Incident *
incident_of(const char *key, const char *id)
{
    Workflow__V1__ListIncidentsRequest req = WORKFLOW__V1__LIST_INCIDENTS_REQUEST__INIT;
    req.definition_key = (char *)key;
    wf_client_status st;
    Workflow__V1__ListIncidentsResponse *r = call(
        as("ops"), "ListIncidents", &req, &workflow__v1__list_incidents_response__descriptor, &st);
    ck_ok(st);
    for (size_t i = 0; i < r->n_incidents; i++)
        if (strcmp(r->incidents[i]->instance_id, id) == 0)
            return r->incidents[i];
    return NULL;
}

/* prep completes with vars: the for-each's incident has code; fixed by
 * SetVariables and RetryInstance, the items run. */
static void
check_incident(const char *vars, const char *code)
{
    char *prep = u("prep"), *type = u("line");
    const char *key = prep_net(prep, type);
    Workflow__V1__Instance *in = start_boss(key, NULL);
    complete_ok(one_job(prep)->key, vars);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_FAILED);
    Workflow__V1__Incident *inc = incident_of(key, in->id);
    ck_assert_ptr_nonnull(inc);
    ck_assert_str_eq(inc->code, code);
    wf_client_status st;
    set_vars(in->id, lines_of(2), &st);
    ck_ok(st);
    retry_c(in->id, &st);
    ck_ok(st);
    complete_ok(one_job(prep)->key, NULL);
    Workflow__V1__ActivateJobsResponse *r = take_jobs(type, 2);
    complete_ok(r->jobs[0]->key, NULL);
    complete_ok(r->jobs[1]->key, NULL);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
}

WF_CASE_TEST("default", test_not_an_array_is_an_incident)
{
    check_incident("{\"lines\": {\"sku\": \"a\"}}", "FOREACH_NOT_ARRAY");
}
END_TEST

WF_CASE_TEST("default", test_empty_array_is_an_incident)
{
    check_incident("{\"lines\": []}", "FOREACH_EMPTY");
}
END_TEST

WF_CASE_TEST("max3", test_too_many_items_is_an_incident)
{
    check_incident(lines_of(4), "FOREACH_TOO_MANY");
}
END_TEST

WF_CASE_TEST("max3", test_start_refuses_items_it_cannot_run)
{
    char *type = u("start");
    const char *key;
    each_net(type, 0, 0, false, &key);
    wf_client_status st;
    ck_assert_ptr_null(start_v(as("boss"), key, 0, lines_of(4), &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "FOREACH_TOO_MANY");
    ck_assert_ptr_null(start_v(as("boss"), key, 0, "{\"lines\": 7}", &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "FOREACH_NOT_ARRAY");
    ck_assert_ptr_nonnull(start_v(as("boss"), key, 0, lines_of(3), &st));
    ck_ok(st);
}
END_TEST

WF_CASE_TEST("default", test_failed_item_is_an_incident_and_retried_alone)
{
    char *type = u("flaky");
    const char *key;
    each_net(type, 0, 0, false, &key);
    Workflow__V1__Instance *in = start_boss(key, lines_of(3));
    Workflow__V1__ActivateJobsResponse *r = take_jobs(type, 3);
    int failed = item_index(r->jobs[1]);
    complete_ok(r->jobs[0]->key, "{\"amount\": 1}");
    wf_client_status st;
    ck_assert_int_eq(fail_job(r->jobs[1]->key, "card declined", 0, -1, &st), 0);
    ck_ok(st);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_FAILED);
    ck_assert_str_eq(incident_of(key, in->id)->code, "JOB_FAILED");
    /* While the incident is open the other item's lease is not honoured. */
    complete_job_c(as(NULL), r->jobs[2]->key, "{\"amount\": 3}", &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "JOB_LEASE_LOST");
    retry_c(in->id, &st);
    ck_ok(st);
    /* The retried item's job keeps its item; the other one is taken again
     * once its lease expires, so take both as they come. */
    Workflow__V1__Job *again = one_job(type);
    ck_assert_int_eq(item_index(again), failed);
    complete_ok(again->key, "{\"amount\": 2}");
    ck_assert_int_eq(progress(in->id)->completed, 2);
}
END_TEST

/* ---- deploy ---------------------------------------------------------------------------- */

WF_CASE_TEST("default", test_deploy_refuses_bad_for_each)
{
    wf_client_status st;
    nb *n = job_net(u("bad"), u("t"), 1, 0);
    n->t[0]->for_each = ".lines | (";
    ck_assert_ptr_null(deploy_d(as("dev"), &n->d, false, &st));
    ck_assert_msg(has_violation(&st, "definition.transitions[0].for_each", NULL), "%s %s: %s",
                  st.reason, wf_client_code_name(st.code), st.message);
    n = job_net(u("bad"), u("t"), 1, 0);
    n->t[0]->for_each = ".lines";
    n->t[0]->for_each_item = "1x";
    ck_assert_ptr_null(deploy_d(as("dev"), &n->d, false, &st));
    ck_assert(has_violation(&st, "definition.transitions[0].for_each_item", "INVALID_VALUE"));
    n = job_net(u("bad"), u("t"), 1, 0);
    n->t[0]->for_each_output = "out";
    ck_assert_ptr_null(deploy_d(as("dev"), &n->d, false, &st));
    ck_assert(has_violation(&st, "definition.transitions[0].for_each", "INVALID_VALUE"));
    n = one_step(u("bad"), "work", T_TIME);
    n->t[0]->delay = dur(1000);
    n->t[0]->for_each = ".lines";
    ck_assert_ptr_null(deploy_d(as("dev"), &n->d, false, &st));
    ck_assert(has_violation(&st, "definition.transitions[0].for_each", NULL));
    n = one_step(u("bad"), "ask", T_USER);
    n->t[0]->assignee = wf_arena_calloc(ta, 1, sizeof *n->t[0]->assignee);
    workflow__v1__assignee__init(n->t[0]->assignee);
    n->t[0]->assignee->kind = A_USERS;
    n->t[0]->assignee->ids_expression = ".item";
    n->t[0]->for_each = ".approvers";
    ck_assert_ptr_null(deploy_d(as("dev"), &n->d, false, &st));
    ck_assert(has_violation(&st, "definition.transitions[0].for_each", "INVALID_VALUE"));
    /* The fields read back as deployed. */
    const char *key;
    each_net(u("rt"), M_QUORUM, 2, true, &key);
    Workflow__V1__GetDefinitionRequest req = WORKFLOW__V1__GET_DEFINITION_REQUEST__INIT;
    req.key = (char *)key;
    Workflow__V1__GetDefinitionResponse *gd = call(
        as("dev"), "GetDefinition", &req, &workflow__v1__get_definition_response__descriptor, &st);
    ck_ok(st);
    const Workflow__V1__Definition *d = gd->definition;
    ck_assert_str_eq(d->transitions[0]->for_each, ".lines");
    ck_assert_str_eq(d->transitions[0]->for_each_output, "charged");
    ck_assert(d->transitions[0]->for_each_sequential);
    ck_assert_int_eq(d->transitions[0]->for_each_completion->mode, M_QUORUM);
    ck_assert_int_eq(d->transitions[0]->for_each_completion->quorum, 2);
}
END_TEST

WF_CASE_TEST("default", test_diagram_marks_the_multi_instance_transition)
{
    const char *key;
    each_net(u("dia"), 0, 0, true, &key);
    Workflow__V1__GetDiagramRequest req = WORKFLOW__V1__GET_DIAGRAM_REQUEST__INIT;
    req.definition_key = (char *)key;
    req.format = WORKFLOW__V1__DIAGRAM_FORMAT__DIAGRAM_FORMAT_DOT;
    wf_client_status st;
    Workflow__V1__GetDiagramResponse *r =
        call(as("dev"), "GetDiagram", &req, &workflow__v1__get_diagram_response__descriptor, &st);
    ck_ok(st);
    ck_assert_msg(strstr(r->content, "\u2261 for each (one at a time): .lines") != NULL, "%s",
                  r->content);
}
END_TEST

/* ---- concurrency --------------------------------------------------------------------------- */

enum { RACERS = 32 };

typedef struct racer {
    pthread_barrier_t *gate;
    wf_client *c;
    const char *key;
    int code;
    char reason[64];
} racer;

static void *
race_complete(void *arg)
{
    racer *r = arg;
    Workflow__V1__CompleteJobRequest req = WORKFLOW__V1__COMPLETE_JOB_REQUEST__INIT;
    req.job_key = (char *)r->key;
    req.variables_json = "{\"amount\": 1}";
    wf_client_status st;
    pthread_barrier_wait(r->gate);
    call(r->c, "CompleteJob", &req, &workflow__v1__complete_job_response__descriptor, &st);
    r->code = st.code;
    snprintf(r->reason, sizeof r->reason, "%s", st.reason);
    return NULL;
}

/* 32 items, each completed by its own thread and client at once. */
static void
race(Workflow__V1__CompletionMode mode, int quorum)
{
    char *type = u("race");
    const char *key;
    each_net(type, mode, quorum, false, &key);
    Workflow__V1__Instance *in = start_boss(key, lines_of(RACERS));
    Workflow__V1__ActivateJobsResponse *r = take_jobs(type, RACERS);
    racer rs[RACERS];
    pthread_t th[RACERS];
    pthread_barrier_t gate;
    pthread_barrier_init(&gate, NULL, RACERS);
    for (int i = 0; i < RACERS; i++) {
        rs[i] = (racer){
            .gate = &gate, .c = wf_test_client(&ts, NULL, NULL, NULL), .key = r->jobs[i]->key};
        pthread_create(&th[i], NULL, race_complete, &rs[i]);
    }
    int ok = 0, lost = 0;
    for (int i = 0; i < RACERS; i++) {
        pthread_join(th[i], NULL);
        wf_client_free(rs[i].c);
        ok += rs[i].code == 0;
        lost += rs[i].code == GRPC_STATUS_FAILED_PRECONDITION &&
                strcmp(rs[i].reason, "JOB_LEASE_LOST") == 0;
    }
    pthread_barrier_destroy(&gate);
    int need = mode == M_QUORUM ? quorum : RACERS;
    ck_assert_int_eq(ok, need);
    ck_assert_int_eq(lost, RACERS - need);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
    ck_assert_int_eq(count_type(in->id, "FOREACH_ITEM_COMPLETED"), need);
    ck_assert_int_eq(count_type(in->id, "TRANSITION_FIRED"), 1);
    ck_assert_int_eq(count_type(in->id, "FOREACH_ITEMS_WITHDRAWN"), need < RACERS ? 1 : 0);
    json_t *c = charged(in->id);
    int set = 0;
    for (size_t i = 0; i < json_array_size(c); i++)
        set += !json_is_null(json_array_get(c, i));
    ck_assert_int_eq(set, need);
    json_decref(c);
}

WF_CASE_TEST("race", test_32_concurrent_completions_all)
{
    race(M_ALL, 0);
}
END_TEST

WF_CASE_TEST("race", test_32_concurrent_completions_quorum)
{
    race(M_QUORUM, 16);
}
END_TEST

int
main(void)
{
    const wf_test_case cases[] = {{"default", setup, teardown, 120},
                                  {"max3", setup_max3, teardown, 60},
                                  {"race", setup, teardown, 300},
                                  {NULL}};
    return wf_test_run(wf_test_suite_of("e2e_foreach", cases));
}
