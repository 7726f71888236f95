/*
 * store.c: the public wf_store_* / wf_tx_* entry points and what both
 * implementations share.
 *
 * Owns: the checks every call makes before dispatching (tenant present,
 * deadline not already past, page size and cursor parsing) and cursor
 * text, so the memory and Postgres stores cannot drift in those (the row
 * descriptors and deep copies are store_rows.c's). Must not: hold state,
 * know SQL, or implement storage itself.
 */
#include "store_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "wf_log.h"
#include "wf_time.h"

#define DEFAULT_PAGE 50
#define MAX_PAGE 1000

/* ---- shared helpers ---------------------------------------------------- */

char *
wf_store__cursor_make(wf_arena *arena, int64_t num, const char *str)
{
    return wf_arena_printf(arena, "%" PRId64 ",%s", num, str != NULL ? str : "");
}

/* Parses "<number>,<text>"; false when malformed. */
static bool
cursor_parse(const char *cursor, wf_arena *arena, int64_t *num, char **str)
{
    const char *comma = strchr(cursor, ',');
    if (comma == NULL || comma == cursor)
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(cursor, &end, 10);
    if (errno != 0 || end != comma)
        return false;
    *num = v;
    *str = wf_arena_strdup(arena, comma + 1);
    return *str != NULL;
}

bool
wf_store__deadline_passed(int64_t deadline_ms)
{
    return deadline_ms != 0 && wf_mono_ms() >= deadline_ms;
}

bool
wf_instance_ended(wf_instance_status s)
{
    return s == WF_INSTANCE_COMPLETED || s == WF_INSTANCE_CANCELLED || s == WF_INSTANCE_COMPENSATED;
}

/* ---- entry points ------------------------------------------------------ */

/* Checks shared by every tenant-scoped call. */
static wf_code
check_ctx(const wf_store_ctx *ctx, bool need_tenant, wf_error *err)
{
    if (ctx == NULL || ctx->arena == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "store call without a context");
    if (need_tenant && (ctx->tenant == NULL || ctx->tenant[0] == '\0'))
        return wf_error_set(err, WF_E_INTERNAL, "store call without a tenant");
    if (wf_store__deadline_passed(ctx->deadline_ms))
        return wf_error_set(err, WF_E_DEADLINE_EXCEEDED, "deadline exceeded before the store call");
    return WF_OK;
}

static wf_code
check_tx(wf_tx *tx, wf_error *err)
{
    if (tx == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "no open transaction");
    if (tx->failed)
        return wf_error_set(err, WF_E_INTERNAL,
                            "cannot continue a transaction after a failed call");
    if (wf_store__deadline_passed(tx->ctx.deadline_ms))
        return wf_error_set(err, WF_E_DEADLINE_EXCEEDED, "deadline exceeded in the transaction");
    return WF_OK;
}

/* Any failure inside a unit of work poisons it (Postgres aborts the
 * transaction; the memory store may hold a partial write), so both stores
 * refuse everything but rollback afterwards. */
static wf_code
tx_done(wf_tx *tx, wf_code rc)
{
    if (rc != WF_OK && tx != NULL)
        tx->failed = true;
    return rc;
}

void
wf_store_free(wf_store *st)
{
    if (st != NULL)
        st->ops->destroy(st);
}

bool
wf_store_ready(wf_store *st)
{
    return st->ops->ready(st);
}

void
wf_store_get_stats(wf_store *st, wf_store_stats *out)
{
    memset(out, 0, sizeof *out);
    st->ops->stats(st, out);
    for (int i = 0; i < WF_STORE_N_COUNTED; i++)
        out->events[i] = atomic_load_explicit(&st->counted[i], memory_order_relaxed);
}

const char *const wf_store_counted_events[WF_STORE_N_COUNTED] = {
    [WF_CNT_INSTANCE_STARTED] = "INSTANCE_STARTED",
    [WF_CNT_INSTANCE_COMPLETED] = "INSTANCE_COMPLETED",
    [WF_CNT_INSTANCE_CANCELLED] = "INSTANCE_CANCELLED",
    [WF_CNT_INSTANCE_FAILED] = "INSTANCE_FAILED",
    [WF_CNT_INSTANCE_COMPENSATED] = "INSTANCE_COMPENSATED",
    [WF_CNT_INCIDENT_RESOLVED] = "INCIDENT_RESOLVED",
    [WF_CNT_SIGNAL_RECEIVED] = "SIGNAL_RECEIVED",
    [WF_CNT_SIGNAL_BUFFERED] = "SIGNAL_BUFFERED",
    [WF_CNT_SIGNAL_DROPPED] = "SIGNAL_DROPPED",
    [WF_CNT_SIGNAL_DUPLICATE] = "SIGNAL_DUPLICATE",
};

/* Notes the counted events of changes in tx (added to the store's counts
 * when tx commits). */
static void
count_events(wf_tx *tx, const wf_store_changes *c)
{
    for (size_t i = 0; i < c->n_events; i++)
        for (int k = 0; k < WF_STORE_N_COUNTED; k++)
            if (c->events[i].type != NULL &&
                strcmp(c->events[i].type, wf_store_counted_events[k]) == 0) {
                tx->counted[k]++;
                break;
            }
}

/* Runs a commit op: tx is gone afterwards, so its counts are taken first. */
static wf_code
counted_commit(wf_tx *tx, wf_code (*commit)(wf_tx *, const wf_idempotency_row *, bool, wf_error *),
               const wf_idempotency_row *in, bool amend, wf_error *err)
{
    wf_store *st = tx->st;
    uint32_t n[WF_STORE_N_COUNTED];
    memcpy(n, tx->counted, sizeof n);
    wf_code rc = commit != NULL ? commit(tx, in, amend, err) : st->ops->commit(tx, err);
    for (int k = 0; rc == WF_OK && k < WF_STORE_N_COUNTED; k++)
        if (n[k] != 0)
            atomic_fetch_add_explicit(&st->counted[k], n[k], memory_order_relaxed);
    return rc;
}

wf_code
wf_store_begin(wf_store *st, const wf_store_ctx *ctx, wf_tx **tx, wf_error *err)
{
    wf_code rc = check_ctx(ctx, true, err);
    return rc != WF_OK ? rc : st->ops->begin(st, ctx, tx, err);
}

wf_code
wf_store_begin_batch(wf_store *st, const wf_store_ctx *ctx, wf_tx **tx, wf_error *err)
{
    wf_code rc = wf_store_begin(st, ctx, tx, err);
    if (rc == WF_OK)
        (*tx)->batch = true;
    return rc;
}

