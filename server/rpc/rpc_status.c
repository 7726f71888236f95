/*
 * rpc_status: the one mapping from wf_code to grpc_status_code, and the
 * packing of the rich error trailer.
 */
#include "rpc_status.h"

#include <string.h>

#include "google/protobuf/any.pb-c.h"
#include "google/rpc/error_details.pb-c.h"
#include "google/rpc/status.pb-c.h"
#include "wf_grpc.h"

const char *
wf_rpc_code_name(int code)
{
    return wf_grpc_code_name(code);
}

grpc_status_code
wf_rpc_status_code(wf_code code)
{
    switch (code) {
    case WF_OK:
        return GRPC_STATUS_OK;
    case WF_E_DEFINITION_NOT_FOUND:
    case WF_E_INSTANCE_NOT_FOUND:
    case WF_E_TASK_NOT_FOUND:
    case WF_E_JOB_NOT_FOUND:
    case WF_E_BATCH_OPERATION_NOT_FOUND:
    case WF_E_SCHEDULE_NOT_FOUND:
    case WF_E_RESOURCE_NOT_FOUND:
        return GRPC_STATUS_NOT_FOUND;
    case WF_E_INVALID_ARGUMENT:
    case WF_E_INVALID_JSON:
    case WF_E_DEFINITION_INVALID:
    case WF_E_ACTOR_MISSING:
    case WF_E_UNKNOWN_STEP:
    case WF_E_UNKNOWN_PLACE:
    case WF_E_INVALID_CRON:
    case WF_E_UNKNOWN_TIME_ZONE:
    case WF_E_INVALID_SCHEDULE:
    case WF_E_AWAIT_NEEDS_ONE_INSTANCE:
    case WF_E_BACKFILL_TOO_LARGE:
    case WF_E_SCHEDULE_RRULE_NEVER_FIRES:
        return GRPC_STATUS_INVALID_ARGUMENT;
    case WF_E_TASK_NOT_OPEN:
    case WF_E_TASK_ALREADY_CLAIMED:
    case WF_E_TASK_NOT_CLAIMED:
    case WF_E_INSTANCE_NOT_RUNNING:
    case WF_E_DEFINITION_NOT_ACTIVE:
    case WF_E_NO_ARC_MATCHED:
    case WF_E_JOB_LEASE_LOST:
    case WF_E_EMPTY_GROUP:
    case WF_E_REQUEST_ID_REUSED:
    case WF_E_DEFINITION_KIND_CONFLICT:
    case WF_E_INSTANCE_SUSPENDED:
    case WF_E_INSTANCE_NOT_ROOT:
    case WF_E_TOKENS_NOT_HELD:
    case WF_E_INSTANCE_WOULD_BE_EMPTY:
    case WF_E_MODIFICATION_DEADLOCKS:
    case WF_E_NOT_A_NET_INSTANCE:
    case WF_E_SCHEMA_TOO_NEW:
    case WF_E_MIGRATION_INVALID:
    case WF_E_BATCH_OPERATION_NOT_RUNNING:
    case WF_E_FOREACH_NOT_ARRAY:
    case WF_E_FOREACH_EMPTY:
    case WF_E_FOREACH_TOO_MANY:
        return GRPC_STATUS_FAILED_PRECONDITION;
    case WF_E_SCHEDULE_ALREADY_EXISTS:
        return GRPC_STATUS_ALREADY_EXISTS;
    case WF_E_NOT_ASSIGNEE:
    case WF_E_NOT_GROUP_MEMBER:
    case WF_E_TENANT_FORBIDDEN:
        return GRPC_STATUS_PERMISSION_DENIED;
    case WF_E_API_KEY_MISSING:
    case WF_E_API_KEY_INVALID:
        return GRPC_STATUS_UNAUTHENTICATED;
    case WF_E_STORE_UNAVAILABLE:
        return GRPC_STATUS_UNAVAILABLE;
    case WF_E_CONFLICT:
        return GRPC_STATUS_ABORTED;
    case WF_E_TOO_LARGE:
    case WF_E_VARIABLES_TOO_LARGE:
    case WF_E_EXPRESSION_LIMIT:
    case WF_E_NOMEM:
    case WF_E_OVERLOADED:
    case WF_E_BULKHEAD_FULL:
        return GRPC_STATUS_RESOURCE_EXHAUSTED;
    case WF_E_DEADLINE_EXCEEDED:
        return GRPC_STATUS_DEADLINE_EXCEEDED;
    case WF_E_CANCELLED:
        return GRPC_STATUS_CANCELLED;
    case WF_E_UNIMPLEMENTED:
        return GRPC_STATUS_UNIMPLEMENTED;
    case WF_E_INTERNAL:
    case WF_CODE_COUNT_:
        break;
    }
    return GRPC_STATUS_INTERNAL;
}

