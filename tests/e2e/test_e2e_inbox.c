/*
 * End-to-end tests of the inbox over gRPC, on the memory store and on
 * Postgres (WF_TEST_STORE=pg): ReassignTask, DelegateTask with the
 * delegate's resolve at CompleteTask, UpdateTask, the priority and times
 * of AssignTo, and ListTasks sorted by priority, due time or creation with
 * a due window, paged across ties; the priority, due and follow-up
 * expressions of USER transitions and user steps; the work-item history
 * following a reassignment and a delegation. Each refusal is checked with
 * its code and reason, each change with its event and actor.
 *
 * Postgres keeps rows between tests, so every test names its own users,
 * groups and definition keys with a unique suffix.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/status.h>

#include "net_kit.h"
#include "test_support.h"
#include "workflow/v1/workflow.pb-c.h"

#define USER WORKFLOW__V1__ASSIGNEE_KIND__ASSIGNEE_KIND_USER
#define GROUP WORKFLOW__V1__ASSIGNEE_KIND__ASSIGNEE_KIND_GROUP
#define T_OPEN WORKFLOW__V1__TASK_STATUS__TASK_STATUS_OPEN
#define T_CLAIMED WORKFLOW__V1__TASK_STATUS__TASK_STATUS_CLAIMED
#define T_DONE WORKFLOW__V1__TASK_STATUS__TASK_STATUS_DONE
#define D_PENDING WORKFLOW__V1__DELEGATION_STATE__DELEGATION_STATE_PENDING
#define D_RESOLVED WORKFLOW__V1__DELEGATION_STATE__DELEGATION_STATE_RESOLVED
#define S_PRIORITY WORKFLOW__V1__TASK_SORT__TASK_SORT_PRIORITY
#define S_DUE WORKFLOW__V1__TASK_SORT__TASK_SORT_DUE
#define S_CREATED WORKFLOW__V1__TASK_SORT__TASK_SORT_CREATED
#define NO_ID "00000000-0000-4000-8000-000000000000"

static void
setup_static(void)
{
    const char *env[] = {"WF_GROUP_it=alice,bob", "WF_USERS=carol,boss", NULL};
    setup_with(env);
}

/* ---- helpers ------------------------------------------------------------------------------ */

static Google__Protobuf__Timestamp *
ts_at(int64_t seconds)
{
    Google__Protobuf__Timestamp *t = wf_arena_calloc(ta, 1, sizeof *t);
    google__protobuf__timestamp__init(t);
    t->seconds = seconds;
    return t;
}

static Workflow__V1__TaskPriority *
prio(int32_t v)
{
    Workflow__V1__TaskPriority *p = wf_arena_calloc(ta, 1, sizeof *p);
    workflow__v1__task_priority__init(p);
    p->value = v;
    return p;
}

static const char *
root_of(wf_client *c)
{
    wf_client_status st;
    Workflow__V1__Instance *in = start_v(c, u("inbox"), 0, "{}", &st);
    ck_ok(st);
    return in->id;
}

/* AssignTo one task to kind/id; priority < 0 = unset, due/follow 0 = none. */
static Workflow__V1__Task *
assign_full(wf_client *c, const char *parent, Workflow__V1__AssigneeKind kind, const char *id,
            int32_t priority, int64_t due_s, int64_t follow_s, wf_client_status *st)
{
    Workflow__V1__AssignToRequest r = WORKFLOW__V1__ASSIGN_TO_REQUEST__INIT;
    Workflow__V1__Assignee a = WORKFLOW__V1__ASSIGNEE__INIT;
    char **ids = wf_arena_calloc(ta, 2, sizeof *ids);
    ids[0] = (char *)id;
    a.kind = kind;
    a.ids = ids;
    a.n_ids = 1;
    r.parent_instance_id = (char *)parent;
    r.title = "Look at it";
    r.assignee = &a;
    if (priority >= 0)
        r.priority = prio(priority);
    if (due_s != 0)
        r.due_at = ts_at(due_s);
    if (follow_s != 0)
        r.follow_up_at = ts_at(follow_s);
    Workflow__V1__AssignToResponse *resp =
        call(c, "AssignTo", &r, &workflow__v1__assign_to_response__descriptor, st);
    return resp != NULL ? resp->task : NULL;
}

static Workflow__V1__Task *
assign1(wf_client *c, const char *parent, Workflow__V1__AssigneeKind kind, const char *id)
{
    wf_client_status st;
    Workflow__V1__Task *t = assign_full(c, parent, kind, id, -1, 0, 0, &st);
    ck_ok(st);
    return t;
}

static Workflow__V1__Task *
reassign(wf_client *c, const char *task_id, const char *user, const char *group, const char *reason,
         const char *rid, wf_client_status *st)
{
    Workflow__V1__ReassignTaskRequest r = WORKFLOW__V1__REASSIGN_TASK_REQUEST__INIT;
    r.task_id = (char *)task_id;
    r.user = (char *)(user != NULL ? user : "");
    r.group = (char *)(group != NULL ? group : "");
    r.reason = (char *)(reason != NULL ? reason : "");
    r.request_id = (char *)(rid != NULL ? rid : "");
    Workflow__V1__ReassignTaskResponse *resp =
        call(c, "ReassignTask", &r, &workflow__v1__reassign_task_response__descriptor, st);
    return resp != NULL ? resp->task : NULL;
}

