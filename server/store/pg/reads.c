/*
 * pg/reads.c: the Postgres store's reads outside a unit of work,
 * its cross-instance work (job activation, timer claims, sweeps) and the
 * event reads with their sequencer.
 */
#include "pg/pg_int.h"

#include <inttypes.h>
#include <pthread.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wf_log.h"
#include "wf_time.h"

/* Sequencer: rows numbered per batch (one short transaction each), the
 * longest wait for another session's batch, and how many batches a read
 * runs before reading anyway (a backlog is caught up over several calls). */
#define SEQ_BATCH 1000
#define SEQ_WAIT_MS 1000
#define SEQ_READ_ROUNDS 10
#define SEQ_TICK_ROUNDS 1000

/* ---- reads outside a unit of work -------------------------------------------- */

/* Runs one row-returning statement on a borrowed connection. */
wf_code
wf_store_pg__query(pg_store *s, const wf_store_ctx *ctx, int id, const params *p,
                   const wf_row_desc *d, void *rows, size_t *n, wf_error *err)
{
    wf_store_pg_conn *c = NULL;
    wf_code rc = wf_store_pg__conn_get(s, ctx, &c, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_store_pg__run_rows(c, id, p, ctx->deadline_ms, d, ctx->arena, rows, n, err);
    wf_store_pg__conn_put(s, c);
    return rc;
}

wf_code
wf_store_pg__query_page(pg_store *s, const wf_store_ctx *ctx, int id, const wf_row_desc *d,
                        size_t limit, bool has, int64_t c_num, const char *c_str, void *rows,
                        size_t *n, wf_error *err)
{
    params p = {.a = ctx->arena};
    wf_store_pg__p_str(&p, ctx->tenant);
    wf_store_pg__p_i64(&p, has ? c_num : INT64_MAX);
    wf_store_pg__p_str(&p, has ? c_str : "");
    wf_store_pg__p_i64(&p, (int64_t)limit);
    return wf_store_pg__query(s, ctx, id, &p, d, rows, n, err);
}

wf_code
wf_store_pg__delete_keyed(pg_store *s, const wf_store_ctx *ctx, int id, const char *key,
                          bool *found, wf_error *err)
{
    params p = wf_store_pg__p_tenant(ctx, key);
    wf_store_pg_conn *c = NULL;
    wf_code rc = wf_store_pg__conn_get(s, ctx, &c, err);
    if (rc != WF_OK)
        return rc;
    long affected = 0;
    rc = wf_store_pg__run_cmd(c, id, &p, ctx->deadline_ms, &affected, err);
    wf_store_pg__conn_put(s, c);
    *found = affected > 0;
    return rc;
}

/* A query for at most one row, copied into out. */
static wf_code
query_one(pg_store *s, const wf_store_ctx *ctx, int id, const params *p, const wf_row_desc *d,
          void *out, bool *found, wf_error *err)
{
    void *rows;
    size_t n;
    wf_code rc = wf_store_pg__query(s, ctx, id, p, d, &rows, &n, err);
    if (rc == WF_OK) {
        *found = n > 0;
        if (n > 0)
            memcpy(out, rows, d->size);
    }
    return rc;
}

wf_code
wf_store_pg__get_definition(wf_store *st, const wf_store_ctx *ctx, const char *key, int32_t version,
                            wf_definition_row *out, bool *found, wf_error *err)
{
    pg_store *s = (pg_store *)st;
    int got = version > 0 ? wf_store_pg__defs_get(s, ctx, key, version, out) : 0;
    if (got != 0) {
        *found = got > 0;
        return got > 0 ? WF_OK : wf_error_nomem(err);
    }
    wf_store_pg_conn *c = NULL;
    wf_code rc = wf_store_pg__conn_get(s, ctx, &c, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_store_pg__read_definition(c, ctx, key, version, out, found, err);
    wf_store_pg__conn_put(s, c);
    if (rc == WF_OK && *found)
        wf_store_pg__defs_put(s, out); /* outside a transaction: committed */
    return rc;
}

wf_code
wf_store_pg__get_instance(wf_store *st, const wf_store_ctx *ctx, const char *id,
                          wf_instance_row *out, bool *found, wf_error *err)
{
    params p = wf_store_pg__p_tenant(ctx, id);
    return query_one((pg_store *)st, ctx, S_GET_INSTANCE, &p, &wf_store__instance_desc, out, found,
                     err);
}

wf_code
wf_store_pg__get_task(wf_store *st, const wf_store_ctx *ctx, const char *id, wf_task_row *out,
                      bool *found, wf_error *err)
{
    params p = wf_store_pg__p_tenant(ctx, id);
    return query_one((pg_store *)st, ctx, S_GET_TASK, &p, &wf_store__task_desc, out, found, err);
}

wf_code
wf_store_pg__get_job_by_key(wf_store *st, const wf_store_ctx *ctx, const char *key, wf_job_row *out,
                            bool *found, wf_error *err)
{
    params p = wf_store_pg__p_tenant(ctx, key);
    return query_one((pg_store *)st, ctx, S_GET_JOB_BY_KEY, &p, &wf_store__job_desc, out, found,
                     err);
}

/* Appends the keyset cursor (number, text) or two NULLs. */
static void
p_cursor(params *p, bool has, int64_t num, const char *str)
{
    if (has) {
        wf_store_pg__p_i64(p, num);
        wf_store_pg__p_str(p, str);
    } else {
        wf_store_pg__p_str(p, NULL);
        wf_store_pg__p_str(p, NULL);
    }
}

/* Appends the keyset cursor, or on the first page one below every row
 * (the smallest number, the empty id), so that the statement's cursor
 * condition is always an index condition. */
static void
p_after(params *p, bool has, int64_t num, const char *str)
{
    p_cursor(p, true, has ? num : INT64_MIN, has ? str : "");
}

static bool
given(const char *s)
{
    return s != NULL && s[0] != '\0';
}

wf_code
wf_store_pg__list_tasks(wf_store *st, const wf_store_ctx *ctx, const wf_task_filter *f,
                        size_t limit, const wf_task_keyset *after, wf_task_row **rows, size_t *n,
                        wf_error *err)
{
    /* A user's inbox (the group is then ignored), a group's, or all; then
     * the order (pg/pg_int.h: six statements per shape). */
    int id = f->user != NULL    ? S_LIST_TASKS_USER
             : f->group != NULL ? S_LIST_TASKS_GROUP
                                : S_LIST_TASKS_ALL;
    id += 2 * (int)f->sort + (f->descending ? 1 : 0);
    params p = {.a = ctx->arena};
    wf_store_pg__p_str(&p, ctx->tenant);
    if (f->user != NULL) {
        wf_store_pg__p_str(&p, f->user);
        wf_store_pg__p_text_array(&p, f->groups, f->n_groups);
    } else if (f->group != NULL) {
        wf_store_pg__p_str(&p, f->group);
    }
    wf_store_pg__p_int_array(&p, (const int *)f->states, f->n_states);
    wf_store_pg__p_i64(&p, f->due_after);
    wf_store_pg__p_i64(&p, f->due_before);
    /* The first page starts beyond every row in the order asked. */
    int64_t edge = f->descending ? INT64_MAX : INT64_MIN;
    if (f->sort != WF_TASK_SORT_CREATED)
        wf_store_pg__p_i64(&p, after->has ? after->key : edge);
    wf_store_pg__p_i64(&p, after->has ? after->created : edge);
    /* No id sorts below "" ascending; descending, a page of keys below
     * INT64_MAX starts past every row whatever the id, and a row at
     * INT64_MAX itself (a due key without a due time) needs an id above
     * every id: ids are printable ASCII, below "\x7f". */
    wf_store_pg__p_str(&p, after->has ? after->id : f->descending ? "\x7f" : "");
    wf_store_pg__p_i64(&p, (int64_t)limit);
    return wf_store_pg__query((pg_store *)st, ctx, id, &p, &wf_store__task_desc, rows, n, err);
}

/* The variable filters of f as one containment document under the
 * tenant's key ({tenant: {k1: {k2: value}}}), in *doc (NULL without
 * filters). *never: two filters that cannot both hold (one path with two
 * values, a path inside another's scalar). */
static wf_code
vars_doc(const wf_store_ctx *ctx, const wf_instance_filter *f, char **doc, bool *never,
         wf_error *err)
{
    *doc = NULL;
    *never = false;
    if (f->n_vars == 0)
        return WF_OK;
    json_t *root = json_object();
    json_t *vars = json_object();
    if (root == NULL || vars == NULL || json_object_set_new(root, ctx->tenant, vars) != 0) {
        json_decref(root);
        return wf_error_nomem(err);
    }
    wf_code rc = WF_OK;
    for (size_t i = 0; rc == WF_OK && !*never && i < f->n_vars; i++) {
        const wf_var_filter *vf = &f->vars[i];
        json_t *at = vars;
        for (size_t k = 0; !*never && k + 1 < vf->n_keys; k++) {
            json_t *next = json_object_get(at, vf->keys[k]);
            if (next == NULL) {
                next = json_object();
                if (next == NULL || json_object_set_new(at, vf->keys[k], next) != 0) {
                    rc = wf_error_nomem(err);
                    break;
                }
            } else if (!json_is_object(next)) {
                *never = true;
            }
            at = next;
        }
        if (rc != WF_OK || *never)
            break;
        json_t *want = json_loads(vf->value_json, JSON_DECODE_ANY, NULL);
        if (want == NULL) {
            rc = wf_error_set(err, WF_E_INVALID_JSON, "value_json is not a JSON scalar");
            break;
        }
        const json_t *had = json_object_get(at, vf->keys[vf->n_keys - 1]);
        if (had != NULL) {
            /* Equal twice holds when the values are one; anything else
             * (another value, or an object the path already descends
             * into) cannot. */
            *never = !(json_is_number(had) && json_is_number(want)
                           ? json_number_value(had) == json_number_value(want)
                           : json_equal(had, want));
            json_decref(want);
        } else if (json_object_set_new(at, vf->keys[vf->n_keys - 1], want) != 0) {
            rc = wf_error_nomem(err);
        }
    }
    if (rc == WF_OK && !*never) {
        char *text = json_dumps(root, JSON_COMPACT);
        *doc = text != NULL ? wf_arena_strdup(ctx->arena, text) : NULL;
        free(text);
        if (*doc == NULL)
            rc = wf_error_nomem(err);
    }
    json_decref(root);
    return rc;
}

wf_code
wf_store_pg__list_instances(wf_store *st, const wf_store_ctx *ctx, const wf_instance_filter *f,
                            size_t limit, bool has, int64_t c_num, const char *c_str,
                            wf_instance_row **rows, size_t *n, wf_error *err)
{
    char *doc;
    bool never;
    wf_code rc = vars_doc(ctx, f, &doc, &never, err);
    if (rc != WF_OK)
        return rc;
    if (never) {
        *rows = NULL, *n = 0;
        return WF_OK;
    }
    /* The index: the aggregate, else the variables (GIN), else who
     * started it, else the definition. */
    int id = f->aggregate_type != NULL && f->aggregate_id != NULL ? S_LIST_INSTANCES_AGGREGATE
             : doc != NULL                                        ? S_LIST_INSTANCES_VARIABLES
             : f->started_by != NULL                              ? S_LIST_INSTANCES_STARTED_BY
             : f->definition_key != NULL                          ? S_LIST_INSTANCES_DEFINITION
                                                                  : S_LIST_INSTANCES_ALL;
    /* The scan starts at the bound the order begins from: created_after
     * (oldest first) or created_before (newest first); the other bound is
     * $12. */
    int64_t start = f->newest_first ? (f->created_before != 0 ? f->created_before : INT64_MAX)
                                    : f->created_after;
    if (f->newest_first ? (!has || c_num >= start) : (start != 0 && (!has || c_num < start))) {
        has = true;
        c_num = start;
        c_str = "";
    }
    if (f->newest_first)
        id += S_LIST_INSTANCES_AGGREGATE_NEWEST - S_LIST_INSTANCES_AGGREGATE;
    params p = wf_store_pg__p_tenant(ctx, f->started_by);
    wf_store_pg__p_str(&p, f->definition_key);
    wf_store_pg__p_str(&p, f->aggregate_type);
    wf_store_pg__p_str(&p, f->aggregate_id);
    wf_store_pg__p_int_array(&p, (const int *)f->statuses, f->n_statuses);
    wf_store_pg__p_bool(&p, f->roots_only);
    wf_store_pg__p_i64(&p, f->begun);
    p_after(&p, has, c_num, c_str);
    wf_store_pg__p_i64(&p, (int64_t)limit);
    wf_store_pg__p_i64(&p, f->newest_first          ? f->created_after
                           : f->created_before != 0 ? f->created_before
                                                    : INT64_MAX);
    wf_store_pg__p_i64(&p, f->ended_after);
    wf_store_pg__p_i64(&p, f->ended_before);
    wf_store_pg__p_str(&p, doc);
    return wf_store_pg__query((pg_store *)st, ctx, id, &p, &wf_store__instance_desc, rows, n, err);
}

wf_code
wf_store_pg__list_incidents(wf_store *st, const wf_store_ctx *ctx, const wf_incident_filter *f,
                            size_t limit, bool has, int64_t c_num, const char *c_str,
                            wf_instance_row **rows, size_t *n, wf_error *err)
{
    int id = f->definition_key != NULL ? S_LIST_INCIDENTS_DEFINITION : S_LIST_INCIDENTS_ALL;
    params p = wf_store_pg__p_tenant(ctx, f->definition_key);
    wf_store_pg__p_str(&p, f->code);
    p_after(&p, has, c_num, c_str);
    wf_store_pg__p_i64(&p, (int64_t)limit);
    return wf_store_pg__query((pg_store *)st, ctx, id, &p, &wf_store__instance_desc, rows, n, err);
}

wf_code
wf_store_pg__list_definitions(wf_store *st, const wf_store_ctx *ctx, size_t limit, bool has,
                              int64_t c_num, const char *c_str, wf_definition_row **rows, size_t *n,
                              wf_error *err)
{
    params p = {.a = ctx->arena};
    wf_store_pg__p_str(&p, ctx->tenant);
    p_cursor(&p, has, c_num, c_str);
    wf_store_pg__p_i64(&p, (int64_t)limit);
    return wf_store_pg__query((pg_store *)st, ctx, S_LIST_DEFINITIONS, &p,
                              &wf_store__definition_desc, rows, n, err);
}

wf_code
wf_store_pg__list_signals(wf_store *st, const wf_store_ctx *ctx, const wf_signal_filter *f,
                          size_t limit, bool has, int64_t c_num, const char *c_str,
                          wf_signal_row **rows, size_t *n, wf_error *err)
{
    /* The index: the dedupe key, else the instance, else the aggregate. */
    int id = given(f->signal_id)                                    ? S_LIST_SIGNALS_ID
             : f->instance_id != NULL                               ? S_LIST_SIGNALS_INSTANCE
             : f->aggregate_type != NULL && f->aggregate_id != NULL ? S_LIST_SIGNALS_AGGREGATE
                                                                    : S_LIST_SIGNALS_ALL;
    params p = wf_store_pg__p_tenant(ctx, f->instance_id);
    wf_store_pg__p_str(&p, f->aggregate_type);
    wf_store_pg__p_str(&p, f->aggregate_id);
    wf_store_pg__p_str(&p, f->signal_id);
    wf_store_pg__p_bool(&p, f->buffered_only);
    p_after(&p, has, c_num, c_str);
    wf_store_pg__p_i64(&p, (int64_t)limit);
    const wf_row_desc *d =
        id == S_LIST_SIGNALS_INSTANCE ? &wf_store__signal_listed_desc : &wf_store__signal_desc;
    return wf_store_pg__query((pg_store *)st, ctx, id, &p, d, rows, n, err);
}

wf_code
wf_store_pg__list_work_items(wf_store *st, const wf_store_ctx *ctx, const char *instance_id,
                             unsigned states, size_t limit, bool has, int64_t c_num,
                             const char *c_str, wf_work_item_row **rows, size_t *n, wf_error *err)
{
    params p = wf_store_pg__p_tenant(ctx, instance_id);
    wf_store_pg__p_i64(&p, (int64_t)states);
    p_after(&p, has, c_num, c_str);
    wf_store_pg__p_i64(&p, (int64_t)limit);
    return wf_store_pg__query((pg_store *)st, ctx, S_LIST_WORK_ITEMS, &p, &wf_store__work_item_desc,
                              rows, n, err);
}

/* ---- cross-instance work ----------------------------------------------------- */

/* Whether a job type's queue holds jobs with a fairness key, as this
 * process last saw it: a pass takes the fair statement only then, the
 * plain one costing far less to run. Unknown, or seen KEYED_TTL_MS ago or
 * more: the fair statement (right either way) with jobs_keyed before it in
 * the same flight, whose answer is kept. So a type's passes may stay plain
 * for KEYED_TTL_MS after its first keyed job. A slot holds one (tenant,
 * type) by a 64-bit hash; another pair in it is a miss. */
#define KEYED_SLOTS 256
#define KEYED_TTL_MS 1000

typedef enum { QUEUE_UNKNOWN, QUEUE_PLAIN, QUEUE_KEYED } queue_kind;

static struct {
    pthread_mutex_t mu;
    struct {
        uint64_t hash;
        int64_t seen_ms;
        bool keyed;
    } slot[KEYED_SLOTS];
} keyed_queues = {.mu = PTHREAD_MUTEX_INITIALIZER};

static uint64_t
fnv1a(uint64_t h, const char *s)
{
    for (const unsigned char *q = (const unsigned char *)s; *q; q++)
        h = (h ^ *q) * 1099511628211ull;
    return (h ^ 0xff) * 1099511628211ull; /* ends the string */
}

static uint64_t
queue_hash(const wf_store_ctx *ctx, const char *job_type)
{
    return fnv1a(fnv1a(1469598103934665603ull, ctx->tenant != NULL ? ctx->tenant : ""), job_type);
}

static queue_kind
queue_seen(uint64_t h, int64_t now)
{
    size_t i = h % KEYED_SLOTS;
    pthread_mutex_lock(&keyed_queues.mu);
    queue_kind k = QUEUE_UNKNOWN;
    if (keyed_queues.slot[i].hash == h && keyed_queues.slot[i].seen_ms != 0 &&
        now - keyed_queues.slot[i].seen_ms < KEYED_TTL_MS)
        k = keyed_queues.slot[i].keyed ? QUEUE_KEYED : QUEUE_PLAIN;
    pthread_mutex_unlock(&keyed_queues.mu);
    return k;
}

static void
queue_saw(uint64_t h, int64_t now, bool keyed)
{
    size_t i = h % KEYED_SLOTS;
    pthread_mutex_lock(&keyed_queues.mu);
    keyed_queues.slot[i].hash = h;
    keyed_queues.slot[i].seen_ms = now;
    keyed_queues.slot[i].keyed = keyed;
    pthread_mutex_unlock(&keyed_queues.mu);
}

/* The lease statement on c: in the transaction c has open (or owes), or
 * alone (autocommit). A first job too large for max_bytes comes back
 * unleased: refused here. */
static wf_code
activate_on(wf_store_pg_conn *c, const wf_store_ctx *ctx, const char *job_type, const char *worker,
            size_t max, size_t max_bytes, int64_t lease_ms, int64_t now, wf_job_row **rows,
            size_t *n, wf_error *err)
{
    uint64_t h = queue_hash(ctx, job_type);
    int64_t mono = wf_mono_ms();
    queue_kind kind = queue_seen(h, mono);
    params p = wf_store_pg__p_tenant(ctx, job_type);
    wf_store_pg__p_i64(&p, now);
    wf_store_pg__p_i64(&p, (int64_t)max);
    wf_store_pg__p_str(&p, worker);
    wf_store_pg__p_i64(&p, now + lease_ms * 1000);
    wf_store_pg__p_i64(&p, (int64_t)max_bytes);
    wf_code rc;
    if (kind == QUEUE_UNKNOWN) {
        params pk = wf_store_pg__p_tenant(ctx, job_type);
        PGresult *res = NULL;
        rc = wf_store_pg__run_then_rows(c, S_JOBS_KEYED, &pk, &res, S_ACTIVATE_JOBS_FAIR, &p,
                                        ctx->deadline_ms, &wf_store__job_desc, ctx->arena, rows, n,
                                        err);
        if (res != NULL)
            queue_saw(h, mono, PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't');
        PQclear(res);
    } else {
        rc = wf_store_pg__run_rows(c, kind == QUEUE_KEYED ? S_ACTIVATE_JOBS_FAIR : S_ACTIVATE_JOBS,
                                   &p, ctx->deadline_ms, &wf_store__job_desc, ctx->arena, rows, n,
                                   err);
    }
    if (rc == WF_OK && *n == 1 && (*rows)[0].state != WF_JOB_ACTIVATED) {
        *n = 0;
        return wf_store__job_too_large(&(*rows)[0], max_bytes, err);
    }
    return rc;
}

/* One flight. */
wf_code
wf_store_pg__activate_jobs(wf_store *st, const wf_store_ctx *ctx, const char *job_type,
                           const char *worker, size_t max, size_t max_bytes, int64_t lease_ms,
                           int64_t now, wf_job_row **rows, size_t *n, wf_error *err)
{
    pg_store *s = (pg_store *)st;
    wf_store_pg_conn *c = NULL;
    wf_code rc = wf_store_pg__conn_get(s, ctx, &c, err);
    if (rc == WF_OK)
        rc = activate_on(c, ctx, job_type, worker, max, max_bytes, lease_ms, now, rows, n, err);
    wf_store_pg__conn_put(s, c);
    return rc;
}

wf_code
wf_store_pg__tx_activate_jobs(wf_tx *t, const char *job_type, const char *worker, size_t max,
                              size_t max_bytes, int64_t lease_ms, int64_t now, wf_job_row **rows,
                              size_t *n, wf_error *err)
{
    pg_tx *tx = (pg_tx *)t;
    return activate_on(tx->c, &t->ctx, job_type, worker, max, max_bytes, lease_ms, now, rows, n,
                       err);
}

wf_code
wf_store_pg__claim_due_timers(wf_store *st, const wf_store_ctx *ctx, const char *tenant,
                              int64_t now, size_t limit, int64_t claim_ms, wf_timer_row **rows,
                              size_t *n, wf_error *err)
{
    params p = {.a = ctx->arena};
    wf_store_pg__p_i64(&p, now);
    wf_store_pg__p_i64(&p, (int64_t)limit);
    wf_store_pg__p_i64(&p, now + claim_ms * 1000);
    if (tenant != NULL)
        wf_store_pg__p_str(&p, tenant);
    return wf_store_pg__query((pg_store *)st, ctx,
                              tenant != NULL ? S_CLAIM_TIMERS_T : S_CLAIM_TIMERS, &p,
                              &wf_store__timer_desc, rows, n, err);
}

wf_code
wf_store_pg__find_expired_leases(wf_store *st, const wf_store_ctx *ctx, int64_t now, size_t limit,
                                 wf_job_row **rows, size_t *n, wf_error *err)
{
    params p = {.a = ctx->arena};
    wf_store_pg__p_i64(&p, now);
    wf_store_pg__p_i64(&p, (int64_t)limit);
    if (ctx->tenant != NULL)
        wf_store_pg__p_str(&p, ctx->tenant);
    return wf_store_pg__query((pg_store *)st, ctx,
                              ctx->tenant != NULL ? S_EXPIRED_LEASES_T : S_EXPIRED_LEASES, &p,
                              &wf_store__job_desc, rows, n, err);
}

/* Runs one of the scheduler's bounded UPDATE/DELETE statements ($1 time,
 * $2 limit; the shape after id, id + 1, takes $3 tenant) and returns the
 * rows it touched. */
static wf_code
batch_cmd(pg_store *s, const wf_store_ctx *ctx, int id, int64_t at, size_t limit, size_t *n,
          wf_error *err)
{
    params p = {.a = ctx->arena};
    wf_store_pg__p_i64(&p, at);
    wf_store_pg__p_i64(&p, (int64_t)limit);
    if (ctx->tenant != NULL) {
        wf_store_pg__p_str(&p, ctx->tenant);
        id++;
    }
    wf_store_pg_conn *c = NULL;
    wf_code rc = wf_store_pg__conn_get(s, ctx, &c, err);
    if (rc != WF_OK)
        return rc;
    long affected = 0;
    rc = wf_store_pg__run_cmd(c, id, &p, ctx->deadline_ms, &affected, err);
    wf_store_pg__conn_put(s, c);
    if (rc == WF_OK)
        *n = affected > 0 ? (size_t)affected : 0;
    return rc;
}

wf_code
wf_store_pg__expire_signals(wf_store *st, const wf_store_ctx *ctx, int64_t now, size_t limit,
                            size_t *n, wf_error *err)
{
    return batch_cmd((pg_store *)st, ctx, S_EXPIRE_SIGNALS, now, limit, n, err);
}

wf_code
wf_store_pg__sweep(wf_store *st, const wf_store_ctx *ctx, wf_sweep_kind kind, int64_t before,
                   size_t limit, size_t *n, wf_error *err)
{
    int id = kind == WF_SWEEP_SIGNALS       ? S_SWEEP_SIGNALS
             : kind == WF_SWEEP_IDEMPOTENCY ? S_SWEEP_IDEMPOTENCY
             : kind == WF_SWEEP_DELIVERIES  ? S_SWEEP_DELIVERIES
                                            : S_SWEEP_EVENTS;
    return batch_cmd((pg_store *)st, ctx, id, before, limit, n, err);
}

wf_code
wf_store_pg__find_subscriptions(wf_store *st, const wf_store_ctx *ctx, const char *name,
                                const char *instance_id, const char *agg_type, const char *agg_id,
                                wf_subscription_row **rows, size_t *n, wf_error *err)
{
    params p = wf_store_pg__p_tenant(ctx, name);
    if (instance_id != NULL) {
        wf_store_pg__p_str(&p, instance_id);
    } else {
        wf_store_pg__p_str(&p, agg_type);
        wf_store_pg__p_str(&p, agg_id);
    }
    return wf_store_pg__query((pg_store *)st, ctx,
                              instance_id != NULL ? S_FIND_SUBS_INSTANCE : S_FIND_SUBS_AGGREGATE,
                              &p, &wf_store__subscription_desc, rows, n, err);
}

/*
 * Runs sequencer batches on c until nothing committed is left unnumbered,
 * another session keeps the sequencer lock past the wait (then the caller
 * reads what is numbered: never a gap, perhaps not the newest), or
 * max_rounds batches ran (a backlog is caught up over several calls).
 * Each batch is its own transaction, so what is done stays done.
 */
static wf_code
sequence_pending(wf_store_pg_conn *c, const wf_store_ctx *ctx, int max_rounds, wf_error *err)
{
    for (int round = 0; round < max_rounds; round++) {
        /* Leave half of what remains of the deadline for the read. */
        int64_t wait = SEQ_WAIT_MS;
        if (ctx->deadline_ms != 0) {
            int64_t half = (ctx->deadline_ms - wf_mono_ms()) / 2;
            wait = half < wait ? half : wait;
            wait = wait < 1 ? 1 : wait;
        }
        params p = {.a = ctx->arena};
        wf_store_pg__p_i64(&p, SEQ_BATCH);
        wf_store_pg__p_i64(&p, wait);
        PGresult *res;
        wf_code rc = wf_store_pg__run(c, S_SEQUENCE, &p, ctx->deadline_ms, &res, err);
        if (rc != WF_OK)
            return rc;
        long long done = PQntuples(res) == 1 ? atoll(PQgetvalue(res, 0, 0)) : 0;
        PQclear(res);
        if (done < 0)
            WF_LOG(WF_LOG_DEBUG, "db_sequencer_busy", "wait_ms=%" PRId64, wait);
        if (done < SEQ_BATCH)
            break;
    }
    return WF_OK;
}

wf_code
wf_store_pg__read_events(wf_store *st, const wf_store_ctx *ctx, int64_t after,
                         const wf_event_filter *f, size_t limit, wf_event_row **rows, size_t *n,
                         wf_error *err)
{
    pg_store *s = (pg_store *)st;
    params p = {.a = ctx->arena};
    wf_store_pg__p_str(&p, ctx->tenant);
    wf_store_pg__p_i64(&p, after);
    if (f->instance_id != NULL)
        wf_store_pg__p_str(&p, f->instance_id);
    wf_store_pg__p_str(&p, f->definition_key);
    wf_store_pg__p_text_array(&p, f->types, f->n_types);
    wf_store_pg__p_i64(&p, (int64_t)limit);
    wf_store_pg_conn *c = NULL;
    wf_code rc = wf_store_pg__conn_get(s, ctx, &c, err);
    if (rc != WF_OK)
        return rc;
    /* Number what committed before this call, then read in a later
     * snapshot: the read sees those numbers and every smaller one. */
    rc = sequence_pending(c, ctx, SEQ_READ_ROUNDS, err);
    if (rc == WF_OK)
        rc = wf_store_pg__run_rows(
            c, f->instance_id != NULL ? S_READ_EVENTS_INSTANCE : S_READ_EVENTS_ALL, &p,
            ctx->deadline_ms, &wf_store__event_desc, ctx->arena, rows, n, err);
    wf_store_pg__conn_put(s, c);
    return rc;
}

wf_code
wf_store_pg__count_backlog(wf_store *st, const wf_store_ctx *ctx, int64_t now, size_t max_types,
                           wf_store_counts *out, wf_error *err)
{
    wf_store_pg_conn *c = NULL;
    wf_code rc = wf_store_pg__conn_get((pg_store *)st, ctx, &c, err);
    if (rc != WF_OK)
        return rc;
    params p = {.a = ctx->arena};
    wf_store_pg__p_i64(&p, now);
    wf_store_pg__p_i64(&p, (int64_t)max_types);
    PGresult *res;
    rc = wf_store_pg__run(c, S_COUNT_BACKLOG, &p, ctx->deadline_ms, &res, err);
    int k = rc == WF_OK ? PQntuples(res) : 0;
    if (rc == WF_OK) {
        out->jobs = wf_arena_calloc(ctx->arena, (size_t)k + 1, sizeof *out->jobs);
        if (out->jobs == NULL)
            rc = wf_error_nomem(err);
    }
    for (int r = 0; rc == WF_OK && r < k; r++) {
        long long n = atoll(PQgetvalue(res, r, 2));
        switch (atoi(PQgetvalue(res, r, 0))) {
        case 1:
            out->jobs[out->n_jobs].job_type = wf_arena_strdup(ctx->arena, PQgetvalue(res, r, 1));
            out->jobs[out->n_jobs++].count = n;
            if (out->jobs[out->n_jobs - 1].job_type == NULL)
                rc = wf_error_nomem(err);
            break;
        case 2:
            out->tasks_open = n;
            break;
        case 3:
            out->signals_buffered = n;
            break;
        default:
            out->deliveries_pending = n;
        }
    }
    PQclear(res);
    wf_store_pg__conn_put((pg_store *)st, c);
    return rc;
}

wf_code
wf_store_pg__sequence_events(wf_store *st, const wf_store_ctx *ctx, wf_error *err)
{
    pg_store *s = (pg_store *)st;
    wf_store_pg_conn *c = NULL;
    wf_code rc = wf_store_pg__conn_get(s, ctx, &c, err);
    if (rc != WF_OK)
        return rc;
    rc = sequence_pending(c, ctx, SEQ_TICK_ROUNDS, err);
    wf_store_pg__conn_put(s, c);
    return rc;
}
