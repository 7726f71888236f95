/*
 * store_memory.c: the in-memory store, for development and tests.
 *
 * DESIGN. One recursive mutex guards everything. A unit of work holds it
 * from wf_store_begin to commit/rollback, so transactions are serial: that
 * is the simplest correct stand-in for Postgres row locks (lock_root then
 * only has to read). Writes inside a transaction go straight into the
 * tables and push the previous row onto an undo log; rollback replays the
 * log backwards, commit drops it. Cross-instance calls (activation, timer
 * claims) take the mutex for their own duration.
 *
 * Events get their sequence at write time; since the unit of work holds
 * the mutex until it ends and a rollback gives the numbers back, sequence
 * order is commit order with no gaps, as on Postgres. Wake-ups: a unit of
 * work remembers whether it wrote events and which job types it made
 * activatable (the same rule as the Postgres triggers) and calls the
 * listener after commit, once the mutex is released.
 *
 * Each table is an array of (key, row) kept sorted by key, where the key
 * starts with the tenant, so one tenant's rows are contiguous. Rows are
 * deep-copied in (malloc) and out (into the caller's arena); nothing the
 * caller holds ever points into the store. Orderings and pagination follow
 * the same keys as the Postgres queries.
 *
 * Must not: be used in production (no durability), or be cleverer than
 * the contract requires.
 */
#include "store_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "wf_time.h"

typedef struct mslot {
    char *key;
    void *row;
} mslot;

typedef struct mtable {
    const wf_row_desc *d;
    mslot *v; /* sorted by key */
    size_t n, cap;
} mtable;

typedef struct mundo {
    mtable *t;
    char *key; /* owned copy */
    void *old; /* the row before the write; NULL when it did not exist */
} mundo;

typedef struct mem_tx {
    wf_tx base;
    mundo *undo;
    size_t n_undo, cap_undo;
    size_t ev_mark;    /* events before the transaction */
    int64_t seq_mark;  /* last sequence before the transaction */
    bool wrote_events; /* notify "wf_events" at commit */
    char **job_types;  /* distinct types made activatable: notify "wf_jobs" */
    size_t n_job_types, cap_job_types;
} mem_tx;

typedef struct mem_store {
    wf_store base;
    pthread_mutex_t mu;
    mem_tx *tx; /* the open transaction, if any */
    mtable defs, insts, tasks, tokens, work_items, jobs, timers, subs, signals, idem;
    wf_event_row *events; /* in sequence order */
    size_t n_events, cap_events;
    int64_t last_seq;
    wf_store_listen_fn listen_fn; /* set once by wf_store_set_listener; under mu */
    void *listen_arg;
} mem_store;

#define F(row, off) ((const char *)(row) + (off))

static bool
eq(const char *a, const char *b)
{
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}

static int
i64_cmp(int64_t a, int64_t b)
{
    return (a > b) - (a < b);
}

/* Takes the store mutex, waiting at most until the call's deadline, so a
 * long unit of work elsewhere gives DEADLINE_EXCEEDED as a Postgres row
 * lock wait would (statement_timeout), instead of a hang. */
static wf_code
mem_lock(mem_store *m, int64_t deadline_ms, wf_error *err)
{
    if (deadline_ms == 0) {
        pthread_mutex_lock(&m->mu);
        return WF_OK;
    }
    int64_t left = deadline_ms - wf_mono_ms();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (left < 0)
        left = 0;
    ts.tv_sec += left / 1000;
    ts.tv_nsec += (left % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    int r = pthread_mutex_timedlock(&m->mu, &ts);
    if (r == 0)
        return WF_OK;
    if (r == ETIMEDOUT)
        return wf_error_set(err, WF_E_DEADLINE_EXCEEDED,
                            "deadline exceeded while waiting for the store");
    return wf_error_set(err, WF_E_INTERNAL, "could not lock the store");
}

/* ---- tables ------------------------------------------------------------ */

/* Key "tenant\x1fa[\x1fb]": the separator sorts below printable text. */
static char *
make_key(const char *tenant, const char *a, const char *b)
{
    size_t n = strlen(tenant) + strlen(a) + (b != NULL ? strlen(b) + 1 : 0) + 2;
    char *k = malloc(n);
    if (k != NULL)
        snprintf(k, n, "%s\x1f%s%s%s", tenant, a, b != NULL ? "\x1f" : "", b != NULL ? b : "");
    return k;
}

/* Index of the first slot with key >= key; *found when equal. */
static size_t
mt_find(const mtable *t, const char *key, bool *found)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(t->v[mid].key, key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < t->n && strcmp(t->v[lo].key, key) == 0;
    return lo;
}

static void *
mt_get(const mtable *t, const char *tenant, const char *a, const char *b)
{
    char *key = make_key(tenant, a, b);
    bool found = false;
    size_t i = key != NULL ? mt_find(t, key, &found) : 0;
    free(key);
    return found ? t->v[i].row : NULL;
}

static void
row_free(const wf_row_desc *d, void *row)
{
    wf_store__row_clear(d, row);
    free(row);
}

/* A malloc'd deep copy of src with tenant forced; NULL when out of memory. */
static void *
row_new(const wf_row_desc *d, const void *src, const char *tenant)
{
    void *row = malloc(d->size);
    if (row == NULL)
        return NULL;
    if (!wf_store__row_copy(d, row, src, NULL, tenant)) {
        row_free(d, row);
        return NULL;
    }
    return row;
}

/* Puts row under key (taking ownership of both), returning the row it
 * replaced (or NULL) through *old. False when out of memory (nothing is
 * taken then). */
static bool
mt_put(mtable *t, char *key, void *row, void **old)
{
    bool found;
    size_t i = mt_find(t, key, &found);
    if (found) {
        *old = t->v[i].row;
        t->v[i].row = row;
        free(key);
        return true;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        mslot *v = realloc(t->v, cap * sizeof *v);
        if (v == NULL)
            return false;
        t->v = v;
        t->cap = cap;
    }
    memmove(&t->v[i + 1], &t->v[i], (t->n - i) * sizeof *t->v);
    t->v[i] = (mslot){key, row};
    t->n++;
    *old = NULL;
    return true;
}

/* Removes key and returns its row (NULL when absent). */
static void *
mt_take(mtable *t, const char *key)
{
    bool found;
    size_t i = mt_find(t, key, &found);
    if (!found)
        return NULL;
    void *row = t->v[i].row;
    free(t->v[i].key);
    memmove(&t->v[i], &t->v[i + 1], (t->n - i - 1) * sizeof *t->v);
    t->n--;
    return row;
}

static void
mt_clear(mtable *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->v[i].key);
        row_free(t->d, t->v[i].row);
    }
    free(t->v);
    t->v = NULL;
    t->n = t->cap = 0;
}

