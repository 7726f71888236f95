/*
 * h_resources: DeclareResource, GetResource, ListResources,
 * UpdateResource and DeleteResource.
 *
 * Translation only: the rules are in engine/resources.c. "Now" is the
 * app's clock (wf_app_now).
 */
#include "h_common.h"
#include "handlers.h"
#include "resources.h"

static Workflow__V1__Resource *
resource_msg(wf_arena *a, const wf_resource_row *r)
{
    bool oom = false;
    Workflow__V1__Resource *m = wf_arena_alloc(a, sizeof *m);
    if (m == NULL)
        return NULL;
    workflow__v1__resource__init(m);
    m->name = r->name != NULL ? r->name : "";
    m->capacity = r->capacity;
    m->per_key = r->per_key != 0;
    if (r->rate_limit != 0) {
        Workflow__V1__ResourceRate *rate = wf_arena_alloc(a, sizeof *rate);
        if (rate == NULL)
            return NULL;
        workflow__v1__resource_rate__init(rate);
        rate->limit = r->rate_limit;
        rate->period = wf_h_duration(a, r->rate_period_ms, &oom);
        m->rate = rate;
    }
    m->strategy = (Workflow__V1__ResourceStrategy)r->strategy;
    m->version = r->version;
    m->created_by = r->created_by != NULL ? r->created_by : "";
    m->create_time = wf_h_timestamp(a, r->created_at, &oom);
    m->update_time = wf_h_timestamp(a, r->updated_at, &oom);
    return oom ? NULL : m;
}

static wf_resource_in
resource_in(const char *name, int32_t capacity, bool per_key,
            const Workflow__V1__ResourceRate *rate, Workflow__V1__ResourceStrategy strategy)
{
    wf_resource_in in = {
        .name = name, .capacity = capacity, .per_key = per_key, .strategy = (int)strategy};
    if (rate != NULL) {
        in.rate_limit = rate->limit;
        in.rate_period_ms = wf_h_duration_ms(rate->period);
    }
    return in;
}

/* ---- DeclareResource, UpdateResource ------------------------------------- */

static ProtobufCMessage *
build_declare(wf_arena *a, const void *result)
{
    const wf_resource_view *v = result;
    Workflow__V1__DeclareResourceResponse *m = wf_arena_alloc(a, sizeof *m);
    if (m == NULL)
        return NULL;
    workflow__v1__declare_resource_response__init(m);
    m->resource = resource_msg(a, &v->row);
    m->created = v->created;
    return m->resource != NULL ? &m->base : NULL;
}

static ProtobufCMessage *
build_update(wf_arena *a, const void *result)
{
    const wf_resource_view *v = result;
    Workflow__V1__UpdateResourceResponse *m = wf_arena_alloc(a, sizeof *m);
    if (m == NULL)
        return NULL;
    workflow__v1__update_resource_response__init(m);
    m->resource = resource_msg(a, &v->row);
    return m->resource != NULL ? &m->base : NULL;
}

static const wf_h_builder declare_builder = {build_declare,
                                             &workflow__v1__declare_resource_response__descriptor};
static const wf_h_builder update_builder = {build_update,
                                            &workflow__v1__update_resource_response__descriptor};

wf_code
h_declare_resource(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp,
                   wf_error *err)
{
    const Workflow__V1__DeclareResourceRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_uow_idem idem;
    wf_resource_view out;
    wf_h_ref_ctx(call, &ctx);
    wf_resource_in in =
        resource_in(req->name, req->capacity, req->per_key, req->rate, req->strategy);
    wf_code rc = wf_h_idem(call, msg, req->request_id, &declare_builder, &idem, err);
    if (rc == WF_OK)
        rc = wf_resources_declare(&ctx, &in, wf_app_now(call->app), &idem, &out, err);
    return wf_h_respond(call, rc, &idem, &declare_builder, &out, resp, err);
}

wf_code
h_update_resource(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp,
                  wf_error *err)
{
    const Workflow__V1__UpdateResourceRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_uow_idem idem;
    wf_resource_view out;
    wf_h_ref_ctx(call, &ctx);
    wf_resource_in in =
        resource_in(req->name, req->capacity, req->per_key, req->rate, req->strategy);
    wf_code rc = wf_h_idem(call, msg, req->request_id, &update_builder, &idem, err);
    if (rc == WF_OK)
        rc = wf_resources_update(&ctx, &in, wf_app_now(call->app), &idem, &out, err);
    return wf_h_respond(call, rc, &idem, &update_builder, &out, resp, err);
}

/* ---- GetResource, ListResources, DeleteResource ---------------------------- */

wf_code
h_get_resource(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__GetResourceRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_resource_row row;
    wf_h_ref_ctx(call, &ctx);
    wf_code rc = wf_resources_get(&ctx, req->name, &row, err);
    if (rc != WF_OK)
        return rc;
    Workflow__V1__GetResourceResponse *m = wf_arena_alloc(call->arena, sizeof *m);
    if (m == NULL)
        return wf_error_nomem(err);
    workflow__v1__get_resource_response__init(m);
    m->resource = resource_msg(call->arena, &row);
    if (m->resource == NULL)
        return wf_error_nomem(err);
    *resp = &m->base;
    return WF_OK;
}

wf_code
h_list_resources(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__ListResourcesRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_resource_row *r = NULL;
    size_t n = 0;
    char *next = NULL;
    const char *cursor = NULL;
    wf_h_ref_ctx(call, &ctx);
    wf_code rc = wf_h_page_in(call, msg, req->page_token, &cursor, err);
    if (rc == WF_OK)
        rc = wf_resources_list(&ctx, req->page_size, cursor, &r, &n, &next, err);
    if (rc != WF_OK)
        return rc;
    Workflow__V1__ListResourcesResponse *m = wf_arena_alloc(call->arena, sizeof *m);
    Workflow__V1__Resource **rows = wf_arena_calloc(call->arena, n + 1, sizeof *rows);
    if (m == NULL || rows == NULL)
        return wf_error_nomem(err);
    workflow__v1__list_resources_response__init(m);
    for (size_t i = 0; i < n; i++)
        if ((rows[i] = resource_msg(call->arena, &r[i])) == NULL)
            return wf_error_nomem(err);
    m->resources = rows;
    m->n_resources = n;
    m->next_page_token = wf_h_page_out(call, msg, next);
    if (m->next_page_token == NULL)
        return wf_error_nomem(err);
    *resp = &m->base;
    return WF_OK;
}

static ProtobufCMessage *
build_delete(wf_arena *a, const void *result)
{
    (void)result;
    Workflow__V1__DeleteResourceResponse *m = wf_arena_alloc(a, sizeof *m);
    if (m == NULL)
        return NULL;
    workflow__v1__delete_resource_response__init(m);
    return &m->base;
}

static const wf_h_builder delete_builder = {build_delete,
                                            &workflow__v1__delete_resource_response__descriptor};

wf_code
h_delete_resource(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp,
                  wf_error *err)
{
    const Workflow__V1__DeleteResourceRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_uow_idem idem;
    wf_h_ref_ctx(call, &ctx);
    wf_code rc = wf_h_idem(call, msg, req->request_id, &delete_builder, &idem, err);
    if (rc == WF_OK)
        rc = wf_resources_delete(&ctx, req->name, &idem, err);
    return wf_h_respond(call, rc, &idem, &delete_builder, NULL, resp, err);
}
