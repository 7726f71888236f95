/*
 * mem/work.c: the memory store's cross-instance work (job activation,
 * timer claims, expired leases), the scheduler's passes (signal expiry,
 * sweeps), subscriptions, event reads, correlation locks and backlog
 * counts.
 */
#include "mem/mem_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wf_id.h"
#include "wf_time.h"

/* ---- cross-instance work ------------------------------------------------ */

typedef struct job_q {
    const char *job_type;
    int64_t now;
} job_q;

/* True when the root of a tree is SUSPENDED: its jobs are not leased and
 * its timers not claimed until ResumeInstance (the same rule as the
 * Postgres statements). */
static bool
root_suspended(mem_store *m, const char *tenant, const char *root_id)
{
    const wf_instance_row *r = wf_store_mem__mt_get(&m->insts, tenant, root_id, NULL);
    return r != NULL && r->status == WF_INSTANCE_SUSPENDED;
}

/* A job of a root a paused unit of work holds is skipped too, as
 * Postgres's SKIP LOCKED skips the jobs lock_root locked. */
static bool
job_activatable(mem_store *m, const void *row, const void *arg)
{
    const wf_job_row *j = row;
    const job_q *q = arg;
    return wf_store_mem__eq(j->job_type, q->job_type) && j->state == WF_JOB_ACTIVATABLE &&
           j->activatable_at <= q->now && !root_suspended(m, j->tenant, j->root_id) &&
           !wf_store_mem__root_held(m, j->root_id, NULL);
}

static const char *
fair_key(const void *row)
{
    const char *k = ((const wf_job_row *)row)->fairness_key;
    return k != NULL ? k : "";
}

/* A candidate's key and its position in the rank order. */
typedef struct fair_pos {
    const char *key;
    size_t pos;
} fair_pos;