/* Packs msg into an Any with the given type name, in the arena. */
static Google__Protobuf__Any *
pack_any(wf_arena *arena, const char *type, const ProtobufCMessage *msg)
{
    Google__Protobuf__Any *any = wf_arena_alloc(arena, sizeof *any);
    size_t n = protobuf_c_message_get_packed_size(msg);
    uint8_t *buf = wf_arena_alloc(arena, n);
    if (any == NULL || buf == NULL)
        return NULL;
    google__protobuf__any__init(any);
    any->type_url = (char *)type;
    any->value.data = buf;
    any->value.len = protobuf_c_message_pack(msg, buf);
    return any;
}

/* Bounds of the BadRequest in the trailer. grpc core clients refuse
 * metadata above 8 KB by default, and a refused trailer reaches them as
 * RESOURCE_EXHAUSTED instead of the validation error; a long AssignTo chain
 * or a large broken definition has many violations with long paths. */
#define MAX_VIOLATIONS 20
#define MAX_DETAIL_BYTES 4096
#define MAX_VIOLATION_TEXT 240
#define MAX_METADATA 8

/* s cut to at most max bytes on a UTF-8 character boundary, in the arena. */
static char *
cut(wf_arena *arena, const char *s, size_t max)
{
    if (s == NULL)
        return "";
    size_t n = strlen(s);
    if (n <= max)
        return (char *)s;
    while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
        max--;
    return wf_arena_printf(arena, "%.*s...", (int)max, s);
}

/* Every allocation is checked where it is made, not through the arena's
 * failure flag: the trailer of an out-of-memory error is built in the call's
 * arena right after one of its allocations failed, and must still go out. */
