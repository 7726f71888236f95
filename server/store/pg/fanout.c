/*
 * pg/fanout.c: the fan-out of a signal sent to an aggregate in the Postgres
 * store (store.h, "fan-out"; the table in
 * migrations/0016_signal_deliveries.sql). The target set, the take and
 * the signal read run in the caller's unit of work; the claim and the
 * reads are single statements on a pooled connection. Internal to
 * server/store.
 */
#include "pg/pg_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

wf_code
wf_store_pg__fanout_targets(wf_tx *t, const char *log_id, const char *name, const char *agg_type,
                            const char *agg_id, int64_t before_at, const char *before_id,
                            int64_t received_at, int64_t now, size_t page, wf_fanout_out *out,
                            wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    params p = wf_store_pg__p_tenant(&t->ctx, name);
    wf_store_pg__p_str(&p, agg_type);
    wf_store_pg__p_str(&p, agg_id);
    wf_store_pg__p_str(&p, log_id);
    wf_store_pg__p_i64(&p, now);
    wf_store_pg__p_i64(&p, (int64_t)page);
    wf_store_pg__p_i64(&p, before_at);
    wf_store_pg__p_str(&p, before_id);
    wf_store_pg__p_i64(&p, received_at);
    if (p.oom)
        return wf_error_nomem(err);
    PGresult *res = NULL;
    wf_code rc = wf_store_pg__run(tx->c, S_FANOUT_TARGETS, &p, t->ctx.deadline_ms, &res, err);
    int k = rc == WF_OK ? PQntuples(res) : 0;
    if (rc == WF_OK && k > 0) {
        out->queued = PQgetvalue(res, 0, 1)[0] == 't';
        out->count = strtoll(PQgetvalue(res, 0, 2), NULL, 10);
        out->ids = wf_arena_calloc(t->ctx.arena, (size_t)k, sizeof *out->ids);
        if (out->ids == NULL)
            rc = wf_error_nomem(err);
    }
    for (int r = 1; rc == WF_OK && r < k; r++) {
        out->ids[out->n_ids] = wf_arena_strdup(t->ctx.arena, PQgetvalue(res, r, 3));
        rc = out->ids[out->n_ids++] != NULL ? WF_OK : wf_error_nomem(err);
    }
    PQclear(res);
    return rc;
}

wf_code
wf_store_pg__take_delivery(wf_tx *t, const char *log_id, const char *root_id,
                           const char *instance_id, wf_delivery_state state, int64_t now,
                           bool *taken, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    params p = wf_store_pg__p_tenant(&t->ctx, log_id);
    wf_store_pg__p_str(&p, instance_id);
    wf_store_pg__p_i64(&p, (int64_t)state);
    wf_store_pg__p_i64(&p, now);
    wf_store_pg__p_str(&p, root_id);
    if (p.oom)
        return wf_error_nomem(err);
    long affected = 0;
    wf_code rc =
        wf_store_pg__run_cmd(tx->c, S_TAKE_DELIVERY, &p, t->ctx.deadline_ms, &affected, err);
    *taken = rc == WF_OK && affected > 0;
    return rc;
}

wf_code
wf_store_pg__tx_get_signal(wf_tx *t, const char *id, wf_signal_row *out, bool *found, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    params p = wf_store_pg__p_tenant(&t->ctx, id);
    wf_signal_row *rows = NULL;
    size_t n = 0;
    wf_code rc = wf_store_pg__run_rows(tx->c, S_GET_SIGNAL, &p, t->ctx.deadline_ms,
                                       &wf_store__signal_desc, t->ctx.arena, &rows, &n, err);
    *found = rc == WF_OK && n > 0;
    if (*found)
        *out = rows[0];
    return rc;
}

wf_code
wf_store_pg__claim_deliveries(wf_store *st, const wf_store_ctx *ctx, int64_t now, int64_t lease_ms,
                              size_t limit, wf_delivery_row **rows, size_t *n, wf_error *err)
{
    params p = {.a = ctx->arena};
    wf_store_pg__p_i64(&p, now);
    wf_store_pg__p_i64(&p, (int64_t)limit);
    wf_store_pg__p_i64(&p, now + lease_ms * 1000);
    wf_store_pg__p_str(&p, ctx->tenant);
    return wf_store_pg__query((pg_store *)st, ctx, S_CLAIM_DELIVERIES, &p, &wf_store__delivery_desc,
                              rows, n, err);
}

wf_code
wf_store_pg__find_queued_signals(wf_store *st, const wf_store_ctx *ctx, size_t limit,
                                 wf_signal_row **rows, size_t *n, wf_error *err)
{
    params p = {.a = ctx->arena};
    wf_store_pg__p_i64(&p, (int64_t)limit);
    wf_store_pg__p_str(&p, ctx->tenant);
    return wf_store_pg__query((pg_store *)st, ctx, S_FIND_QUEUED, &p, &wf_store__signal_desc, rows,
                              n, err);
}

wf_code
wf_store_pg__count_deliveries(wf_store *st, const wf_store_ctx *ctx, const char *log_id,
                              wf_delivery_counts *out, wf_error *err)
{
    pg_store *s = (pg_store *)st;
    params p = wf_store_pg__p_tenant(ctx, log_id);
    wf_store_pg_conn *c = NULL;
    wf_code rc = wf_store_pg__conn_get(s, ctx, &c, err);
    if (rc != WF_OK)
        return rc;
    PGresult *res = NULL;
    rc = wf_store_pg__run(c, S_COUNT_DELIVERIES, &p, ctx->deadline_ms, &res, err);
    for (int r = 0; rc == WF_OK && r < PQntuples(res); r++) {
        int64_t k = strtoll(PQgetvalue(res, r, 1), NULL, 10);
        switch (atoi(PQgetvalue(res, r, 0))) {
        case WF_DELIVERY_PENDING:
            out->pending = k;
            break;
        case WF_DELIVERY_DELIVERED:
            out->delivered = k;
            break;
        default:
            out->skipped = k;
        }
    }
    PQclear(res);
    wf_store_pg__conn_put(s, c);
    return rc;
}

wf_code
wf_store_pg__pending_deliveries(wf_store *st, const wf_store_ctx *ctx, const char *agg_type,
                                const char *agg_id, size_t limit, wf_delivery_row **rows, size_t *n,
                                wf_error *err)
{
    params p = wf_store_pg__p_tenant(ctx, agg_type);
    wf_store_pg__p_str(&p, agg_id);
    wf_store_pg__p_i64(&p, (int64_t)limit);
    return wf_store_pg__query((pg_store *)st, ctx, S_PENDING_DELIVERIES, &p,
                              &wf_store__delivery_desc, rows, n, err);
}