static int
fair_cmp(const void *a, const void *b)
{
    const fair_pos *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c != 0 ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

/* Marks head[i] for the head (first by rank) of each of the first max
 * keys, in key order. */
static wf_code
fair_heads(void **v, size_t k, size_t max, bool *head, wf_error *err)
{
    fair_pos *ix = malloc((k + 1) * sizeof *ix);
    if (ix == NULL)
        return wf_error_nomem(err);
    for (size_t i = 0; i < k; i++)
        ix[i] = (fair_pos){fair_key(v[i]), i};
    qsort(ix, k, sizeof *ix, fair_cmp);
    for (size_t i = 0, keys = 0; i < k && keys < max; i++)
        if (i == 0 || strcmp(ix[i].key, ix[i - 1].key) != 0) {
            head[ix[i].pos] = true;
            keys++;
        }
    free(ix);
    return WF_OK;
}

/* Orders the first *n of the k rank-ordered candidates v as the Postgres
 * statement does (activate_jobs): the heads of up to max keys by rank, then
 * the others by rank, max in all. Called with the store's mutex held. */
static wf_code
fair_order(void **v, size_t k, size_t max, size_t *n, wf_error *err)
{
    bool *head = calloc(k + 1, sizeof *head);
    void **o = malloc((k + 1) * sizeof *o);
    wf_code rc = head != NULL && o != NULL ? fair_heads(v, k, max, head, err) : wf_error_nomem(err);
    size_t m = 0;
    for (size_t i = 0; rc == WF_OK && i < k; i++)
        if (head[i])
            o[m++] = v[i];
    for (size_t i = 0; rc == WF_OK && i < k; i++)
        if (!head[i])
            o[m++] = v[i];
    if (rc == WF_OK) {
        memcpy(v, o, k * sizeof *v);
        *n = k < max ? k : max;
    }
    free(head);
    free(o);
    return rc;
}

/* Leases up to max jobs (and at most max_bytes of answer, see
 * wf_tx_activate_jobs) with the mutex held: through tx's undo log when tx
 * is not NULL (a rollback gives the jobs back), else for good. */
static wf_code
activate_locked(mem_store *m, mem_tx *tx, const wf_store_ctx *ctx, const char *job_type,
                const char *worker, size_t max, size_t max_bytes, int64_t lease_ms, int64_t now,
                wf_job_row **rows, size_t *n, wf_error *err)
{
    job_q q = {job_type, now};
    void **v = NULL;
    size_t k = 0;
    wf_job_row *out = NULL;
    wf_code rc = wf_store_mem__gather(m, &m->jobs, ctx->tenant, job_activatable, &q,
                                      wf_store_mem__cmp_job_activation, SIZE_MAX, &v, &k, err);
    if (rc == WF_OK)
        rc = fair_order(v, k, max, &k, err);
    if (rc == WF_OK && max_bytes > 0) {
        size_t total = 0, fit = 0;
        while (fit < k) {
            total += wf_store__job_answer_bytes(v[fit]);
            if (total > max_bytes)
                break;
            fit++;
        }
        if (fit == 0 && k > 0)
            rc = wf_store__job_too_large(v[0], max_bytes, err);
        k = fit;
    }
    if (rc == WF_OK) {
        out = wf_arena_calloc(ctx->arena, k > 0 ? k : 1, sizeof *out);
        if (out == NULL)
            rc = wf_error_nomem(err);
    }
    for (size_t i = 0; rc == WF_OK && i < k; i++) {
        char uuid[WF_UUID_LEN + 1];
        wf_uuid7(uuid);
        wf_job_row j = *(const wf_job_row *)v[i];
        /* "<instance id>.<uuid>": the key names the job's instance */
        char *key = wf_arena_printf(ctx->arena, "%s.%s", j.instance_id, uuid);
        if (key == NULL) {
            rc = wf_error_nomem(err);
            break;
        }
        j.key = key;
        j.worker = (char *)worker;
        j.state = WF_JOB_ACTIVATED;
        j.lease_expires_at = now + lease_ms * 1000;
        if (!wf_store__row_copy(&wf_store__job_desc, &out[i], &j, ctx->arena, NULL))
            rc = wf_error_nomem(err);
        /* out[i] owns its strings in the arena; v[i] is freed by the replace
         * (or kept by the undo log). */
        if (rc == WF_OK)
            rc = tx != NULL
                     ? wf_store_mem__tx_put(tx, &m->jobs, &out[i], out[i].id, NULL, err)
                     : wf_store_mem__mt_replace(&m->jobs, ctx->tenant, out[i].id, &out[i], err);
    }
    free(v);
    if (rc == WF_OK) {
        *rows = out;
        *n = k;
    }
    return rc;
}

wf_code
wf_store_mem__activate_jobs(wf_store *st, const wf_store_ctx *ctx, const char *job_type,
                            const char *worker, size_t max, size_t max_bytes, int64_t lease_ms,
                            int64_t now, wf_job_row **rows, size_t *n, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = activate_locked(m, NULL, ctx, job_type, worker, max, max_bytes, lease_ms, now, rows, n,
                         err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* Inside a unit of work: the mutex is already held by tx. */
wf_code
wf_store_mem__tx_activate_jobs(wf_tx *t, const char *job_type, const char *worker, size_t max,
                               size_t max_bytes, int64_t lease_ms, int64_t now, wf_job_row **rows,
                               size_t *n, wf_error *err)
{
    return activate_locked((mem_store *)t->st, (mem_tx *)t, &t->ctx, job_type, worker, max,
                           max_bytes, lease_ms, now, rows, n, err);
}

/* As job_activatable, a held root's timers are skipped. */
static bool
timer_due(mem_store *m, const void *row, const void *arg)
{
    const wf_timer_row *t = row;
    int64_t now = *(const int64_t *)arg;
    return t->due_at <= now && t->claimed_until <= now &&
           !root_suspended(m, t->tenant, t->root_id) &&
           !wf_store_mem__root_held(m, t->root_id, NULL);
}

wf_code
wf_store_mem__claim_due_timers(wf_store *st, const wf_store_ctx *ctx, const char *tenant,
                               int64_t now, size_t limit, int64_t claim_ms, wf_timer_row **rows,
                               size_t *n, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    void **v = NULL;
    size_t k = 0;
    wf_timer_row *out = NULL;
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_store_mem__gather(m, &m->timers, tenant, timer_due, &now, wf_store_mem__cmp_timer,
                              limit, &v, &k, err);
    if (rc == WF_OK)
        rc = wf_store_mem__copy_out(&wf_store__timer_desc, v, k, ctx->arena, (void **)&out, err);
    for (size_t i = 0; rc == WF_OK && i < k; i++) {
        out[i].claimed_until = now + claim_ms * 1000;
        rc = wf_store_mem__mt_replace(&m->timers, out[i].tenant, out[i].id, &out[i], err);
    }
    pthread_mutex_unlock(&m->mu);
    free(v);
    if (rc == WF_OK) {
        *rows = out;
        *n = k;
    }
    return rc;
}

/* ---- the scheduler's passes ----------------------------------------------- */

static CMP_NUM_ID(cmp_job_lease, wf_job_row, lease_expires_at)
static CMP_NUM_ID(cmp_signal_expiry, wf_signal_row, expires_at)

static bool
lease_expired(mem_store *m, const void *row, const void *arg)
{
    (void)m;
    const wf_job_row *j = row;
    return j->state == WF_JOB_ACTIVATED && j->lease_expires_at <= *(const int64_t *)arg;
}

wf_code
wf_store_mem__find_expired_leases(wf_store *st, const wf_store_ctx *ctx, int64_t now, size_t limit,
                                  wf_job_row **rows, size_t *n, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_store_mem__select_rows(m, &m->jobs, ctx->tenant, lease_expired, &now, cmp_job_lease,
                                   limit, ctx->arena, rows, n, err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static bool
signal_expired(mem_store *m, const void *row, const void *arg)
{
    (void)m;
    const wf_signal_row *s = row;
    return s->buffered && !s->discarded && s->expires_at <= *(const int64_t *)arg;
}

wf_code
wf_store_mem__expire_signals(wf_store *st, const wf_store_ctx *ctx, int64_t now, size_t limit,
                             size_t *n, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    void **v = NULL;
    size_t k = 0;
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_store_mem__gather(m, &m->signals, ctx->tenant, signal_expired, &now, cmp_signal_expiry,
                              limit, &v, &k, err);
    /* In place: outside any transaction, under the mutex, and no string
     * changes. */
    for (size_t i = 0; rc == WF_OK && i < k; i++) {
        wf_signal_row *s = v[i];
        s->buffered = false;
        s->discarded = true;
    }
    pthread_mutex_unlock(&m->mu);
    free(v);
    if (rc == WF_OK)
        *n = k;
    return rc;
}

typedef struct sweep_q {
    wf_sweep_kind kind;
    int64_t before;
} sweep_q;

static bool
sweep_match(mem_store *m, const void *row, const void *arg)
{
    const sweep_q *q = arg;
    if (q->kind == WF_SWEEP_IDEMPOTENCY)
        return ((const wf_idempotency_row *)row)->created_at <= q->before;
    if (q->kind == WF_SWEEP_DELIVERIES) {
        const wf_delivery_row *d = row;
        return d->state != WF_DELIVERY_PENDING && d->done_at <= q->before;
    }
    if (q->kind == WF_SWEEP_SIGNALS) {
        const wf_signal_row *s = row;
        return (s->outcome == WF_SIGNAL_BUFFERED || s->outcome == WF_SIGNAL_STARTED) &&
               !s->buffered && s->consumed_at == 0 && s->expires_at > 0 &&
               s->expires_at <= q->before;
    }
    const wf_event_row *e = row;
    if (e->root_id == NULL)
        return false;
    const wf_instance_row *r = wf_store_mem__mt_get(&m->insts, e->tenant, e->root_id, NULL);
    return r != NULL && r->parent_id == NULL && r->ended_at > 0 && r->ended_at <= q->before &&
           wf_instance_ended(r->status);
}

/* Removes up to limit matching rows of tenant (all when NULL) from t in
 * one compaction pass; returns how many went. */
static size_t
mt_remove_if(mem_store *m, mtable *t, const char *tenant, const sweep_q *q, size_t limit)
{
    size_t lo, hi, k = 0, out;
    wf_store_mem__mt_tenant_range(t, tenant, &lo, &hi);
    out = lo;
    for (size_t i = lo; i < t->n; i++) {
        if (i < hi && k < limit && sweep_match(m, t->v[i].row, q)) {
            free(t->v[i].key);
            wf_store_mem__row_free(t->d, t->v[i].row);
            k++;
            continue;
        }
        t->v[out++] = t->v[i];
    }
    t->n = out;
    return k;
}

wf_code
wf_store_mem__sweep(wf_store *st, const wf_store_ctx *ctx, wf_sweep_kind kind, int64_t before,
                    size_t limit, size_t *n, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    sweep_q q = {kind, before};
    size_t k = 0;
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    if (kind == WF_SWEEP_SIGNALS) {
        k = mt_remove_if(m, &m->signals, ctx->tenant, &q, limit);
    } else if (kind == WF_SWEEP_IDEMPOTENCY) {
        k = mt_remove_if(m, &m->idem, ctx->tenant, &q, limit);
    } else if (kind == WF_SWEEP_DELIVERIES) {
        k = mt_remove_if(m, &m->deliveries, ctx->tenant, &q, limit);
    } else {
        /* Events stay in sequence order; the gaps left behind are fine
         * for readers (they binary-search the start). */
        size_t out = 0;
        for (size_t i = 0; i < m->n_events; i++) {
            wf_event_row *e = &m->events[i];
            if (k < limit && (ctx->tenant == NULL || wf_store_mem__eq(e->tenant, ctx->tenant)) &&
                sweep_match(m, e, &q)) {
                wf_store__row_clear(&wf_store__event_desc, e);
                k++;
                continue;
            }
            m->events[out++] = *e;
        }
        m->n_events = out;
    }
    pthread_mutex_unlock(&m->mu);
    *n = k;
    return WF_OK;
}

static bool
sub_match(mem_store *m, const void *row, const void *arg)
{
    (void)m;
    const wf_subscription_row *s = row;
    const signal_match *q = arg;
    if (!wf_store_mem__eq(s->signal_name, q->name))
        return false;
    if (q->instance_id != NULL)
        return wf_store_mem__eq(s->instance_id, q->instance_id);
    return wf_store_mem__eq(s->aggregate_type, q->agg_type) &&
           wf_store_mem__eq(s->aggregate_id, q->agg_id);
}

wf_code
wf_store_mem__find_subscriptions(wf_store *st, const wf_store_ctx *ctx, const char *name,
                                 const char *instance_id, const char *agg_type, const char *agg_id,
                                 wf_subscription_row **rows, size_t *n, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    signal_match q = {name, instance_id, agg_type, agg_id, 0};
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    if (instance_id == NULL &&
        wf_store_mem__aggregate_pending(m, ctx->tenant, agg_type, agg_id, INT64_MAX, "")) {
        pthread_mutex_unlock(&m->mu);
        *rows = NULL;
        *n = 0;
        return WF_OK; /* the sender queues behind the pending deliveries */
    }
    rc = wf_store_mem__select_rows(m, &m->subs, ctx->tenant, sub_match, &q, wf_store_mem__cmp_sub,
                                   instance_id == NULL ? WF_FIND_SUBS_AGGREGATE_MAX : SIZE_MAX,
                                   ctx->arena, rows, n, err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static bool
event_match(mem_store *m, const wf_event_row *e, const char *tenant, const wf_event_filter *f)
{
    if (!wf_store_mem__eq(e->tenant, tenant))
        return false;
    if (f->instance_id != NULL && !wf_store_mem__eq(e->instance_id, f->instance_id) &&
        !wf_store_mem__eq(e->root_id, f->instance_id))
        return false;
    if (f->n_types > 0 && !wf_store_mem__in_list(e->type, f->types, f->n_types))
        return false;
    if (f->definition_key != NULL) {
        const wf_instance_row *i =
            e->instance_id != NULL ? wf_store_mem__mt_get(&m->insts, tenant, e->instance_id, NULL)
                                   : NULL;
        if (i == NULL || !wf_store_mem__eq(i->definition_key, f->definition_key))
            return false;
    }
    return true;
}

wf_code
wf_store_mem__read_events(wf_store *st, const wf_store_ctx *ctx, int64_t after_seq,
                          const wf_event_filter *f, size_t limit, wf_event_row **rows, size_t *n,
                          wf_error *err)
{
    mem_store *m = (mem_store *)st;
    size_t k = 0;
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    const wf_event_row **v = malloc((limit + 1) * sizeof *v);
    if (v == NULL)
        rc = wf_error_nomem(err);
    /* Sequences are dense and ascending: binary search the start. */
    size_t lo = 0, hi = m->n_events;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->events[mid].sequence <= after_seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; rc == WF_OK && i < m->n_events && k < limit; i++)
        if (event_match(m, &m->events[i], ctx->tenant, f))
            v[k++] = &m->events[i];
    if (rc == WF_OK)
        rc = wf_store_mem__copy_out(&wf_store__event_desc, (void *const *)v, k, ctx->arena,
                                    (void **)rows, err);
    pthread_mutex_unlock(&m->mu);
    free(v);
    if (rc == WF_OK)
        *n = k;
    return rc;
}

/* Sequences are assigned at write time: nothing is ever pending. */
wf_code
wf_store_mem__sequence_events(wf_store *st, const wf_store_ctx *ctx, wf_error *err)
{
    (void)st;
    (void)ctx;
    (void)err;
    return WF_OK;
}

wf_code
wf_store_mem__set_listener(wf_store *st, wf_store_listen_fn fn, void *arg, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    wf_code rc = WF_OK;
    pthread_mutex_lock(&m->mu);
    if (m->listen_fn != NULL) {
        rc = wf_error_set(err, WF_E_INTERNAL, "the store already has a listener");
    } else {
        m->listen_fn = fn;
        m->listen_arg = arg;
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* ---- correlation lock and backlog counts ---------------------------------- */

typedef struct awaited_match {
    signal_match q;
    const char *tenant;
} awaited_match;

/* A subscription of q whose instance runs (a FAILED one fires only after
 * RetryInstance, which then looks at the buffer). */
static bool
awaiting_match(mem_store *m, const void *row, const void *arg)
{
    const awaited_match *a = arg;
    const wf_subscription_row *s = row;
    if (!sub_match(m, row, &a->q))
        return false;
    const wf_instance_row *in = wf_store_mem__mt_get(&m->insts, a->tenant, s->instance_id, NULL);
    return in != NULL && in->status == WF_INSTANCE_RUNNING;
}

/* Nothing to lock: the open transaction holds the store mutex, so a
 * buffering and an awaiting of one key are serialised already, provided it
 * keeps the mutex to its end (it no longer pauses). */
wf_code
wf_store_mem__lock_correlation(wf_tx *t, const char *name, const char *agg_type, const char *agg_id,
                               bool *awaited, wf_error *err)
{
    ((mem_tx *)t)->serial = true;
    if (awaited == NULL)
        return WF_OK;
    mem_store *m = (mem_store *)t->st;
    awaited_match q = {{name, NULL, agg_type, agg_id, 0}, t->ctx.tenant};
    void **v = NULL;
    size_t n = 0;
    wf_code rc =
        wf_store_mem__gather(m, &m->subs, t->ctx.tenant, awaiting_match, &q, NULL, 1, &v, &n, err);
    if (rc != WF_OK)
        return rc;
    free(v);
    *awaited = n > 0;
    return WF_OK;
}

wf_code
wf_store_mem__aggregate_live(wf_tx *t, const char *agg_type, const char *agg_id, bool *live,
                             wf_error *err)
{
    (void)err;
    mem_store *m = (mem_store *)t->st;
    size_t lo, hi;
    wf_store_mem__mt_tenant_range(&m->insts, t->ctx.tenant, &lo, &hi);
    *live = false;
    for (size_t i = lo; i < hi && !*live; i++) {
        const wf_instance_row *in = m->insts.v[i].row;
        *live = in->parent_id == NULL && wf_store_mem__eq(in->aggregate_type, agg_type) &&
                wf_store_mem__eq(in->aggregate_id, agg_id) &&
                (in->status == WF_INSTANCE_RUNNING || in->status == WF_INSTANCE_FAILED ||
                 in->status == WF_INSTANCE_COMPENSATING || in->status == WF_INSTANCE_SUSPENDED);
    }
    return WF_OK;
}

static bool
job_ready(mem_store *m, const void *row, const void *arg)
{
    (void)m;
    const wf_job_row *j = row;
    int64_t now = *(const int64_t *)arg;
    return (j->state == WF_JOB_ACTIVATABLE && j->activatable_at <= now) ||
           (j->state == WF_JOB_ACTIVATED && j->lease_expires_at <= now);
}

static int
cmp_job_type(const void *a, const void *b)
{
    const wf_job_row *x = *(const wf_job_row *const *)a, *y = *(const wf_job_row *const *)b;
    return strcmp(x->job_type, y->job_type);
}

wf_code
wf_store_mem__count_backlog(wf_store *st, const wf_store_ctx *ctx, int64_t now, size_t max_types,
                            wf_store_counts *out, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    for (size_t i = 0; i < m->tasks.n; i++) {
        const wf_task_row *t = m->tasks.v[i].row;
        out->tasks_open += t->status == WF_TASK_OPEN || t->status == WF_TASK_CLAIMED;
    }
    for (size_t i = 0; i < m->signals.n; i++) {
        const wf_signal_row *s = m->signals.v[i].row;
        out->signals_buffered += s->buffered && !s->discarded && s->expires_at > now;
    }
    for (size_t i = 0; i < m->deliveries.n; i++) {
        const wf_delivery_row *d = m->deliveries.v[i].row;
        out->deliveries_pending += d->state == WF_DELIVERY_PENDING;
    }
    void **v = NULL;
    size_t n = 0;
    rc = wf_store_mem__gather(m, &m->jobs, NULL, job_ready, &now, cmp_job_type, SIZE_MAX, &v, &n,
                              err);
    if (rc == WF_OK) {
        out->jobs = wf_arena_calloc(ctx->arena, n + 1, sizeof *out->jobs);
        if (out->jobs == NULL)
            rc = wf_error_nomem(err);
        for (size_t i = 0; rc == WF_OK && i < n; i++) {
            const char *type = ((const wf_job_row *)v[i])->job_type;
            if (out->n_jobs == 0 || strcmp(out->jobs[out->n_jobs - 1].job_type, type) != 0) {
                if (out->n_jobs == max_types)
                    break;
                out->jobs[out->n_jobs].job_type = wf_arena_strdup(ctx->arena, type);
                if (out->jobs[out->n_jobs].job_type == NULL) {
                    rc = wf_error_nomem(err);
                    break;
                }
                out->n_jobs++;
            }
            out->jobs[out->n_jobs - 1].count++;
        }
        free(v);
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}
