/*
 * net_runtime_timers: a due timer fires its TIME work item (one unit of
 * work each, or a batch of them per root), a refused firing becomes an
 * incident, and an await step's timeout starts compensating
 * (net_runtime_saga.c).
 *
 * Must not: include protobuf or grpc headers.
 */
#include "net_runtime_int.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "wf_time.h"

/* ---- timers --------------------------------------------------------------------------------- */

typedef struct timer_op {
    const wf_ref_ctx *ctx;
    const wf_timer_row *row;
    bool fired;
    const char **wake;
    size_t n_wake;
} timer_op;

/* The signal name of step step_id of the net ("" when none). */
static const char *
awaited_signal(const net_work *w, const char *step_id)
{
    int k = wf_steps_index(w->net, step_id);
    return k >= 0 && w->net->steps[k].signal_name != NULL ? w->net->steps[k].signal_name : "";
}

static wf_code
timer_body(wf_tx *tx, void *arg, wf_error *err)
{
    timer_op *op = arg;
    const wf_timer_row *row = op->row;
    net_work w;
    op->fired = false;
    op->n_wake = 0;
    wf_code rc = wf_runtime__open(&w, op->ctx, tx, row->instance_id, row->root_id, err);
    if (rc == WF_E_INSTANCE_NOT_FOUND || rc == WF_E_DEFINITION_NOT_FOUND) {
        wf_error_clear(err);
        return WF_OK;
    }
    if (rc != WF_OK)
        return rc;
    size_t ti = wf_runtime__find(&w, &w.timers, sizeof(wf_timer_row), row->id);
    if (ti == WF_WORK_NONE)
        return WF_OK; /* withdrawn, or fired by another replica */
    wf_instance_status st = w.rw.insts[w.inst].status;
    if (st != WF_INSTANCE_RUNNING) {
        /* A FAILED instance keeps its timers for RetryInstance, a
         * SUSPENDED one for ResumeInstance (a claim that raced with the
         * suspension); an ended one has no use for them. */
        if (!wf_instance_ended(st))
            return WF_OK;
        wf_runtime__gone(&w.timers, ti);
        return wf_runtime__write(&w, err);
    }
    const char *item_id = TIMER(&w, ti)->work_item_id;
    const char *trans_id = TIMER(&w, ti)->transition_id;
    size_t ii = wf_runtime__find(&w, &w.items, sizeof(wf_work_item_row), item_id);
    wf_runtime__gone(&w.timers, ti);
    if (w.net == NULL || ii == WF_WORK_NONE || ITEM(&w, ii)->state != WF_WORK_ITEM_ENABLED)
        return wf_runtime__write(&w, err);
    json_t *data = json_pack("{s:s,s:s,s:s}", "timerId", row->id, "transitionId",
                             trans_id != NULL ? trans_id : "", "workItemId", item_id);
    rc = wf_runtime__event(&w, "TIMER_FIRED", data, err);
    if (rc == WF_OK)
        rc = wf_runtime__fire(&w, item_id, NULL, err);
    if (wf_runtime__incident_code(rc)) {
        /* The firing is refused: the timer is spent, the instance gets an
         * incident (RetryInstance retries the firing). */
        char msg[300];
        const wf_transition *tr = wf_runtime__transition_of(&w, trans_id);
        bool step_failed = tr != NULL && tr->fails;
        if (step_failed)
            snprintf(msg, sizeof msg, "step \"%s\" timed out waiting for signal \"%s\"",
                     tr->step_id, awaited_signal(&w, tr->step_id));
        else
            snprintf(msg, sizeof msg, "timer of transition \"%s\" could not fire: %s",
                     trans_id != NULL ? trans_id : "", err->msg);
        const char *code = step_failed ? "STEP_TIMED_OUT" : wf_code_reason(rc);
        wf_error_clear(err);
        rc = wf_runtime__reset(&w, err);
        if (rc == WF_OK) {
            ti = wf_runtime__find(&w, &w.timers, sizeof(wf_timer_row), row->id);
            if (ti != WF_WORK_NONE)
                wf_runtime__gone(&w.timers, ti);
            rc = wf_runtime__event(&w, "TIMER_FIRED",
                                   json_pack("{s:s,s:s,s:s}", "timerId", row->id, "transitionId",
                                             trans_id != NULL ? trans_id : "", "workItemId",
                                             item_id),
                                   err);
        }
        /* The timeout of an await step without on_timeout fails the step:
         * as a job out of attempts, the saga when there is one. */
        bool started = false;
        if (rc == WF_OK && step_failed)
            rc = wf_runtime__saga_begin(&w, msg, &started, err);
        if (rc == WF_OK && !started)
            rc = wf_runtime__fail_instance(&w, code, trans_id, -1, msg, err);
    }
    if (rc == WF_OK)
        rc = wf_runtime__write(&w, err);
    if (rc != WF_OK)
        return rc;
    op->fired = true;
    wf_runtime__keep_wake(&w, &op->wake, &op->n_wake);
    return WF_OK;
}

