/*
 * net_runtime_work: the working set of a net unit of work
 * (net_runtime_int.h): its row arrays and their flags, loading it from
 * the locked aggregate, starting over or going back to a saved point,
 * events, failures and wake-ups, and writing it with one wf_tx_apply.
 *
 * Must not: include protobuf or grpc headers.
 */
#include "net_runtime_int.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "defcache.h"
#include "wf_str.h"
#include "wf_time.h"

char *
wf_runtime__time_text(wf_arena *a, int64_t us)
{
    return wf_time_rfc3339(a, us);
}

/* ---- row arrays ------------------------------------------------------------------ */

static bool
rows_grow(wf_arena *a, nw_rows *r, size_t need, size_t elem)
{
    if (need <= r->cap)
        return true;
    size_t cap = r->cap ? r->cap * 2 : 8;
    while (cap < need)
        cap *= 2;
    void *rows = wf_arena_calloc(a, cap, elem);
    unsigned char *fl = wf_arena_calloc(a, cap, 1);
    if (rows == NULL || fl == NULL)
        return false;
    if (r->n > 0) {
        memcpy(rows, r->rows, r->n * elem);
        memcpy(fl, r->flags, r->n);
    }
    r->rows = rows;
    r->flags = fl;
    r->cap = cap;
    return true;
}

wf_code
wf_runtime__add_row(wf_arena *a, nw_rows *r, const void *row, size_t elem, unsigned char flags,
                    size_t *index, wf_error *err)
{
    if (!rows_grow(a, r, r->n + 1, elem))
        return wf_error_nomem(err);
    memcpy((char *)r->rows + r->n * elem, row, elem);
    r->flags[r->n] = flags;
    if (index != NULL)
        *index = r->n;
    r->n++;
    return WF_OK;
}

/* Every row type starts with its id. */
static const char *
row_id(const nw_rows *r, size_t elem, size_t i)
{
    return *(char *const *)((const char *)r->rows + i * elem);
}

size_t
wf_runtime__find(const net_work *w, const nw_rows *r, size_t elem, const char *id)
{
    (void)w;
    for (size_t i = 0; id != NULL && i < r->n; i++)
        if (!(r->flags[i] & NW_GONE) && wf_str_eq(row_id(r, elem, i), id))
            return i;
    return WF_WORK_NONE;
}

bool
wf_runtime__armed(const net_work *w, const wf_work_item_row *it)
{
    if (it->trigger == WF_TRIGGER_TIME) {
        for (size_t k = 0; k < w->timers.n; k++)
            if (!(w->timers.flags[k] & NW_GONE) &&
                wf_str_eq(NW_ROW(w, timers, wf_timer_row, k)->work_item_id, it->id))
                return true;
    } else if (it->trigger == WF_TRIGGER_MSG) {
        for (size_t k = 0; k < w->subs.n; k++)
            if (!(w->subs.flags[k] & NW_GONE) &&
                wf_str_eq(NW_ROW(w, subs, wf_subscription_row, k)->work_item_id, it->id))
                return true;
    }
    return false;
}

void
wf_runtime__dirty(nw_rows *r, size_t i)
{
    r->flags[i] |= NW_DIRTY;
}

void
wf_runtime__gone(nw_rows *r, size_t i)
{
    r->flags[i] |= NW_GONE;
}

void
wf_runtime__end_item(net_work *w, size_t ii, wf_work_item_state state, const char *by)
{
    wf_work_item_row *it = ITEM(w, ii);
    it->state = state;
    if (it->finished_at == 0)
        it->finished_at = w->rw.now;
    if (by != NULL && by[0] != '\0')
        it->finished_by = (char *)by;
    w->items.flags[ii] |= NW_GONE | NW_KEEP | NW_DIRTY;
}

/* ---- working set ------------------------------------------------------------------- */