/* The slot range [*lo, *hi) holding tenant's rows (all rows when NULL). */
static void
mt_tenant_range(const mtable *t, const char *tenant, size_t *lo, size_t *hi)
{
    if (tenant == NULL) {
        *lo = 0;
        *hi = t->n;
        return;
    }
    size_t n = strlen(tenant);
    char prefix[n + 2], next[n + 2];
    snprintf(prefix, sizeof prefix, "%s\x1f", tenant);
    snprintf(next, sizeof next, "%s\x20", tenant); /* first key past the prefix */
    bool found;
    *lo = mt_find(t, prefix, &found);
    *hi = mt_find(t, next, &found);
}

/* ---- transactional writes ------------------------------------------------ */

static bool
undo_push(mem_tx *tx, mtable *t, const char *key, void *old)
{
    if (tx->n_undo == tx->cap_undo) {
        size_t cap = tx->cap_undo ? tx->cap_undo * 2 : 32;
        mundo *u = realloc(tx->undo, cap * sizeof *u);
        if (u == NULL)
            return false;
        tx->undo = u;
        tx->cap_undo = cap;
    }
    char *k = strdup(key);
    if (k == NULL)
        return false;
    tx->undo[tx->n_undo++] = (mundo){t, k, old};
    return true;
}

/* Upserts a copy of src under (tenant, id[, b]) inside tx. */
static wf_code
tx_put(mem_tx *tx, mtable *t, const void *src, const char *id, const char *b, wf_error *err)
{
    const char *tenant = tx->base.ctx.tenant;
    char *key = make_key(tenant, id, b);
    void *row = key != NULL ? row_new(t->d, src, tenant) : NULL;
    void *old = NULL;
    /* Reserve the undo entry first so a failure leaves the table as it was. */
    if (row == NULL || !undo_push(tx, t, key, NULL)) {
        free(key);
        if (row != NULL)
            row_free(t->d, row);
        return wf_store__nomem(err);
    }
    if (!mt_put(t, key, row, &old)) {
        free(tx->undo[--tx->n_undo].key);
        free(key);
        row_free(t->d, row);
        return wf_store__nomem(err);
    }
    tx->undo[tx->n_undo - 1].old = old;
    return WF_OK;
}

static wf_code
tx_del(mem_tx *tx, mtable *t, const char *id, wf_error *err)
{
    char *key = make_key(tx->base.ctx.tenant, id, NULL);
    if (key == NULL)
        return wf_store__nomem(err);
    bool found;
    mt_find(t, key, &found);
    if (found && !undo_push(tx, t, key, NULL)) {
        free(key);
        return wf_store__nomem(err);
    }
    if (found)
        tx->undo[tx->n_undo - 1].old = mt_take(t, key);
    free(key);
    return WF_OK;
}

/* ---- selection: filter, order, copy out --------------------------------- */

typedef bool (*mpred)(mem_store *m, const void *row, const void *arg);
typedef int (*mcmp)(const void *a, const void *b); /* on (const void *const *) */

/* Collects pointers to the matching stored rows of tenant (all tenants
 * when NULL), sorted by cmp and cut to limit. *out is malloc'd. */
static wf_code
gather(mem_store *m, mtable *t, const char *tenant, mpred pred, const void *arg, mcmp cmp,
       size_t limit, void ***out, size_t *n, wf_error *err)
{
    size_t lo, hi, k = 0;
    mt_tenant_range(t, tenant, &lo, &hi);
    void **v = malloc((hi - lo + 1) * sizeof *v);
    if (v == NULL)
        return wf_store__nomem(err);
    for (size_t i = lo; i < hi; i++)
        if (pred == NULL || pred(m, t->v[i].row, arg))
            v[k++] = t->v[i].row;
    if (cmp != NULL)
        qsort(v, k, sizeof *v, cmp);
    *out = v;
    *n = k < limit ? k : limit;
    return WF_OK;
}

/* Copies n stored rows into one arena array. */
static wf_code
copy_out(const wf_row_desc *d, void *const *src, size_t n, wf_arena *a, void **rows, wf_error *err)
{
    char *dst = wf_arena_calloc(a, n > 0 ? n : 1, d->size);
    if (dst == NULL)
        return wf_store__nomem(err);
    for (size_t i = 0; i < n; i++)
        if (!wf_store__row_copy(d, dst + i * d->size, src[i], a, NULL))
            return wf_store__nomem(err);
    *rows = dst;
    return WF_OK;
}

static wf_code
select_rows(mem_store *m, mtable *t, const char *tenant, mpred pred, const void *arg, mcmp cmp,
            size_t limit, wf_arena *a, void *rows, size_t *n, wf_error *err)
{
    void **v = NULL;
    size_t k = 0;
    wf_code rc = gather(m, t, tenant, pred, arg, cmp, limit, &v, &k, err);
    if (rc != WF_OK)
        return rc;
    rc = copy_out(t->d, v, k, a, (void **)rows, err);
    free(v);
    if (rc == WF_OK)
        *n = k;
    return rc;
}

/* Comparators on (number, id) keys, matching the ORDER BY of store_pg.c. */
#define CMP_NUM_ID(fn, T, num)                                                                     \
    static int fn(const void *a, const void *b)                                                    \
    {                                                                                              \
        const T *x = *(const T *const *)a, *y = *(const T *const *)b;                              \
        int c = i64_cmp(x->num, y->num);                                                           \
        return c != 0 ? c : strcmp(x->id, y->id);                                                  \
    }
CMP_NUM_ID(cmp_instance, wf_instance_row, created_at)
CMP_NUM_ID(cmp_task, wf_task_row, created_at)
CMP_NUM_ID(cmp_token, wf_token_row, created_seq)
CMP_NUM_ID(cmp_work_item, wf_work_item_row, enabled_at)
CMP_NUM_ID(cmp_job, wf_job_row, created_at)
CMP_NUM_ID(cmp_job_activation, wf_job_row, activatable_at)
CMP_NUM_ID(cmp_timer, wf_timer_row, due_at)
CMP_NUM_ID(cmp_sub, wf_subscription_row, created_at)
CMP_NUM_ID(cmp_signal, wf_signal_row, received_at)

static int
cmp_definition(const void *a, const void *b)
{
    const wf_definition_row *x = *(const wf_definition_row *const *)a;
    const wf_definition_row *y = *(const wf_definition_row *const *)b;
    int c = strcmp(x->key, y->key);
    return c != 0 ? c : i64_cmp(x->version, y->version);
}

/* Keyset position: rows strictly after (num, str) in (num, id) order. */
typedef struct keyset {
    bool has;
    int64_t num;
    const char *str;
} keyset;

static bool
after(const keyset *k, int64_t num, const char *id)
{
    if (!k->has)
        return true;
    return num > k->num || (num == k->num && strcmp(id, k->str) > 0);
}

/* ---- store lifecycle ---------------------------------------------------- */

