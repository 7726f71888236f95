/*
 * work: the working set of one unit of work (work.h), shared by the
 * referral rules and the net runtime.
 *
 * Owns nothing beyond the call: every array lives in the call's arena.
 */
#include "work.h"

#include <jansson.h>
#include <string.h>

#include "vars.h"
#include "wf_time.h"

wf_store_ctx
wf_work_store_ctx(const wf_ref_ctx *ctx)
{
    return (wf_store_ctx){ctx->tenant, ctx->deadline_ms, ctx->arena};
}

wf_code
wf_work_invalid(const wf_ref_ctx *ctx, const char *field, const char *msg, wf_error *err)
{
    if (ctx->violation != NULL)
        ctx->violation(ctx->violation_arg, field, NULL, msg);
    return wf_error_set(err, WF_E_INVALID_ARGUMENT, "%s %s", field, msg);
}

wf_code
wf_work_violation(const wf_ref_ctx *ctx, wf_code code, const char *field, const char *msg,
                  wf_error *err)
{
    if (ctx->violation != NULL)
        ctx->violation(ctx->violation_arg, field, wf_code_reason(code), msg);
    return wf_error_set(err, code, "%s %s", field, msg);
}

char *
wf_work_strdup(wf_work *w, const char *s)
{
    return s == NULL ? NULL : wf_arena_strdup(w->arena, s);
}

/* Grows an arena array of rows (size elem) plus its dirty flags to hold
 * need entries. */
static bool
grow(wf_arena *a, void **rows, bool **dirty, size_t *cap, size_t n, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t cap2 = *cap ? *cap * 2 : 8;
    while (cap2 < need)
        cap2 *= 2;
    void *r = wf_arena_calloc(a, cap2, elem);
    bool *d = dirty != NULL ? wf_arena_calloc(a, cap2, sizeof *d) : NULL;
    if (r == NULL || (dirty != NULL && d == NULL))
        return false;
    if (n > 0) {
        memcpy(r, *rows, n * elem);
        if (dirty != NULL)
            memcpy(d, *dirty, n * sizeof *d);
    }
    *rows = r;
    if (dirty != NULL)
        *dirty = d;
    *cap = cap2;
    return true;
}

wf_code
wf_work_init(wf_work *w, const wf_ref_ctx *ctx, const wf_aggregate *agg, wf_error *err)
{
    memset(w, 0, sizeof *w);
    w->ctx = ctx;
    w->arena = ctx->arena;
    w->now = wf_now_us();
    size_t ni = agg != NULL ? agg->n_instances : 0, nt = agg != NULL ? agg->n_tasks : 0;
    if (!grow(w->arena, (void **)&w->insts, &w->inst_dirty, &w->cap_insts, 0, ni + 4,
              sizeof *w->insts) ||
        !grow(w->arena, (void **)&w->tasks, &w->task_dirty, &w->cap_tasks, 0, nt + 8,
              sizeof *w->tasks))
        return wf_error_nomem(err);
    if (ni > 0)
        memcpy(w->insts, agg->instances, ni * sizeof *w->insts);
    if (nt > 0)
        memcpy(w->tasks, agg->tasks, nt * sizeof *w->tasks);
    w->n_insts = ni;
    w->n_tasks = nt;
    w->vars_loaded = wf_work_variables_bytes(w);
    return WF_OK;
}

size_t
wf_work_variables_bytes(const wf_work *w)
{
    size_t n = 0;
    for (size_t i = 0; i < w->n_insts; i++)
        if (w->insts[i].variables_json != NULL)
            n += strlen(w->insts[i].variables_json);
    return n;
}

wf_code
wf_work_check_variables(const wf_work *w, wf_error *err)
{
    size_t max = w->ctx->max_variables_bytes;
    if (max == 0 || w->n_insts == 0)
        return WF_OK;
    size_t now = wf_work_variables_bytes(w);
    if (now <= max || now <= w->vars_loaded)
        return WF_OK;
    /* The root comes first in the working set (wf_aggregate's order), or
     * is the first instance a new tree appended. */
    const wf_instance_row *root = &w->insts[0];
    return wf_error_set(err, WF_E_VARIABLES_TOO_LARGE,
                        "the variables of the tree of instance \"%s\" would take %zu bytes, "
                        "more than %zu",
                        root->root_id != NULL ? root->root_id : root->id, now, max);
}

size_t
wf_work_find_instance(const wf_work *w, const char *id)
{
    for (size_t i = 0; id != NULL && i < w->n_insts; i++)
        if (strcmp(w->insts[i].id, id) == 0)
            return i;
    return WF_WORK_NONE;
}

size_t
wf_work_find_task(const wf_work *w, const char *id)
{
    for (size_t i = 0; id != NULL && i < w->n_tasks; i++)
        if (strcmp(w->tasks[i].id, id) == 0)
            return i;
    return WF_WORK_NONE;
}