wf_code
wf_runtime__load(net_work *w, wf_error *err)
{
    const wf_aggregate *agg = w->agg;
    wf_arena *a = w->rw.arena;
    const char *id = w->rw.insts[w->inst].id;
    wf_code rc = WF_OK;
    memset(&w->toks, 0, sizeof w->toks);
    memset(&w->items, 0, sizeof w->items);
    memset(&w->jobs, 0, sizeof w->jobs);
    memset(&w->timers, 0, sizeof w->timers);
    memset(&w->subs, 0, sizeof w->subs);
    w->wake = NULL;
    w->n_wake = 0;
    w->first_new_task = w->rw.n_tasks;
    if (agg == NULL)
        return WF_OK;
    for (size_t i = 0; rc == WF_OK && i < agg->n_tokens; i++)
        if (wf_str_eq(agg->tokens[i].instance_id, id))
            rc = wf_runtime__add_row(a, &w->toks, &agg->tokens[i], sizeof(wf_token_row), 0, NULL,
                                     err);
    for (size_t i = 0; rc == WF_OK && i < agg->n_work_items; i++)
        if (wf_str_eq(agg->work_items[i].instance_id, id))
            rc = wf_runtime__add_row(a, &w->items, &agg->work_items[i], sizeof(wf_work_item_row), 0,
                                     NULL, err);
    for (size_t i = 0; rc == WF_OK && i < agg->n_jobs; i++)
        rc = wf_runtime__add_row(a, &w->jobs, &agg->jobs[i], sizeof(wf_job_row), 0, NULL, err);
    for (size_t i = 0; rc == WF_OK && i < agg->n_timers; i++)
        rc =
            wf_runtime__add_row(a, &w->timers, &agg->timers[i], sizeof(wf_timer_row), 0, NULL, err);
    for (size_t i = 0; rc == WF_OK && i < agg->n_subscriptions; i++)
        rc = wf_runtime__add_row(a, &w->subs, &agg->subscriptions[i], sizeof(wf_subscription_row),
                                 0, NULL, err);
    return rc;
}

/* The definition row of key at version inside tx, and its net (NULL when
 * the definition does not run a net). */
static wf_code
load_definition(wf_tx *tx, wf_arena *arena, const char *key, int32_t version,
                wf_definition_row *row, const wf_net **net, wf_error *err)
{
    bool found = false;
    wf_code rc = wf_tx_get_definition(tx, key, version, row, &found, err);
    if (rc != WF_OK)
        return rc;
    if (!found)
        return wf_error_set(err, WF_E_DEFINITION_NOT_FOUND, "definition \"%s\" has no version %d",
                            key != NULL ? key : "", (int)version);
    *net = NULL;
    if (WF_DEF_RUNS_NET(row->kind))
        return wf_defcache_net(row, arena, net, err);
    return WF_OK;
}

wf_code
wf_runtime__open(net_work *w, const wf_ref_ctx *ctx, wf_tx *tx, const char *instance_id,
                 const char *root_hint, wf_error *err)
{
    memset(w, 0, sizeof *w);
    wf_aggregate *agg = wf_arena_calloc(ctx->arena, 1, sizeof *agg);
    if (agg == NULL)
        return wf_error_nomem(err);
    wf_code rc = wf_tx_lock_root_hint(tx, instance_id, root_hint, agg, err);
    if (rc == WF_OK)
        rc = wf_work_init(&w->rw, ctx, agg, err);
    if (rc != WF_OK)
        return rc;
    w->tx = tx;
    w->agg = agg;
    w->inst = wf_work_find_instance(&w->rw, instance_id);
    if (w->inst == WF_WORK_NONE)
        return wf_error_set(err, WF_E_INSTANCE_NOT_FOUND, "instance \"%s\" does not exist",
                            instance_id);
    const wf_instance_row *in = &w->rw.insts[w->inst];
    wf_definition_row def;
    rc = load_definition(tx, ctx->arena, in->definition_key, in->definition_version, &def, &w->net,
                         err);
    if (rc != WF_OK)
        return rc;
    return wf_runtime__load(w, err);
}

wf_code
wf_runtime__reset(net_work *w, wf_error *err)
{
    const wf_ref_ctx *ctx = w->rw.ctx;
    size_t inst = w->inst;
    wf_code rc = wf_work_init(&w->rw, ctx, w->agg, err);
    if (rc != WF_OK)
        return rc;
    w->inst = inst;
    return wf_runtime__load(w, err);
}

/* A copy of n elements of size elem in the arena (NULL only when out of
 * memory; n == 0 gives a valid empty block). */
