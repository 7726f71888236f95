/*
 * End-to-end tests of ModifyInstance over gRPC, on the memory store and on
 * Postgres (WF_TEST_STORE=pg):
 *   - a move withdraws the task of the token it takes (TASK_CANCELLED, its
 *     completion TASK_NOT_OPEN) and creates the tasks the new marking
 *     enables; the response holds the marking and the tokens; the
 *     INSTANCE_MODIFIED event carries the operations, tokens, reason and
 *     actor;
 *   - an add that enables a silent AUTO transition, which fires to END and
 *     completes the instance; an add that creates a job;
 *   - a remove refused without allow_empty and cancelling with it;
 *   - a move in a STEPS definition: the job of the step left is gone
 *     (JOB_LEASE_LOST for its worker), the next step's job is created;
 *   - every refusal with its code and reason, changing nothing;
 *   - a request_id replay answers the same bytes and writes nothing more;
 *   - ModifyInstance racing CompleteTask on the same token: exactly one
 *     wins and the instance holds exactly one token.
 *
 * Postgres keeps rows between runs: every definition key is made unique
 * with a per-test suffix.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/status.h>
#include <jansson.h>

#include "net_kit.h"
#include "test_support.h"
#include "wf_arena.h"
#include "store.h"
#include "workflow/v1/workflow.pb-c.h"

#define K_ADD WORKFLOW__V1__TOKEN_OPERATION_KIND__TOKEN_OPERATION_KIND_ADD
#define K_REMOVE WORKFLOW__V1__TOKEN_OPERATION_KIND__TOKEN_OPERATION_KIND_REMOVE
#define K_MOVE WORKFLOW__V1__TOKEN_OPERATION_KIND__TOKEN_OPERATION_KIND_MOVE
#define I_CANCELLED WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_CANCELLED
#define STEPS_KIND WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_STEPS

/* ---- requests ---------------------------------------------------------------------------- */

static Workflow__V1__TokenOperation *
op(Workflow__V1__TokenOperationKind kind, const char *place, const char *to, int count)
{
    Workflow__V1__TokenOperation *o = wf_arena_calloc(ta, 1, sizeof *o);
    workflow__v1__token_operation__init(o);
    o->kind = kind;
    o->place_id = (char *)place;
    o->to_place_id = (char *)(to != NULL ? to : "");
    o->count = count;
    return o;
}

static Workflow__V1__ModifyInstanceRequest *
req_new(const char *id, size_t n, Workflow__V1__TokenOperation **ops)
{
    Workflow__V1__ModifyInstanceRequest *r = wf_arena_calloc(ta, 1, sizeof *r);
    workflow__v1__modify_instance_request__init(r);
    r->instance_id = (char *)id;
    r->operations = ops;
    r->n_operations = n;
    r->reason = "stuck at review";
    return r;
}

static Workflow__V1__ModifyInstanceResponse *
modify_c(wf_client *c, const Workflow__V1__ModifyInstanceRequest *r, wf_client_status *st)
{
    return call(c, "ModifyInstance", r, &workflow__v1__modify_instance_response__descriptor, st);
}

static Workflow__V1__ModifyInstanceResponse *
modify_1(const char *id, Workflow__V1__TokenOperation *o, bool allow_empty, wf_client_status *st)
{
    Workflow__V1__TokenOperation **ops = wf_arena_calloc(ta, 1, sizeof *ops);
    ops[0] = o;
    Workflow__V1__ModifyInstanceRequest *r = req_new(id, 1, ops);
    r->allow_empty = allow_empty;
    return modify_c(as("ops"), r, st);
}

/* The event types of root after the prefix before (the types it had). */
static const char *
types_after(const char *root, const char *before)
{
    const char *all = event_types(root);
    size_t l = strlen(before);
    ck_assert_msg(strncmp(all, before, l) == 0, "%s does not start with %s", all, before);
    return all + l + (all[l] == ' ');
}

