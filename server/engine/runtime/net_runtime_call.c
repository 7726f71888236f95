/*
 * net_runtime_call: CALL transitions (call activities). A CALL work item
 * starts an instance of another definition as a child in the caller's
 * tree (net_runtime_int.h, "calls"), so that the child's end and the
 * caller's step commit in one unit of work on one root
 * (docs/behaviour.md, "Call activities"):
 *
 *   enabled        the input mapping over the caller's variables, then,
 *                  once the caller is written, the child started with it
 *   child ended    COMPLETED: the output mapping over the child's
 *                  variables merged into the caller's, the item fires;
 *                  CANCELLED or COMPENSATED: the caller's incident
 *                  CALL_CHILD_CANCELLED / CALL_CHILD_COMPENSATED
 *   child FAILED   the caller's incident CALL_CHILD_FAILED; the child's
 *                  RetryInstance resolves both
 *
 * The caller's events tell the call's course: CALL_STARTED once its child
 * is about to start, CALL_COMPLETED when the child's return fires the
 * item, CALL_FAILED with every CALL_* incident of the caller.
 *
 * Must not: include protobuf or grpc headers.
 */
#include "net_runtime_int.h"

#include <jansson.h>
#include <openssl/sha.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "defcache.h"
#include "expr.h"
#include "vars.h"
#include "wf_id.h"
#include "wf_str.h"

typedef struct nw_call {
    const char *item_id;
    const char *transition_id;
    const char *child_id; /* the item id, or for a for-each item its own */
    long index;           /* the for-each item, -1 when none */
    const char *input;
    struct nw_call *next;
} nw_call;

static atomic_int call_max_depth = WF_RUNTIME_CALL_MAX_DEPTH_DEFAULT;

void
wf_runtime_set_call_max_depth(int depth)
{
    if (depth >= 1)
        atomic_store(&call_max_depth, depth);
}

int
wf_runtime_call_max_depth(void)
{
    return atomic_load(&call_max_depth);
}

/* ---- mappings -------------------------------------------------------------------- */

/* src (jq over vars) must yield a JSON object: its text in *out. "" = {}. */
static wf_code
call_map(wf_arena *a, const char *src, const char *vars, const char *field, const char *trans,
         const char **out, wf_error *err)
{
    *out = "{}";
    if (wf_str_empty(src))
        return WF_OK;
    char *wrapped = wf_arena_printf(a,
                                    "[(%s)][0] | if type == \"object\" then tojson else "
                                    "error(\"must yield a JSON object, got \" + type) end",
                                    src);
    if (wrapped == NULL)
        return wf_error_nomem(err);
    wf_expr *e;
    char **strs = NULL;
    size_t n = 0;
    wf_code rc = wf_expr_cached(wrapped, &e, err);
    if (rc == WF_OK) {
        rc = wf_expr_eval_strings(e, vars, a, &strs, &n, err);
        wf_expr_free(e);
    }
    if (rc == WF_OK && n != 1)
        rc = wf_error_set(err, WF_E_INVALID_ARGUMENT, "must yield one JSON object");
    if (rc != WF_OK) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        return wf_error_set(err, rc, "%s of transition \"%s\": %s", field, trans, why);
    }
    *out = strs[0];
    return WF_OK;
}

/* The id of the child of for-each item index of CALL work item item_id:
 * the work item's time (the first 48 bits of its UUIDv7) and 74 bits of
 * SHA-256 over "<item_id>:each:<index>", as a UUIDv7. The same on every
 * replica and every retry, one per item. */
