/*
 * End-to-end tests over gRPC, on the memory store and on Postgres
 * (WF_TEST_STORE=pg), of CALL transitions (call activities): a child
 * instance of another definition in the caller's tree,
 *   - completes: its input mapped from the caller, its output merged back,
 *     the CALL transition fires and the caller ends;
 *   - fails for good: the caller's incident CALL_CHILD_FAILED names the
 *     child; RetryInstance of the child resolves both;
 *   - cancel of the caller cancels the child; a withdrawn CALL item
 *     (deferred choice) cancels its child;
 *   - suspend of the caller holds the child's jobs, resume lets them go;
 *   - a pinned version is started, not the newest;
 *   - a chain deeper than WF_CALL_MAX_DEPTH stops with CALL_DEPTH_EXCEEDED;
 *   - an unknown key is CALL_DEFINITION_NOT_FOUND until it is deployed and
 *     the caller retried;
 *   - deploy refuses a CALL without key and call fields on other triggers;
 *   - the caller's CALL_STARTED, CALL_COMPLETED and CALL_FAILED events, as
 *     the store holds them and as WatchEvents sends them;
 *   - CancelInstance of the child gives the caller CALL_CHILD_CANCELLED;
 *   - GetDiagram draws the child's marking by the child's own id.
 *
 * Postgres keeps rows between runs: every key and job type is unique to
 * the test (u()).
 */
#include <stdio.h>
#include <string.h>

#include <grpc/status.h>
#include <jansson.h>

#include "net_kit.h"
#include "test_support.h"
#include "wf_arena.h"
#include "workflow/v1/workflow.pb-c.h"

#define T_CALL WORKFLOW__V1__TRIGGER__TRIGGER_CALL
#define I_CANCELLED WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_CANCELLED
#define I_SUSPENDED WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_SUSPENDED

/* ---- definitions ----------------------------------------------------------------------------- */

/* s -> pay (CALL key, version, input, output) -> e. */
static nb *
caller_net(const char *key, const char *callee, int32_t version, const char *input,
           const char *output)
{
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "e", END);
    Workflow__V1__Transition *t = trans(n, "pay", T_CALL);
    t->call_definition_key = (char *)callee;
    t->call_version = version;
    t->call_input_expression = (char *)(input != NULL ? input : "");
    t->call_output_expression = (char *)(output != NULL ? output : "");
    arc(n, "s", "pay");
    arc(n, "pay", "e");
    return n;
}

/* The only child of id (asserted). */
static Workflow__V1__Instance *
only_child(const char *id)
{
    Workflow__V1__GetInstanceResponse *g = get_instance(id);
    ck_assert_uint_eq(g->n_children, 1);
    return g->children[0];
}

static Workflow__V1__Instance *
cancel_ok(const char *id)
{
    Workflow__V1__CancelInstanceRequest req = WORKFLOW__V1__CANCEL_INSTANCE_REQUEST__INIT;
    req.instance_id = (char *)id;
    wf_client_status st;
    Workflow__V1__CancelInstanceResponse *r =
        call(as("ops"), "CancelInstance", &req, &workflow__v1__cancel_instance_response__descriptor,
             &st);
    ck_ok(st);
    return r->instance;
}

static void
suspend_or_resume(const char *method, const char *id)
{
    wf_client_status st;
    if (strcmp(method, "SuspendInstance") == 0) {
        Workflow__V1__SuspendInstanceRequest req = WORKFLOW__V1__SUSPEND_INSTANCE_REQUEST__INIT;
        req.instance_id = (char *)id;
        call(as("ops"), method, &req, &workflow__v1__suspend_instance_response__descriptor, &st);
    } else {
        Workflow__V1__ResumeInstanceRequest req = WORKFLOW__V1__RESUME_INSTANCE_REQUEST__INIT;
        req.instance_id = (char *)id;
        call(as("ops"), method, &req, &workflow__v1__resume_instance_response__descriptor, &st);
    }
    ck_ok(st);
}

static const char *
str_of(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s != NULL ? s : "";
}

/* The CALL_* events of root's tree as WatchEvents sends them with those
 * types asked for (history only), their numbers in types[]; the count. */