/* WatchEvents (follow=false) of root filtered on INSTANCE_MODIFIED: how
 * many, with the type number 33, actor and data of the last one. */
static size_t
watch_modified(const char *root, char *actor, size_t actor_len, json_t **data)
{
    Workflow__V1__EventType only[1] = {WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_INSTANCE_MODIFIED};
    Workflow__V1__WatchEventsRequest req = WORKFLOW__V1__WATCH_EVENTS_REQUEST__INIT;
    req.instance_id = (char *)root;
    req.types = only;
    req.n_types = 1;
    wf_client_stream *s = wf_client_stream_open(
        as("reader"), "/workflow.v1.WorkflowService/WatchEvents", &req.base, NULL);
    ck_assert_ptr_nonnull(s);
    size_t n = 0;
    ProtobufCMessage *m;
    wf_client_status st;
    while (wf_client_stream_next(s, &workflow__v1__watch_events_response__descriptor, &m, &st)) {
        Workflow__V1__Event *e = ((Workflow__V1__WatchEventsResponse *)m)->event;
        ck_assert_int_eq(e->type, 33);
        snprintf(actor, actor_len, "%s", e->actor);
        json_decref(*data);
        *data = json_loads(e->data_json, 0, NULL);
        n++;
        protobuf_c_message_free_unpacked(m, NULL);
    }
    wf_client_stream_close(s);
    ck_ok(st);
    return n;
}

/* Assigns USER transition t to alice. */
static void
to_alice(Workflow__V1__Transition *t)
{
    Workflow__V1__Assignee *a = wf_arena_calloc(ta, 1, sizeof *a);
    workflow__v1__assignee__init(a);
    a->kind = A_USER;
    a->ids = wf_arena_calloc(ta, 1, sizeof(char *));
    a->ids[0] = "alice";
    a->n_ids = 1;
    t->assignee = a;
}

/*   s -review(USER alice)-> a -approve(USER alice)-> e
 *                           a -detour(USER alice)-> c -skip(silent AUTO)-> e
 *                           a -prepare(USER alice)-> b -ship(AUTO job_type)-> e
 * approve, detour and prepare compete for the token in a. */
static char *
deploy_review_net(const char *name, const char *job_type)
{
    char *key = u(name);
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "a", NORMAL);
    place(n, "b", NORMAL);
    place(n, "c", NORMAL);
    place(n, "e", END);
    const char *users[] = {"review", "approve", "detour", "prepare"};
    for (int i = 0; i < 4; i++) {
        Workflow__V1__Transition *t = trans(n, users[i], T_USER);
        to_alice(t);
    }
    trans(n, "skip", T_AUTO);
    with_job(trans(n, "ship", T_AUTO), job_type, 3, 0);
    arc(n, "s", "review");
    arc(n, "review", "a");
    arc(n, "a", "approve");
    arc(n, "approve", "e");
    arc(n, "a", "detour");
    arc(n, "detour", "c");
    arc(n, "c", "skip");
    arc(n, "skip", "e");
    arc(n, "a", "prepare");
    arc(n, "prepare", "b");
    arc(n, "b", "ship");
    arc(n, "ship", "e");
    deploy(n);
    return key;
}

/* ---- tests -------------------------------------------------------------------------------- */

