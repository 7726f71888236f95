/*
 * End-to-end tests of documented promises that cross the kinds of
 * definitions, over gRPC, on the memory store and on Postgres
 * (WF_TEST_STORE=pg):
 *
 *  - a restart arc: a review that sends the case back to START, whose
 *    outgoing transition then runs again; arcs out of END stay refused;
 *  - ListInstances' process states: every root, AD_HOC or NET, running,
 *    FAILED or ended, is in exactly one of NOT_STARTED, OPEN and CLOSED;
 *  - the error details: ErrorInfo.metadata names the ids of the message,
 *    FieldViolation.reason carries the code;
 *  - CompleteAndEnd of a net task: the task is done, the parallel job,
 *    timer and tasks are withdrawn, the root completes.
 *
 * Postgres keeps rows between runs: every definition key, job type and
 * user is made unique with a per-test suffix.
 */
#include <stdio.h>
#include <string.h>

#include <grpc/status.h>

#include "net_kit.h"
#include "test_support.h"
#include "workflow/v1/workflow.pb-c.h"

#define TS_CLAIMED WORKFLOW__V1__TASK_STATUS__TASK_STATUS_CLAIMED
#define PS_NOT_STARTED WORKFLOW__V1__PROCESS_STATE__PROCESS_STATE_NOT_STARTED
#define PS_OPEN WORKFLOW__V1__PROCESS_STATE__PROCESS_STATE_OPEN
#define PS_CLOSED WORKFLOW__V1__PROCESS_STATE__PROCESS_STATE_CLOSED

/* A USER transition assigned to one user. */
static Workflow__V1__Transition *
user_t(nb *n, const char *id, const char *who)
{
    Workflow__V1__Transition *t = trans(n, id, T_USER);
    Workflow__V1__Assignee *a = wf_arena_calloc(ta, 1, sizeof *a);
    workflow__v1__assignee__init(a);
    a->kind = A_USER;
    a->ids = wf_arena_calloc(ta, 1, sizeof *a->ids);
    a->ids[a->n_ids++] = (char *)who;
    t->assignee = a;
    return t;
}

static size_t
tasks_with(const Workflow__V1__GetInstanceResponse *g, int status)
{
    size_t k = 0;
    for (size_t i = 0; i < g->n_tasks; i++)
        k += (int)g->tasks[i]->status == status;
    return k;
}

/* ---- the restart arc ---------------------------------------------------------------------- */

/* s -> draft (USER ann) -> p1 -> review (USER bob) -> e [.approved]
 *                                                  -> s (default: restart) */
static nb *
restart_net(const char *key)
{
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "p1", NORMAL);
    place(n, "e", END);
    user_t(n, "draft", "ann");
    user_t(n, "review", "bob");
    arc(n, "s", "draft");
    arc(n, "draft", "p1");
    arc(n, "p1", "review");
    arc(n, "review", "e")->guard = ".approved";
    arc(n, "review", "s")->is_default = true;
    return n;
}