bool
wf_tx_failed(const wf_tx *tx)
{
    return tx == NULL || tx->failed;
}

wf_code
wf_tx_lock_root_hint(wf_tx *tx, const char *instance_id, const char *root_hint, wf_aggregate *out,
                     wf_error *err)
{
    wf_aggregate g;
    wf_code rc = check_tx(tx, err);
    if (rc != WF_OK)
        return rc;
    /* A batch takes its roots in ascending order: refused before the lock
     * when the hint already says it would go back. */
    if (tx->batch && tx->root != NULL && root_hint != NULL && strcmp(root_hint, tx->root) < 0)
        return tx_done(
            tx, wf_error_set(err, WF_E_INTERNAL, "a batch locks its roots in ascending order"));
    rc = tx->st->ops->lock_root(tx, instance_id, root_hint, &g, err);
    /* The root comes first. Deletions address rows by it, so a second
     * root would leave its rows out of reach; a batch writes each root's
     * rows before it locks the next one. */
    if (rc == WF_OK && tx->root != NULL && strcmp(tx->root, g.instances[0].id) != 0) {
        if (!tx->batch)
            rc = wf_error_set(err, WF_E_INTERNAL, "a unit of work locked two roots");
        else if (strcmp(g.instances[0].id, tx->root) < 0)
            rc = wf_error_set(err, WF_E_INTERNAL, "a batch locks its roots in ascending order");
    }
    if (rc == WF_OK) {
        tx->root = g.instances[0].id;
        *out = g;
    }
    return tx_done(tx, rc);
}

wf_code
wf_tx_lock_root(wf_tx *tx, const char *instance_id, wf_aggregate *out, wf_error *err)
{
    return wf_tx_lock_root_hint(tx, instance_id, NULL, out, err);
}

int64_t
wf_store_job_rank(int64_t activatable_at, int32_t priority, int64_t aging_us)
{
    if (priority < 0)
        priority = 0;
    if (priority > WF_JOB_PRIORITY_MAX)
        priority = WF_JOB_PRIORITY_MAX;
    return activatable_at - (int64_t)priority * aging_us;
}

/* Every job written gets its rank from its activatable_at and priority,
 * and "" for no fairness key (as Postgres stores it). */
static void
rank_jobs(const wf_store *st, const wf_store_changes *c)
{
    int64_t step = st->job_aging_us > 0 ? st->job_aging_us : WF_JOB_AGING_DEFAULT_US;
    for (size_t i = 0; i < c->n_jobs; i++) {
        wf_job_row *j = (wf_job_row *)&c->jobs[i];
        j->rank = wf_store_job_rank(j->activatable_at, j->priority, step);
        if (j->fairness_key == NULL)
            j->fairness_key = "";
    }
}

wf_code
wf_tx_apply(wf_tx *tx, const wf_store_changes *changes, wf_error *err)
{
    wf_code rc = check_tx(tx, err);
    if (rc == WF_OK && tx->root == NULL &&
        changes->n_del_tokens + changes->n_del_jobs + changes->n_del_timers +
                changes->n_del_subscriptions >
            0)
        rc = tx_done(tx, wf_error_set(err, WF_E_INTERNAL, "deletions need the root locked"));
    if (rc == WF_OK) {
        rank_jobs(tx->st, changes);
        rc = tx_done(tx, tx->st->ops->apply(tx, changes, err));
    }
    if (rc == WF_OK)
        count_events(tx, changes);
    return rc;
}

wf_code
wf_tx_commit(wf_tx *tx, wf_error *err)
{
    if (tx == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "no open transaction");
    if (tx->failed) {
        tx->st->ops->rollback(tx);
        return wf_error_set(err, WF_E_INTERNAL, "cannot commit a transaction after a failed call");
    }
    if (wf_store__deadline_passed(tx->ctx.deadline_ms)) {
        tx->st->ops->rollback(tx);
        return wf_error_set(err, WF_E_DEADLINE_EXCEEDED, "deadline exceeded before commit");
    }
    return counted_commit(tx, NULL, NULL, false, err);
}

void
wf_tx_defer_writes(wf_tx *tx)
{
    if (tx != NULL && tx->st->ops->defer_writes != NULL)
        tx->st->ops->defer_writes(tx);
}

void
wf_tx_pause(wf_tx *tx)
{
    if (tx != NULL && tx->st->ops->pause != NULL)
        tx->st->ops->pause(tx);
}

void
wf_tx_resume(wf_tx *tx)
{
    if (tx != NULL && tx->st->ops->resume != NULL)
        tx->st->ops->resume(tx);
}

void
wf_tx_rollback(wf_tx *tx)
{
    if (tx != NULL)
        tx->st->ops->rollback(tx);
}

wf_code
wf_tx_idempotency_get(wf_tx *tx, const char *method, const char *request_id,
                      wf_idempotency_row *out, bool *found, wf_error *err)
{
    wf_code rc = check_tx(tx, err);
    return rc != WF_OK
               ? rc
               : tx_done(tx, tx->st->ops->idem_get(tx, method, request_id, out, found, err));
}

wf_code
wf_tx_idempotency_prefetch(wf_tx *tx, const char *method, const char *request_id,
                           wf_idempotency_row *out, bool *found, wf_error *err)
{
    wf_code rc = check_tx(tx, err);
    if (rc != WF_OK)
        return rc;
    *found = false;
    if (tx->st->ops->idem_prefetch == NULL)
        return tx_done(tx, tx->st->ops->idem_get(tx, method, request_id, out, found, err));
    return tx_done(tx, tx->st->ops->idem_prefetch(tx, method, request_id, out, found, err));
}

wf_code
wf_tx_idempotency_put(wf_tx *tx, const wf_idempotency_row *in, wf_error *err)
{
    wf_code rc = check_tx(tx, err);
    return rc != WF_OK ? rc : tx_done(tx, tx->st->ops->idem_put(tx, in, err));
}

static wf_code
commit_recorded(wf_tx *tx, const wf_idempotency_row *in, bool amend, wf_error *err)
{
    if (tx == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "no open transaction");
    if (tx->st->ops->commit_recorded == NULL || tx->failed ||
        wf_store__deadline_passed(tx->ctx.deadline_ms)) {
        /* The two calls, with their checks. */
        wf_code rc = check_tx(tx, err);
        if (rc == WF_OK)
            rc = tx_done(tx, amend ? tx->st->ops->idem_amend(tx, in, err)
                                   : tx->st->ops->idem_put(tx, in, err));
        if (rc != WF_OK) {
            wf_tx_rollback(tx);
            return rc;
        }
        return wf_tx_commit(tx, err);
    }
    return counted_commit(tx, tx->st->ops->commit_recorded, in, amend, err);
}

