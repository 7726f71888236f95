/*
 * mem/store.c: the in-memory store, for development and tests.
 *
 * DESIGN. One recursive mutex guards everything. A unit of work holds it
 * from wf_store_begin to commit/rollback, so transactions are serial: that
 * is the simplest correct stand-in for Postgres row locks. Writes inside a
 * transaction go straight into the tables and push the previous row onto
 * an undo log; rollback replays the log backwards, commit drops it.
 * Cross-instance calls (activation, timer claims) take the mutex for their
 * own duration.
 *
 * One exception keeps a slow expression from stopping every caller: a
 * unit of work that has written nothing yet may pause (wf_tx_pause) and
 * let the mutex go while it waits for an evaluation. The roots it locked
 * stay held, as Postgres row locks would: lock_root of a held root waits
 * (the mutex let go) until the paused unit of work ends, and activation
 * and timer claims skip the held roots' jobs and timers (SKIP LOCKED).
 * Since a paused unit of work has written nothing, every other caller
 * still sees only committed rows. A unit of work that has written, or took
 * a correlation lock, never pauses; when such a one needs a held root it
 * gets WF_E_CONFLICT instead of waiting (it cannot let its writes show).
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
 * Files: this one holds the tables, the transactional writes, selection
 * and the lifecycle; mem/tx.c the unit of work, mem/reads.c reads and
 * listings, mem/work.c cross-instance work, the scheduler's passes,
 * correlation and backlog counts (shared declarations: mem/mem_int.h).
 *
 * Must not: be used in production (no durability), or be cleverer than
 * the contract requires.
 */
#include "mem/mem_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "wf_time.h"

bool
wf_store_mem__eq(const char *a, const char *b)
{
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}

int
wf_store_mem__i64_cmp(int64_t a, int64_t b)
{
    return (a > b) - (a < b);
}

/* The absolute CLOCK_REALTIME time of deadline_ms (a wf_mono_ms time),
 * for the timed waits below. */
void
wf_store_mem__until(int64_t deadline_ms, struct timespec *ts)
{
    int64_t left = deadline_ms - wf_mono_ms();
    clock_gettime(CLOCK_REALTIME, ts);
    if (left < 0)
        left = 0;
    ts->tv_sec += left / 1000;
    ts->tv_nsec += (left % 1000) * 1000000;
    if (ts->tv_nsec >= 1000000000) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000;
    }
}

/* Takes the store mutex, waiting at most until the call's deadline, so a
 * long unit of work elsewhere gives DEADLINE_EXCEEDED as a Postgres row
 * lock wait would (statement_timeout), instead of a hang. */
wf_code
wf_store_mem__lock(mem_store *m, int64_t deadline_ms, wf_error *err)
{
    if (deadline_ms == 0) {
        pthread_mutex_lock(&m->mu);
        return WF_OK;
    }
    struct timespec ts;
    wf_store_mem__until(deadline_ms, &ts);
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
char *
wf_store_mem__make_key(const char *tenant, const char *a, const char *b)
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

void *
wf_store_mem__mt_get(const mtable *t, const char *tenant, const char *a, const char *b)
{
    char *key = wf_store_mem__make_key(tenant, a, b);
    bool found = false;
    size_t i = key != NULL ? mt_find(t, key, &found) : 0;
    free(key);
    return found ? t->v[i].row : NULL;
}

void
wf_store_mem__row_free(const wf_row_desc *d, void *row)
{
    wf_store__row_clear(d, row);
    free(row);
}

/* A malloc'd deep copy of src with tenant forced; NULL when out of memory. */
void *
wf_store_mem__row_new(const wf_row_desc *d, const void *src, const char *tenant)
{
    void *row = malloc(d->size);
    if (row == NULL)
        return NULL;
    if (!wf_store__row_copy(d, row, src, NULL, tenant)) {
        wf_store_mem__row_free(d, row);
        return NULL;
    }
    return row;
}

/* Puts row under key (taking ownership of both), returning the row it
 * replaced (or NULL) through *old. False when out of memory (nothing is
 * taken then). */
bool
wf_store_mem__mt_put(mtable *t, char *key, void *row, void **old)
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
void *
wf_store_mem__mt_take(mtable *t, const char *key)
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
        wf_store_mem__row_free(t->d, t->v[i].row);
    }
    free(t->v);
    t->v = NULL;
    t->n = t->cap = 0;
}

