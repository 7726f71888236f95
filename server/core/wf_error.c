/*
 * wf_error: error codes, their stable reasons and the fixed-buffer setter.
 */
#include "wf_error.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Indexed by wf_code; a designated initializer per entry keeps the table in
 * step with the enum (a missing entry is NULL and caught by the unit test). */
static const char *const reasons[WF_CODE_COUNT_] = {
    [WF_OK] = "OK",
    [WF_E_DEFINITION_NOT_FOUND] = "DEFINITION_NOT_FOUND",
    [WF_E_INSTANCE_NOT_FOUND] = "INSTANCE_NOT_FOUND",
    [WF_E_TASK_NOT_FOUND] = "TASK_NOT_FOUND",
    [WF_E_JOB_NOT_FOUND] = "JOB_NOT_FOUND",
    [WF_E_INVALID_ARGUMENT] = "INVALID_ARGUMENT",
    [WF_E_INVALID_JSON] = "INVALID_JSON",
    [WF_E_DEFINITION_INVALID] = "DEFINITION_INVALID",
    [WF_E_ACTOR_MISSING] = "ACTOR_MISSING",
    [WF_E_UNKNOWN_STEP] = "UNKNOWN_STEP",
    [WF_E_UNKNOWN_PLACE] = "UNKNOWN_PLACE",
    [WF_E_TASK_NOT_OPEN] = "TASK_NOT_OPEN",
    [WF_E_TASK_ALREADY_CLAIMED] = "TASK_ALREADY_CLAIMED",
    [WF_E_TASK_NOT_CLAIMED] = "TASK_NOT_CLAIMED",
    [WF_E_INSTANCE_NOT_RUNNING] = "INSTANCE_NOT_RUNNING",
    [WF_E_DEFINITION_NOT_ACTIVE] = "DEFINITION_NOT_ACTIVE",
    [WF_E_NO_ARC_MATCHED] = "NO_ARC_MATCHED",
    [WF_E_JOB_LEASE_LOST] = "JOB_LEASE_LOST",
    [WF_E_EMPTY_GROUP] = "EMPTY_GROUP",
    [WF_E_REQUEST_ID_REUSED] = "REQUEST_ID_REUSED",
    [WF_E_DEFINITION_KIND_CONFLICT] = "DEFINITION_KIND_CONFLICT",
    [WF_E_INSTANCE_SUSPENDED] = "INSTANCE_SUSPENDED",
    [WF_E_INSTANCE_NOT_ROOT] = "INSTANCE_NOT_ROOT",
    [WF_E_TOKENS_NOT_HELD] = "TOKENS_NOT_HELD",
    [WF_E_INSTANCE_WOULD_BE_EMPTY] = "INSTANCE_WOULD_BE_EMPTY",
    [WF_E_MODIFICATION_DEADLOCKS] = "MODIFICATION_DEADLOCKS",
    [WF_E_NOT_A_NET_INSTANCE] = "NOT_A_NET_INSTANCE",
    [WF_E_FOREACH_NOT_ARRAY] = "FOREACH_NOT_ARRAY",
    [WF_E_FOREACH_EMPTY] = "FOREACH_EMPTY",
    [WF_E_FOREACH_TOO_MANY] = "FOREACH_TOO_MANY",
    [WF_E_MIGRATION_INVALID] = "MIGRATION_INVALID",
    [WF_E_BATCH_OPERATION_NOT_FOUND] = "BATCH_OPERATION_NOT_FOUND",
    [WF_E_BATCH_OPERATION_NOT_RUNNING] = "BATCH_OPERATION_NOT_RUNNING",
    [WF_E_SCHEDULE_NOT_FOUND] = "SCHEDULE_NOT_FOUND",
    [WF_E_SCHEDULE_ALREADY_EXISTS] = "SCHEDULE_ALREADY_EXISTS",
    [WF_E_RESOURCE_NOT_FOUND] = "RESOURCE_NOT_FOUND",
    [WF_E_INVALID_CRON] = "INVALID_CRON",
    [WF_E_UNKNOWN_TIME_ZONE] = "UNKNOWN_TIME_ZONE",
    [WF_E_INVALID_SCHEDULE] = "INVALID_SCHEDULE",
    [WF_E_AWAIT_NEEDS_ONE_INSTANCE] = "AWAIT_NEEDS_ONE_INSTANCE",
    [WF_E_BACKFILL_TOO_LARGE] = "BACKFILL_TOO_LARGE",
    [WF_E_SCHEDULE_RRULE_NEVER_FIRES] = "SCHEDULE_RRULE_NEVER_FIRES",
    [WF_E_NOT_ASSIGNEE] = "NOT_ASSIGNEE",
    [WF_E_NOT_GROUP_MEMBER] = "NOT_GROUP_MEMBER",
    [WF_E_TENANT_FORBIDDEN] = "TENANT_FORBIDDEN",
    [WF_E_API_KEY_MISSING] = "API_KEY_MISSING",
    [WF_E_API_KEY_INVALID] = "API_KEY_INVALID",
    [WF_E_STORE_UNAVAILABLE] = "STORE_UNAVAILABLE",
    [WF_E_SCHEMA_TOO_NEW] = "SCHEMA_TOO_NEW",
    [WF_E_CONFLICT] = "CONFLICT",
    [WF_E_TOO_LARGE] = "TOO_LARGE",
    [WF_E_VARIABLES_TOO_LARGE] = "VARIABLES_TOO_LARGE",
    [WF_E_EXPRESSION_LIMIT] = "EXPRESSION_LIMIT",
    [WF_E_NOMEM] = "OUT_OF_MEMORY",
    [WF_E_OVERLOADED] = "OVERLOADED",
    [WF_E_BULKHEAD_FULL] = "BULKHEAD_FULL",
    [WF_E_DEADLINE_EXCEEDED] = "DEADLINE_EXCEEDED",
    [WF_E_CANCELLED] = "CANCELLED",
    [WF_E_UNIMPLEMENTED] = "UNIMPLEMENTED",
    [WF_E_INTERNAL] = "INTERNAL",
};

