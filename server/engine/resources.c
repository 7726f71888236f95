/*
 * resources.c: the resources of a tenant (resources.h). The checks, and
 * the versioned write of DeclareResource and UpdateResource with its
 * request record.
 */
#include "resources.h"

#include <string.h>

#define SAVE_TRIES 3

static wf_store_ctx
store_ctx(const wf_ref_ctx *ctx)
{
    return (wf_store_ctx){ctx->tenant, ctx->deadline_ms, ctx->arena};
}

/* ---- checks -------------------------------------------------------------- */

static bool
name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}

static wf_code
check_name(const wf_ref_ctx *ctx, const char *name, wf_error *err)
{
    if (name == NULL || name[0] == '\0')
        return wf_work_invalid(ctx, "name", "is required", err);
    size_t n = strlen(name);
    if (n > WF_RESOURCE_NAME_MAX)
        return wf_work_invalid(ctx, "name", "is longer than 128 bytes", err);
    for (size_t i = 0; i < n; i++)
        if (!name_char(name[i]))
            return wf_work_invalid(ctx, "name", "may hold only letters, digits, '.', '_' and '-'",
                                   err);
    return WF_OK;
}

static wf_code
check_rate(const wf_ref_ctx *ctx, const wf_resource_in *in, wf_error *err)
{
    if (in->rate_limit == 0 && in->rate_period_ms == 0)
        return WF_OK;
    if (in->rate_limit < 1)
        return wf_work_invalid(ctx, "rate.limit", "must be at least 1 when a rate is set", err);
    if (in->rate_period_ms < 1 || in->rate_period_ms > WF_RESOURCE_PERIOD_MAX_MS)
        return wf_work_invalid(ctx, "rate.period", "must be between 1 ms and 1 day", err);
    return WF_OK;
}

static wf_code
check_in(const wf_ref_ctx *ctx, const wf_resource_in *in, wf_error *err)
{
    wf_code rc = check_name(ctx, in->name, err);
    if (rc == WF_OK && in->capacity < 0)
        rc = wf_work_invalid(ctx, "capacity", "must not be negative", err);
    if (rc == WF_OK)
        rc = check_rate(ctx, in, err);
    if (rc == WF_OK && in->capacity == 0 && in->rate_limit == 0)
        rc = wf_work_invalid(ctx, "capacity", "is required when no rate is set", err);
    if (rc == WF_OK && (in->strategy < 0 || in->strategy > WF_RESOURCE_CANCEL_NEWEST))
        rc = wf_work_invalid(ctx, "strategy", "is not a known strategy", err);
    return rc;
}

/* ---- DeclareResource, UpdateResource ------------------------------------- */

/* Sets the settings of in on row; false when they were already so. */
static bool
settle(wf_resource_row *row, const wf_resource_in *in)
{
    wf_resource_row want = *row;
    want.capacity = in->capacity;
    want.per_key = in->per_key ? 1 : 0;
    want.rate_limit = in->rate_limit;
    want.rate_period_ms = in->rate_period_ms;
    want.strategy = in->strategy == 0 ? WF_RESOURCE_QUEUE : in->strategy;
    bool changed = want.capacity != row->capacity || want.per_key != row->per_key ||
                   want.rate_limit != row->rate_limit ||
                   want.rate_period_ms != row->rate_period_ms || want.strategy != row->strategy;
    *row = want;
    return changed;
}

