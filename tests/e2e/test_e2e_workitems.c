/*
 * End-to-end tests over gRPC, on the memory store and on Postgres
 * (WF_TEST_STORE=pg), of two things about work items:
 *   - a job completion the net cannot route (no output arc matches) is an
 *     incident: CompleteJob (and each item of CompleteJobs) answers OK, the
 *     instance is FAILED with last_error naming the transition and the
 *     output, the job is not leased again, and SetVariables + RetryInstance
 *     re-arms the job so that a worker completes it anew and it routes;
 *   - ListWorkItems: the history of every work item of an instance, open
 *     and ended, in enabled order, with states, times, deadline, assignee
 *     or job type and who finished it, paged.
 *
 * Postgres keeps rows between runs: every definition key, job type and
 * user is made unique with a per-test suffix.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/status.h>

#include "net_kit.h"
#include "test_support.h"
#include "wf_arena.h"
#include "store.h"
#include "workflow/v1/workflow.pb-c.h"

/* CompleteJobs with one item; the item's code. */
static int
complete_jobs_one(const char *key, const char *vars)
{
    Workflow__V1__CompleteJobsRequest req = WORKFLOW__V1__COMPLETE_JOBS_REQUEST__INIT;
    Workflow__V1__CompleteJobRequest item = WORKFLOW__V1__COMPLETE_JOB_REQUEST__INIT;
    Workflow__V1__CompleteJobRequest *items[1] = {&item};
    item.job_key = (char *)key;
    item.variables_json = (char *)vars;
    req.completions = items;
    req.n_completions = 1;
    wf_client_status st;
    Workflow__V1__CompleteJobsResponse *r = call(
        as("w1"), "CompleteJobs", &req, &workflow__v1__complete_jobs_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(r->n_results, 1);
    return r->results[0]->code;
}

/* The data of the last event of type in root's tree ("" when none). */
static const char *
last_event_data(const char *root, const char *type)
{
    const wf_event_row *e = last_event(root, type);
    return e != NULL && e->data_json != NULL ? e->data_json : "";
}

/* ---- a job completion no arc can route ------------------------------------------------------ */

static void
unroutable_completion_case(bool batch)
{
    char *key = u(batch ? "unroutable-batch" : "unroutable");
    char *type = u("charge");
    Workflow__V1__DeployDefinitionResponse *r = deploy(guarded_job_net(key, type, 3));
    ck_assert(r->created);
    Workflow__V1__Instance *in = start_v(as("boss"), key, 0, "{\"n\":1}", &(wf_client_status){0});
    ck_assert_ptr_nonnull(in);
    Workflow__V1__ActivateJobsResponse *a = activate(type, 1, 0, 0);
    ck_assert_uint_eq(a->n_jobs, 1);
    const char *key1 = a->jobs[0]->key;

    /* The output matches no arc: OK to the worker, an incident on the
     * instance. */
    wf_client_status st;
    if (batch) {
        ck_assert_int_eq(complete_jobs_one(key1, "{\"amount\":-5}"), 0);
    } else {
        ck_assert_int_eq(complete_job_c(as("w1"), key1, "{\"amount\":-5}", &st), 0);
    }
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_FAILED);
    const char *le = g->last_error;
    ck_assert_ptr_nonnull(le);
    ck_assert_msg(strstr(le, "\"work\"") != NULL, "%s", le);
    ck_assert_msg(strstr(le, "{\"amount\":-5}") != NULL || strstr(le, "\"amount\": -5") != NULL,
                  "%s", le);
    /* The output was not merged; the token is still before the job. */
    ck_assert_str_eq(g->instance->variables_json, "{\"n\":1}");
    ck_assert_int_eq(marking(g, "s"), 1);
    const char *types = event_types(in->id);
    ck_assert_int_eq(count_of(types, "INSTANCE_FAILED"), 1);
    const char *data = last_event_data(in->id, "INSTANCE_FAILED");
    ck_assert_msg(strstr(data, "\"transitionId\":\"work\"") != NULL ||
                      strstr(data, "\"transitionId\": \"work\"") != NULL,
                  "%s", data);
    ck_assert_msg(strstr(data, "NO_ARC_MATCHED") != NULL, "%s", data);

    /* The job is not leased again; its old key is spent. */
    ck_assert_uint_eq(activate(type, 5, 0, 0)->n_jobs, 0);
    ck_assert_int_eq(complete_job_c(as("w1"), key1, "{\"amount\":500}", &st),
                     GRPC_STATUS_FAILED_PRECONDITION);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "JOB_LEASE_LOST");

    /* Fixed data, RetryInstance: the job is activated again with the
     * variables as they are now, and its completion routes. */
    set_vars(in->id, "{\"fixed\":true}", &st);
    ck_ok(st);
    Workflow__V1__Instance *again = retry_c(in->id, &st);
    ck_ok(st);
    ck_assert_int_eq(again->status, I_RUNNING);
    ck_assert_int_eq(count_of(event_types(in->id), "INCIDENT_RESOLVED"), 1);
    a = activate(type, 5, 0, 0);
    ck_assert_uint_eq(a->n_jobs, 1);
    ck_assert_int_eq(a->jobs[0]->attempt, 1);
    ck_assert_msg(strstr(a->jobs[0]->variables_json, "fixed") != NULL, "%s",
                  a->jobs[0]->variables_json);
    if (batch)
        ck_assert_int_eq(complete_jobs_one(a->jobs[0]->key, "{\"amount\":500}"), 0);
    else
        ck_assert_int_eq(complete_job_c(as("w1"), a->jobs[0]->key, "{\"amount\":500}", &st), 0);
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert(strstr(event_types(in->id), "TRANSITION_FIRED") != NULL);
}

