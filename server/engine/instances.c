/*
 * instances.c: the entry layer (instances.h). Chooses referral or net for
 * CompleteTask, CompleteAndEnd, CancelInstance and GetInstance; for
 * StartInstance it checks the spec and runs the unit of work whose body,
 * wf_runtime_start_in (runtime/net_runtime_start.c), makes the choice once
 * the definition is read. The rules themselves stay in their modules.
 */
#include "instances.h"

#include "vars.h"
#include "uow.h"

typedef struct start_op {
    const wf_ref_ctx *ctx;
    const wf_start_spec *spec;
    const char *vars; /* normalised */
    wf_instance_row *out;
} start_op;

static wf_code
start_body(wf_tx *tx, void *arg, wf_error *err)
{
    start_op *op = arg;
    return wf_runtime_start_in(op->ctx, tx, op->spec, op->vars, op->out, err);
}

wf_code
wf_instances_start(const wf_ref_ctx *ctx, const wf_start_spec *spec, wf_uow_idem *idem,
                   wf_instance_row *out, wf_error *err)
{
    start_op op = {.ctx = ctx, .spec = spec, .out = out};
    wf_code rc = wf_referral_check_start(ctx, spec, &op.vars, err);
    if (rc != WF_OK)
        return rc;
    wf_store_ctx sc = wf_work_store_ctx(ctx);
    return wf_uow_run(ctx->store, &sc, idem, start_body, &op, out, err);
}

/* The patch normalised, then the task located. */
static wf_code
locate(const wf_ref_ctx *ctx, const char *task_id, const char *variables_json, const char **patch,
       wf_ref_task_at *at, wf_error *err)
{
    wf_code rc = wf_vars_object(ctx->arena, variables_json, "variables_json", patch, err);
    if (rc == WF_OK)
        rc = wf_referral_locate_task(ctx, task_id, at, err);
    return rc;
}

wf_code
wf_instances_complete_task(const wf_ref_ctx *ctx, const char *task_id, const char *variables_json,
                           wf_uow_idem *idem, wf_ref_completion *out, wf_error *err)
{
    const char *patch;
    wf_ref_task_at at;
    wf_code rc = locate(ctx, task_id, variables_json, &patch, &at, err);
    if (rc != WF_OK)
        return rc;
    /* A delegate's completion resolves the delegation (DelegateTask). */
    if (at.delegation == WF_DELEGATION_PENDING)
        return wf_referral_resolve_at(ctx, &at, patch, idem, out, err);
    if (at.transition_id != NULL)
        return wf_runtime_complete_task(ctx, at.task_id, at.instance_id, at.root_id, patch, idem,
                                        out, err);
    return wf_referral_complete_at(ctx, &at, patch, idem, out, err);
}

wf_code
wf_instances_complete_and_end(const wf_ref_ctx *ctx, const char *task_id,
                              const char *variables_json, wf_uow_idem *idem, wf_ref_end *out,
                              wf_error *err)
{
    const char *patch;
    wf_ref_task_at at;
    wf_code rc = locate(ctx, task_id, variables_json, &patch, &at, err);
    if (rc != WF_OK)
        return rc;
    if (at.transition_id != NULL)
        return wf_runtime_complete_and_end(ctx, at.task_id, at.instance_id, at.root_id, patch, idem,
                                           out, err);
    return wf_referral_end_at(ctx, &at, patch, idem, out, err);
}

wf_code
wf_instances_cancel(const wf_runtime_ctx *ctx, const char *instance_id, const char *reason,
                    bool compensate, wf_uow_idem *idem, wf_instance_row *out, wf_error *err)
{
    bool done = false;
    wf_code rc = WF_OK;
    if (compensate)
        rc = wf_runtime_cancel_compensate(ctx, instance_id, reason, idem, out, &done, err);
    if (rc == WF_OK && !done)
        rc = wf_runtime_cancel_call_child(ctx, instance_id, reason, idem, out, &done, err);
    if (rc == WF_OK && !done)
        rc = wf_referral_cancel(&ctx->ref, instance_id, reason, idem, out, err);
    return rc;
}

wf_code
wf_instances_get(const wf_ref_ctx *ctx, const char *instance_id, wf_instance_view *out,
                 wf_error *err)
{
    out->buffered = NULL;
    out->n_buffered = 0;
    wf_code rc = wf_referral_get_instance(ctx, instance_id, &out->tree, err);
    if (rc == WF_OK)
        rc = wf_runtime_instance_view(ctx, instance_id, &out->net, err);
    if (rc == WF_OK)
        rc = wf_runtime_buffered_signals(ctx, &out->tree.instance, &out->buffered, &out->n_buffered,
                                         err);
    return rc;
}
