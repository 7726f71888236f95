/*
 * mem/tx.c: the memory store's unit of work: begin, lock_root, apply,
 * commit and rollback, idempotency records, definitions and signal
 * consumption (mem/store.c explains the design).
 */
#include "mem/mem_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wf_time.h"

/* ---- unit of work ------------------------------------------------------- */

wf_code
wf_store_mem__begin(wf_store *st, const wf_store_ctx *ctx, wf_tx **out, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    mem_tx *tx = calloc(1, sizeof *tx);
    if (tx == NULL)
        return wf_error_nomem(err);
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK) {
        free(tx);
        return rc;
    }
    if (m->tx != NULL) {
        /* The mutex is recursive: only this thread can be here. */
        pthread_mutex_unlock(&m->mu);
        free(tx);
        return wf_error_set(err, WF_E_INTERNAL, "cannot begin a transaction inside another");
    }
    tx->base.st = st;
    tx->base.ctx = *ctx;
    tx->ev_mark = m->n_events;
    tx->seq_mark = m->last_seq;
    m->tx = tx;
    *out = &tx->base;
    return WF_OK;
}

/* Ends the transaction: rollback replays the undo log backwards. After a
 * commit the listener hears of it, outside the mutex (it may call back
 * into the store, and must never run under a store lock). */
static void
mem_end(mem_tx *tx, bool commit)
{
    mem_store *m = (mem_store *)tx->base.st;
    wf_store_mem__resume(&tx->base);
    for (size_t i = tx->n_undo; i-- > 0;) {
        mundo *u = &tx->undo[i];
        if (commit) {
            if (u->old != NULL)
                wf_store_mem__row_free(u->t->d, u->old);
        } else {
            void *cur = wf_store_mem__mt_take(u->t, u->key);
            if (cur != NULL)
                wf_store_mem__row_free(u->t->d, cur);
            if (u->old != NULL) {
                void *dummy;
                /* Cannot fail: the slot array only shrank since. */
                wf_store_mem__mt_put(u->t, u->key, u->old, &dummy);
                u->key = NULL;
            }
        }
        free(u->key);
    }
    if (!commit) {
        for (size_t i = tx->ev_mark; i < m->n_events; i++)
            wf_store__row_clear(&wf_store__event_desc, &m->events[i]);
        m->n_events = tx->ev_mark;
        m->last_seq = tx->seq_mark;
    }
    free(tx->undo);
    for (size_t i = 0; i < tx->n_roots; i++)
        free(tx->roots[i]);
    free(tx->roots);
    if (tx->n_roots > 0 && m->paused != NULL)
        pthread_cond_broadcast(&m->unheld);
    m->tx = NULL;
    wf_store_listen_fn fn = commit ? m->listen_fn : NULL;
    void *arg = m->listen_arg;
    pthread_mutex_unlock(&m->mu);
    if (fn != NULL && tx->wrote_events) {
        char *roots = wf_store__events_payload(tx->event_roots, tx->n_event_roots, tx->any_root);
        fn(arg, "wf_events", roots != NULL ? roots : "");
        free(roots);
    }
    for (size_t i = 0; i < tx->n_event_roots; i++)
        free((char *)tx->event_roots[i]);
    for (size_t i = 0; i < tx->n_job_types; i++) {
        if (fn != NULL)
            fn(arg, "wf_jobs", tx->job_types[i]);
        free(tx->job_types[i]);
    }
    free(tx->job_types);
    free(tx);
}

wf_code
wf_store_mem__commit(wf_tx *tx, wf_error *err)
{
    (void)err;
    mem_end((mem_tx *)tx, true);
    return WF_OK;
}

void
wf_store_mem__rollback(wf_tx *tx)
{
    mem_end((mem_tx *)tx, false);
}

/* ---- pauses (mem/store.c explains them) -------------------------------- */

bool
wf_store_mem__root_held(const mem_store *m, const char *root, const mem_tx *self)
{
    for (const mem_tx *p = m->paused; p != NULL; p = p->pnext)
        for (size_t i = 0; p != self && i < p->n_roots; i++)
            if (strcmp(p->roots[i], root) == 0)
                return true;
    return false;
}

/* Whether tx wrote anything other callers would see once it let go. */
static bool
has_written(const mem_tx *tx, const mem_store *m)
{
    return tx->n_undo > 0 || m->n_events != tx->ev_mark || tx->n_job_types > 0;
}