WF_TEST(test_move_withdraws_a_task_and_creates_others)
{
    char *key = deploy_review_net("modmove", u("ship"));
    Workflow__V1__Instance *in = start_boss(key, "{\"n\":1}");
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    Workflow__V1__Task *review = task_of(g, "review", TS_OPEN);
    ck_assert_ptr_nonnull(review);
    char *before = wf_arena_strdup(ta, event_types(in->id));

    Workflow__V1__TokenOperation *ops[1] = {op(K_MOVE, "s", "a", 0)};
    Workflow__V1__ModifyInstanceRequest *r = req_new(in->id, 1, ops);
    r->variables_json = "{\"fixed\":true}";
    wf_client_status st;
    Workflow__V1__ModifyInstanceResponse *m = modify_c(as("ops"), r, &st);
    ck_ok(st);
    ck_assert_int_eq(m->instance->status, I_RUNNING);
    ck_assert_ptr_nonnull(strstr(m->instance->variables_json, "\"fixed\":true"));
    ck_assert_uint_eq(m->n_marking, 1);
    ck_assert_str_eq(m->marking[0]->key, "a");
    ck_assert_int_eq(m->marking[0]->value, 1);
    ck_assert_uint_eq(m->n_tokens, 1);
    ck_assert_str_eq(m->tokens[0]->place_id, "a");

    g = get_instance(in->id);
    ck_assert_int_eq(marking(g, "s"), 0);
    ck_assert_int_eq(marking(g, "a"), 1);
    ck_assert_ptr_nonnull(task_of(g, "review", TS_CANCELLED));
    ck_assert_ptr_nonnull(task_of(g, "approve", TS_OPEN));
    ck_assert_ptr_nonnull(task_of(g, "detour", TS_OPEN));
    ck_assert_ptr_nonnull(task_of(g, "prepare", TS_OPEN));
    ck_assert_str_eq(types_after(in->id, before),
                     "INSTANCE_MODIFIED VARIABLES_SET WORKITEM_WITHDRAWN TASK_CANCELLED "
                     "TRANSITION_ENABLED TASK_CREATED TRANSITION_ENABLED TASK_CREATED "
                     "TRANSITION_ENABLED TASK_CREATED");

    json_t *d = event_data(in->id, "INSTANCE_MODIFIED");
    json_t *o = json_array_get(json_object_get(d, "operations"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(o, "kind")), "MOVE");
    ck_assert_str_eq(json_string_value(json_object_get(o, "placeId")), "s");
    ck_assert_str_eq(json_string_value(json_object_get(o, "toPlaceId")), "a");
    ck_assert_int_eq(json_integer_value(json_object_get(o, "count")), 1);
    ck_assert_uint_eq(json_array_size(json_object_get(o, "takenTokenIds")), 1);
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(o, "madeTokenIds"), 0)),
                     m->tokens[0]->id);
    ck_assert_str_eq(json_string_value(json_object_get(d, "reason")), "stuck at review");
    ck_assert_str_eq(json_string_value(json_object_get(d, "actor")), "ops");
    ck_assert(json_is_false(json_object_get(d, "allowEmpty")));
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(d, "variableKeys"), 0)),
                     "fixed");
    json_decref(d);
    /* The same through WatchEvents, filtered on its type. */
    char actor[64] = "";
    json_t *wd = NULL;
    ck_assert_uint_eq(watch_modified(in->id, actor, sizeof actor, &wd), 1);
    ck_assert_str_eq(actor, "ops");
    ck_assert_str_eq(json_string_value(json_object_get(wd, "reason")), "stuck at review");
    json_decref(wd);

    /* The withdrawn task is closed to its assignee. */
    complete_task_as("alice", review->id, NULL, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "TASK_NOT_OPEN");

    /* By token id: the token the response named. */
    Workflow__V1__TokenOperation *by_id = op(K_MOVE, "a", "b", 0);
    by_id->token_id = m->tokens[0]->id;
    m = modify_1(in->id, by_id, false, &st);
    ck_ok(st);
    ck_assert_str_eq(m->tokens[0]->place_id, "b");
    g = get_instance(in->id);
    ck_assert_uint_eq(g->n_jobs, 1);
    ck_assert_ptr_nonnull(task_of(g, "approve", TS_CANCELLED));
}
END_TEST