wf_code
wf_error_set(wf_error *err, wf_code code, const char *fmt, ...)
{
    if (err == NULL)
        return code;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    if (n < 0)
        err->msg[0] = '\0';
    return code;
}

wf_code
wf_error_nomem(wf_error *err)
{
    return wf_error_set(err, WF_E_NOMEM, "out of memory");
}

void
wf_error_clear(wf_error *err)
{
    if (err == NULL)
        return;
    err->code = WF_OK;
    err->msg[0] = '\0';
}

const char *
wf_code_reason(wf_code code)
{
    if ((int)code < 0 || code >= WF_CODE_COUNT_ || reasons[code] == NULL)
        return "INTERNAL";
    return reasons[code];
}

int
wf_code_is_retryable(wf_code code)
{
    return code == WF_E_STORE_UNAVAILABLE || code == WF_E_CONFLICT;
}

/* Kinds of objects a message names, longest first where one ends another
 * ("job key" before "key", "work item" before "item"). */
static const struct {
    const char *kind;
    const char *key;
} id_kinds[] = {
    {"job with key", "jobKey"},
    {"job has key", "jobKey"},
    {"job key", "jobKey"},
    {"work item", "workItemId"},
    {"request id", "requestId"},
    {"batch operation", "batchOperationId"},
    {"resource", "resourceName"},
    {"bulkhead", "bulkhead"},
    {"task", "taskId"},
    {"instance", "instanceId"},
    {"definition", "definitionKey"},
    {"job", "jobId"},
    {"transition", "transitionId"},
    {"place", "placeId"},
    {"group", "groupId"},
    {"user", "userId"},
};

/* The key of the kind that ends msg[0..end) as a whole word, or NULL. */
static const char *
kind_before(const char *msg, size_t end)
{
    for (size_t k = 0; k < sizeof id_kinds / sizeof id_kinds[0]; k++) {
        size_t n = strlen(id_kinds[k].kind);
        if (n > end || memcmp(msg + end - n, id_kinds[k].kind, n) != 0)
            continue;
        if (end == n || msg[end - n - 1] == ' ' || msg[end - n - 1] == '(')
            return id_kinds[k].key;
    }
    return NULL;
}

size_t
wf_error_ids(const char *msg, wf_error_id *out, size_t max)
{
    size_t n = 0;
    if (msg == NULL)
        return 0;
    for (const char *q = strchr(msg, '"'); q != NULL && n < max;) {
        const char *close = strchr(q + 1, '"');
        if (close == NULL)
            break;
        /* An opening quote follows "<kind> ". */
        const char *key = q > msg && q[-1] == ' ' ? kind_before(msg, (size_t)(q - msg) - 1) : NULL;
        bool seen = false;
        for (size_t i = 0; i < n && key != NULL; i++)
            seen |= strcmp(out[i].key, key) == 0;
        if (key != NULL && !seen && close > q + 1)
            out[n++] = (wf_error_id){key, q + 1, (size_t)(close - q - 1)};
        q = strchr(close + 1, '"');
    }
    return n;
}