WF_TEST(test_unroutable_job_completion_is_an_incident)
{
    unroutable_completion_case(false);
}
END_TEST

WF_TEST(test_unroutable_batch_completion_is_an_incident)
{
    unroutable_completion_case(true);
}
END_TEST

/* ---- ListWorkItems -------------------------------------------------------------------------- */

#define WI_ENABLED WORKFLOW__V1__WORK_ITEM_STATE__WORK_ITEM_STATE_ENABLED
#define WI_FINISHED WORKFLOW__V1__WORK_ITEM_STATE__WORK_ITEM_STATE_FINISHED
#define WI_CANCELLED WORKFLOW__V1__WORK_ITEM_STATE__WORK_ITEM_STATE_CANCELLED

static Workflow__V1__ListWorkItemsResponse *
list_items_c(wf_client *c, const char *id, const Workflow__V1__WorkItemState *states,
             size_t n_states, int32_t page_size, const char *token, wf_client_status *st)
{
    Workflow__V1__ListWorkItemsRequest req = WORKFLOW__V1__LIST_WORK_ITEMS_REQUEST__INIT;
    req.instance_id = (char *)id;
    req.states = (Workflow__V1__WorkItemState *)states;
    req.n_states = n_states;
    req.page_size = page_size;
    req.page_token = (char *)(token != NULL ? token : "");
    return call(c, "ListWorkItems", &req, &workflow__v1__list_work_items_response__descriptor, st);
}

static Workflow__V1__ListWorkItemsResponse *
list_items(const char *id)
{
    wf_client_status st;
    Workflow__V1__ListWorkItemsResponse *r = list_items_c(as(NULL), id, NULL, 0, 0, NULL, &st);
    ck_ok(st);
    ck_assert_str_eq(r->next_page_token, "");
    return r;
}

static Workflow__V1__WorkItem *
item_of(const Workflow__V1__ListWorkItemsResponse *r, const char *transition_id)
{
    for (size_t i = 0; i < r->n_work_items; i++)
        if (strcmp(r->work_items[i]->transition_id, transition_id) == 0)
            return r->work_items[i];
    ck_abort_msg("no work item of %s", transition_id);
    return NULL;
}

static int64_t
us_of(const Google__Protobuf__Timestamp *t)
{
    return t == NULL ? 0 : t->seconds * 1000000 + t->nanos / 1000;
}

static Workflow__V1__Task *
open_task(const Workflow__V1__GetInstanceResponse *g, const char *transition_id)
{
    for (size_t i = 0; i < g->n_tasks; i++)
        if (strcmp(g->tasks[i]->transition_id, transition_id) == 0 &&
            g->tasks[i]->status == TS_OPEN)
            return g->tasks[i];
    ck_abort_msg("no open task of %s", transition_id);
    return NULL;
}

/* s -> review (USER alice) -> a -> charge (AUTO job) -> b -> wait (MSG
 * "paid") | timeout (TIME, 1 h) -> e: a task, a job, a timer that fires
 * and the MSG wait it withdraws. */
