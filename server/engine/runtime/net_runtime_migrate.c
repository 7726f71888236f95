/*
 * net_runtime_migrate: MigrateInstance, the move of a running root net
 * instance to another version of its definition (net_runtime.h).
 *
 * The pure rule (wf_net_migrate, net_fire.c) maps the tokens, checks every
 * live work item against the target and settles the case on the target
 * net; this file runs it in one unit of work on the locked root, turns its
 * diff into rows and events through the same path as a firing
 * (wf_runtime__apply_diff), and builds the plan a dry run answers.
 *
 * Decisions (docs/operations.md, "MigrateInstance"):
 *   - only a RUNNING root is migrated: a child moves with nothing but its
 *     root (INSTANCE_NOT_ROOT), an ended, FAILED or COMPENSATING instance
 *     is INSTANCE_NOT_RUNNING, a SUSPENDED one INSTANCE_SUSPENDED, an
 *     AD_HOC one (no net) NOT_A_NET_INSTANCE;
 *   - the version the instance already runs is a no-op: nothing is
 *     written, no event, so that migrating many instances to one version
 *     may meet some that are there already;
 *   - every problem is found before anything changes; a real run with
 *     problems is MIGRATION_INVALID with all of them as field violations,
 *     a dry run answers them with the plan;
 *   - a kept work item keeps its rows untouched: the task its id, claim
 *     and assignee, the job its key, attempts and lease, the timer its due
 *     time, the subscription its place in the signal queue.
 *
 * Must not: include protobuf or grpc headers.
 */
#include "net_runtime_int.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "defcache.h"
#include "wf_str.h"

typedef struct migrate_op {
    const wf_runtime_ctx *ctx;
    const wf_runtime_migrate_in *in;
    wf_runtime_migration *out;
    const char **wake;
    size_t n_wake;
} migrate_op;

/* ---- the request -------------------------------------------------------------------- */

wf_code
wf_runtime_migrate_check_args(const wf_ref_ctx *r, const wf_runtime_migrate_in *in, wf_error *err)
{
    if (in->target_version < 1)
        return wf_work_violation(r, WF_E_INVALID_ARGUMENT, "target_version", "must be at least 1",
                                 err);
    if (in->n_mapping > WF_NET_MAX_PLACE_MAPPINGS) {
        char msg[64];
        snprintf(msg, sizeof msg, "must hold at most %d entries", WF_NET_MAX_PLACE_MAPPINGS);
        return wf_work_violation(r, WF_E_INVALID_ARGUMENT, "place_mapping", msg, err);
    }
    for (size_t i = 0; i < in->n_mapping; i++) {
        char path[64];
        const char *field = wf_str_empty(in->mapping[i].from_place) ? "from_place"
                            : wf_str_empty(in->mapping[i].to_place) ? "to_place"
                                                                    : NULL;
        if (field == NULL)
            continue;
        snprintf(path, sizeof path, "place_mapping[%zu].%s", i, field);
        return wf_work_violation(r, WF_E_INVALID_ARGUMENT, path, "is required", err);
    }
    return WF_OK;
}

static wf_code
check_request(const wf_ref_ctx *r, const wf_runtime_migrate_in *in, wf_error *err)
{
    if (wf_str_empty(in->instance_id))
        return wf_work_violation(r, WF_E_INVALID_ARGUMENT, "instance_id", "is required", err);
    return wf_runtime_migrate_check_args(r, in, err);
}

/* ---- the plan ------------------------------------------------------------------------ */

static const char *
target_place(const wf_net *to, const wf_runtime_migrate_in *in, const char *id)
{
    for (size_t i = 0; i < in->n_mapping; i++)
        if (wf_str_eq(in->mapping[i].from_place, id))
            return in->mapping[i].to_place;
    return wf_net_place_index(to, id) >= 0 ? id : "";
}

static int
cmp_seq(const void *x, const void *y)
{
    const wf_token *a = *(const wf_token *const *)x, *b = *(const wf_token *const *)y;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return strcmp(a->id, b->id);
}

static bool
listed(const char *const *ids, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (wf_str_eq(ids[i], id))
            return true;
    return false;
}

