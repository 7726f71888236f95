/*
 * End-to-end tests of TaskFlow's ad-hoc referral workflows over gRPC, run
 * on the memory store and on Postgres (WF_TEST_STORE=pg): StartInstance,
 * AssignTo, the inbox, claim/release/complete, joins (also under
 * concurrent completion), CompleteAndEnd, ListInstances, CancelInstance,
 * assignees from an ids_expression, idempotency, tenancy, the directory
 * and the events each change writes.
 *
 * Postgres keeps rows between tests, so every test names its own users,
 * groups and definition keys with a unique suffix.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <grpc/status.h>

#include "expr.h"
#include "net_kit.h"
#include "test_support.h"
#include "workflow/v1/workflow.pb-c.h"

#define SVC "/workflow.v1.WorkflowService/"

static void
setup_static(void)
{
    const char *env[] = {"WF_GROUP_it=alice,bob", "WF_USERS=carol", NULL};
    setup_with(env);
}

static void
setup_trusted(void)
{
    const char *env[] = {"WF_TRUST_ACTOR_GROUPS=true", NULL};
    setup_with(env);
}

/* ---- call helpers ------------------------------------------------------------------------ */

static Workflow__V1__Instance *
start_rid(wf_client *c, const char *key, const char *vars, const char *rid, wf_client_status *st)
{
    Workflow__V1__StartInstanceRequest req = WORKFLOW__V1__START_INSTANCE_REQUEST__INIT;
    req.definition_key = (char *)key;
    req.variables_json = (char *)(vars != NULL ? vars : "");
    req.request_id = (char *)(rid != NULL ? rid : "");
    Workflow__V1__StartInstanceResponse *r =
        call(c, "StartInstance", &req, &workflow__v1__start_instance_response__descriptor, st);
    return r != NULL ? r->instance : NULL;
}

static const char *
start(wf_client *c)
{
    wf_client_status st;
    Workflow__V1__Instance *in = start_rid(c, u("process"), "{}", NULL, &st);
    ck_ok(st);
    return in->id;
}

/* Fills an AssignToRequest (assignee and join in caller storage). */
static void
mk_assign(Workflow__V1__AssignToRequest *r, Workflow__V1__Assignee *a, Workflow__V1__JoinPolicy *j,
          const char *parent, Workflow__V1__AssigneeKind kind, char **ids, size_t n)
{
    workflow__v1__assign_to_request__init(r);
    workflow__v1__assignee__init(a);
    workflow__v1__join_policy__init(j);
    r->parent_instance_id = (char *)(parent != NULL ? parent : "");
    r->title = "Review the request";
    a->kind = kind;
    a->ids = ids;
    a->n_ids = n;
    r->assignee = a;
    r->join = j;
}

static Workflow__V1__AssignToResponse *
assign_req(wf_client *c, const Workflow__V1__AssignToRequest *r, wf_client_status *st)
{
    return call(c, "AssignTo", r, &workflow__v1__assign_to_response__descriptor, st);
}

static Workflow__V1__AssignToResponse *
assign(wf_client *c, const char *parent, Workflow__V1__AssigneeKind kind, char **ids, size_t n)
{
    Workflow__V1__AssignToRequest r;
    Workflow__V1__Assignee a;
    Workflow__V1__JoinPolicy j;
    wf_client_status st;
    mk_assign(&r, &a, &j, parent, kind, ids, n);
    Workflow__V1__AssignToResponse *resp = assign_req(c, &r, &st);
    ck_ok(st);
    return resp;
}

#define USER WORKFLOW__V1__ASSIGNEE_KIND__ASSIGNEE_KIND_USER
#define GROUP WORKFLOW__V1__ASSIGNEE_KIND__ASSIGNEE_KIND_GROUP
#define USERS WORKFLOW__V1__ASSIGNEE_KIND__ASSIGNEE_KIND_USERS
#define T_OPEN WORKFLOW__V1__TASK_STATUS__TASK_STATUS_OPEN
#define T_CLAIMED WORKFLOW__V1__TASK_STATUS__TASK_STATUS_CLAIMED
#define T_DONE WORKFLOW__V1__TASK_STATUS__TASK_STATUS_DONE
#define T_CANCELLED WORKFLOW__V1__TASK_STATUS__TASK_STATUS_CANCELLED
#define I_RUNNING WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_RUNNING
#define I_COMPLETED WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_COMPLETED
#define I_CANCELLED WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_CANCELLED

static Workflow__V1__Task *
task_call(wf_client *c, const char *method, const char *task_id, const char *rid,
          wf_client_status *st)
{
    /* ClaimTask and ReleaseTask share one request and response shape. */
    Workflow__V1__ClaimTaskRequest req = WORKFLOW__V1__CLAIM_TASK_REQUEST__INIT;
    req.task_id = (char *)task_id;
    req.request_id = (char *)(rid != NULL ? rid : "");
    Workflow__V1__ClaimTaskResponse *r =
        call(c, method, &req, &workflow__v1__claim_task_response__descriptor, st);
    return r != NULL ? r->task : NULL;
}

static Workflow__V1__Task *
claim(wf_client *c, const char *task_id, wf_client_status *st)
{
    return task_call(c, "ClaimTask", task_id, NULL, st);
}

static Workflow__V1__Task *
release(wf_client *c, const char *task_id, wf_client_status *st)
{
    return task_call(c, "ReleaseTask", task_id, NULL, st);
}

static Workflow__V1__CompleteTaskResponse *
complete_rid(wf_client *c, const char *task_id, const char *vars, const char *rid,
             wf_client_status *st)
{
    Workflow__V1__CompleteTaskRequest req = WORKFLOW__V1__COMPLETE_TASK_REQUEST__INIT;
    req.task_id = (char *)task_id;
    req.variables_json = (char *)(vars != NULL ? vars : "");
    req.request_id = (char *)(rid != NULL ? rid : "");
    return call(c, "CompleteTask", &req, &workflow__v1__complete_task_response__descriptor, st);
}

static Workflow__V1__CompleteTaskResponse *
complete(wf_client *c, const char *task_id, wf_client_status *st)
{
    return complete_rid(c, task_id, NULL, NULL, st);
}

static Workflow__V1__Task *
get_task(wf_client *c, const char *task_id, wf_client_status *st)
{
    Workflow__V1__GetTaskRequest req = WORKFLOW__V1__GET_TASK_REQUEST__INIT;
    req.task_id = (char *)task_id;
    Workflow__V1__GetTaskResponse *r =
        call(c, "GetTask", &req, &workflow__v1__get_task_response__descriptor, st);
    return r != NULL ? r->task : NULL;
}

static Workflow__V1__GetInstanceResponse *
get_inst(wf_client *c, const char *id, wf_client_status *st)
{
    Workflow__V1__GetInstanceRequest req = WORKFLOW__V1__GET_INSTANCE_REQUEST__INIT;
    req.instance_id = (char *)id;
    return call(c, "GetInstance", &req, &workflow__v1__get_instance_response__descriptor, st);
}

static Workflow__V1__GetCompletionResponse *
completion(wf_client *c, const char *id, wf_client_status *st)
{
    Workflow__V1__GetCompletionRequest req = WORKFLOW__V1__GET_COMPLETION_REQUEST__INIT;
    req.instance_id = (char *)id;
    return call(c, "GetCompletion", &req, &workflow__v1__get_completion_response__descriptor, st);
}

static Workflow__V1__ListTasksResponse *
list_tasks(wf_client *c, const char *user, const char *group, int page_size, const char *token,
           wf_client_status *st)
{
    Workflow__V1__ListTasksRequest req = WORKFLOW__V1__LIST_TASKS_REQUEST__INIT;
    req.user = (char *)(user != NULL ? user : "");
    req.group = (char *)(group != NULL ? group : "");
    req.page_size = page_size;
    req.page_token = (char *)(token != NULL ? token : "");
    return call(c, "ListTasks", &req, &workflow__v1__list_tasks_response__descriptor, st);
}

/* Whether task_id is in the (whole, paged) listing of user or group. */
static bool
listed(wf_client *c, const char *user, const char *group, const char *task_id)
{
    const char *token = NULL;
    do {
        wf_client_status st;
        Workflow__V1__ListTasksResponse *r = list_tasks(c, user, group, 500, token, &st);
        ck_ok(st);
        for (size_t i = 0; i < r->n_tasks; i++)
            if (strcmp(r->tasks[i]->id, task_id) == 0)
                return true;
        token = r->next_page_token;
    } while (token[0] != '\0');
    return false;
}

/* Event types of root's tree, in order, space-separated, read straight
 * from the server's store. */
static char *
tree_events(const char *root, const char *tenant, const char *want_actor)
{
    static char out[4096];
    wf_arena *a = wf_arena_new();
    wf_store_ctx sc = {tenant != NULL ? tenant : "default", 0, a};
    wf_event_filter f = {.instance_id = root};
    wf_event_row *ev;
    size_t n;
    wf_error err;
    wf_code rc = wf_store_read_events(ts.app.store, &sc, 0, &f, 1000, &ev, &n, &err);
    ck_assert_msg(rc == WF_OK, "read_events: %s", err.msg);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(out);
        snprintf(out + len, sizeof out - len, "%s%s", i ? " " : "", ev[i].type);
        ck_assert_str_eq(ev[i].root_id, root);
        ck_assert_ptr_nonnull(ev[i].data_json);
        ck_assert(ev[i].data_json[0] == '{');
        if (want_actor != NULL && strcmp(ev[i].type, "INSTANCE_STARTED") == 0 && i == 0)
            ck_assert_str_eq(ev[i].actor, want_actor);
    }
    wf_arena_free(a);
    return out;
}

