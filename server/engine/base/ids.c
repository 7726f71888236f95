/*
 * ids: the one check of an id argument (see ids.h).
 */
#include "ids.h"

#include "wf_id.h"

wf_code
wf_ids_check(const wf_ref_ctx *ctx, wf_id_kind kind, const char *field, const char *id,
             wf_error *err)
{
    if (id == NULL || id[0] == '\0') {
        if (ctx != NULL && ctx->violation != NULL)
            ctx->violation(ctx->violation_arg, field, NULL, "is required");
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "%s is required", field);
    }
    switch (kind) {
    case WF_ID_INSTANCE:
        if (!wf_uuid_valid(id))
            return wf_error_set(err, WF_E_INSTANCE_NOT_FOUND, "instance \"%.64s\" does not exist",
                                id);
        break;
    case WF_ID_TASK:
        if (!wf_uuid_valid(id))
            return wf_error_set(err, WF_E_TASK_NOT_FOUND, "task \"%.64s\" does not exist", id);
        break;
    case WF_ID_JOB_KEY:
        if (!wf_id_job_key_valid(id))
            return wf_error_set(err, WF_E_JOB_NOT_FOUND, "no job has key \"%.128s\"", id);
        break;
    case WF_ID_JOB:
        if (!wf_uuid_valid(id))
            return wf_error_set(err, WF_E_JOB_NOT_FOUND, "no job has id \"%.64s\"", id);
        break;
    case WF_ID_BATCH:
        if (!wf_uuid_valid(id))
            return wf_error_set(err, WF_E_BATCH_OPERATION_NOT_FOUND,
                                "batch operation \"%.64s\" does not exist", id);
        break;
    }
    return WF_OK;
}
