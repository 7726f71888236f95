/*
 * h_referral: AssignTo, GetCompletion and CompleteAndEnd.
 *
 * Translation only: AssignToRequest (with its nested on_all_completed
 * chain) becomes an engine wf_assign_spec chain; the engine validates it,
 * persists the chain in its own encoding and runs it.
 */
#include "h_common.h"
#include "handlers.h"

#define MAX_CHAIN 40 /* deeper chains are cut here; the engine refuses > 32 */

/* ---- AssignTo ------------------------------------------------------------------------ */

static wf_assign_spec *
to_spec(wf_arena *a, const Workflow__V1__AssignToRequest *r, int depth)
{
    wf_assign_spec *s = wf_arena_calloc(a, 1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->parent_id = r->parent_instance_id;
    s->definition_key = r->definition_key;
    s->title = r->title;
    s->variables_json = r->variables_json;
    s->has_priority = r->priority != NULL;
    s->priority = r->priority != NULL ? r->priority->value : 0;
    s->due_at = wf_h_time_us(r->due_at);
    s->follow_up_at = wf_h_time_us(r->follow_up_at);
    if (r->assignee != NULL) {
        s->kind = (wf_ref_assignee)r->assignee->kind;
        s->ids = (const char *const *)r->assignee->ids;
        s->n_ids = r->assignee->n_ids;
        s->ids_expression = r->assignee->ids_expression;
    }
    if (r->join != NULL) {
        s->join_mode = (wf_join_mode)r->join->mode;
        s->join_quorum = r->join->quorum;
    }
    if (r->on_all_completed != NULL && depth < MAX_CHAIN) {
        s->next = to_spec(a, r->on_all_completed, depth + 1);
        if (s->next == NULL)
            return NULL;
    }
    return s;
}

static ProtobufCMessage *
build_assign(wf_arena *a, const void *result)
{
    Workflow__V1__AssignToResponse *m = wf_h_assignment(a, result);
    return m != NULL ? &m->base : NULL;
}

static const wf_h_builder assign_builder = {build_assign,
                                            &workflow__v1__assign_to_response__descriptor};

wf_code
h_assign_to(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__AssignToRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_uow_idem idem;
    wf_ref_assignment out;
    wf_h_ref_ctx(call, &ctx);
    if (wf_ids_check(&ctx, WF_ID_INSTANCE, "parent_instance_id", req->parent_instance_id, err) !=
        WF_OK)
        return err->code;
    wf_assign_spec *spec = to_spec(call->arena, req, 0);
    if (spec == NULL)
        return wf_error_nomem(err);
    wf_code rc = wf_h_idem(call, msg, req->request_id, &assign_builder, &idem, err);
    if (rc == WF_OK)
        rc = wf_referral_assign(&ctx, spec, &idem, &out, err);
    return wf_h_respond(call, rc, &idem, &assign_builder, &out, resp, err);
}

/* ---- GetCompletion ------------------------------------------------------------------ */

wf_code
h_get_completion(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__GetCompletionRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_ref_counts c;
    wf_h_ref_ctx(call, &ctx);
    if (wf_ids_check(&ctx, WF_ID_INSTANCE, "instance_id", req->instance_id, err) != WF_OK)
        return err->code;
    wf_code rc = wf_referral_completion(&ctx, req->instance_id, &c, err);
    if (rc != WF_OK)
        return rc;
    Workflow__V1__GetCompletionResponse *m = wf_arena_alloc(call->arena, sizeof *m);
    if (m == NULL)
        return wf_error_nomem(err);
    workflow__v1__get_completion_response__init(m);
    m->all_completed = c.all_completed;
    m->total = c.total;
    m->open = c.open;
    m->claimed = c.claimed;
    m->done = c.done;
    m->cancelled = c.cancelled;
    *resp = &m->base;
    return WF_OK;
}

/* ---- CompleteAndEnd ----------------------------------------------------------------- */

static ProtobufCMessage *
build_end(wf_arena *a, const void *result)
{
    const wf_ref_end *r = result;
    Workflow__V1__CompleteAndEndResponse *m = wf_arena_alloc(a, sizeof *m);
    if (m == NULL)
        return NULL;
    workflow__v1__complete_and_end_response__init(m);
    m->root_instance = wf_h_instance(a, &r->root);
    m->task = wf_h_task(a, &r->task);
    m->n_cancelled_tasks = r->n_cancelled;
    m->cancelled_tasks = wf_h_tasks(a, r->cancelled, r->n_cancelled);
    if (m->root_instance == NULL || m->task == NULL || m->cancelled_tasks == NULL)
        return NULL;
    return &m->base;
}

static const wf_h_builder end_builder = {build_end,
                                         &workflow__v1__complete_and_end_response__descriptor};

wf_code
h_complete_and_end(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp,
                   wf_error *err)
{
    const Workflow__V1__CompleteAndEndRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_uow_idem idem;
    wf_ref_end out = {0};
    wf_h_ref_ctx(call, &ctx);
    if (wf_ids_check(&ctx, WF_ID_TASK, "task_id", req->task_id, err) != WF_OK)
        return err->code;
    wf_code rc = wf_h_idem(call, msg, req->request_id, &end_builder, &idem, err);
    if (rc == WF_OK)
        rc = wf_instances_complete_and_end(&ctx, req->task_id, req->variables_json, &idem, &out,
                                           err);
    return wf_h_respond(call, rc, &idem, &end_builder, &out, resp, err);
}
