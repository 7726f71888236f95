/*
 * rpc_status: the one mapping from wf_code to grpc_status_code, and the
 * packing of the rich error trailer.
 */
#include "rpc_status.h"

#include "google/protobuf/any.pb-c.h"
#include "google/rpc/error_details.pb-c.h"
#include "google/rpc/status.pb-c.h"

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
        return GRPC_STATUS_NOT_FOUND;
    case WF_E_INVALID_ARGUMENT:
    case WF_E_INVALID_JSON:
    case WF_E_DEFINITION_INVALID:
    case WF_E_ACTOR_MISSING:
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
        return GRPC_STATUS_FAILED_PRECONDITION;
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

size_t
wf_rpc_status_details(wf_arena *arena, wf_code code, const char *message,
                      const wf_violation *violations, size_t nviolations, uint8_t **out)
{
    Google__Rpc__ErrorInfo info = GOOGLE__RPC__ERROR_INFO__INIT;
    info.reason = (char *)wf_code_reason(code);
    info.domain = WF_ERROR_DOMAIN;

    Google__Protobuf__Any *details[2];
    size_t ndetails = 0;
    details[ndetails] = pack_any(arena, "type.googleapis.com/google.rpc.ErrorInfo",
                                 &info.base);
    if (details[ndetails] == NULL)
        return 0;
    ndetails++;

    if (nviolations > 0) {
        Google__Rpc__BadRequest br = GOOGLE__RPC__BAD_REQUEST__INIT;
        Google__Rpc__BadRequest__FieldViolation *fv =
            wf_arena_calloc(arena, nviolations, sizeof *fv);
        Google__Rpc__BadRequest__FieldViolation **fvp =
            wf_arena_calloc(arena, nviolations, sizeof *fvp);
        if (fv == NULL || fvp == NULL)
            return 0;
        for (size_t i = 0; i < nviolations; i++) {
            google__rpc__bad_request__field_violation__init(&fv[i]);
            fv[i].field = (char *)violations[i].field;
            fv[i].description = (char *)violations[i].description;
            fvp[i] = &fv[i];
        }
        br.n_field_violations = nviolations;
        br.field_violations = fvp;
        details[ndetails] = pack_any(arena, "type.googleapis.com/google.rpc.BadRequest", &br.base);
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