static void
mem_destroy(wf_store *st)
{
    mem_store *m = (mem_store *)st;
    mtable *all[] = {&m->defs, &m->insts,  &m->tasks, &m->tokens,  &m->work_items,
                     &m->jobs, &m->timers, &m->subs,  &m->signals, &m->idem};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mt_clear(all[i]);
    for (size_t i = 0; i < m->n_events; i++)
        wf_store__row_clear(&wf_store__event_desc, &m->events[i]);
    free(m->events);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

static bool
mem_ready(wf_store *st)
{
    (void)st;
    return true;
}

static void
mem_stats(wf_store *st, wf_store_stats *out)
{
    (void)st;
    (void)out;
}

/* ---- unit of work ------------------------------------------------------- */

static wf_code
mem_begin(wf_store *st, const wf_store_ctx *ctx, wf_tx **out, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    mem_tx *tx = calloc(1, sizeof *tx);
    if (tx == NULL)
        return wf_store__nomem(err);
    wf_code rc = mem_lock(m, ctx->deadline_ms, err);
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
    for (size_t i = tx->n_undo; i-- > 0;) {
        mundo *u = &tx->undo[i];
        if (commit) {
            if (u->old != NULL)
                row_free(u->t->d, u->old);
        } else {
            void *cur = mt_take(u->t, u->key);
            if (cur != NULL)
                row_free(u->t->d, cur);
            if (u->old != NULL) {
                void *dummy;
                /* Cannot fail: the slot array only shrank since. */
                mt_put(u->t, u->key, u->old, &dummy);
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
    m->tx = NULL;
    wf_store_listen_fn fn = commit ? m->listen_fn : NULL;
    void *arg = m->listen_arg;
    pthread_mutex_unlock(&m->mu);
    if (fn != NULL && tx->wrote_events)
        fn(arg, "wf_events", "");
    for (size_t i = 0; i < tx->n_job_types; i++) {
        if (fn != NULL)
            fn(arg, "wf_jobs", tx->job_types[i]);
        free(tx->job_types[i]);
    }
    free(tx->job_types);
    free(tx);
}

static wf_code
mem_commit(wf_tx *tx, wf_error *err)
{
    (void)err;
    mem_end((mem_tx *)tx, true);
    return WF_OK;
}

static void
mem_rollback(wf_tx *tx)
{
    mem_end((mem_tx *)tx, false);
}

typedef struct root_arg {
    const char *root;
} root_arg;

#define ROOT_PRED(fn, T)                                                                           \
    static bool fn(mem_store *m, const void *row, const void *arg)                                 \
    {                                                                                              \
        (void)m;                                                                                   \
        return eq(((const T *)row)->root_id, ((const root_arg *)arg)->root);                       \
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
    return eq(it->root_id, ((const root_arg *)arg)->root) &&
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
    return cmp_instance(a, b);
}

/* root_hint is not needed: the instance names its root. */
static wf_code
mem_lock_root(wf_tx *t, const char *instance_id, const char *root_hint, wf_aggregate *out,
              wf_error *err)
{
    (void)root_hint;
    mem_store *m = (mem_store *)t->st;
    const char *tenant = t->ctx.tenant;
    wf_arena *a = t->ctx.arena;
    const wf_instance_row *inst = mt_get(&m->insts, tenant, instance_id, NULL);
    if (inst == NULL)
        return wf_error_set(err, WF_E_INSTANCE_NOT_FOUND, "instance \"%s\" does not exist",
                            instance_id);
    root_arg r = {inst->root_id};
    wf_aggregate g = {0};
    wf_code rc = select_rows(m, &m->insts, tenant, in_root_instance, &r, cmp_root_first, SIZE_MAX,
                             a, &g.instances, &g.n_instances, err);
    if (rc == WF_OK)
        rc = select_rows(m, &m->tasks, tenant, in_root_task, &r, cmp_task, SIZE_MAX, a, &g.tasks,
                         &g.n_tasks, err);
    if (rc == WF_OK)
        rc = select_rows(m, &m->tokens, tenant, in_root_token, &r, cmp_token, SIZE_MAX, a,
                         &g.tokens, &g.n_tokens, err);
    if (rc == WF_OK)
        rc = select_rows(m, &m->work_items, tenant, in_root_work_item, &r, cmp_work_item, SIZE_MAX,
                         a, &g.work_items, &g.n_work_items, err);
    if (rc == WF_OK)
        rc = select_rows(m, &m->jobs, tenant, in_root_job, &r, cmp_job, SIZE_MAX, a, &g.jobs,
                         &g.n_jobs, err);
    if (rc == WF_OK)
        rc = select_rows(m, &m->timers, tenant, in_root_timer, &r, cmp_timer, SIZE_MAX, a,
                         &g.timers, &g.n_timers, err);
    if (rc == WF_OK)
        rc = select_rows(m, &m->subs, tenant, in_root_sub, &r, cmp_sub, SIZE_MAX, a,
                         &g.subscriptions, &g.n_subscriptions, err);
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
        mt_tenant_range(&m->signals, tx->base.ctx.tenant, &lo, &hi);
        for (size_t i = lo; i < hi; i++) {
            const wf_signal_row *o = m->signals.v[i].row;
            if (eq(o->signal_id, s->signal_id) && !eq(o->id, s->id) &&
                o->outcome != WF_SIGNAL_DUPLICATE)
                return wf_error_set(err, WF_E_CONFLICT, "signal \"%s\" was already received",
                                    s->signal_id);
        }
    }
    return tx_put(tx, &m->signals, s, s->id, NULL, err);
}

static wf_code
put_instance(mem_tx *tx, mem_store *m, const wf_instance_row *in, wf_error *err)
{
    const wf_instance_row *cur = mt_get(&m->insts, tx->base.ctx.tenant, in->id, NULL);
    if ((cur == NULL && in->version != 0) || (cur != NULL && cur->version != in->version))
        return wf_error_set(err, WF_E_CONFLICT, "instance \"%s\" was changed concurrently", in->id);
    wf_instance_row copy = *in;
    copy.version = in->version + 1;
    return tx_put(tx, &m->insts, &copy, in->id, NULL, err);
}

static bool
same_str(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || eq(a, b);
}

/* Remembers that tx makes job j activatable, when it does: j is
 * ACTIVATABLE and is new, or was not ACTIVATABLE, or had another
 * activatable_at or type (the rule of the Postgres job upsert). */
static wf_code
note_job(mem_tx *tx, mem_store *m, const wf_job_row *j, wf_error *err)
{
    if (j->state != WF_JOB_ACTIVATABLE || j->job_type == NULL)
        return WF_OK;
    const wf_job_row *old = mt_get(&m->jobs, tx->base.ctx.tenant, j->id, NULL);
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
            return wf_store__nomem(err);
        tx->job_types = v;
        tx->cap_job_types = cap;
    }
    char *type = strdup(j->job_type);
    if (type == NULL)
        return wf_store__nomem(err);
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
            return wf_store__nomem(err);
        m->events = v;
        m->cap_events = cap;
    }
    wf_event_row *dst = &m->events[m->n_events];
    if (!wf_store__row_copy(&wf_store__event_desc, dst, e, NULL, tenant)) {
        wf_store__row_clear(&wf_store__event_desc, dst);
        return wf_store__nomem(err);
    }
    dst->sequence = ++m->last_seq;
    m->n_events++;
    return WF_OK;
}

static wf_code
mem_apply(wf_tx *t, const wf_store_changes *c, wf_error *err)
{
    mem_tx *tx = (mem_tx *)t;
    mem_store *m = (mem_store *)t->st;
    wf_code rc = WF_OK;
    for (size_t i = 0; rc == WF_OK && i < c->n_instances; i++)
        rc = put_instance(tx, m, &c->instances[i], err);
    for (size_t i = 0; rc == WF_OK && i < c->n_tasks; i++)
        rc = tx_put(tx, &m->tasks, &c->tasks[i], c->tasks[i].id, NULL, err);
    for (size_t i = 0; rc == WF_OK && i < c->n_tokens; i++)
        rc = tx_put(tx, &m->tokens, &c->tokens[i], c->tokens[i].id, NULL, err);
    for (size_t i = 0; rc == WF_OK && i < c->n_work_items; i++)
        rc = tx_put(tx, &m->work_items, &c->work_items[i], c->work_items[i].id, NULL, err);
    for (size_t i = 0; rc == WF_OK && i < c->n_jobs; i++) {
        rc = note_job(tx, m, &c->jobs[i], err);
        if (rc == WF_OK)
            rc = tx_put(tx, &m->jobs, &c->jobs[i], c->jobs[i].id, NULL, err);
    }
    for (size_t i = 0; rc == WF_OK && i < c->n_timers; i++)
        rc = tx_put(tx, &m->timers, &c->timers[i], c->timers[i].id, NULL, err);
    for (size_t i = 0; rc == WF_OK && i < c->n_subscriptions; i++)
        rc = tx_put(tx, &m->subs, &c->subscriptions[i], c->subscriptions[i].id, NULL, err);
    for (size_t i = 0; rc == WF_OK && i < c->n_signals; i++)
        rc = put_signal(tx, m, &c->signals[i], err);
    for (size_t i = 0; rc == WF_OK && i < c->n_del_tokens; i++)
        rc = tx_del(tx, &m->tokens, c->del_tokens[i], err);
    for (size_t i = 0; rc == WF_OK && i < c->n_del_jobs; i++)
        rc = tx_del(tx, &m->jobs, c->del_jobs[i], err);
    for (size_t i = 0; rc == WF_OK && i < c->n_del_timers; i++)
        rc = tx_del(tx, &m->timers, c->del_timers[i], err);
    for (size_t i = 0; rc == WF_OK && i < c->n_del_subscriptions; i++)
        rc = tx_del(tx, &m->subs, c->del_subscriptions[i], err);
    for (size_t i = 0; rc == WF_OK && i < c->n_events; i++)
        rc = append_event(m, &c->events[i], t->ctx.tenant, err);
    if (c->n_events > 0)
        tx->wrote_events = true;
    return rc;
}

static wf_code
mem_idem_get(wf_tx *t, const char *method, const char *request_id, wf_idempotency_row *out,
             bool *found, wf_error *err)
{
    mem_store *m = (mem_store *)t->st;
    const wf_idempotency_row *r = mt_get(&m->idem, t->ctx.tenant, method, request_id);
    *found = r != NULL;
    if (r != NULL && !wf_store__row_copy(&wf_store__idempotency_desc, out, r, t->ctx.arena, NULL))
        return wf_store__nomem(err);
    return WF_OK;
}

static wf_code
mem_idem_put(wf_tx *t, const wf_idempotency_row *in, wf_error *err)
{
    mem_store *m = (mem_store *)t->st;
    if (mt_get(&m->idem, t->ctx.tenant, in->method, in->request_id) != NULL)
        return wf_error_set(err, WF_E_CONFLICT, "request \"%s\" was already recorded",
                            in->request_id);
    return tx_put((mem_tx *)t, &m->idem, in, in->method, in->request_id, err);
}

/* A record of the same request (same hash) replaced, or a new one; one
 * of another request is left as it is. */
static wf_code
mem_idem_amend(wf_tx *t, const wf_idempotency_row *in, wf_error *err)
{
    mem_store *m = (mem_store *)t->st;
    const wf_idempotency_row *r = mt_get(&m->idem, t->ctx.tenant, in->method, in->request_id);
    if (r != NULL && (r->request_hash == NULL || in->request_hash == NULL ||
                      strcmp(r->request_hash, in->request_hash) != 0))
        return WF_OK;
    return tx_put((mem_tx *)t, &m->idem, in, in->method, in->request_id, err);
}

/* The definition of key at version (0 = latest) in tenant, or NULL. */
static const wf_definition_row *
find_definition(mem_store *m, const char *tenant, const char *key, int32_t version)
{
    size_t lo, hi;
    const wf_definition_row *best = NULL;
    mt_tenant_range(&m->defs, tenant, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        const wf_definition_row *d = m->defs.v[i].row;
        if (!eq(d->key, key) || (version != 0 && d->version != version))
            continue;
        if (best == NULL || d->version > best->version)
            best = d;
    }
    return best;
}

static wf_code
mem_put_definition(wf_tx *t, const wf_definition_row *in, int32_t *version, wf_error *err)
{
    mem_store *m = (mem_store *)t->st;
    const wf_definition_row *latest = find_definition(m, t->ctx.tenant, in->key, 0);
    if (latest != NULL && latest->kind != in->kind)
        return wf_error_set(err, WF_E_DEFINITION_KIND_CONFLICT,
                            "definition \"%s\" has versions of another kind", in->key);
    wf_definition_row copy = *in;
    copy.version = latest != NULL ? latest->version + 1 : 1;
    char vbuf[16];
    snprintf(vbuf, sizeof vbuf, "%010d", (int)copy.version);
    wf_code rc = tx_put((mem_tx *)t, &m->defs, &copy, in->key, vbuf, err);
    if (rc == WF_OK)
        *version = copy.version;
    return rc;
}

static wf_code
get_definition(mem_store *m, const wf_store_ctx *ctx, const char *key, int32_t version,
               wf_definition_row *out, bool *found, wf_error *err)
{
    const wf_definition_row *d = find_definition(m, ctx->tenant, key, version);
    *found = d != NULL;
    if (d != NULL && !wf_store__row_copy(&wf_store__definition_desc, out, d, ctx->arena, NULL))
        return wf_store__nomem(err);
    return WF_OK;
}

static wf_code
mem_tx_get_definition(wf_tx *t, const char *key, int32_t version, wf_definition_row *out,
                      bool *found, wf_error *err)
{
    return get_definition((mem_store *)t->st, &t->ctx, key, version, out, found, err);
}

typedef struct signal_match {
    const char *name, *instance_id, *agg_type, *agg_id;
    int64_t now;
} signal_match;

static bool
buffered_match(mem_store *m, const void *row, const void *arg)
{
    (void)m;
    const wf_signal_row *s = row;
    const signal_match *q = arg;
    return s->buffered && !s->discarded && s->expires_at > q->now && eq(s->name, q->name) &&
           (eq(s->instance_id, q->instance_id) ||
            (eq(s->aggregate_type, q->agg_type) && eq(s->aggregate_id, q->agg_id)));
}

static wf_code
mem_consume_signal(wf_tx *t, const char *name, const char *instance_id, const char *agg_type,
                   const char *agg_id, const char *consumer, const char *transition_id, int64_t now,
                   wf_signal_row *out, bool *found, wf_error *err)
{
    mem_store *m = (mem_store *)t->st;
    signal_match q = {name, instance_id, agg_type, agg_id, now};
    void **v = NULL;
    size_t n = 0;
    wf_code rc =
        gather(m, &m->signals, t->ctx.tenant, buffered_match, &q, cmp_signal, 1, &v, &n, err);
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
            rc = wf_store__nomem(err);
        if (rc == WF_OK)
            rc = tx_put((mem_tx *)t, &m->signals, &s, s.id, NULL, err);
    }
    free(v);
    return rc;
}

