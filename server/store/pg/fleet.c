/*
 * pg/fleet.c: a definition's live totals (wf_store_fleet_counts) and the
 * pages of its instances at one place or transition
 * (wf_store_fleet_instances), each one statement (pg/stmts.c,
 * fleet_counts and fleet_instances).
 */
#include "pg/pg_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int
fleet_cmp(const void *a, const void *b)
{
    return strcmp(((const wf_element_count *)a)->element_id,
                  ((const wf_element_count *)b)->element_id);
}

/* The rows of kind k (1 tokens, 2 enabled, 3 incidents) of res, into *v. */
static bool
fleet_kind(wf_arena *a, const PGresult *res, int k, wf_element_count **v, size_t *n)
{
    size_t m = 0;
    for (int r = 0; r < PQntuples(res); r++)
        m += atoi(PQgetvalue(res, r, 0)) == k;
    *v = wf_arena_calloc(a, m + 1, sizeof **v);
    if (*v == NULL)
        return false;
    for (int r = 0; r < PQntuples(res); r++) {
        if (atoi(PQgetvalue(res, r, 0)) != k)
            continue;
        (*v)[*n].element_id = wf_arena_strdup(a, PQgetvalue(res, r, 1));
        (*v)[*n].count = strtoll(PQgetvalue(res, r, 2), NULL, 10);
        if ((*v)[(*n)++].element_id == NULL)
            return false;
    }
    if (*n > 1)
        qsort(*v, *n, sizeof **v, fleet_cmp);
    return true;
}

wf_code
wf_store_pg__fleet_counts(wf_store *st, const wf_store_ctx *ctx, const char *definition_key,
                          int32_t version, wf_fleet_counts *out, wf_error *err)
{
    pg_store *s = (pg_store *)st;
    params p = wf_store_pg__p_tenant(ctx, definition_key);
    wf_store_pg__p_i64(&p, version > 0 ? version : 1);
    wf_store_pg__p_i64(&p, version > 0 ? version : INT32_MAX);
    wf_store_pg_conn *c = NULL;
    wf_code rc = wf_store_pg__conn_get(s, ctx, &c, err);
    if (rc != WF_OK)
        return rc;
    PGresult *res = NULL;
    rc = wf_store_pg__run(c, S_FLEET_COUNTS, &p, ctx->deadline_ms, &res, err);
    if (rc == WF_OK) {
        for (int r = 0; r < PQntuples(res); r++)
            if (atoi(PQgetvalue(res, r, 0)) == 0)
                out->live = strtoll(PQgetvalue(res, r, 2), NULL, 10);
        if (!fleet_kind(ctx->arena, res, 1, &out->tokens, &out->n_tokens) ||
            !fleet_kind(ctx->arena, res, 2, &out->enabled, &out->n_enabled) ||
            !fleet_kind(ctx->arena, res, 3, &out->incidents, &out->n_incidents))
            rc = wf_error_nomem(err);
    }
    PQclear(res);
    wf_store_pg__conn_put(s, c);
    return rc;
}

wf_code
wf_store_pg__fleet_instances(wf_store *st, const wf_store_ctx *ctx, const char *definition_key,
                             int32_t version, wf_fleet_kind kind, const char *element,
                             const char *after, size_t limit, char ***ids, size_t *n, wf_error *err)
{
    pg_store *s = (pg_store *)st;
    params p = wf_store_pg__p_tenant(ctx, definition_key);
    wf_store_pg__p_i64(&p, version > 0 ? version : 1);
    wf_store_pg__p_i64(&p, version > 0 ? version : INT32_MAX);
    wf_store_pg__p_str(&p, after != NULL ? after : "");
    wf_store_pg__p_i64(&p, kind);
    wf_store_pg__p_str(&p, element);
    wf_store_pg__p_i64(&p, (int64_t)limit);
    wf_store_pg_conn *c = NULL;
    wf_code rc = wf_store_pg__conn_get(s, ctx, &c, err);
    if (rc != WF_OK)
        return rc;
    PGresult *res = NULL;
    rc = wf_store_pg__run(c, S_FLEET_INSTANCES, &p, ctx->deadline_ms, &res, err);
    if (rc == WF_OK) {
        int k = PQntuples(res);
        char **v = wf_arena_calloc(ctx->arena, (size_t)k + 1, sizeof *v);
        for (int r = 0; v != NULL && r < k; r++)
            if ((v[r] = wf_arena_strdup(ctx->arena, PQgetvalue(res, r, 0))) == NULL)
                v = NULL;
        if (v == NULL) {
            rc = wf_error_nomem(err);
        } else {
            *ids = v;
            *n = (size_t)k;
        }
    }
    PQclear(res);
    wf_store_pg__conn_put(s, c);
    return rc;
}
