/*
 * End-to-end tests of for-each over CALL transitions, on the memory store
 * and on Postgres (WF_TEST_STORE=pg), through a real gRPC client: one
 * child instance per item (distinct ids, the item and its index in the
 * child's input), the outputs collected in item order, sequential items
 * one child at a time, the joins ANY and QUORUM (the remaining children
 * cancelled once), a failed child's incident naming its item and its
 * retry resolving only that item (the items completed meanwhile kept), a
 * child cancelled directly, a key not deployed retried per item, the
 * whole item withdrawn, and 32 concurrent completions of the children's
 * jobs: every item once, the join once.
 *
 * Keys and job types are unique per test (Postgres keeps rows between
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

#define T_CALL WORKFLOW__V1__TRIGGER__TRIGGER_CALL
#define M_ANY WORKFLOW__V1__COMPLETION_MODE__COMPLETION_MODE_ANY
#define M_QUORUM WORKFLOW__V1__COMPLETION_MODE__COMPLETION_MODE_QUORUM
#define I_CANCELLED WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_CANCELLED

/* ---- definitions and reads ------------------------------------------------------------------ */

/* s -> pay (CALL callee for each of .lines as "line", input {amount},
 * output {receipt}, outputs "receipts") -> e; mode 0 = ALL. */
static nb *
fan_net(const char *key, const char *callee, Workflow__V1__CompletionMode mode, int quorum,
        bool sequential)
{
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "e", END);
    Workflow__V1__Transition *t = trans(n, "pay", T_CALL);
    t->call_definition_key = (char *)callee;
    t->call_input_expression = "{amount: .line.amount}";
    t->call_output_expression = "{receipt}";
    t->for_each = ".lines";
    t->for_each_item = "line";
    t->for_each_output = "receipts";
    t->for_each_sequential = sequential;
    if (mode != 0) {
        Workflow__V1__CompletionPolicy *c = wf_arena_calloc(ta, 1, sizeof *c);
        workflow__v1__completion_policy__init(c);
        c->mode = mode;
        c->quorum = quorum;
        t->for_each_completion = c;
    }
    arc(n, "s", "pay");
    arc(n, "pay", "e");
    return n;
}

/* Deploys the payment process (one job of type, attempts) and a caller
 * over it; the caller's key. */
static char *
deploy_pair(const char *type, int attempts, Workflow__V1__CompletionMode mode, int quorum,
            bool sequential)
{
    char *child = u("payment"), *parent = u("order");
    ck_assert(deploy(job_net(child, type, attempts, 0))->created);
    ck_assert(deploy(fan_net(parent, child, mode, quorum, sequential))->created);
    return parent;
}

/* {"lines": [{"amount": 10}, {"amount": 20}, ...]} of n lines (in ta). */
static const char *
lines_of(int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_pack("{s:i}", "amount", 10 * (i + 1)));
    return json_in_ta(json_pack("{s:o}", "lines", a));
}

/* The index of job j's item: its child's line_index, checked against the
 * amount mapped from its line. */
static int
item_of(const Workflow__V1__Job *j)
{
    json_t *v = json_parsed(j->variables_json);
    json_t *ix = json_object_get(v, "line_index");
    ck_assert_msg(json_is_integer(ix), "no line_index in %s", j->variables_json);
    int i = (int)json_integer_value(ix);
    ck_assert_int_eq(json_integer_value(json_object_get(v, "amount")), 10 * (i + 1));
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(v, "line"), "amount")),
                     10 * (i + 1));
    json_decref(v);
    return i;
}

/* Activates exactly n jobs of type, put in item order into by_item. */
static void
take_jobs(const char *type, int n, Workflow__V1__Job **by_item)
{
    Workflow__V1__ActivateJobsResponse *r = activate(type, n + 1, 0, 500);
    ck_assert_msg(r->n_jobs == (size_t)n, "%zu jobs of %s, want %d", r->n_jobs, type, n);
    for (int k = 0; k < n; k++)
        by_item[item_of(r->jobs[k])] = r->jobs[k];
}

