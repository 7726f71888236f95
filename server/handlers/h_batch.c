/*
 * h_batch: StartBatchOperation, GetBatchOperation, CancelBatchOperation
 * and ListBatchOperations.
 *
 * Translation only: the rules and the chunks that carry an operation out
 * are in engine/batch.c; the filter is translated by the same function
 * as ListInstances' (wf_h_instance_query).
 */
#include "batch.h"
#include "h_common.h"
#include "handlers.h"

static Workflow__V1__BatchOperation *
batch_msg(wf_arena *a, const wf_batch_view *v)
{
    bool oom = false;
    Workflow__V1__BatchOperation *m = wf_arena_alloc(a, sizeof *m);
    Workflow__V1__BatchOperationError **errs = wf_arena_calloc(a, v->n_errors + 1, sizeof *errs);
    if (m == NULL || errs == NULL)
        return NULL;
    workflow__v1__batch_operation__init(m);
    const wf_batch_row *r = &v->row;
    m->id = r->id;
    m->action = (Workflow__V1__BatchAction)r->action;
    m->state = (Workflow__V1__BatchOperationState)r->state;
    m->filter = wf_h_instance_filter(a, &v->filter);
    m->reason = r->reason != NULL ? r->reason : "";
    m->created_by = r->created_by != NULL ? r->created_by : "";
    m->total = r->total;
    m->done = r->done;
    m->failed = r->failed;
    for (size_t i = 0; i < v->n_errors; i++) {
        Workflow__V1__BatchOperationError *e = wf_arena_alloc(a, sizeof *e);
        if (e == NULL)
            return NULL;
        workflow__v1__batch_operation_error__init(e);
        e->instance_id = v->errors[i].instance_id != NULL ? (char *)v->errors[i].instance_id : "";
        e->reason = v->errors[i].reason != NULL ? (char *)v->errors[i].reason : "";
        e->message = v->errors[i].message != NULL ? (char *)v->errors[i].message : "";
        errs[i] = e;
    }
    m->errors = errs;
    m->n_errors = v->n_errors;
    m->created_at = wf_h_timestamp(a, r->created_at, &oom);
    m->updated_at = wf_h_timestamp(a, r->updated_at, &oom);
    m->ended_at = wf_h_timestamp(a, r->ended_at, &oom);
    m->target_version = v->target_version;
    m->place_mapping = wf_h_place_mapping_msgs(a, v->mapping, v->n_mapping, &oom);
    m->n_place_mapping = v->n_mapping;
    return oom || m->filter == NULL ? NULL : m;
}

/* ---- StartBatchOperation ------------------------------------------------------- */

static ProtobufCMessage *
build_start(wf_arena *a, const void *result)
{
    Workflow__V1__StartBatchOperationResponse *m = wf_arena_alloc(a, sizeof *m);
    if (m == NULL)
        return NULL;
    workflow__v1__start_batch_operation_response__init(m);
    m->batch_operation = batch_msg(a, result);
    return m->batch_operation != NULL ? &m->base : NULL;
}

static const wf_h_builder start_builder = {
    build_start, &workflow__v1__start_batch_operation_response__descriptor};

wf_code
h_start_batch_operation(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp,
                        wf_error *err)
{
    const Workflow__V1__StartBatchOperationRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_uow_idem idem;
    wf_batch_view out;
    wf_h_ref_ctx(call, &ctx);
    static const Workflow__V1__InstanceFilter none = WORKFLOW__V1__INSTANCE_FILTER__INIT;
    wf_batch_spec spec = {.action = (int)req->action,
                          .reason = req->reason,
                          .target_version = req->target_version,
                          .n_mapping = req->n_place_mapping,
                          .dry_run = req->dry_run};
    spec.mapping = wf_h_place_mapping(call->arena, req->place_mapping, req->n_place_mapping);
    wf_code rc = spec.mapping != NULL ? WF_OK : wf_error_nomem(err);
    if (rc == WF_OK)
        rc = wf_h_instance_query(call->arena, req->filter != NULL ? req->filter : &none,
                                 &spec.filter, err);
    if (rc == WF_OK)
        rc =
            wf_h_idem(call, msg, req->dry_run ? NULL : req->request_id, &start_builder, &idem, err);
    if (rc == WF_OK)
        rc = wf_batch_start(&ctx, &spec, &idem, &out, err);
    return wf_h_respond(call, rc, &idem, &start_builder, &out, resp, err);
}

