/*
 * pg/batch.c: the batch operations of the Postgres store (store.h, "batch
 * operations"; the table in migrations/0014_batch_operations.sql). The
 * insert runs in the caller's unit of work; the rest are single
 * statements on a pooled connection. Internal to server/store.
 */
#include "pg/pg_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define VERSION_FIELD 17 /* wf_batch_row.version in wf_store__batch_desc */

wf_code
wf_store_pg__put_batch(wf_tx *t, const wf_batch_row *in, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    params p = {.a = t->ctx.arena};
    wf_store_pg__p_row(&p, &wf_store__batch_desc, in, t->ctx.tenant, VERSION_FIELD);
    if (p.oom)
        return wf_error_nomem(err);
    wf_code rc = wf_store_pg__run_cmd(tx->c, S_PUT_BATCH, &p, t->ctx.deadline_ms, NULL, err);
    if (rc == WF_E_CONFLICT)
        return wf_error_set(err, WF_E_CONFLICT, "batch operation \"%s\" already exists", in->id);
    return rc;
}

wf_code
wf_store_pg__get_batch(wf_store *st, const wf_store_ctx *ctx, const char *id, wf_batch_row *out,
                       bool *found, wf_error *err)
{
    params p = wf_store_pg__p_tenant(ctx, id);
    wf_batch_row *rows = NULL;
    size_t n = 0;
    wf_code rc = wf_store_pg__query((pg_store *)st, ctx, S_GET_BATCH, &p, &wf_store__batch_desc,
                                    &rows, &n, err);
    if (rc == WF_OK) {
        *found = n > 0;
        if (n > 0)
            *out = rows[0];
    }
    return rc;
}

wf_code
wf_store_pg__update_batch(wf_store *st, const wf_store_ctx *ctx, const wf_batch_row *in,
                          bool *found, wf_error *err)
{
    pg_store *s = (pg_store *)st;
    params p = {.a = ctx->arena};
    wf_store_pg__p_row(&p, &wf_store__batch_desc, in, ctx->tenant, -1);
    if (p.oom)
        return wf_error_nomem(err);
    wf_store_pg_conn *c = NULL;
    wf_code rc = wf_store_pg__conn_get(s, ctx, &c, err);
    if (rc != WF_OK)
        return rc;
    PGresult *res = NULL;
    rc = wf_store_pg__run(c, S_UPDATE_BATCH, &p, ctx->deadline_ms, &res, err);
    bool updated = false, exists = false;
    if (rc == WF_OK && PQntuples(res) == 1) {
        updated = strtol(PQgetvalue(res, 0, 0), NULL, 10) > 0;
        exists = strtol(PQgetvalue(res, 0, 1), NULL, 10) > 0;
    }
    PQclear(res);
    wf_store_pg__conn_put(s, c);
    if (rc != WF_OK)
        return rc;
    *found = exists;
    if (exists && !updated)
        return wf_error_set(err, WF_E_CONFLICT, "batch operation \"%s\" was changed concurrently",
                            in->id);
    return WF_OK;
}

wf_code
wf_store_pg__list_batches(wf_store *st, const wf_store_ctx *ctx, size_t limit, bool has,
                          int64_t c_num, const char *c_str, wf_batch_row **rows, size_t *n,
                          wf_error *err)
{
    return wf_store_pg__query_page((pg_store *)st, ctx, S_LIST_BATCHES, &wf_store__batch_desc,
                                   limit, has, c_num, c_str, rows, n, err);
}

wf_code
wf_store_pg__claim_batches(wf_store *st, const wf_store_ctx *ctx, const char *owner, int64_t now,
                           int64_t lease_ms, size_t limit, wf_batch_row **rows, size_t *n,
                           wf_error *err)
{
    params p = {.a = ctx->arena};
    wf_store_pg__p_i64(&p, now);
    wf_store_pg__p_i64(&p, (int64_t)limit);
    wf_store_pg__p_str(&p, owner);
    wf_store_pg__p_i64(&p, now + lease_ms * 1000);
    if (ctx->tenant != NULL)
        wf_store_pg__p_str(&p, ctx->tenant);
    return wf_store_pg__query((pg_store *)st, ctx,
                              ctx->tenant != NULL ? S_CLAIM_BATCHES_T : S_CLAIM_BATCHES, &p,
                              &wf_store__batch_desc, rows, n, err);
}
