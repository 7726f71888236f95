/*
 * net_runtime_modify: ModifyInstance, one atomic change of the marking of
 * a running net instance (net_runtime.h), checked against its net so that
 * no token vanishes unseen: every token taken or made is named in
 * INSTANCE_MODIFIED, and what the change enables or disables goes through
 * the same diff as a firing (wf_runtime__apply_diff), so tasks, jobs,
 * timers and subscriptions are withdrawn and created exactly as a firing
 * would.
 *
 * Decisions (docs/operations.md, "ModifyInstance"):
 *   - RUNNING and FAILED instances may be modified (a FAILED one to move
 *     its token past the incident, as Zeebe allows); a FAILED one whose
 *     compensation failed, and every ended or compensating one, is
 *     INSTANCE_NOT_RUNNING; one of a SUSPENDED tree is INSTANCE_SUSPENDED
 *     (resume it first), as a task operation there is. A FAILED instance runs again
 *     (INCIDENT_RESOLVED) once no failed job and no refused TIME or MSG
 *     item is left.
 *   - Only the net instance named is changed; an AD_HOC instance (a
 *     referral root or child) has no marking: NOT_A_NET_INSTANCE.
 *   - A change that leaves no token and nothing enabled is refused
 *     (INSTANCE_WOULD_BE_EMPTY) unless allow_empty: then the instance and
 *     its running descendants are CANCELLED with the reason, since the
 *     work never reached the END place. A change that leaves tokens from
 *     which nothing can be enabled is always refused
 *     (MODIFICATION_DEADLOCKS): it would only turn into an incident.
 *
 * Must not: include protobuf or grpc headers.
 */
#include "net_runtime_int.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vars.h"
#include "wf_str.h"

#define MAX_REASON_BYTES 1024

typedef struct modify_op {
    const wf_runtime_ctx *ctx;
    const wf_runtime_modify_in *in;
    const char *patch; /* normalised variables, NULL = none */
    wf_runtime_modified *out;
    const char **wake;
    size_t n_wake;
} modify_op;

static const char *
kind_name(wf_net_mod_kind k)
{
    switch (k) {
    case WF_NET_MOD_ADD:
        return "ADD";
    case WF_NET_MOD_REMOVE:
        return "REMOVE";
    case WF_NET_MOD_MOVE:
        return "MOVE";
    case WF_NET_MOD_UNSET:
        break;
    }
    return "UNSPECIFIED";
}

static const char *
status_name(wf_instance_status s)
{
    switch (s) {
    case WF_INSTANCE_RUNNING:
        return "running";
    case WF_INSTANCE_COMPLETED:
        return "completed";
    case WF_INSTANCE_CANCELLED:
        return "cancelled";
    case WF_INSTANCE_FAILED:
        return "failed";
    case WF_INSTANCE_COMPENSATING:
        return "compensating";
    case WF_INSTANCE_COMPENSATED:
        return "compensated";
    default:
        break;
    }
    return "not running";
}

/* ---- the request -------------------------------------------------------------------- */

static wf_code
bad_op(const wf_ref_ctx *r, size_t i, const char *field, const char *msg, wf_error *err)
{
    char path[64];
    snprintf(path, sizeof path, "operations[%zu]%s%s", i, field[0] != '\0' ? "." : "", field);
    return wf_work_violation(r, WF_E_INVALID_ARGUMENT, path, msg, err);
}