wf_code
wf_runtime_fire_timer(const wf_runtime_host *rt, const wf_timer_row *row, int64_t deadline_ms,
                      bool *fired, wf_error *err)
{
    if (rt == NULL || rt->store == NULL || row == NULL || row->id == NULL ||
        row->instance_id == NULL || row->tenant == NULL)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "timer row is incomplete");
    wf_arena *a = wf_arena_new();
    if (a == NULL)
        return wf_error_nomem(err);
    wf_ref_ctx ctx = {
        .store = rt->store, .tenant = row->tenant, .deadline_ms = deadline_ms, .arena = a};
    timer_op op = {&ctx, row, false, NULL, 0};
    wf_store_ctx sc = wf_work_store_ctx(&ctx);
    wf_code rc = wf_uow_run(rt->store, &sc, NULL, timer_body, &op, NULL, err);
    if (rc == WF_OK) {
        *fired = op.fired;
        if (op.fired && rt->wake != NULL) {
            wf_runtime_ctx nc = {.wake = rt->wake, .wake_arg = rt->wake_arg};
            wf_runtime__wake(&nc, op.wake, op.n_wake);
        }
    }
    wf_arena_free(a);
    return rc;
}

/* ---- timers in batches ------------------------------------------------------------------------
 */

/* Roots per batch transaction: few enough that a batch holds its root
 * locks briefly, enough that the commit is shared. */
#define FIRE_BATCH_ROOTS 50

typedef struct batch_entry {
    const wf_timer_row *row;
    size_t at;     /* index in the caller's arrays */
    bool excluded; /* fired on its own after the batch */
} batch_entry;

static int
cmp_batch_entry(const void *pa, const void *pb)
{
    const wf_timer_row *a = ((const batch_entry *)pa)->row, *b = ((const batch_entry *)pb)->row;
    int c = strcmp(a->tenant, b->tenant);
    if (c == 0)
        c = strcmp(a->root_id, b->root_id);
    if (c == 0)
        c = a->due_at < b->due_at ? -1 : a->due_at > b->due_at;
    if (c == 0)
        c = strcmp(a->id, b->id);
    if (c == 0)
        c = a < b ? -1 : a > b;
    return c;
}

/* Adds types[0..n) to the distinct wake types of a batch. */
static bool
batch_keep_wake(wf_arena *a, const char ***all, size_t *n_all, size_t *cap,
                const char *const *types, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        bool have = false;
        for (size_t j = 0; j < *n_all && !have; j++)
            have = strcmp((*all)[j], types[i]) == 0;
        if (have)
            continue;
        if (*n_all == *cap) {
            size_t c = *cap ? *cap * 2 : 8;
            const char **v = wf_arena_alloc(a, c * sizeof *v);
            if (v == NULL)
                return false;
            if (*n_all > 0)
                memcpy(v, *all, *n_all * sizeof *v);
            *all = v;
            *cap = c;
        }
        (*all)[(*n_all)++] = types[i];
    }
    return true;
}

/*
 * One transaction over the roots of e[0..n) (one tenant, sorted by root),
 * skipping the excluded ones. When a root's firing fails (an error, or a
 * store call that poisoned the transaction), everything is rolled back,
 * that root is excluded (the caller fires its timers alone) and the rest
 * runs again. *done: the batch committed (fired[] and the wake-ups are
 * done); else the commit itself failed with the returned code.
 */