WF_TEST(test_add_enables_a_silent_transition_that_completes)
{
    char *type = u("ship");
    char *key = deploy_review_net("modadd", type);
    Workflow__V1__Instance *in = start_boss(key, NULL);
    wf_client_status st;
    /* A token in b: the ship job, beside the review. */
    Workflow__V1__ModifyInstanceResponse *m = modify_1(in->id, op(K_ADD, "b", NULL, 0), false, &st);
    ck_ok(st);
    ck_assert_uint_eq(m->n_tokens, 2);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_uint_eq(g->n_jobs, 1);
    ck_assert_str_eq(g->jobs[0]->job_type, type);
    ck_assert_ptr_nonnull(task_of(g, "review", TS_OPEN));
    char *before = wf_arena_strdup(ta, event_types(in->id));

    /* A token in c: skip fires at once into END; everything else is
     * withdrawn and the instance completes. */
    m = modify_1(in->id, op(K_ADD, "c", NULL, 0), false, &st);
    ck_ok(st);
    ck_assert_int_eq(m->instance->status, I_COMPLETED);
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_uint_eq(g->n_jobs, 0);
    ck_assert_ptr_nonnull(task_of(g, "review", TS_CANCELLED));
    const char *ev = types_after(in->id, before);
    ck_assert_msg(strncmp(ev, "INSTANCE_MODIFIED TRANSITION_FIRED", 34) == 0, "%s", ev);
    ck_assert_int_eq(count_of(ev, "WORKITEM_WITHDRAWN"), 2);
    ck_assert_int_eq(count_of(ev, "INSTANCE_COMPLETED"), 1);
    ck_assert_uint_eq(activate(type, 5, 0, 0)->n_jobs, 0);
}
END_TEST

WF_TEST(test_remove_with_allow_empty_cancels)
{
    char *key = deploy_review_net("modempty", u("ship"));
    Workflow__V1__Instance *in = start_boss(key, NULL);
    char *before = wf_arena_strdup(ta, event_types(in->id));
    wf_client_status st;
    modify_1(in->id, op(K_REMOVE, "s", NULL, 1), false, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "INSTANCE_WOULD_BE_EMPTY");
    ck_assert_str_eq(event_types(in->id), before);

    Workflow__V1__ModifyInstanceResponse *m =
        modify_1(in->id, op(K_REMOVE, "s", NULL, 1), true, &st);
    ck_ok(st);
    ck_assert_int_eq(m->instance->status, I_CANCELLED);
    ck_assert_uint_eq(m->n_tokens, 0);
    ck_assert_uint_eq(m->n_marking, 0);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_CANCELLED);
    ck_assert_ptr_nonnull(task_of(g, "review", TS_CANCELLED));
    ck_assert_str_eq(types_after(in->id, before),
                     "INSTANCE_MODIFIED WORKITEM_WITHDRAWN TASK_CANCELLED INSTANCE_CANCELLED");
    json_t *d = event_data(in->id, "INSTANCE_CANCELLED");
    ck_assert_str_eq(json_string_value(json_object_get(d, "reason")), "stuck at review");
    json_decref(d);
    d = event_data(in->id, "INSTANCE_MODIFIED");
    ck_assert(json_is_true(json_object_get(d, "allowEmpty")));
    json_decref(d);
    /* Ended: refused. */
    modify_1(in->id, op(K_ADD, "s", NULL, 1), false, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "INSTANCE_NOT_RUNNING");
}
END_TEST