static wf_code
check_request(const wf_ref_ctx *r, const wf_runtime_modify_in *in, wf_error *err)
{
    if (wf_str_empty(in->instance_id))
        return wf_work_violation(r, WF_E_INVALID_ARGUMENT, "instance_id", "is required", err);
    if (in->n_ops == 0)
        return wf_work_violation(r, WF_E_INVALID_ARGUMENT, "operations",
                                 "must hold at least one operation", err);
    if (in->n_ops > WF_NET_MAX_MODIFY_OPS) {
        char msg[64];
        snprintf(msg, sizeof msg, "must hold at most %d operations", WF_NET_MAX_MODIFY_OPS);
        return wf_work_violation(r, WF_E_INVALID_ARGUMENT, "operations", msg, err);
    }
    for (size_t i = 0; i < in->n_ops; i++) {
        const wf_net_mod *op = &in->ops[i];
        bool takes = op->kind == WF_NET_MOD_REMOVE || op->kind == WF_NET_MOD_MOVE;
        if (op->kind != WF_NET_MOD_ADD && !takes)
            return bad_op(r, i, "kind", "must be ADD, REMOVE or MOVE", err);
        if (wf_str_empty(op->place_id))
            return bad_op(r, i, "place_id", "is required", err);
        if (op->kind == WF_NET_MOD_MOVE && wf_str_empty(op->to_place_id))
            return bad_op(r, i, "to_place_id", "is required for MOVE", err);
        if (op->kind != WF_NET_MOD_MOVE && !wf_str_empty(op->to_place_id))
            return bad_op(r, i, "to_place_id", "is allowed for MOVE only", err);
        if (op->count < 0 || op->count > WF_NET_MAX_MODIFY_COUNT) {
            char msg[64];
            snprintf(msg, sizeof msg, "must be 0 to %d", WF_NET_MAX_MODIFY_COUNT);
            return bad_op(r, i, "count", msg, err);
        }
        if (!wf_str_empty(op->token_id) && !takes)
            return bad_op(r, i, "token_id", "is allowed for REMOVE and MOVE only", err);
        if (!wf_str_empty(op->token_id) && op->count > 1)
            return bad_op(r, i, "count", "must be 0 or 1 with token_id", err);
    }
    if (in->reason != NULL && strlen(in->reason) > MAX_REASON_BYTES)
        return wf_work_violation(r, WF_E_INVALID_ARGUMENT, "reason", "must be at most 1024 bytes",
                                 err);
    return WF_OK;
}

/* ---- the unit of work ---------------------------------------------------------------- */

/* A compensation job of the instance FAILED: its saga failed for good. */
static bool
saga_failed(const net_work *w)
{
    const char *id = w->rw.insts[w->inst].id;
    for (size_t i = 0; i < w->jobs.n; i++) {
        const wf_job_row *j = JOB(w, i);
        if (!(w->jobs.flags[i] & NW_GONE) && j->compensation && j->state == WF_JOB_FAILED &&
            wf_str_eq(j->instance_id, id))
            return true;
    }
    return false;
}

/* The FAILED instance still has an incident: a failed job, or a TIME or
 * MSG item whose firing was refused (its timer or subscription spent). */
static bool
incident_left(const net_work *w)
{
    const char *id = w->rw.insts[w->inst].id;
    for (size_t i = 0; i < w->jobs.n; i++)
        if (!(w->jobs.flags[i] & NW_GONE) && JOB(w, i)->state == WF_JOB_FAILED &&
            wf_str_eq(JOB(w, i)->instance_id, id))
            return true;
    for (size_t i = 0; i < w->items.n; i++) {
        const wf_work_item_row *it = ITEM(w, i);
        if ((w->items.flags[i] & NW_GONE) || it->state != WF_WORK_ITEM_ENABLED ||
            !wf_str_eq(it->instance_id, id) ||
            (it->trigger != WF_TRIGGER_TIME && it->trigger != WF_TRIGGER_MSG))
            continue;
        if (!wf_runtime__armed(w, it))
            return true;
    }
    return false;
}

static json_t *
id_array(const char *const *ids, size_t n)
{
    json_t *v = json_array();
    for (size_t i = 0; v != NULL && i < n; i++)
        json_array_append_new(v, json_string(ids[i]));
    return v;
}