static Workflow__V1__Task *
delegate(wf_client *c, const char *task_id, const char *user, wf_client_status *st)
{
    Workflow__V1__DelegateTaskRequest r = WORKFLOW__V1__DELEGATE_TASK_REQUEST__INIT;
    r.task_id = (char *)task_id;
    r.user = (char *)user;
    Workflow__V1__DelegateTaskResponse *resp =
        call(c, "DelegateTask", &r, &workflow__v1__delegate_task_response__descriptor, st);
    return resp != NULL ? resp->task : NULL;
}

static Workflow__V1__Task *
update(wf_client *c, const Workflow__V1__UpdateTaskRequest *r, wf_client_status *st)
{
    Workflow__V1__UpdateTaskResponse *resp =
        call(c, "UpdateTask", r, &workflow__v1__update_task_response__descriptor, st);
    return resp != NULL ? resp->task : NULL;
}

static Workflow__V1__Task *
claim(wf_client *c, const char *task_id, const char *method, wf_client_status *st)
{
    Workflow__V1__ClaimTaskRequest r = WORKFLOW__V1__CLAIM_TASK_REQUEST__INIT;
    r.task_id = (char *)task_id;
    Workflow__V1__ClaimTaskResponse *resp =
        call(c, method, &r, &workflow__v1__claim_task_response__descriptor, st);
    return resp != NULL ? resp->task : NULL;
}

static Workflow__V1__Task *
get_task(const char *task_id)
{
    Workflow__V1__GetTaskRequest r = WORKFLOW__V1__GET_TASK_REQUEST__INIT;
    wf_client_status st;
    r.task_id = (char *)task_id;
    Workflow__V1__GetTaskResponse *resp =
        call(as("boss"), "GetTask", &r, &workflow__v1__get_task_response__descriptor, &st);
    ck_ok(st);
    return resp->task;
}

/* The actor of the last event of type in root's tree; NULL when none. */
static const char *
actor_of(const char *root, const char *type)
{
    const wf_event_row *e = last_event(root, type);
    return e == NULL ? NULL : e->actor != NULL ? e->actor : "";
}

/* Every task of user's inbox in order, through pages of size. */
static size_t
list_all(wf_client *c, const char *user, Workflow__V1__TaskSort sort, bool desc, int64_t after_s,
         int64_t before_s, int size, char ids[][64], size_t cap)
{
    size_t n = 0;
    const char *token = "";
    do {
        Workflow__V1__ListTasksRequest r = WORKFLOW__V1__LIST_TASKS_REQUEST__INIT;
        wf_client_status st;
        r.user = (char *)user;
        r.sort = sort;
        r.descending = desc;
        r.page_size = size;
        r.page_token = (char *)token;
        if (after_s != 0)
            r.due_after = ts_at(after_s);
        if (before_s != 0)
            r.due_before = ts_at(before_s);
        Workflow__V1__ListTasksResponse *resp =
            call(c, "ListTasks", &r, &workflow__v1__list_tasks_response__descriptor, &st);
        ck_ok(st);
        ck_assert_int_le(resp->n_tasks, size);
        for (size_t i = 0; i < resp->n_tasks && n < cap; i++)
            snprintf(ids[n++], 64, "%s", resp->tasks[i]->id);
        token = wf_arena_strdup(ta, resp->next_page_token);
    } while (token[0] != '\0');
    return n;
}

/* ---- ReassignTask ------------------------------------------------------------------------------
 */

WF_CASE_TEST("open", test_reassign_to_user_and_group)
{
    const char *alice = u("alice"), *bob = u("bob"), *grp = u("grp");
    const char *root = root_of(as("boss"));
    Workflow__V1__Task *t = assign1(as("boss"), root, USER, alice);
    wf_client_status st;
    /* The assignee hands it on, with a reason. */
    Workflow__V1__Task *r = reassign(as(alice), t->id, bob, NULL, "on leave", NULL, &st);
    ck_ok(st);
    ck_assert_int_eq(r->status, T_OPEN);
    ck_assert_int_eq(r->assignee_kind, USER);
    ck_assert_str_eq(r->assignee_id, bob);
    ck_assert_int_eq(r->priority, 50);
    ck_assert_int_eq(count_of(event_types(root), "TASK_REASSIGNED"), 1);
    ck_assert_str_eq(actor_of(root, "TASK_REASSIGNED"), alice);
    /* Someone who neither holds nor assigned it may not. */
    reassign(as(u("carol")), t->id, alice, NULL, NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_PERMISSION_DENIED, "NOT_ASSIGNEE");
    /* The assigner may: to a group, whose members then see it. */
    r = reassign(as("boss"), t->id, NULL, grp, NULL, NULL, &st);
    ck_ok(st);
    ck_assert_int_eq(r->assignee_kind, GROUP);
    ck_assert_str_eq(r->assignee_id, grp);
    /* A claimed group task: the claimer moves it back to a person. */
    claim(as(bob), t->id, "ClaimTask", &st);
    ck_ok(st);
    r = reassign(as(bob), t->id, alice, NULL, NULL, NULL, &st);
    ck_ok(st);
    ck_assert_int_eq(r->status, T_OPEN);
    ck_assert_str_eq(r->claimed_by, "");
    ck_assert_int_eq(count_of(event_types(root), "TASK_REASSIGNED"), 3);
}
END_TEST