/* Lets the mutex go with tx's roots held (the caller holds the mutex once,
 * as tx). park, then unlock or wait on unheld; lock, then unpark. */
static void
park(mem_store *m, mem_tx *tx)
{
    tx->paused = true;
    tx->pnext = m->paused;
    m->paused = tx;
    m->tx = NULL;
}

static void
unpark(mem_store *m, mem_tx *tx)
{
    for (mem_tx **pp = &m->paused; *pp != NULL; pp = &(*pp)->pnext)
        if (*pp == tx) {
            *pp = tx->pnext;
            break;
        }
    tx->paused = false;
    tx->pnext = NULL;
    /* A transaction parks only before its first write, and others may have
     * committed events meanwhile: its rollback must keep theirs. */
    tx->ev_mark = m->n_events;
    tx->seq_mark = m->last_seq;
    m->tx = tx;
}

void
wf_store_mem__pause(wf_tx *t)
{
    mem_tx *tx = (mem_tx *)t;
    mem_store *m = (mem_store *)t->st;
    if (tx->paused || tx->serial || m->tx != tx || has_written(tx, m))
        return;
    park(m, tx);
    pthread_mutex_unlock(&m->mu);
}

void
wf_store_mem__resume(wf_tx *t)
{
    mem_tx *tx = (mem_tx *)t;
    mem_store *m = (mem_store *)t->st;
    if (!tx->paused)
        return;
    pthread_mutex_lock(&m->mu);
    unpark(m, tx);
}

/* Waits until no paused transaction holds root, as a Postgres row lock
 * wait does (at most until the call's deadline). A transaction that wrote
 * already, or holds a correlation lock, cannot let the mutex go: it gives
 * up with WF_E_CONFLICT (a batch then goes on without that root). */
static wf_code
wait_unheld(mem_store *m, mem_tx *tx, const char *root, wf_error *err)
{
    if (!wf_store_mem__root_held(m, root, tx))
        return WF_OK;
    if (tx->serial || has_written(tx, m))
        return wf_error_set(err, WF_E_CONFLICT, "instance \"%s\" is locked by another unit of work",
                            root);
    int64_t deadline = tx->base.ctx.deadline_ms;
    struct timespec until;
    if (deadline != 0)
        wf_store_mem__until(deadline, &until);
    park(m, tx);
    int r = 0;
    while (r == 0 && wf_store_mem__root_held(m, root, tx))
        r = deadline != 0 ? pthread_cond_timedwait(&m->unheld, &m->mu, &until)
                          : pthread_cond_wait(&m->unheld, &m->mu);
    unpark(m, tx);
    if (!wf_store_mem__root_held(m, root, tx))
        return WF_OK;
    return wf_error_set(err, WF_E_DEADLINE_EXCEEDED,
                        "deadline exceeded while waiting for instance \"%s\"", root);
}

/* Remembers that tx holds root until it ends. */
static wf_code
hold_root(mem_tx *tx, const char *root, wf_error *err)
{
    for (size_t i = 0; i < tx->n_roots; i++)
        if (strcmp(tx->roots[i], root) == 0)
            return WF_OK;
    if (tx->n_roots == tx->cap_roots) {
        size_t cap = tx->cap_roots ? tx->cap_roots * 2 : 2;
        char **v = realloc(tx->roots, cap * sizeof *v);
        if (v == NULL)
            return wf_error_nomem(err);
        tx->roots = v;
        tx->cap_roots = cap;
    }
    char *id = strdup(root);
    if (id == NULL)
        return wf_error_nomem(err);
    tx->roots[tx->n_roots++] = id;
    return WF_OK;
}

typedef struct root_arg {
    const char *root;
} root_arg;

#define ROOT_PRED(fn, T)                                                                           \
    static bool fn(mem_store *m, const void *row, const void *arg)                                 \
    {                                                                                              \
        (void)m;                                                                                   \
        return wf_store_mem__eq(((const T *)row)->root_id, ((const root_arg *)arg)->root);         \
    }
