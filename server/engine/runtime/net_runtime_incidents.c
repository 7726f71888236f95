/*
 * net_runtime_incidents: ListIncidents, the open incidents of a tenant
 * (Zeebe's incidents).
 *
 * An instance stops FAILED on one incident at a time, so the incident is
 * kept on the instance row (wf_runtime__fail_instance writes its code,
 * transition, time and attempts in the unit of work that fails the
 * instance) and is open exactly while the instance is FAILED: whatever
 * moves it out of FAILED resolves it (wf_work_changes clears the code and
 * time). The listing is the store's FAILED rows in (incident_at, id)
 * order, keyset-paged.
 */
#include "net_runtime_int.h"

#include <string.h>

#define PAGE_MAX 500

/* Every code an incident can carry (Incident.code in the proto). */
static const char *const codes[] = {
    "JOB_FAILED",
    "COMPENSATION_FAILED",
    "STEP_TIMED_OUT",
    "DEADLOCKED",
    "NO_ARC_MATCHED",
    "EXPRESSION_LIMIT",
    "INVALID_ARGUMENT",
    "INVALID_JSON",
    "DEFINITION_INVALID",
    "TOO_LARGE",
    "UNKNOWN",
    "FOREACH_NOT_ARRAY",
    "FOREACH_EMPTY",
    "FOREACH_TOO_MANY",
    /* CALL transitions (net_runtime_call.c) */
    "CALL_CHILD_FAILED",
    "CALL_CHILD_CANCELLED",
    "CALL_CHILD_COMPENSATED",
    "CALL_DEPTH_EXCEEDED",
    "CALL_DEFINITION_NOT_FOUND",
    "CALL_START_FAILED",
    "CALL_RETURN_FAILED",
};

bool
wf_runtime_incident_code_known(const char *code)
{
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (strcmp(code, codes[i]) == 0)
            return true;
    return false;
}

wf_code
wf_runtime_list_incidents(const wf_ref_ctx *ctx, const wf_runtime_incident_query *q,
                          wf_runtime_incident **out, size_t *n, char **next_cursor, wf_error *err)
{
    bool by_code = q->code != NULL && q->code[0] != '\0';
    if (by_code && !wf_runtime_incident_code_known(q->code))
        return wf_work_invalid(ctx, "code", "is not a known incident code", err);
    if (q->page_size < 0)
        return wf_work_invalid(ctx, "page_size", "must not be negative", err);
    size_t size = q->page_size == 0         ? 50
                  : q->page_size > PAGE_MAX ? PAGE_MAX
                                            : (size_t)q->page_size;
    wf_incident_filter f = {
        .definition_key =
            q->definition_key != NULL && q->definition_key[0] != '\0' ? q->definition_key : NULL,
        .code = by_code ? q->code : NULL,
    };
    wf_store_ctx sc = wf_work_store_ctx(ctx);
    wf_instance_row *rows = NULL;
    size_t k = 0;
    *next_cursor = NULL;
    wf_code rc = wf_store_list_incidents(
        ctx->store, &sc, &f, size, q->cursor != NULL && q->cursor[0] != '\0' ? q->cursor : NULL,
        &rows, &k, next_cursor, err);
    if (rc == WF_E_INVALID_ARGUMENT)
        return wf_work_invalid(ctx, "page_token", "is malformed", err);
    if (rc != WF_OK)
        return rc;
    wf_runtime_incident *v = wf_arena_calloc(ctx->arena, k + 1, sizeof *v);
    if (v == NULL)
        return wf_error_nomem(err);
    for (size_t i = 0; i < k; i++) {
        const wf_instance_row *r = &rows[i];
        v[i] = (wf_runtime_incident){
            .instance_id = r->id,
            .root_id = r->root_id,
            .definition_key = r->definition_key,
            .definition_version = r->definition_version,
            .transition_id = r->incident_transition_id,
            .code = r->incident_code != NULL ? r->incident_code : "UNKNOWN",
            .message = r->last_error,
            .since = r->incident_at != 0 ? r->incident_at : r->updated_at,
            .attempts = r->incident_attempts,
        };
    }
    *out = v;
    *n = k;
    return WF_OK;
}
