/*
 * net_runtime_view: GetInstance's view of a net instance: its marking,
 * jobs, timers, awaited signals with their competing timeouts, joins of
 * USER tasks and the current steps.
 *
 * Must not: include protobuf or grpc headers.
 */
#include "net_runtime_int.h"

#include <string.h>

#include "defcache.h"
#include "ids.h"
#include "wf_str.h"

/* ---- GetInstance ----------------------------------------------------------------------------- */

/* The progress of the enabled for-each work items of instance_id. */
static wf_code
foreach_view(net_work *w, const char *instance_id, wf_runtime_view *out, wf_error *err)
{
    const wf_aggregate *agg = w->agg;
    out->for_each = wf_arena_calloc(w->rw.arena, agg->n_work_items + 1, sizeof *out->for_each);
    if (out->for_each == NULL)
        return wf_error_nomem(err);
    for (size_t i = 0; i < agg->n_work_items; i++) {
        const wf_work_item_row *it = &agg->work_items[i];
        const wf_transition *t = wf_runtime__transition_of(w, it->transition_id);
        wf_runtime_foreach f = {.transition_id = it->transition_id, .work_item_id = it->id};
        if (!wf_str_eq(it->instance_id, instance_id) || it->state != WF_WORK_ITEM_ENABLED ||
            !wf_runtime__is_foreach(t) ||
            wf_runtime__foreach_progress(it, &f.total, &f.completed) != WF_OK)
            continue;
        const wf_completion *c = &t->for_each_completion;
        f.mode = c->mode == WF_JOIN_NONE ? WF_JOIN_ALL : c->mode;
        f.quorum = f.mode == WF_JOIN_QUORUM ? c->quorum : 0;
        f.required = f.mode == WF_JOIN_ANY      ? 1
                     : f.mode == WF_JOIN_QUORUM ? (c->quorum < f.total ? c->quorum : f.total)
                                                : f.total;
        f.sequential = t->for_each_sequential;
        out->for_each[out->n_for_each++] = f;
    }
    return WF_OK;
}

wf_code
wf_runtime_instance_view(const wf_ref_ctx *ctx, const char *instance_id, wf_runtime_view *out,
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
        if (wf_str_eq(agg.instances[i].id, instance_id))
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
            count += wf_str_eq(agg.tokens[i].instance_id, instance_id) &&
                     wf_str_eq(agg.tokens[i].place_id, net->places[p].id);
        if (count > 0)
            out->marking[out->n_marking++] = (wf_runtime_marking){net->places[p].id, count};
    }
    for (size_t i = 0; i < agg.n_jobs; i++)
        if (wf_str_eq(agg.jobs[i].instance_id, instance_id) && agg.jobs[i].state != WF_JOB_FAILED)
            out->jobs[out->n_jobs++] = agg.jobs[i];
    for (size_t i = 0; i < agg.n_timers; i++)
        if (wf_str_eq(agg.timers[i].instance_id, instance_id))
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
    rc = wf_runtime__load(&w, err);
    if (rc != WF_OK)
        return rc;
    for (size_t i = 0; i < agg.n_subscriptions; i++) {
        const wf_subscription_row *s = &agg.subscriptions[i];
        if (!wf_str_eq(s->instance_id, instance_id))
            continue;
        const wf_transition *t = wf_runtime__transition_of(&w, s->transition_id);
        size_t ii = wf_runtime__find(&w, &w.items, sizeof(wf_work_item_row), s->work_item_id);
        out->awaiting[out->n_awaiting++] = (wf_runtime_awaiting){
            .sub = *s,
            .correlation = t != NULL && t->correlation == WF_CORRELATION_AGGREGATE
                               ? WF_CORRELATION_AGGREGATE
                               : WF_CORRELATION_INSTANCE,
            .times_out_at = ii != WF_WORK_NONE ? wf_runtime__competing_due(&w, ITEM(&w, ii)) : 0,
        };
    }
    for (size_t i = 0; i < agg.n_work_items; i++) {
        const wf_work_item_row *it = &agg.work_items[i];
        if (!wf_str_eq(it->instance_id, instance_id) || it->trigger != WF_TRIGGER_USER ||
            it->state != WF_WORK_ITEM_ENABLED)
            continue;
        const wf_transition *t = wf_runtime__transition_of(&w, it->transition_id);
        wf_ref_counts c;
        wf_runtime__count_tasks(&w.rw, it->id, &c);
        if (t == NULL || c.total < 2 || wf_runtime__is_foreach(t))
            continue; /* a for-each's items: its own progress (foreach_view) */
        wf_join_mode mode = t->completion.mode == WF_JOIN_NONE ? WF_JOIN_ALL : t->completion.mode;
        int32_t required = mode == WF_JOIN_ANY ? 1
                           : mode == WF_JOIN_QUORUM
                               ? (t->completion.quorum < c.total ? t->completion.quorum : c.total)
                               : c.total;
        out->joins[out->n_joins++] = (wf_ref_join){
            .instance_id = in->id,
            .transition_id = it->transition_id,
            .mode = mode,
            .quorum = mode == WF_JOIN_QUORUM ? t->completion.quorum : 0,
            .required = required,
            .done = c.done,
            .total = c.total,
        };
    }
    rc = foreach_view(&w, instance_id, out, err);
    if (rc != WF_OK)
        return rc;
    out->net = net;
    out->enabled = wf_arena_calloc(a, net->n_transitions + 1, sizeof *out->enabled);
    if (out->enabled == NULL)
        return wf_error_nomem(err);
    for (size_t k = 0; k < net->n_transitions; k++) {
        bool now = false;
        for (size_t i = 0; i < agg.n_work_items && !now; i++)
            now = wf_str_eq(agg.work_items[i].instance_id, instance_id) &&
                  agg.work_items[i].state == WF_WORK_ITEM_ENABLED &&
                  wf_str_eq(agg.work_items[i].transition_id, net->transitions[k].id);
        if (now)
            out->enabled[out->n_enabled++] = net->transitions[k].id;
    }
    rc = wf_runtime__call_view(&w, out, err);
    if (rc != WF_OK)
        return rc;
    /* A step list: the steps whose work items are enabled, in list order;
     * none once the instance has ended (a cancel leaves its items as they
     * were). */
    out->current_steps = wf_arena_calloc(a, net->n_steps + 1, sizeof *out->current_steps);
    if (out->current_steps == NULL)
        return wf_error_nomem(err);
    for (size_t k = 0; k < net->n_steps && !wf_instance_ended(in->status); k++) {
        bool now = false;
        for (size_t i = 0; i < agg.n_work_items && !now; i++) {
            const wf_work_item_row *it = &agg.work_items[i];
            const wf_transition *t = wf_runtime__transition_of(&w, it->transition_id);
            now = wf_str_eq(it->instance_id, instance_id) && it->state == WF_WORK_ITEM_ENABLED &&
                  t != NULL && wf_str_eq(t->step_id, net->steps[k].id);
        }
        if (now)
            out->current_steps[out->n_current_steps++] = &net->steps[k];
    }
    return WF_OK;
}