ROOT_PRED(in_root_instance, wf_instance_row)
ROOT_PRED(in_root_task, wf_task_row)
ROOT_PRED(in_root_token, wf_token_row)
/* Only live work items belong to the aggregate (store.h). */
static bool
in_root_work_item(mem_store *m, const void *row, const void *arg)
{
    (void)m;
    const wf_work_item_row *it = row;
    return wf_store_mem__eq(it->root_id, ((const root_arg *)arg)->root) &&
           (it->state == WF_WORK_ITEM_ENABLED || it->state == WF_WORK_ITEM_FIRED);
}
ROOT_PRED(in_root_job, wf_job_row)
ROOT_PRED(in_root_timer, wf_timer_row)
ROOT_PRED(in_root_sub, wf_subscription_row)

/* The root first, then by (created_at, id). */
static int
cmp_root_first(const void *a, const void *b)
{
    const wf_instance_row *x = *(const wf_instance_row *const *)a;
    const wf_instance_row *y = *(const wf_instance_row *const *)b;
    bool xr = x->parent_id == NULL, yr = y->parent_id == NULL;
    if (xr != yr)
        return xr ? -1 : 1;
    return wf_store_mem__cmp_instance(a, b);
}

/* root_hint is not needed: the instance names its root. */
wf_code
wf_store_mem__lock_root(wf_tx *t, const char *instance_id, const char *root_hint, wf_aggregate *out,
                        wf_error *err)
{
    (void)root_hint;
    mem_tx *tx = (mem_tx *)t;
    mem_store *m = (mem_store *)t->st;
    const char *tenant = t->ctx.tenant;
    wf_arena *a = t->ctx.arena;
    const wf_instance_row *inst;
    for (;;) {
        inst = wf_store_mem__mt_get(&m->insts, tenant, instance_id, NULL);
        if (inst == NULL)
            return wf_error_set(err, WF_E_INSTANCE_NOT_FOUND, "instance \"%s\" does not exist",
                                instance_id);
        if (!wf_store_mem__root_held(m, inst->root_id, tx))
            break;
        /* The wait lets the mutex go: look the instance up again after it. */
        wf_code rc = wait_unheld(m, tx, inst->root_id, err);
        if (rc != WF_OK)
            return rc;
    }
    root_arg r = {inst->root_id};
    wf_aggregate g = {0};
    wf_code rc = hold_root(tx, inst->root_id, err);
    if (rc == WF_OK)
        rc = wf_store_mem__select_rows(m, &m->insts, tenant, in_root_instance, &r, cmp_root_first,
                                       SIZE_MAX, a, &g.instances, &g.n_instances, err);
    if (rc == WF_OK)
        rc = wf_store_mem__select_rows(m, &m->tasks, tenant, in_root_task, &r,
                                       wf_store_mem__cmp_task, SIZE_MAX, a, &g.tasks, &g.n_tasks,
                                       err);
    if (rc == WF_OK)
        rc = wf_store_mem__select_rows(m, &m->tokens, tenant, in_root_token, &r,
                                       wf_store_mem__cmp_token, SIZE_MAX, a, &g.tokens, &g.n_tokens,
                                       err);
    if (rc == WF_OK)
        rc = wf_store_mem__select_rows(m, &m->work_items, tenant, in_root_work_item, &r,
                                       wf_store_mem__cmp_work_item, SIZE_MAX, a, &g.work_items,
                                       &g.n_work_items, err);
    if (rc == WF_OK)
        rc = wf_store_mem__select_rows(m, &m->jobs, tenant, in_root_job, &r, wf_store_mem__cmp_job,
                                       SIZE_MAX, a, &g.jobs, &g.n_jobs, err);
    if (rc == WF_OK)
        rc = wf_store_mem__select_rows(m, &m->timers, tenant, in_root_timer, &r,
                                       wf_store_mem__cmp_timer, SIZE_MAX, a, &g.timers, &g.n_timers,
                                       err);
    if (rc == WF_OK)
        rc = wf_store_mem__select_rows(m, &m->subs, tenant, in_root_sub, &r, wf_store_mem__cmp_sub,
                                       SIZE_MAX, a, &g.subscriptions, &g.n_subscriptions, err);
    if (rc == WF_OK)
        *out = g;
    return rc;
}