/* The slot range [*lo, *hi) holding tenant's rows (all rows when NULL). */
void
wf_store_mem__mt_tenant_range(const mtable *t, const char *tenant, size_t *lo, size_t *hi)
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
wf_code
wf_store_mem__tx_put(mem_tx *tx, mtable *t, const void *src, const char *id, const char *b,
                     wf_error *err)
{
    const char *tenant = tx->base.ctx.tenant;
    char *key = wf_store_mem__make_key(tenant, id, b);
    void *row = key != NULL ? wf_store_mem__row_new(t->d, src, tenant) : NULL;
    void *old = NULL;
    /* Reserve the undo entry first so a failure leaves the table as it was. */
    if (row == NULL || !undo_push(tx, t, key, NULL)) {
        free(key);
        if (row != NULL)
            wf_store_mem__row_free(t->d, row);
        return wf_error_nomem(err);
    }
    if (!wf_store_mem__mt_put(t, key, row, &old)) {
        free(tx->undo[--tx->n_undo].key);
        free(key);
        wf_store_mem__row_free(t->d, row);
        return wf_error_nomem(err);
    }
    tx->undo[tx->n_undo - 1].old = old;
    return WF_OK;
}

wf_code
wf_store_mem__tx_del(mem_tx *tx, mtable *t, const char *id, wf_error *err)
{
    char *key = wf_store_mem__make_key(tx->base.ctx.tenant, id, NULL);
    if (key == NULL)
        return wf_error_nomem(err);
    bool found;
    mt_find(t, key, &found);
    if (found && !undo_push(tx, t, key, NULL)) {
        free(key);
        return wf_error_nomem(err);
    }
    if (found)
        tx->undo[tx->n_undo - 1].old = wf_store_mem__mt_take(t, key);
    free(key);
    return WF_OK;
}

/* ---- selection: filter, order, copy out --------------------------------- */

/* Collects pointers to the matching stored rows of tenant (all tenants
 * when NULL), sorted by cmp and cut to limit. *out is malloc'd. */