WF_TEST(test_move_between_steps)
{
    char *key = u("modsteps");
    char *charge = u("charge"), *ship = u("ship");
    Workflow__V1__Definition d = WORKFLOW__V1__DEFINITION__INIT;
    d.key = key;
    d.kind = STEPS_KIND;
    Workflow__V1__Step *steps[2];
    Workflow__V1__JobStep *jobs[2];
    const char *ids[] = {"charge", "ship"}, *types[] = {charge, ship};
    for (int i = 0; i < 2; i++) {
        steps[i] = wf_arena_calloc(ta, 1, sizeof *steps[i]);
        workflow__v1__step__init(steps[i]);
        steps[i]->id = (char *)ids[i];
        jobs[i] = wf_arena_calloc(ta, 1, sizeof *jobs[i]);
        workflow__v1__job_step__init(jobs[i]);
        jobs[i]->job_type = (char *)types[i];
        steps[i]->job = jobs[i];
    }
    d.steps = steps;
    d.n_steps = 2;
    wf_client_status st;
    deploy_d(as("dev"), &d, false, &st);
    ck_ok(st);
    Workflow__V1__Instance *in = start_boss(key, NULL);
    Workflow__V1__ActivateJobsResponse *a = activate(charge, 1, 0, 0);
    ck_assert_uint_eq(a->n_jobs, 1);

    Workflow__V1__ModifyInstanceResponse *m =
        modify_1(in->id, op(K_MOVE, "charge:ready", "ship:ready", 0), false, &st);
    ck_ok(st);
    ck_assert_str_eq(m->marking[0]->key, "ship:ready");
    /* The leased charge job is gone: its worker's completion is stale. */
    ck_assert_int_eq(complete_job_c(as("w1"), a->jobs[0]->key, NULL, &st),
                     GRPC_STATUS_FAILED_PRECONDITION);
    ck_assert_str_eq(st.reason, "JOB_LEASE_LOST");
    a = activate(ship, 1, 0, 0);
    ck_assert_uint_eq(a->n_jobs, 1);
    ck_assert_int_eq(complete_job_c(as("w1"), a->jobs[0]->key, NULL, &st), 0);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
}
END_TEST