static wf_code
put_signal(mem_tx *tx, mem_store *m, const wf_signal_row *s, wf_error *err)
{
    /* signal_id is unique among the rows that are not DUPLICATE (as the
     * partial index signals_dedupe on Postgres). */
    if (s->signal_id != NULL && s->signal_id[0] != '\0' && s->outcome != WF_SIGNAL_DUPLICATE) {
        size_t lo, hi;
        wf_store_mem__mt_tenant_range(&m->signals, tx->base.ctx.tenant, &lo, &hi);
        for (size_t i = lo; i < hi; i++) {
            const wf_signal_row *o = m->signals.v[i].row;
            if (wf_store_mem__eq(o->signal_id, s->signal_id) && !wf_store_mem__eq(o->id, s->id) &&
                o->outcome != WF_SIGNAL_DUPLICATE)
                return wf_error_set(err, WF_E_CONFLICT, "signal \"%s\" was already received",
                                    s->signal_id);
        }
    }
    return wf_store_mem__tx_put(tx, &m->signals, s, s->id, NULL, err);
}

static wf_code
put_instance(mem_tx *tx, mem_store *m, const wf_instance_row *in, wf_error *err)
{
    const wf_instance_row *cur = wf_store_mem__mt_get(&m->insts, tx->base.ctx.tenant, in->id, NULL);
    if ((cur == NULL && in->version != 0) || (cur != NULL && cur->version != in->version))
        return wf_error_set(err, WF_E_CONFLICT, "instance \"%s\" was changed concurrently", in->id);
    wf_instance_row copy = *in;
    copy.version = in->version + 1;
    return wf_store_mem__tx_put(tx, &m->insts, &copy, in->id, NULL, err);
}

static bool
same_str(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || wf_store_mem__eq(a, b);
}

/* Remembers that tx makes job j activatable, when it does: j is
 * ACTIVATABLE and is new, or was not ACTIVATABLE, or had another
 * activatable_at or type (the rule of the Postgres job upsert). */
static wf_code
note_job(mem_tx *tx, mem_store *m, const wf_job_row *j, wf_error *err)
{
    if (j->state != WF_JOB_ACTIVATABLE || j->job_type == NULL)
        return WF_OK;
    const wf_job_row *old = wf_store_mem__mt_get(&m->jobs, tx->base.ctx.tenant, j->id, NULL);
    if (old != NULL && old->state == j->state && old->activatable_at == j->activatable_at &&
        same_str(old->job_type, j->job_type))
        return WF_OK;
    for (size_t i = 0; i < tx->n_job_types; i++)
        if (strcmp(tx->job_types[i], j->job_type) == 0)
            return WF_OK;
    if (tx->n_job_types == tx->cap_job_types) {
        size_t cap = tx->cap_job_types ? tx->cap_job_types * 2 : 4;
        char **v = realloc(tx->job_types, cap * sizeof *v);
        if (v == NULL)
            return wf_error_nomem(err);
        tx->job_types = v;
        tx->cap_job_types = cap;
    }
    char *type = strdup(j->job_type);
    if (type == NULL)
        return wf_error_nomem(err);
    tx->job_types[tx->n_job_types++] = type;
    return WF_OK;
}

static wf_code
append_event(mem_store *m, const wf_event_row *e, const char *tenant, wf_error *err)
{
    if (m->n_events == m->cap_events) {
        size_t cap = m->cap_events ? m->cap_events * 2 : 256;
        wf_event_row *v = realloc(m->events, cap * sizeof *v);
        if (v == NULL)
            return wf_error_nomem(err);
        m->events = v;
        m->cap_events = cap;
    }
    wf_event_row *dst = &m->events[m->n_events];
    if (!wf_store__row_copy(&wf_store__event_desc, dst, e, NULL, tenant)) {
        wf_store__row_clear(&wf_store__event_desc, dst);
        return wf_error_nomem(err);
    }
    dst->sequence = ++m->last_seq;
    m->n_events++;
    return WF_OK;
}