WF_TEST(test_restart_arc_loops_through_start)
{
    char *key = u("restart");
    Workflow__V1__DeployDefinitionResponse *r = deploy(restart_net(key));
    ck_assert(r->created);
    ck_assert_uint_eq(r->n_errors, 0);
    Workflow__V1__Instance *in = start_boss(key, "{\"doc\":1}");
    wf_client_status st;
    const char *prev = NULL;
    for (int round = 0; round < 2; round++) {
        Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
        ck_assert_int_eq(g->instance->status, I_RUNNING);
        ck_assert_int_eq(marking(g, "s"), 1);
        Workflow__V1__Task *draft = task_of(g, "draft", TS_OPEN);
        ck_assert_ptr_nonnull(draft);
        if (prev != NULL) /* a new work item, a new task */
            ck_assert_str_ne(draft->id, prev);
        prev = wf_arena_strdup(ta, draft->id);
        complete_task_as("ann", draft->id, NULL, &st);
        ck_ok(st);
        g = get_instance(in->id);
        ck_assert_int_eq(marking(g, "s"), 0);
        ck_assert_int_eq(marking(g, "p1"), 1);
        /* Sent back: the token returns to START and draft is enabled again. */
        complete_task_as("bob", task_of(g, "review", TS_OPEN)->id, "{\"approved\":false}", &st);
        ck_ok(st);
    }
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_RUNNING);
    ck_assert_int_eq(marking(g, "s"), 1);
    ck_assert_uint_eq(tasks_with(g, TS_OPEN), 1);
    ck_assert_uint_eq(tasks_with(g, TS_DONE), 4);
    complete_task_as("ann", task_of(g, "draft", TS_OPEN)->id, NULL, &st);
    ck_ok(st);
    complete_task_as("bob", task_of(get_instance(in->id), "review", TS_OPEN)->id,
                     "{\"approved\":true}", &st);
    ck_ok(st);
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_int_eq(marking(g, "e"), 1);
    const char *ev = event_types(in->id);
    ck_assert_int_eq(count_of(ev, "TRANSITION_FIRED"), 6);
    ck_assert_int_eq(count_of(ev, "TASK_CREATED"), 6);
    ck_assert_int_eq(count_of(ev, "INSTANCE_COMPLETED"), 1);

    /* Arcs out of END are still refused. */
    nb *bad = restart_net(u("fromend"));
    arc(bad, "e", "draft"); /* arcs[5] */
    Workflow__V1__DeployDefinitionResponse *v = deploy_d(as("dev"), &bad->d, true, &st);
    ck_ok(st);
    bool seen = false;
    for (size_t i = 0; i < v->n_errors; i++) {
        ck_assert_str_ne(v->errors[i]->code, "START_PLACE_HAS_INPUT");
        seen |= strcmp(v->errors[i]->code, "END_PLACE_HAS_OUTPUT") == 0 &&
                strcmp(v->errors[i]->path, "arcs[5]") == 0;
    }
    ck_assert(seen);
}
END_TEST

/* ---- process states ------------------------------------------------------------------------ */

/* The states whose ListInstances (every starter, definition key) list id,
 * as letters: N(OT_STARTED), O(PEN), C(LOSED). */
static const char *
states_of(const char *key, const char *id)
{
    static char out[4];
    static const Workflow__V1__ProcessState states[] = {PS_NOT_STARTED, PS_OPEN, PS_CLOSED};
    size_t n = 0;
    for (size_t s = 0; s < 3; s++) {
        Workflow__V1__ListInstancesRequest req = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
        req.started_by = "*";
        req.definition_key = (char *)key;
        req.state = states[s];
        req.page_size = 500;
        wf_client_status st;
        Workflow__V1__ListInstancesResponse *r =
            call(as("boss"), "ListInstances", &req,
                 &workflow__v1__list_instances_response__descriptor, &st);
        ck_ok(st);
        for (size_t i = 0; i < r->n_instances; i++)
            if (strcmp(r->instances[i]->id, id) == 0)
                out[n++] = "NOC"[s];
    }
    out[n] = '\0';
    return out;
}