WF_TEST(test_refusals_with_code_and_reason)
{
    char *key = deploy_review_net("modrefuse", u("ship"));
    Workflow__V1__Instance *in = start_boss(key, NULL);
    char *before = wf_arena_strdup(ta, event_types(in->id));
    wf_client_status st;

    /* No operation; too many. */
    modify_c(as("ops"), req_new(in->id, 0, NULL), &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_int_eq(st.nviolations, 1);
    ck_assert_str_eq(st.violations[0], "operations: must hold at least one operation");
    Workflow__V1__TokenOperation **lots = wf_arena_calloc(ta, 101, sizeof *lots);
    for (int i = 0; i < 101; i++)
        lots[i] = op(K_ADD, "a", NULL, 0);
    modify_c(as("ops"), req_new(in->id, 101, lots), &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    /* A malformed operation. */
    modify_1(in->id, op(K_ADD, "a", NULL, 101), false, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_str_eq(st.violations[0], "operations[0].count: must be 0 to 100");
    modify_1(in->id, op(K_MOVE, "s", NULL, 0), false, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    modify_1(in->id, op(0, "s", NULL, 0), false, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    /* Variables that are no object. */
    Workflow__V1__TokenOperation *ops[1] = {op(K_ADD, "a", NULL, 0)};
    Workflow__V1__ModifyInstanceRequest *r = req_new(in->id, 1, ops);
    r->variables_json = "[1]";
    modify_c(as("ops"), r, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_JSON");
    /* An unknown place, named in the violation and the metadata. */
    modify_1(in->id, op(K_MOVE, "s", "nowhere", 0), false, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "UNKNOWN_PLACE");
    ck_assert_int_eq(st.nviolations, 1);
    ck_assert_str_eq(st.violation_reasons[0], "UNKNOWN_PLACE");
    ck_assert_msg(strncmp(st.violations[0], "operations[0].to_place_id", 25) == 0, "%s",
                  st.violations[0]);
    ck_assert_int_eq(st.nmetadata, 1);
    ck_assert_str_eq(st.metadata[0], "placeId=nowhere");
    /* Tokens a place does not hold. */
    modify_1(in->id, op(K_REMOVE, "a", NULL, 0), false, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "TOKENS_NOT_HELD");
    modify_1(in->id, op(K_REMOVE, "s", NULL, 2), false, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "TOKENS_NOT_HELD");
    Workflow__V1__TokenOperation *bad_id = op(K_REMOVE, "s", NULL, 0);
    bad_id->token_id = "no-such-token";
    modify_1(in->id, bad_id, false, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "TOKENS_NOT_HELD");
    /* An unknown instance, an empty id, an AD_HOC instance. */
    modify_1("no-such-instance", op(K_ADD, "a", NULL, 0), false, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "INSTANCE_NOT_FOUND");
    modify_1("", op(K_ADD, "a", NULL, 0), false, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    Workflow__V1__Instance *adhoc = start_boss(u("modadhoc"), NULL);
    modify_1(adhoc->id, op(K_ADD, "a", NULL, 0), false, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "NOT_A_NET_INSTANCE");
    /* Without an actor. */
    modify_c(as(NULL), req_new(in->id, 1, ops), &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "ACTOR_MISSING");
    ck_assert_str_eq(event_types(in->id), before);
}
END_TEST

/* s -split(USER)-> d (weight 2) -pair(USER, needs 2)-> e: one token
 * in d enables nothing. */
WF_TEST(test_deadlock_is_refused)
{
    char *key = u("moddead");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "d", NORMAL);
    place(n, "e", END);
    const char *users[] = {"split", "pair"};
    for (int i = 0; i < 2; i++) {
        Workflow__V1__Transition *t = trans(n, users[i], T_USER);
        to_alice(t);
    }
    arc(n, "s", "split");
    arc(n, "split", "d")->weight = 2;
    arc(n, "d", "pair")->weight = 2;
    arc(n, "pair", "e");
    deploy(n);
    Workflow__V1__Instance *in = start_boss(key, NULL);
    wf_client_status st;
    char *before = wf_arena_strdup(ta, event_types(in->id));
    modify_1(in->id, op(K_MOVE, "s", "d", 1), true, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "MODIFICATION_DEADLOCKS");
    ck_assert_str_eq(event_types(in->id), before);
    /* Two tokens enable pair. */
    Workflow__V1__TokenOperation *ops[2] = {op(K_REMOVE, "s", NULL, 0), op(K_ADD, "d", NULL, 2)};
    Workflow__V1__ModifyInstanceResponse *m = modify_c(as("ops"), req_new(in->id, 2, ops), &st);
    ck_ok(st);
    ck_assert_int_eq(m->marking[0]->value, 2);
    ck_assert_ptr_nonnull(task_of(get_instance(in->id), "pair", TS_OPEN));
}
END_TEST

WF_TEST(test_request_id_replay_answers_the_same)
{
    char *key = deploy_review_net("modidem", u("ship"));
    Workflow__V1__Instance *in = start_boss(key, NULL);
    Workflow__V1__TokenOperation *ops[1] = {op(K_MOVE, "s", "a", 0)};
    Workflow__V1__ModifyInstanceRequest *r = req_new(in->id, 1, ops);
    r->request_id = u("modify-once");
    wf_client_status st;
    Workflow__V1__ModifyInstanceResponse *first = modify_c(as("ops"), r, &st);
    ck_ok(st);
    char *after = wf_arena_strdup(ta, event_types(in->id));
    Workflow__V1__ModifyInstanceResponse *again = modify_c(as("ops"), r, &st);
    ck_ok(st);
    size_t l1 = protobuf_c_message_get_packed_size(&first->base);
    size_t l2 = protobuf_c_message_get_packed_size(&again->base);
    ck_assert_uint_eq(l1, l2);
    uint8_t *b1 = wf_arena_alloc(ta, l1), *b2 = wf_arena_alloc(ta, l2);
    protobuf_c_message_pack(&first->base, b1);
    protobuf_c_message_pack(&again->base, b2);
    ck_assert(memcmp(b1, b2, l1) == 0);
    ck_assert_str_eq(event_types(in->id), after);
    ck_assert_int_eq(marking(get_instance(in->id), "a"), 1);
    /* The same id with another request. */
    r->reason = "another reason";
    modify_c(as("ops"), r, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "REQUEST_ID_REUSED");
}
END_TEST

struct racer {
    pthread_barrier_t *gate;
    wf_client *client;
    const char *instance_id, *task_id;
    wf_client_status st;
};

static void *
race_modify(void *arg)
{
    struct racer *r = arg;
    Workflow__V1__TokenOperation o = WORKFLOW__V1__TOKEN_OPERATION__INIT;
    Workflow__V1__TokenOperation *ops[1] = {&o};
    o.kind = K_MOVE;
    o.place_id = "s";
    o.to_place_id = "c";
    Workflow__V1__ModifyInstanceRequest req = WORKFLOW__V1__MODIFY_INSTANCE_REQUEST__INIT;
    req.instance_id = (char *)r->instance_id;
    req.operations = ops;
    req.n_operations = 1;
    pthread_barrier_wait(r->gate);
    call(r->client, "ModifyInstance", &req, &workflow__v1__modify_instance_response__descriptor,
         &r->st);
    return NULL;
}

static void *
race_complete(void *arg)
{
    struct racer *r = arg;
    Workflow__V1__CompleteTaskRequest req = WORKFLOW__V1__COMPLETE_TASK_REQUEST__INIT;
    req.task_id = (char *)r->task_id;
    req.variables_json = "";
    pthread_barrier_wait(r->gate);
    call(r->client, "CompleteTask", &req, &workflow__v1__complete_task_response__descriptor,
         &r->st);
    return NULL;
}

/* Both calls want the token in s: the move takes it to c (skip then
 * fires into END and completes the instance), the completion of the
 * review takes it to a. The root lock orders them; whichever comes second
 * finds the token gone. */
WF_TEST(test_modify_racing_complete_task)
{
    char *key = deploy_review_net("modrace", u("ship"));
    wf_client *ops_c = as("ops"), *alice_c = as("alice");
    int rounds = wf_test_store_is_pg() ? 20 : 60, modify_won = 0, complete_won = 0;
    for (int i = 0; i < rounds; i++) {
        Workflow__V1__Instance *in = start_boss(key, NULL);
        Workflow__V1__Task *review = task_of(get_instance(in->id), "review", TS_OPEN);
        ck_assert_ptr_nonnull(review);
        pthread_barrier_t gate;
        pthread_barrier_init(&gate, NULL, 2);
        struct racer m = {.gate = &gate, .client = ops_c, .instance_id = in->id};
        struct racer c = {.gate = &gate, .client = alice_c, .task_id = review->id};
        pthread_t a, b;
        pthread_create(&a, NULL, race_modify, &m);
        pthread_create(&b, NULL, race_complete, &c);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        pthread_barrier_destroy(&gate);
        Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
        if (m.st.code == 0) {
            /* The move came first: the task was withdrawn under alice, and
             * the token went on to END through skip. */
            ck_assert_msg(c.st.code == GRPC_STATUS_FAILED_PRECONDITION, "round %d: %s", i,
                          c.st.reason);
            ck_assert_str_eq(c.st.reason, "TASK_NOT_OPEN");
            ck_assert_int_eq(g->instance->status, I_COMPLETED);
            ck_assert_int_eq(marking(g, "e"), 1);
            modify_won++;
        } else {
            /* The completion came first: s is empty, the move is refused. */
            ck_ok(c.st);
            ck_assert_str_eq(m.st.reason, "TOKENS_NOT_HELD");
            ck_assert_int_eq(g->instance->status, I_RUNNING);
            ck_assert_int_eq(marking(g, "s"), 0);
            ck_assert_int_eq(marking(g, "a"), 1);
            complete_won++;
        }
        int tokens = 0;
        for (size_t k = 0; k < g->n_marking; k++)
            tokens += g->marking[k]->value;
        ck_assert_int_eq(tokens, 1);
    }
    printf("%s: ModifyInstance vs CompleteTask: the move won %d times, the completion %d times\n",
           wf_test_store_name(), modify_won, complete_won);
    ck_assert_int_eq(modify_won + complete_won, rounds);
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite("e2e_modify", wf_test_store_name(), setup, teardown, 60));
}