wf_code
wf_tx_commit_recorded(wf_tx *tx, const wf_idempotency_row *in, wf_error *err)
{
    return commit_recorded(tx, in, false, err);
}

wf_code
wf_tx_commit_amended(wf_tx *tx, const wf_idempotency_row *in, wf_error *err)
{
    return commit_recorded(tx, in, true, err);
}

wf_code
wf_tx_put_definition(wf_tx *tx, const wf_definition_row *in, int32_t *version, wf_error *err)
{
    wf_code rc = check_tx(tx, err);
    return rc != WF_OK ? rc : tx_done(tx, tx->st->ops->put_definition(tx, in, version, err));
}

wf_code
wf_tx_get_definition(wf_tx *tx, const char *key, int32_t version, wf_definition_row *out,
                     bool *found, wf_error *err)
{
    wf_code rc = check_tx(tx, err);
    return rc != WF_OK
               ? rc
               : tx_done(tx, tx->st->ops->tx_get_definition(tx, key, version, out, found, err));
}

wf_code
wf_tx_consume_signal(wf_tx *tx, const char *name, const char *instance_id,
                     const char *aggregate_type, const char *aggregate_id,
                     const char *consumer_instance, const char *transition_id, int64_t now,
                     wf_signal_row *out, bool *found, wf_error *err)
{
    wf_code rc = check_tx(tx, err);
    if (rc != WF_OK)
        return rc;
    return tx_done(tx, tx->st->ops->consume_signal(tx, name, instance_id, aggregate_type,
                                                   aggregate_id, consumer_instance, transition_id,
                                                   now, out, found, err));
}

wf_code
wf_tx_lock_correlation(wf_tx *tx, const char *name, const char *aggregate_type,
                       const char *aggregate_id, bool *awaited, wf_error *err)
{
    wf_code rc = check_tx(tx, err);
    if (rc != WF_OK)
        return rc;
    return tx_done(
        tx, tx->st->ops->lock_correlation(tx, name, aggregate_type, aggregate_id, awaited, err));
}

wf_code
wf_tx_aggregate_live(wf_tx *tx, const char *aggregate_type, const char *aggregate_id, bool *live,
                     wf_error *err)
{
    wf_code rc = check_tx(tx, err);
    if (rc != WF_OK)
        return rc;
    return tx_done(tx, tx->st->ops->aggregate_live(tx, aggregate_type, aggregate_id, live, err));
}

wf_code
wf_store_get_definition(wf_store *st, const wf_store_ctx *ctx, const char *key, int32_t version,
                        wf_definition_row *out, wf_error *err)
{
    bool found = false;
    wf_code rc = check_ctx(ctx, true, err);
    if (rc == WF_OK)
        rc = st->ops->get_definition(st, ctx, key, version, out, &found, err);
    if (rc == WF_OK && !found) {
        if (version == 0)
            return wf_error_set(err, WF_E_DEFINITION_NOT_FOUND, "definition \"%s\" does not exist",
                                key);
        return wf_error_set(err, WF_E_DEFINITION_NOT_FOUND,
                            "version %d of definition \"%s\" does not exist", (int)version, key);
    }
    return rc;
}

wf_code
wf_store_get_instance(wf_store *st, const wf_store_ctx *ctx, const char *id, wf_instance_row *out,
                      wf_error *err)
{
    bool found = false;
    wf_code rc = check_ctx(ctx, true, err);
    if (rc == WF_OK)
        rc = st->ops->get_instance(st, ctx, id, out, &found, err);
    if (rc == WF_OK && !found)
        return wf_error_set(err, WF_E_INSTANCE_NOT_FOUND, "instance \"%s\" does not exist", id);
    return rc;
}

wf_code
wf_store_get_task(wf_store *st, const wf_store_ctx *ctx, const char *id, wf_task_row *out,
                  wf_error *err)
{
    bool found = false;
    wf_code rc = check_ctx(ctx, true, err);
    if (rc == WF_OK)
        rc = st->ops->get_task(st, ctx, id, out, &found, err);
    if (rc == WF_OK && !found)
        return wf_error_set(err, WF_E_TASK_NOT_FOUND, "task \"%s\" does not exist", id);
    return rc;
}

wf_code
wf_store_get_job_by_key(wf_store *st, const wf_store_ctx *ctx, const char *key, wf_job_row *out,
                        wf_error *err)
{
    bool found = false;
    wf_code rc = check_ctx(ctx, true, err);
    if (rc == WF_OK)
        rc = st->ops->get_job_by_key(st, ctx, key, out, &found, err);
    if (rc == WF_OK && !found)
        return wf_error_set(err, WF_E_JOB_NOT_FOUND, "job with key \"%s\" does not exist", key);
    return rc;
}

void
wf_store_set_page_bytes(wf_store *st, size_t bytes)
{
    if (st != NULL)
        st->page_bytes = bytes;
}

void
wf_store_set_job_aging(wf_store *st, int64_t aging_us)
{
    if (st != NULL && aging_us >= WF_JOB_AGING_MIN_US && aging_us <= WF_JOB_AGING_MAX_US)
        st->job_aging_us = aging_us;
}

/* Common front half of every listing: context, page size, cursor. */
static wf_code
page_begin(const wf_store_ctx *ctx, size_t *page_size, const char *cursor, bool *has_cursor,
           int64_t *c_num, char **c_str, wf_error *err)
{
    wf_code rc = check_ctx(ctx, true, err);
    if (rc != WF_OK)
        return rc;
    if (*page_size == 0)
        *page_size = DEFAULT_PAGE;
    if (*page_size > MAX_PAGE)
        *page_size = MAX_PAGE;
    *has_cursor = cursor != NULL && cursor[0] != '\0';
    *c_num = 0;
    *c_str = NULL;
    if (*has_cursor && !cursor_parse(cursor, ctx->arena, c_num, c_str))
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "invalid page token");
    return WF_OK;
}

/* Back half: trims the look-ahead row, and the rows past ctx->page_bytes,
 * and makes the next cursor from the last row kept. num_off/str_off
 * locate the keyset columns in the row. */
