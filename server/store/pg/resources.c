/*
 * pg/resources.c: the resources of each tenant in the Postgres store
 * (store.h, "resources"; the table in migrations/0024_resources.sql).
 * Each call is one statement on a pooled connection. Internal to
 * server/store.
 */
#include "pg/pg_int.h"

#include <stdint.h>
#include <stdlib.h>

#define VERSION_FIELD 10 /* wf_resource_row.version in wf_store__resource_desc */

wf_code
wf_store_pg__get_resource(wf_store *st, const wf_store_ctx *ctx, const char *name,
                          wf_resource_row *out, bool *found, wf_error *err)
{
    params p = wf_store_pg__p_tenant(ctx, name);
    wf_resource_row *rows = NULL;
    size_t n = 0;
    wf_code rc = wf_store_pg__query((pg_store *)st, ctx, S_GET_RESOURCE, &p,
                                    &wf_store__resource_desc, &rows, &n, err);
    if (rc == WF_OK) {
        *found = n > 0;
        if (n > 0)
            *out = rows[0];
    }
    return rc;
}

/* The versioned update: *found false for a missing row, WF_E_CONFLICT for
 * another version. */
static wf_code
resource_update(const wf_store_ctx *ctx, wf_store_pg_conn *c, const wf_resource_row *in,
                bool *found, wf_error *err)
{
    params p = {.a = ctx->arena};
    wf_store_pg__p_row(&p, &wf_store__resource_desc, in, ctx->tenant, -1);
    if (p.oom)
        return wf_error_nomem(err);
    PGresult *res = NULL;
    wf_code rc = wf_store_pg__run(c, S_UPDATE_RESOURCE, &p, ctx->deadline_ms, &res, err);
    bool updated = false;
    *found = false;
    if (rc == WF_OK && PQntuples(res) == 1) {
        updated = strtol(PQgetvalue(res, 0, 0), NULL, 10) > 0;
        *found = strtol(PQgetvalue(res, 0, 1), NULL, 10) > 0;
    }
    PQclear(res);
    if (rc == WF_OK && *found && !updated)
        return wf_error_set(err, WF_E_CONFLICT, "resource \"%.128s\" was changed concurrently",
                            in->name);
    return rc;
}

static wf_code
resource_insert(const wf_store_ctx *ctx, wf_store_pg_conn *c, const wf_resource_row *in,
                wf_error *err)
{
    params p = {.a = ctx->arena};
    wf_store_pg__p_row(&p, &wf_store__resource_desc, in, ctx->tenant, VERSION_FIELD);
    if (p.oom)
        return wf_error_nomem(err);
    return wf_store_pg__run_cmd(c, S_PUT_RESOURCE, &p, ctx->deadline_ms, NULL, err);
}

wf_code
wf_store_pg__save_resource(wf_store *st, const wf_store_ctx *ctx, const wf_resource_row *in,
                           bool *found, wf_error *err)
{
    pg_store *s = (pg_store *)st;
    wf_store_pg_conn *c = NULL;
    wf_code rc = wf_store_pg__conn_get(s, ctx, &c, err);
    if (rc != WF_OK)
        return rc;
    *found = true;
    if (in->version == 0)
        rc = resource_insert(ctx, c, in, err);
    else
        rc = resource_update(ctx, c, in, found, err);
    wf_store_pg__conn_put(s, c);
    return rc;
}

wf_code
wf_store_pg__delete_resource(wf_store *st, const wf_store_ctx *ctx, const char *name, bool *found,
                             wf_error *err)
{
    return wf_store_pg__delete_keyed((pg_store *)st, ctx, S_DELETE_RESOURCE, name, found, err);
}

wf_code
wf_store_pg__list_resources(wf_store *st, const wf_store_ctx *ctx, size_t limit, bool has,
                            int64_t c_num, const char *c_str, wf_resource_row **rows, size_t *n,
                            wf_error *err)
{
    return wf_store_pg__query_page((pg_store *)st, ctx, S_LIST_RESOURCES, &wf_store__resource_desc,
                                   limit, has, c_num, c_str, rows, n, err);
}