WF_TEST(test_every_root_is_in_exactly_one_process_state)
{
    /* AD_HOC: no referral = NOT_STARTED; a referral = OPEN; ended = CLOSED. */
    char *adhoc = u("adhoc");
    Workflow__V1__Instance *a = start_boss(adhoc, NULL);
    ck_assert_str_eq(states_of(adhoc, a->id), "N");
    Workflow__V1__AssignToRequest ar = WORKFLOW__V1__ASSIGN_TO_REQUEST__INIT;
    Workflow__V1__Assignee who = WORKFLOW__V1__ASSIGNEE__INIT;
    char *ids[] = {u("ann")};
    who.kind = A_USER;
    who.ids = ids;
    who.n_ids = 1;
    ar.parent_instance_id = a->id;
    ar.title = "look";
    ar.assignee = &who;
    wf_client_status st;
    Workflow__V1__AssignToResponse *as_r =
        call(as("boss"), "AssignTo", &ar, &workflow__v1__assign_to_response__descriptor, &st);
    ck_ok(st);
    ck_assert_str_eq(states_of(adhoc, a->id), "O");
    Workflow__V1__CompleteAndEndRequest ce = WORKFLOW__V1__COMPLETE_AND_END_REQUEST__INIT;
    ce.task_id = as_r->task->id;
    call(as(ids[0]), "CompleteAndEnd", &ce, &workflow__v1__complete_and_end_response__descriptor,
         &st);
    ck_ok(st);
    ck_assert_str_eq(states_of(adhoc, a->id), "C");

    /* NET: running without any referral = OPEN (its start created work). */
    char *net = u("netstate"), *type = u("charge");
    nb *n = net_new(net);
    place(n, "s", START);
    place(n, "e", END);
    with_job(trans(n, "charge", T_AUTO), type, 1, 0);
    arc(n, "s", "charge");
    arc(n, "charge", "e");
    deploy(n);
    Workflow__V1__Instance *running = start_boss(net, NULL);
    ck_assert_str_eq(states_of(net, running->id), "O");
    /* FAILED with an incident, no referral: OPEN. */
    Workflow__V1__Job *j = activate(type, 1, 0, 0)->jobs[0];
    ck_assert_int_eq(fail_job(j->key, "declined", 0, -1, &st), 0);
    ck_assert_int_eq(get_instance(running->id)->instance->status, I_FAILED);
    ck_assert_str_eq(states_of(net, running->id), "O");
    /* Completed: CLOSED. */
    Workflow__V1__Instance *done = start_boss(net, NULL);
    ck_assert_str_eq(states_of(net, done->id), "O");
    j = activate(type, 1, 0, 0)->jobs[0];
    ck_assert_int_eq(complete_job_c(as(NULL), j->key, NULL, &st), 0);
    ck_assert_int_eq(get_instance(done->id)->instance->status, I_COMPLETED);
    ck_assert_str_eq(states_of(net, done->id), "C");
    /* Cancelled: CLOSED. */
    Workflow__V1__Instance *gone = start_boss(net, NULL);
    Workflow__V1__CancelInstanceRequest cr = WORKFLOW__V1__CANCEL_INSTANCE_REQUEST__INIT;
    cr.instance_id = gone->id;
    call(as("boss"), "CancelInstance", &cr, &workflow__v1__cancel_instance_response__descriptor,
         &st);
    ck_ok(st);
    ck_assert_str_eq(states_of(net, gone->id), "C");
    /* The state and the status filter combine. */
    Workflow__V1__ListInstancesRequest req = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
    req.started_by = "*";
    req.definition_key = net;
    req.state = PS_OPEN;
    req.status = I_FAILED;
    Workflow__V1__ListInstancesResponse *l = call(
        as("boss"), "ListInstances", &req, &workflow__v1__list_instances_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_instances, 1);
    ck_assert_str_eq(l->instances[0]->id, running->id);
}
END_TEST

/* ---- error details ------------------------------------------------------------------------- */

/* st's ErrorInfo.metadata is exactly want ("key=value" entries, in order). */
static void
ck_metadata(const wf_client_status *st, const char *const *want, int n)
{
    ck_assert_msg(st->nmetadata == n, "%d metadata entries, want %d (%s: %s)", st->nmetadata, n,
                  st->reason, st->message);
    for (int i = 0; i < n; i++)
        ck_assert_str_eq(st->metadata[i], want[i]);
}