wf_code
wf_work_add_instance(wf_work *w, const wf_instance_row *row, size_t *index, wf_error *err)
{
    if (!grow(w->arena, (void **)&w->insts, &w->inst_dirty, &w->cap_insts, w->n_insts,
              w->n_insts + 1, sizeof *w->insts))
        return wf_error_nomem(err);
    w->insts[w->n_insts] = *row;
    w->insts[w->n_insts].version = 0; /* new: the row must not exist yet */
    w->inst_dirty[w->n_insts] = true;
    *index = w->n_insts++;
    return WF_OK;
}

wf_code
wf_work_add_task(wf_work *w, const wf_task_row *row, size_t *index, wf_error *err)
{
    if (!grow(w->arena, (void **)&w->tasks, &w->task_dirty, &w->cap_tasks, w->n_tasks,
              w->n_tasks + 1, sizeof *w->tasks))
        return wf_error_nomem(err);
    w->tasks[w->n_tasks] = *row;
    w->task_dirty[w->n_tasks] = true;
    *index = w->n_tasks++;
    return WF_OK;
}

void
wf_work_touch_instance(wf_work *w, size_t i)
{
    w->insts[i].updated_at = w->now;
    w->inst_dirty[i] = true;
}

void
wf_work_touch_task(wf_work *w, size_t i)
{
    w->task_dirty[i] = true;
}

wf_code
wf_work_event(wf_work *w, size_t inst, const char *type, json_t *data, wf_error *err)
{
    if (data == NULL)
        return wf_error_nomem(err);
    char *text = wf_vars_dump(w->arena, data);
    json_decref(data);
    if (text == NULL || !grow(w->arena, (void **)&w->events, NULL, &w->cap_events, w->n_events,
                              w->n_events + 1, sizeof *w->events))
        return wf_error_nomem(err);
    const wf_instance_row *in = &w->insts[inst];
    w->events[w->n_events++] = (wf_event_row){
        .root_id = in->root_id,
        .instance_id = in->id,
        .type = (char *)type,
        .actor = (char *)w->ctx->actor,
        .data_json = text,
        .time = w->now,
    };
    return WF_OK;
}

wf_code
wf_work_del(wf_work *w, const char ***list, size_t *n, const char *id, wf_error *err)
{
    const char **v = wf_arena_alloc(w->arena, (*n + 1) * sizeof *v);
    if (v == NULL)
        return wf_error_nomem(err);
    if (*n > 0)
        memcpy(v, *list, *n * sizeof *v);
    v[(*n)++] = id;
    *list = v;
    return WF_OK;
}

void
wf_work_changes(const wf_work *w, wf_store_changes *out)
{
    memset(out, 0, sizeof *out);
    /* Compact the dirty rows in place of fresh arrays; on failure to
     * allocate the caller sees zero rows, so allocate generously up front. */
    wf_instance_row *insts = wf_arena_calloc(w->arena, w->n_insts + 1, sizeof *insts);
    wf_task_row *tasks = wf_arena_calloc(w->arena, w->n_tasks + 1, sizeof *tasks);
    size_t ni = 0, nt = 0;
    for (size_t i = 0; insts != NULL && i < w->n_insts; i++)
        if (w->inst_dirty[i]) {
            insts[ni] = w->insts[i];
            /* An incident is open exactly while its instance is FAILED:
             * whatever moves the instance out of FAILED (RetryInstance,
             * CancelInstance, compensation) resolves it. */
            if (insts[ni].status != WF_INSTANCE_FAILED) {
                insts[ni].incident_code = NULL;
                insts[ni].incident_at = 0;
            }
            ni++;
        }
    for (size_t i = 0; tasks != NULL && i < w->n_tasks; i++)
        if (w->task_dirty[i])
            tasks[nt++] = w->tasks[i];
    out->instances = insts;
    out->n_instances = ni;
    out->tasks = tasks;
    out->n_tasks = nt;
    out->events = w->events;
    out->n_events = w->n_events;
    out->del_jobs = w->del_jobs;
    out->n_del_jobs = w->n_del_jobs;
    out->del_timers = w->del_timers;
    out->n_del_timers = w->n_del_timers;
    out->del_subscriptions = w->del_subs;
    out->n_del_subscriptions = w->n_del_subs;
}

bool
wf_work_in_subtree(const wf_work *w, size_t i, size_t a)
{
    /* Walk up through the parents; the hop bound guards against a cycle
     * in corrupted data. */
    for (size_t hops = 0; i != WF_WORK_NONE && hops <= w->n_insts; hops++) {
        if (i == a)
            return true;
        i = wf_work_find_instance(w, w->insts[i].parent_id);
    }
    return false;
}

wf_code
wf_work_check_not_suspended(const wf_work *w, size_t i, wf_error *err)
{
    if (i == WF_WORK_NONE)
        return WF_OK;
    size_t r = wf_work_find_instance(w, w->insts[i].root_id);
    if (r == WF_WORK_NONE || w->insts[r].status != WF_INSTANCE_SUSPENDED)
        return WF_OK;
    return wf_error_set(err, WF_E_INSTANCE_SUSPENDED,
                        "instance \"%s\" is suspended: resume it before working on its tasks",
                        w->insts[r].id);
}