/* One try: read, then insert, replace or leave the row. */
static wf_code
save_once(const wf_ref_ctx *ctx, const wf_resource_in *in, bool must_exist, int64_t now,
          wf_resource_view *v, wf_error *err)
{
    wf_store_ctx sc = store_ctx(ctx);
    memset(v, 0, sizeof *v);
    wf_code rc = wf_store_get_resource(ctx->store, &sc, in->name, &v->row, err);
    v->created = rc == WF_E_RESOURCE_NOT_FOUND;
    if (rc == WF_E_RESOURCE_NOT_FOUND && !must_exist) {
        wf_error_clear(err);
        v->row = (wf_resource_row){.name = (char *)in->name,
                                   .tenant = (char *)ctx->tenant,
                                   .created_by = (char *)ctx->actor,
                                   .created_at = now};
        rc = WF_OK;
    }
    if (rc != WF_OK || (!settle(&v->row, in) && !v->created))
        return rc;
    v->row.updated_at = now;
    rc = wf_store_save_resource(ctx->store, &sc, &v->row, err);
    if (rc == WF_OK)
        v->row.version++;
    return rc;
}

static wf_code
save(const wf_ref_ctx *ctx, const wf_resource_in *in, bool must_exist, int64_t now,
     wf_uow_idem *idem, wf_resource_view *out, wf_error *err)
{
    wf_code rc = check_in(ctx, in, err);
    wf_store_ctx sc = store_ctx(ctx);
    if (rc == WF_OK)
        rc = wf_uow_idem_lookup(ctx->store, &sc, idem, err);
    if (rc != WF_OK || wf_uow_idem_replayed(idem))
        return rc;
    wf_resource_view v;
    for (int attempt = 0;; attempt++) {
        rc = save_once(ctx, in, must_exist, now, &v, err);
        if (rc != WF_E_CONFLICT || attempt + 1 == SAVE_TRIES)
            break;
        wf_error_clear(err);
    }
    if (rc == WF_OK)
        rc = wf_uow_idem_record(ctx->store, &sc, idem, &v, err);
    if (rc == WF_OK)
        *out = v;
    return rc;
}

wf_code
wf_resources_declare(const wf_ref_ctx *ctx, const wf_resource_in *in, int64_t now,
                     wf_uow_idem *idem, wf_resource_view *out, wf_error *err)
{
    return save(ctx, in, false, now, idem, out, err);
}

wf_code
wf_resources_update(const wf_ref_ctx *ctx, const wf_resource_in *in, int64_t now, wf_uow_idem *idem,
                    wf_resource_view *out, wf_error *err)
{
    return save(ctx, in, true, now, idem, out, err);
}

/* ---- GetResource, ListResources, DeleteResource ---------------------------- */

wf_code
wf_resources_get(const wf_ref_ctx *ctx, const char *name, wf_resource_row *out, wf_error *err)
{
    wf_code rc = check_name(ctx, name, err);
    wf_store_ctx sc = store_ctx(ctx);
    return rc == WF_OK ? wf_store_get_resource(ctx->store, &sc, name, out, err) : rc;
}

wf_code
wf_resources_list(const wf_ref_ctx *ctx, int32_t page_size, const char *cursor,
                  wf_resource_row **rows, size_t *n, char **next_cursor, wf_error *err)
{
    if (page_size < 0)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "page_size must not be negative");
    wf_store_ctx sc = store_ctx(ctx);
    size_t page = page_size == 0 ? 50 : page_size > 500 ? 500 : (size_t)page_size;
    return wf_store_list_resources(ctx->store, &sc, page,
                                   cursor == NULL || cursor[0] == '\0' ? NULL : cursor, rows, n,
                                   next_cursor, err);
}

wf_code
wf_resources_delete(const wf_ref_ctx *ctx, const char *name, wf_uow_idem *idem, wf_error *err)
{
    wf_code rc = check_name(ctx, name, err);
    wf_store_ctx sc = store_ctx(ctx);
    if (rc == WF_OK)
        rc = wf_uow_idem_lookup(ctx->store, &sc, idem, err);
    if (rc != WF_OK || wf_uow_idem_replayed(idem))
        return rc;
    rc = wf_store_delete_resource(ctx->store, &sc, name, err);
    wf_resource_view none = {0};
    return rc == WF_OK ? wf_uow_idem_record(ctx->store, &sc, idem, &none, err) : rc;
}