/* Completes job j with receipt "r-<i>". */
static void
pay(const Workflow__V1__Job *j, int i)
{
    wf_client_status st;
    char vars[64];
    snprintf(vars, sizeof vars, "{\"receipt\": \"r-%d\", \"fee\": 1}", i);
    complete_job_c(as(NULL), j->key, vars, &st);
    ck_ok(st);
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

/* The variable name of instance id, parsed (the caller owns it). */
static json_t *
var(const char *id, const char *name)
{
    json_t *v = json_parsed(get_instance(id)->instance->variables_json);
    json_t *out = json_incref(json_object_get(v, name));
    json_decref(v);
    return out;
}

/* The receipts array of id as compact JSON (in ta). */
static const char *
receipts(const char *id)
{
    return json_in_ta(var(id, "receipts"));
}

static Workflow__V1__ListIncidentsResponse *
incidents(const char *key)
{
    Workflow__V1__ListIncidentsRequest lr = WORKFLOW__V1__LIST_INCIDENTS_REQUEST__INIT;
    lr.definition_key = (char *)key;
    wf_client_status st;
    Workflow__V1__ListIncidentsResponse *li = call(
        as(NULL), "ListIncidents", &lr, &workflow__v1__list_incidents_response__descriptor, &st);
    ck_ok(st);
    return li;
}

/* ---- parallel, sequential, joins ------------------------------------------------------------ */

WF_CASE_TEST(wf_test_store_name(), test_foreach_call_children_outputs_in_item_order)
{
    char *type = u("charge");
    char *key = deploy_pair(type, 3, 0, 0, false);
    Workflow__V1__Instance *in = start_boss(key, lines_of(3));
    ck_assert_int_eq(in->status, I_RUNNING);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_uint_eq(g->n_children, 3);
    ck_assert_uint_eq(g->n_calls, 3);
    ck_assert_str_ne(g->children[0]->id, g->children[1]->id);
    ck_assert_str_ne(g->children[1]->id, g->children[2]->id);
    ck_assert_str_ne(g->children[0]->id, g->children[2]->id);
    for (size_t k = 0; k < 3; k++) {
        ck_assert_str_eq(g->calls[k]->transition_id, "pay");
        ck_assert_int_eq(g->calls[k]->status, I_RUNNING);
    }
    ck_assert_uint_eq(g->n_for_each, 1);
    ck_assert_int_eq(g->for_each[0]->total, 3);
    ck_assert_int_eq(g->for_each[0]->completed, 0);
    ck_assert_int_eq(count_type(in->id, "CALL_STARTED"), 3);

    Workflow__V1__Job *jobs[3];
    take_jobs(type, 3, jobs);
    pay(jobs[2], 2);
    pay(jobs[0], 0);
    ck_assert_int_eq(get_instance(in->id)->for_each[0]->completed, 2);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_RUNNING);
    pay(jobs[1], 1);

    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_str_eq(receipts(in->id),
                     "[{\"receipt\":\"r-0\"},{\"receipt\":\"r-1\"},{\"receipt\":\"r-2\"}]");
    json_t *fee = var(in->id, "fee");
    ck_assert_ptr_null(fee);
    ck_assert_int_eq(count_type(in->id, "CALL_COMPLETED"), 3);
    ck_assert_int_eq(count_type(in->id, "FOREACH_ITEM_COMPLETED"), 3);
    ck_assert_int_eq(count_type(in->id, "TRANSITION_FIRED"), 4); /* 3 children's and pay */
    json_t *d = json_parsed(last_event(in->id, "FOREACH_ITEM_COMPLETED")->data_json);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "index")), 1);
    ck_assert_str_eq(json_string_value(json_object_get(d, "childInstanceId")),
                     jobs[1]->instance_id);
    json_decref(d);
}
END_TEST

WF_CASE_TEST(wf_test_store_name(), test_foreach_call_sequential_one_child_at_a_time)
{
    char *type = u("charge");
    char *key = deploy_pair(type, 3, 0, 0, true);
    Workflow__V1__Instance *in = start_boss(key, lines_of(3));
    for (int i = 0; i < 3; i++) {
        ck_assert_uint_eq(get_instance(in->id)->n_children, (size_t)i + 1);
        Workflow__V1__Job *j[3];
        take_jobs(type, 1, j);
        ck_assert_ptr_nonnull(j[i]);
        pay(j[i], i);
    }
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
    ck_assert_str_eq(receipts(in->id),
                     "[{\"receipt\":\"r-0\"},{\"receipt\":\"r-1\"},{\"receipt\":\"r-2\"}]");
}
END_TEST