/* ---- StartInstance -------------------------------------------------------------------- */

WF_CASE_TEST("open", test_start_creates_an_adhoc_root)
{
    wf_client *boss = as(u("boss"));
    wf_client_status st;
    Workflow__V1__Instance *in = start_rid(boss, u("leave"), " {\"days\": 3} ", NULL, &st);
    ck_ok(st);
    ck_assert_int_eq(in->status, I_RUNNING);
    ck_assert_int_eq(in->definition_version, 1);
    ck_assert_str_eq(in->definition_key, u("leave"));
    ck_assert_str_eq(in->started_by, u("boss"));
    ck_assert_str_eq(in->root_instance_id, in->id);
    ck_assert_str_eq(in->parent_instance_id, "");
    ck_assert_str_eq(in->variables_json, "{\"days\":3}");
    ck_assert_str_eq(in->tenant_id, "default");
    ck_assert_ptr_nonnull(in->created_at);
    ck_assert_ptr_null(in->ended_at);
    /* The second start reuses the definition created by the first. */
    Workflow__V1__Instance *again = start_rid(boss, u("leave"), "", NULL, &st);
    ck_ok(st);
    ck_assert_int_eq(again->definition_version, 1);
    ck_assert_str_eq(again->variables_json, "{}");
    ck_assert_str_ne(again->id, in->id);
    ck_assert_str_eq(tree_events(in->id, NULL, u("boss")), "INSTANCE_STARTED");
}
END_TEST