WF_TEST(test_error_details_name_the_ids)
{
    wf_client_status st;
    char md[160];
    /* TASK_NOT_FOUND */
    Workflow__V1__GetTaskRequest gt = WORKFLOW__V1__GET_TASK_REQUEST__INIT;
    gt.task_id = "01930000-0000-7000-8000-00000000beef";
    ck_assert_ptr_null(
        call(as("boss"), "GetTask", &gt, &workflow__v1__get_task_response__descriptor, &st));
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "TASK_NOT_FOUND");
    ck_metadata(&st, (const char *[]){"taskId=01930000-0000-7000-8000-00000000beef"}, 1);
    /* INSTANCE_NOT_FOUND */
    Workflow__V1__GetInstanceRequest gi = WORKFLOW__V1__GET_INSTANCE_REQUEST__INIT;
    gi.instance_id = "01930000-0000-7000-8000-00000000cafe";
    ck_assert_ptr_null(call(as("boss"), "GetInstance", &gi,
                            &workflow__v1__get_instance_response__descriptor, &st));
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "INSTANCE_NOT_FOUND");
    ck_metadata(&st, (const char *[]){"instanceId=01930000-0000-7000-8000-00000000cafe"}, 1);
    /* DEFINITION_NOT_FOUND */
    char *key = u("nokey");
    Workflow__V1__GetDefinitionRequest gd = WORKFLOW__V1__GET_DEFINITION_REQUEST__INIT;
    gd.key = key;
    ck_assert_ptr_null(call(as("boss"), "GetDefinition", &gd,
                            &workflow__v1__get_definition_response__descriptor, &st));
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "DEFINITION_NOT_FOUND");
    snprintf(md, sizeof md, "definitionKey=%s", key);
    ck_metadata(&st, (const char *[]){md}, 1);

    /* JOB_LEASE_LOST: a stale key after the job was completed. */
    char *net = u("lease"), *type = u("ship");
    nb *n = net_new(net);
    place(n, "s", START);
    place(n, "e", END);
    with_job(trans(n, "ship", T_AUTO), type, 3, 0);
    arc(n, "s", "ship");
    arc(n, "ship", "e");
    deploy(n);
    Workflow__V1__Instance *in = start_boss(net, NULL);
    Workflow__V1__Job *j = activate(type, 1, 0, 0)->jobs[0];
    ck_assert_int_eq(complete_job_c(as(NULL), j->key, NULL, &st), 0);
    complete_job_c(as(NULL), j->key, NULL, &st);
    ck_assert_msg(strcmp(st.reason, "JOB_LEASE_LOST") == 0 ||
                      strcmp(st.reason, "JOB_NOT_FOUND") == 0,
                  "reason %s", st.reason);
    snprintf(md, sizeof md, "jobKey=%s", j->key);
    ck_metadata(&st, (const char *[]){md}, 1);

    /* TASK_NOT_OPEN / NOT_ASSIGNEE of a net task name the task. */
    char *rkey = u("restart");
    deploy(restart_net(rkey));
    in = start_boss(rkey, NULL);
    char *task_id = task_of(get_instance(in->id), "draft", TS_OPEN)->id;
    ck_assert_ptr_null(complete_task_as("mallory", task_id, NULL, &st));
    ck_fails(st, GRPC_STATUS_PERMISSION_DENIED, "NOT_ASSIGNEE");
    snprintf(md, sizeof md, "taskId=%s", task_id);
    ck_metadata(&st, (const char *[]){md}, 1);

    /* A violation of a plain request field: its reason is the error's. */
    Workflow__V1__ListTasksRequest lt = WORKFLOW__V1__LIST_TASKS_REQUEST__INIT;
    lt.page_size = -1;
    lt.user = "ann";
    ck_assert_ptr_null(
        call(as("boss"), "ListTasks", &lt, &workflow__v1__list_tasks_response__descriptor, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_metadata(&st, NULL, 0);
}
END_TEST

/* ---- CompleteAndEnd of a net task ------------------------------------------------------------ */

/* s -> split (silent) -> a, b, c;
 *   a -> review (USER ann) -> a2;  b -> work (AUTO job) -> b2;
 *   c -> wait (TIME 1 h) -> c2;    a2 + b2 + c2 -> join (silent) -> e */
static nb *
parallel_net(const char *key, const char *type)
{
    nb *n = net_new(key);
    const char *places[] = {"a", "b", "c", "a2", "b2", "c2"};
    place(n, "s", START);
    for (size_t i = 0; i < 6; i++)
        place(n, places[i], NORMAL);
    place(n, "e", END);
    trans(n, "split", T_AUTO);
    user_t(n, "review", "ann");
    with_job(trans(n, "work", T_AUTO), type, 3, 0);
    trans(n, "wait", T_TIME)->delay = dur(3600 * 1000);
    trans(n, "join", T_AUTO);
    arc(n, "s", "split");
    arc(n, "split", "a");
    arc(n, "split", "b");
    arc(n, "split", "c");
    arc(n, "a", "review");
    arc(n, "review", "a2");
    arc(n, "b", "work");
    arc(n, "work", "b2");
    arc(n, "c", "wait");
    arc(n, "wait", "c2");
    arc(n, "a2", "join");
    arc(n, "b2", "join");
    arc(n, "c2", "join");
    arc(n, "join", "e");
    return n;
}

WF_TEST(test_complete_and_end_of_a_net_task_ends_the_whole_case)
{
    char *key = u("par"), *type = u("pack");
    deploy(parallel_net(key, type));
    Workflow__V1__Instance *in = start_boss(key, "{\"order\":3}");
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_uint_eq(g->n_tasks, 1);
    ck_assert_uint_eq(g->n_jobs, 1);
    ck_assert_uint_eq(g->n_timers, 1);
    char *task_id = g->tasks[0]->id;
    char *timer_id = g->timers[0]->id;
    /* A worker holds the job when the case is ended. */
    Workflow__V1__Job *j = activate(type, 1, 0, 0)->jobs[0];

    wf_client_status st;
    Workflow__V1__CompleteAndEndRequest ce = WORKFLOW__V1__COMPLETE_AND_END_REQUEST__INIT;
    ce.task_id = task_id;
    ce.variables_json = "{\"verdict\":\"stop\"}";
    ck_assert_ptr_null(call(as("mallory"), "CompleteAndEnd", &ce,
                            &workflow__v1__complete_and_end_response__descriptor, &st));
    ck_fails(st, GRPC_STATUS_PERMISSION_DENIED, "NOT_ASSIGNEE");
    Workflow__V1__CompleteAndEndResponse *r =
        call(as("ann"), "CompleteAndEnd", &ce, &workflow__v1__complete_and_end_response__descriptor,
             &st);
    ck_ok(st);
    ck_assert_int_eq(r->task->status, TS_DONE);
    ck_assert_str_eq(r->task->completed_by, "ann");
    ck_assert_str_eq(r->root_instance->id, in->id);
    ck_assert_int_eq(r->root_instance->status, I_COMPLETED);
    ck_assert_uint_eq(r->n_cancelled_tasks, 0);

    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_ptr_nonnull(g->instance->ended_at);
    ck_assert_str_eq(g->instance->variables_json, "{\"order\":3,\"verdict\":\"stop\"}");
    ck_assert_uint_eq(g->n_jobs, 0);
    ck_assert_uint_eq(g->n_timers, 0);
    ck_assert_int_eq(task_of(g, "review", 0)->status, TS_DONE);
    /* The transition did not fire: no token went on. */
    ck_assert_int_eq(marking(g, "a2"), 0);
    ck_assert_int_eq(marking(g, "e"), 0);
    /* The job is gone: nothing to activate, the held key is stale. */
    ck_assert_uint_eq(activate(type, 5, 0, 0)->n_jobs, 0);
    complete_job_c(as(NULL), j->key, NULL, &st);
    ck_assert_msg(strcmp(st.reason, "JOB_LEASE_LOST") == 0 ||
                      strcmp(st.reason, "JOB_NOT_FOUND") == 0,
                  "reason %s", st.reason);
    /* The timer is gone: it never fires. */
    ck_assert(!fire_timer(in->id, timer_id));
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
    /* Done once: the task is no longer open. */
    ck_assert_ptr_null(call(as("ann"), "CompleteAndEnd", &ce,
                            &workflow__v1__complete_and_end_response__descriptor, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "TASK_NOT_OPEN");
    const char *ev = event_types(in->id);
    ck_assert_int_eq(count_of(ev, "TASK_COMPLETED"), 1);
    ck_assert_int_eq(count_of(ev, "WORKITEM_WITHDRAWN"), 2); /* work, wait */
    ck_assert_int_eq(count_of(ev, "INSTANCE_COMPLETED"), 1);
    ck_assert_int_eq(count_of(ev, "TRANSITION_FIRED"), 1); /* split only */
    const char *tail = strstr(ev, "TASK_COMPLETED WORKITEM_WITHDRAWN WORKITEM_WITHDRAWN "
                                  "INSTANCE_COMPLETED");
    ck_assert_msg(tail != NULL && strlen(tail) == strlen("TASK_COMPLETED WORKITEM_WITHDRAWN "
                                                         "WORKITEM_WITHDRAWN INSTANCE_COMPLETED"),
                  "events: %s", ev);
}
END_TEST

WF_TEST(test_complete_and_end_cancels_the_other_tasks_and_referrals)
{
    /* Two USER branches and a referral under the net root: ending from
     * one task cancels the other and the referral's, and completes the
     * referral and the root. */
    char *key = u("two");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "a", NORMAL);
    place(n, "b", NORMAL);
    place(n, "e", END);
    trans(n, "split", T_AUTO);
    user_t(n, "left", "ann");
    user_t(n, "right", "bob");
    arc(n, "s", "split");
    arc(n, "split", "a");
    arc(n, "split", "b");
    arc(n, "a", "left");
    arc(n, "left", "e");
    arc(n, "b", "right");
    arc(n, "right", "e");
    deploy(n);
    Workflow__V1__Instance *in = start_boss(key, NULL);
    wf_client_status st;
    Workflow__V1__AssignToRequest ar = WORKFLOW__V1__ASSIGN_TO_REQUEST__INIT;
    Workflow__V1__Assignee who = WORKFLOW__V1__ASSIGNEE__INIT;
    char *ids[] = {"cat"};
    who.kind = A_USER;
    who.ids = ids;
    who.n_ids = 1;
    char *adv = u("advice");
    start_boss(adv, NULL); /* creates the AD_HOC definition of the referral */
    ar.parent_instance_id = in->id;
    ar.definition_key = adv;
    ar.title = "advise";
    ar.assignee = &who;
    Workflow__V1__AssignToResponse *ref =
        call(as("boss"), "AssignTo", &ar, &workflow__v1__assign_to_response__descriptor, &st);
    ck_ok(st);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    Workflow__V1__CompleteAndEndRequest ce = WORKFLOW__V1__COMPLETE_AND_END_REQUEST__INIT;
    ce.task_id = task_of(g, "left", TS_OPEN)->id;
    Workflow__V1__CompleteAndEndResponse *r =
        call(as("ann"), "CompleteAndEnd", &ce, &workflow__v1__complete_and_end_response__descriptor,
             &st);
    ck_ok(st);
    ck_assert_uint_eq(r->n_cancelled_tasks, 2);
    ck_assert_int_eq(r->root_instance->status, I_COMPLETED);
    g = get_instance(in->id);
    ck_assert_int_eq(task_of(g, "right", 0)->status, TS_CANCELLED);
    Workflow__V1__GetInstanceResponse *child = get_instance(ref->instance_id);
    ck_assert_int_eq(child->instance->status, I_COMPLETED);
    ck_assert_int_eq(child->tasks[0]->status, TS_CANCELLED);
    const char *ev = event_types(in->id);
    ck_assert_int_eq(count_of(ev, "TASK_CANCELLED"), 2);
    ck_assert_int_eq(count_of(ev, "WORKITEM_WITHDRAWN"), 1); /* right */
    ck_assert_int_eq(count_of(ev, "INSTANCE_COMPLETED"), 2); /* referral, root */
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite("e2e_contract", wf_test_store_name(), setup, teardown, 60));
}
