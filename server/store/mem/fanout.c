/*
 * mem/fanout.c: the fan-out of a signal sent to an aggregate in the memory
 * store (store.h, "fan-out"): one table of delivery rows keyed by
 * (tenant, signal log id, instance id). The unit-of-work calls write
 * through the transaction's undo log; the claims and reads run under the
 * store's one mutex. Internal to server/store.
 */
#include "mem/mem_int.h"

#include <stdlib.h>

bool
wf_store_mem__aggregate_pending(mem_store *m, const char *tenant, const char *agg_type,
                                const char *agg_id, int64_t before_at, const char *before_id)
{
    size_t lo, hi;
    wf_store_mem__mt_tenant_range(&m->deliveries, tenant, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        const wf_delivery_row *d = m->deliveries.v[i].row;
        if (d->state == WF_DELIVERY_PENDING && wf_store_mem__eq(d->aggregate_type, agg_type) &&
            wf_store_mem__eq(d->aggregate_id, agg_id))
            return true;
    }
    wf_store_mem__mt_tenant_range(&m->signals, tenant, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        const wf_signal_row *s = m->signals.v[i].row;
        if (s->outcome == WF_SIGNAL_QUEUED && wf_store_mem__eq(s->aggregate_type, agg_type) &&
            wf_store_mem__eq(s->aggregate_id, agg_id) &&
            (s->received_at < before_at ||
             (s->received_at == before_at && strcmp(s->id, before_id) < 0)))
            return true;
    }
    return false;
}

typedef struct target_match {
    const char *tenant, *name, *agg_type, *agg_id;
} target_match;

/* A wait for the signal on the aggregate whose instance runs. */
static bool
target(mem_store *m, const void *row, const void *arg)
{
    const target_match *q = arg;
    const wf_subscription_row *s = row;
    if (!wf_store_mem__eq(s->signal_name, q->name) ||
        !wf_store_mem__eq(s->aggregate_type, q->agg_type) ||
        !wf_store_mem__eq(s->aggregate_id, q->agg_id))
        return false;
    const wf_instance_row *in = wf_store_mem__mt_get(&m->insts, q->tenant, s->instance_id, NULL);
    return in != NULL && in->status == WF_INSTANCE_RUNNING;
}

wf_code
wf_store_mem__fanout_targets(wf_tx *t, const char *log_id, const char *name, const char *agg_type,
                             const char *agg_id, int64_t before_at, const char *before_id,
                             int64_t received_at, int64_t now, size_t page, wf_fanout_out *out,
                             wf_error *err)
{
    (void)received_at; /* the memory store orders by the signal's row */
    mem_store *m = (mem_store *)t->st;
    mem_tx *tx = (mem_tx *)t;
    const char *tenant = t->ctx.tenant;
    tx->serial = true;
    out->queued =
        wf_store_mem__aggregate_pending(m, tenant, agg_type, agg_id, before_at, before_id);
    if (out->queued)
        return WF_OK;
    target_match q = {tenant, name, agg_type, agg_id};
    void **v = NULL;
    size_t n = 0;
    wf_code rc = wf_store_mem__gather(m, &m->subs, tenant, target, &q, wf_store_mem__cmp_sub,
                                      SIZE_MAX, &v, &n, err);
    if (rc == WF_OK)
        out->ids = wf_arena_calloc(t->ctx.arena, page + 1, sizeof *out->ids);
    if (rc == WF_OK && out->ids == NULL)
        rc = wf_error_nomem(err);
    for (size_t i = 0; rc == WF_OK && i < n; i++) {
        const wf_subscription_row *s = v[i];
        if (wf_store_mem__mt_get(&m->deliveries, tenant, log_id, s->instance_id) != NULL)
            continue; /* one delivery per instance */
        wf_delivery_row d = {
            .signal_log_id = (char *)log_id,
            .instance_id = s->instance_id,
            .root_id = s->root_id,
            .aggregate_type = (char *)agg_type,
            .aggregate_id = (char *)agg_id,
            .seq = out->count + 1,
            .state = WF_DELIVERY_PENDING,
            .created_at = now,
        };
        rc = wf_store_mem__tx_put(tx, &m->deliveries, &d, log_id, s->instance_id, err);
        if (rc == WF_OK && out->n_ids < page) {
            out->ids[out->n_ids] = wf_arena_strdup(t->ctx.arena, s->instance_id);
            rc = out->ids[out->n_ids++] != NULL ? WF_OK : wf_error_nomem(err);
        }
        out->count++;
    }
    free(v);
    return rc;
}

wf_code
wf_store_mem__take_delivery(wf_tx *t, const char *log_id, const char *root_id,
                            const char *instance_id, wf_delivery_state state, int64_t now,
                            bool *taken, wf_error *err)
{
    (void)root_id;
    mem_store *m = (mem_store *)t->st;
    const wf_delivery_row *cur =
        wf_store_mem__mt_get(&m->deliveries, t->ctx.tenant, log_id, instance_id);
    *taken = cur != NULL && cur->state == WF_DELIVERY_PENDING;
    if (!*taken)
        return WF_OK;
    wf_delivery_row d = *cur;
    d.state = state;
    d.done_at = now;
    return wf_store_mem__tx_put((mem_tx *)t, &m->deliveries, &d, log_id, instance_id, err);
}

