/*
 * mem/reads.c: the memory store's reads outside a unit of work and its
 * keyset-paginated listings.
 */
#include "mem/mem_int.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wf_time.h"

/* ---- simple reads ------------------------------------------------------- */

wf_code
wf_store_mem__get_definition(wf_store *st, const wf_store_ctx *ctx, const char *key,
                             int32_t version, wf_definition_row *out, bool *found, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_store_mem__read_definition(m, ctx, key, version, out, found, err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* Copies the row stored under (tenant, id) of t, if any. */
static wf_code
get_by_id(mem_store *m, mtable *t, const wf_store_ctx *ctx, const char *id, void *out, bool *found,
          wf_error *err)
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
wf_store_mem__get_instance(wf_store *st, const wf_store_ctx *ctx, const char *id,
                           wf_instance_row *out, bool *found, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    return get_by_id(m, &m->insts, ctx, id, out, found, err);
}

wf_code
wf_store_mem__get_task(wf_store *st, const wf_store_ctx *ctx, const char *id, wf_task_row *out,
                       bool *found, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    return get_by_id(m, &m->tasks, ctx, id, out, found, err);
}

static bool
job_has_key(mem_store *m, const void *row, const void *arg)
{
    (void)m;
    return wf_store_mem__eq(((const wf_job_row *)row)->key, arg);
}

wf_code
wf_store_mem__get_job_by_key(wf_store *st, const wf_store_ctx *ctx, const char *key,
                             wf_job_row *out, bool *found, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    wf_job_row *rows = NULL;
    size_t n = 0;
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_store_mem__select_rows(m, &m->jobs, ctx->tenant, job_has_key, key, NULL, 1, ctx->arena,
                                   &rows, &n, err);
    pthread_mutex_unlock(&m->mu);
    if (rc == WF_OK) {
        *found = n > 0;
        if (n > 0)
            *out = rows[0];
    }
    return rc;
}

/* ---- listings ----------------------------------------------------------- */

bool
wf_store_mem__in_list(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (wf_store_mem__eq(s, list[i]))
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
    const wf_task_keyset *k;
} task_q;

/* -1, 0 or 1 as t sorts before, with or after the keyset (key, created,
 * id) ascending under sort. */
static int
task_cmp_key(const wf_task_row *t, wf_task_sort sort, int64_t key, int64_t created, const char *id)
{
    int c = wf_store_mem__i64_cmp(wf_task_sort_key(t, sort), key);
    if (c == 0 && sort != WF_TASK_SORT_CREATED)
        c = wf_store_mem__i64_cmp(t->created_at, created);
    if (c == 0)
        c = strcmp(t->id, id);
    return c < 0 ? -1 : c > 0;
}

static bool
task_match(mem_store *m, const void *row, const void *arg)
{
    (void)m;
    const wf_task_row *t = row;
    const task_q *q = arg;
    const wf_task_filter *f = q->f;
    if (f->user != NULL) {
        bool mine =
            t->assignee_kind == WF_ASSIGNEE_USER && wf_store_mem__eq(t->assignee_id, f->user);
        bool group = t->assignee_kind == WF_ASSIGNEE_GROUP && t->status == WF_TASK_OPEN &&
                     wf_store_mem__in_list(t->assignee_id, f->groups, f->n_groups);
        if (!mine && !group && !wf_store_mem__eq(t->claimed_by, f->user))
            return false;
    } else if (f->group != NULL) {
        if (t->assignee_kind != WF_ASSIGNEE_GROUP || !wf_store_mem__eq(t->assignee_id, f->group))
            return false;
    }
    if (f->n_states > 0 && !in_ints((int)t->status, (const int *)f->states, f->n_states))
        return false;
    if (f->due_after != 0 && (t->due_at == 0 || t->due_at <= f->due_after))
        return false;
    if (f->due_before != 0 && (t->due_at == 0 || t->due_at >= f->due_before))
        return false;
    if (!q->k->has)
        return true;
    int c = task_cmp_key(t, f->sort, q->k->key, q->k->created, q->k->id);
    return f->descending ? c < 0 : c > 0;
}

/* The orders of a task listing: qsort has no argument, so one comparator
 * per sort and direction. */
#define TASK_CMP(fn, sort, sign)                                                                   \
    static int fn(const void *a, const void *b)                                                    \
    {                                                                                              \
        const wf_task_row *x = *(const wf_task_row *const *)a;                                     \
        const wf_task_row *y = *(const wf_task_row *const *)b;                                     \
        return (sign)*task_cmp_key(x, sort, wf_task_sort_key(y, sort), y->created_at, y->id);      \
    }
TASK_CMP(cmp_created, WF_TASK_SORT_CREATED, 1)
TASK_CMP(cmp_created_desc, WF_TASK_SORT_CREATED, -1)
TASK_CMP(cmp_priority, WF_TASK_SORT_PRIORITY, 1)
TASK_CMP(cmp_priority_desc, WF_TASK_SORT_PRIORITY, -1)
TASK_CMP(cmp_due, WF_TASK_SORT_DUE, 1)
TASK_CMP(cmp_due_desc, WF_TASK_SORT_DUE, -1)

wf_code
wf_store_mem__list_tasks(wf_store *st, const wf_store_ctx *ctx, const wf_task_filter *f,
                         size_t limit, const wf_task_keyset *after, wf_task_row **rows, size_t *n,
                         wf_error *err)
{
    static const mcmp orders[] = {cmp_created,       cmp_created_desc, cmp_priority,
                                  cmp_priority_desc, cmp_due,          cmp_due_desc};
    mem_store *m = (mem_store *)st;
    task_q q = {f, after};
    size_t o = 2 * (size_t)f->sort + (f->descending ? 1 : 0);
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_store_mem__select_rows(m, &m->tasks, ctx->tenant, task_match, &q, orders[o], limit,
                                   ctx->arena, rows, n, err);
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
    wf_store_mem__mt_tenant_range(&m->insts, tenant, &lo, &hi);
    for (size_t i = lo; i < hi; i++)
        if (wf_store_mem__eq(((const wf_instance_row *)m->insts.v[i].row)->parent_id, id))
            return true;
    return false;
}

/* Scalars equal as jsonb compares them: numbers by value. */
static bool
scalar_equal(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b)) {
        if (json_is_integer(a) && json_is_integer(b))
            return json_integer_value(a) == json_integer_value(b);
        return json_number_value(a) == json_number_value(b);
    }
    return json_equal(a, b) != 0;
}