static wf_code
fire_batch_once(const wf_runtime_host *rt, batch_entry *e, size_t n, int64_t deadline_ms,
                bool *fired, wf_error *err)
{
    for (;;) {
        wf_arena *a = wf_arena_new();
        if (a == NULL)
            return wf_error_nomem(err);
        wf_ref_ctx ctx = {
            .store = rt->store, .tenant = e[0].row->tenant, .deadline_ms = deadline_ms, .arena = a};
        wf_store_ctx sc = wf_work_store_ctx(&ctx);
        bool *got = wf_arena_calloc(a, n, sizeof *got);
        const char **wake = NULL;
        size_t n_wake = 0, cap_wake = 0;
        wf_tx *tx = NULL;
        wf_code rc =
            got != NULL ? wf_store_begin_batch(rt->store, &sc, &tx, err) : wf_error_nomem(err);
        if (rc != WF_OK) {
            wf_arena_free(a);
            return rc;
        }
        size_t bad = n, live = 0;
        for (size_t i = 0; i < n && bad == n; i++) {
            if (e[i].excluded)
                continue;
            live++;
            timer_op op = {&ctx, e[i].row, false, NULL, 0};
            wf_error e2;
            wf_error_clear(&e2);
            wf_code brc = timer_body(tx, &op, &e2);
            if (brc != WF_OK || wf_tx_failed(tx) ||
                (op.fired && !batch_keep_wake(a, &wake, &n_wake, &cap_wake, op.wake, op.n_wake)))
                bad = i;
            else
                got[i] = op.fired;
        }
        if (bad < n) {
            wf_tx_rollback(tx);
            wf_arena_free(a);
            for (size_t i = 0; i < n; i++)
                if (strcmp(e[i].row->root_id, e[bad].row->root_id) == 0)
                    e[i].excluded = true;
            continue;
        }
        rc = live > 0 ? wf_tx_commit(tx, err) : (wf_tx_rollback(tx), WF_OK);
        if (rc == WF_OK) {
            for (size_t i = 0; i < n; i++)
                if (!e[i].excluded)
                    fired[e[i].at] = got[i];
            bool any = false;
            for (size_t i = 0; i < n; i++)
                any |= got[i];
            if (any && rt->wake != NULL) {
                wf_runtime_ctx nc = {.wake = rt->wake, .wake_arg = rt->wake_arg};
                wf_runtime__wake(&nc, wake, n_wake);
            }
        }
        wf_arena_free(a);
        return rc;
    }
}

void
wf_runtime_fire_timers(const wf_runtime_host *rt, const wf_timer_row *rows, size_t n,
                       int64_t deadline_ms, bool *fired, wf_code *codes, wf_error *errs)
{
    for (size_t i = 0; i < n; i++) {
        fired[i] = false;
        codes[i] = WF_OK;
        wf_error_clear(&errs[i]);
    }
    batch_entry *e = calloc(n + 1, sizeof *e);
    size_t k = 0;
    for (size_t i = 0; e != NULL && i < n; i++) {
        const wf_timer_row *r = &rows[i];
        if (rt == NULL || rt->store == NULL || r->id == NULL || r->instance_id == NULL ||
            r->tenant == NULL || r->root_id == NULL)
            codes[i] = wf_error_set(&errs[i], WF_E_INVALID_ARGUMENT, "timer row is incomplete");
        else
            e[k++] = (batch_entry){r, i, false};
    }
    if (e == NULL) {
        for (size_t i = 0; i < n; i++)
            codes[i] = wf_error_nomem(&errs[i]);
        return;
    }
    qsort(e, k, sizeof *e, cmp_batch_entry);
    /* Chunks of one tenant and at most FIRE_BATCH_ROOTS roots, in (tenant,
     * root id) order: every batch locks its roots in ascending order. */
    for (size_t lo = 0; lo < k;) {
        size_t hi = lo + 1, roots = 1;
        while (hi < k && strcmp(e[hi].row->tenant, e[lo].row->tenant) == 0) {
            if (strcmp(e[hi].row->root_id, e[hi - 1].row->root_id) != 0) {
                if (roots == FIRE_BATCH_ROOTS)
                    break;
                roots++;
            }
            hi++;
        }
        wf_error berr;
        wf_error_clear(&berr);
        wf_code rc = fire_batch_once(rt, &e[lo], hi - lo, deadline_ms, fired, &berr);
        for (size_t i = lo; i < hi; i++) {
            size_t at = e[i].at;
            if (rc != WF_OK && !e[i].excluded) {
                codes[at] = rc;
                errs[at] = berr;
            } else if (e[i].excluded) {
                /* Alone, with the runner's retries: its own outcome. */
                codes[at] = wf_runtime_fire_timer(rt, e[i].row, deadline_ms, &fired[at], &errs[at]);
            }
        }
        lo = hi;
    }
    free(e);
}