static size_t
watched_call_events(const char *root, int types[], size_t cap)
{
    Workflow__V1__EventType only[] = {WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_CALL_STARTED,
                                      WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_CALL_COMPLETED,
                                      WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_CALL_FAILED};
    Workflow__V1__WatchEventsRequest req = WORKFLOW__V1__WATCH_EVENTS_REQUEST__INIT;
    req.instance_id = (char *)root;
    req.types = only;
    req.n_types = 3;
    wf_client_stream *s = wf_client_stream_open(
        as(NULL), "/workflow.v1.WorkflowService/WatchEvents", &req.base, NULL);
    ck_assert_ptr_nonnull(s);
    size_t n = 0;
    ProtobufCMessage *m;
    wf_client_status st;
    for (int guard = 0;
         guard < 100 &&
         wf_client_stream_next(s, &workflow__v1__watch_events_response__descriptor, &m, &st);
         guard++) {
        if (n < cap)
            types[n] = ((Workflow__V1__WatchEventsResponse *)m)->event->type;
        n++;
        protobuf_c_message_free_unpacked(m, NULL);
    }
    wf_client_stream_close(s);
    ck_ok(st);
    return n;
}

/* ---- complete ------------------------------------------------------------------------------- */

WF_CASE_TEST(wf_test_store_name(), test_call_completes_with_output_mapped)
{
    char *child = u("payment"), *parent = u("checkout"), *type = u("charge");
    ck_assert(deploy(job_net(child, type, 3, 0))->created);
    ck_assert(deploy(caller_net(parent, child, 0, "{amount: .total, currency: \"EUR\"}",
                                "{receipt: .receipt}"))
                  ->created);
    Workflow__V1__Instance *in = start_boss(parent, "{\"total\": 120, \"note\": \"x\"}");
    ck_assert_int_eq(in->status, I_RUNNING);

    Workflow__V1__Instance *c = only_child(in->id);
    ck_assert_str_eq(c->definition_key, child);
    ck_assert_int_eq(c->definition_version, 1);
    ck_assert_int_eq(c->status, I_RUNNING);
    ck_assert_str_eq(c->parent_instance_id, in->id);
    ck_assert_str_eq(c->root_instance_id, in->id);
    ck_assert_str_eq(var_of(c->variables_json, "amount"), "120");
    ck_assert_str_eq(var_of(c->variables_json, "currency"), "\"EUR\"");
    ck_assert_str_eq(var_of(c->variables_json, "note"), "");
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_uint_eq(g->n_calls, 1);
    ck_assert_str_eq(g->calls[0]->instance_id, c->id);
    ck_assert_str_eq(g->calls[0]->transition_id, "pay");
    ck_assert_str_eq(g->calls[0]->definition_key, child);
    ck_assert_int_eq(g->calls[0]->definition_version, 1);
    ck_assert_int_eq(g->calls[0]->status, I_RUNNING);

    Workflow__V1__Job *j = one_job(type);
    ck_assert_str_eq(j->instance_id, c->id);
    wf_client_status st;
    ck_assert_int_eq(complete_job_c(as(NULL), j->key, "{\"receipt\": \"r-1\", \"fee\": 2}", &st),
                     0);

    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_uint_eq(g->n_calls, 1);
    ck_assert_int_eq(g->calls[0]->status, I_COMPLETED);
    ck_assert_str_eq(var_of(g->instance->variables_json, "receipt"), "\"r-1\"");
    ck_assert_str_eq(var_of(g->instance->variables_json, "fee"), "");
    ck_assert_str_eq(var_of(g->instance->variables_json, "total"), "120");
    ck_assert_int_eq(g->children[0]->status, I_COMPLETED);
    /* The child's end and the caller's step are one unit of work: its
     * events are in the tree, the child's completion before the firing. */
    const char *types = event_types(in->id);
    ck_assert_int_eq(count_of(types, "INSTANCE_COMPLETED"), 2);
    ck_assert_int_eq(count_of(types, "INSTANCE_STARTED"), 2);
}
END_TEST

/* ---- fail and retry -------------------------------------------------------------------------- */

