/*
 * net_runtime: the case runtime of NET definitions (docs/architecture.md)
 * over the store: the working set of a net unit of work, the mapping of
 * the pure engine's diffs (net.h) to rows and events, and the units of
 * work that fire transitions: StartInstance, CompleteTask of a USER
 * transition's task, due timers; plus GetInstance's view of a net.
 *
 * Every mutation is one unit of work on one root (uow.h): lock the root,
 * load the working set (net_runtime_int.h), let net_fire.c compute the
 * step, turn its diff into rows, write once. Because the engine is pure
 * and the transaction rolls back on any error, a refused firing
 * (NO_ARC_MATCHED) changes nothing.
 *
 * What a diff becomes:
 *   fired item      TRANSITION_FIRED; the work item row is deleted (kept as
 *                   FIRED when its transition has a compensation_job_type:
 *                   the saga needs the completion order); its job, timer
 *                   and subscription rows are deleted
 *   withdrawn item  WORKITEM_WITHDRAWN; row deleted; its pending tasks
 *                   CANCELLED (TASK_CANCELLED); its job, timer and
 *                   subscription deleted, so a stale worker gets
 *                   JOB_LEASE_LOST and the timer can never fire
 *   tokens          inserted / deleted
 *   created item    row ENABLED, TRANSITION_ENABLED, and per trigger:
 *                   USER  tasks (TASK_CREATED): USER/GROUP one task per
 *                         id (normally one), USERS one USER task per id,
 *                         ids_expression evaluated over the variables
 *                   AUTO  a job ACTIVATABLE now, attempt 0, its retry
 *                         policy, idempotency key "<instance>:<work item>",
 *                         the variables as they are (JOB_CREATED); until it
 *                         is activated every write refreshes its variables
 *                   TIME  a timer at now + delay or at due_expression
 *                         (TIMER_SCHEDULED)
 *                   MSG   a subscription (signal name; the aggregate for
 *                         AGGREGATE correlation)
 *   ended           INSTANCE_COMPLETED
 *   deadlocked      INSTANCE_FAILED (an incident; last_error says why)
 * Pending USER tasks get due_at from a TIME transition competing for one
 * of their tokens.
 *
 * Must not: include protobuf or grpc headers.
 */
#include "net_runtime_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "defcache.h"
#include "engine_json.h"
#include "expr.h"
#include "ids.h"
#include "wf_id.h"
#include "wf_time.h"

static bool
same(const char *a, const char *b)
{
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}

static bool
unset(const char *s)
{
    return s == NULL || s[0] == '\0';
}

static char *
new_id(wf_arena *a)
{
    char *id = wf_arena_alloc(a, WF_UUID_LEN + 1);
    if (id != NULL)
        wf_uuid7(id);
    return id;
}

