/*
 * app: helpers shared by every handler (readiness, violations).
 */
#include "handler.h"
#include "handlers.h"

bool
wf_app_ready(wf_app *app)
{
    (void)app;
    return true;
}

wf_code
wf_call_add_violation(wf_call *call, const char *field, const char *description, wf_error *err)
{
    size_t n = call->nviolations;
    wf_violation *v = wf_arena_alloc(call->arena, (n + 1) * sizeof *v);
    if (v == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "out of memory");
    for (size_t i = 0; i < n; i++)
        v[i] = call->violations[i];
    v[n].field = wf_arena_strdup(call->arena, field);
    v[n].description = wf_arena_strdup(call->arena, description);
    call->violations = v;
    call->nviolations = n + 1;
    return WF_OK;
}

wf_code
h_not_built(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp, wf_error *err)
{
    (void)req;
    (void)resp;
    return wf_error_set(err, WF_E_UNIMPLEMENTED,
                        "method %s is not implemented by this version of the service",
                        call->method);
}
