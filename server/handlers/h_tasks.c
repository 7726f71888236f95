/*
 * h_tasks: ListTasks, GetTask, ClaimTask, ReleaseTask, CompleteTask,
 * ReassignTask, DelegateTask and UpdateTask.
 *
 * Translation only: who may do what to a task is decided once, in
 * engine/referral/referral_rules.c.
 */
#include "h_common.h"
#include "handlers.h"

/* ---- ListTasks ------------------------------------------------------------------------ */

wf_code
h_list_tasks(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__ListTasksRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_task_row *rows = NULL;
    size_t n = 0;
    char *next = NULL;
    wf_h_ref_ctx(call, &ctx);
    wf_task_status *states = wf_arena_calloc(call->arena, req->n_states + 1, sizeof *states);
    if (states == NULL)
        return wf_error_nomem(err);
    for (size_t i = 0; i < req->n_states; i++)
        states[i] = (wf_task_status)req->states[i];
    wf_ref_task_query q = {
        .user = req->user,
        .group = req->group,
        .states = states,
        .n_states = req->n_states,
        .page_size = req->page_size,
        /* TaskSort UNSPECIFIED and CREATED are the creation order. */
        .sort = req->sort <= WORKFLOW__V1__TASK_SORT__TASK_SORT_CREATED    ? WF_TASK_SORT_CREATED
                : req->sort == WORKFLOW__V1__TASK_SORT__TASK_SORT_PRIORITY ? WF_TASK_SORT_PRIORITY
                : req->sort == WORKFLOW__V1__TASK_SORT__TASK_SORT_DUE      ? WF_TASK_SORT_DUE
                                                                           : (wf_task_sort)-1,
        .descending = req->descending,
        .due_after = wf_h_time_us(req->due_after),
        .due_before = wf_h_time_us(req->due_before),
    };
    wf_code rc = wf_h_page_in(call, msg, req->page_token, &q.cursor, err);
    if (rc == WF_OK)
        rc = wf_referral_list_tasks(&ctx, &q, &rows, &n, &next, err);
    if (rc != WF_OK)
        return rc;
    Workflow__V1__ListTasksResponse *m = wf_arena_alloc(call->arena, sizeof *m);
    if (m == NULL)
        return wf_error_nomem(err);
    workflow__v1__list_tasks_response__init(m);
    m->n_tasks = n;
    m->tasks = wf_h_tasks(call->arena, rows, n);
    m->next_page_token = wf_h_page_out(call, msg, next);
    if (m->tasks == NULL || m->next_page_token == NULL)
        return wf_error_nomem(err);
    *resp = &m->base;
    return WF_OK;
}

/* ---- GetTask --------------------------------------------------------------------------- */

wf_code
h_get_task(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__GetTaskRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_task_row t;
    wf_h_ref_ctx(call, &ctx);
    if (wf_ids_check(&ctx, WF_ID_TASK, "task_id", req->task_id, err) != WF_OK)
        return err->code;
    wf_code rc = wf_referral_get_task(&ctx, req->task_id, &t, err);
    if (rc != WF_OK)
        return rc;
    Workflow__V1__GetTaskResponse *m = wf_arena_alloc(call->arena, sizeof *m);
    if (m == NULL)
        return wf_error_nomem(err);
    workflow__v1__get_task_response__init(m);
    m->task = wf_h_task(call->arena, &t);
    if (m->task == NULL)
        return wf_error_nomem(err);
    *resp = &m->base;
    return WF_OK;
}

/* ---- ClaimTask / ReleaseTask ---------------------------------------------------------- */

static ProtobufCMessage *
build_claim(wf_arena *a, const void *result)
{
    Workflow__V1__ClaimTaskResponse *m = wf_arena_alloc(a, sizeof *m);
    if (m == NULL)
        return NULL;
    workflow__v1__claim_task_response__init(m);
    m->task = wf_h_task(a, result);
    return m->task != NULL ? &m->base : NULL;
}

static ProtobufCMessage *
build_release(wf_arena *a, const void *result)
{
    Workflow__V1__ReleaseTaskResponse *m = wf_arena_alloc(a, sizeof *m);
    if (m == NULL)
        return NULL;
    workflow__v1__release_task_response__init(m);
    m->task = wf_h_task(a, result);
    return m->task != NULL ? &m->base : NULL;
}

static const wf_h_builder claim_builder = {build_claim,
                                           &workflow__v1__claim_task_response__descriptor};
static const wf_h_builder release_builder = {build_release,
                                             &workflow__v1__release_task_response__descriptor};

wf_code
h_claim_task(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__ClaimTaskRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_uow_idem idem;
    wf_task_row out;
    wf_h_ref_ctx(call, &ctx);
    if (wf_ids_check(&ctx, WF_ID_TASK, "task_id", req->task_id, err) != WF_OK)
        return err->code;
    wf_code rc = wf_h_idem(call, msg, req->request_id, &claim_builder, &idem, err);
    if (rc == WF_OK)
        rc = wf_referral_claim(&ctx, req->task_id, &idem, &out, err);
    return wf_h_respond(call, rc, &idem, &claim_builder, &out, resp, err);
}

wf_code
h_release_task(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__ReleaseTaskRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_uow_idem idem;
    wf_task_row out;
    wf_h_ref_ctx(call, &ctx);
    if (wf_ids_check(&ctx, WF_ID_TASK, "task_id", req->task_id, err) != WF_OK)
        return err->code;
    wf_code rc = wf_h_idem(call, msg, req->request_id, &release_builder, &idem, err);
    if (rc == WF_OK)
        rc = wf_referral_release(&ctx, req->task_id, &idem, &out, err);
    return wf_h_respond(call, rc, &idem, &release_builder, &out, resp, err);
}