WF_CASE_TEST(wf_test_store_name(), test_foreach_call_any_cancels_the_other_children)
{
    char *type = u("charge");
    char *key = deploy_pair(type, 3, M_ANY, 0, false);
    Workflow__V1__Instance *in = start_boss(key, lines_of(3));
    Workflow__V1__Job *jobs[3];
    take_jobs(type, 3, jobs);
    pay(jobs[1], 1);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    int cancelled = 0;
    for (size_t k = 0; k < g->n_children; k++)
        cancelled += g->children[k]->status == I_CANCELLED;
    ck_assert_int_eq(cancelled, 2);
    ck_assert_str_eq(receipts(in->id), "[null,{\"receipt\":\"r-1\"},null]");
    ck_assert_int_eq(count_type(in->id, "FOREACH_ITEMS_WITHDRAWN"), 1);
    json_t *d = json_parsed(last_event(in->id, "FOREACH_ITEMS_WITHDRAWN")->data_json);
    ck_assert_uint_eq(json_array_size(json_object_get(d, "childInstanceIds")), 2);
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(d, "childInstanceIds"), 0)),
                     jobs[0]->instance_id);
    json_decref(d);
    /* The withdrawn children's jobs went with them. */
    wf_client_status st;
    ck_assert_int_ne(complete_job_c(as(NULL), jobs[0]->key, NULL, &st), 0);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "JOB_LEASE_LOST");
    /* A caller that ended: no incident from the children it cancelled. */
    ck_assert_uint_eq(incidents(key)->n_incidents, 0);
}
END_TEST

WF_CASE_TEST(wf_test_store_name(), test_foreach_call_quorum_fires_once)
{
    char *type = u("charge");
    char *key = deploy_pair(type, 3, M_QUORUM, 2, false);
    Workflow__V1__Instance *in = start_boss(key, lines_of(4));
    Workflow__V1__Job *jobs[4];
    take_jobs(type, 4, jobs);
    pay(jobs[3], 3);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_RUNNING);
    pay(jobs[0], 0);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
    ck_assert_str_eq(receipts(in->id), "[{\"receipt\":\"r-0\"},null,null,{\"receipt\":\"r-3\"}]");
    ck_assert_int_eq(count_type(in->id, "INSTANCE_CANCELLED"), 2);
}
END_TEST

/* ---- incidents, retries, cancel, withdraw --------------------------------------------------- */

WF_CASE_TEST(wf_test_store_name(), test_foreach_call_failed_item_incident_and_retry)
{
    char *type = u("charge");
    char *key = deploy_pair(type, 1, 0, 0, false);
    Workflow__V1__Instance *in = start_boss(key, lines_of(3));
    Workflow__V1__Job *jobs[3];
    take_jobs(type, 3, jobs);
    wf_client_status st;
    ck_assert_int_eq(fail_job(jobs[1]->key, "card declined", 0, -1, &st), 0);

    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_FAILED);
    ck_assert_msg(strstr(g->last_error, jobs[1]->instance_id) != NULL, "%s", g->last_error);
    ck_assert_msg(strstr(g->last_error, "item 1") != NULL, "%s", g->last_error);
    Workflow__V1__ListIncidentsResponse *li = incidents(key);
    ck_assert_uint_eq(li->n_incidents, 1);
    ck_assert_str_eq(li->incidents[0]->code, "CALL_CHILD_FAILED");
    json_t *d = json_parsed(last_event(in->id, "CALL_FAILED")->data_json);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "index")), 1);
    ck_assert_str_eq(json_string_value(json_object_get(d, "childInstanceId")),
                     jobs[1]->instance_id);
    json_decref(d);

    /* The other items' children run on while the caller is FAILED. */
    pay(jobs[0], 0);
    pay(jobs[2], 2);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_FAILED);
    /* Retrying the child resolves that item only: the others completed
     * meanwhile are taken in, the failed one runs again. */
    ck_assert_int_eq(retry_c(jobs[1]->instance_id, &st)->status, I_RUNNING);
    ck_ok(st);
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_RUNNING);
    ck_assert_int_eq(g->for_each[0]->completed, 2);
    Workflow__V1__Job *again[3] = {NULL, NULL, NULL};
    take_jobs(type, 1, again);
    ck_assert_ptr_nonnull(again[1]);
    ck_assert_str_eq(again[1]->instance_id, jobs[1]->instance_id);
    pay(again[1], 1);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
    ck_assert_str_eq(receipts(in->id),
                     "[{\"receipt\":\"r-0\"},{\"receipt\":\"r-1\"},{\"receipt\":\"r-2\"}]");
    ck_assert_int_eq(count_type(in->id, "FOREACH_ITEM_COMPLETED"), 3);
}
END_TEST