static void *
dup_rows(wf_arena *a, const void *rows, size_t n, size_t elem)
{
    void *v = wf_arena_alloc(a, n * elem + 1);
    if (v != NULL && n > 0)
        memcpy(v, rows, n * elem);
    return v;
}

static bool
save_rows(wf_arena *a, const nw_rows *r, nw_rows *copy, size_t elem)
{
    *copy = *r;
    copy->rows = dup_rows(a, r->rows, r->n, elem);
    copy->flags = dup_rows(a, r->flags, r->n, 1);
    return copy->rows != NULL && copy->flags != NULL;
}

static void
restore_rows(nw_rows *r, const nw_rows *copy, size_t elem)
{
    /* Rows only grow, so the live arrays hold at least copy->n. */
    if (copy->n > 0) {
        memcpy(r->rows, copy->rows, copy->n * elem);
        memcpy(r->flags, copy->flags, copy->n);
    }
    r->n = copy->n;
}

wf_code
wf_runtime__save(const net_work *w, net_work *save, wf_error *err)
{
    wf_arena *a = w->rw.arena;
    const wf_work *rw = &w->rw;
    *save = *w;
    /* Instances, tasks and net rows change in place; events, deletions and
     * wake-ups are only appended (or copied on append), so their counts
     * suffice. */
    save->rw.insts = dup_rows(a, rw->insts, rw->n_insts, sizeof *rw->insts);
    save->rw.inst_dirty = dup_rows(a, rw->inst_dirty, rw->n_insts, sizeof *rw->inst_dirty);
    save->rw.tasks = dup_rows(a, rw->tasks, rw->n_tasks, sizeof *rw->tasks);
    save->rw.task_dirty = dup_rows(a, rw->task_dirty, rw->n_tasks, sizeof *rw->task_dirty);
    if (save->rw.insts == NULL || save->rw.inst_dirty == NULL || save->rw.tasks == NULL ||
        save->rw.task_dirty == NULL || !save_rows(a, &w->toks, &save->toks, sizeof(wf_token_row)) ||
        !save_rows(a, &w->items, &save->items, sizeof(wf_work_item_row)) ||
        !save_rows(a, &w->jobs, &save->jobs, sizeof(wf_job_row)) ||
        !save_rows(a, &w->timers, &save->timers, sizeof(wf_timer_row)) ||
        !save_rows(a, &w->subs, &save->subs, sizeof(wf_subscription_row)))
        return wf_error_nomem(err);
    return WF_OK;
}

void
wf_runtime__restore(net_work *w, const net_work *save)
{
    wf_work *rw = &w->rw;
    const wf_work *s = &save->rw;
    /* Copied back into the live arrays, so pointers to rows the caller
     * took before the save stay valid. */
    memcpy(rw->insts, s->insts, s->n_insts * sizeof *rw->insts);
    memcpy(rw->inst_dirty, s->inst_dirty, s->n_insts * sizeof *rw->inst_dirty);
    if (s->n_tasks > 0) {
        memcpy(rw->tasks, s->tasks, s->n_tasks * sizeof *rw->tasks);
        memcpy(rw->task_dirty, s->task_dirty, s->n_tasks * sizeof *rw->task_dirty);
    }
    rw->n_insts = s->n_insts;
    rw->n_tasks = s->n_tasks;
    rw->n_events = s->n_events;
    rw->del_jobs = s->del_jobs;
    rw->n_del_jobs = s->n_del_jobs;
    rw->del_timers = s->del_timers;
    rw->n_del_timers = s->n_del_timers;
    rw->del_subs = s->del_subs;
    rw->n_del_subs = s->n_del_subs;
    restore_rows(&w->toks, &save->toks, sizeof(wf_token_row));
    restore_rows(&w->items, &save->items, sizeof(wf_work_item_row));
    restore_rows(&w->jobs, &save->jobs, sizeof(wf_job_row));
    restore_rows(&w->timers, &save->timers, sizeof(wf_timer_row));
    restore_rows(&w->subs, &save->subs, sizeof(wf_subscription_row));
    w->wake = save->wake;
    w->n_wake = save->n_wake;
}

wf_code
wf_runtime__event(net_work *w, const char *type, json_t *data, wf_error *err)
{
    return wf_work_event(&w->rw, w->inst, type, data, err);
}

