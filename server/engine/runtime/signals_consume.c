/*
 * signals_consume: a MSG work item consumes a buffered signal when it is
 * enabled and fires after the step that enabled it; a firing refused
 * there is an incident of the instance; RetryInstance looks at the buffer
 * again; an instance that ends discards its buffered signals
 * (net_runtime_int.h, "signal consumption").
 *
 * Must not: include protobuf or grpc headers.
 */

#include "net_runtime_int.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "vars.h"
#include "wf_str.h"

/* ---- the pending queue of MSG firings (net_runtime_int.h) ------------------------------------ */

typedef struct nw_sig_pending {
    struct nw_sig_pending *below;
    const char *item_id;
    wf_signal_row sig; /* as consumed */
} sig_pending;

void *
wf_runtime__pending_mark(const net_work *w)
{
    return w->sig_top;
}

json_t *
wf_runtime__consumed_data(const wf_signal_row *s, const char *transition_id, const char *item_id)
{
    return json_pack("{s:s,s:s,s:s*,s:s,s:s,s:b}", "signalName", s->name, "signalLogId", s->id,
                     "signalId", wf_str_empty(s->signal_id) ? NULL : s->signal_id, "transitionId",
                     transition_id != NULL ? transition_id : "", "workItemId", item_id, "buffered",
                     s->outcome == WF_SIGNAL_BUFFERED);
}

wf_code
wf_runtime__msg_enabled(net_work *w, const wf_work_item_row *it, const wf_transition *t,
                        wf_error *err)
{
    const wf_instance_row *in = &w->rw.insts[w->inst];
    bool by_agg = t->correlation == WF_CORRELATION_AGGREGATE;
    /* A suspended instance consumes nothing: the buffer is looked at again
     * at ResumeInstance (wf_runtime__consume_awaited). */
    if (in->status == WF_INSTANCE_SUSPENDED || wf_str_empty(t->signal_name) ||
        (by_agg && (wf_str_empty(in->aggregate_type) || in->aggregate_id == NULL)))
        return WF_OK;
    wf_signal_row sig;
    bool found = false;
    wf_code rc = WF_OK;
    /* Under the correlation lock, a SendSignal buffering for this aggregate
     * either committed first (its row is consumed here) or waits, then sees
     * this subscription and fires it (buffer_body in signals.c). */
    if (by_agg)
        rc = wf_tx_lock_correlation(w->tx, t->signal_name, in->aggregate_type, in->aggregate_id,
                                    NULL, err);
    if (rc == WF_OK)
        rc = wf_tx_consume_signal(
            w->tx, t->signal_name, by_agg ? NULL : in->id, by_agg ? in->aggregate_type : NULL,
            by_agg ? in->aggregate_id : NULL, in->id, t->id, w->rw.now, &sig, &found, err);
    if (rc != WF_OK || !found)
        return rc;
    sig_pending *p = wf_arena_calloc(w->rw.arena, 1, sizeof *p);
    if (p == NULL)
        return wf_error_nomem(err);
    p->item_id = it->id;
    p->sig = sig;
    p->below = w->sig_top;
    w->sig_top = p;
    return WF_OK;
}

wf_code
wf_runtime__fire_signal(net_work *w, const char *name, const char *item_id, const char *trans,
                        const char *payload, wf_error *err)
{
    net_work saved;
    wf_code rc = wf_runtime__save(w, &saved, err);
    if (rc == WF_OK)
        rc = wf_runtime__fire(w, item_id, payload, err);
    if (!wf_runtime__incident_code(rc))
        return rc;
    const char *code = wf_code_reason(rc);
    char msg[400];
    snprintf(msg, sizeof msg, "signal \"%s\" of transition \"%s\" could not fire: %s",
             name != NULL ? name : "", trans != NULL ? trans : "", err != NULL ? err->msg : "");
    wf_error_clear(err);
    wf_runtime__restore(w, &saved);
    for (size_t i = 0; i < w->subs.n; i++)
        if (wf_str_eq(SUB(w, i)->work_item_id, item_id))
            wf_runtime__gone(&w->subs, i);
    wf_instance_row *in = &w->rw.insts[w->inst];
    if (payload != NULL) {
        const char *vars;
        rc = wf_vars_merge(w->rw.arena, in->variables_json, payload, &vars, err);
        if (rc != WF_OK)
            return rc;
        in->variables_json = (char *)vars;
        wf_work_touch_instance(&w->rw, w->inst);
    }
    return wf_runtime__fail_instance(w, code, trans, -1, msg, err);
}

/* Puts a consumed signal back in the buffer (its work item was withdrawn
 * before it could fire). */
static wf_code
unconsume(net_work *w, const wf_signal_row *s, wf_error *err)
{
    wf_signal_row r = *s;
    r.buffered = true;
    r.consumed_at = 0;
    r.consumed_by_instance = NULL;
    r.transition_id = NULL;
    wf_store_changes c = {.signals = &r, .n_signals = 1};
    return wf_tx_apply(w->tx, &c, err);
}