static wf_code
page_end(const wf_store *st, const wf_store_ctx *ctx, const wf_row_desc *d, const void *rows,
         size_t *n, size_t page_size, size_t num_off, bool num_is_i32, size_t str_off,
         char **next_cursor, wf_error *err)
{
    size_t row_size = d->size;
    *next_cursor = NULL;
    size_t fit = wf_store__rows_within(d, rows, *n < page_size ? *n : page_size, st->page_bytes);
    if (fit < page_size && fit < *n)
        page_size = fit; /* more rows follow: the page is full by bytes */
    if (*n <= page_size)
        return WF_OK;
    *n = page_size;
    const char *last = (const char *)rows + (page_size - 1) * row_size;
    int64_t num =
        num_is_i32 ? *(const int32_t *)(last + num_off) : *(const int64_t *)(last + num_off);
    *next_cursor = wf_store__cursor_make(ctx->arena, num, *(char *const *)(last + str_off));
    return *next_cursor != NULL ? WF_OK : wf_error_nomem(err);
}

int64_t
wf_task_sort_key(const wf_task_row *t, wf_task_sort sort)
{
    switch (sort) {
    case WF_TASK_SORT_PRIORITY:
        return t->priority;
    case WF_TASK_SORT_DUE:
        return t->due_at != 0 ? t->due_at : INT64_MAX;
    case WF_TASK_SORT_CREATED:
        break;
    }
    return t->created_at;
}

/* A task cursor: "<created_at>,<id>" for the creation order (the cursor
 * of every listing), "<key>,<created_at>,<id>" for the others. */
static bool
task_cursor_parse(const wf_task_filter *f, bool has, int64_t num, char *str, wf_task_keyset *k)
{
    *k = (wf_task_keyset){.has = has};
    if (!has)
        return true;
    if (f->sort == WF_TASK_SORT_CREATED) {
        k->key = k->created = num;
        k->id = str;
        return true;
    }
    char *comma = strchr(str, ',');
    if (comma == NULL || comma == str)
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(str, &end, 10);
    if (errno != 0 || end != comma)
        return false;
    k->key = num;
    k->created = v;
    k->id = comma + 1;
    return true;
}

wf_code
wf_store_list_tasks(wf_store *st, const wf_store_ctx *ctx, const wf_task_filter *f,
                    size_t page_size, const char *cursor, wf_task_row **rows, size_t *n,
                    char **next_cursor, wf_error *err)
{
    bool has;
    int64_t num;
    char *str;
    wf_task_row *r = NULL;
    size_t k = 0;
    wf_task_keyset after;
    static const wf_task_filter every = {0};
    if (f == NULL)
        f = &every;
    if (f->sort < WF_TASK_SORT_CREATED || f->sort > WF_TASK_SORT_DUE)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "unknown task order");
    wf_code rc = page_begin(ctx, &page_size, cursor, &has, &num, &str, err);
    if (rc == WF_OK && !task_cursor_parse(f, has, num, str, &after))
        rc = wf_error_set(err, WF_E_INVALID_ARGUMENT, "invalid page token");
    if (rc == WF_OK)
        rc = st->ops->list_tasks(st, ctx, f, page_size + 1, &after, &r, &k, err);
    if (rc == WF_OK)
        rc = page_end(st, ctx, &wf_store__task_desc, r, &k, page_size,
                      offsetof(wf_task_row, created_at), false, offsetof(wf_task_row, id),
                      next_cursor, err);
    if (rc == WF_OK && *next_cursor != NULL && f->sort != WF_TASK_SORT_CREATED) {
        *next_cursor = wf_arena_printf(ctx->arena, "%" PRId64 ",%s",
                                       wf_task_sort_key(&r[k - 1], f->sort), *next_cursor);
        if (*next_cursor == NULL)
            rc = wf_error_nomem(err);
    }
    if (rc == WF_OK) {
        *rows = r;
        *n = k;
    }
    return rc;
}

wf_code
wf_store_list_instances(wf_store *st, const wf_store_ctx *ctx, const wf_instance_filter *f,
                        size_t page_size, const char *cursor, wf_instance_row **rows, size_t *n,
                        char **next_cursor, wf_error *err)
{
    bool has;
    int64_t num;
    char *str;
    wf_instance_row *r = NULL;
    size_t k = 0;
    wf_code rc = page_begin(ctx, &page_size, cursor, &has, &num, &str, err);
    if (rc == WF_OK)
        rc = st->ops->list_instances(st, ctx, f != NULL ? f : &(wf_instance_filter){0},
                                     page_size + 1, has, num, str, &r, &k, err);
    if (rc == WF_OK)
        rc = page_end(st, ctx, &wf_store__instance_desc, r, &k, page_size,
                      offsetof(wf_instance_row, created_at), false, offsetof(wf_instance_row, id),
                      next_cursor, err);
    if (rc == WF_OK) {
        *rows = r;
        *n = k;
    }
    return rc;
}

wf_code
wf_store_list_incidents(wf_store *st, const wf_store_ctx *ctx, const wf_incident_filter *f,
                        size_t page_size, const char *cursor, wf_instance_row **rows, size_t *n,
                        char **next_cursor, wf_error *err)
{
    bool has;
    int64_t num;
    char *str;
    wf_instance_row *r = NULL;
    size_t k = 0;
    wf_code rc = page_begin(ctx, &page_size, cursor, &has, &num, &str, err);
    if (rc == WF_OK)
        rc = st->ops->list_incidents(st, ctx, f != NULL ? f : &(wf_incident_filter){0},
                                     page_size + 1, has, num, str, &r, &k, err);
    if (rc == WF_OK)
        rc = page_end(st, ctx, &wf_store__instance_desc, r, &k, page_size,
                      offsetof(wf_instance_row, incident_at), false, offsetof(wf_instance_row, id),
                      next_cursor, err);
    if (rc == WF_OK) {
        *rows = r;
        *n = k;
    }
    return rc;
}

wf_code
wf_store_list_definitions(wf_store *st, const wf_store_ctx *ctx, size_t page_size,
                          const char *cursor, wf_definition_row **rows, size_t *n,
                          char **next_cursor, wf_error *err)
{
    bool has;
    int64_t num;
    char *str;
    wf_definition_row *r = NULL;
    size_t k = 0;
    wf_code rc = page_begin(ctx, &page_size, cursor, &has, &num, &str, err);
    if (rc == WF_OK)
        rc = st->ops->list_definitions(st, ctx, page_size + 1, has, num, str, &r, &k, err);
    if (rc == WF_OK)
        rc = page_end(st, ctx, &wf_store__definition_desc, r, &k, page_size,
                      offsetof(wf_definition_row, version), true, offsetof(wf_definition_row, key),
                      next_cursor, err);
    if (rc == WF_OK) {
        *rows = r;
        *n = k;
    }
    return rc;
}