/* ---- CompleteTask ---------------------------------------------------------------------- */

static ProtobufCMessage *
build_complete(wf_arena *a, const void *result)
{
    const wf_ref_completion *r = result;
    Workflow__V1__CompleteTaskResponse *m = wf_arena_alloc(a, sizeof *m);
    Workflow__V1__CompletionCounts *c = wf_arena_alloc(a, sizeof *c);
    if (m == NULL || c == NULL)
        return NULL;
    workflow__v1__complete_task_response__init(m);
    workflow__v1__completion_counts__init(c);
    c->all_completed = r->counts.all_completed;
    c->total = r->counts.total;
    c->open = r->counts.open;
    c->claimed = r->counts.claimed;
    c->done = r->counts.done;
    c->cancelled = r->counts.cancelled;
    m->completion = c;
    m->task = wf_h_task(a, &r->task);
    if (m->task == NULL)
        return NULL;
    if (r->next != NULL && (m->next = wf_h_assignment(a, r->next)) == NULL)
        return NULL;
    return &m->base;
}

static const wf_h_builder complete_builder = {build_complete,
                                              &workflow__v1__complete_task_response__descriptor};

wf_code
h_complete_task(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__CompleteTaskRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_uow_idem idem;
    wf_ref_completion out = {0};
    wf_h_ref_ctx(call, &ctx);
    if (wf_ids_check(&ctx, WF_ID_TASK, "task_id", req->task_id, err) != WF_OK)
        return err->code;
    wf_code rc = wf_h_idem(call, msg, req->request_id, &complete_builder, &idem, err);
    if (rc == WF_OK)
        rc = wf_instances_complete_task(&ctx, req->task_id, req->variables_json, &idem, &out, err);
    return wf_h_respond(call, rc, &idem, &complete_builder, &out, resp, err);
}

/* ---- ReassignTask / DelegateTask / UpdateTask ------------------------------------------ */

#define TASK_BUILDER(fn, T, init)                                                                  \
    static ProtobufCMessage *fn(wf_arena *a, const void *result)                                   \
    {                                                                                              \
        T *m = wf_arena_alloc(a, sizeof *m);                                                       \
        if (m == NULL)                                                                             \
            return NULL;                                                                           \
        init(m);                                                                                   \
        m->task = wf_h_task(a, result);                                                            \
        return m->task != NULL ? &m->base : NULL;                                                  \
    }

TASK_BUILDER(build_reassign, Workflow__V1__ReassignTaskResponse,
             workflow__v1__reassign_task_response__init)
TASK_BUILDER(build_delegate, Workflow__V1__DelegateTaskResponse,
             workflow__v1__delegate_task_response__init)
TASK_BUILDER(build_update, Workflow__V1__UpdateTaskResponse,
             workflow__v1__update_task_response__init)

static const wf_h_builder reassign_builder = {build_reassign,
                                              &workflow__v1__reassign_task_response__descriptor};
static const wf_h_builder delegate_builder = {build_delegate,
                                              &workflow__v1__delegate_task_response__descriptor};
static const wf_h_builder update_builder = {build_update,
                                            &workflow__v1__update_task_response__descriptor};

wf_code
h_reassign_task(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__ReassignTaskRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_uow_idem idem;
    wf_task_row out;
    wf_h_ref_ctx(call, &ctx);
    if (wf_ids_check(&ctx, WF_ID_TASK, "task_id", req->task_id, err) != WF_OK)
        return err->code;
    wf_task_reassign r = {.user = req->user, .group = req->group, .reason = req->reason};
    wf_code rc = wf_h_idem(call, msg, req->request_id, &reassign_builder, &idem, err);
    if (rc == WF_OK)
        rc = wf_referral_reassign(&ctx, req->task_id, &r, &idem, &out, err);
    return wf_h_respond(call, rc, &idem, &reassign_builder, &out, resp, err);
}

wf_code
h_delegate_task(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__DelegateTaskRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_uow_idem idem;
    wf_task_row out;
    wf_h_ref_ctx(call, &ctx);
    if (wf_ids_check(&ctx, WF_ID_TASK, "task_id", req->task_id, err) != WF_OK)
        return err->code;
    wf_code rc = wf_h_idem(call, msg, req->request_id, &delegate_builder, &idem, err);
    if (rc == WF_OK)
        rc = wf_referral_delegate(&ctx, req->task_id, req->user, &idem, &out, err);
    return wf_h_respond(call, rc, &idem, &delegate_builder, &out, resp, err);
}

wf_code
h_update_task(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__UpdateTaskRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_uow_idem idem;
    wf_task_row out;
    wf_h_ref_ctx(call, &ctx);
    if (wf_ids_check(&ctx, WF_ID_TASK, "task_id", req->task_id, err) != WF_OK)
        return err->code;
    if ((req->due_at != NULL && req->clear_due_at) ||
        (req->follow_up_at != NULL && req->clear_follow_up_at))
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "a time cannot be both set and cleared");
    wf_task_update u = {
        .set_priority = req->priority != NULL,
        .priority = req->priority != NULL ? req->priority->value : 0,
        .set_due = req->due_at != NULL || req->clear_due_at,
        .due_at = wf_h_time_us(req->due_at),
        .set_follow_up = req->follow_up_at != NULL || req->clear_follow_up_at,
        .follow_up_at = wf_h_time_us(req->follow_up_at),
    };
    wf_code rc = wf_h_idem(call, msg, req->request_id, &update_builder, &idem, err);
    if (rc == WF_OK)
        rc = wf_referral_update_task(&ctx, req->task_id, &u, &idem, &out, err);
    return wf_h_respond(call, rc, &idem, &update_builder, &out, resp, err);
}
