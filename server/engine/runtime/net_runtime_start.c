/*
 * net_runtime_start: StartInstance of a NET definition: the version to
 * start (its validity window), the root instance, INSTANCE_STARTED and
 * the first step of the net (net_runtime.c). Definitions of other kinds
 * start through the referral module.
 *
 * Must not: include protobuf or grpc headers.
 */
#include "net_runtime_int.h"

#include <jansson.h>
#include <string.h>

#include "defcache.h"
#include "wf_id.h"
#include "wf_time.h"
#include "wf_str.h"

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
wf_code
wf_runtime__pick_version(wf_tx *tx, int32_t asked, wf_definition_row *def, wf_error *err)
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

wf_code
wf_runtime__start_net(const wf_ref_ctx *ctx, wf_tx *tx, const wf_definition_row *def,
                      const wf_start_spec *spec, const wf_instance_row *parent, const char *vars,
                      wf_instance_row *out, wf_error *err)
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
                                         : wf_id_new(ctx->arena);
    if (id == NULL)
        return wf_error_nomem(err);
    bool has_agg = !wf_str_empty(spec->aggregate_type);
    wf_instance_row root = {
        .id = id,
        .tenant = (char *)ctx->tenant,
        .definition_key = wf_work_strdup(&w.rw, def->key),
        .definition_version = def->version,
        .parent_id = parent != NULL ? wf_work_strdup(&w.rw, parent->id) : NULL,
        .root_id = parent != NULL ? wf_work_strdup(&w.rw, parent->root_id) : id,
        .status = WF_INSTANCE_RUNNING,
        .variables_json = (char *)vars,
        .aggregate_type = has_agg ? wf_work_strdup(&w.rw, spec->aggregate_type) : NULL,
        .aggregate_id = has_agg ? wf_work_strdup(&w.rw, spec->aggregate_id) : NULL,
        .started_by = wf_work_strdup(&w.rw, ctx->actor),
        .title = wf_work_strdup(&w.rw, wf_str_empty(net->name) ? def->key : net->name),
        .created_at = w.rw.now,
        .updated_at = w.rw.now,
    };
    rc = wf_work_add_instance(&w.rw, &root, &w.inst, err);
    if (rc != WF_OK)
        return rc;
    w.net = net;
    rc = wf_runtime__load(&w, err);
    if (rc == WF_OK)
        rc = wf_runtime__event(&w, "INSTANCE_STARTED",
                               parent != NULL
                                   ? json_pack("{s:s,s:i,s:s}", "definitionKey",
                                               root.definition_key, "definitionVersion",
                                               (int)def->version, "parentInstanceId", parent->id)
                                   : json_pack("{s:s,s:i}", "definitionKey", root.definition_key,
                                               "definitionVersion", (int)def->version),
                               err);
    wf_net_state st;
    wf_net_diff d;
    if (rc == WF_OK)
        rc = wf_net_start(net, NULL, vars, ctx->arena, &st, &d, err);
    if (rc == WF_OK)
        rc = wf_runtime__apply_diff(&w, &d, vars, err);
    if (rc == WF_OK)
        rc = wf_runtime__write(&w, err);
    if (rc == WF_OK)
        *out = w.rw.insts[w.inst];
    return rc;
}

wf_code
wf_runtime_start_in(const wf_ref_ctx *ctx, wf_tx *tx, const wf_start_spec *spec, const char *vars,
                    wf_instance_row *out, wf_error *err)
{
    wf_definition_row def;
    wf_code rc = wf_referral_start_definition(ctx, tx, spec, &def, err);
    if (rc == WF_OK && WF_DEF_RUNS_NET(def.kind))
        rc = wf_runtime__pick_version(tx, spec->version, &def, err);
    if (rc != WF_OK)
        return rc;
    if (WF_DEF_RUNS_NET(def.kind))
        return wf_runtime__start_net(ctx, tx, &def, spec, NULL, vars, out, err);
    return wf_referral_start_root(ctx, tx, spec, vars, &def, out, err);
}