WF_CASE_TEST(wf_test_store_name(), test_call_child_failure_is_callers_incident_until_child_retry)
{
    char *child = u("payment"), *parent = u("checkout"), *type = u("charge");
    ck_assert(deploy(job_net(child, type, 1, 0))->created);
    ck_assert(deploy(caller_net(parent, child, 0, "{amount: .total}", "{receipt}"))->created);
    Workflow__V1__Instance *in = start_boss(parent, "{\"total\": 5}");
    Workflow__V1__Job *j = one_job(type);
    wf_client_status st;
    ck_assert_int_eq(fail_job(j->key, "card declined", 0, -1, &st), 0);

    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_FAILED);
    ck_assert_msg(strstr(g->last_error, j->instance_id) != NULL, "%s", g->last_error);
    ck_assert_msg(strstr(g->last_error, "card declined") != NULL, "%s", g->last_error);
    ck_assert_int_eq(g->children[0]->status, I_FAILED);
    Workflow__V1__ListIncidentsRequest lr = WORKFLOW__V1__LIST_INCIDENTS_REQUEST__INIT;
    lr.definition_key = parent;
    Workflow__V1__ListIncidentsResponse *li = call(
        as(NULL), "ListIncidents", &lr, &workflow__v1__list_incidents_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(li->n_incidents, 1);
    ck_assert_str_eq(li->incidents[0]->code, "CALL_CHILD_FAILED");
    ck_assert_str_eq(li->incidents[0]->transition_id, "pay");

    /* Retrying the caller changes nothing: the child holds the incident. */
    ck_assert_int_eq(retry_c(in->id, &st)->status, I_FAILED);
    ck_ok(st);
    /* Retrying the child resolves both. */
    ck_assert_int_eq(retry_c(j->instance_id, &st)->status, I_RUNNING);
    ck_ok(st);
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_RUNNING);
    ck_assert_int_eq(count_of(event_types(in->id), "INCIDENT_RESOLVED"), 2);

    j = one_job(type);
    ck_assert_int_eq(complete_job_c(as(NULL), j->key, "{\"receipt\": \"r-2\"}", &st), 0);
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_str_eq(var_of(g->instance->variables_json, "receipt"), "\"r-2\"");
}
END_TEST

/* ---- cancel, withdraw, suspend -----------------------------------------------------------------
 */

WF_CASE_TEST(wf_test_store_name(), test_call_cancel_of_caller_cancels_child)
{
    char *child = u("payment"), *parent = u("checkout"), *type = u("charge");
    ck_assert(deploy(job_net(child, type, 3, 0))->created);
    ck_assert(deploy(caller_net(parent, child, 0, NULL, NULL))->created);
    Workflow__V1__Instance *in = start_boss(parent, NULL);
    Workflow__V1__Job *j = one_job(type);
    ck_assert_int_eq(cancel_ok(in->id)->status, I_CANCELLED);
    ck_assert_int_eq(only_child(in->id)->status, I_CANCELLED);
    wf_client_status st;
    ck_assert_int_ne(complete_job_c(as(NULL), j->key, NULL, &st), 0);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_CANCELLED);
}
END_TEST

WF_CASE_TEST(wf_test_store_name(), test_call_withdrawn_by_deferred_choice_cancels_child)
{
    char *child = u("payment"), *parent = u("checkout"), *type = u("charge");
    ck_assert(deploy(job_net(child, type, 3, 0))->created);
    nb *n = caller_net(parent, child, 0, NULL, NULL);
    trans(n, "abort", T_MSG)->signal_name = "abort";
    arc(n, "s", "abort");
    arc(n, "abort", "e");
    ck_assert(deploy(n)->created);
    Workflow__V1__Instance *in = start_boss(parent, NULL);
    Workflow__V1__Job *j = one_job(type);

    Workflow__V1__SendSignalRequest req = WORKFLOW__V1__SEND_SIGNAL_REQUEST__INIT;
    req.name = "abort";
    req.target_case = WORKFLOW__V1__SEND_SIGNAL_REQUEST__TARGET_INSTANCE_ID;
    req.instance_id = in->id;
    wf_client_status st;
    call(as("ops"), "SendSignal", &req, &workflow__v1__send_signal_response__descriptor, &st);
    ck_ok(st);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_int_eq(g->children[0]->status, I_CANCELLED);
    ck_assert_int_ne(complete_job_c(as(NULL), j->key, NULL, &st), 0);
}
END_TEST