wf_code
wf_store_list_signals(wf_store *st, const wf_store_ctx *ctx, const wf_signal_filter *f,
                      size_t page_size, const char *cursor, wf_signal_row **rows, size_t *n,
                      char **next_cursor, wf_error *err)
{
    bool has;
    int64_t num;
    char *str;
    wf_signal_row *r = NULL;
    size_t k = 0;
    wf_code rc = page_begin(ctx, &page_size, cursor, &has, &num, &str, err);
    if (rc == WF_OK)
        rc = st->ops->list_signals(st, ctx, f != NULL ? f : &(wf_signal_filter){0}, page_size + 1,
                                   has, num, str, &r, &k, err);
    if (rc == WF_OK)
        rc = page_end(st, ctx, &wf_store__signal_desc, r, &k, page_size,
                      offsetof(wf_signal_row, received_at), false, offsetof(wf_signal_row, id),
                      next_cursor, err);
    if (rc == WF_OK) {
        *rows = r;
        *n = k;
    }
    return rc;
}

wf_code
wf_store_list_work_items(wf_store *st, const wf_store_ctx *ctx, const char *instance_id,
                         unsigned states, size_t page_size, const char *cursor,
                         wf_work_item_row **rows, size_t *n, char **next_cursor, wf_error *err)
{
    bool has;
    int64_t num;
    char *str;
    wf_work_item_row *r = NULL;
    size_t k = 0;
    wf_code rc = page_begin(ctx, &page_size, cursor, &has, &num, &str, err);
    if (rc == WF_OK && instance_id == NULL)
        rc = wf_error_set(err, WF_E_INVALID_ARGUMENT, "an instance id is required");
    if (rc == WF_OK)
        rc = st->ops->list_work_items(st, ctx, instance_id, states, page_size + 1, has, num, str,
                                      &r, &k, err);
    if (rc == WF_OK)
        rc = page_end(st, ctx, &wf_store__work_item_desc, r, &k, page_size,
                      offsetof(wf_work_item_row, enabled_at), false, offsetof(wf_work_item_row, id),
                      next_cursor, err);
    if (rc == WF_OK) {
        *rows = r;
        *n = k;
    }
    return rc;
}

wf_code
wf_store_activate_jobs(wf_store *st, const wf_store_ctx *ctx, const char *job_type,
                       const char *worker, size_t max, int64_t lease_ms, int64_t now,
                       wf_job_row **rows, size_t *n, wf_error *err)
{
    wf_code rc = check_ctx(ctx, true, err);
    if (rc != WF_OK)
        return rc;
    if (job_type == NULL || worker == NULL || lease_ms <= 0)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                            "job activation needs a job type, a worker and a lease");
    if (max == 0) {
        *rows = NULL;
        *n = 0;
        return WF_OK;
    }
    if (max > MAX_PAGE)
        max = MAX_PAGE;
    return st->ops->activate_jobs(st, ctx, job_type, worker, max, 0, lease_ms, now, rows, n, err);
}

wf_code
wf_tx_activate_jobs(wf_tx *tx, const char *job_type, const char *worker, size_t max,
                    size_t max_bytes, int64_t lease_ms, int64_t now, wf_job_row **rows, size_t *n,
                    wf_error *err)
{
    wf_code rc = check_tx(tx, err);
    if (rc != WF_OK)
        return rc;
    if (job_type == NULL || worker == NULL || lease_ms <= 0)
        return tx_done(tx, wf_error_set(err, WF_E_INVALID_ARGUMENT,
                                        "job activation needs a job type, a worker and a lease"));
    if (max == 0) {
        *rows = NULL;
        *n = 0;
        return WF_OK;
    }
    if (max > MAX_PAGE)
        max = MAX_PAGE;
    return tx_done(tx, tx->st->ops->tx_activate_jobs(tx, job_type, worker, max, max_bytes, lease_ms,
                                                     now, rows, n, err));
}

wf_code
wf_store_claim_due_timers(wf_store *st, const wf_store_ctx *ctx, int64_t now, size_t limit,
                          int64_t claim_ms, wf_timer_row **rows, size_t *n, wf_error *err)
{
    wf_code rc = check_ctx(ctx, false, err);
    if (rc != WF_OK)
        return rc;
    if (limit == 0 || limit > MAX_PAGE)
        limit = limit == 0 ? DEFAULT_PAGE : MAX_PAGE;
    return st->ops->claim_due_timers(st, ctx, NULL, now, limit, claim_ms, rows, n, err);
}

wf_code
wf_store_claim_tenant_timers(wf_store *st, const wf_store_ctx *ctx, int64_t now, size_t limit,
                             int64_t claim_ms, wf_timer_row **rows, size_t *n, wf_error *err)
{
    wf_code rc = check_ctx(ctx, true, err);
    if (rc != WF_OK)
        return rc;
    if (limit == 0 || limit > MAX_PAGE)
        limit = limit == 0 ? DEFAULT_PAGE : MAX_PAGE;
    return st->ops->claim_due_timers(st, ctx, ctx->tenant, now, limit, claim_ms, rows, n, err);
}

wf_code
wf_store_find_expired_leases(wf_store *st, const wf_store_ctx *ctx, int64_t now, size_t limit,
                             wf_job_row **rows, size_t *n, wf_error *err)
{
    wf_code rc = check_ctx(ctx, false, err);
    if (rc != WF_OK)
        return rc;
    if (limit == 0 || limit > MAX_PAGE)
        limit = limit == 0 ? DEFAULT_PAGE : MAX_PAGE;
    return st->ops->find_expired_leases(st, ctx, now, limit, rows, n, err);
}

wf_code
wf_store_expire_signals(wf_store *st, const wf_store_ctx *ctx, int64_t now, size_t limit, size_t *n,
                        wf_error *err)
{
    wf_code rc = check_ctx(ctx, false, err);
    if (rc != WF_OK)
        return rc;
    if (limit == 0 || limit > MAX_PAGE)
        limit = limit == 0 ? DEFAULT_PAGE : MAX_PAGE;
    return st->ops->expire_signals(st, ctx, now, limit, n, err);
}

wf_code
wf_store_sweep(wf_store *st, const wf_store_ctx *ctx, wf_sweep_kind kind, int64_t before,
               size_t limit, size_t *n, wf_error *err)
{
    wf_code rc = check_ctx(ctx, false, err);
    if (rc != WF_OK)
        return rc;
    if (kind != WF_SWEEP_SIGNALS && kind != WF_SWEEP_IDEMPOTENCY && kind != WF_SWEEP_EVENTS &&
        kind != WF_SWEEP_DELIVERIES)
        return wf_error_set(err, WF_E_INTERNAL, "unknown retention sweep %d", (int)kind);
    if (limit == 0 || limit > MAX_PAGE)
        limit = limit == 0 ? DEFAULT_PAGE : MAX_PAGE;
    return st->ops->sweep(st, ctx, kind, before, limit, n, err);
}