/* Fills the plan of out from the state before (st) and the step (d). */
static wf_code
fill_plan(wf_arena *a, const wf_net *to, const wf_runtime_migrate_in *in, const wf_net_state *st,
          const wf_net_diff *d, bool real, wf_runtime_migration *out, wf_error *err)
{
    out->tokens = wf_arena_alloc(a, (st->n_tokens + 1) * sizeof *out->tokens);
    out->kept = wf_arena_alloc(a, (st->n_items + 1) * sizeof *out->kept);
    out->withdrawn = wf_arena_alloc(a, (st->n_items + 1) * sizeof *out->withdrawn);
    out->created = wf_arena_alloc(a, (d->n_created + 1) * sizeof *out->created);
    out->fired = wf_arena_alloc(a, (d->n_fired + 1) * sizeof *out->fired);
    if (out->tokens == NULL || out->kept == NULL || out->withdrawn == NULL ||
        out->created == NULL || out->fired == NULL)
        return wf_error_nomem(err);
    /* Oldest first, as the net takes them. */
    const wf_token **order = wf_arena_alloc(a, (st->n_tokens + 1) * sizeof *order);
    if (order == NULL)
        return wf_error_nomem(err);
    for (size_t i = 0; i < st->n_tokens; i++)
        order[i] = &st->tokens[i];
    if (st->n_tokens > 1)
        qsort(order, st->n_tokens, sizeof *order, cmp_seq);
    for (size_t i = 0; i < st->n_tokens; i++)
        out->tokens[out->n_tokens++] = (wf_runtime_token_move){
            order[i]->id, order[i]->place_id, target_place(to, in, order[i]->place_id)};
    for (size_t i = 0; i < st->n_items; i++) {
        const wf_work_item *it = &st->items[i];
        wf_runtime_plan_item p = {it->id, it->transition_id, it->trigger};
        if (listed(d->withdrawn, d->n_withdrawn, it->id))
            out->withdrawn[out->n_withdrawn++] = p;
        else
            out->kept[out->n_kept++] = p;
    }
    for (size_t i = 0; i < d->n_created; i++)
        out->created[out->n_created++] = (wf_runtime_plan_item){
            real ? d->created[i].id : "", d->created[i].transition_id, d->created[i].trigger};
    for (size_t i = 0; i < d->n_fired; i++)
        out->fired[out->n_fired++] = d->fired[i].transition_id;
    out->completes = d->ended;
    return WF_OK;
}

/* ---- the unit of work ---------------------------------------------------------------- */

static wf_code
check_instance(const net_work *w, wf_error *err)
{
    const wf_instance_row *inst = &w->rw.insts[w->inst];
    if (inst->parent_id != NULL)
        return wf_error_set(err, WF_E_INSTANCE_NOT_ROOT,
                            "instance \"%s\" is not a root: it migrates with root instance \"%s\"",
                            inst->id, inst->root_id);
    if (w->net == NULL)
        return wf_error_set(err, WF_E_NOT_A_NET_INSTANCE,
                            "instance \"%s\" has no net to migrate: its definition is AD_HOC",
                            inst->id);
    if (inst->status == WF_INSTANCE_SUSPENDED)
        return wf_error_set(err, WF_E_INSTANCE_SUSPENDED,
                            "instance \"%s\" is suspended; resume it before migrating it",
                            inst->id);
    if (wf_instance_ended(inst->status))
        return wf_error_set(err, WF_E_INSTANCE_NOT_RUNNING, "instance \"%s\" has ended", inst->id);
    if (inst->status != WF_INSTANCE_RUNNING)
        return wf_error_set(err, WF_E_INSTANCE_NOT_RUNNING,
                            "instance \"%s\" is %s; only a running instance migrates", inst->id,
                            inst->status == WF_INSTANCE_FAILED ? "failed" : "compensating");
    return WF_OK;
}

/* The target version's definition row and net. */
static wf_code
target_net(net_work *w, int32_t version, const wf_net **net, wf_error *err)
{
    const wf_instance_row *inst = &w->rw.insts[w->inst];
    wf_definition_row row;
    bool found = false;
    wf_code rc = wf_tx_get_definition(w->tx, inst->definition_key, version, &row, &found, err);
    if (rc != WF_OK)
        return rc;
    if (!found)
        return wf_error_set(err, WF_E_DEFINITION_NOT_FOUND, "definition \"%s\" has no version %d",
                            inst->definition_key, (int)version);
    rc = wf_defcache_net(&row, w->rw.arena, net, err);
    if (rc == WF_OK && *net == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "version %d of definition \"%s\" has no net",
                            (int)version, inst->definition_key);
    return rc;
}

/* INSTANCE_MIGRATED: the versions, the mapping, where each token went,
 * the items kept, the actor. */
static wf_code
migrated_event(net_work *w, const wf_runtime_migrate_in *in, const wf_runtime_migration *plan,
               wf_error *err)
{
    json_t *map = json_array(), *toks = json_array(), *kept = json_array();
    for (size_t i = 0; map != NULL && i < in->n_mapping; i++)
        json_array_append_new(map, json_pack("{s:s,s:s}", "fromPlace", in->mapping[i].from_place,
                                             "toPlace", in->mapping[i].to_place));
    for (size_t i = 0; toks != NULL && i < plan->n_tokens; i++)
        json_array_append_new(toks, json_pack("{s:s,s:s,s:s}", "tokenId", plan->tokens[i].token_id,
                                              "fromPlace", plan->tokens[i].from_place, "toPlace",
                                              plan->tokens[i].to_place));
    for (size_t i = 0; kept != NULL && i < plan->n_kept; i++)
        json_array_append_new(kept, json_string(plan->kept[i].work_item_id));
    const char *actor = w->rw.ctx->actor;
    json_t *data =
        json_pack("{s:i,s:i,s:o*,s:o*,s:o*,s:s}", "sourceVersion", (int)plan->source_version,
                  "targetVersion", (int)plan->target_version, "placeMapping", map, "tokens", toks,
                  "keptWorkItemIds", kept, "actor", actor != NULL ? actor : "");
    return wf_runtime__event(w, "INSTANCE_MIGRATED", data, err);
}