WF_CASE_TEST(wf_test_store_name(), test_call_suspend_and_resume_hold_the_child)
{
    char *child = u("payment"), *parent = u("checkout"), *type = u("charge");
    ck_assert(deploy(job_net(child, type, 3, 0))->created);
    ck_assert(deploy(caller_net(parent, child, 0, NULL, NULL))->created);
    Workflow__V1__Instance *in = start_boss(parent, NULL);
    suspend_or_resume("SuspendInstance", in->id);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_SUSPENDED);
    /* The child is in the suspended tree: its job is not leased. */
    ck_assert_uint_eq(activate(type, 5, 0, 0)->n_jobs, 0);
    suspend_or_resume("ResumeInstance", in->id);
    Workflow__V1__Job *j = one_job(type);
    wf_client_status st;
    ck_assert_int_eq(complete_job_c(as(NULL), j->key, NULL, &st), 0);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
}
END_TEST

/* ---- versions, depth, unknown keys
 * --------------------------------------------------------------- */

WF_CASE_TEST(wf_test_store_name(), test_call_pinned_version_is_started)
{
    char *child = u("payment"), *type1 = u("charge-v1"), *type2 = u("charge-v2");
    ck_assert(deploy(job_net(child, type1, 3, 0))->created);
    ck_assert(deploy(job_net(child, type2, 3, 0))->created);
    char *pinned = u("pinned"), *latest = u("latest");
    ck_assert(deploy(caller_net(pinned, child, 1, NULL, NULL))->created);
    ck_assert(deploy(caller_net(latest, child, 0, NULL, NULL))->created);
    Workflow__V1__Instance *a = start_boss(pinned, NULL);
    Workflow__V1__Instance *b = start_boss(latest, NULL);
    ck_assert_int_eq(only_child(a->id)->definition_version, 1);
    ck_assert_int_eq(only_child(b->id)->definition_version, 2);
    ck_assert_str_eq(one_job(type1)->instance_id, only_child(a->id)->id);
    ck_assert_str_eq(one_job(type2)->instance_id, only_child(b->id)->id);
    /* GetDiagram draws the call as a box with a double border, labelled
     * with the key and the pinned version. */
    Workflow__V1__GetDiagramRequest dr = WORKFLOW__V1__GET_DIAGRAM_REQUEST__INIT;
    dr.definition_key = pinned;
    dr.format = WORKFLOW__V1__DIAGRAM_FORMAT__DIAGRAM_FORMAT_DOT;
    wf_client_status st;
    Workflow__V1__GetDiagramResponse *d =
        call(as(NULL), "GetDiagram", &dr, &workflow__v1__get_diagram_response__descriptor, &st);
    ck_ok(st);
    char want[256];
    snprintf(want, sizeof want, "CALL %s v1", child);
    ck_assert_msg(strstr(d->content, want) != NULL, "%s", d->content);
    ck_assert_msg(strstr(d->content, "shape=box, peripheries=2") != NULL, "%s", d->content);
}
END_TEST

static void
setup_depth3(void)
{
    const char *env[] = {"WF_CALL_MAX_DEPTH=3", NULL};
    setup_with(env);
}

