/*
 * await: the conditions of a waiting call, validated against a net and
 * checked against an instance's view (await.h).
 *
 * Must not: include protobuf or grpc headers.
 */
#include "await.h"

#include "wf_str.h"

static bool
await_names_step(const wf_net *net, const char *name)
{
    if (net->n_steps > 0) {
        for (size_t i = 0; i < net->n_steps; i++)
            if (wf_str_eq(net->steps[i].id, name))
                return true;
        return false;
    }
    return wf_net_transition_index(net, name) >= 0;
}

wf_code
wf_await_check_net(const wf_net *net, const wf_await_until *u, wf_error *err)
{
    if (u->kind == WF_AWAIT_STEP_ENABLED && (net == NULL || !await_names_step(net, u->name)))
        return wf_error_set(err, WF_E_UNKNOWN_STEP,
                            "\"%.128s\" names no step or transition of the definition", u->name);
    if (u->kind == WF_AWAIT_PLACE_MARKED && (net == NULL || wf_net_place_index(net, u->name) < 0))
        return wf_error_set(err, WF_E_UNKNOWN_PLACE, "place \"%.128s\" is not in the net", u->name);
    return WF_OK;
}

wf_code
wf_await_check_definition(const wf_runtime_ctx *ctx, const char *key, int32_t version,
                          const wf_await_until *u, wf_error *err)
{
    if (u->kind == WF_AWAIT_ENDED)
        return WF_OK;
    wf_definition_row row;
    const wf_net *net = NULL;
    wf_code rc = wf_runtime_get_definition(ctx, key, version, &row, &net, err);
    if (rc != WF_OK && rc != WF_E_DEFINITION_NOT_FOUND)
        return rc;
    if (rc == WF_E_DEFINITION_NOT_FOUND && version != 0)
        return rc; /* as StartInstance itself would answer */
    return wf_await_check_net(rc == WF_OK ? net : NULL, u, err);
}

bool
wf_await_until_names(const wf_await_until *u)
{
    return u->kind != WF_AWAIT_ENDED;
}

static bool
await_ended(wf_instance_status st)
{
    return st == WF_INSTANCE_COMPLETED || st == WF_INSTANCE_CANCELLED ||
           st == WF_INSTANCE_COMPENSATED || st == WF_INSTANCE_FAILED;
}

static bool
await_step_enabled(const wf_runtime_view *nv, const char *name)
{
    if (nv->net != NULL && nv->net->n_steps > 0) {
        for (size_t i = 0; i < nv->n_current_steps; i++)
            if (wf_str_eq(nv->current_steps[i]->id, name))
                return true;
        return false;
    }
    for (size_t i = 0; i < nv->n_enabled; i++)
        if (wf_str_eq(nv->enabled[i], name))
            return true;
    return false;
}

bool
wf_await_met(const wf_instance_view *v, const wf_await_until *u)
{
    switch (u->kind) {
    case WF_AWAIT_ENDED:
        return await_ended(v->tree.instance.status);
    case WF_AWAIT_STEP_ENABLED:
        return v->net.is_net && await_step_enabled(&v->net, u->name);
    case WF_AWAIT_PLACE_MARKED:
        for (size_t i = 0; v->net.is_net && i < v->net.n_marking; i++)
            if (wf_str_eq(v->net.marking[i].place_id, u->name))
                return v->net.marking[i].count > 0;
        return false;
    }
    return false;
}