static char *
call_child_id(wf_arena *a, const char *item_id, long index)
{
    char name[96];
    int n = snprintf(name, sizeof name, "%s:each:%ld", item_id, index);
    unsigned char h[SHA256_DIGEST_LENGTH], b[16];
    SHA256((const unsigned char *)name, (size_t)n, h);
    for (int i = 0; i < 6; i++)
        if (sscanf(item_id + 2 * i + (i >= 4), "%2hhx", &b[i]) != 1)
            return NULL;
    memcpy(b + 6, h, 10);
    b[6] = (unsigned char)(0x70 | (b[6] & 0x0f));
    b[8] = (unsigned char)(0x80 | (b[8] & 0x3f));
    return wf_arena_printf(
        a, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
        b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

wf_code
wf_runtime__call_queue(net_work *w, const char *item_id, const wf_transition *t, const char *vars,
                       long index, const char *item_patch, const char **child_id, wf_error *err)
{
    nw_call *c = wf_arena_calloc(w->rw.arena, 1, sizeof *c);
    if (c == NULL)
        return wf_error_nomem(err);
    c->item_id = item_id;
    c->transition_id = t->id;
    c->index = index;
    c->child_id = item_id;
    if (index >= 0 && (c->child_id = call_child_id(w->rw.arena, item_id, index)) == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "a for-each CALL work item id is no UUID");
    wf_code rc =
        call_map(w->rw.arena, t->call_input, vars, "call_input_expression", t->id, &c->input, err);
    if (rc == WF_OK && item_patch != NULL)
        rc = wf_vars_merge(w->rw.arena, c->input, item_patch, &c->input, err);
    if (rc != WF_OK)
        return rc;
    if (child_id != NULL)
        *child_id = c->child_id;
    nw_call **tail = &w->calls;
    while (*tail != NULL)
        tail = &(*tail)->next;
    *tail = c;
    return WF_OK;
}

wf_code
wf_runtime__call_enabled(net_work *w, const wf_work_item_row *it, const wf_transition *t,
                         const char *vars, wf_error *err)
{
    return wf_runtime__call_queue(w, it->id, t, vars, -1, NULL, NULL, err);
}

/* ---- the caller's side ----------------------------------------------------------- */

/* Levels of instance i below its root, through the parents in rw; -1
 * when a parent is not in rw (a child started in this unit of work holds
 * only itself). */
static int
call_depth_in(const wf_work *rw, size_t i)
{
    int depth = 0;
    for (size_t k = i; rw->insts[k].parent_id != NULL && depth <= 1000; depth++) {
        k = wf_work_find_instance(rw, rw->insts[k].parent_id);
        if (k == WF_WORK_NONE)
            return -1;
    }
    return depth;
}

/* Levels of w's instance below its root (the tree read again when w
 * holds only part of it). */
static wf_code
call_depth(net_work *w, int *depth, wf_error *err)
{
    *depth = call_depth_in(&w->rw, w->inst);
    if (*depth >= 0)
        return WF_OK;
    const wf_instance_row *in = &w->rw.insts[w->inst];
    net_work tree;
    wf_code rc = wf_runtime__open(&tree, w->rw.ctx, w->tx, in->id, in->root_id, err);
    if (rc == WF_OK)
        *depth = call_depth_in(&tree.rw, tree.inst);
    return rc;
}

/* A CALL_* event of w's instance (the caller) about its item item_id of
 * transition trans and child child_id ("" = none yet) of key at version. */
static json_t *
call_event_data(const char *item_id, long index, const char *trans, const char *child_id,
                const char *key, int32_t version, const char *reason)
{
    json_t *data = json_pack("{s:s,s:s,s:s,s:s,s:i}", "transitionId", trans, "workItemId", item_id,
                             "childInstanceId", child_id != NULL ? child_id : "", "definitionKey",
                             key != NULL ? key : "", "definitionVersion", (int)version);
    if (data != NULL && reason != NULL)
        json_object_set_new(data, "reason", json_string(reason));
    if (data != NULL && index >= 0)
        json_object_set_new(data, "index", json_integer(index));
    return data;
}

static wf_code
call_event(net_work *w, const char *type, const char *item_id, long index, const char *trans,
           const char *child_id, const char *key, int32_t version, const char *reason,
           wf_error *err)
{
    return wf_runtime__event(
        w, type, call_event_data(item_id, index, trans, child_id, key, version, reason), err);
}

/* The caller pw's incident code on its call item item_id (INSTANCE_FAILED
 * naming the item and child), with its CALL_FAILED event. */
static wf_code
call_fail(net_work *pw, const char *code, const char *item_id, long index, const char *trans,
          const char *child_id, const char *key, int32_t version, const char *msg, wf_error *err)
{
    json_t *data = json_pack("{s:s,s:s,s:s}", "workItemId", item_id, "reason", code,
                             "childInstanceId", child_id != NULL ? child_id : "");
    if (data != NULL && index >= 0)
        json_object_set_new(data, "index", json_integer(index));
    wf_code rc = wf_runtime__fail_instance_data(pw, code, trans, -1, msg, data, err);
    if (rc == WF_OK)
        rc =
            call_event(pw, "CALL_FAILED", item_id, index, trans, child_id, key, version, code, err);
    return rc;
}

/* Opens the caller's incident: w's net instance written, so a new working
 * set on it in the same transaction. A caller no longer RUNNING is left. */
static wf_code
call_incident(net_work *w, const nw_call *c, const wf_transition *t, const char *code,
              const char *msg, wf_error *err)
{
    const wf_instance_row *in = &w->rw.insts[w->inst];
    net_work pw;
    wf_code rc = wf_runtime__open(&pw, w->rw.ctx, w->tx, in->id, in->root_id, err);
    if (rc != WF_OK || pw.rw.insts[pw.inst].status != WF_INSTANCE_RUNNING)
        return rc;
    rc = call_fail(&pw, code, c->item_id, c->index, t->id, NULL, t->call_key, t->call_version, msg,
                   err);
    return rc == WF_OK ? wf_runtime__write(&pw, err) : rc;
}

/* CALL_STARTED on the caller (already written: the event alone),
 * before its child starts (a child that ends at once tells the caller
 * after it). */
static wf_code
call_started(net_work *w, const nw_call *c, const wf_transition *t, const wf_definition_row *def,
             wf_error *err)
{
    const wf_instance_row *in = &w->rw.insts[w->inst];
    json_t *data =
        call_event_data(c->item_id, c->index, t->id, c->child_id, t->call_key, def->version, NULL);
    char *text = data != NULL ? wf_vars_dump(w->rw.arena, data) : NULL;
    json_decref(data);
    if (text == NULL)
        return wf_error_nomem(err);
    wf_event_row ev = {.root_id = in->root_id,
                       .instance_id = in->id,
                       .type = "CALL_STARTED",
                       .actor = (char *)w->rw.ctx->actor,
                       .data_json = text,
                       .time = w->rw.now};
    wf_store_changes ch;
    memset(&ch, 0, sizeof ch);
    ch.events = &ev;
    ch.n_events = 1;
    return wf_tx_apply(w->tx, &ch, err);
}

/* The definition a call starts: key at version (0 = the newest active). */
static wf_code
call_definition(wf_tx *tx, const wf_transition *t, wf_definition_row *def, bool *found,
                wf_error *err)
{
    wf_code rc = wf_tx_get_definition(tx, t->call_key, t->call_version, def, found, err);
    if (rc != WF_OK || !*found)
        return rc;
    if (!WF_DEF_RUNS_NET(def->kind)) {
        *found = false;
        return WF_OK;
    }
    return wf_runtime__pick_version(tx, t->call_version, def, err);
}

/* An error of the child's start that is the caller's incident, not the
 * unit of work's. */
static bool
call_start_refused(wf_code rc)
{
    return wf_runtime__incident_code(rc) || rc == WF_E_DEFINITION_NOT_ACTIVE ||
           rc == WF_E_INVALID_ARGUMENT || rc == WF_E_TOO_LARGE || rc == WF_E_INVALID_JSON;
}

/* Starts the child of queued call c of w's net instance, already written:
 * the one start of a call child. A child that cannot start (its key
 * unknown, the depth bound, its first step refused) is an incident of the
 * caller (CALL_DEFINITION_NOT_FOUND, CALL_DEPTH_EXCEEDED,
 * CALL_START_FAILED), not an error of the unit of work. */
static wf_code
call_start(net_work *w, const nw_call *c, wf_error *err)
{
    const char *transition_id = c->transition_id;
    const wf_transition *t = wf_runtime__transition_of(w, transition_id);
    const wf_instance_row *in = &w->rw.insts[w->inst];
    char msg[512];
    if (t == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "transition \"%s\" is not in the net",
                            transition_id);
    int max = wf_runtime_call_max_depth(), depth = 0;
    wf_code rc = call_depth(w, &depth, err);
    if (rc != WF_OK)
        return rc;
    if (depth < 0 || depth + 1 > max) {
        snprintf(msg, sizeof msg,
                 "call of \"%s\" by transition \"%s\" would nest deeper than %d levels",
                 t->call_key, t->id, max);
        return call_incident(w, c, t, "CALL_DEPTH_EXCEEDED", msg, err);
    }
    wf_definition_row def;
    bool found = false;
    rc = call_definition(w->tx, t, &def, &found, err);
    if (rc == WF_OK && !found) {
        if (t->call_version > 0)
            snprintf(msg, sizeof msg,
                     "transition \"%s\" calls definition \"%s\" version %d, "
                     "which does not exist or runs no net",
                     t->id, t->call_key, (int)t->call_version);
        else
            snprintf(msg, sizeof msg,
                     "transition \"%s\" calls definition \"%s\", which does not exist or runs "
                     "no net",
                     t->id, t->call_key);
        return call_incident(w, c, t, "CALL_DEFINITION_NOT_FOUND", msg, err);
    }
    wf_instance_row child;
    wf_start_spec spec = {.definition_key = t->call_key, .instance_id = c->child_id};
    if (rc == WF_OK)
        rc = call_started(w, c, t, &def, err);
    if (rc == WF_OK)
        rc = wf_runtime__start_net(w->rw.ctx, w->tx, &def, &spec, in, c->input, &child, err);
    if (call_start_refused(rc)) {
        snprintf(msg, sizeof msg, "the call of \"%s\" by transition \"%s\" could not start: %s",
                 t->call_key, t->id, err->msg);
        return call_incident(w, c, t, "CALL_START_FAILED", msg, err);
    }
    return rc;
}

/* Deletes the rows of r whose instance is in the subtree of child c. */
static void
call_drop_rows(net_work *w, nw_rows *r, size_t elem, size_t inst_off, size_t c)
{
    for (size_t i = 0; i < r->n; i++) {
        const char *inst = *(char *const *)((const char *)r->rows + i * elem + inst_off);
        if (!(r->flags[i] & NW_GONE) &&
            wf_work_in_subtree(&w->rw, wf_work_find_instance(&w->rw, inst), c))
            wf_runtime__gone(r, i);
    }
}

static bool
call_live(wf_instance_status s)
{
    return s == WF_INSTANCE_RUNNING || s == WF_INSTANCE_FAILED || s == WF_INSTANCE_SUSPENDED ||
           s == WF_INSTANCE_COMPENSATING;
}

/* Cancels the subtree of instance c of w (live): its tasks CANCELLED, its
 * jobs, timers and waits deleted, its instances CANCELLED with reason. */
static wf_code
call_cancel_subtree(net_work *w, size_t c, const char *reason, wf_error *err)
{
    wf_code rc = WF_OK;
    for (size_t k = 0; rc == WF_OK && k < w->rw.n_tasks; k++)
        if (wf_runtime__task_pending(&w->rw.tasks[k]) &&
            wf_work_in_subtree(&w->rw, wf_work_find_instance(&w->rw, w->rw.tasks[k].instance_id),
                               c))
            rc = wf_referral_cancel_task(&w->rw, k, err);
    call_drop_rows(w, &w->jobs, sizeof(wf_job_row), offsetof(wf_job_row, instance_id), c);
    call_drop_rows(w, &w->timers, sizeof(wf_timer_row), offsetof(wf_timer_row, instance_id), c);
    call_drop_rows(w, &w->subs, sizeof(wf_subscription_row),
                   offsetof(wf_subscription_row, instance_id), c);
    for (size_t k = w->rw.n_insts; rc == WF_OK && k-- > 0;)
        if (call_live(w->rw.insts[k].status) && wf_work_in_subtree(&w->rw, k, c))
            rc = wf_referral_finish_instance(&w->rw, k, WF_INSTANCE_CANCELLED, reason, err);
    return rc;
}

wf_code
wf_runtime__call_cancel_child(net_work *w, const char *child_id, const char *reason, wf_error *err)
{
    size_t c = wf_work_find_instance(&w->rw, child_id);
    if (c == WF_WORK_NONE || !call_live(w->rw.insts[c].status))
        return WF_OK;
    return call_cancel_subtree(w, c, reason, err);
}

wf_code
wf_runtime__call_withdrawn(net_work *w, const char *item_id, wf_error *err)
{
    size_t ii = wf_runtime__find(w, &w->items, sizeof(wf_work_item_row), item_id);
    if (ii != WF_WORK_NONE && ITEM(w, ii)->foreach_json != NULL)
        return wf_runtime__foreach_cancel_children(w, ITEM(w, ii), "its call was withdrawn", err);
    return wf_runtime__call_cancel_child(w, item_id, "its call was withdrawn", err);
}

/* ---- CancelInstance of a call child --------------------------------------------- */

typedef struct {
    const wf_runtime_ctx *ctx;
    const char *instance_id;
    const char *root_id;
    const char *reason;
    wf_instance_row *out;
    bool fallback;
    const char **wake;
    size_t n_wake;
} call_cancel_op;

static size_t call_item(const net_work *pw, const char *child_id, long *index);

/* The caller of child has its CALL work item (ENABLED). */
static bool
call_has_caller(net_work *w, const wf_instance_row *child, wf_error *err)
{
    net_work pw;
    if (child->parent_id == NULL ||
        wf_runtime__open(&pw, w->rw.ctx, w->tx, child->parent_id, child->root_id, err) != WF_OK)
        return false;
    long index;
    return pw.net != NULL && call_item(&pw, child->id, &index) != WF_WORK_NONE;
}

static wf_code
call_cancel_body(wf_tx *tx, void *arg, wf_error *err)
{
    call_cancel_op *op = arg;
    net_work w;
    op->fallback = false;
    op->n_wake = 0;
    wf_code rc = wf_runtime__open(&w, &op->ctx->ref, tx, op->instance_id, op->root_id, err);
    if (rc != WF_OK)
        return rc;
    const wf_instance_row *in = &w.rw.insts[w.inst];
    if (w.net == NULL || !call_live(in->status) || !call_has_caller(&w, in, err)) {
        /* Not a live call child: the plain cancel (an error, so that
         * nothing is written or recorded under the request id). */
        op->fallback = true;
        return wf_error_set(err, WF_E_UNIMPLEMENTED, "not a call child");
    }
    rc = call_cancel_subtree(&w, w.inst, op->reason, err);
    if (rc == WF_OK)
        rc = wf_runtime__write(&w, err);
    if (rc == WF_OK) {
        *op->out = w.rw.insts[w.inst];
        wf_runtime__keep_wake(&w, &op->wake, &op->n_wake);
    }
    return rc;
}

wf_code
wf_runtime_cancel_call_child(const wf_runtime_ctx *ctx, const char *instance_id, const char *reason,
                             wf_uow_idem *idem, wf_instance_row *out, bool *done, wf_error *err)
{
    *done = false;
    if (instance_id == NULL || !wf_uuid_valid(instance_id) ||
        (reason != NULL && strlen(reason) > 1024))
        return WF_OK; /* the plain cancel reports it */
    /* A root is no call child: one read spares the others a locked unit. */
    wf_store_ctx sc = wf_work_store_ctx(&ctx->ref);
    wf_instance_row row;
    wf_error e;
    if (wf_store_get_instance(ctx->ref.store, &sc, instance_id, &row, &e) != WF_OK ||
        row.parent_id == NULL)
        return WF_OK;
    call_cancel_op op = {.ctx = ctx,
                         .instance_id = instance_id,
                         .root_id = row.root_id,
                         .reason = reason,
                         .out = out};
    wf_code rc = wf_uow_run(ctx->ref.store, &sc, idem, call_cancel_body, &op, out, err);
    if (rc != WF_OK && op.fallback) {
        wf_error_clear(err);
        return WF_OK;
    }
    if (rc == WF_OK && !wf_uow_idem_replayed(idem))
        wf_runtime__wake(ctx, op.wake, op.n_wake);
    *done = rc == WF_OK;
    return rc;
}

/* ---- GetInstance ---------------------------------------------------------------- */

/* The transition of child c of w's instance: its live CALL item's, else
 * the first CALL transition of c's key; NULL when none (not a call). */
static const char *
call_transition(const net_work *w, const wf_instance_row *c)
{
    size_t ii = wf_runtime__find(w, &w->items, sizeof(wf_work_item_row), c->id);
    if (ii != WF_WORK_NONE)
        return ITEM(w, ii)->trigger == WF_TRIGGER_CALL ? ITEM(w, ii)->transition_id : NULL;
    for (size_t k = 0; k < w->net->n_transitions; k++) {
        const wf_transition *t = &w->net->transitions[k];
        if (t->trigger == WF_TRIGGER_CALL && wf_str_eq(t->call_key, c->definition_key))
            return t->id;
    }
    return NULL;
}

wf_code
wf_runtime__call_view(const net_work *w, wf_runtime_view *out, wf_error *err)
{
    const wf_instance_row *in = &w->rw.insts[w->inst];
    out->calls = wf_arena_calloc(w->rw.arena, w->rw.n_insts + 1, sizeof *out->calls);
    if (out->calls == NULL)
        return wf_error_nomem(err);
    for (size_t k = 0; k < w->rw.n_insts; k++) {
        const wf_instance_row *c = &w->rw.insts[k];
        if (!wf_str_eq(c->parent_id, in->id))
            continue;
        const char *trans = call_transition(w, c);
        if (trans != NULL)
            out->calls[out->n_calls++] = (wf_runtime_call){c, trans};
    }
    return WF_OK;
}

/* ---- the child's side ------------------------------------------------------------ */

/* The status w's instance had when it was loaded (RUNNING when new). */
static wf_instance_status
status_before(const net_work *w)
{
    const wf_instance_row *in = &w->rw.insts[w->inst];
    for (size_t i = 0; w->agg != NULL && i < w->agg->n_instances; i++)
        if (wf_str_eq(w->agg->instances[i].id, in->id))
            return w->agg->instances[i].status;
    return WF_INSTANCE_RUNNING;
}

/* The caller's CALL work item of child in pw (ENABLED), or WF_WORK_NONE;
 * *index the for-each item the child runs (-1 when none). */
static size_t
call_item(const net_work *pw, const char *child_id, long *index)
{
    *index = -1;
    size_t ii = wf_runtime__find(pw, &pw->items, sizeof(wf_work_item_row), child_id);
    if (ii == WF_WORK_NONE)
        return wf_runtime__foreach_child(pw, child_id, index);
    if (ITEM(pw, ii)->trigger != WF_TRIGGER_CALL || ITEM(pw, ii)->state != WF_WORK_ITEM_ENABLED)
        return WF_WORK_NONE;
    return ii;
}

/* The child completed: its output mapped, the caller's item fires. A
 * firing the net refuses is the caller's incident. */
static wf_code
call_returned(net_work *pw, size_t ii, long index, const wf_instance_row *child, wf_error *err)
{
    const wf_work_item_row *it = ITEM(pw, ii);
    const char *item_id = it->id, *trans = it->transition_id;
    const wf_transition *t = wf_runtime__transition_of(pw, trans);
    const char *patch = NULL;
    wf_code rc = t == NULL ? wf_error_set(err, WF_E_INTERNAL, "transition \"%s\" is gone", trans)
                           : call_map(pw->rw.arena, t->call_output, child->variables_json,
                                      "call_output_expression", trans, &patch, err);
    net_work save;
    if (rc == WF_OK)
        rc = wf_runtime__save(pw, &save, err);
    if (rc == WF_OK)
        rc = call_event(pw, "CALL_COMPLETED", item_id, index, trans, child->id,
                        child->definition_key, child->definition_version, NULL, err);
    if (rc == WF_OK && index >= 0)
        rc = wf_runtime__foreach_call_done(pw, ii, t, index, child->id, patch, err);
    else if (rc == WF_OK)
        rc = wf_runtime__fire(pw, item_id, patch, err);
    if (!wf_runtime__incident_code(rc))
        return rc;
    char msg[sizeof err->msg + 160];
    snprintf(msg, sizeof msg, "the return of call \"%s\" to transition \"%s\" could not fire: %s",
             child->id, trans, err->msg);
    wf_runtime__restore(pw, &save);
    return call_fail(pw, "CALL_RETURN_FAILED", item_id, index, trans, child->id,
                     child->definition_key, child->definition_version, msg, err);
}

/* A child RUNNING again resolves the caller's CALL_CHILD_FAILED of its
 * transition (INCIDENT_RESOLVED); true when it did. */
static bool
call_resolved(net_work *pw, size_t ii, long index, const wf_instance_row *child, wf_code *rc,
              wf_error *err)
{
    wf_instance_row *in = &pw->rw.insts[pw->inst];
    const char *trans = ITEM(pw, ii)->transition_id;
    if (in->status != WF_INSTANCE_FAILED || !wf_str_eq(in->incident_code, "CALL_CHILD_FAILED") ||
        !wf_str_eq(in->incident_transition_id, trans))
        return false;
    in->status = WF_INSTANCE_RUNNING;
    in->last_error = NULL;
    in->incident_code = NULL;
    in->incident_at = 0;
    in->retries++;
    wf_work_touch_instance(&pw->rw, pw->inst);
    json_t *data = json_pack("{s:s,s:s,s:s,s:s}", "transitionId", trans, "workItemId",
                             ITEM(pw, ii)->id, "trigger", "CALL", "childInstanceId", child->id);
    if (data != NULL && index >= 0)
        json_object_set_new(data, "index", json_integer(index));
    *rc = wf_runtime__event(pw, "INCIDENT_RESOLVED", data, err);
    return true;
}

static wf_code call_child_state(net_work *pw, size_t ii, long index, const wf_instance_row *child,
                                wf_error *err);

/* The caller of a for-each CALL item is RUNNING again: the children of
 * its items that ended or failed while it was FAILED are applied now, in
 * item order, until the join fires or one opens an incident again. */
static wf_code
call_catch_up(net_work *pw, const char *item_id, wf_error *err)
{
    wf_code rc = WF_OK;
    for (int guard = 0; rc == WF_OK && guard < 100000; guard++) {
        size_t ii = wf_runtime__find(pw, &pw->items, sizeof(wf_work_item_row), item_id);
        const wf_instance_row *c = NULL;
        long i = ii != WF_WORK_NONE ? wf_runtime__foreach_settled_child(pw, ii, &c) : -1;
        if (i < 0 || pw->rw.insts[pw->inst].status != WF_INSTANCE_RUNNING)
            break;
        rc = c->status == WF_INSTANCE_COMPLETED ? call_returned(pw, ii, i, c, err)
                                                : call_child_state(pw, ii, i, c, err);
    }
    return rc;
}

/* The caller's incident of a child that FAILED, was cancelled or
 * compensated; or, for a child RUNNING again, its resolution, after which
 * the other items' children are caught up with. */
static wf_code
call_child_state(net_work *pw, size_t ii, long index, const wf_instance_row *child, wf_error *err)
{
    wf_instance_row *in = &pw->rw.insts[pw->inst];
    const char *trans = ITEM(pw, ii)->transition_id, *item_id = ITEM(pw, ii)->id;
    wf_code rc = WF_OK;
    if (child->status == WF_INSTANCE_SUSPENDED)
        return WF_OK; /* the tree is suspended as a whole */
    if (child->status == WF_INSTANCE_RUNNING || child->status == WF_INSTANCE_COMPENSATING) {
        if (!call_resolved(pw, ii, index, child, &rc, err) || rc != WF_OK || index < 0)
            return rc;
        return call_catch_up(pw, item_id, err);
    }
    if (in->status != WF_INSTANCE_RUNNING)
        return WF_OK;
    const char *code = child->status == WF_INSTANCE_FAILED      ? "CALL_CHILD_FAILED"
                       : child->status == WF_INSTANCE_CANCELLED ? "CALL_CHILD_CANCELLED"
                                                                : "CALL_CHILD_COMPENSATED";
    char msg[sizeof err->msg + 240], item[48] = "";
    if (index >= 0)
        snprintf(item, sizeof item, " for item %ld", index);
    snprintf(msg, sizeof msg, "call \"%s\" (definition \"%s\") of transition \"%s\"%s: %s%s",
             child->id, child->definition_key, trans, item,
             child->status == WF_INSTANCE_FAILED ? "the child failed: " : "the child ended ",
             child->status == WF_INSTANCE_FAILED
                 ? (child->last_error != NULL ? child->last_error : "")
                 : (child->status == WF_INSTANCE_CANCELLED ? "CANCELLED" : "COMPENSATED"));
    return call_fail(pw, code, item_id, index, trans, child->id, child->definition_key,
                     child->definition_version, msg, err);
}

/* w's instance is a call child whose status changed: its caller is told
 * in the same transaction. */
static wf_code
call_tell_caller(net_work *w, wf_error *err)
{
    const wf_instance_row *child = &w->rw.insts[w->inst];
    net_work pw;
    wf_code rc = wf_runtime__open(&pw, w->rw.ctx, w->tx, child->parent_id, child->root_id, err);
    if (rc != WF_OK || pw.net == NULL)
        return rc;
    long index;
    size_t ii = call_item(&pw, child->id, &index);
    if (ii == WF_WORK_NONE)
        return WF_OK; /* not a call child, or its item was withdrawn */
    if (child->status == WF_INSTANCE_COMPLETED) {
        if (pw.rw.insts[pw.inst].status != WF_INSTANCE_RUNNING)
            return WF_OK;
        rc = call_returned(&pw, ii, index, child, err);
    } else {
        rc = call_child_state(&pw, ii, index, child, err);
    }
    return rc == WF_OK ? wf_runtime__write(&pw, err) : rc;
}

/* The calls written after w may have changed its instance (failed it, or
 * a child that ended at once fired it): the row is read again, so that
 * the caller answers it as it is. A status changed so was told to w's own
 * caller by the working set that changed it. */
static wf_code
call_refresh(net_work *w, wf_error *err)
{
    const wf_instance_row *in = &w->rw.insts[w->inst];
    net_work now;
    wf_code rc = wf_runtime__open(&now, w->rw.ctx, w->tx, in->id, in->root_id, err);
    if (rc != WF_OK)
        return rc;
    if (now.rw.insts[now.inst].status != in->status)
        w->call_told = true;
    w->rw.insts[w->inst] = now.rw.insts[now.inst];
    return WF_OK;
}

wf_code
wf_runtime__call_after_write(net_work *w, wf_error *err)
{
    wf_code rc = WF_OK;
    nw_call *c = w->calls;
    w->calls = NULL;
    for (nw_call *k = c; rc == WF_OK && k != NULL; k = k->next)
        rc = call_start(w, k, err);
    if (rc == WF_OK && c != NULL)
        rc = call_refresh(w, err);
    if (rc != WF_OK || w->net == NULL || w->call_told)
        return rc;
    const wf_instance_row *in = &w->rw.insts[w->inst];
    if (in->parent_id == NULL || in->status == status_before(w))
        return WF_OK;
    w->call_told = true;
    return call_tell_caller(w, err);
}