WF_CASE_TEST("depth", test_call_depth_bound)
{
    char *key = u("recursive");
    ck_assert(deploy(caller_net(key, key, 0, ".", NULL))->created);
    Workflow__V1__Instance *in = start_boss(key, "{\"n\": 1}");
    /* Levels 1 to 3 start; the call of level 4 is refused at level 3. */
    const char *id = in->id;
    for (int level = 1; level <= 3; level++) {
        Workflow__V1__GetInstanceResponse *g = get_instance(id);
        ck_assert_int_eq(g->instance->status, I_FAILED);
        ck_assert_uint_eq(g->n_children, 1);
        id = wf_arena_strdup(ta, g->children[0]->id);
    }
    Workflow__V1__GetInstanceResponse *g = get_instance(id);
    ck_assert_int_eq(g->instance->status, I_FAILED);
    ck_assert_uint_eq(g->n_children, 0);
    ck_assert_msg(strstr(g->last_error, "deeper than 3") != NULL, "%s", g->last_error);
    Workflow__V1__ListIncidentsRequest lr = WORKFLOW__V1__LIST_INCIDENTS_REQUEST__INIT;
    lr.code = "CALL_DEPTH_EXCEEDED";
    lr.definition_key = key;
    wf_client_status st;
    Workflow__V1__ListIncidentsResponse *li = call(
        as(NULL), "ListIncidents", &lr, &workflow__v1__list_incidents_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(li->n_incidents, 1);
    ck_assert_str_eq(li->incidents[0]->instance_id, id);
}
END_TEST

WF_CASE_TEST(wf_test_store_name(), test_call_unknown_key_is_incident_until_deployed_and_retried)
{
    char *child = u("later"), *parent = u("checkout"), *type = u("charge");
    ck_assert(deploy(caller_net(parent, child, 0, NULL, "{done: true}"))->created);
    Workflow__V1__Instance *in = start_boss(parent, NULL);
    ck_assert_int_eq(in->status, I_FAILED);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_uint_eq(g->n_children, 0);
    ck_assert_msg(strstr(g->last_error, child) != NULL, "%s", g->last_error);
    Workflow__V1__ListIncidentsRequest lr = WORKFLOW__V1__LIST_INCIDENTS_REQUEST__INIT;
    lr.definition_key = parent;
    wf_client_status st;
    Workflow__V1__ListIncidentsResponse *li = call(
        as(NULL), "ListIncidents", &lr, &workflow__v1__list_incidents_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(li->n_incidents, 1);
    ck_assert_str_eq(li->incidents[0]->code, "CALL_DEFINITION_NOT_FOUND");

    ck_assert(deploy(job_net(child, type, 3, 0))->created);
    retry_c(in->id, &st);
    ck_ok(st);
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_RUNNING);
    ck_assert_uint_eq(g->n_children, 1);
    ck_assert_int_eq(complete_job_c(as(NULL), one_job(type)->key, NULL, &st), 0);
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_str_eq(var_of(g->instance->variables_json, "done"), "true");
}
END_TEST

/* ---- events, a child cancelled, the child's diagram ------------------------------------------ */

WF_CASE_TEST(wf_test_store_name(), test_call_events_tell_start_and_return)
{
    char *child = u("payment"), *parent = u("checkout"), *type = u("charge");
    ck_assert(deploy(job_net(child, type, 3, 0))->created);
    ck_assert(deploy(caller_net(parent, child, 0, NULL, NULL))->created);
    Workflow__V1__Instance *in = start_boss(parent, NULL);
    const char *cid = wf_arena_strdup(ta, only_child(in->id)->id);
    json_t *d = event_data(in->id, "CALL_STARTED");
    ck_assert_str_eq(str_of(d, "transitionId"), "pay");
    ck_assert_str_eq(str_of(d, "workItemId"), cid);
    ck_assert_str_eq(str_of(d, "childInstanceId"), cid);
    ck_assert_str_eq(str_of(d, "definitionKey"), child);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "definitionVersion")), 1);
    json_decref(d);
    ck_assert_str_eq(last_event(in->id, "CALL_STARTED")->instance_id, in->id);
    ck_assert_ptr_null(last_event(in->id, "CALL_COMPLETED"));

    wf_client_status st;
    ck_assert_int_eq(complete_job_c(as(NULL), one_job(type)->key, NULL, &st), 0);
    d = event_data(in->id, "CALL_COMPLETED");
    ck_assert_str_eq(str_of(d, "childInstanceId"), cid);
    ck_assert_str_eq(str_of(d, "definitionKey"), child);
    json_decref(d);
    int types[8];
    ck_assert_uint_eq(watched_call_events(in->id, types, 8), 2);
    ck_assert_int_eq(types[0], WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_CALL_STARTED);
    ck_assert_int_eq(types[1], WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_CALL_COMPLETED);
    ck_assert_ptr_null(last_event(in->id, "CALL_FAILED"));
}
END_TEST