/* Every variable filter of f holds in the variables v (a JSON object). */
static bool
vars_match(const char *v, const wf_instance_filter *f)
{
    if (f->n_vars == 0)
        return true;
    json_t *doc = v != NULL ? json_loads(v, 0, NULL) : NULL;
    bool ok = doc != NULL;
    for (size_t i = 0; ok && i < f->n_vars; i++) {
        const wf_var_filter *vf = &f->vars[i];
        const json_t *at = doc;
        for (size_t k = 0; at != NULL && k < vf->n_keys; k++)
            at = json_is_object(at) ? json_object_get(at, vf->keys[k]) : NULL;
        json_t *want = json_loads(vf->value_json, JSON_DECODE_ANY, NULL);
        ok = at != NULL && want != NULL && scalar_equal(at, want);
        json_decref(want);
    }
    json_decref(doc);
    return ok;
}

static bool
in_range(int64_t t, int64_t after, int64_t before)
{
    return (after == 0 || t >= after) && (before == 0 || t < before);
}

static bool
instance_match(mem_store *m, const void *row, const void *arg)
{
    const wf_instance_row *r = row;
    const instance_q *q = arg;
    const wf_instance_filter *f = q->f;
    if (!in_range(r->created_at, f->created_after, f->created_before) ||
        ((f->ended_after != 0 || f->ended_before != 0) &&
         (r->ended_at == 0 || !in_range(r->ended_at, f->ended_after, f->ended_before))))
        return false;
    if ((f->started_by != NULL && !wf_store_mem__eq(r->started_by, f->started_by)) ||
        (f->definition_key != NULL && !wf_store_mem__eq(r->definition_key, f->definition_key)) ||
        (f->aggregate_type != NULL && !wf_store_mem__eq(r->aggregate_type, f->aggregate_type)) ||
        (f->aggregate_id != NULL && !wf_store_mem__eq(r->aggregate_id, f->aggregate_id)) ||
        (f->roots_only && r->parent_id != NULL) ||
        (f->n_statuses > 0 && !in_ints((int)r->status, (const int *)f->statuses, f->n_statuses)) ||
        !(f->newest_first ? wf_store_mem__before(&q->k, r->created_at, r->id)
                          : wf_store_mem__after(&q->k, r->created_at, r->id)))
        return false;
    if (f->begun != WF_BEGUN_ANY) {
        const wf_definition_row *d = NULL;
        bool begun = r->status != WF_INSTANCE_RUNNING ||
                     (d = wf_store_mem__find_definition(m, q->tenant, r->definition_key,
                                                        r->definition_version)) == NULL ||
                     d->kind != WF_DEF_AD_HOC || has_child(m, q->tenant, r->id);
        if (begun != (f->begun == WF_BEGUN_YES))
            return false;
    }
    return vars_match(r->variables_json, f);
}

/* Newest first: (created_at, id) descending. */
static int
cmp_instance_newest(const void *a, const void *b)
{
    return wf_store_mem__cmp_instance(b, a);
}