wf_code
wf_store_find_subscriptions(wf_store *st, const wf_store_ctx *ctx, const char *name,
                            const char *instance_id, const char *aggregate_type,
                            const char *aggregate_id, wf_subscription_row **rows, size_t *n,
                            wf_error *err)
{
    wf_code rc = check_ctx(ctx, true, err);
    if (rc != WF_OK)
        return rc;
    if (name == NULL || (instance_id == NULL && (aggregate_type == NULL || aggregate_id == NULL)))
        return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                            "signal correlation needs a name and an instance or an aggregate");
    return st->ops->find_subscriptions(st, ctx, name, instance_id, aggregate_type, aggregate_id,
                                       rows, n, err);
}

wf_code
wf_store_read_events(wf_store *st, const wf_store_ctx *ctx, int64_t after_sequence,
                     const wf_event_filter *f, size_t limit, wf_event_row **rows, size_t *n,
                     wf_error *err)
{
    static const wf_event_filter none = {0};
    wf_code rc = check_ctx(ctx, true, err);
    if (rc != WF_OK)
        return rc;
    if (limit == 0)
        limit = 100;
    if (limit > MAX_PAGE)
        limit = MAX_PAGE;
    rc = st->ops->read_events(st, ctx, after_sequence, f != NULL ? f : &none, limit, rows, n, err);
    /* A batch bounded by bytes too; the reader goes on after its last. */
    if (rc == WF_OK)
        *n = wf_store__rows_within(&wf_store__event_desc, *rows, *n, st->page_bytes);
    return rc;
}

wf_code
wf_store_sequence_events(wf_store *st, const wf_store_ctx *ctx, wf_error *err)
{
    wf_code rc = check_ctx(ctx, false, err);
    if (rc != WF_OK)
        return rc;
    return st->ops->sequence_events(st, ctx, err);
}

wf_code
wf_store_count_backlog(wf_store *st, const wf_store_ctx *ctx, int64_t now, size_t max_types,
                       wf_store_counts *out, wf_error *err)
{
    wf_code rc = check_ctx(ctx, false, err);
    if (rc != WF_OK)
        return rc;
    wf_store_counts c = {0};
    rc = st->ops->count_backlog(st, ctx, now, max_types, &c, err);
    if (rc == WF_OK)
        *out = c;
    return rc;
}

wf_code
wf_store_set_listener(wf_store *st, wf_store_listen_fn fn, void *arg, wf_error *err)
{
    if (fn == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "cannot listen without a callback");
    return st->ops->set_listener(st, fn, arg, err);
}

/* ---- batch operations --------------------------------------------------- */

wf_code
wf_tx_put_batch(wf_tx *tx, const wf_batch_row *in, wf_error *err)
{
    wf_code rc = check_tx(tx, err);
    if (rc == WF_OK && (in == NULL || in->id == NULL || in->version != 0))
        rc = wf_error_set(err, WF_E_INTERNAL, "a new batch operation needs an id and version 0");
    return rc != WF_OK ? tx_done(tx, rc) : tx_done(tx, tx->st->ops->put_batch(tx, in, err));
}

wf_code
wf_store_get_batch(wf_store *st, const wf_store_ctx *ctx, const char *id, wf_batch_row *out,
                   wf_error *err)
{
    bool found = false;
    wf_code rc = check_ctx(ctx, true, err);
    if (rc == WF_OK)
        rc = st->ops->get_batch(st, ctx, id, out, &found, err);
    if (rc == WF_OK && !found)
        return wf_error_set(err, WF_E_BATCH_OPERATION_NOT_FOUND,
                            "batch operation \"%s\" does not exist", id);
    return rc;
}

wf_code
wf_store_update_batch(wf_store *st, const wf_store_ctx *ctx, const wf_batch_row *in, wf_error *err)
{
    bool found = false;
    wf_code rc = check_ctx(ctx, true, err);
    if (rc == WF_OK)
        rc = st->ops->update_batch(st, ctx, in, &found, err);
    if (rc == WF_OK && !found)
        return wf_error_set(err, WF_E_BATCH_OPERATION_NOT_FOUND,
                            "batch operation \"%s\" does not exist", in->id);
    return rc;
}

wf_code
wf_store_list_batches(wf_store *st, const wf_store_ctx *ctx, size_t page_size, const char *cursor,
                      wf_batch_row **rows, size_t *n, char **next_cursor, wf_error *err)
{
    bool has;
    int64_t num;
    char *str;
    wf_batch_row *r = NULL;
    size_t k = 0;
    wf_code rc = page_begin(ctx, &page_size, cursor, &has, &num, &str, err);
    if (rc == WF_OK)
        rc = st->ops->list_batches(st, ctx, page_size + 1, has, num, str, &r, &k, err);
    if (rc == WF_OK)
        rc = page_end(st, ctx, &wf_store__batch_desc, r, &k, page_size,
                      offsetof(wf_batch_row, created_at), false, offsetof(wf_batch_row, id),
                      next_cursor, err);
    if (rc == WF_OK) {
        *rows = r;
        *n = k;
    }
    return rc;
}

wf_code
wf_store_claim_batches(wf_store *st, const wf_store_ctx *ctx, const char *owner, int64_t now,
                       int64_t lease_ms, size_t limit, wf_batch_row **rows, size_t *n,
                       wf_error *err)
{
    wf_code rc = check_ctx(ctx, false, err);
    if (rc == WF_OK && (owner == NULL || owner[0] == '\0' || limit == 0))
        rc = wf_error_set(err, WF_E_INTERNAL, "a claim of batch operations needs an owner");
    if (rc != WF_OK)
        return rc;
    return st->ops->claim_batches(st, ctx, owner, now, lease_ms, limit, rows, n, err);
}

/* ---- schedules ----------------------------------------------------------- */

wf_code
wf_tx_put_schedule(wf_tx *tx, const wf_schedule_row *in, wf_error *err)
{
    wf_code rc = check_tx(tx, err);
    if (rc == WF_OK && (in == NULL || in->id == NULL || in->version != 0))
        rc = wf_error_set(err, WF_E_INTERNAL, "a new schedule needs an id and version 0");
    return rc != WF_OK ? tx_done(tx, rc) : tx_done(tx, tx->st->ops->put_schedule(tx, in, err));
}

static wf_code
schedule_missing(const char *id, wf_error *err)
{
    return wf_error_set(err, WF_E_SCHEDULE_NOT_FOUND, "schedule \"%.128s\" does not exist", id);
}