WF_CASE_TEST(wf_test_store_name(), test_foreach_call_child_cancelled_directly)
{
    char *type = u("charge");
    char *key = deploy_pair(type, 3, 0, 0, false);
    Workflow__V1__Instance *in = start_boss(key, lines_of(2));
    Workflow__V1__Job *jobs[2];
    take_jobs(type, 2, jobs);
    Workflow__V1__CancelInstanceRequest cr = WORKFLOW__V1__CANCEL_INSTANCE_REQUEST__INIT;
    cr.instance_id = jobs[0]->instance_id;
    wf_client_status st;
    call(as("ops"), "CancelInstance", &cr, &workflow__v1__cancel_instance_response__descriptor,
         &st);
    ck_ok(st);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_FAILED);
    ck_assert_msg(strstr(g->last_error, "item 0") != NULL, "%s", g->last_error);
    ck_assert_str_eq(incidents(key)->incidents[0]->code, "CALL_CHILD_CANCELLED");
    /* The other item's child is untouched. */
    ck_assert_int_eq(get_instance(jobs[1]->instance_id)->instance->status, I_RUNNING);
}
END_TEST

WF_CASE_TEST(wf_test_store_name(), test_foreach_call_unknown_key_retried_per_item)
{
    char *child = u("later"), *parent = u("order"), *type = u("charge");
    ck_assert(deploy(fan_net(parent, child, 0, 0, false))->created);
    Workflow__V1__Instance *in = start_boss(parent, lines_of(2));
    ck_assert_int_eq(in->status, I_FAILED);
    ck_assert_uint_eq(get_instance(in->id)->n_children, 0);
    ck_assert_str_eq(incidents(parent)->incidents[0]->code, "CALL_DEFINITION_NOT_FOUND");
    ck_assert(deploy(job_net(child, type, 3, 0))->created);
    wf_client_status st;
    ck_assert_int_eq(retry_c(in->id, &st)->status, I_RUNNING);
    ck_ok(st);
    ck_assert_uint_eq(get_instance(in->id)->n_children, 2);
    Workflow__V1__Job *jobs[2];
    take_jobs(type, 2, jobs);
    pay(jobs[0], 0);
    pay(jobs[1], 1);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
    ck_assert_str_eq(receipts(in->id), "[{\"receipt\":\"r-0\"},{\"receipt\":\"r-1\"}]");
}
END_TEST

WF_CASE_TEST(wf_test_store_name(), test_foreach_call_withdrawn_item_cancels_every_child)
{
    char *child = u("payment"), *parent = u("order"), *type = u("charge");
    ck_assert(deploy(job_net(child, type, 3, 0))->created);
    nb *n = fan_net(parent, child, 0, 0, false);
    trans(n, "abort", WORKFLOW__V1__TRIGGER__TRIGGER_MSG)->signal_name = "abort";
    arc(n, "s", "abort");
    arc(n, "abort", "e");
    ck_assert(deploy(n)->created);
    Workflow__V1__Instance *in = start_boss(parent, lines_of(3));
    Workflow__V1__SendSignalRequest req = WORKFLOW__V1__SEND_SIGNAL_REQUEST__INIT;
    req.name = "abort";
    req.target_case = WORKFLOW__V1__SEND_SIGNAL_REQUEST__TARGET_INSTANCE_ID;
    req.instance_id = in->id;
    wf_client_status st;
    call(as("ops"), "SendSignal", &req, &workflow__v1__send_signal_response__descriptor, &st);
    ck_ok(st);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_uint_eq(g->n_children, 3);
    for (size_t k = 0; k < 3; k++)
        ck_assert_int_eq(g->children[k]->status, I_CANCELLED);
    ck_assert_uint_eq(activate(type, 5, 0, 0)->n_jobs, 0);
}
END_TEST