wf_code
wf_store_mem__gather(mem_store *m, mtable *t, const char *tenant, mpred pred, const void *arg,
                     mcmp cmp, size_t limit, void ***out, size_t *n, wf_error *err)
{
    size_t lo, hi, k = 0;
    wf_store_mem__mt_tenant_range(t, tenant, &lo, &hi);
    void **v = malloc((hi - lo + 1) * sizeof *v);
    if (v == NULL)
        return wf_error_nomem(err);
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
wf_code
wf_store_mem__copy_out(const wf_row_desc *d, void *const *src, size_t n, wf_arena *a, void **rows,
                       wf_error *err)
{
    char *dst = wf_arena_calloc(a, n > 0 ? n : 1, d->size);
    if (dst == NULL)
        return wf_error_nomem(err);
    for (size_t i = 0; i < n; i++)
        if (!wf_store__row_copy(d, dst + i * d->size, src[i], a, NULL))
            return wf_error_nomem(err);
    *rows = dst;
    return WF_OK;
}

wf_code
wf_store_mem__select_rows(mem_store *m, mtable *t, const char *tenant, mpred pred, const void *arg,
                          mcmp cmp, size_t limit, wf_arena *a, void *rows, size_t *n, wf_error *err)
{
    void **v = NULL;
    size_t k = 0;
    wf_code rc = wf_store_mem__gather(m, t, tenant, pred, arg, cmp, limit, &v, &k, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_store_mem__copy_out(t->d, v, k, a, (void **)rows, err);
    free(v);
    if (rc == WF_OK)
        *n = k;
    return rc;
}

/* Comparators on (number, id) keys (CMP_NUM_ID, mem/mem_int.h). */
CMP_NUM_ID(wf_store_mem__cmp_instance, wf_instance_row, created_at)
CMP_NUM_ID(wf_store_mem__cmp_incident, wf_instance_row, incident_at)
CMP_NUM_ID(wf_store_mem__cmp_task, wf_task_row, created_at)
CMP_NUM_ID(wf_store_mem__cmp_token, wf_token_row, created_seq)
CMP_NUM_ID(wf_store_mem__cmp_work_item, wf_work_item_row, enabled_at)
CMP_NUM_ID(wf_store_mem__cmp_job, wf_job_row, created_at)
CMP_NUM_ID(wf_store_mem__cmp_job_activation, wf_job_row, rank)
CMP_NUM_ID(wf_store_mem__cmp_timer, wf_timer_row, due_at)
CMP_NUM_ID(wf_store_mem__cmp_sub, wf_subscription_row, created_at)
CMP_NUM_ID(wf_store_mem__cmp_signal, wf_signal_row, received_at)

int
wf_store_mem__cmp_definition(const void *a, const void *b)
{
    const wf_definition_row *x = *(const wf_definition_row *const *)a;
    const wf_definition_row *y = *(const wf_definition_row *const *)b;
    int c = strcmp(x->key, y->key);
    return c != 0 ? c : wf_store_mem__i64_cmp(x->version, y->version);
}

bool
wf_store_mem__after(const keyset *k, int64_t num, const char *id)
{
    if (!k->has)
        return true;
    return num > k->num || (num == k->num && strcmp(id, k->str) > 0);
}

bool
wf_store_mem__before(const keyset *k, int64_t num, const char *id)
{
    if (!k->has)
        return true;
    return num < k->num || (num == k->num && strcmp(id, k->str) < 0);
}

/* ---- store lifecycle ---------------------------------------------------- */

static void
mem_destroy(wf_store *st)
{
    mem_store *m = (mem_store *)st;
    mtable *all[] = {&m->defs,    &m->insts,     &m->tasks,         &m->tokens,     &m->work_items,
                     &m->jobs,    &m->timers,    &m->subs,          &m->signals,    &m->idem,
                     &m->batches, &m->schedules, &m->schedule_runs, &m->deliveries, &m->resources};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mt_clear(all[i]);
    for (size_t i = 0; i < m->n_events; i++)
        wf_store__row_clear(&wf_store__event_desc, &m->events[i]);
    free(m->events);
    pthread_cond_destroy(&m->unheld);
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

/* ---- construction ------------------------------------------------------- */

static const wf_store_ops mem_ops = {
    .destroy = mem_destroy,
    .ready = mem_ready,
    .stats = mem_stats,
    .begin = wf_store_mem__begin,
    .lock_root = wf_store_mem__lock_root,
    .apply = wf_store_mem__apply,
    .commit = wf_store_mem__commit,
    .pause = wf_store_mem__pause,
    .resume = wf_store_mem__resume,
    .rollback = wf_store_mem__rollback,
    .idem_get = wf_store_mem__idem_get,
    .idem_put = wf_store_mem__idem_put,
    .idem_amend = wf_store_mem__idem_amend,
    .put_definition = wf_store_mem__put_definition,
    .tx_get_definition = wf_store_mem__tx_get_definition,
    .consume_signal = wf_store_mem__consume_signal,
    .lock_correlation = wf_store_mem__lock_correlation,
    .aggregate_live = wf_store_mem__aggregate_live,
    .get_definition = wf_store_mem__get_definition,
    .get_instance = wf_store_mem__get_instance,
    .get_task = wf_store_mem__get_task,
    .get_job_by_key = wf_store_mem__get_job_by_key,
    .list_tasks = wf_store_mem__list_tasks,
    .list_instances = wf_store_mem__list_instances,
    .list_incidents = wf_store_mem__list_incidents,
    .list_definitions = wf_store_mem__list_definitions,
    .list_signals = wf_store_mem__list_signals,
    .list_work_items = wf_store_mem__list_work_items,
    .activate_jobs = wf_store_mem__activate_jobs,
    .tx_activate_jobs = wf_store_mem__tx_activate_jobs,
    .claim_due_timers = wf_store_mem__claim_due_timers,
    .find_expired_leases = wf_store_mem__find_expired_leases,
    .expire_signals = wf_store_mem__expire_signals,
    .sweep = wf_store_mem__sweep,
    .find_subscriptions = wf_store_mem__find_subscriptions,
    .read_events = wf_store_mem__read_events,
    .sequence_events = wf_store_mem__sequence_events,
    .count_backlog = wf_store_mem__count_backlog,
    .set_listener = wf_store_mem__set_listener,
    .put_batch = wf_store_mem__put_batch,
    .get_batch = wf_store_mem__get_batch,
    .update_batch = wf_store_mem__update_batch,
    .list_batches = wf_store_mem__list_batches,
    .claim_batches = wf_store_mem__claim_batches,
    .put_schedule = wf_store_mem__put_schedule,
    .get_schedule = wf_store_mem__get_schedule,
    .update_schedule = wf_store_mem__update_schedule,
    .delete_schedule = wf_store_mem__delete_schedule,
    .list_schedules = wf_store_mem__list_schedules,
    .claim_schedules = wf_store_mem__claim_schedules,
    .put_schedule_run = wf_store_mem__put_schedule_run,
    .settle_schedule_run = wf_store_mem__settle_schedule_run,
    .list_schedule_runs = wf_store_mem__list_schedule_runs,
    .get_resource = wf_store_mem__get_resource,
    .save_resource = wf_store_mem__save_resource,
    .delete_resource = wf_store_mem__delete_resource,
    .list_resources = wf_store_mem__list_resources,
    .fanout_targets = wf_store_mem__fanout_targets,
    .take_delivery = wf_store_mem__take_delivery,
    .pending_deliveries = wf_store_mem__pending_deliveries,
    .tx_get_signal = wf_store_mem__tx_get_signal,
    .claim_deliveries = wf_store_mem__claim_deliveries,
    .find_queued_signals = wf_store_mem__find_queued_signals,
    .count_deliveries = wf_store_mem__count_deliveries,
    .fleet_counts = wf_store_mem__fleet_counts,
    .fleet_instances = wf_store_mem__fleet_instances,
};

wf_store *
wf_store_mem_new(wf_error *err)
{
    mem_store *m = calloc(1, sizeof *m);
    if (m == NULL) {
        wf_error_nomem(err);
        return NULL;
    }
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&m->mu, &attr);
    pthread_mutexattr_destroy(&attr);
    pthread_cond_init(&m->unheld, NULL);
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
    m->batches.d = &wf_store__batch_desc;
    m->schedules.d = &wf_store__schedule_desc;
    m->schedule_runs.d = &wf_store__schedule_run_desc;
    m->deliveries.d = &wf_store__delivery_desc;
    m->resources.d = &wf_store__resource_desc;
    return &m->base;
}

wf_code
wf_store_mem__mt_get_copy(mem_store *m, const mtable *t, const wf_store_ctx *ctx, const char *id,
                          void *out, bool *found, wf_error *err)
{
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    const void *row = wf_store_mem__mt_get(t, ctx->tenant, id, NULL);
    *found = row != NULL;
    if (row != NULL && !wf_store__row_copy(t->d, out, row, ctx->arena, NULL))
        rc = wf_error_nomem(err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

wf_code
wf_store_mem__mt_replace(mtable *t, const char *tenant, const char *id, const void *src,
                         wf_error *err)
{
    char *key = wf_store_mem__make_key(tenant, id, NULL);
    void *row = key != NULL ? wf_store_mem__row_new(t->d, src, tenant) : NULL;
    void *old = NULL;
    if (row == NULL || !wf_store_mem__mt_put(t, key, row, &old)) {
        free(key);
        if (row != NULL)
            wf_store_mem__row_free(t->d, row);
        return wf_error_nomem(err);
    }
    if (old != NULL)
        wf_store_mem__row_free(t->d, old);
    return WF_OK;
}