/* INSTANCE_MODIFIED: each operation with the tokens it took and made. */
static wf_code
modified_event(net_work *w, const modify_op *op, const wf_net_mod_done *done, json_t *keys,
               wf_error *err)
{
    const wf_runtime_modify_in *in = op->in;
    json_t *ops = json_array();
    for (size_t i = 0; ops != NULL && i < in->n_ops; i++) {
        const wf_net_mod *m = &in->ops[i];
        size_t count = m->kind == WF_NET_MOD_ADD ? done[i].n_made : done[i].n_taken;
        json_t *o = json_pack("{s:s,s:s,s:i,s:o*,s:o*}", "kind", kind_name(m->kind), "placeId",
                              m->place_id, "count", (int)count, "takenTokenIds",
                              id_array(done[i].taken, done[i].n_taken), "madeTokenIds",
                              id_array(done[i].made, done[i].n_made));
        if (o != NULL && m->kind == WF_NET_MOD_MOVE)
            json_object_set_new(o, "toPlaceId", json_string(m->to_place_id));
        if (o != NULL && !wf_str_empty(m->token_id))
            json_object_set_new(o, "tokenId", json_string(m->token_id));
        json_array_append_new(ops, o);
    }
    const char *actor = w->rw.ctx->actor;
    json_t *data = json_pack("{s:o*,s:s,s:s,s:b,s:o*}", "operations", ops, "reason",
                             in->reason != NULL ? in->reason : "", "actor",
                             actor != NULL ? actor : "", "allowEmpty", in->allow_empty,
                             "variableKeys", keys != NULL ? json_incref(keys) : json_array());
    return wf_runtime__event(w, "INSTANCE_MODIFIED", data, err);
}

/* The keys of the variables patch (a new reference; NULL without one). */
static json_t *
patch_keys(const char *patch)
{
    if (patch == NULL)
        return NULL;
    json_t *p = json_loads(patch, 0, NULL), *keys = json_array();
    const char *key;
    json_t *value;
    json_object_foreach(p, key, value)
    {
        (void)value;
        json_array_append_new(keys, json_string(key));
    }
    json_decref(p);
    return keys;
}

/* allow_empty: nothing is left, so the instance and its running
 * descendants end CANCELLED with the reason. */
static wf_code
cancel_emptied(net_work *w, const char *reason, wf_error *err)
{
    /* The net instance's own jobs, timers and subscriptions: its
     * descendants are referrals, whose pending tasks are cancelled below. */
    wf_code rc = wf_runtime__abandon(w, NULL, false, err);
    for (size_t t = 0; rc == WF_OK && t < w->rw.n_tasks; t++)
        if (wf_runtime__task_pending(&w->rw.tasks[t]) &&
            wf_work_in_subtree(&w->rw, wf_work_find_instance(&w->rw, w->rw.tasks[t].instance_id),
                               w->inst))
            rc = wf_referral_cancel_task(&w->rw, t, err);
    const char *why = !wf_str_empty(reason) ? reason : "emptied by ModifyInstance";
    for (size_t k = w->rw.n_insts; rc == WF_OK && k-- > 0;)
        if (k != w->inst && !wf_instance_ended(w->rw.insts[k].status) &&
            wf_work_in_subtree(&w->rw, k, w->inst))
            rc = wf_referral_finish_instance(&w->rw, k, WF_INSTANCE_CANCELLED, why, err);
    if (rc == WF_OK)
        rc = wf_referral_finish_instance(&w->rw, w->inst, WF_INSTANCE_CANCELLED, why, err);
    return rc == WF_OK ? wf_runtime__discard_buffered(w, err) : rc;
}

static int
cmp_token_seq(const void *x, const void *y)
{
    const wf_token_row *a = *(const wf_token_row *const *)x, *b = *(const wf_token_row *const *)y;
    if (a->created_seq != b->created_seq)
        return a->created_seq < b->created_seq ? -1 : 1;
    return strcmp(a->id, b->id);
}