WF_CASE_TEST(wf_test_store_name(), test_foreach_call_deploy_checks_the_join)
{
    nb *n = fan_net(u("badq"), u("payment"), M_QUORUM, 0, false);
    wf_client_status st;
    ck_assert_ptr_null(deploy_d(as("dev"), &n->d, false, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "DEFINITION_INVALID");
    ck_assert(has_violation(&st, "definition.transitions[0].for_each_completion.quorum",
                            "INVALID_VALUE"));
}
END_TEST

/* ---- concurrency ---------------------------------------------------------------------------- */

enum { RACERS = 32 };

typedef struct racer {
    pthread_barrier_t *gate;
    wf_client *c;
    const char *key;
    int code;
} racer;

static void *
race_complete(void *arg)
{
    racer *r = arg;
    Workflow__V1__CompleteJobRequest req = WORKFLOW__V1__COMPLETE_JOB_REQUEST__INIT;
    req.job_key = (char *)r->key;
    req.variables_json = "{\"receipt\": \"r\"}";
    wf_client_status st;
    pthread_barrier_wait(r->gate);
    call(r->c, "CompleteJob", &req, &workflow__v1__complete_job_response__descriptor, &st);
    r->code = st.code;
    return NULL;
}

WF_CASE_TEST("race", test_foreach_call_32_concurrent_child_completions)
{
    char *type = u("race");
    char *key = deploy_pair(type, 3, 0, 0, false);
    Workflow__V1__Instance *in = start_boss(key, lines_of(RACERS));
    Workflow__V1__Job *jobs[RACERS];
    take_jobs(type, RACERS, jobs);
    racer rs[RACERS];
    pthread_t th[RACERS];
    pthread_barrier_t gate;
    pthread_barrier_init(&gate, NULL, RACERS);
    for (int i = 0; i < RACERS; i++) {
        rs[i] =
            (racer){.gate = &gate, .c = wf_test_client(&ts, NULL, NULL, NULL), .key = jobs[i]->key};
        pthread_create(&th[i], NULL, race_complete, &rs[i]);
    }
    int ok = 0;
    for (int i = 0; i < RACERS; i++) {
        pthread_join(th[i], NULL);
        wf_client_free(rs[i].c);
        ok += rs[i].code == 0;
    }
    pthread_barrier_destroy(&gate);
    ck_assert_int_eq(ok, RACERS);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
    ck_assert_int_eq(count_type(in->id, "FOREACH_ITEM_COMPLETED"), RACERS);
    ck_assert_int_eq(count_type(in->id, "CALL_COMPLETED"), RACERS);
    ck_assert_int_eq(count_type(in->id, "INSTANCE_COMPLETED"), RACERS + 1);
    size_t n;
    wf_event_row *ev = events_of(in->id, &n);
    int fired = 0;
    for (size_t i = 0; i < n; i++)
        fired +=
            strcmp(ev[i].type, "TRANSITION_FIRED") == 0 && strcmp(ev[i].instance_id, in->id) == 0;
    ck_assert_int_eq(fired, 1);
    json_t *r = var(in->id, "receipts");
    ck_assert_uint_eq(json_array_size(r), RACERS);
    for (size_t i = 0; i < RACERS; i++)
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(r, i), "receipt")), "r");
    json_decref(r);
}
END_TEST

int
main(void)
{
    const wf_test_case cases[] = {
        {wf_test_store_name(), setup, teardown, 120}, {"race", setup, teardown, 300}, {NULL}};
    return wf_test_run(wf_test_suite_of("e2e_foreach_calls", cases));
}
