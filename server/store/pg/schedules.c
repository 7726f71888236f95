/*
 * pg/schedules.c: the schedules and their runs in the Postgres store
 * (store.h, "schedules"; the tables in migrations/0017_schedules.sql).
 * The inserts run in the caller's unit of work; the rest are single
 * statements on a pooled connection. Internal to server/store.
 */
#include "pg/pg_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define VERSION_FIELD 23 /* wf_schedule_row.version in wf_store__schedule_desc */

wf_code
wf_store_pg__put_schedule(wf_tx *t, const wf_schedule_row *in, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    params p = {.a = t->ctx.arena};
    wf_store_pg__p_row(&p, &wf_store__schedule_desc, in, t->ctx.tenant, VERSION_FIELD);
    if (p.oom)
        return wf_error_nomem(err);
    wf_code rc = wf_store_pg__run_cmd(tx->c, S_PUT_SCHEDULE, &p, t->ctx.deadline_ms, NULL, err);
    if (rc == WF_E_CONFLICT)
        return wf_error_set(err, WF_E_SCHEDULE_ALREADY_EXISTS, "schedule \"%.128s\" already exists",
                            in->id);
    return rc;
}

wf_code
wf_store_pg__get_schedule(wf_store *st, const wf_store_ctx *ctx, const char *id,
                          wf_schedule_row *out, bool *found, wf_error *err)
{
    params p = wf_store_pg__p_tenant(ctx, id);
    wf_schedule_row *rows = NULL;
    size_t n = 0;
    wf_code rc = wf_store_pg__query((pg_store *)st, ctx, S_GET_SCHEDULE, &p,
                                    &wf_store__schedule_desc, &rows, &n, err);
    if (rc == WF_OK) {
        *found = n > 0;
        if (n > 0)
            *out = rows[0];
    }
    return rc;
}

wf_code
wf_store_pg__update_schedule(wf_store *st, const wf_store_ctx *ctx, const wf_schedule_row *in,
                             bool *found, wf_error *err)
{
    pg_store *s = (pg_store *)st;
    params p = {.a = ctx->arena};
    wf_store_pg__p_row(&p, &wf_store__schedule_desc, in, ctx->tenant, -1);
    if (p.oom)
        return wf_error_nomem(err);
    wf_store_pg_conn *c = NULL;
    wf_code rc = wf_store_pg__conn_get(s, ctx, &c, err);
    if (rc != WF_OK)
        return rc;
    PGresult *res = NULL;
    rc = wf_store_pg__run(c, S_UPDATE_SCHEDULE, &p, ctx->deadline_ms, &res, err);
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
        return wf_error_set(err, WF_E_CONFLICT, "schedule \"%.128s\" was changed concurrently",
                            in->id);
    return WF_OK;
}

wf_code
wf_store_pg__delete_schedule(wf_store *st, const wf_store_ctx *ctx, const char *id, bool *found,
                             wf_error *err)
{
    return wf_store_pg__delete_keyed((pg_store *)st, ctx, S_DELETE_SCHEDULE, id, found, err);
}

wf_code
wf_store_pg__list_schedules(wf_store *st, const wf_store_ctx *ctx, size_t limit, bool has,
                            int64_t c_num, const char *c_str, wf_schedule_row **rows, size_t *n,
                            wf_error *err)
{
    return wf_store_pg__query_page((pg_store *)st, ctx, S_LIST_SCHEDULES, &wf_store__schedule_desc,
                                   limit, has, c_num, c_str, rows, n, err);
}

wf_code
wf_store_pg__claim_schedules(wf_store *st, const wf_store_ctx *ctx, const char *owner, int64_t now,
                             int64_t lease_ms, size_t limit, wf_schedule_row **rows, size_t *n,
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
                              ctx->tenant != NULL ? S_CLAIM_SCHEDULES_T : S_CLAIM_SCHEDULES, &p,
                              &wf_store__schedule_desc, rows, n, err);
}

wf_code
wf_store_pg__put_schedule_run(wf_tx *t, const wf_schedule_run_row *in, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    params p = {.a = t->ctx.arena};
    wf_store_pg__p_row(&p, &wf_store__schedule_run_desc, in, t->ctx.tenant, -1);
    if (p.oom)
        return wf_error_nomem(err);
    wf_code rc = wf_store_pg__run_cmd(tx->c, S_PUT_SCHEDULE_RUN, &p, t->ctx.deadline_ms, NULL, err);
    if (rc == WF_E_CONFLICT)
        return wf_error_set(err, WF_E_CONFLICT, "schedule \"%.128s\" has handled that fire time",
                            in->schedule_id);
    return rc;
}

wf_code
wf_store_pg__settle_schedule_run(wf_tx *t, const wf_schedule_run_row *in, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    params p = {.a = t->ctx.arena};
    wf_store_pg__p_row(&p, &wf_store__schedule_run_desc, in, t->ctx.tenant, -1);
    if (p.oom)
        return wf_error_nomem(err);
    long affected = 0;
    wf_code rc =
        wf_store_pg__run_cmd(tx->c, S_SETTLE_SCHEDULE_RUN, &p, t->ctx.deadline_ms, &affected, err);
    if (rc == WF_OK && affected == 0)
        return wf_error_set(err, WF_E_CONFLICT,
                            "schedule \"%.128s\" has settled that buffered fire time",
                            in->schedule_id);
    return rc;
}

wf_code
wf_store_pg__list_schedule_runs(wf_store *st, const wf_store_ctx *ctx, const char *schedule_id,
                                size_t limit, bool has, int64_t c_num, wf_schedule_run_row **rows,
                                size_t *n, wf_error *err)
{
    params p = {.a = ctx->arena};
    wf_store_pg__p_str(&p, ctx->tenant);
    wf_store_pg__p_str(&p, schedule_id);
    wf_store_pg__p_i64(&p, has ? c_num : INT64_MAX);
    wf_store_pg__p_i64(&p, (int64_t)limit);
    return wf_store_pg__query((pg_store *)st, ctx, S_LIST_SCHEDULE_RUNS, &p,
                              &wf_store__schedule_run_desc, rows, n, err);
}