static wf_code
migrate_body(wf_tx *tx, void *arg, wf_error *err)
{
    migrate_op *op = arg;
    const wf_runtime_migrate_in *in = op->in;
    wf_runtime_migration *out = op->out;
    net_work w;
    op->n_wake = 0;
    memset(out, 0, sizeof *out);
    wf_code rc = wf_runtime__open(&w, &op->ctx->ref, tx, in->instance_id, NULL, err);
    if (rc == WF_OK)
        rc = check_instance(&w, err);
    if (rc != WF_OK)
        return rc;
    wf_instance_row *inst = &w.rw.insts[w.inst];
    out->instance = *inst;
    out->source_version = inst->definition_version;
    out->target_version = in->target_version;
    if (in->target_version == inst->definition_version)
        return WF_OK; /* already there: a no-op */
    const wf_net *to;
    rc = target_net(&w, in->target_version, &to, err);
    if (rc != WF_OK)
        return rc;

    wf_net_state st, after;
    wf_net_diff d;
    memset(&d, 0, sizeof d);
    rc = wf_runtime__state(&w, &st, err);
    if (rc == WF_OK)
        rc = wf_net_migrate(w.net, to, &st, in->mapping, in->n_mapping, inst->variables_json,
                            w.rw.arena, &after, &d, &out->problems, &out->n_problems, err);
    if (rc == WF_OK)
        rc = fill_plan(w.rw.arena, to, in, &st, &d, !in->dry_run && out->n_problems == 0, out, err);
    if (rc != WF_OK)
        return rc;
    if (out->n_problems > 0) {
        if (in->dry_run)
            return WF_OK;
        const wf_validation_error *first = &out->problems[0];
        return wf_error_set(err, WF_E_MIGRATION_INVALID,
                            "instance \"%s\" cannot migrate to version %d: %zu problem%s, the "
                            "first at %s: %s",
                            inst->id, (int)in->target_version, out->n_problems,
                            out->n_problems == 1 ? "" : "s", first->path, first->message);
    }
    if (in->dry_run)
        return WF_OK;

    rc = migrated_event(&w, in, out, err);
    if (rc != WF_OK)
        return rc;
    /* The tokens go to their places in the target, keeping ids and order. */
    for (size_t i = 0; i < w.toks.n; i++) {
        wf_token_row *t = TOK(&w, i);
        if (w.toks.flags[i] & NW_GONE)
            continue;
        const char *p = target_place(to, in, t->place_id);
        if (!wf_str_eq(p, t->place_id)) {
            t->place_id = (char *)p;
            wf_runtime__dirty(&w.toks, i);
        }
    }
    inst->definition_version = in->target_version;
    wf_work_touch_instance(&w.rw, w.inst);
    w.net = to;
    rc = wf_runtime__apply_diff(&w, &d, inst->variables_json, err);
    if (rc == WF_OK)
        rc = wf_runtime__write(&w, err);
    if (rc != WF_OK)
        return rc;
    out->instance = w.rw.insts[w.inst];
    out->applied = true;
    wf_runtime__keep_wake(&w, &op->wake, &op->n_wake);
    return WF_OK;
}

/* A refused real run: every problem as a field violation. */
static void
report_problems(const wf_ref_ctx *r, const wf_runtime_migration *out)
{
    if (r->violation == NULL)
        return;
    for (size_t i = 0; i < out->n_problems; i++)
        r->violation(r->violation_arg, out->problems[i].path, out->problems[i].code,
                     out->problems[i].message);
}

wf_code
wf_runtime_migrate_instance(const wf_runtime_ctx *ctx, const wf_runtime_migrate_in *in,
                            wf_uow_idem *idem, wf_runtime_migration *out, wf_error *err)
{
    const wf_ref_ctx *r = &ctx->ref;
    memset(out, 0, sizeof *out);
    wf_code rc = check_request(r, in, err);
    if (rc != WF_OK)
        return rc;
    if (in->dry_run)
        idem = NULL;
    migrate_op op = {ctx, in, out, NULL, 0};
    wf_store_ctx sc = wf_work_store_ctx(r);
    rc = wf_uow_run(r->store, &sc, idem, migrate_body, &op, out, err);
    if (rc == WF_E_MIGRATION_INVALID)
        report_problems(r, out);
    if (rc == WF_OK && out->applied && !wf_uow_idem_replayed(idem))
        wf_runtime__wake(ctx, op.wake, op.n_wake);
    return rc;
}
