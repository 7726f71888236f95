/*
 * signals_variables: SetVariables, a patch merged into the variables of
 * an instance that has not ended (VARIABLES_SET) (signals.h).
 *
 * Must not: include protobuf or grpc headers.
 */

#include "net_runtime_int.h"

#include <jansson.h>

#include "vars.h"
#include "wf_str.h"

typedef struct vars_op {
    const wf_runtime_ctx *ctx;
    const char *instance_id;
    const char *patch;
    wf_instance_row *out;
    const char **wake;
    size_t n_wake;
} vars_op;

static wf_code
vars_body(wf_tx *tx, void *arg, wf_error *err)
{
    vars_op *op = arg;
    net_work w;
    op->n_wake = 0;
    wf_code rc = wf_runtime__open(&w, &op->ctx->ref, tx, op->instance_id, NULL, err);
    if (rc != WF_OK)
        return rc;
    wf_instance_row *in = &w.rw.insts[w.inst];
    if (wf_instance_ended(in->status))
        return wf_error_set(err, WF_E_INSTANCE_NOT_RUNNING, "instance \"%s\" has ended", in->id);
    const char *vars;
    rc = wf_vars_merge(w.rw.arena, in->variables_json, op->patch, &vars, err);
    if (rc != WF_OK)
        return rc;
    in->variables_json = (char *)vars;
    wf_work_touch_instance(&w.rw, w.inst);
    json_t *patch = json_loads(op->patch, 0, NULL);
    json_t *keys = json_array();
    const char *key;
    json_t *value;
    json_object_foreach(patch, key, value)
    {
        (void)value;
        json_array_append_new(keys, json_string(key));
    }
    json_decref(patch);
    rc = wf_runtime__event(&w, "VARIABLES_SET", json_pack("{s:o}", "keys", keys), err);
    if (rc == WF_OK)
        rc = wf_runtime__write(&w, err);
    if (rc != WF_OK)
        return rc;
    *op->out = w.rw.insts[w.inst];
    wf_runtime__keep_wake(&w, &op->wake, &op->n_wake);
    return WF_OK;
}

wf_code
wf_runtime_set_variables(const wf_runtime_ctx *ctx, const char *instance_id,
                         const char *variables_json, wf_uow_idem *idem, wf_instance_row *out,
                         wf_error *err)
{
    const wf_ref_ctx *r = &ctx->ref;
    if (wf_str_empty(instance_id))
        return wf_work_violation(r, WF_E_INVALID_ARGUMENT, "instance_id", "is required", err);
    if (wf_str_empty(variables_json))
        return wf_work_violation(r, WF_E_INVALID_ARGUMENT, "variables_json", "is required", err);
    const char *patch = NULL;
    wf_code rc = wf_vars_object(r->arena, variables_json, "variables_json", &patch, err);
    if (rc != WF_OK) {
        if (r->violation != NULL)
            r->violation(r->violation_arg, "variables_json", NULL, "must be a JSON object");
        return rc;
    }
    vars_op op = {ctx, instance_id, patch, out, NULL, 0};
    wf_store_ctx sc = wf_work_store_ctx(r);
    rc = wf_uow_run(r->store, &sc, idem, vars_body, &op, out, err);
    if (rc == WF_OK && !wf_uow_idem_replayed(idem))
        wf_runtime__wake(ctx, op.wake, op.n_wake);
    return rc;
}