/* The marking and tokens of the net instance after the change. */
static wf_code
fill_out(net_work *w, wf_runtime_modified *out, wf_error *err)
{
    wf_arena *a = w->rw.arena;
    size_t n = 0;
    const wf_token_row **live = wf_arena_alloc(a, (w->toks.n + 1) * sizeof *live);
    out->marking = wf_arena_alloc(a, (w->net->n_places + 1) * sizeof *out->marking);
    if (live == NULL || out->marking == NULL)
        return wf_error_nomem(err);
    for (size_t i = 0; i < w->toks.n; i++)
        if (!(w->toks.flags[i] & NW_GONE))
            live[n++] = TOK(w, i);
    if (n > 1)
        qsort(live, n, sizeof *live, cmp_token_seq);
    out->tokens = wf_arena_alloc(a, (n + 1) * sizeof *out->tokens);
    if (out->tokens == NULL)
        return wf_error_nomem(err);
    for (size_t i = 0; i < n; i++)
        out->tokens[i] = (wf_runtime_token){live[i]->id, live[i]->place_id};
    out->n_tokens = n;
    out->n_marking = 0;
    for (size_t p = 0; p < w->net->n_places; p++) {
        int32_t c = 0;
        for (size_t i = 0; i < n; i++)
            c += wf_str_eq(live[i]->place_id, w->net->places[p].id);
        if (c > 0)
            out->marking[out->n_marking++] = (wf_runtime_marking){w->net->places[p].id, c};
    }
    return WF_OK;
}

/* The field of operation i that named an unknown place. */
static void
report_place(const modify_op *op, const net_work *w, size_t i)
{
    const wf_ref_ctx *r = &op->ctx->ref;
    const wf_net_mod *m = &op->in->ops[i];
    if (r->violation == NULL)
        return;
    char path[64];
    bool from_known = wf_net_place_index(w->net, m->place_id) >= 0;
    snprintf(path, sizeof path, "operations[%zu].%s", i, from_known ? "to_place_id" : "place_id");
    r->violation(r->violation_arg, path, wf_code_reason(WF_E_UNKNOWN_PLACE),
                 "names no place of the instance's net");
}