wf_code
wf_store_mem__list_instances(wf_store *st, const wf_store_ctx *ctx, const wf_instance_filter *f,
                             size_t limit, bool has, int64_t c_num, const char *c_str,
                             wf_instance_row **rows, size_t *n, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    instance_q q = {f, {has, c_num, c_str}, ctx->tenant};
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_store_mem__select_rows(m, &m->insts, ctx->tenant, instance_match, &q,
                                   f->newest_first ? cmp_instance_newest
                                                   : wf_store_mem__cmp_instance,
                                   limit, ctx->arena, rows, n, err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

typedef struct incident_q {
    const wf_incident_filter *f;
    keyset k;
} incident_q;

static bool
incident_match(mem_store *m, const void *row, const void *arg)
{
    (void)m;
    const wf_instance_row *r = row;
    const incident_q *q = arg;
    return r->status == WF_INSTANCE_FAILED &&
           (q->f->definition_key == NULL ||
            wf_store_mem__eq(r->definition_key, q->f->definition_key)) &&
           (q->f->code == NULL || wf_store_mem__eq(r->incident_code, q->f->code)) &&
           wf_store_mem__after(&q->k, r->incident_at, r->id);
}

wf_code
wf_store_mem__list_incidents(wf_store *st, const wf_store_ctx *ctx, const wf_incident_filter *f,
                             size_t limit, bool has, int64_t c_num, const char *c_str,
                             wf_instance_row **rows, size_t *n, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    incident_q q = {f, {has, c_num, c_str}};
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_store_mem__select_rows(m, &m->insts, ctx->tenant, incident_match, &q,
                                   wf_store_mem__cmp_incident, limit, ctx->arena, rows, n, err);
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

wf_code
wf_store_mem__list_definitions(wf_store *st, const wf_store_ctx *ctx, size_t limit, bool has,
                               int64_t c_num, const char *c_str, wf_definition_row **rows,
                               size_t *n, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    keyset k = {has, c_num, c_str};
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_store_mem__select_rows(m, &m->defs, ctx->tenant, definition_after, &k,
                                   wf_store_mem__cmp_definition, limit, ctx->arena, rows, n, err);
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
    const wf_signal_row *s = row;
    const signal_q *q = arg;
    const wf_signal_filter *f = q->f;
    if ((f->instance_id != NULL && !wf_store_mem__eq(s->instance_id, f->instance_id) &&
         !wf_store_mem__eq(s->consumed_by_instance, f->instance_id) &&
         wf_store_mem__mt_get(&m->deliveries, s->tenant, s->id, f->instance_id) == NULL) ||
        (f->aggregate_type != NULL && !wf_store_mem__eq(s->aggregate_type, f->aggregate_type)) ||
        (f->aggregate_id != NULL && !wf_store_mem__eq(s->aggregate_id, f->aggregate_id)) ||
        (f->signal_id != NULL &&
         (!wf_store_mem__eq(s->signal_id, f->signal_id) || s->outcome == WF_SIGNAL_DUPLICATE)) ||
        (f->buffered_only && !s->buffered))
        return false;
    return wf_store_mem__after(&q->k, s->received_at, s->id);
}

/* An instance's log: its delivery of the fanned-out signal s, if any. */
static void
with_delivery(mem_store *m, wf_signal_row *s, const char *instance_id)
{
    const wf_delivery_row *d = wf_store_mem__mt_get(&m->deliveries, s->tenant, s->id, instance_id);
    s->delivery = d != NULL;
    s->delivery_state = d != NULL ? d->state : WF_DELIVERY_PENDING;
    s->delivered_at = d != NULL ? d->done_at : 0;
}

wf_code
wf_store_mem__list_signals(wf_store *st, const wf_store_ctx *ctx, const wf_signal_filter *f,
                           size_t limit, bool has, int64_t c_num, const char *c_str,
                           wf_signal_row **rows, size_t *n, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    signal_q q = {f, {has, c_num, c_str}};
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_store_mem__select_rows(m, &m->signals, ctx->tenant, signal_listed, &q,
                                   wf_store_mem__cmp_signal, limit, ctx->arena, rows, n, err);
    for (size_t i = 0; rc == WF_OK && f->instance_id != NULL && i < *n; i++)
        with_delivery(m, &(*rows)[i], f->instance_id);
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
    return wf_store_mem__eq(it->instance_id, q->instance_id) &&
           (q->states == 0 || (q->states & (1u << (unsigned)it->state)) != 0) &&
           wf_store_mem__after(&q->k, it->enabled_at, it->id);
}

wf_code
wf_store_mem__list_work_items(wf_store *st, const wf_store_ctx *ctx, const char *instance_id,
                              unsigned states, size_t limit, bool has, int64_t c_num,
                              const char *c_str, wf_work_item_row **rows, size_t *n, wf_error *err)
{
    mem_store *m = (mem_store *)st;
    work_item_q q = {instance_id, states, {has, c_num, c_str}};
    wf_code rc = wf_store_mem__lock(m, ctx->deadline_ms, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_store_mem__select_rows(m, &m->work_items, ctx->tenant, work_item_listed, &q,
                                   wf_store_mem__cmp_work_item, limit, ctx->arena, rows, n, err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}
