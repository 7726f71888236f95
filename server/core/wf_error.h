/*
 * wf_error: the one error vocabulary of the service.
 *
 * Every failure anywhere in the server is one wf_code. Each code is also a
 * stable machine-readable reason (wf_code_reason) that clients see in
 * google.rpc.ErrorInfo. The mapping to gRPC status codes lives in one place,
 * rpc/rpc_status.c; nothing below the rpc layer knows about gRPC.
 *
 * A wf_error carries the code and a client-safe message in a fixed buffer, so
 * no error path allocates. Messages follow PostgreSQL's style: lower case, no
 * final period, name the object ("task \"t-1\" is not open"). Library or SQL
 * text never goes into msg; log it instead.
 */
#ifndef WF_ERROR_H
#define WF_ERROR_H

#include <stddef.h>

typedef enum wf_code {
    WF_OK = 0,

    /* NOT_FOUND */
    WF_E_DEFINITION_NOT_FOUND,
    WF_E_INSTANCE_NOT_FOUND,
    WF_E_TASK_NOT_FOUND,
    WF_E_JOB_NOT_FOUND,
    /* The id names no schedule of the tenant (another tenant's included). */
    WF_E_SCHEDULE_NOT_FOUND,
    /* The name names no resource of the tenant (another tenant's included). */
    WF_E_RESOURCE_NOT_FOUND,

    /* INVALID_ARGUMENT */
    WF_E_INVALID_ARGUMENT,
    WF_E_INVALID_JSON,
    WF_E_DEFINITION_INVALID,
    WF_E_ACTOR_MISSING,
    /* CompleteJob next_step names no step of the instance's definition. */
    WF_E_UNKNOWN_STEP,
    /* ModifyInstance names a place its instance's net does not have. */
    WF_E_UNKNOWN_PLACE,
    /* A schedule's cron expression does not parse (5 fields, or @hourly,
     * @daily, @weekly, @monthly, @yearly). */
    WF_E_INVALID_CRON,
    /* A schedule names a time zone the IANA database does not know. */
    WF_E_UNKNOWN_TIME_ZONE,
    /* Any other fault of a schedule's spec or policy (interval, jitter,
     * dates, window, overlap). */
    WF_E_INVALID_SCHEDULE,
    /* SendSignal asks to await a result of a signal whose target is an
     * aggregate, which may reach many instances. */
    WF_E_AWAIT_NEEDS_ONE_INSTANCE,
    /* BackfillSchedule over a range of more fire times than one call may
     * run (WF_SCHEDULE_BACKFILL_MAX). */
    WF_E_BACKFILL_TOO_LARGE,
    /* A schedule's recurrence rule has no occurrence within its search
     * horizon (FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30). */
    WF_E_SCHEDULE_RRULE_NEVER_FIRES,

    /* FAILED_PRECONDITION */
    WF_E_TASK_NOT_OPEN,
    WF_E_TASK_ALREADY_CLAIMED,
    WF_E_TASK_NOT_CLAIMED,
    WF_E_INSTANCE_NOT_RUNNING,
    WF_E_DEFINITION_NOT_ACTIVE,
    WF_E_NO_ARC_MATCHED,
    WF_E_JOB_LEASE_LOST,
    WF_E_EMPTY_GROUP,
    WF_E_REQUEST_ID_REUSED,
    /* A deploy of one kind onto a key that holds versions of another kind. */
    WF_E_DEFINITION_KIND_CONFLICT,
    /* A task operation (or AssignTo) in an instance tree whose root is
     * SUSPENDED. */
    WF_E_INSTANCE_SUSPENDED,
    /* SuspendInstance or ResumeInstance of a child instance. */
    WF_E_INSTANCE_NOT_ROOT,
    /* ModifyInstance takes tokens a place (or a token id) does not hold. */
    WF_E_TOKENS_NOT_HELD,
    /* ModifyInstance would leave the instance without a token and with
     * nothing enabled, and allow_empty is false. */
    WF_E_INSTANCE_WOULD_BE_EMPTY,
    /* ModifyInstance would leave tokens from which no transition is
     * enabled (a deadlock). */
    WF_E_MODIFICATION_DEADLOCKS,
    /* ModifyInstance of an instance without a net (AD_HOC). */
    WF_E_NOT_A_NET_INSTANCE,
    /* MigrateInstance found problems (each listed in google.rpc.BadRequest):
     * the instance cannot move to the target version as asked. */
    WF_E_MIGRATION_INVALID,
    /* Batch operations over instances (StartBatchOperation and the
     * rest): the id names no batch operation of the tenant (NOT_FOUND);
     * CancelBatchOperation of one that has already ended
     * (FAILED_PRECONDITION). */
    WF_E_BATCH_OPERATION_NOT_FOUND,
    WF_E_BATCH_OPERATION_NOT_RUNNING,
    /* CreateSchedule with an id the tenant already uses. */
    WF_E_SCHEDULE_ALREADY_EXISTS,
    /* A for-each transition's expression gave no array, an empty one, or
     * more items than WF_FOREACH_MAX_ITEMS (FAILED_PRECONDITION; an
     * incident when the transition is enabled by a later step). */
    WF_E_FOREACH_NOT_ARRAY,
    WF_E_FOREACH_EMPTY,
    WF_E_FOREACH_TOO_MANY,

    /* PERMISSION_DENIED */
    WF_E_NOT_ASSIGNEE,
    WF_E_NOT_GROUP_MEMBER,
    WF_E_TENANT_FORBIDDEN,

    /* UNAUTHENTICATED */
    WF_E_API_KEY_MISSING,
    WF_E_API_KEY_INVALID,

    /* UNAVAILABLE: the store cannot be reached, the pool is exhausted, or the
     * server is shutting down. Always safe to retry. */
    WF_E_STORE_UNAVAILABLE,
    /* At startup: the database schema is at a migration newer than this
     * binary knows (a newer workflowd migrated it). Never answered to a
     * call: the server does not start. */
    WF_E_SCHEMA_TOO_NEW,

    /* ABORTED: a serialization failure or deadlock; safe to retry. */
    WF_E_CONFLICT,

    /* RESOURCE_EXHAUSTED */
    WF_E_TOO_LARGE,
    /* A mutation would make the variables of an instance tree larger than
     * WF_MAX_VARIABLES_BYTES, or a job's variables cannot be sent in an
     * answer. Nothing was changed. */
    WF_E_VARIABLES_TOO_LARGE,
    /* An expression ran out of its time or memory budget, or crashed the
     * process evaluating it (see expr/expr.h). */
    WF_E_EXPRESSION_LIMIT,
    /* Memory ran out: malloc failed, or a call's arena reached its cap
     * (WF_ARENA_MAX_BYTES). Nothing was changed; a retry may succeed. */
    WF_E_NOMEM,
    /* The server is saturated: more calls wait for a thread than
     * WF_MAX_QUEUED_CALLS allows. Nothing was done; retry after the
     * RetryInfo delay. */
    WF_E_OVERLOADED,
    /* A bulkhead is full: as many calls as its limit already do that
     * expensive kind of work (a diagram layout, a compile, a slow
     * expression; wf_bulkhead.h). Nothing was done; retry after the
     * RetryInfo delay. */
    WF_E_BULKHEAD_FULL,

    /* DEADLINE_EXCEEDED: the call's deadline passed (or statement_timeout). */
    WF_E_DEADLINE_EXCEEDED,

    /* CANCELLED: the client went away. */
    WF_E_CANCELLED,

    /* UNIMPLEMENTED: method not known or capability not built. */
    WF_E_UNIMPLEMENTED,

    /* INTERNAL: bugs only. */
    WF_E_INTERNAL,

    WF_CODE_COUNT_ /* number of codes; keep last */
} wf_code;