wf_code
wf_runtime__fire_pending(net_work *w, void *mark, wf_code rc, wf_error *err)
{
    size_t n = 0;
    for (sig_pending *p = w->sig_top; p != NULL && p != mark; p = p->below)
        n++;
    if (n == 0) {
        w->sig_top = mark;
        return rc;
    }
    sig_pending **v = wf_arena_alloc(w->rw.arena, n * sizeof *v);
    size_t k = n;
    for (sig_pending *p = w->sig_top; p != NULL && p != mark; p = p->below)
        if (v != NULL)
            v[--k] = p;
    w->sig_top = mark;
    if (rc != WF_OK) {
        /* A refused step that an enclosing firing turns into an incident is
         * undone while the unit of work goes on: its signals go back. */
        for (size_t i = 0; wf_runtime__incident_code(rc) && v != NULL && i < n; i++) {
            wf_code u = unconsume(w, &v[i]->sig, err);
            if (u != WF_OK)
                return u;
        }
        return rc;
    }
    if (v == NULL)
        return wf_error_nomem(err);
    for (size_t i = 0; rc == WF_OK && i < n; i++) {
        const sig_pending *p = v[i];
        size_t ii = wf_runtime__find(w, &w->items, sizeof(wf_work_item_row), p->item_id);
        if (ii == WF_WORK_NONE || ITEM(w, ii)->state != WF_WORK_ITEM_ENABLED ||
            w->rw.insts[w->inst].status != WF_INSTANCE_RUNNING) {
            rc = unconsume(w, &p->sig, err);
            continue;
        }
        const char *trans = ITEM(w, ii)->transition_id;
        rc = wf_runtime__event(w, "SIGNAL_CONSUMED",
                               wf_runtime__consumed_data(&p->sig, trans, p->item_id), err);
        if (rc == WF_OK)
            rc = wf_runtime__fire_signal(
                w, p->sig.name, p->item_id, trans,
                wf_str_empty(p->sig.payload_json) ? NULL : p->sig.payload_json, err);
    }
    return rc;
}

wf_code
wf_runtime__consume_awaited(net_work *w, wf_error *err)
{
    const wf_instance_row *in = &w->rw.insts[w->inst];
    if (w->net == NULL || in->status != WF_INSTANCE_RUNNING)
        return WF_OK;
    void *mark = wf_runtime__pending_mark(w);
    wf_code rc = WF_OK;
    /* Items are loaded oldest first (enabled_at, id) and new ones are
     * appended, so the oldest wait takes the oldest signal, as SendSignal
     * picks it. */
    for (size_t i = 0; rc == WF_OK && i < w->items.n; i++) {
        const wf_work_item_row *it = ITEM(w, i);
        if ((w->items.flags[i] & NW_GONE) || it->state != WF_WORK_ITEM_ENABLED ||
            it->trigger != WF_TRIGGER_MSG || !wf_str_eq(it->instance_id, in->id) ||
            !wf_runtime__armed(w, it))
            continue;
        int t = wf_net_transition_index(w->net, it->transition_id);
        if (t >= 0)
            rc = wf_runtime__msg_enabled(w, it, &w->net->transitions[t], err);
    }
    return wf_runtime__fire_pending(w, mark, rc, err);
}

wf_code
wf_runtime__discard_buffered(net_work *w, wf_error *err)
{
    if (w->net == NULL)
        return WF_OK;
    const wf_instance_row *in = &w->rw.insts[w->inst];
    wf_code rc = WF_OK;
    for (size_t i = 0; rc == WF_OK && i < w->net->n_transitions; i++) {
        const wf_transition *t = &w->net->transitions[i];
        if (t->trigger != WF_TRIGGER_MSG || t->correlation == WF_CORRELATION_AGGREGATE ||
            wf_str_empty(t->signal_name))
            continue;
        bool seen = false; /* a name shared by several transitions: once */
        for (size_t j = 0; j < i; j++) {
            const wf_transition *o = &w->net->transitions[j];
            seen |= o->trigger == WF_TRIGGER_MSG && o->correlation != WF_CORRELATION_AGGREGATE &&
                    wf_str_eq(o->signal_name, t->signal_name);
        }
        for (bool found = !seen; rc == WF_OK && found;) {
            wf_signal_row s;
            found = false;
            rc = wf_tx_consume_signal(w->tx, t->signal_name, in->id, NULL, NULL, in->id, NULL,
                                      w->rw.now, &s, &found, err);
            if (rc != WF_OK || !found)
                break;
            s.buffered = false;
            s.discarded = true;
            s.consumed_at = 0;
            s.consumed_by_instance = NULL;
            s.transition_id = NULL;
            wf_store_changes c = {.signals = &s, .n_signals = 1};
            rc = wf_tx_apply(w->tx, &c, err);
        }
    }
    return rc;
}