wf_code
wf_store_get_schedule(wf_store *st, const wf_store_ctx *ctx, const char *id, wf_schedule_row *out,
                      wf_error *err)
{
    bool found = false;
    wf_code rc = check_ctx(ctx, true, err);
    if (rc == WF_OK)
        rc = st->ops->get_schedule(st, ctx, id, out, &found, err);
    return rc == WF_OK && !found ? schedule_missing(id, err) : rc;
}

wf_code
wf_store_update_schedule(wf_store *st, const wf_store_ctx *ctx, const wf_schedule_row *in,
                         wf_error *err)
{
    bool found = false;
    wf_code rc = check_ctx(ctx, true, err);
    if (rc == WF_OK)
        rc = st->ops->update_schedule(st, ctx, in, &found, err);
    return rc == WF_OK && !found ? schedule_missing(in->id, err) : rc;
}

wf_code
wf_store_delete_schedule(wf_store *st, const wf_store_ctx *ctx, const char *id, wf_error *err)
{
    bool found = false;
    wf_code rc = check_ctx(ctx, true, err);
    if (rc == WF_OK)
        rc = st->ops->delete_schedule(st, ctx, id, &found, err);
    return rc == WF_OK && !found ? schedule_missing(id, err) : rc;
}

wf_code
wf_store_list_schedules(wf_store *st, const wf_store_ctx *ctx, size_t page_size, const char *cursor,
                        wf_schedule_row **rows, size_t *n, char **next_cursor, wf_error *err)
{
    bool has;
    int64_t num;
    char *str;
    wf_schedule_row *r = NULL;
    size_t k = 0;
    wf_code rc = page_begin(ctx, &page_size, cursor, &has, &num, &str, err);
    if (rc == WF_OK)
        rc = st->ops->list_schedules(st, ctx, page_size + 1, has, num, str, &r, &k, err);
    if (rc == WF_OK)
        rc = page_end(st, ctx, &wf_store__schedule_desc, r, &k, page_size,
                      offsetof(wf_schedule_row, created_at), false, offsetof(wf_schedule_row, id),
                      next_cursor, err);
    if (rc == WF_OK) {
        *rows = r;
        *n = k;
    }
    return rc;
}

wf_code
wf_store_claim_schedules(wf_store *st, const wf_store_ctx *ctx, const char *owner, int64_t now,
                         int64_t lease_ms, size_t limit, wf_schedule_row **rows, size_t *n,
                         wf_error *err)
{
    wf_code rc = check_ctx(ctx, false, err);
    if (rc == WF_OK && (owner == NULL || owner[0] == '\0' || limit == 0))
        rc = wf_error_set(err, WF_E_INTERNAL, "a claim of schedules needs an owner");
    if (rc != WF_OK)
        return rc;
    return st->ops->claim_schedules(st, ctx, owner, now, lease_ms, limit, rows, n, err);
}

/* ---- resources ----------------------------------------------------------- */

static wf_code
resource_missing(const char *name, wf_error *err)
{
    return wf_error_set(err, WF_E_RESOURCE_NOT_FOUND, "resource \"%.128s\" does not exist", name);
}

wf_code
wf_store_get_resource(wf_store *st, const wf_store_ctx *ctx, const char *name, wf_resource_row *out,
                      wf_error *err)
{
    bool found = false;
    wf_code rc = check_ctx(ctx, true, err);
    if (rc == WF_OK)
        rc = st->ops->get_resource(st, ctx, name, out, &found, err);
    return rc == WF_OK && !found ? resource_missing(name, err) : rc;
}

wf_code
wf_store_save_resource(wf_store *st, const wf_store_ctx *ctx, const wf_resource_row *in,
                       wf_error *err)
{
    bool found = true;
    wf_code rc = check_ctx(ctx, true, err);
    if (rc == WF_OK && (in == NULL || in->name == NULL))
        rc = wf_error_set(err, WF_E_INTERNAL, "a resource needs a name");
    if (rc == WF_OK)
        rc = st->ops->save_resource(st, ctx, in, &found, err);
    return rc == WF_OK && !found ? resource_missing(in->name, err) : rc;
}

wf_code
wf_store_delete_resource(wf_store *st, const wf_store_ctx *ctx, const char *name, wf_error *err)
{
    bool found = false;
    wf_code rc = check_ctx(ctx, true, err);
    if (rc == WF_OK)
        rc = st->ops->delete_resource(st, ctx, name, &found, err);
    return rc == WF_OK && !found ? resource_missing(name, err) : rc;
}

wf_code
wf_store_list_resources(wf_store *st, const wf_store_ctx *ctx, size_t page_size, const char *cursor,
                        wf_resource_row **rows, size_t *n, char **next_cursor, wf_error *err)
{
    bool has;
    int64_t num;
    char *str;
    wf_resource_row *r = NULL;
    size_t k = 0;
    wf_code rc = page_begin(ctx, &page_size, cursor, &has, &num, &str, err);
    if (rc == WF_OK)
        rc = st->ops->list_resources(st, ctx, page_size + 1, has, num, str, &r, &k, err);
    if (rc == WF_OK)
        rc = page_end(st, ctx, &wf_store__resource_desc, r, &k, page_size,
                      offsetof(wf_resource_row, created_at), false, offsetof(wf_resource_row, name),
                      next_cursor, err);
    if (rc == WF_OK) {
        *rows = r;
        *n = k;
    }
    return rc;
}

wf_code
wf_tx_put_schedule_run(wf_tx *tx, const wf_schedule_run_row *in, wf_error *err)
{
    wf_code rc = check_tx(tx, err);
    if (rc == WF_OK && (in == NULL || in->schedule_id == NULL))
        rc = wf_error_set(err, WF_E_INTERNAL, "a schedule run needs its schedule");
    return rc != WF_OK ? tx_done(tx, rc) : tx_done(tx, tx->st->ops->put_schedule_run(tx, in, err));
}

wf_code
wf_tx_settle_schedule_run(wf_tx *tx, const wf_schedule_run_row *in, wf_error *err)
{
    wf_code rc = check_tx(tx, err);
    if (rc == WF_OK && (in == NULL || in->schedule_id == NULL))
        rc = wf_error_set(err, WF_E_INTERNAL, "a schedule run needs its schedule");
    return rc != WF_OK ? tx_done(tx, rc)
                       : tx_done(tx, tx->st->ops->settle_schedule_run(tx, in, err));
}