WF_CASE_TEST(wf_test_store_name(), test_call_failed_event_names_child_and_reason)
{
    char *child = u("payment"), *parent = u("checkout"), *type = u("charge");
    ck_assert(deploy(job_net(child, type, 1, 0))->created);
    ck_assert(deploy(caller_net(parent, child, 0, NULL, NULL))->created);
    Workflow__V1__Instance *in = start_boss(parent, NULL);
    Workflow__V1__Job *j = one_job(type);
    wf_client_status st;
    ck_assert_int_eq(fail_job(j->key, "card declined", 0, -1, &st), 0);
    json_t *d = event_data(in->id, "CALL_FAILED");
    ck_assert_str_eq(str_of(d, "reason"), "CALL_CHILD_FAILED");
    ck_assert_str_eq(str_of(d, "childInstanceId"), j->instance_id);
    ck_assert_str_eq(str_of(d, "transitionId"), "pay");
    json_decref(d);
    int types[8];
    ck_assert_uint_eq(watched_call_events(in->id, types, 8), 2);
    ck_assert_int_eq(types[1], WORKFLOW__V1__EVENT_TYPE__EVENT_TYPE_CALL_FAILED);

    /* A key not deployed: CALL_FAILED without a child. */
    char *lost = u("lost");
    ck_assert(deploy(caller_net(lost, u("nowhere"), 0, NULL, NULL))->created);
    in = start_boss(lost, NULL);
    ck_assert_int_eq(in->status, I_FAILED);
    d = event_data(in->id, "CALL_FAILED");
    ck_assert_str_eq(str_of(d, "reason"), "CALL_DEFINITION_NOT_FOUND");
    ck_assert_str_eq(str_of(d, "childInstanceId"), "");
    json_decref(d);
    ck_assert_ptr_null(last_event(in->id, "CALL_STARTED"));
}
END_TEST

WF_CASE_TEST(wf_test_store_name(), test_call_child_cancelled_directly_is_callers_incident)
{
    char *child = u("payment"), *parent = u("checkout"), *type = u("charge");
    ck_assert(deploy(job_net(child, type, 3, 0))->created);
    ck_assert(deploy(caller_net(parent, child, 0, NULL, NULL))->created);
    Workflow__V1__Instance *in = start_boss(parent, NULL);
    Workflow__V1__Job *j = one_job(type);
    ck_assert_int_eq(cancel_ok(j->instance_id)->status, I_CANCELLED);

    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_FAILED);
    ck_assert_int_eq(g->children[0]->status, I_CANCELLED);
    ck_assert_msg(strstr(g->last_error, j->instance_id) != NULL, "%s", g->last_error);
    ck_assert_uint_eq(g->n_calls, 1);
    ck_assert_int_eq(g->calls[0]->status, I_CANCELLED);
    Workflow__V1__ListIncidentsRequest lr = WORKFLOW__V1__LIST_INCIDENTS_REQUEST__INIT;
    lr.definition_key = parent;
    wf_client_status st;
    Workflow__V1__ListIncidentsResponse *li = call(
        as(NULL), "ListIncidents", &lr, &workflow__v1__list_incidents_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(li->n_incidents, 1);
    ck_assert_str_eq(li->incidents[0]->code, "CALL_CHILD_CANCELLED");
    ck_assert_str_eq(li->incidents[0]->transition_id, "pay");
    json_t *d = event_data(in->id, "CALL_FAILED");
    ck_assert_str_eq(str_of(d, "reason"), "CALL_CHILD_CANCELLED");
    ck_assert_str_eq(str_of(d, "childInstanceId"), j->instance_id);
    json_decref(d);
    /* The child's job went with it; no retry resolves the caller. */
    ck_assert_int_ne(complete_job_c(as(NULL), j->key, NULL, &st), 0);
    ck_assert_int_eq(retry_c(in->id, &st)->status, I_FAILED);
    ck_ok(st);
    /* Cancelling it again is refused as for any ended instance. */
    Workflow__V1__CancelInstanceRequest cr = WORKFLOW__V1__CANCEL_INSTANCE_REQUEST__INIT;
    cr.instance_id = j->instance_id;
    call(as("ops"), "CancelInstance", &cr, &workflow__v1__cancel_instance_response__descriptor,
         &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "INSTANCE_NOT_RUNNING");
    ck_assert_int_eq(cancel_ok(in->id)->status, I_CANCELLED);
}
END_TEST