static nb *
history_net(const char *key, const char *type, const char *user)
{
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "a", NORMAL);
    place(n, "b", NORMAL);
    place(n, "e", END);
    Workflow__V1__Transition *t = trans(n, "review", T_USER);
    t->name = "Review the order";
    Workflow__V1__Assignee *as_ = wf_arena_calloc(ta, 1, sizeof *as_);
    workflow__v1__assignee__init(as_);
    as_->kind = A_USER;
    as_->ids = wf_arena_calloc(ta, 1, sizeof *as_->ids);
    as_->ids[0] = (char *)user;
    as_->n_ids = 1;
    t->assignee = as_;
    with_job(trans(n, "charge", T_AUTO), type, 3, 0);
    Workflow__V1__Transition *w = trans(n, "wait", T_MSG);
    w->signal_name = "paid";
    Workflow__V1__Transition *tm = trans(n, "timeout", T_TIME);
    tm->delay = dur(3600 * 1000);
    arc(n, "s", "review");
    arc(n, "review", "a");
    arc(n, "a", "charge");
    arc(n, "charge", "b");
    arc(n, "b", "wait");
    arc(n, "b", "timeout");
    arc(n, "wait", "e");
    arc(n, "timeout", "e");
    return n;
}

WF_TEST(test_history_of_task_job_timer_and_withdrawn_wait)
{
    char *key = u("history");
    char *type = u("charge");
    char *alice = u("alice");
    ck_assert(deploy(history_net(key, type, alice))->created);
    wf_client_status st;
    Workflow__V1__Instance *in = start_v(as("boss"), key, 0, NULL, &st);
    ck_ok(st);

    /* Open: the review, ENABLED, given to alice, no end yet. */
    Workflow__V1__ListWorkItemsResponse *r = list_items(in->id);
    ck_assert_uint_eq(r->n_work_items, 1);
    Workflow__V1__WorkItem *rv = r->work_items[0];
    ck_assert_str_eq(rv->transition_id, "review");
    ck_assert_str_eq(rv->transition_name, "Review the order");
    ck_assert_str_eq(rv->instance_id, in->id);
    ck_assert_int_eq(rv->trigger, T_USER);
    ck_assert_int_eq(rv->state, WI_ENABLED);
    ck_assert_ptr_nonnull(rv->enabled_at);
    ck_assert_ptr_null(rv->finished_at);
    ck_assert_ptr_null(rv->cancelled_at);
    ck_assert_ptr_null(rv->deadline);
    ck_assert_int_eq(rv->assignee_kind, A_USER);
    ck_assert_uint_eq(rv->n_assignee_ids, 1);
    ck_assert_str_eq(rv->assignee_ids[0], alice);
    ck_assert_str_eq(rv->finished_by, "");
    char *review_id = wf_arena_strdup(ta, rv->id);

    /* alice completes the task, worker w1 the job. */
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    Workflow__V1__Task *task = open_task(g, "review");
    Workflow__V1__CompleteTaskRequest creq = WORKFLOW__V1__COMPLETE_TASK_REQUEST__INIT;
    creq.task_id = task->id;
    creq.variables_json = "";
    call(as(alice), "CompleteTask", &creq, &workflow__v1__complete_task_response__descriptor, &st);
    ck_ok(st);
    Workflow__V1__ActivateJobsResponse *a = activate(type, 1, 0, 0);
    ck_assert_uint_eq(a->n_jobs, 1);
    ck_assert_int_eq(complete_job_c(as("w1"), a->jobs[0]->key, "{\"charged\":true}", &st), 0);

    /* Now the wait and its timeout are open; the timeout's due time is
     * the deadline of both. */
    g = get_instance(in->id);
    ck_assert_uint_eq(g->n_timers, 1);
    int64_t due = us_of(g->timers[0]->due_at);
    r = list_items(in->id);
    ck_assert_uint_eq(r->n_work_items, 4);
    Workflow__V1__WorkItem *wait = item_of(r, "wait");
    ck_assert_int_eq(wait->state, WI_ENABLED);
    ck_assert_str_eq(wait->signal_name, "paid");
    ck_assert_int_eq(us_of(wait->deadline), due);
    ck_assert_int_eq(us_of(item_of(r, "timeout")->deadline), due);

    /* The timer fires: the wait is withdrawn, the case ends. */
    ck_assert(fire_timer(in->id, g->timers[0]->id));
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);

    r = list_items(in->id);
    ck_assert_uint_eq(r->n_work_items, 4);
    /* In enabled order: review, charge, then wait and timeout (enabled
     * together, by id). */
    ck_assert_str_eq(r->work_items[0]->transition_id, "review");
    ck_assert_str_eq(r->work_items[1]->transition_id, "charge");
    for (size_t i = 1; i < r->n_work_items; i++) {
        int64_t p = us_of(r->work_items[i - 1]->enabled_at),
                q = us_of(r->work_items[i]->enabled_at);
        ck_assert(p < q || (p == q && strcmp(r->work_items[i - 1]->id, r->work_items[i]->id) < 0));
    }
    rv = item_of(r, "review");
    ck_assert_str_eq(rv->id, review_id);
    ck_assert_int_eq(rv->state, WI_FINISHED);
    ck_assert_str_eq(rv->finished_by, alice);
    ck_assert_ptr_nonnull(rv->finished_at);
    ck_assert(us_of(rv->finished_at) >= us_of(rv->enabled_at));
    ck_assert_ptr_null(rv->cancelled_at);
    Workflow__V1__WorkItem *ch = item_of(r, "charge");
    ck_assert_int_eq(ch->state, WI_FINISHED);
    ck_assert_int_eq(ch->trigger, T_AUTO);
    ck_assert_str_eq(ch->job_type, type);
    ck_assert_str_eq(ch->finished_by, "w1");
    ck_assert_ptr_null(ch->deadline);
    ck_assert_int_eq(ch->assignee_kind, 0);
    Workflow__V1__WorkItem *to = item_of(r, "timeout");
    ck_assert_int_eq(to->state, WI_FINISHED);
    ck_assert_int_eq(to->trigger, T_TIME);
    ck_assert_str_eq(to->finished_by, "");
    ck_assert_int_eq(us_of(to->deadline), due);
    ck_assert_ptr_nonnull(to->finished_at);
    wait = item_of(r, "wait");
    ck_assert_int_eq(wait->state, WI_CANCELLED);
    ck_assert_int_eq(wait->trigger, T_MSG);
    ck_assert_ptr_null(wait->finished_at);
    ck_assert_int_eq(us_of(wait->cancelled_at), us_of(to->finished_at));
    ck_assert_str_eq(wait->finished_by, "");
    ck_assert_int_eq(us_of(wait->deadline), due);

    /* By state. */
    Workflow__V1__WorkItemState fin[] = {WI_FINISHED};
    r = list_items_c(as(NULL), in->id, fin, 1, 0, NULL, &st);
    ck_ok(st);
    ck_assert_uint_eq(r->n_work_items, 3);
    Workflow__V1__WorkItemState can[] = {WI_CANCELLED, WI_ENABLED};
    r = list_items_c(as(NULL), in->id, can, 2, 0, NULL, &st);
    ck_ok(st);
    ck_assert_uint_eq(r->n_work_items, 1);
    ck_assert_str_eq(r->work_items[0]->transition_id, "wait");

    /* Pages of one, bound to their filters. */
    const char *token = NULL;
    Workflow__V1__ListWorkItemsResponse *all = list_items(in->id);
    for (size_t i = 0; i < 4; i++) {
        r = list_items_c(as(NULL), in->id, NULL, 0, 1, token, &st);
        ck_ok(st);
        ck_assert_uint_eq(r->n_work_items, 1);
        ck_assert_str_eq(r->work_items[0]->id, all->work_items[i]->id);
        if (i < 3)
            ck_assert_str_ne(r->next_page_token, "");
        else
            ck_assert_str_eq(r->next_page_token, "");
        if (i == 1) {
            /* The token of this page, with other filters: refused. */
            ck_assert_ptr_null(list_items_c(as(NULL), in->id, fin, 1, 1, r->next_page_token, &st));
            ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
        }
        token = wf_arena_strdup(ta, r->next_page_token);
    }
    ck_assert_ptr_null(list_items_c(as(NULL), in->id, NULL, 0, 1, "garbage", &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_ptr_null(list_items_c(as(NULL), in->id, NULL, 0, -1, NULL, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    Workflow__V1__WorkItemState bad[] = {(Workflow__V1__WorkItemState)7};
    ck_assert_ptr_null(list_items_c(as(NULL), in->id, bad, 1, 0, NULL, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
}
END_TEST

WF_TEST(test_history_errors_cancel_and_ad_hoc)
{
    wf_client_status st;
    /* Unknown, malformed, missing, and another tenant's instance. */
    ck_assert_ptr_null(
        list_items_c(as(NULL), "0190a0a0-0000-7000-8000-000000000000", NULL, 0, 0, NULL, &st));
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "INSTANCE_NOT_FOUND");
    ck_assert_ptr_null(list_items_c(as(NULL), "nope", NULL, 0, 0, NULL, &st));
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "INSTANCE_NOT_FOUND");
    ck_assert_ptr_null(list_items_c(as(NULL), "", NULL, 0, 0, NULL, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    char *key = u("history-cancel");
    char *alice = u("alice");
    ck_assert(deploy(history_net(key, u("charge"), alice))->created);
    Workflow__V1__Instance *in = start_v(as("boss"), key, 0, NULL, &st);
    ck_ok(st);
    ck_assert_ptr_null(list_items_c(as_tenant(u("tenant"), NULL), in->id, NULL, 0, 0, NULL, &st));
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "INSTANCE_NOT_FOUND");

    /* A plain cancel: the open review reads CANCELLED at the instance's
     * end. */
    Workflow__V1__CancelInstanceRequest creq = WORKFLOW__V1__CANCEL_INSTANCE_REQUEST__INIT;
    creq.instance_id = in->id;
    creq.reason = "no longer needed";
    Workflow__V1__CancelInstanceResponse *c =
        call(as("ops"), "CancelInstance", &creq,
             &workflow__v1__cancel_instance_response__descriptor, &st);
    ck_ok(st);
    Workflow__V1__ListWorkItemsResponse *r = list_items(in->id);
    ck_assert_uint_eq(r->n_work_items, 1);
    ck_assert_int_eq(r->work_items[0]->state, WI_CANCELLED);
    ck_assert_int_eq(us_of(r->work_items[0]->cancelled_at), us_of(c->instance->ended_at));
    Workflow__V1__WorkItemState open[] = {WI_ENABLED};
    r = list_items_c(as(NULL), in->id, open, 1, 0, NULL, &st);
    ck_ok(st);
    ck_assert_uint_eq(r->n_work_items, 0);

    /* An AD_HOC instance has referral tasks, no work items. */
    Workflow__V1__Instance *adhoc = start_v(as("boss"), u("adhoc"), 0, NULL, &st);
    ck_ok(st);
    ck_assert_uint_eq(list_items(adhoc->id)->n_work_items, 0);
}
END_TEST

/* s -> reserve (job, compensated by release) -> a -> charge (job, one
 * attempt) -> e: charge fails, the saga compensates reserve. */
WF_TEST(test_history_of_a_saga)
{
    char *key = u("history-saga");
    char *reserve = u("reserve"), *charge = u("charge"), *release = u("release");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "a", NORMAL);
    place(n, "e", END);
    Workflow__V1__Transition *t = trans(n, "reserve", T_AUTO);
    with_job(t, reserve, 1, 0);
    t->compensation_job_type = release;
    with_job(trans(n, "charge", T_AUTO), charge, 1, 0);
    arc(n, "s", "reserve");
    arc(n, "reserve", "a");
    arc(n, "a", "charge");
    arc(n, "charge", "e");
    ck_assert(deploy(n)->created);
    wf_client_status st;
    Workflow__V1__Instance *in = start_v(as("boss"), key, 0, NULL, &st);
    ck_ok(st);
    Workflow__V1__ActivateJobsResponse *a = activate(reserve, 1, 0, 0);
    ck_assert_int_eq(complete_job_c(as("w1"), a->jobs[0]->key, NULL, &st), 0);
    a = activate(charge, 1, 0, 0);
    ck_assert_int_eq(fail_job(a->jobs[0]->key, "card declined", 0, -1, &st), 0);
    /* Compensating: reserve is done (kept for the saga), charge withdrawn. */
    Workflow__V1__ListWorkItemsResponse *r = list_items(in->id);
    ck_assert_uint_eq(r->n_work_items, 2);
    Workflow__V1__WorkItem *rs = item_of(r, "reserve");
    ck_assert_int_eq(rs->state, WI_FINISHED);
    ck_assert_str_eq(rs->finished_by, "w1");
    int64_t done = us_of(rs->finished_at);
    ck_assert(done > 0);
    Workflow__V1__WorkItem *ch = item_of(r, "charge");
    ck_assert_int_eq(ch->state, WI_CANCELLED);
    ck_assert_ptr_nonnull(ch->cancelled_at);
    ck_assert_str_eq(ch->finished_by, "");
    /* The compensation completes: the compensated step stays FINISHED,
     * with the time it fired; the compensation job is no work item. */
    a = activate(release, 1, 0, 0);
    ck_assert_uint_eq(a->n_jobs, 1);
    ck_assert_int_eq(complete_job_c(as("w1"), a->jobs[0]->key, NULL, &st), 0);
    ck_assert_int_eq(get_instance(in->id)->instance->status,
                     WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_COMPENSATED);
    r = list_items(in->id);
    ck_assert_uint_eq(r->n_work_items, 2);
    rs = item_of(r, "reserve");
    ck_assert_int_eq(rs->state, WI_FINISHED);
    ck_assert_int_eq(us_of(rs->finished_at), done);
    ck_assert_str_eq(rs->finished_by, "w1");
    ck_assert_int_eq(item_of(r, "charge")->state, WI_CANCELLED);
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite("e2e_workitems", wf_test_store_name(), setup, teardown, 60));
}