WF_CASE_TEST("open", test_start_rejects_bad_input)
{
    wf_client *boss = as("boss");
    wf_client_status st;
    ck_assert_ptr_null(start_rid(boss, "k", "[1]", NULL, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_JSON");
    ck_assert_str_eq(st.message, "variables_json must be a JSON object");
    ck_assert_ptr_null(start_rid(boss, "k", "not json", NULL, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_JSON");
    ck_assert_ptr_null(start_rid(boss, "", "", NULL, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_int_eq(st.nviolations, 1);

    Workflow__V1__StartInstanceRequest req = WORKFLOW__V1__START_INSTANCE_REQUEST__INIT;
    Workflow__V1__Aggregate agg = WORKFLOW__V1__AGGREGATE__INIT;
    req.definition_key = "k";
    agg.type = "order";
    req.aggregate = &agg;
    ck_assert_ptr_null(
        call(boss, "StartInstance", &req, &workflow__v1__start_instance_response__descriptor, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    agg.id = "A-1";
    Workflow__V1__StartInstanceResponse *r =
        call(boss, "StartInstance", &req, &workflow__v1__start_instance_response__descriptor, &st);
    ck_ok(st);
    ck_assert_str_eq(r->instance->aggregate->id, "A-1");
    req.aggregate = NULL;
    req.definition_key = u("never");
    req.version = 7;
    ck_assert_ptr_null(
        call(boss, "StartInstance", &req, &workflow__v1__start_instance_response__descriptor, &st));
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "DEFINITION_NOT_FOUND");
    req.version = -1;
    ck_assert_ptr_null(
        call(boss, "StartInstance", &req, &workflow__v1__start_instance_response__descriptor, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    /* Without an actor the interceptor refuses before the handler. */
    ck_assert_ptr_null(start_rid(as(NULL), "k", "", NULL, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "ACTOR_MISSING");
}
END_TEST

WF_CASE_TEST("open", test_start_is_idempotent)
{
    wf_client *boss = as("boss");
    wf_client_status st;
    char *rid = u("req");
    Workflow__V1__Instance *a = start_rid(boss, "k", "{\"x\":1}", rid, &st);
    ck_ok(st);
    Workflow__V1__Instance *b = start_rid(boss, "k", "{\"x\":1}", rid, &st);
    ck_ok(st);
    ck_assert_str_eq(a->id, b->id);
    ck_assert_str_eq(b->variables_json, "{\"x\":1}");
    ck_assert_ptr_null(start_rid(boss, "k", "{\"x\":2}", rid, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "REQUEST_ID_REUSED");
    /* The actor is part of the request. */
    ck_assert_ptr_null(start_rid(as("other"), "k", "{\"x\":1}", rid, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "REQUEST_ID_REUSED");
    /* A failed call is not remembered: the id is free for a good retry. */
    char *rid2 = u("req2");
    ck_assert_ptr_null(start_rid(boss, "k", "[]", rid2, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_JSON");
    ck_assert_ptr_nonnull(start_rid(boss, "k", "{}", rid2, &st));
    ck_ok(st);
    /* Only one root was made for rid. */
    Workflow__V1__ListInstancesRequest lr = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
    lr.started_by = "*";
    lr.definition_key = "k";
    Workflow__V1__ListInstancesResponse *l =
        call(boss, "ListInstances", &lr, &workflow__v1__list_instances_response__descriptor, &st);
    ck_ok(st);
    size_t same = 0;
    for (size_t i = 0; i < l->n_instances; i++)
        same += strcmp(l->instances[i]->id, a->id) == 0;
    ck_assert_uint_eq(same, 1);
}
END_TEST

/* ---- AssignTo ---------------------------------------------------------------------------- */

WF_CASE_TEST("open", test_assign_user_group_and_users)
{
    wf_client *boss = as("boss");
    wf_client_status st;
    const char *root = start(boss);
    char *alice = u("alice"), *bob = u("bob"), *grp = u("grp");
    Workflow__V1__AssignToResponse *r = assign(boss, root, USER, &alice, 1);
    ck_assert_uint_eq(r->n_tasks, 1);
    ck_assert_str_eq(r->task->id, r->tasks[0]->id);
    ck_assert_str_eq(r->task->instance_id, r->instance_id);
    ck_assert_str_eq(r->task->root_instance_id, root);
    ck_assert_str_eq(r->task->definition_key, u("process")); /* inherited */
    ck_assert_int_eq(r->task->assignee_kind, USER);
    ck_assert_str_eq(r->task->assignee_id, alice);
    ck_assert_str_eq(r->task->assigned_by, "boss");
    ck_assert_int_eq(r->task->status, T_OPEN);
    ck_assert_str_eq(r->task->transition_id, "");

    r = assign(boss, root, GROUP, &grp, 1);
    ck_assert_int_eq(r->task->assignee_kind, GROUP);
    char *two[] = {alice, bob};
    r = assign(boss, root, USERS, two, 2);
    ck_assert_uint_eq(r->n_tasks, 2);
    ck_assert_str_eq(r->tasks[1]->assignee_id, bob);
    ck_assert_int_eq(r->tasks[1]->assignee_kind, USER);
    ck_assert_str_eq(r->tasks[0]->instance_id, r->tasks[1]->instance_id);

    Workflow__V1__GetInstanceResponse *gi = get_inst(boss, root, &st);
    ck_ok(st);
    ck_assert_uint_eq(gi->n_children, 3);
    ck_assert_uint_eq(gi->n_tasks, 0); /* tasks live on the referrals */
    ck_assert_str_eq(gi->children[2]->id, r->instance_id);
    ck_assert_str_eq(gi->children[2]->parent_instance_id, root);
    ck_assert_uint_eq(gi->n_joins, 3);
    gi = get_inst(boss, r->instance_id, &st);
    ck_assert_uint_eq(gi->n_tasks, 2);
    ck_assert_int_eq(gi->instance->status, I_RUNNING);

    /* Errors. */
    Workflow__V1__AssignToRequest req;
    Workflow__V1__Assignee a;
    Workflow__V1__JoinPolicy j;
    mk_assign(&req, &a, &j, root, USER, &alice, 1);
    req.definition_key = u("nodef");
    ck_assert_ptr_null(assign_req(boss, &req, &st));
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "DEFINITION_NOT_FOUND");
    req.definition_key = "";
    req.parent_instance_id = "01890000-0000-7000-8000-000000000000";
    ck_assert_ptr_null(assign_req(boss, &req, &st));
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "INSTANCE_NOT_FOUND");
    req.parent_instance_id = "junk";
    ck_assert_ptr_null(assign_req(boss, &req, &st));
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "INSTANCE_NOT_FOUND");
    req.parent_instance_id = (char *)root;
    a.n_ids = 0;
    req.title = "";
    j.mode = WORKFLOW__V1__COMPLETION_MODE__COMPLETION_MODE_QUORUM;
    ck_assert_ptr_null(assign_req(boss, &req, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_int_eq(st.nviolations, 3);
    ck_assert_str_eq(st.violations[0],
                     "title: must be 1 to 512 bytes of text without control characters");
    req.title = "ok";
    a.n_ids = 1;
    j.mode = 0;
    req.variables_json = "[1]";
    ck_assert_ptr_null(assign_req(boss, &req, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_JSON");
}
END_TEST

WF_CASE_TEST("open", test_other_tenant_sees_nothing)
{
    wf_client *a = as_groups("tenant-a", "boss", NULL);
    wf_client *b = as_groups("tenant-b", "boss", NULL);
    wf_client_status st;
    const char *root = start(a);
    char *alice = u("alice");
    Workflow__V1__AssignToResponse *r = assign(a, root, USER, &alice, 1);
    ck_assert_ptr_null(get_inst(b, root, &st));
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "INSTANCE_NOT_FOUND");
    ck_assert_ptr_null(get_task(b, r->task->id, &st));
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "TASK_NOT_FOUND");
    ck_assert_ptr_null(complete(as_groups("tenant-b", alice, NULL), r->task->id, &st));
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "TASK_NOT_FOUND");
    ck_assert_ptr_null(completion(b, r->instance_id, &st));
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "INSTANCE_NOT_FOUND");
    ck_assert(!listed(as_groups("tenant-b", alice, NULL), NULL, NULL, r->task->id));
    ck_assert(listed(as_groups("tenant-a", alice, NULL), NULL, NULL, r->task->id));
    ck_assert_ptr_nonnull(get_task(a, r->task->id, &st));
    ck_assert_ptr_null(get_task(a, "nonsense", &st));
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "TASK_NOT_FOUND");
}
END_TEST

/* ---- task rules -------------------------------------------------------------------------- */

WF_CASE_TEST("open", test_personal_task_rules)
{
    wf_client *boss = as("boss");
    char *alice = u("alice");
    wf_client *ca = as(alice), *cb = as(u("bob"));
    wf_client_status st;
    const char *root = start(boss);
    Workflow__V1__AssignToResponse *r = assign(boss, root, USER, &alice, 1);
    ck_assert_ptr_null(complete(cb, r->task->id, &st));
    ck_fails(st, GRPC_STATUS_PERMISSION_DENIED, "NOT_ASSIGNEE");
    ck_assert_ptr_null(claim(cb, r->task->id, &st));
    ck_fails(st, GRPC_STATUS_PERMISSION_DENIED, "NOT_ASSIGNEE");
    ck_assert_ptr_null(complete_rid(ca, r->task->id, "[]", NULL, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_JSON");
    Workflow__V1__CompleteTaskResponse *c = complete_rid(ca, r->task->id, "{\"ok\":1}", NULL, &st);
    ck_ok(st);
    ck_assert_int_eq(c->task->status, T_DONE);
    ck_assert_str_eq(c->task->completed_by, alice);
    ck_assert_ptr_nonnull(c->task->ended_at);
    ck_assert(c->completion->all_completed);
    ck_assert_int_eq(c->completion->done, 1);
    ck_assert_ptr_null(c->next);
    ck_assert_ptr_null(complete(ca, r->task->id, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "TASK_NOT_OPEN");
    Workflow__V1__GetInstanceResponse *gi = get_inst(boss, r->instance_id, &st);
    ck_assert_str_eq(gi->instance->variables_json, "{\"ok\":1}");
    /* The referral completes when its (default ALL) join is met. */
    ck_assert_int_eq(gi->instance->status, I_COMPLETED);
    ck_assert_ptr_nonnull(gi->instance->ended_at);
    ck_assert_uint_eq(gi->n_joins, 0);
}
END_TEST

WF_CASE_TEST("open", test_group_task_rules)
{
    wf_client *boss = as("boss");
    char *grp = u("grp");
    wf_client *ca = as(u("alice")), *cb = as(u("bob"));
    wf_client_status st;
    const char *root = start(boss);
    Workflow__V1__AssignToResponse *r = assign(boss, root, GROUP, &grp, 1);
    const char *t = r->task->id;
    ck_assert_ptr_null(complete(ca, t, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "TASK_NOT_CLAIMED");
    ck_assert_ptr_null(release(ca, t, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "TASK_NOT_CLAIMED");
    Workflow__V1__Task *k = claim(ca, t, &st);
    ck_ok(st);
    ck_assert_int_eq(k->status, T_CLAIMED);
    ck_assert_str_eq(k->claimed_by, u("alice"));
    ck_assert_ptr_null(claim(cb, t, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "TASK_ALREADY_CLAIMED");
    ck_assert_ptr_nonnull(claim(ca, t, &st)); /* already hers: no change */
    ck_assert_ptr_null(release(cb, t, &st));
    ck_fails(st, GRPC_STATUS_PERMISSION_DENIED, "NOT_ASSIGNEE");
    ck_assert_ptr_null(complete(cb, t, &st));
    ck_fails(st, GRPC_STATUS_PERMISSION_DENIED, "NOT_ASSIGNEE");
    k = release(ca, t, &st);
    ck_ok(st);
    ck_assert_int_eq(k->status, T_OPEN);
    ck_assert_str_eq(k->claimed_by, "");
    ck_assert_ptr_nonnull(claim(cb, t, &st));
    Workflow__V1__CompleteTaskResponse *c = complete(cb, t, &st);
    ck_ok(st);
    ck_assert_int_eq(c->task->status, T_DONE);
    ck_assert_str_eq(c->task->claimed_by, u("bob")); /* kept on a DONE group task */
    ck_assert_ptr_null(claim(ca, t, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "TASK_NOT_OPEN");
    ck_assert_ptr_null(release(cb, t, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "TASK_NOT_OPEN");
    ck_assert_str_eq(tree_events(root, NULL, "boss"),
                     "INSTANCE_STARTED INSTANCE_STARTED TASK_CREATED TASK_CLAIMED TASK_RELEASED "
                     "TASK_CLAIMED TASK_COMPLETED INSTANCE_COMPLETED");
}
END_TEST

WF_CASE_TEST("open", test_task_calls_are_idempotent)
{
    wf_client *boss = as("boss");
    char *grp = u("grp");
    wf_client *ca = as(u("alice"));
    wf_client_status st;
    const char *root = start(boss);
    Workflow__V1__AssignToRequest req;
    Workflow__V1__Assignee a;
    Workflow__V1__JoinPolicy j;
    mk_assign(&req, &a, &j, root, GROUP, &grp, 1);
    req.request_id = u("assign");
    Workflow__V1__AssignToResponse *r1 = assign_req(boss, &req, &st);
    ck_ok(st);
    Workflow__V1__AssignToResponse *r2 = assign_req(boss, &req, &st);
    ck_ok(st);
    ck_assert_str_eq(r1->instance_id, r2->instance_id);
    ck_assert_str_eq(r1->task->id, r2->task->id);
    req.title = "changed";
    ck_assert_ptr_null(assign_req(boss, &req, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "REQUEST_ID_REUSED");

    const char *t = r1->task->id;
    char *k1 = u("claim-1"), *d1 = u("done-1");
    ck_assert_ptr_nonnull(task_call(ca, "ClaimTask", t, k1, &st));
    ck_assert_ptr_nonnull(task_call(ca, "ClaimTask", t, k1, &st));
    ck_ok(st);
    Workflow__V1__CompleteTaskResponse *c1 = complete_rid(ca, t, "{\"v\":1}", d1, &st);
    ck_ok(st);
    Workflow__V1__CompleteTaskResponse *c2 = complete_rid(ca, t, "{\"v\":1}", d1, &st);
    ck_ok(st); /* the first response, not TASK_NOT_OPEN */
    ck_assert_int_eq(c2->task->status, T_DONE);
    ck_assert_int_eq(c2->completion->done, c1->completion->done);
    ck_assert_ptr_null(complete_rid(ca, t, "{\"v\":2}", d1, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "REQUEST_ID_REUSED");
    /* Ids are scoped by method: the same id on another method is new. */
    ck_assert_ptr_null(task_call(ca, "ReleaseTask", t, d1, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "TASK_NOT_OPEN");
}
END_TEST

/* ---- the inbox --------------------------------------------------------------------------- */

WF_CASE_TEST("open", test_inbox_of_user_and_group)
{
    wf_client *boss = as("boss");
    char *alice = u("alice"), *grp = u("grp");
    wf_client *ca = as(alice);
    wf_client_status st;
    const char *root = start(boss);
    Workflow__V1__AssignToResponse *mine = assign(boss, root, USER, &alice, 1);
    Workflow__V1__AssignToResponse *g1 = assign(boss, root, GROUP, &grp, 1);
    Workflow__V1__AssignToResponse *g2 = assign(boss, root, GROUP, &grp, 1);

    /* The actor's inbox ("" = actor), and alice's seen by someone else. */
    Workflow__V1__ListTasksResponse *l = list_tasks(ca, NULL, NULL, 0, NULL, &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_tasks, 1);
    ck_assert_str_eq(l->tasks[0]->id, mine->task->id);
    ck_assert_str_eq(l->next_page_token, "");
    l = list_tasks(boss, alice, NULL, 0, NULL, &st);
    ck_assert_uint_eq(l->n_tasks, 1);

    /* The group's open tasks, oldest first, paged one by one. */
    l = list_tasks(boss, NULL, grp, 1, NULL, &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_tasks, 1);
    ck_assert_str_eq(l->tasks[0]->id, g1->task->id);
    ck_assert_str_ne(l->next_page_token, "");
    char *tok = strdup(l->next_page_token);
    /* A token only works with the filters it was made for. */
    ck_assert_ptr_null(list_tasks(boss, NULL, u("other"), 1, tok, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_ptr_null(list_tasks(boss, NULL, grp, 1, "garbage", &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    l = list_tasks(boss, NULL, grp, 1, tok, &st);
    free(tok);
    ck_ok(st);
    ck_assert_uint_eq(l->n_tasks, 1);
    ck_assert_str_eq(l->tasks[0]->id, g2->task->id);
    if (l->next_page_token[0] != '\0') {
        l = list_tasks(boss, NULL, grp, 1, l->next_page_token, &st);
        ck_assert_uint_eq(l->n_tasks, 0);
        ck_assert_str_eq(l->next_page_token, "");
    }

    /* A claim shows at once: in the claimer's inbox, and the task leaves
     * the group's queue (by default OPEN only); asked for, CLAIMED lists
     * it with its claimer. */
    ck_assert_ptr_nonnull(claim(ca, g1->task->id, &st));
    ck_assert(listed(ca, NULL, NULL, g1->task->id));
    ck_assert(!listed(boss, NULL, grp, g1->task->id));
    ck_assert(listed(boss, NULL, grp, g2->task->id));
    Workflow__V1__ListTasksRequest gq = WORKFLOW__V1__LIST_TASKS_REQUEST__INIT;
    Workflow__V1__TaskStatus claimed[] = {WORKFLOW__V1__TASK_STATUS__TASK_STATUS_CLAIMED};
    gq.group = grp;
    gq.states = claimed;
    gq.n_states = 1;
    l = call(boss, "ListTasks", &gq, &workflow__v1__list_tasks_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_tasks, 1);
    ck_assert_str_eq(l->tasks[0]->id, g1->task->id);
    ck_assert_str_eq(l->tasks[0]->claimed_by, alice);
    /* Released, it is back in the queue. */
    Workflow__V1__ReleaseTaskRequest rr = WORKFLOW__V1__RELEASE_TASK_REQUEST__INIT;
    rr.task_id = g1->task->id;
    ck_assert_ptr_nonnull(
        call(ca, "ReleaseTask", &rr, &workflow__v1__release_task_response__descriptor, &st));
    ck_ok(st);
    ck_assert(listed(boss, NULL, grp, g1->task->id));
    ck_assert_ptr_nonnull(claim(ca, g1->task->id, &st));
    /* Completed work leaves the inbox (default: OPEN and CLAIMED). */
    ck_assert_ptr_nonnull(complete(ca, mine->task->id, &st));
    ck_assert(!listed(ca, NULL, NULL, mine->task->id));
    Workflow__V1__ListTasksRequest req = WORKFLOW__V1__LIST_TASKS_REQUEST__INIT;
    Workflow__V1__TaskStatus done[] = {T_DONE};
    req.states = done;
    req.n_states = 1;
    l = call(ca, "ListTasks", &req, &workflow__v1__list_tasks_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_tasks, 1);
    ck_assert_str_eq(l->tasks[0]->id, mine->task->id);

    /* Request errors. */
    ck_assert_ptr_null(list_tasks(boss, alice, grp, 0, NULL, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_ptr_null(list_tasks(boss, NULL, NULL, -1, NULL, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_ptr_null(list_tasks(as(NULL), NULL, NULL, 0, NULL, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "ACTOR_MISSING");
}
END_TEST

/* ---- joins ------------------------------------------------------------------------------- */

#define RACERS 32 /* the required concurrency: 32 calls released at once */

/* Connects c before a race, so the race is between calls, not between
 * connection attempts (a channel's first call fails fast while it
 * connects). */
static void
warm_up(wf_client *c, const char *task_id)
{
    Workflow__V1__GetTaskRequest req = WORKFLOW__V1__GET_TASK_REQUEST__INIT;
    req.task_id = (char *)task_id;
    wf_client_status st;
    for (int i = 0; i < 50; i++) {
        int code = wf_client_call(c, SVC "GetTask", &req.base, NULL, NULL, NULL, &st);
        if (code != GRPC_STATUS_UNAVAILABLE)
            return;
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

typedef struct racer {
    wf_client *c;
    const char *task_id;
    const char *rid; /* request_id; NULL = none */
    int code;
    char reason[64];
    bool has_next;
    pthread_barrier_t *gate;
} racer;

static void *
race_complete(void *arg)
{
    racer *r = arg;
    Workflow__V1__CompleteTaskRequest req = WORKFLOW__V1__COMPLETE_TASK_REQUEST__INIT;
    req.task_id = (char *)r->task_id;
    req.request_id = (char *)(r->rid != NULL ? r->rid : "");
    ProtobufCMessage *resp = NULL;
    wf_client_status st;
    warm_up(r->c, r->task_id);
    pthread_barrier_wait(r->gate);
    r->code = wf_client_call(r->c, SVC "CompleteTask", &req.base,
                             &workflow__v1__complete_task_response__descriptor, &resp, NULL, &st);
    snprintf(r->reason, sizeof r->reason, "%s",
             st.reason[0] ? st.reason : wf_client_code_name(st.code));
    if (resp != NULL) {
        r->has_next = ((Workflow__V1__CompleteTaskResponse *)resp)->next != NULL;
        protobuf_c_message_free_unpacked(resp, NULL);
    }
    return NULL;
}

static void *
race_claim(void *arg)
{
    racer *r = arg;
    Workflow__V1__ClaimTaskRequest req = WORKFLOW__V1__CLAIM_TASK_REQUEST__INIT;
    req.task_id = (char *)r->task_id;
    ProtobufCMessage *resp = NULL;
    wf_client_status st;
    warm_up(r->c, r->task_id);
    pthread_barrier_wait(r->gate);
    r->code = wf_client_call(r->c, SVC "ClaimTask", &req.base,
                             &workflow__v1__claim_task_response__descriptor, &resp, NULL, &st);
    snprintf(r->reason, sizeof r->reason, "%s", st.reason);
    if (resp != NULL)
        protobuf_c_message_free_unpacked(resp, NULL);
    return NULL;
}

static void
run_race(racer *r, size_t n, void *(*fn)(void *))
{
    pthread_t th[RACERS];
    pthread_barrier_t gate;
    ck_assert_uint_le(n, RACERS);
    pthread_barrier_init(&gate, NULL, (unsigned)n);
    for (size_t i = 0; i < n; i++) {
        r[i].gate = &gate;
        pthread_create(&th[i], NULL, fn, &r[i]);
    }
    for (size_t i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&gate);
}

WF_CASE_TEST("open", test_all_join_fires_once_under_concurrency)
{
    wf_client *boss = as("boss");
    char *u1 = u("u1"), *u2 = u("u2"), *next_grp = u("next");
    wf_client_status st;
    for (int round = 0; round < 3; round++) {
        const char *root = start(boss);
        Workflow__V1__AssignToRequest req, nreq;
        Workflow__V1__Assignee a, na;
        Workflow__V1__JoinPolicy j, nj;
        char *ids[] = {u1, u2};
        mk_assign(&req, &a, &j, root, USERS, ids, 2);
        mk_assign(&nreq, &na, &nj, NULL, GROUP, &next_grp, 1);
        nreq.title = "Archive";
        req.on_all_completed = &nreq;
        Workflow__V1__AssignToResponse *r = assign_req(boss, &req, &st);
        ck_ok(st);
        racer rc[2] = {{.c = as(u1), .task_id = r->tasks[0]->id},
                       {.c = as(u2), .task_id = r->tasks[1]->id}};
        run_race(rc, 2, race_complete);
        ck_assert_msg(rc[0].code == 0 && rc[1].code == 0, "%s / %s", rc[0].reason, rc[1].reason);
        ck_assert_int_eq(rc[0].has_next + rc[1].has_next, 1);
        Workflow__V1__GetInstanceResponse *gi = get_inst(boss, root, &st);
        ck_ok(st);
        ck_assert_uint_eq(gi->n_children, 2);
        ck_assert_int_eq(gi->children[0]->status, I_COMPLETED);
        ck_assert_int_eq(gi->children[1]->status, I_RUNNING);
        gi = get_inst(boss, gi->children[1]->id, &st);
        ck_assert_uint_eq(gi->n_tasks, 1);
        ck_assert_str_eq(gi->tasks[0]->title, "Archive");
        ck_assert_str_eq(gi->tasks[0]->assignee_id, next_grp);
        ck_assert_str_eq(gi->tasks[0]->assigned_by, "boss");
    }
}
END_TEST

/* A referral under a referral whose own join fires first: its next step
 * goes to the nearest running ancestor (here the root) instead of failing
 * on the completed parent. Titles are UTF-8 text. */
WF_CASE_TEST("open", test_nested_join_after_parent_completed)
{
    wf_client *boss = as("boss");
    char *a = u("a"), *b = u("b"), *c = u("c");
    wf_client_status st;
    const char *root = start(boss);
    Workflow__V1__AssignToResponse *r1 = assign(boss, root, USER, &a, 1);
    Workflow__V1__AssignToRequest req, nreq;
    Workflow__V1__Assignee as_, nas;
    Workflow__V1__JoinPolicy j, nj;
    mk_assign(&req, &as_, &j, r1->instance_id, USER, &b, 1);
    mk_assign(&nreq, &nas, &nj, NULL, USER, &c, 1);
    nreq.title = "\u062a\u0633\u0648\u06cc\u0647 \u062d\u0633\u0627\u0628"; /* UTF-8 */
    req.on_all_completed = &nreq;
    Workflow__V1__AssignToResponse *r2 = assign_req(boss, &req, &st);
    ck_ok(st);
    ck_assert_ptr_nonnull(complete(as(a), r1->task->id, &st)); /* R1's join fires first */
    Workflow__V1__CompleteTaskResponse *done = complete(as(b), r2->task->id, &st);
    ck_ok(st);
    ck_assert_ptr_nonnull(done->next);
    Workflow__V1__GetInstanceResponse *gi = get_inst(boss, done->next->instance_id, &st);
    ck_ok(st);
    ck_assert_str_eq(gi->instance->parent_instance_id, root);
    ck_assert_str_eq(gi->tasks[0]->title, nreq.title);
    ck_assert_str_eq(gi->tasks[0]->assignee_id, c);
}
END_TEST

/* 32 tasks of one ALL join completed at the same moment: the join advances
 * exactly once (one next referral in total). */
WF_CASE_TEST("open", test_join_of_32_completed_at_once)
{
    wf_client *boss = as("boss");
    char *ids[RACERS];
    for (int i = 0; i < RACERS; i++) {
        char name[16];
        snprintf(name, sizeof name, "w%d", i);
        ids[i] = u(name);
    }
    char *next_user = u("closer");
    wf_client_status st;
    const char *root = start(boss);
    Workflow__V1__AssignToRequest req, nreq;
    Workflow__V1__Assignee a, na;
    Workflow__V1__JoinPolicy j, nj;
    mk_assign(&req, &a, &j, root, USERS, ids, RACERS);
    mk_assign(&nreq, &na, &nj, NULL, USER, &next_user, 1);
    req.on_all_completed = &nreq;
    Workflow__V1__AssignToResponse *r = assign_req(boss, &req, &st);
    ck_ok(st);
    ck_assert_uint_eq(r->n_tasks, RACERS);
    racer rc[RACERS];
    for (int i = 0; i < RACERS; i++)
        rc[i] = (racer){.c = as(ids[i]), .task_id = r->tasks[i]->id};
    run_race(rc, RACERS, race_complete);
    int nexts = 0;
    for (int i = 0; i < RACERS; i++) {
        ck_assert_msg(rc[i].code == 0, "%d: %s", i, rc[i].reason);
        nexts += rc[i].has_next;
    }
    ck_assert_int_eq(nexts, 1);
    Workflow__V1__GetInstanceResponse *gi = get_inst(boss, root, &st);
    ck_ok(st);
    ck_assert_uint_eq(gi->n_children, 2);
    Workflow__V1__ListTasksResponse *inbox = list_tasks(as(next_user), NULL, NULL, 10, NULL, &st);
    ck_ok(st);
    ck_assert_uint_eq(inbox->n_tasks, 1);
}
END_TEST

WF_CASE_TEST("open", test_concurrent_claims_one_wins)
{
    wf_client *boss = as("boss");
    char *grp = u("grp");
    wf_client_status st;
    const char *root = start(boss);
    Workflow__V1__AssignToResponse *r = assign(boss, root, GROUP, &grp, 1);
    racer rc[8];
    for (int i = 0; i < 8; i++) {
        rc[i] = (racer){.c = as(u(wf_arena_printf(ta, "m%d", i))), .task_id = r->task->id};
    }
    run_race(rc, 8, race_claim);
    int ok = 0;
    for (int i = 0; i < 8; i++) {
        if (rc[i].code == 0)
            ok++;
        else
            ck_assert_str_eq(rc[i].reason, "TASK_ALREADY_CLAIMED");
    }
    ck_assert_int_eq(ok, 1);
    Workflow__V1__Task *t = get_task(boss, r->task->id, &st);
    ck_assert_int_eq(t->status, T_CLAIMED);
}
END_TEST

WF_CASE_TEST("open", test_concurrent_completion_of_one_task)
{
    wf_client *boss = as("boss");
    char *alice = u("alice");
    const char *root = start(boss);
    Workflow__V1__AssignToResponse *r = assign(boss, root, USER, &alice, 1);
    racer rc[RACERS];
    for (int i = 0; i < RACERS; i++)
        rc[i] = (racer){.c = as(alice), .task_id = r->task->id};
    run_race(rc, RACERS, race_complete);
    int ok = 0;
    for (int i = 0; i < RACERS; i++) {
        if (rc[i].code == 0)
            ok++;
        else
            ck_assert_str_eq(rc[i].reason, "TASK_NOT_OPEN");
    }
    ck_assert_int_eq(ok, 1);

    /* Concurrent retries of one request all get its first response. */
    Workflow__V1__AssignToResponse *r2 = assign(boss, root, USER, &alice, 1);
    char *rid = u("same");
    for (int i = 0; i < 4; i++)
        rc[i] = (racer){.c = as(alice), .task_id = r2->task->id, .rid = rid};
    run_race(rc, 4, race_complete);
    for (int i = 0; i < 4; i++)
        ck_assert_msg(rc[i].code == 0, "%d: %s", i, rc[i].reason);
}
END_TEST

WF_CASE_TEST("open", test_any_and_quorum_cancel_the_rest)
{
    wf_client *boss = as("boss");
    wf_client_status st;
    char *ids[] = {u("a"), u("b"), u("c")};
    const char *root = start(boss);
    Workflow__V1__AssignToRequest req;
    Workflow__V1__Assignee a;
    Workflow__V1__JoinPolicy j;
    mk_assign(&req, &a, &j, root, USERS, ids, 3);
    j.mode = WORKFLOW__V1__COMPLETION_MODE__COMPLETION_MODE_ANY;
    Workflow__V1__AssignToResponse *any = assign_req(boss, &req, &st);
    ck_ok(st);
    Workflow__V1__CompleteTaskResponse *c = complete(as(ids[1]), any->tasks[1]->id, &st);
    ck_ok(st);
    ck_assert_int_eq(c->completion->done, 1);
    ck_assert_int_eq(c->completion->cancelled, 2);
    ck_assert(c->completion->all_completed);
    ck_assert_int_eq(get_task(boss, any->tasks[0]->id, &st)->status, T_CANCELLED);
    ck_assert_ptr_null(complete(as(ids[2]), any->tasks[2]->id, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "TASK_NOT_OPEN");

    j.mode = WORKFLOW__V1__COMPLETION_MODE__COMPLETION_MODE_QUORUM;
    j.quorum = 2;
    Workflow__V1__AssignToRequest nreq;
    Workflow__V1__Assignee na;
    Workflow__V1__JoinPolicy nj;
    mk_assign(&nreq, &na, &nj, NULL, USER, &ids[0], 1);
    req.on_all_completed = &nreq;
    Workflow__V1__AssignToResponse *q = assign_req(boss, &req, &st);
    ck_ok(st);
    Workflow__V1__GetInstanceResponse *gi = get_inst(boss, q->instance_id, &st);
    ck_assert_uint_eq(gi->n_joins, 1);
    ck_assert_int_eq(gi->joins[0]->required, 2);
    ck_assert_int_eq(gi->joins[0]->total, 3);
    c = complete(as(ids[0]), q->tasks[0]->id, &st);
    ck_ok(st);
    ck_assert_ptr_null(c->next);
    ck_assert_int_eq(c->completion->open, 2);
    Workflow__V1__GetCompletionResponse *gc = completion(boss, q->instance_id, &st);
    ck_ok(st);
    ck_assert(!gc->all_completed);
    ck_assert_int_eq(gc->done, 1);
    c = complete(as(ids[2]), q->tasks[2]->id, &st);
    ck_ok(st);
    ck_assert_ptr_nonnull(c->next);
    ck_assert_str_eq(c->next->task->assignee_id, ids[0]);
    ck_assert_int_eq(c->completion->cancelled, 1);
    gc = completion(boss, q->instance_id, &st);
    ck_assert(gc->all_completed);
    ck_assert_int_eq(gc->total, 3);
    ck_assert_int_eq(gc->done, 2);
    ck_assert_int_eq(gc->cancelled, 1);
    /* A root has no tasks: never "all completed". */
    gc = completion(boss, root, &st);
    ck_ok(st);
    ck_assert(!gc->all_completed);
    ck_assert_int_eq(gc->total, 0);

    /* A QUORUM larger than the tasks is refused. */
    j.quorum = 4;
    ck_assert_ptr_null(assign_req(boss, &req, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
}
END_TEST

/* ---- CompleteAndEnd and CancelInstance ------------------------------------------------- */

WF_CASE_TEST("open", test_complete_and_end_closes_the_tree)
{
    wf_client *boss = as("boss");
    char *alice = u("alice"), *grp = u("grp"), *two[] = {u("b"), u("c")};
    wf_client *ca = as(alice);
    wf_client_status st;
    const char *root = start(boss);
    Workflow__V1__AssignToResponse *r1 = assign(boss, root, USER, &alice, 1);
    Workflow__V1__AssignToResponse *r2 = assign(boss, root, USERS, two, 2);
    Workflow__V1__AssignToResponse *r3 = assign(boss, r2->instance_id, GROUP, &grp, 1);
    ck_assert_ptr_nonnull(claim(as(u("d")), r3->task->id, &st));

    Workflow__V1__CompleteAndEndRequest req = WORKFLOW__V1__COMPLETE_AND_END_REQUEST__INIT;
    req.task_id = r2->tasks[0]->id;
    ck_assert_ptr_null(call(ca, "CompleteAndEnd", &req,
                            &workflow__v1__complete_and_end_response__descriptor, &st));
    ck_fails(st, GRPC_STATUS_PERMISSION_DENIED, "NOT_ASSIGNEE");
    req.task_id = r1->task->id;
    req.variables_json = "{\"final\":true}";
    Workflow__V1__CompleteAndEndResponse *e =
        call(ca, "CompleteAndEnd", &req, &workflow__v1__complete_and_end_response__descriptor, &st);
    ck_ok(st);
    ck_assert_str_eq(e->root_instance->id, root);
    ck_assert_int_eq(e->root_instance->status, I_COMPLETED);
    ck_assert_ptr_nonnull(e->root_instance->ended_at);
    ck_assert_int_eq(e->task->status, T_DONE);
    ck_assert_uint_eq(e->n_cancelled_tasks, 3);
    for (size_t i = 0; i < e->n_cancelled_tasks; i++)
        ck_assert_int_eq(e->cancelled_tasks[i]->status, T_CANCELLED);

    Workflow__V1__GetInstanceResponse *gi = get_inst(boss, root, &st);
    ck_assert_uint_eq(gi->n_children, 2);
    ck_assert_int_eq(gi->children[0]->status, I_COMPLETED);
    ck_assert_int_eq(gi->children[1]->status, I_COMPLETED);
    ck_assert_str_eq(gi->children[0]->variables_json, "{\"final\":true}");
    gi = get_inst(boss, r3->instance_id, &st);
    ck_assert_int_eq(gi->instance->status, I_COMPLETED);
    ck_assert_int_eq(gi->tasks[0]->status, T_CANCELLED);
    /* Nothing is pending anywhere in the tree. */
    ck_assert(!listed(ca, NULL, NULL, r1->task->id));
    ck_assert(!listed(boss, NULL, grp, r3->task->id));
    ck_assert_ptr_null(call(ca, "CompleteAndEnd", &req,
                            &workflow__v1__complete_and_end_response__descriptor, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "TASK_NOT_OPEN");
    Workflow__V1__AssignToRequest ar;
    Workflow__V1__Assignee aa;
    Workflow__V1__JoinPolicy aj;
    mk_assign(&ar, &aa, &aj, root, USER, &alice, 1);
    ck_assert_ptr_null(assign_req(boss, &ar, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "INSTANCE_NOT_RUNNING");
    const char *ev = tree_events(root, NULL, "boss");
    ck_assert_ptr_nonnull(strstr(ev, "TASK_COMPLETED TASK_CANCELLED TASK_CANCELLED "
                                     "TASK_CANCELLED INSTANCE_COMPLETED INSTANCE_COMPLETED "
                                     "INSTANCE_COMPLETED INSTANCE_COMPLETED"));
}
END_TEST

WF_CASE_TEST("open", test_cancel_instance)
{
    wf_client *boss = as("boss");
    char *alice = u("alice");
    wf_client_status st;
    const char *root = start(boss);
    Workflow__V1__AssignToResponse *r = assign(boss, root, USER, &alice, 1);
    Workflow__V1__CancelInstanceRequest req = WORKFLOW__V1__CANCEL_INSTANCE_REQUEST__INIT;
    req.instance_id = (char *)root;
    req.reason = "customer withdrew";
    /* An ad-hoc tree has nothing to compensate: compensate=true is a plain
     * cancel (sagas are tested in test_e2e_saga.c). */
    req.compensate = 1;
    Workflow__V1__CancelInstanceResponse *c = call(
        boss, "CancelInstance", &req, &workflow__v1__cancel_instance_response__descriptor, &st);
    ck_ok(st);
    ck_assert_int_eq(c->instance->status, I_CANCELLED);
    ck_assert_int_eq(get_task(boss, r->task->id, &st)->status, T_CANCELLED);
    Workflow__V1__GetInstanceResponse *gi = get_inst(boss, r->instance_id, &st);
    ck_assert_int_eq(gi->instance->status, I_CANCELLED);
    req.compensate = 0;
    ck_assert_ptr_null(call(boss, "CancelInstance", &req,
                            &workflow__v1__cancel_instance_response__descriptor, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "INSTANCE_NOT_RUNNING");
    ck_assert_ptr_null(complete(as(alice), r->task->id, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "TASK_NOT_OPEN");
    req.instance_id = "01890000-0000-7000-8000-000000000000";
    ck_assert_ptr_null(call(boss, "CancelInstance", &req,
                            &workflow__v1__cancel_instance_response__descriptor, &st));
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "INSTANCE_NOT_FOUND");
    ck_assert_str_eq(tree_events(root, NULL, "boss"),
                     "INSTANCE_STARTED INSTANCE_STARTED TASK_CREATED TASK_CANCELLED "
                     "INSTANCE_CANCELLED INSTANCE_CANCELLED");
}
END_TEST

/* ---- ListInstances ------------------------------------------------------------------------ */

static Workflow__V1__ListInstancesResponse *
list_instances(wf_client *c, const char *by, Workflow__V1__ProcessState state, int page_size,
               const char *token, wf_client_status *st)
{
    Workflow__V1__ListInstancesRequest req = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
    req.started_by = (char *)(by != NULL ? by : "");
    req.state = state;
    req.page_size = page_size;
    req.page_token = (char *)(token != NULL ? token : "");
    return call(c, "ListInstances", &req, &workflow__v1__list_instances_response__descriptor, st);
}

static size_t
count_state(wf_client *c, Workflow__V1__ProcessState state, const char *want_id)
{
    wf_client_status st;
    Workflow__V1__ListInstancesResponse *l = list_instances(c, NULL, state, 0, NULL, &st);
    ck_ok(st);
    if (want_id != NULL)
        ck_assert_str_eq(l->instances[0]->id, want_id);
    for (size_t i = 0; i < l->n_instances; i++)
        ck_assert_str_eq(l->instances[i]->parent_instance_id, "");
    return l->n_instances;
}

WF_CASE_TEST("open", test_list_instances_states_and_paging)
{
    char *me = u("starter"), *alice = u("alice");
    wf_client *boss = as(me);
    wf_client_status st;
    const char *r[5];
    for (int i = 0; i < 5; i++)
        r[i] = start(boss);
    assign(boss, r[0], USER, &alice, 1);
    assign(boss, r[1], USER, &alice, 1);
    Workflow__V1__AssignToResponse *x = assign(boss, r[2], USER, &alice, 1);
    Workflow__V1__CompleteAndEndRequest ce = WORKFLOW__V1__COMPLETE_AND_END_REQUEST__INIT;
    ce.task_id = x->task->id;
    ck_assert_ptr_nonnull(call(as(alice), "CompleteAndEnd", &ce,
                               &workflow__v1__complete_and_end_response__descriptor, &st));
    Workflow__V1__CancelInstanceRequest cr = WORKFLOW__V1__CANCEL_INSTANCE_REQUEST__INIT;
    cr.instance_id = (char *)r[3];
    ck_assert_ptr_nonnull(call(boss, "CancelInstance", &cr,
                               &workflow__v1__cancel_instance_response__descriptor, &st));

    ck_assert_uint_eq(
        count_state(boss, WORKFLOW__V1__PROCESS_STATE__PROCESS_STATE_NOT_STARTED, r[4]), 1);
    ck_assert_uint_eq(count_state(boss, WORKFLOW__V1__PROCESS_STATE__PROCESS_STATE_OPEN, NULL), 2);
    ck_assert_uint_eq(count_state(boss, WORKFLOW__V1__PROCESS_STATE__PROCESS_STATE_CLOSED, NULL),
                      2);
    ck_assert_uint_eq(count_state(boss, 0, NULL), 5);
    /* Someone else's roots are not listed as mine, but by name. */
    ck_assert_uint_eq(count_state(as(u("nobody")), 0, NULL), 0);
    Workflow__V1__ListInstancesResponse *l = list_instances(as("x"), me, 0, 0, NULL, &st);
    ck_assert_uint_eq(l->n_instances, 5);

    /* Paging 2 by 2 returns every root exactly once. */
    int seen[5] = {0};
    size_t pages = 0;
    const char *tok = NULL;
    do {
        l = list_instances(boss, NULL, 0, 2, tok, &st);
        ck_ok(st);
        ck_assert_uint_le(l->n_instances, 2);
        for (size_t i = 0; i < l->n_instances; i++)
            for (int k = 0; k < 5; k++)
                seen[k] += strcmp(l->instances[i]->id, r[k]) == 0;
        tok = l->next_page_token;
        pages++;
    } while (tok[0] != '\0' && pages < 10);
    for (int k = 0; k < 5; k++)
        ck_assert_int_eq(seen[k], 1);
    ck_assert_uint_ge(pages, 3);

    ck_assert_ptr_null(list_instances(as(NULL), NULL, 0, 0, NULL, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "ACTOR_MISSING");
    ck_assert_ptr_null(list_instances(boss, NULL, 0, -5, NULL, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
}
END_TEST

/* The ids of a ListInstances page, in its order, joined by ",". */
static char *
page_ids(const Workflow__V1__ListInstancesResponse *l)
{
    static char buf[1024];
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < l->n_instances && n < sizeof buf; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? "," : "", l->instances[i]->id);
    return buf;
}

/* "r[a],r[a-1],...,r[b]": the expected newest-first order. */
static char *
ids_down(const char *const *r, int a, int b)
{
    static char buf[1024];
    size_t n = 0;
    buf[0] = '\0';
    for (int i = a; i >= b && n < sizeof buf; i--)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i != a ? "," : "", r[i]);
    return buf;
}

/* newest_first: by starter (paged 2 by 2), by definition key and by a
 * variable, each shape newest first; the creation bounds hold in that
 * order too; a page token continues only its own order. */
WF_CASE_TEST("open", test_list_instances_newest_first)
{
    char *me = u("newest"), *key = u("newest-key"), vars[128];
    snprintf(vars, sizeof vars, "{\"run\": \"%s\"}", key);
    wf_client *boss = as(me);
    wf_client_status st;
    const char *r[5];
    for (int i = 0; i < 5; i++) {
        Workflow__V1__Instance *in = start_rid(boss, key, vars, NULL, &st);
        ck_ok(st);
        r[i] = in->id;
    }
    Workflow__V1__ListInstancesRequest req = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
    req.started_by = me;
    req.newest_first = true;
    req.page_size = 2;
    char w0[512], w1[512];
    snprintf(w0, sizeof w0, "%s", ids_down(r, 4, 3));
    snprintf(w1, sizeof w1, "%s", ids_down(r, 2, 1));
    const char *want[] = {w0, w1, r[0]};
    Workflow__V1__ListInstancesResponse *l = NULL;
    for (int page = 0; page < 3; page++) {
        l = call(boss, "ListInstances", &req, &workflow__v1__list_instances_response__descriptor,
                 &st);
        ck_ok(st);
        ck_assert_str_eq(page_ids(l), want[page]);
        req.page_token = l->next_page_token;
    }
    ck_assert_str_eq(l->next_page_token, "");
    /* A token of the newest-first listing does not continue the other. */
    req.page_token = "";
    l = call(boss, "ListInstances", &req, &workflow__v1__list_instances_response__descriptor, &st);
    ck_ok(st);
    req.page_token = l->next_page_token;
    req.newest_first = false;
    ck_assert_ptr_null(
        call(boss, "ListInstances", &req, &workflow__v1__list_instances_response__descriptor, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");

    /* By definition key, then by a variable: the other shapes. */
    Workflow__V1__ListInstancesRequest byk = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
    byk.started_by = "*";
    byk.definition_key = key;
    byk.newest_first = true;
    l = call(boss, "ListInstances", &byk, &workflow__v1__list_instances_response__descriptor, &st);
    ck_ok(st);
    ck_assert_str_eq(page_ids(l), ids_down(r, 4, 0));
    Workflow__V1__ListInstancesRequest byv = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
    Workflow__V1__VariableFilter vf = WORKFLOW__V1__VARIABLE_FILTER__INIT;
    Workflow__V1__VariableFilter *vfs[] = {&vf};
    char value[96];
    snprintf(value, sizeof value, "\"%s\"", key);
    vf.path = "run";
    vf.value_json = value;
    byv.started_by = "*";
    byv.variables = vfs;
    byv.n_variables = 1;
    byv.newest_first = true;
    l = call(boss, "ListInstances", &byv, &workflow__v1__list_instances_response__descriptor, &st);
    ck_ok(st);
    ck_assert_str_eq(page_ids(l), ids_down(r, 4, 0));

    /* The creation bounds: before r[3] (exclusive), then from r[1]. */
    byk.newest_first = false;
    l = call(boss, "ListInstances", &byk, &workflow__v1__list_instances_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_instances, 5);
    Google__Protobuf__Timestamp t3 = *l->instances[3]->created_at,
                                t1 = *l->instances[1]->created_at;
    byk.newest_first = true;
    byk.created_before = &t3;
    l = call(boss, "ListInstances", &byk, &workflow__v1__list_instances_response__descriptor, &st);
    ck_ok(st);
    ck_assert_str_eq(page_ids(l), ids_down(r, 2, 0));
    byk.created_before = NULL;
    byk.created_after = &t1;
    l = call(boss, "ListInstances", &byk, &workflow__v1__list_instances_response__descriptor, &st);
    ck_ok(st);
    ck_assert_str_eq(page_ids(l), ids_down(r, 4, 1));
}
END_TEST

/* ---- directories ------------------------------------------------------------------------- */

WF_CASE_TEST("static_directory", test_static_directory)
{
    wf_client *boss = as("boss");
    wf_client_status st;
    const char *root = start(boss);
    Workflow__V1__AssignToRequest req;
    Workflow__V1__Assignee a;
    Workflow__V1__JoinPolicy j;
    char *nope = "nope", *zed = "zed";
    mk_assign(&req, &a, &j, root, GROUP, &nope, 1);
    ck_assert_ptr_null(assign_req(boss, &req, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "EMPTY_GROUP");
    mk_assign(&req, &a, &j, root, USER, &zed, 1);
    ck_assert_ptr_null(assign_req(boss, &req, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    char *it = "it", *carol = "carol";
    Workflow__V1__AssignToResponse *g = assign(boss, root, GROUP, &it, 1);
    assign(boss, root, USER, &carol, 1);
    /* Members see the group task through the directory; others do not. */
    ck_assert(listed(as("alice"), NULL, NULL, g->task->id));
    ck_assert(!listed(as("carol"), NULL, NULL, g->task->id));
    ck_assert_ptr_null(claim(as("carol"), g->task->id, &st));
    ck_fails(st, GRPC_STATUS_PERMISSION_DENIED, "NOT_GROUP_MEMBER");
    ck_assert_ptr_nonnull(claim(as("bob"), g->task->id, &st));
    ck_assert(!listed(as("alice"), NULL, NULL, g->task->id));
    ck_assert(listed(as("bob"), NULL, NULL, g->task->id));
    /* x-actor-groups is ignored without WF_TRUST_ACTOR_GROUPS. */
    Workflow__V1__AssignToResponse *g2 = assign(boss, root, GROUP, &it, 1);
    ck_assert_ptr_null(claim(as_groups(NULL, "carol", "it"), g2->task->id, &st));
    ck_fails(st, GRPC_STATUS_PERMISSION_DENIED, "NOT_GROUP_MEMBER");
}
END_TEST

WF_CASE_TEST("trusted_groups", test_trusted_actor_groups)
{
    wf_client *boss = as("boss");
    wf_client_status st;
    const char *root = start(boss);
    char *g1 = u("g1"), *g2 = u("g2"), *user = u("dana");
    char groups[80];
    snprintf(groups, sizeof groups, "%s,other", g1);
    Workflow__V1__AssignToResponse *t1 = assign(boss, root, GROUP, &g1, 1);
    Workflow__V1__AssignToResponse *t2 = assign(boss, root, GROUP, &g2, 1);
    wf_client *me = as_groups(NULL, user, groups);
    ck_assert(listed(me, NULL, NULL, t1->task->id));
    ck_assert(!listed(me, NULL, NULL, t2->task->id));
    ck_assert_ptr_null(claim(me, t2->task->id, &st));
    ck_fails(st, GRPC_STATUS_PERMISSION_DENIED, "NOT_GROUP_MEMBER");
    ck_assert_ptr_nonnull(claim(me, t1->task->id, &st));
    ck_ok(st);
    /* Without the header the open directory lets anyone claim. */
    ck_assert_ptr_nonnull(claim(as(u("eve")), t2->task->id, &st));
    ck_ok(st);
}
END_TEST

/* ---- ids_expression -------------------------------------------------------------------- */

/* A root of its own definition key with variables vars. */
static const char *
start_with(wf_client *c, const char *vars)
{
    wf_client_status st;
    Workflow__V1__Instance *in = start_rid(c, u("expr"), vars, NULL, &st);
    ck_ok(st);
    return in->id;
}

/* An AssignTo request whose assignee comes from expr. */
static void
mk_expr(Workflow__V1__AssignToRequest *r, Workflow__V1__Assignee *a, Workflow__V1__JoinPolicy *j,
        const char *parent, Workflow__V1__AssigneeKind kind, const char *expr)
{
    mk_assign(r, a, j, parent, kind, NULL, 0);
    a->ids_expression = (char *)expr;
}

/* Expects r to fail INVALID_ARGUMENT with one violation starting with
 * want, and the root to have no referral afterwards. */
static void
assign_refused(wf_client *c, const Workflow__V1__AssignToRequest *r, const char *root,
               const char *want)
{
    wf_client_status st;
    ck_assert_ptr_null(assign_req(c, r, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_int_eq(st.nviolations, 1);
    ck_assert_msg(strncmp(st.violations[0], want, strlen(want)) == 0,
                  "violation \"%s\", want \"%s\"", st.violations[0], want);
    Workflow__V1__GetInstanceResponse *gi = get_inst(c, root, &st);
    ck_ok(st);
    ck_assert_uint_eq(gi->n_children, 0);
}

WF_CASE_TEST("open", test_ids_expression_reads_parent_and_request_variables)
{
    wf_client *boss = as("boss");
    wf_client_status st;
    char vars[256];
    char *alice = u("alice"), *bob = u("bob"), *carol = u("carol");
    snprintf(vars, sizeof vars, "{\"reviewers\":[\"%s\",\"%s\",\"%s\"],\"lead\":\"%s\"}", alice,
             bob, alice, carol);
    const char *root = start_with(boss, vars);
    Workflow__V1__AssignToRequest req;
    Workflow__V1__Assignee a;
    Workflow__V1__JoinPolicy j;

    /* From the parent's variables; the duplicate is dropped. */
    mk_expr(&req, &a, &j, root, USERS, ".reviewers");
    j.mode = WORKFLOW__V1__COMPLETION_MODE__COMPLETION_MODE_QUORUM;
    j.quorum = 2;
    Workflow__V1__AssignToResponse *r = assign_req(boss, &req, &st);
    ck_ok(st);
    ck_assert_uint_eq(r->n_tasks, 2);
    ck_assert_str_eq(r->tasks[0]->assignee_id, alice);
    ck_assert_str_eq(r->tasks[1]->assignee_id, bob);
    ck_assert(listed(boss, bob, NULL, r->tasks[1]->id));

    /* The request's variables override the parent's; the referral keeps
     * the request's alone. */
    char over[128];
    snprintf(over, sizeof over, "{\"lead\":\"%s\"}", bob);
    mk_expr(&req, &a, &j, root, USER, ".lead");
    req.variables_json = over;
    r = assign_req(boss, &req, &st);
    ck_ok(st);
    ck_assert_uint_eq(r->n_tasks, 1);
    ck_assert_str_eq(r->task->assignee_id, bob);
    ck_assert_int_eq(r->task->assignee_kind, USER);
    Workflow__V1__GetInstanceResponse *gi = get_inst(boss, r->instance_id, &st);
    ck_ok(st);
    ck_assert_str_eq(gi->instance->variables_json, over);

    /* Without the override, the parent's value. */
    mk_expr(&req, &a, &j, root, GROUP, "\"team-\" + .lead");
    r = assign_req(boss, &req, &st);
    ck_ok(st);
    ck_assert_int_eq(r->task->assignee_kind, GROUP);
    ck_assert_msg(strncmp(r->task->assignee_id, "team-", 5) == 0 &&
                      strcmp(r->task->assignee_id + 5, carol) == 0,
                  "%s", r->task->assignee_id);
    ck_assert_str_eq(tree_events(root, NULL, "boss"),
                     "INSTANCE_STARTED INSTANCE_STARTED TASK_CREATED TASK_CREATED "
                     "INSTANCE_STARTED TASK_CREATED INSTANCE_STARTED TASK_CREATED");
}
END_TEST

WF_CASE_TEST("open", test_ids_expression_refusals_change_nothing)
{
    wf_client *boss = as("boss");
    const char *root = start_with(boss, "{\"none\":[],\"n\":7,\"two\":[\"a\",\"b\"]}");
    Workflow__V1__AssignToRequest req;
    Workflow__V1__Assignee a;
    Workflow__V1__JoinPolicy j;

    mk_expr(&req, &a, &j, root, USERS, ".none[]");
    assign_refused(boss, &req, root, "assignee.ids_expression: gave no id");
    mk_expr(&req, &a, &j, root, USERS, ".n");
    assign_refused(boss, &req, root,
                   "assignee.ids_expression: expression must yield strings or arrays of strings, "
                   "got number");
    mk_expr(&req, &a, &j, root, USERS, ".two[");
    assign_refused(boss, &req, root, "assignee.ids_expression: does not compile");
    mk_expr(&req, &a, &j, root, USER, ".two");
    assign_refused(boss, &req, root, "assignee.ids_expression: gave 2 ids");
    /* The quorum is checked against the ids the expression gave, under
     * the literal list's field. */
    mk_expr(&req, &a, &j, root, USERS, ".two");
    j.mode = WORKFLOW__V1__COMPLETION_MODE__COMPLETION_MODE_QUORUM;
    j.quorum = 3;
    assign_refused(boss, &req, root, "join.quorum: must be between 1 and the number of tasks (2)");
    /* Ids and an expression at once. */
    char *ids[] = {"a"};
    mk_expr(&req, &a, &j, root, USERS, ".two");
    a.ids = ids;
    a.n_ids = 1;
    assign_refused(boss, &req, root, "assignee.ids_expression: must be empty when ids are listed");
    ck_assert_str_eq(tree_events(root, NULL, "boss"), "INSTANCE_STARTED");
}
END_TEST

/* root -> P (USERS p1, p2) -> A (USER alice) with on_all_completed B
 * (USERS from .approvers): B's ids are read when A's join fires, from P
 * as it is then. */
WF_CASE_TEST("open", test_ids_expression_in_on_all_completed)
{
    wf_client *boss = as("boss");
    char *p1 = u("p1"), *p2 = u("p2"), *alice = u("alice"), *x = u("x");
    wf_client *c1 = as(p1), *ca = as(alice);
    wf_client_status st;
    const char *root = start_with(boss, "{}");
    char *ps[] = {p1, p2};
    Workflow__V1__AssignToResponse *pa = assign(boss, root, USERS, ps, 2);

    Workflow__V1__AssignToRequest req, next;
    Workflow__V1__Assignee a, na;
    Workflow__V1__JoinPolicy j, nj;
    mk_assign(&req, &a, &j, pa->instance_id, USER, &alice, 1);
    mk_expr(&next, &na, &nj, NULL, USERS, ".approvers");
    next.title = "Approve";
    next.variables_json = "{\"step\":\"approve\"}";
    req.on_all_completed = &next;
    Workflow__V1__AssignToResponse *aa = assign_req(boss, &req, &st);
    ck_ok(st);

    /* P has no approvers yet: alice's completion meets the join, the next
     * step gives no id, and the completion is refused. */
    ck_assert_ptr_null(complete(ca, aa->task->id, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_msg(strstr(st.message, "on_all_completed \"Approve\"") != NULL, "%s", st.message);
    Workflow__V1__Task *t = get_task(ca, aa->task->id, &st);
    ck_ok(st);
    ck_assert_int_eq(t->status, T_OPEN);

    /* p1's output lands in P; the join now reads it. */
    char out[128];
    snprintf(out, sizeof out, "{\"approvers\":[\"%s\"]}", x);
    complete_rid(c1, pa->tasks[0]->id, out, NULL, &st);
    ck_ok(st);
    Workflow__V1__CompleteTaskResponse *cr = complete(ca, aa->task->id, &st);
    ck_ok(st);
    ck_assert_ptr_nonnull(cr->next);
    ck_assert_uint_eq(cr->next->n_tasks, 1);
    ck_assert_str_eq(cr->next->task->assignee_id, x);
    ck_assert_str_eq(cr->next->task->assigned_by, "boss");
    Workflow__V1__GetInstanceResponse *gi = get_inst(boss, cr->next->instance_id, &st);
    ck_ok(st);
    ck_assert_str_eq(gi->instance->parent_instance_id, pa->instance_id);
    ck_assert_str_eq(gi->instance->variables_json, "{\"step\":\"approve\"}");
    ck_assert(listed(boss, x, NULL, cr->next->task->id));
}
END_TEST

/* With n = 1e9 the expression asks libjq for 58 GB, which ends the worker
 * evaluating it, not the server. */
WF_CASE_TEST("open", test_ids_expression_limit_changes_nothing)
{
    wf_expr_configure(&(wf_expr_options){.isolation = WF_EXPR_PROCESS,
                                         .timeout_ms = 1000,
                                         .memory_mb = 256,
                                         .workers = 2,
                                         .recycle_after = 1000});
    wf_client *boss = as("boss");
    wf_client_status st;
    const char *root = start_with(boss, "{\"n\":1e9}");
    Workflow__V1__AssignToRequest req;
    Workflow__V1__Assignee a;
    Workflow__V1__JoinPolicy j;
    mk_expr(&req, &a, &j, root, USER, "(.x[.n] = 1) | \"ann\"");
    ck_assert_ptr_null(assign_req(boss, &req, &st));
    ck_fails(st, GRPC_STATUS_RESOURCE_EXHAUSTED, "EXPRESSION_LIMIT");
    Workflow__V1__GetInstanceResponse *gi = get_inst(boss, root, &st);
    ck_ok(st);
    ck_assert_uint_eq(gi->n_children, 0);

    /* The same expression over a sane number works. */
    req.variables_json = "{\"n\":2}";
    Workflow__V1__AssignToResponse *r = assign_req(boss, &req, &st);
    ck_ok(st);
    ck_assert_str_eq(r->task->assignee_id, "ann");
    wf_expr_shutdown();
    wf_expr_configure(&(wf_expr_options){.isolation = WF_EXPR_INLINE});
}
END_TEST

/* Ids from an expression meet the directory as listed ids do. */
WF_CASE_TEST("static_directory", test_ids_expression_meets_the_static_directory)
{
    wf_client *boss = as("boss");
    wf_client_status st;
    const char *root = start_with(boss, "{\"grp\":\"nope\",\"people\":[\"carol\",\"zed\"]}");
    Workflow__V1__AssignToRequest req;
    Workflow__V1__Assignee a;
    Workflow__V1__JoinPolicy j;
    mk_expr(&req, &a, &j, root, GROUP, ".grp");
    ck_assert_ptr_null(assign_req(boss, &req, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "EMPTY_GROUP");
    mk_expr(&req, &a, &j, root, USERS, ".people");
    ck_assert_ptr_null(assign_req(boss, &req, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_ptr_nonnull(strstr(st.message, "\"zed\""));
    mk_expr(&req, &a, &j, root, GROUP, ".grp");
    req.variables_json = "{\"grp\":\"it\"}";
    Workflow__V1__AssignToResponse *r = assign_req(boss, &req, &st);
    ck_ok(st);
    ck_assert_str_eq(r->task->assignee_id, "it");
    ck_assert(listed(as("alice"), NULL, NULL, r->task->id));
}
END_TEST

int
main(int argc, char **argv)
{
    /* The expression workers of the limit test are this binary. */
    if (argc > 1 && strcmp(argv[1], WF_EXPR_WORKER_ARG) == 0)
        return wf_expr_worker_main(argc, argv);
    const wf_test_case cases[] = {{"open", setup, teardown, 60},
                                  {"static_directory", setup_static, teardown, 60},
                                  {"trusted_groups", setup_trusted, teardown, 60},
                                  {NULL}};
    return wf_test_run(wf_test_suite_of("e2e_referral", cases));
}