WF_CASE_TEST(wf_test_store_name(), test_call_child_diagram_by_its_own_id)
{
    char *child = u("payment"), *parent = u("checkout"), *type = u("charge");
    ck_assert(deploy(job_net(child, type, 3, 0))->created);
    ck_assert(deploy(caller_net(parent, child, 0, NULL, NULL))->created);
    Workflow__V1__Instance *in = start_boss(parent, NULL);
    const char *cid = wf_arena_strdup(ta, only_child(in->id)->id);
    Workflow__V1__GetDiagramRequest dr = WORKFLOW__V1__GET_DIAGRAM_REQUEST__INIT;
    dr.instance_id = (char *)cid;
    dr.format = WORKFLOW__V1__DIAGRAM_FORMAT__DIAGRAM_FORMAT_DOT;
    wf_client_status st;
    Workflow__V1__GetDiagramResponse *d =
        call(as(NULL), "GetDiagram", &dr, &workflow__v1__get_diagram_response__descriptor, &st);
    ck_ok(st);
    char want[160];
    snprintf(want, sizeof want, "\\ninstance %s: RUNNING\"", cid);
    ck_assert_msg(strstr(d->content, want) != NULL, "%s", d->content);
    /* The child's own net, its job's transition enabled. */
    ck_assert_msg(strstr(d->content, "\"work\" [") != NULL, "%s", d->content);
    ck_assert_msg(strstr(d->content, "\\nenabled\"") != NULL, "%s", d->content);
    ck_assert_msg(strstr(d->content, "\"pay\" [") == NULL, "%s", d->content);
}
END_TEST

/* ---- deploy --------------------------------------------------------------------------------- */

WF_CASE_TEST(wf_test_store_name(), test_call_deploy_refusals)
{
    wf_client_status st;
    nb *n = caller_net(u("nokey"), "", 0, NULL, NULL);
    ck_assert_ptr_null(deploy_d(as("dev"), &n->d, false, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "DEFINITION_INVALID");
    ck_assert(
        has_violation(&st, "definition.transitions[0].call_definition_key", "CALL_KEY_MISSING"));

    n = caller_net(u("badver"), "x", -1, "{", NULL);
    ck_assert_ptr_null(deploy_d(as("dev"), &n->d, false, &st));
    ck_assert(has_violation(&st, "definition.transitions[0].call_version", "CALL_VERSION_INVALID"));
    ck_assert(has_violation(&st, "definition.transitions[0].call_input_expression",
                            "EXPRESSION_INVALID"));

    n = job_net(u("conflict"), "t", 3, 0);
    n->t[0]->call_definition_key = "x";
    ck_assert_ptr_null(deploy_d(as("dev"), &n->d, false, &st));
    ck_assert(has_violation(&st, "definition.transitions[0].call_definition_key",
                            "TRIGGER_FIELD_CONFLICT"));

    /* A CALL to a key not deployed yet is accepted (it may come later). */
    char *later = u("not-yet");
    n = caller_net(u("ahead"), later, 0, NULL, NULL);
    ck_assert_ptr_nonnull(deploy_d(as("dev"), &n->d, false, &st));
    ck_ok(st);
    /* ... unless the transition asks for the check. */
    n = caller_net(u("strict"), later, 0, NULL, NULL);
    n->t[0]->call_require_deployed = true;
    ck_assert_ptr_null(deploy_d(as("dev"), &n->d, false, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "DEFINITION_INVALID");
    ck_assert(has_violation(&st, "definition.transitions[0].call_definition_key",
                            "CALL_DEFINITION_NOT_FOUND"));
    ck_assert(deploy(job_net(later, u("charge"), 3, 0))->created);
    ck_assert_ptr_nonnull(deploy_d(as("dev"), &n->d, false, &st));
    ck_ok(st);
    /* A pinned version that does not exist fails the check too. */
    n = caller_net(u("strict-v"), later, 7, NULL, NULL);
    n->t[0]->call_require_deployed = true;
    ck_assert_ptr_null(deploy_d(as("dev"), &n->d, false, &st));
    ck_assert(has_violation(&st, "definition.transitions[0].call_definition_key",
                            "CALL_DEFINITION_NOT_FOUND"));
    n = job_net(u("conflict2"), "t", 3, 0);
    n->t[0]->call_require_deployed = true;
    ck_assert_ptr_null(deploy_d(as("dev"), &n->d, false, &st));
    ck_assert(has_violation(&st, "definition.transitions[0].call_require_deployed",
                            "TRIGGER_FIELD_CONFLICT"));
}
END_TEST

int
main(void)
{
    const wf_test_case cases[] = {
        {wf_test_store_name(), setup, teardown, 60}, {"depth", setup_depth3, teardown, 60}, {NULL}};
    return wf_test_run(wf_test_suite_of("e2e_calls", cases));
}