char *
wf_runtime__time_text(wf_arena *a, int64_t us)
{
    time_t s = (time_t)(us / 1000000);
    int frac = (int)(us % 1000000);
    if (frac < 0) {
        frac += 1000000;
        s--;
    }
    struct tm tm;
    gmtime_r(&s, &tm);
    return wf_arena_printf(a, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900,
                           tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
}

static const char *
trigger_name(wf_trigger t)
{
    switch (t) {
    case WF_TRIGGER_USER:
        return "USER";
    case WF_TRIGGER_AUTO:
        return "AUTO";
    case WF_TRIGGER_TIME:
        return "TIME";
    case WF_TRIGGER_MSG:
        return "MSG";
    }
    return "UNSPECIFIED";
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

static wf_code
rows_add(wf_arena *a, nw_rows *r, const void *row, size_t elem, unsigned char flags, size_t *index,
         wf_error *err)
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
        if (!(r->flags[i] & NW_GONE) && same(row_id(r, elem, i), id))
            return i;
    return WF_WORK_NONE;
}

bool
wf_runtime__armed(const net_work *w, const wf_work_item_row *it)
{
    if (it->trigger == WF_TRIGGER_TIME) {
        for (size_t k = 0; k < w->timers.n; k++)
            if (!(w->timers.flags[k] & NW_GONE) &&
                same(NW_ROW(w, timers, wf_timer_row, k)->work_item_id, it->id))
                return true;
    } else if (it->trigger == WF_TRIGGER_MSG) {
        for (size_t k = 0; k < w->subs.n; k++)
            if (!(w->subs.flags[k] & NW_GONE) &&
                same(NW_ROW(w, subs, wf_subscription_row, k)->work_item_id, it->id))
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

static wf_code
nw_load(net_work *w, wf_error *err)
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
        if (same(agg->tokens[i].instance_id, id))
            rc = rows_add(a, &w->toks, &agg->tokens[i], sizeof(wf_token_row), 0, NULL, err);
    for (size_t i = 0; rc == WF_OK && i < agg->n_work_items; i++)
        if (same(agg->work_items[i].instance_id, id))
            rc =
                rows_add(a, &w->items, &agg->work_items[i], sizeof(wf_work_item_row), 0, NULL, err);
    for (size_t i = 0; rc == WF_OK && i < agg->n_jobs; i++)
        rc = rows_add(a, &w->jobs, &agg->jobs[i], sizeof(wf_job_row), 0, NULL, err);
    for (size_t i = 0; rc == WF_OK && i < agg->n_timers; i++)
        rc = rows_add(a, &w->timers, &agg->timers[i], sizeof(wf_timer_row), 0, NULL, err);
    for (size_t i = 0; rc == WF_OK && i < agg->n_subscriptions; i++)
        rc = rows_add(a, &w->subs, &agg->subscriptions[i], sizeof(wf_subscription_row), 0, NULL,
                      err);
    return rc;
}

wf_code
wf_runtime__definition(wf_tx *tx, wf_arena *arena, const char *key, int32_t version,
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
    rc = wf_runtime__definition(tx, ctx->arena, in->definition_key, in->definition_version, &def,
                                &w->net, err);
    if (rc != WF_OK)
        return rc;
    return nw_load(w, err);
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
    return nw_load(w, err);
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
        if (same(w->wake[i], type))
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
wf_runtime__wake(const wf_net_ctx *ctx, const char *const *types, size_t n)
{
    if (ctx == NULL || ctx->wake == NULL)
        return;
    ctx->wake(ctx->wake_arg, WF_NET_TOPIC_EVENTS);
    for (size_t i = 0; i < n; i++) {
        char topic[192];
        if (types[i][0] == '\0') {
            ctx->wake(ctx->wake_arg, WF_NET_TOPIC_TIMERS); /* WF_NW_WAKE_TIMERS */
            continue;
        }
        snprintf(topic, sizeof topic, "%s%s", WF_NET_TOPIC_JOBS_PREFIX, types[i]);
        ctx->wake(ctx->wake_arg, topic);
    }
}

wf_code
wf_runtime__fail_instance(net_work *w, const char *message, wf_error *err)
{
    return wf_runtime__fail_instance_data(w, message, NULL, err);
}

wf_code
wf_runtime__fail_instance_data(net_work *w, const char *message, json_t *data, wf_error *err)
{
    wf_instance_row *in = &w->rw.insts[w->inst];
    in->status = WF_INSTANCE_FAILED;
    in->last_error = wf_work_strdup(&w->rw, message);
    if (in->last_error == NULL) {
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

/* Jobs not yet activated carry the instance's current variables, so a
 * worker sees the variables as they are when it activates the job. */
static void
refresh_job_variables(net_work *w)
{
    const wf_instance_row *in = &w->rw.insts[w->inst];
    for (size_t i = 0; i < w->jobs.n; i++) {
        wf_job_row *j = JOB(w, i);
        if ((w->jobs.flags[i] & NW_GONE) || j->state != WF_JOB_ACTIVATABLE ||
            !same(j->instance_id, in->id) || in->variables_json == NULL ||
            same(j->variables_json, in->variables_json))
            continue;
        j->variables_json = in->variables_json;
        wf_runtime__dirty(&w->jobs, i);
    }
}

wf_code
wf_runtime__write(net_work *w, wf_error *err)
{
    wf_store_changes c;
    wf_arena *a = w->rw.arena;
    refresh_job_variables(w);
    wf_work_changes(&w->rw, &c);
    const void *up = NULL;
    wf_code rc = collect(a, &w->toks, sizeof(wf_token_row), &up, &c.n_tokens, &c.del_tokens,
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
    return wf_tx_apply(w->tx, &c, err);
}

/* ---- diff -> rows ------------------------------------------------------------------------ */

const wf_transition *
wf_runtime__transition_of(const net_work *w, const char *id)
{
    if (w->net == NULL || id == NULL)
        return NULL;
    int t = wf_net_transition_index(w->net, id);
    return t >= 0 ? &w->net->transitions[t] : NULL;
}

/* True when the comma lists a and b share an element. */
static bool
shares_token(const char *a, const char *b)
{
    if (unset(a) || unset(b))
        return false;
    for (const char *p = a; *p != '\0';) {
        size_t l = strcspn(p, ",");
        for (const char *q = b; *q != '\0';) {
            size_t m = strcspn(q, ",");
            if (l == m && strncmp(p, q, l) == 0)
                return true;
            q += m + (q[m] == ',');
        }
        p += l + (p[l] == ',');
    }
    return false;
}

static size_t
find_token_any(const net_work *w, const char *id)
{
    for (size_t i = 0; id != NULL && i < w->toks.n; i++)
        if (same(TOK(w, i)->id, id))
            return i;
    return WF_WORK_NONE;
}

/* Place ids an item consumes: its bound tokens' places, or (an item
 * created and fired within the step) the transition's input places. */
static json_t *
consumed_places(const net_work *w, const wf_work_item_row *row, const wf_transition *t)
{
    json_t *v = json_array();
    if (v == NULL)
        return NULL;
    if (row != NULL) {
        for (const char *p = row->token_ids; p != NULL && *p != '\0';) {
            size_t l = strcspn(p, ",");
            char id[WF_UUID_LEN + 8];
            snprintf(id, sizeof id, "%.*s", (int)(l < sizeof id - 1 ? l : sizeof id - 1), p);
            size_t k = find_token_any(w, id);
            if (k != WF_WORK_NONE)
                json_array_append_new(v, json_string(TOK(w, k)->place_id));
            p += l + (p[l] == ',');
        }
        return v;
    }
    for (size_t i = 0; i < w->net->n_arcs; i++) {
        const wf_arc *a = &w->net->arcs[i];
        if (same(a->target, t->id) && wf_net_place_index(w->net, a->source) >= 0)
            for (int32_t k = 0; k < wf_net_arc_weight(a); k++)
                json_array_append_new(v, json_string(a->source));
    }
    return v;
}

/* Place ids a firing produced into (as the engine routed it). */
static json_t *
produced_places(const wf_net_firing *f)
{
    json_t *v = json_array();
    for (size_t i = 0; v != NULL && i < f->n_produced; i++)
        json_array_append_new(v, json_string(f->produced[i]));
    return v;
}

/* Deletes the jobs, timers and subscriptions of work item id. */
static void
drop_side_rows(net_work *w, const char *item_id)
{
    for (size_t i = 0; i < w->jobs.n; i++)
        if (same(JOB(w, i)->work_item_id, item_id))
            wf_runtime__gone(&w->jobs, i);
    for (size_t i = 0; i < w->timers.n; i++)
        if (same(TIMER(w, i)->work_item_id, item_id))
            wf_runtime__gone(&w->timers, i);
    for (size_t i = 0; i < w->subs.n; i++)
        if (same(SUB(w, i)->work_item_id, item_id))
            wf_runtime__gone(&w->subs, i);
}

static bool
task_pending(const wf_task_row *t)
{
    return t->status == WF_TASK_OPEN || t->status == WF_TASK_CLAIMED;
}

/* Who finished item it as it fires: the worker of its job (AUTO), the
 * actor who completed its last task (USER); NULL for TIME and MSG. */
static const char *
finisher(const net_work *w, const wf_work_item_row *it)
{
    if (it->trigger == WF_TRIGGER_AUTO) {
        for (size_t i = 0; i < w->jobs.n; i++)
            if (same(JOB(w, i)->work_item_id, it->id) && !JOB(w, i)->compensation)
                return JOB(w, i)->worker;
        return NULL;
    }
    if (it->trigger != WF_TRIGGER_USER)
        return NULL;
    const wf_task_row *last = NULL;
    for (size_t k = 0; k < w->rw.n_tasks; k++) {
        const wf_task_row *t = &w->rw.tasks[k];
        if (same(t->work_item_id, it->id) && t->status == WF_TASK_DONE &&
            (last == NULL || t->ended_at >= last->ended_at))
            last = t;
    }
    return last != NULL && last->completed_by != NULL ? last->completed_by : w->rw.ctx->actor;
}

static wf_code
apply_fired(net_work *w, const wf_net_firing *f, wf_error *err)
{
    const wf_transition *t = wf_runtime__transition_of(w, f->transition_id);
    size_t ii = wf_runtime__find(w, &w->items, sizeof(wf_work_item_row), f->work_item_id);
    if (t == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "transition \"%s\" is not in the net",
                            f->transition_id);
    json_t *data = json_pack("{s:s,s:s,s:s,s:o*,s:o*}", "transitionId", t->id, "workItemId",
                             f->work_item_id, "trigger", trigger_name(t->trigger), "consumed",
                             consumed_places(w, ii != WF_WORK_NONE ? ITEM(w, ii) : NULL, t),
                             "produced", produced_places(f));
    wf_code rc = wf_runtime__event(w, "TRANSITION_FIRED", data, err);
    if (rc != WF_OK || ii == WF_WORK_NONE)
        return rc;
    const char *by = finisher(w, ITEM(w, ii));
    drop_side_rows(w, f->work_item_id);
    wf_work_item_row *it = ITEM(w, ii);
    if (!unset(t->compensation_job_type)) {
        /* Kept live for the saga: compensation runs in reverse completion
         * order. */
        it->state = WF_WORK_ITEM_FIRED;
        it->finished_at = w->rw.now;
        it->finished_by = (char *)by;
        wf_runtime__dirty(&w->items, ii);
    } else {
        wf_runtime__end_item(w, ii, WF_WORK_ITEM_FINISHED, by);
    }
    return WF_OK;
}

static wf_code
apply_withdrawn(net_work *w, const char *item_id, wf_error *err)
{
    size_t ii = wf_runtime__find(w, &w->items, sizeof(wf_work_item_row), item_id);
    if (ii == WF_WORK_NONE)
        return WF_OK;
    const wf_work_item_row *it = ITEM(w, ii);
    wf_code rc = wf_runtime__event(
        w, "WORKITEM_WITHDRAWN",
        json_pack("{s:s,s:s}", "transitionId", it->transition_id, "workItemId", it->id), err);
    for (size_t k = 0; rc == WF_OK && k < w->rw.n_tasks; k++)
        if (same(w->rw.tasks[k].work_item_id, item_id) && task_pending(&w->rw.tasks[k]))
            rc = wf_referral_cancel_task(&w->rw, k, err);
    drop_side_rows(w, item_id);
    wf_runtime__end_item(w, ii, WF_WORK_ITEM_WITHDRAWN, NULL);
    return rc;
}

wf_code
wf_runtime__abandon(net_work *w, const char *keep, bool whole_tree, wf_error *err)
{
    const char *id = w->rw.insts[w->inst].id;
    wf_code rc = WF_OK;
    for (size_t i = 0; rc == WF_OK && i < w->items.n; i++) {
        const wf_work_item_row *it = ITEM(w, i);
        if ((w->items.flags[i] & NW_GONE) || !same(it->instance_id, id) ||
            it->state != WF_WORK_ITEM_ENABLED)
            continue;
        if (same(it->id, keep))
            wf_runtime__end_item(w, i, WF_WORK_ITEM_FINISHED, w->rw.ctx->actor);
        else
            rc = apply_withdrawn(w, it->id, err);
    }
    for (size_t i = 0; i < w->jobs.n; i++)
        if (whole_tree || same(JOB(w, i)->instance_id, id))
            wf_runtime__gone(&w->jobs, i);
    for (size_t i = 0; i < w->timers.n; i++)
        if (whole_tree || same(TIMER(w, i)->instance_id, id))
            wf_runtime__gone(&w->timers, i);
    for (size_t i = 0; i < w->subs.n; i++)
        if (whole_tree || same(SUB(w, i)->instance_id, id))
            wf_runtime__gone(&w->subs, i);
    for (size_t i = 0; i < w->toks.n; i++)
        wf_runtime__gone(&w->toks, i);
    return rc;
}

static wf_code
add_task(net_work *w, const wf_work_item_row *it, const wf_transition *t, wf_assignee_kind kind,
         const char *assignee, wf_error *err)
{
    const wf_instance_row *in = &w->rw.insts[w->inst];
    wf_task_row row = {
        .id = new_id(w->rw.arena),
        .tenant = (char *)w->rw.ctx->tenant,
        .instance_id = in->id,
        .root_id = in->root_id,
        .definition_key = in->definition_key,
        .transition_id = it->transition_id,
        .work_item_id = it->id,
        .title = (char *)(unset(t->name) ? t->id : t->name),
        .assignee_kind = kind,
        .assignee_id = wf_work_strdup(&w->rw, assignee),
        .status = WF_TASK_OPEN,
        .created_at = w->rw.now,
    };
    size_t k;
    if (row.id == NULL || row.assignee_id == NULL)
        return wf_error_nomem(err);
    wf_code rc = wf_work_add_task(&w->rw, &row, &k, err);
    if (rc != WF_OK)
        return rc;
    return wf_runtime__event(w, "TASK_CREATED",
                             json_pack("{s:s,s:s,s:s,s:s,s:s}", "taskId", row.id, "assigneeKind",
                                       kind == WF_ASSIGNEE_GROUP ? "GROUP" : "USER", "assigneeId",
                                       row.assignee_id, "transitionId", t->id, "workItemId",
                                       it->id),
                             err);
}

static wf_code
enable_user(net_work *w, const wf_work_item_row *it, const wf_transition *t, const char *vars,
            wf_error *err)
{
    const char *const *ids = t->assignee.ids;
    size_t n = t->assignee.n_ids;
    if (!unset(t->assignee.ids_expression)) {
        wf_expr *e;
        char **got = NULL;
        wf_code rc = wf_expr_cached(t->assignee.ids_expression, &e, err);
        if (rc != WF_OK)
            return rc;
        rc = wf_expr_eval_strings(e, vars, w->rw.arena, &got, &n, err);
        wf_expr_free(e);
        if (rc != WF_OK)
            return wf_error_set(err, rc, "ids_expression of transition \"%s\": %s", t->id,
                                err != NULL ? err->msg : "");
        ids = (const char *const *)got;
        /* The ids an AssignTo's expression may give, by the same rule. */
        for (size_t i = 0; i < n; i++)
            if (!wf_referral_assignee_id_ok(ids[i]))
                return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                                    "ids_expression of transition \"%s\" gave \"%.64s\", which "
                                    "is not 1 to 128 printable characters",
                                    t->id, ids[i]);
    }
    if (n == 0)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                            "transition \"%s\" has no assignee: its ids_expression gave no id",
                            t->id);
    wf_assignee_kind kind =
        t->assignee.kind == WF_NET_ASSIGNEE_GROUP ? WF_ASSIGNEE_GROUP : WF_ASSIGNEE_USER;
    size_t ii = wf_runtime__find(w, &w->items, sizeof(wf_work_item_row), it->id);
    if (ii != WF_WORK_NONE) {
        /* The history names whom the item was given to. */
        char *list = wf_net_join_ids(w->rw.arena, ids, n);
        if (list == NULL)
            return wf_error_nomem(err);
        ITEM(w, ii)->assignee_kind = (int32_t)t->assignee.kind;
        ITEM(w, ii)->assignee_id = list;
    }
    wf_code rc = WF_OK;
    for (size_t i = 0; rc == WF_OK && i < n; i++)
        rc = add_task(w, it, t, kind, ids[i], err);
    return rc;
}

static wf_code
enable_auto(net_work *w, const wf_work_item_row *it, const wf_transition *t, const char *vars,
            wf_error *err)
{
    const wf_instance_row *in = &w->rw.insts[w->inst];
    wf_retry_policy r = wf_net_retry_effective(t);
    wf_job_row job = {
        .id = new_id(w->rw.arena),
        .tenant = (char *)w->rw.ctx->tenant,
        .root_id = in->root_id,
        .instance_id = in->id,
        .work_item_id = it->id,
        .transition_id = it->transition_id,
        .job_type = (char *)t->job_type,
        .state = WF_JOB_ACTIVATABLE,
        .attempt = 0,
        .max_attempts = r.max_attempts,
        .activatable_at = w->rw.now,
        .initial_backoff_ms = r.initial_backoff_ms,
        .backoff_multiplier = r.multiplier,
        .max_backoff_ms = r.max_backoff_ms,
        .variables_json = (char *)vars,
        .idempotency_key = wf_arena_printf(w->rw.arena, "%s:%s", in->id, it->id),
        .created_at = w->rw.now,
    };
    if (job.id == NULL || job.idempotency_key == NULL)
        return wf_error_nomem(err);
    wf_code rc = rows_add(w->rw.arena, &w->jobs, &job, sizeof job, NW_NEW, NULL, err);
    if (rc == WF_OK)
        rc = wf_runtime__add_wake(w, t->job_type, err);
    if (rc == WF_OK)
        rc = wf_runtime__event(w, "JOB_CREATED",
                               json_pack("{s:s,s:s,s:s,s:s}", "jobId", job.id, "jobType",
                                         t->job_type, "transitionId", t->id, "workItemId", it->id),
                               err);
    return rc;
}

static wf_code
enable_time(net_work *w, const wf_work_item_row *it, const wf_transition *t, const char *vars,
            wf_error *err)
{
    const wf_instance_row *in = &w->rw.insts[w->inst];
    int64_t due = w->rw.now + t->delay_ms * 1000;
    if (!unset(t->due_expression)) {
        wf_expr *e;
        wf_code rc = wf_expr_cached(t->due_expression, &e, err);
        if (rc != WF_OK)
            return rc;
        rc = wf_expr_eval_time(e, vars, &due, err);
        wf_expr_free(e);
        if (rc != WF_OK)
            return wf_error_set(err, rc, "due_expression of transition \"%s\": %s", t->id,
                                err != NULL ? err->msg : "");
    }
    wf_timer_row tm = {
        .id = new_id(w->rw.arena),
        .tenant = (char *)w->rw.ctx->tenant,
        .root_id = in->root_id,
        .instance_id = in->id,
        .work_item_id = it->id,
        .transition_id = it->transition_id,
        .due_at = due,
        .created_at = w->rw.now,
    };
    char *when = wf_runtime__time_text(w->rw.arena, due);
    if (tm.id == NULL || when == NULL)
        return wf_error_nomem(err);
    wf_code rc = rows_add(w->rw.arena, &w->timers, &tm, sizeof tm, NW_NEW, NULL, err);
    if (rc == WF_OK)
        rc = wf_runtime__add_wake(w, WF_NW_WAKE_TIMERS, err);
    if (rc == WF_OK)
        rc = wf_runtime__event(w, "TIMER_SCHEDULED",
                               json_pack("{s:s,s:s,s:s,s:s}", "timerId", tm.id, "transitionId",
                                         t->id, "workItemId", it->id, "dueAt", when),
                               err);
    return rc;
}

wf_code
wf_runtime__rearm_timer(net_work *w, size_t ii, wf_error *err)
{
    const wf_work_item_row *it = ITEM(w, ii);
    const wf_transition *t = wf_runtime__transition_of(w, it->transition_id);
    if (t == NULL || t->trigger != WF_TRIGGER_TIME)
        return wf_error_set(err, WF_E_INTERNAL, "work item \"%s\" is not a TIME work item", it->id);
    return enable_time(w, it, t, w->rw.insts[w->inst].variables_json, err);
}

static wf_code
enable_msg(net_work *w, const wf_work_item_row *it, const wf_transition *t, wf_error *err)
{
    const wf_instance_row *in = &w->rw.insts[w->inst];
    bool by_agg = t->correlation == WF_CORRELATION_AGGREGATE;
    wf_subscription_row s = {
        .id = new_id(w->rw.arena),
        .tenant = (char *)w->rw.ctx->tenant,
        .root_id = in->root_id,
        .instance_id = in->id,
        .work_item_id = it->id,
        .transition_id = it->transition_id,
        .signal_name = (char *)t->signal_name,
        .aggregate_type = by_agg ? in->aggregate_type : NULL,
        .aggregate_id = by_agg ? in->aggregate_id : NULL,
        .created_at = w->rw.now,
    };
    if (s.id == NULL)
        return wf_error_nomem(err);
    return rows_add(w->rw.arena, &w->subs, &s, sizeof s, NW_NEW, NULL, err);
}

static wf_code
apply_created(net_work *w, const wf_work_item *ci, const char *vars, wf_error *err)
{
    const wf_transition *t = wf_runtime__transition_of(w, ci->transition_id);
    const wf_instance_row *in = &w->rw.insts[w->inst];
    if (t == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "transition \"%s\" is not in the net",
                            ci->transition_id);
    wf_work_item_row row = {
        .id = (char *)ci->id,
        .tenant = (char *)w->rw.ctx->tenant,
        .root_id = in->root_id,
        .instance_id = in->id,
        .transition_id = (char *)t->id,
        .trigger = t->trigger,
        .token_ids = wf_net_join_ids(w->rw.arena, ci->token_ids, ci->n_token_ids),
        .state = WF_WORK_ITEM_ENABLED,
        .enabled_at = w->rw.now,
        .job_type =
            t->trigger == WF_TRIGGER_AUTO && !unset(t->job_type) ? (char *)t->job_type : NULL,
        .signal_name = t->trigger == WF_TRIGGER_MSG ? (char *)t->signal_name : NULL,
    };
    size_t ii;
    if (row.token_ids == NULL)
        return wf_error_nomem(err);
    wf_code rc = rows_add(w->rw.arena, &w->items, &row, sizeof row, NW_NEW, &ii, err);
    if (rc == WF_OK)
        rc = wf_runtime__event(w, "TRANSITION_ENABLED",
                               json_pack("{s:s,s:s,s:s}", "transitionId", t->id, "workItemId",
                                         row.id, "trigger", trigger_name(t->trigger)),
                               err);
    if (rc != WF_OK)
        return rc;
    switch (t->trigger) {
    case WF_TRIGGER_USER:
        return enable_user(w, &row, t, vars, err);
    case WF_TRIGGER_AUTO:
        return unset(t->job_type) ? WF_OK : enable_auto(w, &row, t, vars, err);
    case WF_TRIGGER_TIME:
        return enable_time(w, &row, t, vars, err);
    case WF_TRIGGER_MSG:
        /* A buffered signal waiting for it is consumed now; the item fires
         * once the whole step is applied (net_runtime_int.h). */
        rc = enable_msg(w, &row, t, err);
        return rc == WF_OK ? wf_runtime__msg_enabled(w, &row, t, err) : rc;
    }
    return WF_OK;
}

/* Due time of the earliest live timer competing with item row for a
 * token; 0 when none. */
static int64_t
competing_due(const net_work *w, const wf_work_item_row *row)
{
    int64_t due = 0;
    for (size_t i = 0; i < w->timers.n; i++) {
        const wf_timer_row *tm = TIMER(w, i);
        if ((w->timers.flags[i] & NW_GONE) || same(tm->work_item_id, row->id) ||
            !same(tm->instance_id, row->instance_id))
            continue;
        size_t k = wf_runtime__find(w, &w->items, sizeof(wf_work_item_row), tm->work_item_id);
        if (k != WF_WORK_NONE && shares_token(ITEM(w, k)->token_ids, row->token_ids) &&
            (due == 0 || tm->due_at < due))
            due = tm->due_at;
    }
    return due;
}

/* Pending tasks of live items get the due time of a competing timer. */
static void
link_due(net_work *w)
{
    for (size_t k = 0; k < w->rw.n_tasks; k++) {
        wf_task_row *t = &w->rw.tasks[k];
        if (!task_pending(t) || t->work_item_id == NULL ||
            !same(t->instance_id, w->rw.insts[w->inst].id))
            continue;
        size_t ii = wf_runtime__find(w, &w->items, sizeof(wf_work_item_row), t->work_item_id);
        if (ii == WF_WORK_NONE)
            continue;
        int64_t due = competing_due(w, ITEM(w, ii));
        if (due != t->due_at) {
            t->due_at = due;
            wf_work_touch_task(&w->rw, k);
        }
    }
    /* The deadline of every live item: its own timer's due time (TIME),
     * else that of the earliest timer competing for one of its tokens
     * (the timeout of a USER, MSG or AUTO item). Written only when it
     * changed. */
    for (size_t i = 0; i < w->items.n; i++) {
        wf_work_item_row *it = ITEM(w, i);
        if ((w->items.flags[i] & NW_GONE) || it->state != WF_WORK_ITEM_ENABLED ||
            !same(it->instance_id, w->rw.insts[w->inst].id))
            continue;
        int64_t due = 0;
        if (it->trigger == WF_TRIGGER_TIME) {
            /* A timer spent by a refused firing keeps its due time. */
            due = it->deadline;
            for (size_t k = 0; k < w->timers.n; k++)
                if (!(w->timers.flags[k] & NW_GONE) && same(TIMER(w, k)->work_item_id, it->id))
                    due = TIMER(w, k)->due_at;
        } else {
            due = competing_due(w, it);
        }
        if (due != it->deadline) {
            it->deadline = due;
            wf_runtime__dirty(&w->items, i);
        }
    }
}

static wf_code
apply_diff(net_work *w, const wf_net_diff *d, const char *vars, wf_error *err)
{
    wf_code rc = WF_OK;
    for (size_t i = 0; rc == WF_OK && i < d->n_fired; i++)
        rc = apply_fired(w, &d->fired[i], err);
    for (size_t i = 0; rc == WF_OK && i < d->n_withdrawn; i++)
        rc = apply_withdrawn(w, d->withdrawn[i], err);
    if (rc != WF_OK)
        return rc;
    const wf_instance_row *in = &w->rw.insts[w->inst];
    for (size_t i = 0; i < d->n_removed_tokens; i++) {
        size_t k = wf_runtime__find(w, &w->toks, sizeof(wf_token_row), d->removed_tokens[i]);
        if (k != WF_WORK_NONE)
            wf_runtime__gone(&w->toks, k);
    }
    for (size_t i = 0; rc == WF_OK && i < d->n_added_tokens; i++) {
        const wf_token *t = &d->added_tokens[i];
        wf_token_row row = {
            .id = (char *)t->id,
            .tenant = (char *)w->rw.ctx->tenant,
            .root_id = in->root_id,
            .instance_id = in->id,
            .place_id = (char *)t->place_id,
            .created_seq = t->seq,
        };
        rc = rows_add(w->rw.arena, &w->toks, &row, sizeof row, NW_NEW, NULL, err);
    }
    void *sig_mark = wf_runtime__pending_mark(w);
    for (size_t i = 0; rc == WF_OK && i < d->n_created; i++)
        rc = apply_created(w, &d->created[i], vars, err);
    /* MSG items that consumed a buffered signal fire now. */
    rc = wf_runtime__fire_pending(w, sig_mark, rc, err);
    if (rc != WF_OK)
        return rc;
    link_due(w);
    wf_work_touch_instance(&w->rw, w->inst);
    if (d->ended) {
        rc = wf_referral_finish_instance(&w->rw, w->inst, WF_INSTANCE_COMPLETED, NULL, err);
        /* Signals buffered for the ended instance can never be delivered. */
        return rc == WF_OK ? wf_runtime__discard_buffered(w, err) : rc;
    }
    if (d->deadlocked) {
        char msg[300];
        snprintf(msg, sizeof msg,
                 "no transition of definition \"%s\" is enabled and the case has not ended",
                 w->net->key != NULL ? w->net->key : "");
        return wf_runtime__fail_instance(w, msg, err);
    }
    return WF_OK;
}

/* The marking and live work items of the net instance. */
static wf_code
current_state(net_work *w, wf_net_state *st, wf_error *err)
{
    wf_arena *a = w->rw.arena;
    wf_token *toks = wf_arena_alloc(a, (w->toks.n + 1) * sizeof *toks);
    wf_work_item *items = wf_arena_alloc(a, (w->items.n + 1) * sizeof *items);
    if (toks == NULL || items == NULL)
        return wf_error_nomem(err);
    size_t nt = 0, ni = 0;
    for (size_t i = 0; i < w->toks.n; i++)
        if (!(w->toks.flags[i] & NW_GONE))
            toks[nt++] = (wf_token){TOK(w, i)->id, TOK(w, i)->place_id, TOK(w, i)->created_seq};
    for (size_t i = 0; i < w->items.n; i++) {
        const wf_work_item_row *r = ITEM(w, i);
        if ((w->items.flags[i] & NW_GONE) || r->state != WF_WORK_ITEM_ENABLED)
            continue;
        wf_work_item *it = &items[ni++];
        *it = (wf_work_item){.id = r->id, .transition_id = r->transition_id, .trigger = r->trigger};
        wf_code rc = wf_net_split_ids(a, r->token_ids, &it->token_ids, &it->n_token_ids, err);
        if (rc != WF_OK)
            return rc;
    }
    *st = (wf_net_state){.tokens = toks, .n_tokens = nt, .items = items, .n_items = ni};
    return WF_OK;
}

wf_code
wf_runtime__fire(net_work *w, const char *work_item_id, const char *patch_json, wf_error *err)
{
    return wf_runtime__fire_goto(w, work_item_id, patch_json, NULL, err);
}

wf_code
wf_runtime__fire_goto(net_work *w, const char *work_item_id, const char *patch_json,
                      const char *goto_place, wf_error *err)
{
    if (w->net == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "instance \"%s\" does not run a net",
                            w->rw.insts[w->inst].id);
    wf_instance_row *in = &w->rw.insts[w->inst];
    const char *vars = in->variables_json;
    wf_code rc;
    if (patch_json != NULL) {
        rc = wf_engine_json_merge(w->rw.arena, in->variables_json, patch_json, &vars, err);
        if (rc != WF_OK)
            return rc;
        in->variables_json = (char *)vars;
        wf_work_touch_instance(&w->rw, w->inst);
    }
    wf_net_state st, out;
    wf_net_diff d;
    rc = current_state(w, &st, err);
    if (rc == WF_OK)
        rc = wf_net_fire_goto(w->net, &st, work_item_id, goto_place, vars, w->rw.arena, &out, &d,
                              err);
    if (rc == WF_OK)
        rc = apply_diff(w, &d, vars, err);
    return rc;
}

/* ---- StartInstance ------------------------------------------------------------------------ */

static bool
active(const wf_definition_row *d, int64_t now)
{
    return (d->valid_from == 0 || now >= d->valid_from) &&
           (d->valid_until == 0 || now < d->valid_until);
}

/* A NET definition found for StartInstance: picks the version to start
 * (version 0: the newest whose validity window contains now; an explicit
 * version must be inside its window, else DEFINITION_NOT_ACTIVE) into
 * *def. The picked version may be AD_HOC (a key whose versions changed
 * kind): it then starts as such. */
static wf_code
pick_version(wf_tx *tx, int32_t asked, wf_definition_row *def, wf_error *err)
{
    int64_t now = wf_now_us();
    if (active(def, now))
        return WF_OK;
    if (asked != 0)
        return wf_error_set(err, WF_E_DEFINITION_NOT_ACTIVE,
                            "definition \"%s\" version %d is outside its validity window", def->key,
                            (int)def->version);
    /* Version 0: the newest version whose window contains now. */
    const char *key = def->key;
    for (int32_t v = def->version - 1; v >= 1; v--) {
        wf_definition_row older;
        bool found = false;
        wf_code rc = wf_tx_get_definition(tx, key, v, &older, &found, err);
        if (rc != WF_OK)
            return rc;
        if (found && active(&older, now)) {
            *def = older;
            return WF_OK;
        }
    }
    return wf_error_set(err, WF_E_DEFINITION_NOT_ACTIVE,
                        "no version of definition \"%s\" is inside its validity window now", key);
}

static wf_code
start_net(const wf_ref_ctx *ctx, wf_tx *tx, const wf_definition_row *def, const wf_start_spec *spec,
          const char *vars, wf_instance_row *out, wf_error *err)
{
    net_work w;
    memset(&w, 0, sizeof w);
    w.tx = tx;
    const wf_net *net;
    wf_code rc = wf_defcache_net(def, ctx->arena, &net, err);
    if (rc == WF_OK)
        rc = wf_work_init(&w.rw, ctx, NULL, err);
    if (rc != WF_OK)
        return rc;
    char *id = spec->instance_id != NULL ? wf_arena_strdup(ctx->arena, spec->instance_id)
                                         : new_id(ctx->arena);
    if (id == NULL)
        return wf_error_nomem(err);
    bool has_agg = !unset(spec->aggregate_type);
    wf_instance_row root = {
        .id = id,
        .tenant = (char *)ctx->tenant,
        .definition_key = wf_work_strdup(&w.rw, def->key),
        .definition_version = def->version,
        .root_id = id,
        .status = WF_INSTANCE_RUNNING,
        .variables_json = (char *)vars,
        .aggregate_type = has_agg ? wf_work_strdup(&w.rw, spec->aggregate_type) : NULL,
        .aggregate_id = has_agg ? wf_work_strdup(&w.rw, spec->aggregate_id) : NULL,
        .started_by = wf_work_strdup(&w.rw, ctx->actor),
        .title = wf_work_strdup(&w.rw, unset(net->name) ? def->key : net->name),
        .created_at = w.rw.now,
        .updated_at = w.rw.now,
    };
    rc = wf_work_add_instance(&w.rw, &root, &w.inst, err);
    if (rc != WF_OK)
        return rc;
    w.net = net;
    rc = nw_load(&w, err);
    if (rc == WF_OK)
        rc = wf_runtime__event(&w, "INSTANCE_STARTED",
                               json_pack("{s:s,s:i}", "definitionKey", root.definition_key,
                                         "definitionVersion", (int)def->version),
                               err);
    wf_net_state st;
    wf_net_diff d;
    if (rc == WF_OK)
        rc = wf_net_start(net, NULL, vars, ctx->arena, &st, &d, err);
    if (rc == WF_OK)
        rc = apply_diff(&w, &d, vars, err);
    if (rc == WF_OK)
        rc = wf_runtime__write(&w, err);
    if (rc == WF_OK)
        *out = w.rw.insts[w.inst];
    return rc;
}

wf_code
wf_net_start_in(const wf_ref_ctx *ctx, wf_tx *tx, const wf_start_spec *spec, const char *vars,
                wf_instance_row *out, wf_error *err)
{
    wf_definition_row def;
    wf_code rc = wf_referral_start_definition(ctx, tx, spec, &def, err);
    if (rc == WF_OK && WF_DEF_RUNS_NET(def.kind))
        rc = pick_version(tx, spec->version, &def, err);
    if (rc != WF_OK)
        return rc;
    if (WF_DEF_RUNS_NET(def.kind))
        return start_net(ctx, tx, &def, spec, vars, out, err);
    return wf_referral_start_root(ctx, tx, spec, vars, &def, out, err);
}

/* ---- CompleteTask of a USER transition ----------------------------------------------------- */

typedef struct task_op {
    const wf_ref_ctx *ctx;
    const char *task_id;
    const char *instance_id;
    const char *root_id; /* of the task */
    const char *patch;
    wf_ref_completion *out; /* CompleteTask */
    wf_ref_end *end;        /* CompleteAndEnd */
    const char **wake;
    size_t n_wake;
} task_op;

/* Counts the tasks of work item id. */
static void
count_item_tasks(const wf_work *rw, const char *item_id, wf_ref_counts *c)
{
    memset(c, 0, sizeof *c);
    for (size_t k = 0; k < rw->n_tasks; k++) {
        const wf_task_row *t = &rw->tasks[k];
        if (!same(t->work_item_id, item_id))
            continue;
        c->total++;
        c->open += t->status == WF_TASK_OPEN;
        c->claimed += t->status == WF_TASK_CLAIMED;
        c->done += t->status == WF_TASK_DONE;
        c->cancelled += t->status == WF_TASK_CANCELLED;
    }
    c->all_completed = c->total > 0 && c->open == 0 && c->claimed == 0;
}

/* Opens the tree of op's task and checks that the actor may complete it
 * now: *t is the task, *item its live work item, *tr its transition. */
static wf_code
open_task(net_work *w, wf_tx *tx, const task_op *op, size_t *t, const char **item,
          const wf_transition **tr, wf_error *err)
{
    const wf_ref_ctx *ctx = op->ctx;
    wf_code rc = wf_runtime__open(w, ctx, tx, op->instance_id, op->root_id, err);
    if (rc != WF_OK)
        return rc;
    *t = wf_work_find_task(&w->rw, op->task_id);
    if (*t == WF_WORK_NONE)
        return wf_error_set(err, WF_E_TASK_NOT_FOUND, "task \"%s\" does not exist", op->task_id);
    const wf_task_row *task = &w->rw.tasks[*t];
    bool member =
        task->assignee_kind == WF_ASSIGNEE_GROUP &&
        wf_referral_actor_in_group(ctx->dir, ctx->actor, ctx->actor_groups, task->assignee_id);
    rc = wf_referral_check_task_op(task, WF_TASK_OP_COMPLETE, ctx->actor, member, err);
    if (rc != WF_OK)
        return rc;
    if (w->rw.insts[w->inst].status != WF_INSTANCE_RUNNING)
        return wf_error_set(err, WF_E_INSTANCE_NOT_RUNNING, "instance \"%s\" is not running",
                            w->rw.insts[w->inst].id);
    size_t ii = wf_runtime__find(w, &w->items, sizeof(wf_work_item_row), task->work_item_id);
    if (w->net == NULL || ii == WF_WORK_NONE || ITEM(w, ii)->state != WF_WORK_ITEM_ENABLED)
        return wf_error_set(err, WF_E_TASK_NOT_OPEN, "task \"%s\" is no longer enabled", task->id);
    *item = ITEM(w, ii)->id;
    *tr = wf_runtime__transition_of(w, ITEM(w, ii)->transition_id);
    if (*tr == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "transition \"%s\" is not in the net",
                            ITEM(w, ii)->transition_id);
    return WF_OK;
}

static wf_code
task_body(wf_tx *tx, void *arg, wf_error *err)
{
    task_op *op = arg;
    net_work w;
    size_t t;
    const char *item_id = NULL;
    const wf_transition *tr;
    op->n_wake = 0;
    wf_code rc = open_task(&w, tx, op, &t, &item_id, &tr, err);
    /* The task is done; its output joins the instance's variables. */
    if (rc == WF_OK)
        rc = wf_referral_done_task(&w.rw, t, w.inst, op->patch, err);
    if (rc != WF_OK)
        return rc;

    wf_ref_counts c;
    count_item_tasks(&w.rw, item_id, &c);
    if (wf_completion_met(tr->completion.mode, tr->completion.quorum, (size_t)c.done,
                          (size_t)c.total)) {
        for (size_t k = 0; rc == WF_OK && k < w.rw.n_tasks; k++)
            if (same(w.rw.tasks[k].work_item_id, item_id) && task_pending(&w.rw.tasks[k]))
                rc = wf_referral_cancel_task(&w.rw, k, err);
        if (rc == WF_OK)
            rc = wf_runtime__fire(&w, item_id, NULL, err);
    }
    if (rc == WF_OK)
        rc = wf_runtime__write(&w, err);
    if (rc != WF_OK)
        return rc;
    op->out->task = w.rw.tasks[t];
    op->out->next = NULL;
    count_item_tasks(&w.rw, item_id, &op->out->counts);
    wf_runtime__keep_wake(&w, &op->wake, &op->n_wake);
    return WF_OK;
}

wf_code
wf_net_complete_task(const wf_ref_ctx *ctx, const char *task_id, const char *instance_id,
                     const char *root_id, const char *patch, wf_uow_idem *idem,
                     wf_ref_completion *out, wf_error *err)
{
    task_op op = {ctx, task_id, instance_id, root_id, patch, out, NULL, NULL, 0};
    wf_store_ctx sc = wf_work_store_ctx(ctx);
    return wf_uow_run(ctx->store, &sc, idem, task_body, &op, out, err);
}

/* CompleteAndEnd of a net task: the task is done (its transition does not
 * fire), the rest of the tree's work is withdrawn and every instance of
 * the tree completes. */
static wf_code
end_body(wf_tx *tx, void *arg, wf_error *err)
{
    task_op *op = arg;
    net_work w;
    size_t t;
    const char *item_id = NULL;
    const wf_transition *tr;
    op->end->n_cancelled = 0;
    wf_code rc = open_task(&w, tx, op, &t, &item_id, &tr, err);
    if (rc != WF_OK)
        return rc;
    size_t root = wf_work_find_instance(&w.rw, w.rw.insts[w.inst].root_id);
    if (root == WF_WORK_NONE || w.rw.insts[root].status != WF_INSTANCE_RUNNING)
        return wf_error_set(err, WF_E_INSTANCE_NOT_RUNNING, "instance \"%s\" is not running",
                            w.rw.insts[w.inst].root_id);
    rc = wf_referral_done_task(&w.rw, t, w.inst, op->patch, err);
    /* Tasks first, so that the response lists every one cancelled; then
     * the work items (WORKITEM_WITHDRAWN), jobs, timers and subscriptions
     * of the whole tree, and the instances. */
    if (rc == WF_OK)
        rc = wf_referral_cancel_pending_except(&w.rw, t, op->end, err);
    if (rc == WF_OK)
        rc = wf_runtime__abandon(&w, item_id, true, err);
    if (rc == WF_OK)
        rc = wf_referral_complete_tree(&w.rw, root, err);
    /* Signals buffered for the ended instance can never be delivered. */
    if (rc == WF_OK)
        rc = wf_runtime__discard_buffered(&w, err);
    if (rc == WF_OK)
        rc = wf_runtime__write(&w, err);
    if (rc == WF_OK) {
        op->end->root = w.rw.insts[root];
        op->end->task = w.rw.tasks[t];
    }
    return rc;
}

wf_code
wf_net_complete_and_end(const wf_ref_ctx *ctx, const char *task_id, const char *instance_id,
                        const char *root_id, const char *patch, wf_uow_idem *idem, wf_ref_end *out,
                        wf_error *err)
{
    task_op op = {ctx, task_id, instance_id, root_id, patch, NULL, out, NULL, 0};
    wf_store_ctx sc = wf_work_store_ctx(ctx);
    return wf_uow_run(ctx->store, &sc, idem, end_body, &op, out, err);
}

/* ---- incidents ---------------------------------------------------------------------------- */

bool
wf_runtime__incident_code(wf_code rc)
{
    return rc == WF_E_NO_ARC_MATCHED || rc == WF_E_INVALID_ARGUMENT || rc == WF_E_INVALID_JSON ||
           rc == WF_E_DEFINITION_INVALID || rc == WF_E_TOO_LARGE || rc == WF_E_EXPRESSION_LIMIT;
}

/* ---- GetInstance ----------------------------------------------------------------------------- */

wf_code
wf_net_instance_view(const wf_ref_ctx *ctx, const char *instance_id, wf_net_view *out,
                     wf_error *err)
{
    memset(out, 0, sizeof *out);
    wf_code rc = wf_ids_check(ctx, WF_ID_INSTANCE, "instance_id", instance_id, err);
    if (rc != WF_OK)
        return rc;
    wf_store_ctx sc = wf_work_store_ctx(ctx);
    wf_aggregate agg;
    rc = wf_uow_read_aggregate(ctx->store, &sc, instance_id, &agg, err);
    if (rc != WF_OK)
        return rc;
    const wf_instance_row *in = NULL;
    for (size_t i = 0; i < agg.n_instances && in == NULL; i++)
        if (same(agg.instances[i].id, instance_id))
            in = &agg.instances[i];
    if (in == NULL)
        return wf_error_set(err, WF_E_INSTANCE_NOT_FOUND, "instance \"%s\" does not exist",
                            instance_id);
    wf_definition_row def;
    rc = wf_store_get_definition(ctx->store, &sc, in->definition_key, in->definition_version, &def,
                                 err);
    if (rc != WF_OK || !WF_DEF_RUNS_NET(def.kind))
        return rc;
    const wf_net *net;
    rc = wf_defcache_net(&def, ctx->arena, &net, err);
    if (rc != WF_OK)
        return rc;
    wf_arena *a = ctx->arena;
    out->is_net = true;
    out->marking = wf_arena_calloc(a, net->n_places + 1, sizeof *out->marking);
    out->jobs = wf_arena_calloc(a, agg.n_jobs + 1, sizeof *out->jobs);
    out->timers = wf_arena_calloc(a, agg.n_timers + 1, sizeof *out->timers);
    out->awaiting = wf_arena_calloc(a, agg.n_subscriptions + 1, sizeof *out->awaiting);
    out->joins = wf_arena_calloc(a, agg.n_work_items + 1, sizeof *out->joins);
    if (!out->marking || !out->jobs || !out->timers || !out->awaiting || !out->joins)
        return wf_error_nomem(err);
    for (size_t p = 0; p < net->n_places; p++) {
        int32_t count = 0;
        for (size_t i = 0; i < agg.n_tokens; i++)
            count += same(agg.tokens[i].instance_id, instance_id) &&
                     same(agg.tokens[i].place_id, net->places[p].id);
        if (count > 0)
            out->marking[out->n_marking++] = (wf_net_marking){net->places[p].id, count};
    }
    for (size_t i = 0; i < agg.n_jobs; i++)
        if (same(agg.jobs[i].instance_id, instance_id) && agg.jobs[i].state != WF_JOB_FAILED)
            out->jobs[out->n_jobs++] = agg.jobs[i];
    for (size_t i = 0; i < agg.n_timers; i++)
        if (same(agg.timers[i].instance_id, instance_id))
            out->timers[out->n_timers++] = agg.timers[i];
    /* Competing timers through a scratch working set of the rows. */
    net_work w;
    memset(&w, 0, sizeof w);
    w.agg = &agg;
    w.net = net;
    rc = wf_work_init(&w.rw, ctx, &agg, err);
    if (rc != WF_OK)
        return rc;
    w.inst = wf_work_find_instance(&w.rw, instance_id);
    rc = nw_load(&w, err);
    if (rc != WF_OK)
        return rc;
    for (size_t i = 0; i < agg.n_subscriptions; i++) {
        const wf_subscription_row *s = &agg.subscriptions[i];
        if (!same(s->instance_id, instance_id))
            continue;
        const wf_transition *t = wf_runtime__transition_of(&w, s->transition_id);
        size_t ii = wf_runtime__find(&w, &w.items, sizeof(wf_work_item_row), s->work_item_id);
        out->awaiting[out->n_awaiting++] = (wf_net_awaiting){
            .sub = *s,
            .correlation = t != NULL && t->correlation == WF_CORRELATION_AGGREGATE
                               ? WF_CORRELATION_AGGREGATE
                               : WF_CORRELATION_INSTANCE,
            .times_out_at = ii != WF_WORK_NONE ? competing_due(&w, ITEM(&w, ii)) : 0,
        };
    }
    for (size_t i = 0; i < agg.n_work_items; i++) {
        const wf_work_item_row *it = &agg.work_items[i];
        if (!same(it->instance_id, instance_id) || it->trigger != WF_TRIGGER_USER ||
            it->state != WF_WORK_ITEM_ENABLED)
            continue;
        const wf_transition *t = wf_runtime__transition_of(&w, it->transition_id);
        wf_ref_counts c;
        count_item_tasks(&w.rw, it->id, &c);
        if (t == NULL || c.total < 2)
            continue;
        wf_join_mode mode = t->completion.mode == WF_JOIN_NONE ? WF_JOIN_ALL : t->completion.mode;
        int32_t required = mode == WF_JOIN_ANY ? 1
                           : mode == WF_JOIN_QUORUM
                               ? (t->completion.quorum < c.total ? t->completion.quorum : c.total)
                               : c.total;
        out->joins[out->n_joins++] = (wf_ref_join){
            .instance_id = in->id,
            .mode = mode,
            .quorum = mode == WF_JOIN_QUORUM ? t->completion.quorum : 0,
            .required = required,
            .done = c.done,
            .total = c.total,
        };
    }
    /* A step list: the steps whose work items are enabled, in list order. */
    out->current_steps = wf_arena_calloc(a, net->n_steps + 1, sizeof *out->current_steps);
    if (out->current_steps == NULL)
        return wf_error_nomem(err);
    for (size_t k = 0; k < net->n_steps; k++) {
        bool now = false;
        for (size_t i = 0; i < agg.n_work_items && !now; i++) {
            const wf_work_item_row *it = &agg.work_items[i];
            const wf_transition *t = wf_runtime__transition_of(&w, it->transition_id);
            now = same(it->instance_id, instance_id) && it->state == WF_WORK_ITEM_ENABLED &&
                  t != NULL && same(t->step_id, net->steps[k].id);
        }
        if (now)
            out->current_steps[out->n_current_steps++] = &net->steps[k];
    }
    return WF_OK;
}