WF_CASE_TEST("open", test_reassign_refusals)
{
    const char *alice = u("alice");
    const char *root = root_of(as("boss"));
    Workflow__V1__Task *t = assign1(as("boss"), root, USER, alice);
    wf_client_status st;
    reassign(as(alice), NO_ID, "x", NULL, NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "TASK_NOT_FOUND");
    reassign(as(alice), "x", "x", NULL, NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "TASK_NOT_FOUND");
    reassign(as(alice), "", "x", NULL, NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    reassign(as_tenant("other", alice), t->id, "x", NULL, NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "TASK_NOT_FOUND");
    reassign(as(alice), t->id, "x", "g", NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    reassign(as(alice), t->id, NULL, NULL, NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    char *big = wf_arena_calloc(ta, 1100, 1);
    memset(big, 'r', 1025);
    reassign(as(alice), t->id, "x", NULL, big, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    wf_client *anon = wf_test_client(&ts, NULL, NULL, NULL);
    reassign(anon, t->id, "x", NULL, NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "ACTOR_MISSING");
    wf_client_free(anon);
    /* A finished task. */
    complete_task_as(alice, t->id, "{}", &st);
    ck_ok(st);
    reassign(as(alice), t->id, "x", NULL, NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "TASK_NOT_OPEN");
    ck_assert_int_eq(count_of(event_types(root), "TASK_REASSIGNED"), 0);
}
END_TEST

WF_CASE_TEST("open", test_reassign_is_idempotent)
{
    const char *alice = u("alice"), *bob = u("bob");
    const char *root = root_of(as("boss"));
    Workflow__V1__Task *t = assign1(as("boss"), root, USER, alice);
    wf_client_status st;
    const char *rid = u("rid");
    reassign(as(alice), t->id, bob, NULL, NULL, rid, &st);
    ck_ok(st);
    /* The repeat answers the first response (bob may no longer be
     * reassigned by alice, but nothing runs again). */
    Workflow__V1__Task *again = reassign(as(alice), t->id, bob, NULL, NULL, rid, &st);
    ck_ok(st);
    ck_assert_str_eq(again->assignee_id, bob);
    reassign(as(alice), t->id, u("dave"), NULL, NULL, rid, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "REQUEST_ID_REUSED");
    ck_assert_int_eq(count_of(event_types(root), "TASK_REASSIGNED"), 1);
}
END_TEST

WF_CASE_TEST("static_directory", test_reassign_meets_the_static_directory)
{
    const char *root = root_of(as("boss"));
    Workflow__V1__Task *t = assign1(as("boss"), root, GROUP, "it");
    wf_client_status st;
    /* carol is not in group it: she may not move its open task. */
    reassign(as("carol"), t->id, "carol", NULL, NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_PERMISSION_DENIED, "NOT_GROUP_MEMBER");
    reassign(as("alice"), t->id, "nobody", NULL, NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    reassign(as("alice"), t->id, NULL, "ghosts", NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "EMPTY_GROUP");
    Workflow__V1__Task *r = reassign(as("alice"), t->id, "carol", NULL, NULL, NULL, &st);
    ck_ok(st);
    ck_assert_str_eq(r->assignee_id, "carol");
    delegate(as("carol"), t->id, "nobody", &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
}
END_TEST

/* ---- DelegateTask -----------------------------------------------------------------------------
 */

WF_CASE_TEST("open", test_delegate_resolve_and_complete)
{
    const char *alice = u("alice"), *bob = u("bob");
    const char *root = root_of(as("boss"));
    Workflow__V1__Task *t = assign1(as("boss"), root, USER, alice);
    wf_client_status st;
    Workflow__V1__Task *d = delegate(as(alice), t->id, bob, &st);
    ck_ok(st);
    ck_assert_int_eq(d->status, T_CLAIMED);
    ck_assert_str_eq(d->claimed_by, bob);
    ck_assert_str_eq(d->owner, alice);
    ck_assert_int_eq(d->delegation_state, D_PENDING);
    ck_assert_str_eq(actor_of(root, "TASK_DELEGATED"), alice);
    /* While pending: the owner may not complete, the delegate may not
     * release, and the delegate cannot hand it back to the owner. */
    complete_task_as(alice, t->id, "{}", &st);
    ck_fails(st, GRPC_STATUS_PERMISSION_DENIED, "NOT_ASSIGNEE");
    claim(as(bob), t->id, "ReleaseTask", &st);
    ck_fails(st, GRPC_STATUS_PERMISSION_DENIED, "NOT_ASSIGNEE");
    delegate(as(bob), t->id, alice, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    /* The delegate resolves: variables merged, the task back with alice. */
    Workflow__V1__CompleteTaskResponse *c = complete_task_as(bob, t->id, "{\"checked\":true}", &st);
    ck_ok(st);
    ck_assert_int_eq(c->task->status, T_CLAIMED);
    ck_assert_str_eq(c->task->claimed_by, alice);
    ck_assert_int_eq(c->task->delegation_state, D_RESOLVED);
    ck_assert_str_eq(actor_of(root, "TASK_RESOLVED"), bob);
    ck_assert_int_eq(count_of(event_types(root), "TASK_COMPLETED"), 0);
    Workflow__V1__GetInstanceResponse *g = get_instance(t->instance_id);
    ck_assert_ptr_nonnull(strstr(g->instance->variables_json, "\"checked\""));
    /* The delegate is done with it; the owner completes. */
    complete_task_as(bob, t->id, "{}", &st);
    ck_fails(st, GRPC_STATUS_PERMISSION_DENIED, "NOT_ASSIGNEE");
    c = complete_task_as(alice, t->id, "{}", &st);
    ck_ok(st);
    ck_assert_int_eq(c->task->status, T_DONE);
    ck_assert_str_eq(actor_of(root, "TASK_COMPLETED"), alice);
}
END_TEST

WF_CASE_TEST("open", test_delegate_refusals)
{
    const char *alice = u("alice"), *bob = u("bob"), *grp = u("grp");
    const char *root = root_of(as("boss"));
    Workflow__V1__Task *t = assign1(as("boss"), root, USER, alice);
    Workflow__V1__Task *g = assign1(as("boss"), root, GROUP, grp);
    wf_client_status st;
    delegate(as(alice), NO_ID, bob, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "TASK_NOT_FOUND");
    delegate(as_tenant("other", alice), t->id, bob, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "TASK_NOT_FOUND");
    delegate(as(alice), t->id, "", &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    delegate(as(alice), t->id, alice, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    delegate(as(bob), t->id, u("carol"), &st);
    ck_fails(st, GRPC_STATUS_PERMISSION_DENIED, "NOT_ASSIGNEE");
    delegate(as(bob), g->id, alice, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "TASK_NOT_CLAIMED");
    /* A claimed group task: its claimer delegates; a second delegation
     * keeps the first owner. */
    claim(as(bob), g->id, "ClaimTask", &st);
    ck_ok(st);
    Workflow__V1__Task *d = delegate(as(bob), g->id, alice, &st);
    ck_ok(st);
    ck_assert_str_eq(d->owner, bob);
    d = delegate(as(alice), g->id, u("carol"), &st);
    ck_ok(st);
    ck_assert_str_eq(d->owner, bob);
    ck_assert_str_eq(d->claimed_by, u("carol"));
    complete_task_as(alice, t->id, "{}", &st);
    ck_ok(st);
    delegate(as(alice), t->id, bob, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "TASK_NOT_OPEN");
    ck_assert_int_eq(count_of(event_types(root), "TASK_DELEGATED"), 2);
}
END_TEST

WF_CASE_TEST("open", test_delegate_a_net_task)
{
    const char *alice = u("alice"), *bob = u("bob");
    nb *n = net_new(u("review"));
    place(n, "s", START);
    place(n, "e", END);
    Workflow__V1__Transition *tr = trans(n, "t", T_USER);
    Workflow__V1__Assignee *a = wf_arena_calloc(ta, 1, sizeof *a);
    workflow__v1__assignee__init(a);
    a->kind = USER;
    a->ids = wf_arena_calloc(ta, 2, sizeof *a->ids);
    a->ids[0] = (char *)alice;
    a->n_ids = 1;
    tr->assignee = a;
    arc(n, "s", "t");
    arc(n, "t", "e");
    deploy(n);
    Workflow__V1__Instance *in = start_boss(n->d.key, "{}");
    Workflow__V1__Task *t = task_of(get_instance(in->id), "t", T_OPEN);
    ck_assert_int_eq(t->priority, 50);
    wf_client_status st;
    delegate(as(alice), t->id, bob, &st);
    ck_ok(st);
    Workflow__V1__CompleteTaskResponse *c = complete_task_as(bob, t->id, "{\"x\":1}", &st);
    ck_ok(st);
    ck_assert_int_eq(c->task->delegation_state, D_RESOLVED);
    /* Resolving fires nothing: the case still waits. */
    ck_assert_int_eq(get_instance(in->id)->instance->status,
                     WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_RUNNING);
    complete_task_as(alice, t->id, "{}", &st);
    ck_ok(st);
    ck_assert_int_eq(get_instance(in->id)->instance->status,
                     WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_COMPLETED);
}
END_TEST

/* ---- task expressions of USER transitions -------------------------------------------------- */

/* s -> t (USER user, with the task expressions given; NULL = none) -> e */
static nb *
user_net(const char *key, const char *user, const char *prio_expr, const char *due_expr,
         const char *follow_expr)
{
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "e", END);
    Workflow__V1__Transition *tr = trans(n, "t", T_USER);
    Workflow__V1__Assignee *a = wf_arena_calloc(ta, 1, sizeof *a);
    workflow__v1__assignee__init(a);
    a->kind = USER;
    a->ids = wf_arena_calloc(ta, 2, sizeof *a->ids);
    a->ids[0] = (char *)user;
    a->n_ids = 1;
    tr->assignee = a;
    if (prio_expr != NULL)
        tr->priority_expression = (char *)prio_expr;
    if (due_expr != NULL)
        tr->task_due_expression = (char *)due_expr;
    if (follow_expr != NULL)
        tr->task_follow_up_expression = (char *)follow_expr;
    arc(n, "s", "t");
    arc(n, "t", "e");
    return n;
}

WF_CASE_TEST("open", test_user_transition_task_expressions)
{
    const char *alice = u("alice");
    nb *n = user_net(u("prio"), alice, "if .vip then 90 else 40 end", ".due",
                     ".due | fromdate - 86400 | todate");
    deploy(n);
    /* Read back as deployed. */
    Workflow__V1__GetDefinitionRequest gr = WORKFLOW__V1__GET_DEFINITION_REQUEST__INIT;
    gr.key = n->d.key;
    wf_client_status st;
    Workflow__V1__GetDefinitionResponse *gd = call(
        as("dev"), "GetDefinition", &gr, &workflow__v1__get_definition_response__descriptor, &st);
    ck_ok(st);
    Workflow__V1__Definition *d = gd->definition;
    ck_assert_str_eq(d->transitions[0]->priority_expression, "if .vip then 90 else 40 end");
    ck_assert_str_eq(d->transitions[0]->task_due_expression, ".due");

    Workflow__V1__Instance *in =
        start_boss(n->d.key, "{\"vip\":true,\"due\":\"2030-03-02T10:00:00Z\"}");
    Workflow__V1__Task *t = task_of(get_instance(in->id), "t", T_OPEN);
    ck_assert_int_eq(t->priority, 90);
    ck_assert_ptr_nonnull(t->due_at);
    ck_assert_int_eq(t->due_at->seconds, 1898676000);
    ck_assert_ptr_nonnull(t->follow_up_at);
    ck_assert_int_eq(t->follow_up_at->seconds, 1898676000 - 86400);
    in = start_boss(n->d.key, "{\"vip\":false,\"due\":\"2030-03-01T10:00:00Z\"}");
    Workflow__V1__Task *t2 = task_of(get_instance(in->id), "t", T_OPEN);
    ck_assert_int_eq(t2->priority, 40);
    /* The inbox sorts by them. */
    Workflow__V1__ListTasksRequest lr = WORKFLOW__V1__LIST_TASKS_REQUEST__INIT;
    lr.user = (char *)alice;
    lr.sort = S_DUE;
    Workflow__V1__ListTasksResponse *l =
        call(as(alice), "ListTasks", &lr, &workflow__v1__list_tasks_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_tasks, 2);
    ck_assert_str_eq(l->tasks[0]->id, t2->id);
    lr.sort = S_PRIORITY;
    lr.descending = true;
    l = call(as(alice), "ListTasks", &lr, &workflow__v1__list_tasks_response__descriptor, &st);
    ck_ok(st);
    ck_assert_str_eq(l->tasks[0]->id, t->id);

    /* Results the tasks cannot take refuse the StartInstance that enables
     * them, and start nothing. */
    static const char *const bad[] = {
        "{\"vip\":true,\"due\":17}",
        "{\"vip\":true,\"due\":\"next week\"}",
        "{\"vip\":true}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_ptr_null(start_v(as("boss"), n->d.key, 0, bad[i], &st));
        ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
        ck_assert_msg(strstr(st.message, "task_due_expression of transition \"t\"") != NULL, "%s",
                      st.message);
    }
    nb *p = user_net(u("prio-range"), alice, ".p", NULL, NULL);
    deploy(p);
    ck_assert_ptr_null(start_v(as("boss"), p->d.key, 0, "{\"p\":101}", &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_ptr_nonnull(strstr(st.message, "gave 101, which is not 0 to 100"));
    ck_assert_ptr_null(start_v(as("boss"), p->d.key, 0, "{\"p\":\"high\"}", &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_ptr_nonnull(strstr(st.message, "must yield an integer, got string"));
    in = start_v(as("boss"), p->d.key, 0, "{\"p\":0}", &st);
    ck_ok(st);
    ck_assert_int_eq(task_of(get_instance(in->id), "t", T_OPEN)->priority, 0);
    /* The instance count: only the two good starts of each net. */
    Workflow__V1__ListInstancesRequest ir = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
    ir.definition_key = p->d.key;
    ir.started_by = "boss";
    Workflow__V1__ListInstancesResponse *il = call(
        as("boss"), "ListInstances", &ir, &workflow__v1__list_instances_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(il->n_instances, 1);
}
END_TEST

WF_CASE_TEST("open", test_task_expressions_validated_at_deploy)
{
    wf_client_status st;
    nb *n = user_net(u("prio-bad"), u("alice"), ".p |", "[", ".f)");
    ck_assert_ptr_null(deploy_d(as("dev"), &n->d, false, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "DEFINITION_INVALID");
    ck_assert_int_eq(st.nviolations, 3);
    ck_assert(has_violation(
        &st, "definition.transitions[0].priority_expression: ", "EXPRESSION_INVALID"));
    ck_assert(has_violation(
        &st, "definition.transitions[0].task_due_expression: ", "EXPRESSION_INVALID"));
    ck_assert(has_violation(
        &st, "definition.transitions[0].task_follow_up_expression: ", "EXPRESSION_INVALID"));
    /* validate_only lists the same, with OK. */
    Workflow__V1__DeployDefinitionResponse *r = deploy_d(as("dev"), &n->d, true, &st);
    ck_ok(st);
    ck_assert_uint_eq(r->n_errors, 3);

    /* Only USER transitions take them. */
    nb *m = net_new(u("prio-time"));
    place(m, "s", START);
    place(m, "e", END);
    Workflow__V1__Transition *tt = trans(m, "wait", T_TIME);
    tt->delay = dur(1000);
    tt->priority_expression = "50";
    tt->task_due_expression = ".due";
    arc(m, "s", "wait");
    arc(m, "wait", "e");
    ck_assert_ptr_null(deploy_d(as("dev"), &m->d, false, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "DEFINITION_INVALID");
    ck_assert_int_eq(st.nviolations, 2);
    ck_assert(has_violation(
        &st, "definition.transitions[0].priority_expression: ", "TRIGGER_FIELD_CONFLICT"));
    ck_assert(has_violation(
        &st, "definition.transitions[0].task_due_expression: ", "TRIGGER_FIELD_CONFLICT"));

    /* A user step: its fields, at the step's path. */
    Workflow__V1__Definition d = WORKFLOW__V1__DEFINITION__INIT;
    d.key = u("prio-steps");
    d.kind = WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_STEPS;
    Workflow__V1__Step s = WORKFLOW__V1__STEP__INIT;
    Workflow__V1__UserStep us = WORKFLOW__V1__USER_STEP__INIT;
    Workflow__V1__Assignee a = WORKFLOW__V1__ASSIGNEE__INIT;
    char *ids[] = {(char *)u("alice")};
    a.kind = USER;
    a.ids = ids;
    a.n_ids = 1;
    us.assignee = &a;
    us.priority_expression = "[";
    us.due_expression = ".due";
    us.follow_up_expression = ".f)";
    s.id = "review";
    s.user = &us;
    Workflow__V1__Step *steps[] = {&s};
    d.steps = steps;
    d.n_steps = 1;
    ck_assert_ptr_null(deploy_d(as("dev"), &d, false, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "DEFINITION_INVALID");
    ck_assert_int_eq(st.nviolations, 2);
    ck_assert(
        has_violation(&st, "definition.steps[0].user.priority_expression: ", "EXPRESSION_INVALID"));
    ck_assert(has_violation(
        &st, "definition.steps[0].user.follow_up_expression: ", "EXPRESSION_INVALID"));
    /* Fixed, the step's task takes them. */
    us.priority_expression = ".p";
    us.follow_up_expression = "";
    ck_assert_ptr_nonnull(deploy_d(as("dev"), &d, false, &st));
    ck_ok(st);
    Workflow__V1__Instance *in =
        start_v(as("boss"), d.key, 0, "{\"p\":77,\"due\":\"2030-03-02T10:00:00Z\"}", &st);
    ck_ok(st);
    Workflow__V1__Task *t = task_of(get_instance(in->id), "review", T_OPEN);
    ck_assert_int_eq(t->priority, 77);
    ck_assert_int_eq(t->due_at->seconds, 1898676000);
    ck_assert_ptr_null(t->follow_up_at);
}
END_TEST

/* ---- the work-item history follows the task ------------------------------------------------ */

static Workflow__V1__WorkItem *
user_item(const char *instance_id)
{
    Workflow__V1__ListWorkItemsRequest r = WORKFLOW__V1__LIST_WORK_ITEMS_REQUEST__INIT;
    r.instance_id = (char *)instance_id;
    wf_client_status st;
    Workflow__V1__ListWorkItemsResponse *l = call(
        as("boss"), "ListWorkItems", &r, &workflow__v1__list_work_items_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_work_items, 1);
    return l->work_items[0];
}

static void
ck_item(const char *instance_id, Workflow__V1__AssigneeKind kind, const char *who)
{
    Workflow__V1__WorkItem *it = user_item(instance_id);
    ck_assert_int_eq(it->assignee_kind, kind);
    ck_assert_uint_eq(it->n_assignee_ids, 1);
    ck_assert_str_eq(it->assignee_ids[0], who);
}

WF_CASE_TEST("open", test_work_items_follow_reassign_and_delegate)
{
    const char *alice = u("alice"), *bob = u("bob"), *carol = u("carol"), *grp = u("ops");
    nb *n = user_net(u("wi"), alice, NULL, NULL, NULL);
    deploy(n);
    Workflow__V1__Instance *in = start_boss(n->d.key, "{}");
    Workflow__V1__Task *t = task_of(get_instance(in->id), "t", T_OPEN);
    ck_item(in->id, USER, alice);
    wf_client_status st;
    reassign(as(alice), t->id, bob, NULL, "holiday", NULL, &st);
    ck_ok(st);
    ck_item(in->id, USER, bob);
    /* Delegated, the item names the delegate; resolved, its owner again. */
    delegate(as(bob), t->id, carol, &st);
    ck_ok(st);
    ck_item(in->id, USER, carol);
    complete_task_as(carol, t->id, "{}", &st);
    ck_ok(st);
    ck_item(in->id, USER, bob);
    reassign(as(bob), t->id, NULL, grp, NULL, NULL, &st);
    ck_ok(st);
    ck_item(in->id, GROUP, grp);
    /* Refused operations change nothing. */
    delegate(as(bob), t->id, carol, &st);
    ck_assert_int_ne(st.code, 0);
    ck_item(in->id, GROUP, grp);
    /* Completed, the item is FINISHED by the group member who did it, and
     * still names the group. */
    const char *dave = u("dave");
    claim(as(dave), t->id, "ClaimTask", &st);
    ck_ok(st);
    complete_task_as(dave, t->id, "{}", &st);
    ck_ok(st);
    Workflow__V1__WorkItem *it = user_item(in->id);
    ck_assert_int_eq(it->state, WORKFLOW__V1__WORK_ITEM_STATE__WORK_ITEM_STATE_FINISHED);
    ck_assert_str_eq(it->assignee_ids[0], grp);
    ck_assert_str_eq(it->finished_by, dave);
}
END_TEST

/* ---- UpdateTask ----------------------------------------------------------------------------- */

WF_CASE_TEST("open", test_update_task)
{
    const char *alice = u("alice");
    const char *root = root_of(as("boss"));
    Workflow__V1__Task *t = assign1(as("boss"), root, USER, alice);
    wf_client_status st;
    Workflow__V1__UpdateTaskRequest r = WORKFLOW__V1__UPDATE_TASK_REQUEST__INIT;
    r.task_id = t->id;
    r.priority = prio(90);
    r.due_at = ts_at(2000000000);
    r.follow_up_at = ts_at(1900000000);
    Workflow__V1__Task *x = update(as(alice), &r, &st);
    ck_ok(st);
    ck_assert_int_eq(x->priority, 90);
    ck_assert_int_eq(x->due_at->seconds, 2000000000);
    ck_assert_int_eq(x->follow_up_at->seconds, 1900000000);
    ck_assert_str_eq(actor_of(root, "TASK_UPDATED"), alice);
    /* Only what is set changes; a clear removes a time. */
    Workflow__V1__UpdateTaskRequest c = WORKFLOW__V1__UPDATE_TASK_REQUEST__INIT;
    c.task_id = t->id;
    c.clear_follow_up_at = true;
    x = update(as("boss"), &c, &st);
    ck_ok(st);
    ck_assert_int_eq(x->priority, 90);
    ck_assert_ptr_null(x->follow_up_at);
    ck_assert_int_eq(x->due_at->seconds, 2000000000);
    ck_assert_int_eq(get_task(t->id)->priority, 90);
    ck_assert_int_eq(count_of(event_types(root), "TASK_UPDATED"), 2);
}
END_TEST

WF_CASE_TEST("open", test_update_task_refusals)
{
    const char *alice = u("alice");
    const char *root = root_of(as("boss"));
    Workflow__V1__Task *t = assign1(as("boss"), root, USER, alice);
    wf_client_status st;
    Workflow__V1__UpdateTaskRequest r = WORKFLOW__V1__UPDATE_TASK_REQUEST__INIT;
    r.task_id = t->id;
    update(as(alice), &r, &st); /* nothing to change */
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    r.priority = prio(101);
    update(as(alice), &r, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    r.priority = prio(-1);
    update(as(alice), &r, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    r.priority = NULL;
    r.due_at = ts_at(1900000000);
    r.follow_up_at = ts_at(2000000000);
    update(as(alice), &r, &st); /* follow-up after due */
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    r.follow_up_at = NULL;
    r.clear_due_at = true;
    update(as(alice), &r, &st); /* set and cleared */
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    r.clear_due_at = false;
    r.due_at = ts_at(300000000000LL); /* past year 9999 */
    update(as(alice), &r, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    r.due_at = ts_at(1900000000);
    update(as(u("carol")), &r, &st);
    ck_fails(st, GRPC_STATUS_PERMISSION_DENIED, "NOT_ASSIGNEE");
    r.task_id = NO_ID;
    update(as(alice), &r, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "TASK_NOT_FOUND");
    r.task_id = t->id;
    update(as_tenant("other", alice), &r, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "TASK_NOT_FOUND");
    complete_task_as(alice, t->id, "{}", &st);
    ck_ok(st);
    update(as(alice), &r, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "TASK_NOT_OPEN");
    ck_assert_int_eq(count_of(event_types(root), "TASK_UPDATED"), 0);
}
END_TEST

/* ---- AssignTo and ListTasks
 * ---------------------------------------------------------------------- */

WF_CASE_TEST("open", test_assign_with_priority_and_times)
{
    const char *alice = u("alice");
    const char *root = root_of(as("boss"));
    wf_client_status st;
    Workflow__V1__Task *t =
        assign_full(as("boss"), root, USER, alice, 7, 2000000000, 1999999000, &st);
    ck_ok(st);
    ck_assert_int_eq(t->priority, 7);
    ck_assert_int_eq(t->due_at->seconds, 2000000000);
    ck_assert_int_eq(t->follow_up_at->seconds, 1999999000);
    assign_full(as("boss"), root, USER, alice, 101, 0, 0, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    assign_full(as("boss"), root, USER, alice, -1, 1900000000, 2000000000, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
}
END_TEST

WF_CASE_TEST("open", test_list_tasks_sorted_filtered_and_paged)
{
    const char *alice = u("alice");
    const char *root = root_of(as("boss"));
    wf_client_status st;
    /* Created in this order: priorities with ties, some without a due. */
    static const int32_t pr[] = {30, 80, 50, 80, 10, 80};
    static const int64_t due[] = {1900000300, 0, 1900000100, 1900000200, 0, 1900000100};
    char made[6][64];
    for (int i = 0; i < 6; i++) {
        Workflow__V1__Task *t = assign_full(as("boss"), root, USER, alice, pr[i], due[i], 0, &st);
        ck_ok(st);
        snprintf(made[i], 64, "%s", t->id);
    }
    char got[16][64];
    /* By priority, lowest first; ties by creation: 10, 30, 50, 80 (1, 3, 5). */
    static const int by_prio[] = {4, 0, 2, 1, 3, 5};
    for (int size = 1; size <= 4; size++) {
        ck_assert_int_eq(list_all(as(alice), alice, S_PRIORITY, false, 0, 0, size, got, 16), 6);
        for (int i = 0; i < 6; i++)
            ck_assert_str_eq(got[i], made[by_prio[i]]);
        /* Descending: the exact reverse. */
        ck_assert_int_eq(list_all(as(alice), alice, S_PRIORITY, true, 0, 0, size, got, 16), 6);
        for (int i = 0; i < 6; i++)
            ck_assert_str_eq(got[i], made[by_prio[5 - i]]);
    }
    /* By due: 100 (2, 5), 200 (3), 300 (0), then the undated (1, 4). */
    static const int by_due[] = {2, 5, 3, 0, 1, 4};
    ck_assert_int_eq(list_all(as(alice), alice, S_DUE, false, 0, 0, 2, got, 16), 6);
    for (int i = 0; i < 6; i++)
        ck_assert_str_eq(got[i], made[by_due[i]]);
    ck_assert_int_eq(list_all(as(alice), alice, S_DUE, true, 0, 0, 4, got, 16), 6);
    for (int i = 0; i < 6; i++)
        ck_assert_str_eq(got[i], made[by_due[5 - i]]);
    /* By creation, newest first. */
    ck_assert_int_eq(list_all(as(alice), alice, S_CREATED, true, 0, 0, 5, got, 16), 6);
    for (int i = 0; i < 6; i++)
        ck_assert_str_eq(got[i], made[5 - i]);
    /* The due window is strict and leaves the undated out. */
    ck_assert_int_eq(list_all(as(alice), alice, S_DUE, false, 1900000100, 0, 3, got, 16), 2);
    ck_assert_str_eq(got[0], made[3]);
    ck_assert_str_eq(got[1], made[0]);
    ck_assert_int_eq(list_all(as(alice), alice, S_PRIORITY, false, 0, 1900000200, 1, got, 16), 2);
    ck_assert_str_eq(got[0], made[2]);
    ck_assert_str_eq(got[1], made[5]);
    ck_assert_int_eq(
        list_all(as(alice), alice, S_CREATED, false, 1900000000, 1900000250, 2, got, 16), 3);
    /* A token belongs to its sort. */
    Workflow__V1__ListTasksRequest r = WORKFLOW__V1__LIST_TASKS_REQUEST__INIT;
    r.user = (char *)alice;
    r.sort = S_PRIORITY;
    r.page_size = 2;
    Workflow__V1__ListTasksResponse *p =
        call(as(alice), "ListTasks", &r, &workflow__v1__list_tasks_response__descriptor, &st);
    ck_ok(st);
    r.page_token = p->next_page_token;
    r.sort = S_DUE;
    call(as(alice), "ListTasks", &r, &workflow__v1__list_tasks_response__descriptor, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    r.page_token = "";
    r.due_after = ts_at(1900000200);
    r.due_before = ts_at(1900000100);
    call(as(alice), "ListTasks", &r, &workflow__v1__list_tasks_response__descriptor, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
}
END_TEST

int
main(void)
{
    const wf_test_case cases[] = {
        {"open", setup, teardown, 60}, {"static_directory", setup_static, teardown, 60}, {NULL}};
    return wf_test_run(wf_test_suite_of("e2e_inbox", cases));
}