typedef struct wf_error {
    wf_code code;
    char msg[256]; /* client-safe message; empty on WF_OK */
} wf_error;

/* Sets *err (when err is non-NULL) and returns code, so callers may write
 *     return wf_error_set(err, WF_E_TASK_NOT_FOUND, "task \"%s\" does not exist", id);
 * The message is truncated to fit; it never allocates. */
wf_code wf_error_set(wf_error *err, wf_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Sets *err to WF_E_NOMEM with the one message for it, and returns
 * WF_E_NOMEM: every "out of memory" path goes through here. */
wf_code wf_error_nomem(wf_error *err);

/* Clears *err to WF_OK with an empty message. */
void wf_error_clear(wf_error *err);

/* The stable reason string of a code, e.g. "TASK_NOT_OPEN"; "OK" for WF_OK.
 * Static storage; never NULL. */
const char *wf_code_reason(wf_code code);

/* True for codes a client may retry unchanged (UNAVAILABLE, ABORTED). */
int wf_code_is_retryable(wf_code code);

/* One id an error message names: key is a lowerCamelCase name (static
 * storage), value points into the message, len bytes long. */
typedef struct wf_error_id {
    const char *key;
    const char *value;
    size_t len;
} wf_error_id;

/* The ids msg names, in order, at most max of them, each key once (the
 * first occurrence wins); returns how many were stored in out. Messages
 * name an object by its kind and its quoted id, as in
 * `task "t-1" is not open`; the kinds known here are task (taskId),
 * instance (instanceId), definition (definitionKey), job key / job has key
 * / job with key (jobKey), job (jobId), transition (transitionId), place
 * (placeId), work item (workItemId), group (groupId), user (userId),
 * request id (requestId) and bulkhead (bulkhead: the full class). The rpc layer sends them in
 * ErrorInfo.metadata, so a new error message that follows this style gets its ids there. */
size_t wf_error_ids(const char *msg, wf_error_id *out, size_t max);

#endif /* WF_ERROR_H */