/* ---- GetBatchOperation --------------------------------------------------------- */

wf_code
h_get_batch_operation(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp,
                      wf_error *err)
{
    const Workflow__V1__GetBatchOperationRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_batch_view v;
    wf_h_ref_ctx(call, &ctx);
    wf_code rc = wf_batch_get(&ctx, req->id, &v, err);
    if (rc != WF_OK)
        return rc;
    Workflow__V1__GetBatchOperationResponse *m = wf_arena_alloc(call->arena, sizeof *m);
    if (m == NULL)
        return wf_error_nomem(err);
    workflow__v1__get_batch_operation_response__init(m);
    m->batch_operation = batch_msg(call->arena, &v);
    if (m->batch_operation == NULL)
        return wf_error_nomem(err);
    *resp = &m->base;
    return WF_OK;
}

/* ---- CancelBatchOperation ------------------------------------------------------ */

static ProtobufCMessage *
build_cancel(wf_arena *a, const void *result)
{
    Workflow__V1__CancelBatchOperationResponse *m = wf_arena_alloc(a, sizeof *m);
    if (m == NULL)
        return NULL;
    workflow__v1__cancel_batch_operation_response__init(m);
    m->batch_operation = batch_msg(a, result);
    return m->batch_operation != NULL ? &m->base : NULL;
}

static const wf_h_builder cancel_builder = {
    build_cancel, &workflow__v1__cancel_batch_operation_response__descriptor};

wf_code
h_cancel_batch_operation(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp,
                         wf_error *err)
{
    const Workflow__V1__CancelBatchOperationRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_uow_idem idem;
    wf_batch_view out;
    wf_h_ref_ctx(call, &ctx);
    wf_code rc = wf_h_idem(call, msg, req->request_id, &cancel_builder, &idem, err);
    if (rc == WF_OK)
        rc = wf_batch_cancel(&ctx, req->id, &idem, &out, err);
    return wf_h_respond(call, rc, &idem, &cancel_builder, &out, resp, err);
}

/* ---- ListBatchOperations ------------------------------------------------------- */

wf_code
h_list_batch_operations(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp,
                        wf_error *err)
{
    const Workflow__V1__ListBatchOperationsRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_batch_view *v = NULL;
    size_t n = 0;
    char *next = NULL;
    const char *cursor = NULL;
    wf_h_ref_ctx(call, &ctx);
    wf_code rc = wf_h_page_in(call, msg, req->page_token, &cursor, err);
    if (rc == WF_OK)
        rc = wf_batch_list(&ctx, req->page_size, cursor, &v, &n, &next, err);
    if (rc != WF_OK)
        return rc;
    Workflow__V1__ListBatchOperationsResponse *m = wf_arena_alloc(call->arena, sizeof *m);
    Workflow__V1__BatchOperation **ops = wf_arena_calloc(call->arena, n + 1, sizeof *ops);
    if (m == NULL || ops == NULL)
        return wf_error_nomem(err);
    workflow__v1__list_batch_operations_response__init(m);
    for (size_t i = 0; i < n; i++)
        if ((ops[i] = batch_msg(call->arena, &v[i])) == NULL)
            return wf_error_nomem(err);
    m->batch_operations = ops;
    m->n_batch_operations = n;
    m->next_page_token = wf_h_page_out(call, msg, next);
    if (m->next_page_token == NULL)
        return wf_error_nomem(err);
    *resp = &m->base;
    return WF_OK;
}