size_t
wf_rpc_status_details(wf_arena *arena, wf_code code, const char *message,
                      const wf_violation *violations, size_t nviolations, uint8_t **out)
{
    Google__Rpc__ErrorInfo info = GOOGLE__RPC__ERROR_INFO__INIT;
    info.reason = (char *)wf_code_reason(code);
    info.domain = WF_ERROR_DOMAIN;
    /* metadata: the ids the message names ({"taskId": "..."}). */
    wf_error_id ids[MAX_METADATA];
    size_t nids = wf_error_ids(message, ids, MAX_METADATA);
    Google__Rpc__ErrorInfo__MetadataEntry *md = wf_arena_calloc(arena, nids + 1, sizeof *md);
    Google__Rpc__ErrorInfo__MetadataEntry **mdp = wf_arena_calloc(arena, nids + 1, sizeof *mdp);
    if (md == NULL || mdp == NULL)
        return 0;
    for (size_t i = 0; i < nids; i++) {
        google__rpc__error_info__metadata_entry__init(&md[i]);
        md[i].key = (char *)ids[i].key;
        md[i].value = wf_arena_printf(arena, "%.*s", (int)ids[i].len, ids[i].value);
        if (md[i].value == NULL)
            return 0;
        mdp[i] = &md[i];
    }
    info.n_metadata = nids;
    info.metadata = mdp;

    Google__Protobuf__Any *details[3];
    size_t ndetails = 0;
    details[ndetails] = pack_any(arena, "type.googleapis.com/google.rpc.ErrorInfo", &info.base);
    if (details[ndetails] == NULL)
        return 0;
    ndetails++;

    if (nviolations > 0) {
        Google__Rpc__BadRequest br = GOOGLE__RPC__BAD_REQUEST__INIT;
        Google__Rpc__BadRequest__FieldViolation *fv =
            wf_arena_calloc(arena, MAX_VIOLATIONS, sizeof *fv);
        Google__Rpc__BadRequest__FieldViolation **fvp =
            wf_arena_calloc(arena, MAX_VIOLATIONS, sizeof *fvp);
        if (fv == NULL || fvp == NULL)
            return 0;
        /* The first violations while they fit, keeping room for the
         * ErrorInfo, the message and a last entry counting the rest. */
        size_t budget = MAX_DETAIL_BYTES - 512 - (message != NULL ? strlen(message) : 0);
        size_t kept = 0, bytes = 0;
        for (size_t i = 0; i < nviolations && kept < MAX_VIOLATIONS - 1; i++) {
            google__rpc__bad_request__field_violation__init(&fv[kept]);
            fv[kept].field = cut(arena, violations[i].field, MAX_VIOLATION_TEXT);
            fv[kept].description = cut(arena, violations[i].description, MAX_VIOLATION_TEXT);
            /* A violation without a code of its own has the error's. */
            fv[kept].reason =
                (char *)(violations[i].reason != NULL ? violations[i].reason : info.reason);
            if (fv[kept].field == NULL || fv[kept].description == NULL)
                return 0;
            size_t n = protobuf_c_message_get_packed_size(&fv[kept].base) + 4;
            if (bytes + n > budget)
                break;
            bytes += n;
            fvp[kept] = &fv[kept];
            kept++;
        }
        if (kept < nviolations) {
            size_t left = nviolations - kept;
            google__rpc__bad_request__field_violation__init(&fv[kept]);
            fv[kept].field = cut(arena, violations[kept].field, MAX_VIOLATION_TEXT);
            fv[kept].description =
                wf_arena_printf(arena, "%zu more violation%s, from this field on, not listed", left,
                                left == 1 ? "" : "s");
            fv[kept].reason = info.reason;
            if (fv[kept].field == NULL || fv[kept].description == NULL)
                return 0;
            fvp[kept] = &fv[kept];
            kept++;
        }
        br.n_field_violations = kept;
        br.field_violations = fvp;
        details[ndetails] = pack_any(arena, "type.googleapis.com/google.rpc.BadRequest", &br.base);
        if (details[ndetails] == NULL)
            return 0;
        ndetails++;
    }

    if (code == WF_E_OVERLOADED || code == WF_E_BULKHEAD_FULL) {
        /* Refused before the work: a client may retry after the delay. */
        int ms = code == WF_E_OVERLOADED ? WF_RPC_RETRY_DELAY_MS : WF_RPC_BULKHEAD_RETRY_DELAY_MS;
        Google__Protobuf__Duration delay = GOOGLE__PROTOBUF__DURATION__INIT;
        delay.seconds = ms / 1000;
        delay.nanos = (ms % 1000) * 1000000;
        Google__Rpc__RetryInfo ri = GOOGLE__RPC__RETRY_INFO__INIT;
        ri.retry_delay = &delay;
        details[ndetails] = pack_any(arena, "type.googleapis.com/google.rpc.RetryInfo", &ri.base);
        if (details[ndetails] == NULL)
            return 0;
        ndetails++;
    }

    Google__Rpc__Status st = GOOGLE__RPC__STATUS__INIT;
    st.code = (int32_t)wf_rpc_status_code(code);
    st.message = (char *)message;
    st.n_details = ndetails;
    st.details = details;
    size_t n = google__rpc__status__get_packed_size(&st);
    *out = wf_arena_alloc(arena, n);
    if (*out == NULL)
        return 0;
    return google__rpc__status__pack(&st, *out);
}