wf_code
wf_store_mem__apply(wf_tx *t, const wf_store_changes *c, wf_error *err)
{
    mem_tx *tx = (mem_tx *)t;
    mem_store *m = (mem_store *)t->st;
    wf_code rc = WF_OK;
    for (size_t i = 0; rc == WF_OK && i < c->n_instances; i++)
        rc = put_instance(tx, m, &c->instances[i], err);
    for (size_t i = 0; rc == WF_OK && i < c->n_tasks; i++)
        rc = wf_store_mem__tx_put(tx, &m->tasks, &c->tasks[i], c->tasks[i].id, NULL, err);
    for (size_t i = 0; rc == WF_OK && i < c->n_tokens; i++)
        rc = wf_store_mem__tx_put(tx, &m->tokens, &c->tokens[i], c->tokens[i].id, NULL, err);
    for (size_t i = 0; rc == WF_OK && i < c->n_work_items; i++)
        rc = wf_store_mem__tx_put(tx, &m->work_items, &c->work_items[i], c->work_items[i].id, NULL,
                                  err);
    for (size_t i = 0; rc == WF_OK && i < c->n_jobs; i++) {
        rc = note_job(tx, m, &c->jobs[i], err);
        if (rc == WF_OK)
            rc = wf_store_mem__tx_put(tx, &m->jobs, &c->jobs[i], c->jobs[i].id, NULL, err);
    }
    for (size_t i = 0; rc == WF_OK && i < c->n_timers; i++)
        rc = wf_store_mem__tx_put(tx, &m->timers, &c->timers[i], c->timers[i].id, NULL, err);
    for (size_t i = 0; rc == WF_OK && i < c->n_subscriptions; i++)
        rc = wf_store_mem__tx_put(tx, &m->subs, &c->subscriptions[i], c->subscriptions[i].id, NULL,
                                  err);
    for (size_t i = 0; rc == WF_OK && i < c->n_signals; i++)
        rc = put_signal(tx, m, &c->signals[i], err);
    for (size_t i = 0; rc == WF_OK && i < c->n_del_tokens; i++)
        rc = wf_store_mem__tx_del(tx, &m->tokens, c->del_tokens[i], err);
    for (size_t i = 0; rc == WF_OK && i < c->n_del_jobs; i++)
        rc = wf_store_mem__tx_del(tx, &m->jobs, c->del_jobs[i], err);
    for (size_t i = 0; rc == WF_OK && i < c->n_del_timers; i++)
        rc = wf_store_mem__tx_del(tx, &m->timers, c->del_timers[i], err);
    for (size_t i = 0; rc == WF_OK && i < c->n_del_subscriptions; i++)
        rc = wf_store_mem__tx_del(tx, &m->subs, c->del_subscriptions[i], err);
    for (size_t i = 0; rc == WF_OK && i < c->n_events; i++) {
        rc = append_event(m, &c->events[i], t->ctx.tenant, err);
        if (!wf_store__set_add(tx->event_roots, &tx->n_event_roots, WF_STORE_EVENT_ROOTS,
                               c->events[i].root_id, true))
            tx->any_root = true;
    }
    if (c->n_events > 0)
        tx->wrote_events = true;
    return rc;
}

wf_code
wf_store_mem__idem_get(wf_tx *t, const char *method, const char *request_id,
                       wf_idempotency_row *out, bool *found, wf_error *err)
{
    mem_store *m = (mem_store *)t->st;
    const wf_idempotency_row *r = wf_store_mem__mt_get(&m->idem, t->ctx.tenant, method, request_id);
    *found = r != NULL;
    if (r != NULL && !wf_store__row_copy(&wf_store__idempotency_desc, out, r, t->ctx.arena, NULL))
        return wf_error_nomem(err);
    return WF_OK;
}

wf_code
wf_store_mem__idem_put(wf_tx *t, const wf_idempotency_row *in, wf_error *err)
{
    mem_store *m = (mem_store *)t->st;
    if (wf_store_mem__mt_get(&m->idem, t->ctx.tenant, in->method, in->request_id) != NULL)
        return wf_error_set(err, WF_E_CONFLICT, "request \"%s\" was already recorded",
                            in->request_id);
    return wf_store_mem__tx_put((mem_tx *)t, &m->idem, in, in->method, in->request_id, err);
}

/* A record of the same request (same hash) replaced, or a new one; one
 * of another request is left as it is. */
wf_code
wf_store_mem__idem_amend(wf_tx *t, const wf_idempotency_row *in, wf_error *err)
{
    mem_store *m = (mem_store *)t->st;
    const wf_idempotency_row *r =
        wf_store_mem__mt_get(&m->idem, t->ctx.tenant, in->method, in->request_id);
    if (r != NULL && (r->request_hash == NULL || in->request_hash == NULL ||
                      strcmp(r->request_hash, in->request_hash) != 0))
        return WF_OK;
    return wf_store_mem__tx_put((mem_tx *)t, &m->idem, in, in->method, in->request_id, err);
}