wf_code
wf_runtime__add_wake(net_work *w, const char *type, wf_error *err)
{
    for (size_t i = 0; i < w->n_wake; i++)
        if (wf_str_eq(w->wake[i], type))
            return WF_OK;
    const char **v = wf_arena_alloc(w->rw.arena, (w->n_wake + 1) * sizeof *v);
    if (v == NULL)
        return wf_error_nomem(err);
    if (w->n_wake > 0)
        memcpy(v, w->wake, w->n_wake * sizeof *v);
    v[w->n_wake++] = type;
    w->wake = v;
    return WF_OK;
}

void
wf_runtime__keep_wake(const net_work *w, const char ***types, size_t *n)
{
    *types = w->wake;
    *n = w->n_wake;
}

void
wf_runtime__wake(const wf_runtime_ctx *ctx, const char *const *types, size_t n)
{
    if (ctx == NULL || ctx->wake == NULL)
        return;
    ctx->wake(ctx->wake_arg, WF_RUNTIME_TOPIC_EVENTS);
    for (size_t i = 0; i < n; i++) {
        char topic[192];
        if (types[i][0] == '\0') {
            ctx->wake(ctx->wake_arg, WF_RUNTIME_TOPIC_TIMERS); /* WF_NW_WAKE_TIMERS */
            continue;
        }
        snprintf(topic, sizeof topic, "%s%s", WF_RUNTIME_TOPIC_JOBS_PREFIX, types[i]);
        ctx->wake(ctx->wake_arg, topic);
    }
}

wf_code
wf_runtime__fail_instance(net_work *w, const char *code, const char *transition_id,
                          int32_t attempts, const char *message, wf_error *err)
{
    return wf_runtime__fail_instance_data(w, code, transition_id, attempts, message, NULL, err);
}

wf_code
wf_runtime__fail_instance_data(net_work *w, const char *code, const char *transition_id,
                               int32_t attempts, const char *message, json_t *data, wf_error *err)
{
    wf_instance_row *in = &w->rw.insts[w->inst];
    in->status = WF_INSTANCE_FAILED;
    in->last_error = wf_work_strdup(&w->rw, message);
    in->incident_code = wf_work_strdup(&w->rw, code);
    in->incident_transition_id = transition_id != NULL && transition_id[0] != '\0'
                                     ? wf_work_strdup(&w->rw, transition_id)
                                     : NULL;
    in->incident_at = w->rw.now;
    in->incident_attempts = attempts >= 0 ? attempts : in->retries;
    if (in->last_error == NULL || in->incident_code == NULL ||
        (transition_id != NULL && transition_id[0] != '\0' && in->incident_transition_id == NULL)) {
        json_decref(data);
        return wf_error_nomem(err);
    }
    wf_work_touch_instance(&w->rw, w->inst);
    if (data == NULL)
        data = json_object();
    if (data != NULL && json_object_set_new(data, "errorMessage", json_string(message)) != 0) {
        json_decref(data);
        data = NULL;
    }
    return wf_runtime__event(w, "INSTANCE_FAILED", data, err);
}

/* ---- writing -------------------------------------------------------------------------- */

/* Splits r into rows to upsert and ids to delete. */
static wf_code
collect(wf_arena *a, const nw_rows *r, size_t elem, const void **up, size_t *n_up,
        const char *const **del, size_t *n_del, wf_error *err)
{
    char *rows = wf_arena_alloc(a, (r->n + 1) * elem);
    const char **ids = wf_arena_alloc(a, (r->n + 1) * sizeof *ids);
    if (rows == NULL || ids == NULL)
        return wf_error_nomem(err);
    size_t nu = 0, nd = 0;
    for (size_t i = 0; i < r->n; i++) {
        unsigned char f = r->flags[i];
        if ((f & NW_GONE) && !(f & NW_KEEP)) {
            if (!(f & NW_NEW))
                ids[nd++] = row_id(r, elem, i);
        } else if (f & (NW_NEW | NW_DIRTY)) {
            memcpy(rows + nu * elem, (const char *)r->rows + i * elem, elem);
            nu++;
        }
    }
    *up = rows;
    *n_up = nu;
    *del = ids;
    *n_del = nd;
    return WF_OK;
}

