/*
 * mem/schedules.c: the schedules and their runs in the memory store
 * (store.h, "schedules"). Schedules are keyed by (tenant, id), runs by
 * (tenant, schedule id, nominal time); every call runs under the store's
 * one mutex, so a claim, a versioned update and a run's insert are atomic
 * without more locking. Internal to server/store.
 */
#include "mem/mem_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

wf_code
wf_store_mem__put_schedule(wf_tx *t, const wf_schedule_row *in, wf_error *err)
{
    mem_store *m = (mem_store *)t->st;
    if (wf_store_mem__mt_get(&m->schedules, t->ctx.tenant, in->id, NULL) != NULL)
        return wf_error_set(err, WF_E_SCHEDULE_ALREADY_EXISTS, "schedule \"%.128s\" already exists",
                            in->id);
    wf_schedule_row copy = *in;
    copy.version = 1;
    return wf_store_mem__tx_put((mem_tx *)t, &m->schedules, &copy, in->id, NULL, err);
}

wf_code
wf_store_mem__get_schedule(wf_store *st, const wf_store_ctx *ctx, const char *id,
                           wf_schedule_row *out, bool *found, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    return wf_store_mem__mt_get_copy(m, &m->schedules, ctx, id, out, found, err);
}

wf_code
wf_store_mem__update_schedule(wf_store *st, const wf_store_ctx *ctx, const wf_schedule_row *in,
                              bool *found, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    const wf_schedule_row *cur = wf_store_mem__mt_get(&m->schedules, ctx->tenant, in->id, NULL);
    *found = cur != NULL;
    if (cur != NULL && cur->version != in->version) {
        rc = wf_error_set(err, WF_E_CONFLICT, "schedule \"%.128s\" was changed concurrently",
                          in->id);
    } else if (cur != NULL) {
        wf_schedule_row copy = *in;
        copy.version = in->version + 1;
        rc = wf_store_mem__mt_replace(&m->schedules, ctx->tenant, copy.id, &copy, err);
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* Takes the runs of (tenant, schedule_id) out of the table. */
static void
drop_runs(mem_store *m, const char *tenant, const char *schedule_id)
{
    size_t lo, hi;
    wf_store_mem__mt_tenant_range(&m->schedule_runs, tenant, &lo, &hi);
    for (size_t i = hi; i > lo; i--) {
        const wf_schedule_run_row *r = m->schedule_runs.v[i - 1].row;
        if (strcmp(r->schedule_id, schedule_id) != 0)
            continue;
        char *key = m->schedule_runs.v[i - 1].key;
        void *row = wf_store_mem__mt_take(&m->schedule_runs, key);
        if (row != NULL)
            wf_store_mem__row_free(&wf_store__schedule_run_desc, row);
    }
}

wf_code
wf_store_mem__delete_schedule(wf_store *st, const wf_store_ctx *ctx, const char *id, bool *found,
                              wf_error *err)
{
    mem_store *m = (mem_store *)st;
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    char *key = wf_store_mem__make_key(ctx->tenant, id, NULL);
    void *row = key != NULL ? wf_store_mem__mt_take(&m->schedules, key) : NULL;
    rc = key != NULL ? WF_OK : wf_error_nomem(err);
    free(key);
    *found = row != NULL;
    if (row != NULL) {
        wf_store_mem__row_free(&wf_store__schedule_desc, row);
        drop_runs(m, ctx->tenant, id);
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* Newest first: (created_at, id) descending. */
static int
cmp_schedule_desc(const void *a, const void *b)
{
    const wf_schedule_row *x = *(const wf_schedule_row *const *)a,
                          *y = *(const wf_schedule_row *const *)b;
    int c = wf_store_mem__i64_cmp(y->created_at, x->created_at);
    return c != 0 ? c : strcmp(y->id, x->id);
}

static bool
schedule_before(mem_store *m, const void *row, const void *arg)
{
    (void)m;
    const wf_schedule_row *r = row;
    const keyset *k = arg;
    if (!k->has)
        return true;
    return r->created_at < k->num || (r->created_at == k->num && strcmp(r->id, k->str) < 0);
}

wf_code
wf_store_mem__list_schedules(wf_store *st, const wf_store_ctx *ctx, size_t limit, bool has,
                             int64_t c_num, const char *c_str, wf_schedule_row **rows, size_t *n,
                             wf_error *err)
{
    mem_store *m = (mem_store *)st;
    keyset k = {has, c_num, c_str};
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_store_mem__select_rows(m, &m->schedules, ctx->tenant, schedule_before, &k,
                                   cmp_schedule_desc, limit, ctx->arena, rows, n, err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static CMP_NUM_ID(cmp_schedule_due, wf_schedule_row, due_at)

static bool
schedule_claimable(mem_store *m, const void *row, const void *arg)
{
    (void)m;
    const wf_schedule_row *r = row;
    int64_t now = *(const int64_t *)arg;
    return r->state == WF_SCHEDULE_ACTIVE && r->due_at > 0 && r->due_at <= now &&
           r->lease_until <= now;
}

wf_code
wf_store_mem__claim_schedules(wf_store *st, const wf_store_ctx *ctx, const char *owner, int64_t now,
                              int64_t lease_ms, size_t limit, wf_schedule_row **rows, size_t *n,
                              wf_error *err)
{
    mem_store *m = (mem_store *)st;
    void **v = NULL;
    size_t k = 0;
    wf_schedule_row *out = NULL;
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_store_mem__gather(m, &m->schedules, ctx->tenant, schedule_claimable, &now,
                              cmp_schedule_due, limit, &v, &k, err);
    if (rc == WF_OK)
        rc = wf_store_mem__copy_out(&wf_store__schedule_desc, v, k, ctx->arena, (void **)&out, err);
    for (size_t i = 0; rc == WF_OK && i < k; i++) {
        out[i].lease_owner = wf_arena_strdup(ctx->arena, owner);
        out[i].lease_until = now + lease_ms * 1000;
        out[i].version++;
        rc = out[i].lease_owner != NULL
                 ? wf_store_mem__mt_replace(&m->schedules, out[i].tenant, out[i].id, &out[i], err)
                 : wf_error_nomem(err);
    }
    pthread_mutex_unlock(&m->mu);
    free(v);
    if (rc == WF_OK) {
        *rows = out;
        *n = k;
    }
    return rc;
}

/* The key part of a nominal time: fixed width, so keys sort by time. */
static void
nominal_key(char *buf, size_t cap, int64_t nominal_at)
{
    snprintf(buf, cap, "%020" PRId64, nominal_at);
}

wf_code
wf_store_mem__put_schedule_run(wf_tx *t, const wf_schedule_run_row *in, wf_error *err)
{
    mem_store *m = (mem_store *)t->st;
    char nominal[24];
    nominal_key(nominal, sizeof nominal, in->nominal_at);
    if (wf_store_mem__mt_get(&m->schedule_runs, t->ctx.tenant, in->schedule_id, nominal) != NULL)
        return wf_error_set(err, WF_E_CONFLICT, "schedule \"%.128s\" has handled that fire time",
                            in->schedule_id);
    return wf_store_mem__tx_put((mem_tx *)t, &m->schedule_runs, in, in->schedule_id, nominal, err);
}

wf_code
wf_store_mem__settle_schedule_run(wf_tx *t, const wf_schedule_run_row *in, wf_error *err)
{
    mem_store *m = (mem_store *)t->st;
    char nominal[24];
    nominal_key(nominal, sizeof nominal, in->nominal_at);
    const wf_schedule_run_row *cur =
        wf_store_mem__mt_get(&m->schedule_runs, t->ctx.tenant, in->schedule_id, nominal);
    if (cur == NULL || cur->outcome != WF_RUN_BUFFERED)
        return wf_error_set(err, WF_E_CONFLICT,
                            "schedule \"%.128s\" has settled that buffered fire time",
                            in->schedule_id);
    return wf_store_mem__tx_put((mem_tx *)t, &m->schedule_runs, in, in->schedule_id, nominal, err);
}

typedef struct run_match {
    const char *schedule_id;
    bool has;
    int64_t before;
} run_match;

static bool
run_matches(mem_store *m, const void *row, const void *arg)
{
    (void)m;
    const wf_schedule_run_row *r = row;
    const run_match *q = arg;
    return strcmp(r->schedule_id, q->schedule_id) == 0 && (!q->has || r->nominal_at < q->before);
}

static int
cmp_run_desc(const void *a, const void *b)
{
    const wf_schedule_run_row *x = *(const wf_schedule_run_row *const *)a,
                              *y = *(const wf_schedule_run_row *const *)b;
    return wf_store_mem__i64_cmp(y->nominal_at, x->nominal_at);
}

wf_code
wf_store_mem__list_schedule_runs(wf_store *st, const wf_store_ctx *ctx, const char *schedule_id,
                                 size_t limit, bool has, int64_t c_num, wf_schedule_run_row **rows,
                                 size_t *n, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    run_match q = {schedule_id, has, c_num};
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_store_mem__select_rows(m, &m->schedule_runs, ctx->tenant, run_matches, &q, cmp_run_desc,
                                   limit, ctx->arena, rows, n, err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}