/* The definition of key at version (0 = latest) in tenant, or NULL. */
const wf_definition_row *
wf_store_mem__find_definition(mem_store *m, const char *tenant, const char *key, int32_t version)
{
    size_t lo, hi;
    const wf_definition_row *best = NULL;
    wf_store_mem__mt_tenant_range(&m->defs, tenant, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        const wf_definition_row *d = m->defs.v[i].row;
        if (!wf_store_mem__eq(d->key, key) || (version != 0 && d->version != version))
            continue;
        if (best == NULL || d->version > best->version)
            best = d;
    }
    return best;
}

wf_code
wf_store_mem__put_definition(wf_tx *t, const wf_definition_row *in, int32_t *version, wf_error *err)
{
    mem_store *m = (mem_store *)t->st;
    const wf_definition_row *latest = wf_store_mem__find_definition(m, t->ctx.tenant, in->key, 0);
    if (latest != NULL && latest->kind != in->kind)
        return wf_error_set(err, WF_E_DEFINITION_KIND_CONFLICT,
                            "definition \"%s\" has versions of another kind", in->key);
    wf_definition_row copy = *in;
    copy.version = latest != NULL ? latest->version + 1 : 1;
    char vbuf[16];
    snprintf(vbuf, sizeof vbuf, "%010d", (int)copy.version);
    wf_code rc = wf_store_mem__tx_put((mem_tx *)t, &m->defs, &copy, in->key, vbuf, err);
    if (rc == WF_OK)
        *version = copy.version;
    return rc;
}

wf_code
wf_store_mem__read_definition(mem_store *m, const wf_store_ctx *ctx, const char *key,
                              int32_t version, wf_definition_row *out, bool *found, wf_error *err)
{
    const wf_definition_row *d = wf_store_mem__find_definition(m, ctx->tenant, key, version);
    *found = d != NULL;
    if (d != NULL && !wf_store__row_copy(&wf_store__definition_desc, out, d, ctx->arena, NULL))
        return wf_error_nomem(err);
    return WF_OK;
}

wf_code
wf_store_mem__tx_get_definition(wf_tx *t, const char *key, int32_t version, wf_definition_row *out,
                                bool *found, wf_error *err)
{
    return wf_store_mem__read_definition((mem_store *)t->st, &t->ctx, key, version, out, found,
                                         err);
}

static bool
buffered_match(mem_store *m, const void *row, const void *arg)
{
    (void)m;
    const wf_signal_row *s = row;
    const signal_match *q = arg;
    return s->buffered && !s->discarded && s->expires_at > q->now &&
           wf_store_mem__eq(s->name, q->name) &&
           (wf_store_mem__eq(s->instance_id, q->instance_id) ||
            (wf_store_mem__eq(s->aggregate_type, q->agg_type) &&
             wf_store_mem__eq(s->aggregate_id, q->agg_id)));
}

wf_code
wf_store_mem__consume_signal(wf_tx *t, const char *name, const char *instance_id,
                             const char *agg_type, const char *agg_id, const char *consumer,
                             const char *transition_id, int64_t now, wf_signal_row *out,
                             bool *found, wf_error *err)
{
    mem_store *m = (mem_store *)t->st;
    signal_match q = {name, instance_id, agg_type, agg_id, now};
    void **v = NULL;
    size_t n = 0;
    wf_code rc = wf_store_mem__gather(m, &m->signals, t->ctx.tenant, buffered_match, &q,
                                      wf_store_mem__cmp_signal, 1, &v, &n, err);
    if (rc != WF_OK)
        return rc;
    *found = n > 0;
    if (n > 0) {
        wf_signal_row s = *(const wf_signal_row *)v[0];
        s.buffered = false;
        s.consumed_at = now;
        s.consumed_by_instance = (char *)consumer;
        s.transition_id = (char *)transition_id;
        /* Copy out before the write replaces (and may free) v[0]. */
        if (!wf_store__row_copy(&wf_store__signal_desc, out, &s, t->ctx.arena, NULL))
            rc = wf_error_nomem(err);
        if (rc == WF_OK)
            rc = wf_store_mem__tx_put((mem_tx *)t, &m->signals, &s, s.id, NULL, err);
    }
    free(v);
    return rc;
}