wf_code
wf_store_list_schedule_runs(wf_store *st, const wf_store_ctx *ctx, const char *schedule_id,
                            size_t page_size, const char *cursor, wf_schedule_run_row **rows,
                            size_t *n, char **next_cursor, wf_error *err)
{
    bool has;
    int64_t num;
    char *str;
    wf_schedule_run_row *r = NULL;
    size_t k = 0;
    wf_code rc = page_begin(ctx, &page_size, cursor, &has, &num, &str, err);
    if (rc == WF_OK)
        rc =
            st->ops->list_schedule_runs(st, ctx, schedule_id, page_size + 1, has, num, &r, &k, err);
    if (rc == WF_OK)
        rc = page_end(st, ctx, &wf_store__schedule_run_desc, r, &k, page_size,
                      offsetof(wf_schedule_run_row, nominal_at), false,
                      offsetof(wf_schedule_run_row, schedule_id), next_cursor, err);
    if (rc == WF_OK) {
        *rows = r;
        *n = k;
    }
    return rc;
}

/* ---- fan-out of a signal sent to an aggregate ---------------------------------------------- */

wf_code
wf_tx_fanout_targets(wf_tx *tx, const char *signal_log_id, const char *name,
                     const char *aggregate_type, const char *aggregate_id, int64_t before_at,
                     const char *before_id, int64_t received_at, int64_t now, size_t page,
                     wf_fanout_out *out, wf_error *err)
{
    memset(out, 0, sizeof *out);
    wf_code rc = check_tx(tx, err);
    if (rc != WF_OK)
        return rc;
    return tx_done(tx, tx->st->ops->fanout_targets(tx, signal_log_id, name, aggregate_type,
                                                   aggregate_id, before_at, before_id, received_at,
                                                   now, page, out, err));
}

wf_code
wf_tx_take_delivery(wf_tx *tx, const char *signal_log_id, const char *root_id,
                    const char *instance_id, wf_delivery_state state, int64_t now, bool *taken,
                    wf_error *err)
{
    *taken = false;
    wf_code rc = check_tx(tx, err);
    if (rc != WF_OK)
        return rc;
    return tx_done(tx, tx->st->ops->take_delivery(tx, signal_log_id, root_id, instance_id, state,
                                                  now, taken, err));
}

wf_code
wf_store_pending_deliveries(wf_store *st, const wf_store_ctx *ctx, const char *aggregate_type,
                            const char *aggregate_id, size_t limit, wf_delivery_row **rows,
                            size_t *n, wf_error *err)
{
    *rows = NULL;
    *n = 0;
    wf_code rc = check_ctx(ctx, true, err);
    if (rc != WF_OK || limit == 0)
        return rc;
    return st->ops->pending_deliveries(st, ctx, aggregate_type, aggregate_id, limit, rows, n, err);
}

wf_code
wf_tx_get_signal(wf_tx *tx, const char *id, wf_signal_row *out, bool *found, wf_error *err)
{
    *found = false;
    wf_code rc = check_tx(tx, err);
    if (rc != WF_OK)
        return rc;
    return tx_done(tx, tx->st->ops->tx_get_signal(tx, id, out, found, err));
}

wf_code
wf_store_claim_deliveries(wf_store *st, const wf_store_ctx *ctx, int64_t now, int64_t lease_ms,
                          size_t limit, wf_delivery_row **rows, size_t *n, wf_error *err)
{
    *rows = NULL;
    *n = 0;
    wf_code rc = check_ctx(ctx, false, err);
    if (rc != WF_OK || limit == 0)
        return rc;
    return st->ops->claim_deliveries(st, ctx, now, lease_ms, limit, rows, n, err);
}

wf_code
wf_store_find_queued_signals(wf_store *st, const wf_store_ctx *ctx, size_t limit,
                             wf_signal_row **rows, size_t *n, wf_error *err)
{
    *rows = NULL;
    *n = 0;
    wf_code rc = check_ctx(ctx, false, err);
    if (rc != WF_OK || limit == 0)
        return rc;
    return st->ops->find_queued_signals(st, ctx, limit, rows, n, err);
}

wf_code
wf_store_count_deliveries(wf_store *st, const wf_store_ctx *ctx, const char *signal_log_id,
                          wf_delivery_counts *out, wf_error *err)
{
    memset(out, 0, sizeof *out);
    wf_code rc = check_ctx(ctx, true, err);
    if (rc != WF_OK)
        return rc;
    return st->ops->count_deliveries(st, ctx, signal_log_id, out, err);
}

wf_code
wf_store_fleet_counts(wf_store *st, const wf_store_ctx *ctx, const char *definition_key,
                      int32_t version, wf_fleet_counts *out, wf_error *err)
{
    memset(out, 0, sizeof *out);
    wf_code rc = check_ctx(ctx, true, err);
    if (rc != WF_OK)
        return rc;
    if (definition_key == NULL || version < 0)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "a definition key and a version >= 0");
    return st->ops->fleet_counts(st, ctx, definition_key, version, out, err);
}

wf_code
wf_store_fleet_instances(wf_store *st, const wf_store_ctx *ctx, const char *definition_key,
                         int32_t version, wf_fleet_kind kind, const char *element,
                         const char *after, size_t limit, char ***ids, size_t *n, wf_error *err)
{
    *ids = NULL;
    *n = 0;
    wf_code rc = check_ctx(ctx, true, err);
    if (rc != WF_OK)
        return rc;
    if (definition_key == NULL || version < 0 || element == NULL || kind < WF_FLEET_TOKENS ||
        kind > WF_FLEET_INCIDENTS)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "a definition key, kind and element");
    if (limit == 0)
        return WF_OK;
    return st->ops->fleet_instances(st, ctx, definition_key, version, kind, element, after, limit,
                                    ids, n, err);
}

bool
wf_store__set_add(const char **set, size_t *n, size_t max, const char *s, bool copy)
{
    if (s == NULL)
        return false;
    for (size_t i = 0; i < *n; i++)
        if (strcmp(set[i], s) == 0)
            return true;
    if (*n == max)
        return false;
    const char *v = copy ? strdup(s) : s;
    if (v == NULL)
        return false;
    set[(*n)++] = v;
    return true;
}

char *
wf_store__events_payload(const char *const *roots, size_t n, bool any)
{
    size_t len = 1;
    for (size_t i = 0; !any && i < n; i++)
        len += strlen(roots[i]) + 1;
    char *out = malloc(len), *p = out;
    if (out == NULL)
        return NULL;
    for (size_t i = 0; !any && i < n; i++) {
        size_t k = strlen(roots[i]);
        if (i > 0)
            *p++ = ' ';
        memcpy(p, roots[i], k);
        p += k;
    }
    *p = '\0';
    return out;
}