static wf_code
modify_body(wf_tx *tx, void *arg, wf_error *err)
{
    modify_op *op = arg;
    const wf_runtime_modify_in *in = op->in;
    net_work w;
    op->n_wake = 0;
    wf_code rc = wf_runtime__open(&w, &op->ctx->ref, tx, in->instance_id, NULL, err);
    if (rc != WF_OK)
        return rc;
    wf_instance_row *inst = &w.rw.insts[w.inst];
    if (w.net == NULL)
        return wf_error_set(err, WF_E_NOT_A_NET_INSTANCE,
                            "instance \"%s\" has no net to modify: its definition is AD_HOC",
                            inst->id);
    /* A suspended tree is refused as its task operations are, the
     * instance itself (the root) or one below it. */
    rc = wf_work_check_not_suspended(&w.rw, w.inst, err);
    if (rc != WF_OK)
        return rc;
    bool failed = inst->status == WF_INSTANCE_FAILED;
    if ((inst->status != WF_INSTANCE_RUNNING && !failed) || (failed && saga_failed(&w)))
        return wf_error_set(err, WF_E_INSTANCE_NOT_RUNNING, "instance \"%s\" is %s%s", inst->id,
                            status_name(inst->status),
                            failed ? " after its compensation failed" : "");
    const char *vars = inst->variables_json;
    if (op->patch != NULL) {
        rc = wf_vars_merge(w.rw.arena, inst->variables_json, op->patch, &vars, err);
        if (rc != WF_OK)
            return rc;
        inst->variables_json = (char *)vars;
        wf_work_touch_instance(&w.rw, w.inst);
    }
    wf_net_state st, after;
    wf_net_diff d;
    wf_net_mod_done *done = wf_arena_calloc(w.rw.arena, in->n_ops + 1, sizeof *done);
    size_t bad = SIZE_MAX;
    if (done == NULL)
        return wf_error_nomem(err);
    rc = wf_runtime__state(&w, &st, err);
    if (rc == WF_OK)
        rc = wf_net_modify(w.net, &st, in->ops, in->n_ops, vars, w.rw.arena, &after, &d, done, &bad,
                           err);
    if (rc == WF_E_UNKNOWN_PLACE && bad != SIZE_MAX)
        report_place(op, &w, bad);
    if (rc != WF_OK)
        return rc;
    bool emptied = after.n_tokens == 0 && after.n_items == 0;
    if (emptied && !in->allow_empty)
        return wf_error_set(err, WF_E_INSTANCE_WOULD_BE_EMPTY,
                            "the change would leave instance \"%s\" without a token and with "
                            "nothing enabled; set allow_empty to cancel it",
                            inst->id);
    if (!emptied && d.deadlocked)
        return wf_error_set(err, WF_E_MODIFICATION_DEADLOCKS,
                            "the change would leave instance \"%s\" with tokens that enable no "
                            "transition",
                            inst->id);
    json_t *keys = patch_keys(op->patch);
    rc = modified_event(&w, op, done, keys, err);
    if (rc == WF_OK && keys != NULL)
        rc = wf_runtime__event(&w, "VARIABLES_SET", json_pack("{s:O}", "keys", keys), err);
    json_decref(keys);
    if (rc != WF_OK)
        return rc;
    if (emptied) {
        /* The withdrawals and token removals, then the cancel (not the
         * completion an IMPLICIT net would read from an empty marking). */
        d.ended = false;
        d.deadlocked = false;
        rc = wf_runtime__apply_diff(&w, &d, vars, err);
        if (rc == WF_OK)
            rc = cancel_emptied(&w, in->reason, err);
    } else {
        rc = wf_runtime__apply_diff(&w, &d, vars, err);
    }
    if (rc != WF_OK)
        return rc;
    inst = &w.rw.insts[w.inst];
    if (failed && inst->status == WF_INSTANCE_FAILED && !incident_left(&w)) {
        /* The change took the instance past its incident. */
        inst->status = WF_INSTANCE_RUNNING;
        inst->last_error = NULL;
        inst->ended_at = 0;
        wf_work_touch_instance(&w.rw, w.inst);
        rc = wf_runtime__event(&w, "INCIDENT_RESOLVED", json_pack("{s:s}", "cause", "MODIFIED"),
                               err);
        if (rc == WF_OK)
            rc = wf_runtime__consume_awaited(&w, err);
        if (rc != WF_OK)
            return rc;
    }
    rc = wf_runtime__write(&w, err);
    if (rc == WF_OK)
        rc = fill_out(&w, op->out, err);
    if (rc != WF_OK)
        return rc;
    op->out->instance = w.rw.insts[w.inst];
    wf_runtime__keep_wake(&w, &op->wake, &op->n_wake);
    return WF_OK;
}

wf_code
wf_runtime_modify_instance(const wf_runtime_ctx *ctx, const wf_runtime_modify_in *in,
                           wf_uow_idem *idem, wf_runtime_modified *out, wf_error *err)
{
    const wf_ref_ctx *r = &ctx->ref;
    wf_code rc = check_request(r, in, err);
    if (rc != WF_OK)
        return rc;
    const char *patch = NULL;
    if (!wf_str_empty(in->variables_json)) {
        rc = wf_vars_object(r->arena, in->variables_json, "variables_json", &patch, err);
        if (rc != WF_OK) {
            if (r->violation != NULL)
                r->violation(r->violation_arg, "variables_json", NULL, "must be a JSON object");
            return rc;
        }
    }
    memset(out, 0, sizeof *out);
    modify_op op = {ctx, in, patch, out, NULL, 0};
    wf_store_ctx sc = wf_work_store_ctx(r);
    rc = wf_uow_run(r->store, &sc, idem, modify_body, &op, out, err);
    if (rc == WF_OK && !wf_uow_idem_replayed(idem))
        wf_runtime__wake(ctx, op.wake, op.n_wake);
    return rc;
}
