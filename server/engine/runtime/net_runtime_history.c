/*
 * net_runtime_history: ListWorkItems, the work-item history of a net
 * instance (Radicore's WORKITEM table).
 *
 * The net runtime keeps every work item it ends (net_runtime_work.c,
 * wf_runtime__end_item): FINISHED when it fired, WITHDRAWN when a competing
 * firing, a saga or the end of the case took its tokens; FIRED items
 * (completed compensable steps, live for the saga) read as FINISHED. Rows
 * are never deleted while the instance row exists, so the history lives
 * as long as the instance. A plain CancelInstance, or an END reached with
 * items still enabled, leaves those rows ENABLED: they read as CANCELLED
 * at the instance's ended_at, since an ended instance never fires again.
 * The store filters by its own states, mapped from the requested ones
 * and the instance's status, so paging stays keyset pagination.
 */
#include "net_runtime_int.h"

#include <string.h>

#include "defcache.h"
#include "ids.h"
#include "wf_id.h"
#include "wf_time.h"

#define PAGE_MAX 500

#define BIT(s) (1u << (unsigned)(s))

/* The store states (bits) that read as state st. */
static unsigned
store_states(wf_runtime_item_state st, bool inst_ended)
{
    switch (st) {
    case WF_RUNTIME_ITEM_ENABLED:
        return inst_ended ? 0 : BIT(WF_WORK_ITEM_ENABLED);
    case WF_RUNTIME_ITEM_FINISHED:
        return BIT(WF_WORK_ITEM_FIRED) | BIT(WF_WORK_ITEM_FINISHED);
    case WF_RUNTIME_ITEM_CANCELLED:
        return BIT(WF_WORK_ITEM_WITHDRAWN) | (inst_ended ? BIT(WF_WORK_ITEM_ENABLED) : 0);
    }
    return 0;
}

wf_code
wf_runtime_list_work_items(const wf_ref_ctx *ctx, const wf_runtime_list_items_in *q,
                           wf_runtime_item **items, size_t *n, char **next_cursor, wf_error *err)
{
    if (q->instance_id == NULL || q->instance_id[0] == '\0')
        return wf_work_invalid(ctx, "instance_id", "is required", err);
    for (size_t i = 0; i < q->n_states; i++)
        if (q->states[i] < WF_RUNTIME_ITEM_ENABLED || q->states[i] > WF_RUNTIME_ITEM_CANCELLED)
            return wf_work_invalid(ctx, "states", "holds an unknown work item state", err);
    if (q->page_size < 0)
        return wf_work_invalid(ctx, "page_size", "must not be negative", err);
    wf_code rc = wf_ids_check(ctx, WF_ID_INSTANCE, "instance_id", q->instance_id, err);
    if (rc != WF_OK)
        return rc;
    wf_store_ctx sc = wf_work_store_ctx(ctx);
    wf_instance_row in;
    rc = wf_store_get_instance(ctx->store, &sc, q->instance_id, &in, err);
    if (rc != WF_OK)
        return rc;
    bool over = wf_instance_ended(in.status);
    unsigned bits = 0;
    for (size_t i = 0; i < q->n_states; i++)
        bits |= store_states((wf_runtime_item_state)q->states[i], over);
    size_t size = q->page_size == 0         ? 50
                  : q->page_size > PAGE_MAX ? PAGE_MAX
                                            : (size_t)q->page_size;
    wf_work_item_row *rows = NULL;
    size_t k = 0;
    *next_cursor = NULL;
    if (q->n_states == 0 || bits != 0) {
        rc = wf_store_list_work_items(ctx->store, &sc, q->instance_id, bits, size, q->cursor, &rows,
                                      &k, next_cursor, err);
        if (rc == WF_E_INVALID_ARGUMENT)
            return wf_work_invalid(ctx, "page_token", "is malformed", err);
        if (rc != WF_OK)
            return rc;
    }
    /* Transition names, from the instance's definition version. */
    const wf_net *net = NULL;
    if (k > 0) {
        wf_definition_row def;
        rc = wf_store_get_definition(ctx->store, &sc, in.definition_key, in.definition_version,
                                     &def, err);
        if (rc == WF_OK)
            rc = wf_defcache_net(&def, ctx->arena, &net, err);
        if (rc != WF_OK)
            return rc;
    }
    wf_runtime_item *out = wf_arena_calloc(ctx->arena, k + 1, sizeof *out);
    if (out == NULL)
        return wf_error_nomem(err);
    for (size_t i = 0; i < k; i++) {
        wf_runtime_item *it = &out[i];
        it->row = rows[i];
        switch (rows[i].state) {
        case WF_WORK_ITEM_FIRED:
        case WF_WORK_ITEM_FINISHED:
            it->state = WF_RUNTIME_ITEM_FINISHED;
            it->finished_at = rows[i].finished_at;
            break;
        case WF_WORK_ITEM_WITHDRAWN:
            it->state = WF_RUNTIME_ITEM_CANCELLED;
            it->cancelled_at = rows[i].finished_at;
            break;
        case WF_WORK_ITEM_ENABLED:
            it->state = over ? WF_RUNTIME_ITEM_CANCELLED : WF_RUNTIME_ITEM_ENABLED;
            it->cancelled_at = over ? in.ended_at : 0;
            break;
        }
        int t = net != NULL ? wf_net_transition_index(net, rows[i].transition_id) : -1;
        it->transition_name = t >= 0 ? net->transitions[t].name : NULL;
    }
    *items = out;
    *n = k;
    return WF_OK;
}