wf_code
wf_store_mem__tx_get_signal(wf_tx *t, const char *id, wf_signal_row *out, bool *found,
                            wf_error *err)
{
    mem_store *m = (mem_store *)t->st;
    const void *row = wf_store_mem__mt_get(&m->signals, t->ctx.tenant, id, NULL);
    *found = row != NULL;
    if (row != NULL && !wf_store__row_copy(&wf_store__signal_desc, out, row, t->ctx.arena, NULL))
        return wf_error_nomem(err);
    return WF_OK;
}

static bool
claimable(mem_store *m, const void *row, const void *arg)
{
    (void)m;
    const wf_delivery_row *d = row;
    return d->state == WF_DELIVERY_PENDING && d->claimed_until <= *(const int64_t *)arg;
}

static int
cmp_claim(const void *a, const void *b)
{
    const wf_delivery_row *x = *(const wf_delivery_row *const *)a;
    const wf_delivery_row *y = *(const wf_delivery_row *const *)b;
    int c = wf_store_mem__i64_cmp(x->claimed_until, y->claimed_until);
    if (c == 0)
        c = wf_store_mem__i64_cmp(x->created_at, y->created_at);
    if (c == 0)
        c = strcmp(x->signal_log_id, y->signal_log_id);
    return c != 0 ? c : wf_store_mem__i64_cmp(x->seq, y->seq);
}

wf_code
wf_store_mem__claim_deliveries(wf_store *st, const wf_store_ctx *ctx, int64_t now, int64_t lease_ms,
                               size_t limit, wf_delivery_row **rows, size_t *n, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    void **v = NULL;
    size_t k = 0;
    wf_delivery_row *out = NULL;
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_store_mem__gather(m, &m->deliveries, ctx->tenant, claimable, &now, cmp_claim, limit, &v,
                              &k, err);
    for (size_t i = 0; rc == WF_OK && i < k; i++)
        ((wf_delivery_row *)v[i])->claimed_until = now + lease_ms * 1000;
    if (rc == WF_OK)
        rc = wf_store_mem__copy_out(&wf_store__delivery_desc, v, k, ctx->arena, (void **)&out, err);
    pthread_mutex_unlock(&m->mu);
    free(v);
    if (rc == WF_OK) {
        *rows = out;
        *n = k;
    }
    return rc;
}

/* A QUEUED signal whose turn came: nothing pending before it. */
static bool
turn_came(mem_store *m, const void *row, const void *arg)
{
    (void)arg;
    const wf_signal_row *s = row;
    return s->outcome == WF_SIGNAL_QUEUED &&
           !wf_store_mem__aggregate_pending(m, s->tenant, s->aggregate_type, s->aggregate_id,
                                            s->received_at, s->id);
}

wf_code
wf_store_mem__find_queued_signals(wf_store *st, const wf_store_ctx *ctx, size_t limit,
                                  wf_signal_row **rows, size_t *n, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_store_mem__select_rows(m, &m->signals, ctx->tenant, turn_came, NULL,
                                   wf_store_mem__cmp_signal, limit, ctx->arena, rows, n, err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

wf_code
wf_store_mem__count_deliveries(wf_store *st, const wf_store_ctx *ctx, const char *log_id,
                               wf_delivery_counts *out, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    char *key = wf_store_mem__make_key(ctx->tenant, log_id, "");
    size_t lo, hi;
    wf_store_mem__mt_tenant_range(&m->deliveries, ctx->tenant, &lo, &hi);
    size_t kn = key != NULL ? strlen(key) : 0;
    for (size_t i = lo; key != NULL && i < hi; i++) {
        if (strncmp(m->deliveries.v[i].key, key, kn) != 0)
            continue;
        const wf_delivery_row *d = m->deliveries.v[i].row;
        out->pending += d->state == WF_DELIVERY_PENDING;
        out->delivered += d->state == WF_DELIVERY_DELIVERED;
        out->skipped += d->state == WF_DELIVERY_SKIPPED;
    }
    pthread_mutex_unlock(&m->mu);
    free(key);
    return key != NULL ? WF_OK : wf_error_nomem(err);
}

typedef struct agg_match {
    const char *agg_type, *agg_id;
} agg_match;

static bool
pending_to(mem_store *m, const void *row, const void *arg)
{
    (void)m;
    const wf_delivery_row *d = row;
    const agg_match *q = arg;
    return d->state == WF_DELIVERY_PENDING && wf_store_mem__eq(d->aggregate_type, q->agg_type) &&
           wf_store_mem__eq(d->aggregate_id, q->agg_id);
}

wf_code
wf_store_mem__pending_deliveries(wf_store *st, const wf_store_ctx *ctx, const char *agg_type,
                                 const char *agg_id, size_t limit, wf_delivery_row **rows,
                                 size_t *n, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    agg_match q = {agg_type, agg_id};
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_store_mem__select_rows(m, &m->deliveries, ctx->tenant, pending_to, &q, NULL, limit,
                                   ctx->arena, rows, n, err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}
