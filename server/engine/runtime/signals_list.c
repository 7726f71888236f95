/*
 * signals_list: ListSignals (the delivery log of an instance or an
 * aggregate) and the buffered signals GetInstance shows (signals.h).
 *
 * Must not: include protobuf or grpc headers.
 */

#include "net_runtime_int.h"

#include <string.h>

#include "wf_time.h"
#include "wf_str.h"

#define MAX_AGG 128

wf_code
wf_runtime_list_signals(const wf_runtime_ctx *ctx, const wf_runtime_list_signals_in *q,
                        wf_signal_row **rows, size_t *n, char **next_cursor, wf_error *err)
{
    const wf_ref_ctx *r = &ctx->ref;
    if (q->has_aggregate) {
        if (!wf_runtime__printable(q->aggregate_type, MAX_AGG))
            return wf_work_violation(r, WF_E_INVALID_ARGUMENT, "aggregate.type",
                                     "must be 1 to 128 printable bytes", err);
        if (!wf_runtime__printable(q->aggregate_id, MAX_AGG))
            return wf_work_violation(r, WF_E_INVALID_ARGUMENT, "aggregate.id",
                                     "must be 1 to 128 printable bytes", err);
    } else if (wf_str_empty(q->instance_id)) {
        return wf_work_violation(r, WF_E_INVALID_ARGUMENT, "target",
                                 "instance_id or aggregate is required", err);
    }
    if (q->page_size < 0)
        return wf_work_violation(r, WF_E_INVALID_ARGUMENT, "page_size", "must not be negative",
                                 err);
    size_t size = q->page_size == 0 ? 50 : q->page_size > 500 ? 500 : (size_t)q->page_size;
    wf_signal_filter f = {
        .instance_id = q->has_aggregate ? NULL : q->instance_id,
        .aggregate_type = q->has_aggregate ? q->aggregate_type : NULL,
        .aggregate_id = q->has_aggregate ? q->aggregate_id : NULL,
    };
    wf_store_ctx sc = wf_work_store_ctx(r);
    wf_signal_row *got = NULL;
    size_t ng = 0;
    wf_code rc =
        wf_store_list_signals(r->store, &sc, &f, size, q->cursor, &got, &ng, next_cursor, err);
    if (rc == WF_E_INVALID_ARGUMENT && r->violation != NULL)
        r->violation(r->violation_arg, "page_token", NULL, "is malformed");
    if (rc != WF_OK)
        return rc;
    size_t k = 0;
    for (size_t i = 0; i < ng; i++)
        if (wf_str_empty(q->name) || wf_str_eq(got[i].name, q->name))
            got[k++] = got[i];
    *rows = got;
    *n = k;
    return WF_OK;
}

static wf_code
append_buffered(const wf_ref_ctx *ctx, const wf_signal_filter *f, const char *instance_id,
                int64_t now, wf_signal_row **acc, size_t *n_acc, wf_error *err)
{
    wf_store_ctx sc = wf_work_store_ctx(ctx);
    const char *cursor = NULL;
    do {
        wf_signal_row *rows = NULL;
        size_t n = 0;
        char *next = NULL;
        wf_code rc = wf_store_list_signals(ctx->store, &sc, f, 500, cursor, &rows, &n, &next, err);
        if (rc != WF_OK)
            return rc;
        wf_signal_row *v = wf_arena_alloc(ctx->arena, (*n_acc + n + 1) * sizeof *v);
        if (v == NULL)
            return wf_error_nomem(err);
        if (*n_acc > 0)
            memcpy(v, *acc, *n_acc * sizeof *v);
        for (size_t i = 0; i < n; i++) {
            const wf_signal_row *s = &rows[i];
            if (!s->buffered || s->discarded || s->expires_at <= now)
                continue;
            if (instance_id != NULL && !wf_str_eq(s->instance_id, instance_id))
                continue; /* consumed by it, not addressed to it */
            v[(*n_acc)++] = *s;
        }
        *acc = v;
        cursor = next;
    } while (cursor != NULL);
    return WF_OK;
}

wf_code
wf_runtime_buffered_signals(const wf_ref_ctx *ctx, const wf_instance_row *in, wf_signal_row **rows,
                            size_t *n, wf_error *err)
{
    *rows = NULL;
    *n = 0;
    if (wf_instance_ended(in->status))
        return WF_OK;
    int64_t now = wf_now_us();
    wf_signal_filter f = {.instance_id = in->id, .buffered_only = true};
    wf_code rc = append_buffered(ctx, &f, in->id, now, rows, n, err);
    if (rc == WF_OK && !wf_str_empty(in->aggregate_type) && in->aggregate_id != NULL) {
        wf_signal_filter g = {.aggregate_type = in->aggregate_type,
                              .aggregate_id = in->aggregate_id,
                              .buffered_only = true};
        rc = append_buffered(ctx, &g, NULL, now, rows, n, err);
    }
    return rc;
}

bool
wf_runtime_signal_fanned_out(const wf_signal_row *r)
{
    return r->instance_id == NULL && r->aggregate_type != NULL &&
           (r->outcome == WF_SIGNAL_CORRELATED || r->outcome == WF_SIGNAL_QUEUED);
}

wf_code
wf_runtime_signal_deliveries(const wf_ref_ctx *ctx, const char *log_id, wf_delivery_counts *out,
                             wf_error *err)
{
    wf_store_ctx sc = wf_work_store_ctx(ctx);
    return wf_store_count_deliveries(ctx->store, &sc, log_id, out, err);
}