/* Jobs not yet activated carry the instance's current variables (with
 * their item, for the items of a for-each), so a worker sees the
 * variables as they are when it activates the job. */
static wf_code
refresh_job_variables(net_work *w, wf_error *err)
{
    const wf_instance_row *in = &w->rw.insts[w->inst];
    for (size_t i = 0; i < w->jobs.n; i++) {
        wf_job_row *j = JOB(w, i);
        if ((w->jobs.flags[i] & NW_GONE) || j->state != WF_JOB_ACTIVATABLE ||
            !wf_str_eq(j->instance_id, in->id) || in->variables_json == NULL ||
            wf_str_eq(j->variables_json, in->variables_json))
            continue;
        const char *vars;
        wf_code rc = wf_runtime__job_vars(w, j, &vars, err);
        if (rc != WF_OK)
            return rc;
        if (wf_str_eq(j->variables_json, vars))
            continue;
        j->variables_json = (char *)vars;
        wf_runtime__dirty(&w->jobs, i);
    }
    return WF_OK;
}

wf_code
wf_runtime__write(net_work *w, wf_error *err)
{
    wf_store_changes c;
    wf_arena *a = w->rw.arena;
    wf_code rc = wf_work_check_variables(&w->rw, err);
    if (rc != WF_OK)
        return rc;
    rc = refresh_job_variables(w, err);
    if (rc != WF_OK)
        return rc;
    wf_work_changes(&w->rw, &c);
    const void *up = NULL;
    rc = collect(a, &w->toks, sizeof(wf_token_row), &up, &c.n_tokens, &c.del_tokens,
                 &c.n_del_tokens, err);
    if (rc == WF_OK) {
        c.tokens = up;
        /* Work items are never deleted: an ended one is history (KEEP). */
        const char *const *none;
        size_t n_none = 0;
        rc = collect(a, &w->items, sizeof(wf_work_item_row), &up, &c.n_work_items, &none, &n_none,
                     err);
        c.work_items = up;
        if (rc == WF_OK && n_none > 0)
            rc = wf_error_set(err, WF_E_INTERNAL, "a work item would be deleted");
    }
    if (rc == WF_OK) {
        rc = collect(a, &w->jobs, sizeof(wf_job_row), &up, &c.n_jobs, &c.del_jobs, &c.n_del_jobs,
                     err);
        c.jobs = up;
    }
    if (rc == WF_OK) {
        rc = collect(a, &w->timers, sizeof(wf_timer_row), &up, &c.n_timers, &c.del_timers,
                     &c.n_del_timers, err);
        c.timers = up;
    }
    if (rc == WF_OK) {
        rc = collect(a, &w->subs, sizeof(wf_subscription_row), &up, &c.n_subscriptions,
                     &c.del_subscriptions, &c.n_del_subscriptions, err);
        c.subscriptions = up;
    }
    if (rc != WF_OK)
        return rc;
    rc = wf_tx_apply(w->tx, &c, err);
    return rc == WF_OK ? wf_runtime__call_after_write(w, err) : rc;
}

/* ---- lookups -------------------------------------------------------------------------- */

const wf_transition *
wf_runtime__transition_of(const net_work *w, const char *id)
{
    if (w->net == NULL || id == NULL)
        return NULL;
    int t = wf_net_transition_index(w->net, id);
    return t >= 0 ? &w->net->transitions[t] : NULL;
}

bool
wf_runtime__task_pending(const wf_task_row *t)
{
    return t->status == WF_TASK_OPEN || t->status == WF_TASK_CLAIMED;
}

/* ---- incidents ---------------------------------------------------------------------------- */

bool
wf_runtime__incident_code(wf_code rc)
{
    return rc == WF_E_NO_ARC_MATCHED || rc == WF_E_INVALID_ARGUMENT || rc == WF_E_INVALID_JSON ||
           rc == WF_E_DEFINITION_INVALID || rc == WF_E_TOO_LARGE || rc == WF_E_EXPRESSION_LIMIT ||
           rc == WF_E_FOREACH_NOT_ARRAY || rc == WF_E_FOREACH_EMPTY || rc == WF_E_FOREACH_TOO_MANY;
}