/* ---- simple reads ------------------------------------------------------- */

static wf_code
mem_get_definition(wf_store *st, const wf_store_ctx *ctx, const char *key, int32_t version,
                   wf_definition_row *out, bool *found, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    wf_code rc = mem_lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = get_definition(m, ctx, key, version, out, found, err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* Copies the row stored under (tenant, id) of t, if any. */
static wf_code
get_by_id(mem_store *m, mtable *t, const wf_store_ctx *ctx, const char *id, void *out, bool *found,
          wf_error *err)
{
    wf_code rc = mem_lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    const void *row = mt_get(t, ctx->tenant, id, NULL);
    *found = row != NULL;
    if (row != NULL && !wf_store__row_copy(t->d, out, row, ctx->arena, NULL))
        rc = wf_store__nomem(err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static wf_code
mem_get_instance(wf_store *st, const wf_store_ctx *ctx, const char *id, wf_instance_row *out,
                 bool *found, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    return get_by_id(m, &m->insts, ctx, id, out, found, err);
}

static wf_code
mem_get_task(wf_store *st, const wf_store_ctx *ctx, const char *id, wf_task_row *out, bool *found,
             wf_error *err)
{
    mem_store *m = (mem_store *)st;
    return get_by_id(m, &m->tasks, ctx, id, out, found, err);
}

static bool
job_has_key(mem_store *m, const void *row, const void *arg)
{
    (void)m;
    return eq(((const wf_job_row *)row)->key, arg);
}

static wf_code
mem_get_job_by_key(wf_store *st, const wf_store_ctx *ctx, const char *key, wf_job_row *out,
                   bool *found, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    wf_job_row *rows = NULL;
    size_t n = 0;
    wf_code rc = mem_lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = select_rows(m, &m->jobs, ctx->tenant, job_has_key, key, NULL, 1, ctx->arena, &rows, &n,
                     err);
    pthread_mutex_unlock(&m->mu);
    if (rc == WF_OK) {
        *found = n > 0;
        if (n > 0)
            *out = rows[0];
    }
    return rc;
}

/* ---- listings ----------------------------------------------------------- */

static bool
in_list(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (eq(s, list[i]))
            return true;
    return false;
}

static bool
in_ints(int v, const int *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (v == list[i])
            return true;
    return false;
}

typedef struct task_q {
    const wf_task_filter *f;
    keyset k;
} task_q;

static bool
task_match(mem_store *m, const void *row, const void *arg)
{
    (void)m;
    const wf_task_row *t = row;
    const task_q *q = arg;
    const wf_task_filter *f = q->f;
    if (f->user != NULL) {
        bool mine = t->assignee_kind == WF_ASSIGNEE_USER && eq(t->assignee_id, f->user);
        bool group = t->assignee_kind == WF_ASSIGNEE_GROUP && t->status == WF_TASK_OPEN &&
                     in_list(t->assignee_id, f->groups, f->n_groups);
        if (!mine && !group && !eq(t->claimed_by, f->user))
            return false;
    } else if (f->group != NULL) {
        if (t->assignee_kind != WF_ASSIGNEE_GROUP || !eq(t->assignee_id, f->group))
            return false;
    }
    if (f->n_states > 0 && !in_ints((int)t->status, (const int *)f->states, f->n_states))
        return false;
    return after(&q->k, t->created_at, t->id);
}

static wf_code
mem_list_tasks(wf_store *st, const wf_store_ctx *ctx, const wf_task_filter *f, size_t limit,
               bool has, int64_t c_num, const char *c_str, wf_task_row **rows, size_t *n,
               wf_error *err)
{
    mem_store *m = (mem_store *)st;
    task_q q = {f, {has, c_num, c_str}};
    wf_code rc = mem_lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = select_rows(m, &m->tasks, ctx->tenant, task_match, &q, cmp_task, limit, ctx->arena, rows,
                     n, err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

typedef struct instance_q {
    const wf_instance_filter *f;
    keyset k;
    const char *tenant;
} instance_q;

static bool
has_child(mem_store *m, const char *tenant, const char *id)
{
    size_t lo, hi;
    mt_tenant_range(&m->insts, tenant, &lo, &hi);
    for (size_t i = lo; i < hi; i++)
        if (eq(((const wf_instance_row *)m->insts.v[i].row)->parent_id, id))
            return true;
    return false;
}

static bool
instance_match(mem_store *m, const void *row, const void *arg)
{
    const wf_instance_row *r = row;
    const instance_q *q = arg;
    const wf_instance_filter *f = q->f;
    if ((f->started_by != NULL && !eq(r->started_by, f->started_by)) ||
        (f->definition_key != NULL && !eq(r->definition_key, f->definition_key)) ||
        (f->aggregate_type != NULL && !eq(r->aggregate_type, f->aggregate_type)) ||
        (f->aggregate_id != NULL && !eq(r->aggregate_id, f->aggregate_id)) ||
        (f->roots_only && r->parent_id != NULL) ||
        (f->n_statuses > 0 && !in_ints((int)r->status, (const int *)f->statuses, f->n_statuses)) ||
        !after(&q->k, r->created_at, r->id))
        return false;
    if (f->begun != WF_BEGUN_ANY) {
        const wf_definition_row *d = NULL;
        bool begun =
            r->status != WF_INSTANCE_RUNNING ||
            (d = find_definition(m, q->tenant, r->definition_key, r->definition_version)) == NULL ||
            d->kind != WF_DEF_AD_HOC || has_child(m, q->tenant, r->id);
        if (begun != (f->begun == WF_BEGUN_YES))
            return false;
    }
    return true;
}

static wf_code
mem_list_instances(wf_store *st, const wf_store_ctx *ctx, const wf_instance_filter *f, size_t limit,
                   bool has, int64_t c_num, const char *c_str, wf_instance_row **rows, size_t *n,
                   wf_error *err)
{
    mem_store *m = (mem_store *)st;
    instance_q q = {f, {has, c_num, c_str}, ctx->tenant};
    wf_code rc = mem_lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = select_rows(m, &m->insts, ctx->tenant, instance_match, &q, cmp_instance, limit, ctx->arena,
                     rows, n, err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static bool
definition_after(mem_store *m, const void *row, const void *arg)
{
    (void)m;
    const wf_definition_row *d = row;
    const keyset *k = arg;
    if (!k->has)
        return true;
    int c = strcmp(d->key, k->str);
    return c > 0 || (c == 0 && d->version > k->num);
}

static wf_code
mem_list_definitions(wf_store *st, const wf_store_ctx *ctx, size_t limit, bool has, int64_t c_num,
                     const char *c_str, wf_definition_row **rows, size_t *n, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    keyset k = {has, c_num, c_str};
    wf_code rc = mem_lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = select_rows(m, &m->defs, ctx->tenant, definition_after, &k, cmp_definition, limit,
                     ctx->arena, rows, n, err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

typedef struct signal_q {
    const wf_signal_filter *f;
    keyset k;
} signal_q;

static bool
signal_listed(mem_store *m, const void *row, const void *arg)
{
    (void)m;
    const wf_signal_row *s = row;
    const signal_q *q = arg;
    const wf_signal_filter *f = q->f;
    if ((f->instance_id != NULL && !eq(s->instance_id, f->instance_id) &&
         !eq(s->consumed_by_instance, f->instance_id)) ||
        (f->aggregate_type != NULL && !eq(s->aggregate_type, f->aggregate_type)) ||
        (f->aggregate_id != NULL && !eq(s->aggregate_id, f->aggregate_id)) ||
        (f->signal_id != NULL &&
         (!eq(s->signal_id, f->signal_id) || s->outcome == WF_SIGNAL_DUPLICATE)) ||
        (f->buffered_only && !s->buffered))
        return false;
    return after(&q->k, s->received_at, s->id);
}

static wf_code
mem_list_signals(wf_store *st, const wf_store_ctx *ctx, const wf_signal_filter *f, size_t limit,
                 bool has, int64_t c_num, const char *c_str, wf_signal_row **rows, size_t *n,
                 wf_error *err)
{
    mem_store *m = (mem_store *)st;
    signal_q q = {f, {has, c_num, c_str}};
    wf_code rc = mem_lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = select_rows(m, &m->signals, ctx->tenant, signal_listed, &q, cmp_signal, limit, ctx->arena,
                     rows, n, err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

typedef struct work_item_q {
    const char *instance_id;
    unsigned states;
    keyset k;
} work_item_q;

static bool
work_item_listed(mem_store *m, const void *row, const void *arg)
{
    (void)m;
    const wf_work_item_row *it = row;
    const work_item_q *q = arg;
    return eq(it->instance_id, q->instance_id) &&
           (q->states == 0 || (q->states & (1u << (unsigned)it->state)) != 0) &&
           after(&q->k, it->enabled_at, it->id);
}

static wf_code
mem_list_work_items(wf_store *st, const wf_store_ctx *ctx, const char *instance_id, unsigned states,
                    size_t limit, bool has, int64_t c_num, const char *c_str,
                    wf_work_item_row **rows, size_t *n, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    work_item_q q = {instance_id, states, {has, c_num, c_str}};
    wf_code rc = mem_lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = select_rows(m, &m->work_items, ctx->tenant, work_item_listed, &q, cmp_work_item, limit,
                     ctx->arena, rows, n, err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* ---- cross-instance work ------------------------------------------------ */

typedef struct job_q {
    const char *job_type;
    int64_t now;
} job_q;

static bool
job_activatable(mem_store *m, const void *row, const void *arg)
{
    (void)m;
    const wf_job_row *j = row;
    const job_q *q = arg;
    return eq(j->job_type, q->job_type) && j->state == WF_JOB_ACTIVATABLE &&
           j->activatable_at <= q->now;
}

/* Replaces the stored row under (tenant, id) with a copy of src, outside
 * any transaction (activation and claims are atomic under the mutex). */
static wf_code
replace_row(mtable *t, const char *tenant, const char *id, const void *src, wf_error *err)
{
    char *key = make_key(tenant, id, NULL);
    void *row = key != NULL ? row_new(t->d, src, tenant) : NULL;
    void *old = NULL;
    if (row == NULL || !mt_put(t, key, row, &old)) {
        free(key);
        if (row != NULL)
            row_free(t->d, row);
        return wf_store__nomem(err);
    }
    if (old != NULL)
        row_free(t->d, old);
    return WF_OK;
}

/* Leases up to max jobs with the mutex held: through tx's undo log when
 * tx is not NULL (a rollback gives the jobs back), else for good. */
static wf_code
activate_locked(mem_store *m, mem_tx *tx, const wf_store_ctx *ctx, const char *job_type,
                const char *worker, size_t max, int64_t lease_ms, int64_t now, wf_job_row **rows,
                size_t *n, wf_error *err)
{
    job_q q = {job_type, now};
    void **v = NULL;
    size_t k = 0;
    wf_job_row *out = NULL;
    wf_code rc =
        gather(m, &m->jobs, ctx->tenant, job_activatable, &q, cmp_job_activation, max, &v, &k, err);
    if (rc == WF_OK) {
        out = wf_arena_calloc(ctx->arena, k > 0 ? k : 1, sizeof *out);
        if (out == NULL)
            rc = wf_store__nomem(err);
    }
    for (size_t i = 0; rc == WF_OK && i < k; i++) {
        char uuid[WF_UUID_LEN + 1];
        wf_uuid7(uuid);
        wf_job_row j = *(const wf_job_row *)v[i];
        /* "<instance id>.<uuid>": the key names the job's instance */
        char *key = wf_arena_printf(ctx->arena, "%s.%s", j.instance_id, uuid);
        if (key == NULL) {
            rc = wf_store__nomem(err);
            break;
        }
        j.key = key;
        j.worker = (char *)worker;
        j.state = WF_JOB_ACTIVATED;
        j.lease_expires_at = now + lease_ms * 1000;
        if (!wf_store__row_copy(&wf_store__job_desc, &out[i], &j, ctx->arena, NULL))
            rc = wf_store__nomem(err);
        wf_event_row ev = {0,
                           NULL,
                           out[i].root_id,
                           out[i].instance_id,
                           "JOB_ACTIVATED",
                           NULL,
                           wf_store__job_activated_data(ctx->arena, &out[i]),
                           now};
        if (rc == WF_OK && ev.data_json == NULL)
            rc = wf_store__nomem(err);
        /* out[i] owns its strings in the arena; v[i] is freed by the replace
         * (or kept by the undo log). */
        if (rc == WF_OK)
            rc = tx != NULL ? tx_put(tx, &m->jobs, &out[i], out[i].id, NULL, err)
                            : replace_row(&m->jobs, ctx->tenant, out[i].id, &out[i], err);
        if (rc == WF_OK)
            rc = append_event(m, &ev, ctx->tenant, err);
        if (rc == WF_OK && tx != NULL)
            tx->wrote_events = true;
    }
    free(v);
    if (rc == WF_OK) {
        *rows = out;
        *n = k;
    }
    return rc;
}

static wf_code
mem_activate_jobs(wf_store *st, const wf_store_ctx *ctx, const char *job_type, const char *worker,
                  size_t max, int64_t lease_ms, int64_t now, wf_job_row **rows, size_t *n,
                  wf_error *err)
{
    mem_store *m = (mem_store *)st;
    wf_code rc = mem_lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    size_t ev_before = m->n_events;
    rc = activate_locked(m, NULL, ctx, job_type, worker, max, lease_ms, now, rows, n, err);
    /* JOB_ACTIVATED events were written: wake event readers, after the
     * mutex is released. */
    wf_store_listen_fn fn = m->n_events > ev_before ? m->listen_fn : NULL;
    void *arg = m->listen_arg;
    pthread_mutex_unlock(&m->mu);
    if (fn != NULL)
        fn(arg, "wf_events", "");
    return rc;
}

/* Inside a unit of work: the mutex is already held by tx. */
static wf_code
mem_tx_activate_jobs(wf_tx *t, const char *job_type, const char *worker, size_t max,
                     int64_t lease_ms, int64_t now, wf_job_row **rows, size_t *n, wf_error *err)
{
    return activate_locked((mem_store *)t->st, (mem_tx *)t, &t->ctx, job_type, worker, max,
                           lease_ms, now, rows, n, err);
}

static bool
timer_due(mem_store *m, const void *row, const void *arg)
{
    (void)m;
    const wf_timer_row *t = row;
    int64_t now = *(const int64_t *)arg;
    return t->due_at <= now && t->claimed_until <= now;
}

static wf_code
mem_claim_due_timers(wf_store *st, const wf_store_ctx *ctx, const char *tenant, int64_t now,
                     size_t limit, int64_t claim_ms, wf_timer_row **rows, size_t *n, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    void **v = NULL;
    size_t k = 0;
    wf_timer_row *out = NULL;
    wf_code rc = mem_lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = gather(m, &m->timers, tenant, timer_due, &now, cmp_timer, limit, &v, &k, err);
    if (rc == WF_OK)
        rc = copy_out(&wf_store__timer_desc, v, k, ctx->arena, (void **)&out, err);
    for (size_t i = 0; rc == WF_OK && i < k; i++) {
        out[i].claimed_until = now + claim_ms * 1000;
        rc = replace_row(&m->timers, out[i].tenant, out[i].id, &out[i], err);
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

CMP_NUM_ID(cmp_job_lease, wf_job_row, lease_expires_at)
CMP_NUM_ID(cmp_signal_expiry, wf_signal_row, expires_at)

static bool
lease_expired(mem_store *m, const void *row, const void *arg)
{
    (void)m;
    const wf_job_row *j = row;
    return j->state == WF_JOB_ACTIVATED && j->lease_expires_at <= *(const int64_t *)arg;
}

static wf_code
mem_find_expired_leases(wf_store *st, const wf_store_ctx *ctx, int64_t now, size_t limit,
                        wf_job_row **rows, size_t *n, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    wf_code rc = mem_lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = select_rows(m, &m->jobs, ctx->tenant, lease_expired, &now, cmp_job_lease, limit,
                     ctx->arena, rows, n, err);
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

static wf_code
mem_expire_signals(wf_store *st, const wf_store_ctx *ctx, int64_t now, size_t limit, size_t *n,
                   wf_error *err)
{
    mem_store *m = (mem_store *)st;
    void **v = NULL;
    size_t k = 0;
    wf_code rc = mem_lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = gather(m, &m->signals, ctx->tenant, signal_expired, &now, cmp_signal_expiry, limit, &v, &k,
                err);
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
    if (q->kind == WF_SWEEP_SIGNALS) {
        const wf_signal_row *s = row;
        return (s->outcome == WF_SIGNAL_BUFFERED || s->outcome == WF_SIGNAL_STARTED) &&
               !s->buffered && s->consumed_at == 0 && s->expires_at > 0 &&
               s->expires_at <= q->before;
    }
    const wf_event_row *e = row;
    if (e->root_id == NULL)
        return false;
    const wf_instance_row *r = mt_get(&m->insts, e->tenant, e->root_id, NULL);
    return r != NULL && r->parent_id == NULL && r->ended_at > 0 && r->ended_at <= q->before &&
           (r->status == WF_INSTANCE_COMPLETED || r->status == WF_INSTANCE_CANCELLED ||
            r->status == WF_INSTANCE_COMPENSATED);
}

/* Removes up to limit matching rows of tenant (all when NULL) from t in
 * one compaction pass; returns how many went. */
static size_t
mt_remove_if(mem_store *m, mtable *t, const char *tenant, const sweep_q *q, size_t limit)
{
    size_t lo, hi, k = 0, out;
    mt_tenant_range(t, tenant, &lo, &hi);
    out = lo;
    for (size_t i = lo; i < t->n; i++) {
        if (i < hi && k < limit && sweep_match(m, t->v[i].row, q)) {
            free(t->v[i].key);
            row_free(t->d, t->v[i].row);
            k++;
            continue;
        }
        t->v[out++] = t->v[i];
    }
    t->n = out;
    return k;
}

static wf_code
mem_sweep(wf_store *st, const wf_store_ctx *ctx, wf_sweep_kind kind, int64_t before, size_t limit,
          size_t *n, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    sweep_q q = {kind, before};
    size_t k = 0;
    wf_code rc = mem_lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    if (kind == WF_SWEEP_SIGNALS) {
        k = mt_remove_if(m, &m->signals, ctx->tenant, &q, limit);
    } else if (kind == WF_SWEEP_IDEMPOTENCY) {
        k = mt_remove_if(m, &m->idem, ctx->tenant, &q, limit);
    } else {
        /* Events stay in sequence order; the gaps left behind are fine
         * for readers (they binary-search the start). */
        size_t out = 0;
        for (size_t i = 0; i < m->n_events; i++) {
            wf_event_row *e = &m->events[i];
            if (k < limit && (ctx->tenant == NULL || eq(e->tenant, ctx->tenant)) &&
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
    if (!eq(s->signal_name, q->name))
        return false;
    if (q->instance_id != NULL)
        return eq(s->instance_id, q->instance_id);
    return eq(s->aggregate_type, q->agg_type) && eq(s->aggregate_id, q->agg_id);
}

static wf_code
mem_find_subscriptions(wf_store *st, const wf_store_ctx *ctx, const char *name,
                       const char *instance_id, const char *agg_type, const char *agg_id,
                       wf_subscription_row **rows, size_t *n, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    signal_match q = {name, instance_id, agg_type, agg_id, 0};
    wf_code rc = mem_lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = select_rows(m, &m->subs, ctx->tenant, sub_match, &q, cmp_sub, SIZE_MAX, ctx->arena, rows,
                     n, err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static bool
event_match(mem_store *m, const wf_event_row *e, const char *tenant, const wf_event_filter *f)
{
    if (!eq(e->tenant, tenant))
        return false;
    if (f->instance_id != NULL && !eq(e->instance_id, f->instance_id) &&
        !eq(e->root_id, f->instance_id))
        return false;
    if (f->n_types > 0 && !in_list(e->type, f->types, f->n_types))
        return false;
    if (f->definition_key != NULL) {
        const wf_instance_row *i =
            e->instance_id != NULL ? mt_get(&m->insts, tenant, e->instance_id, NULL) : NULL;
        if (i == NULL || !eq(i->definition_key, f->definition_key))
            return false;
    }
    return true;
}

static wf_code
mem_read_events(wf_store *st, const wf_store_ctx *ctx, int64_t after_seq, const wf_event_filter *f,
                size_t limit, wf_event_row **rows, size_t *n, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    size_t k = 0;
    wf_code rc = mem_lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    const wf_event_row **v = malloc((limit + 1) * sizeof *v);
    if (v == NULL)
        rc = wf_store__nomem(err);
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
        rc = copy_out(&wf_store__event_desc, (void *const *)v, k, ctx->arena, (void **)rows, err);
    pthread_mutex_unlock(&m->mu);
    free(v);
    if (rc == WF_OK)
        *n = k;
    return rc;
}

/* Sequences are assigned at write time: nothing is ever pending. */
static wf_code
mem_sequence_events(wf_store *st, const wf_store_ctx *ctx, wf_error *err)
{
    (void)st;
    (void)ctx;
    (void)err;
    return WF_OK;
}

static wf_code
mem_set_listener(wf_store *st, wf_store_listen_fn fn, void *arg, wf_error *err)
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

/* ---- construction ------------------------------------------------------- */

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
    const wf_instance_row *in = mt_get(&m->insts, a->tenant, s->instance_id, NULL);
    return in != NULL && in->status == WF_INSTANCE_RUNNING;
}

/* Nothing to lock: the open transaction holds the store mutex, so a
 * buffering and an awaiting of one key are serialised already. */
static wf_code
mem_lock_correlation(wf_tx *t, const char *name, const char *agg_type, const char *agg_id,
                     bool *awaited, wf_error *err)
{
    if (awaited == NULL)
        return WF_OK;
    mem_store *m = (mem_store *)t->st;
    awaited_match q = {{name, NULL, agg_type, agg_id, 0}, t->ctx.tenant};
    void **v = NULL;
    size_t n = 0;
    wf_code rc = gather(m, &m->subs, t->ctx.tenant, awaiting_match, &q, NULL, 1, &v, &n, err);
    if (rc != WF_OK)
        return rc;
    free(v);
    *awaited = n > 0;
    return WF_OK;
}

static wf_code
mem_aggregate_live(wf_tx *t, const char *agg_type, const char *agg_id, bool *live, wf_error *err)
{
    (void)err;
    mem_store *m = (mem_store *)t->st;
    size_t lo, hi;
    mt_tenant_range(&m->insts, t->ctx.tenant, &lo, &hi);
    *live = false;
    for (size_t i = lo; i < hi && !*live; i++) {
        const wf_instance_row *in = m->insts.v[i].row;
        *live = in->parent_id == NULL && eq(in->aggregate_type, agg_type) &&
                eq(in->aggregate_id, agg_id) &&
                (in->status == WF_INSTANCE_RUNNING || in->status == WF_INSTANCE_FAILED ||
                 in->status == WF_INSTANCE_COMPENSATING);
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

static wf_code
mem_count_backlog(wf_store *st, const wf_store_ctx *ctx, int64_t now, size_t max_types,
                  wf_store_counts *out, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    wf_code rc = mem_lock(m, ctx->deadline_ms, err);
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
    void **v = NULL;
    size_t n = 0;
    rc = gather(m, &m->jobs, NULL, job_ready, &now, cmp_job_type, SIZE_MAX, &v, &n, err);
    if (rc == WF_OK) {
        out->jobs = wf_arena_calloc(ctx->arena, n + 1, sizeof *out->jobs);
        if (out->jobs == NULL)
            rc = wf_store__nomem(err);
        for (size_t i = 0; rc == WF_OK && i < n; i++) {
            const char *type = ((const wf_job_row *)v[i])->job_type;
            if (out->n_jobs == 0 || strcmp(out->jobs[out->n_jobs - 1].job_type, type) != 0) {
                if (out->n_jobs == max_types)
                    break;
                out->jobs[out->n_jobs].job_type = wf_arena_strdup(ctx->arena, type);
                if (out->jobs[out->n_jobs].job_type == NULL) {
                    rc = wf_store__nomem(err);
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

static const wf_store_ops mem_ops = {
    .destroy = mem_destroy,
    .ready = mem_ready,
    .stats = mem_stats,
    .begin = mem_begin,
    .lock_root = mem_lock_root,
    .apply = mem_apply,
    .commit = mem_commit,
    .rollback = mem_rollback,
    .idem_get = mem_idem_get,
    .idem_put = mem_idem_put,
    .idem_amend = mem_idem_amend,
    .put_definition = mem_put_definition,
    .tx_get_definition = mem_tx_get_definition,
    .consume_signal = mem_consume_signal,
    .lock_correlation = mem_lock_correlation,
    .aggregate_live = mem_aggregate_live,
    .get_definition = mem_get_definition,
    .get_instance = mem_get_instance,
    .get_task = mem_get_task,
    .get_job_by_key = mem_get_job_by_key,
    .list_tasks = mem_list_tasks,
    .list_instances = mem_list_instances,
    .list_definitions = mem_list_definitions,
    .list_signals = mem_list_signals,
    .list_work_items = mem_list_work_items,
    .activate_jobs = mem_activate_jobs,
    .tx_activate_jobs = mem_tx_activate_jobs,
    .claim_due_timers = mem_claim_due_timers,
    .find_expired_leases = mem_find_expired_leases,
    .expire_signals = mem_expire_signals,
    .sweep = mem_sweep,
    .find_subscriptions = mem_find_subscriptions,
    .read_events = mem_read_events,
    .sequence_events = mem_sequence_events,
    .count_backlog = mem_count_backlog,
    .set_listener = mem_set_listener,
};

wf_store *
wf_store_memory_new(wf_error *err)
{
    mem_store *m = calloc(1, sizeof *m);
    if (m == NULL) {
        wf_store__nomem(err);
        return NULL;
    }
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&m->mu, &attr);
    pthread_mutexattr_destroy(&attr);
    m->base.ops = &mem_ops;
    m->defs.d = &wf_store__definition_desc;
    m->insts.d = &wf_store__instance_desc;
    m->tasks.d = &wf_store__task_desc;
    m->tokens.d = &wf_store__token_desc;
    m->work_items.d = &wf_store__work_item_desc;
    m->jobs.d = &wf_store__job_desc;
    m->timers.d = &wf_store__timer_desc;
    m->subs.d = &wf_store__subscription_desc;
    m->signals.d = &wf_store__signal_desc;
    m->idem.d = &wf_store__idempotency_desc;
    return &m->base;
}
