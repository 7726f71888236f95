/*
 * rpc_table: builds and checks the method table at startup, so that a proto
 * method without a handler (or a handler without a method) is a startup
 * failure rather than a silent hang or a dead route.
 */
#include "rpc_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc/health/v1/health.pb-c.h"
#include "grpc/reflection/v1/reflection.pb-c.h"

wf_code
wf_rpc_table_build(const ProtobufCServiceDescriptor *svc, const wf_route *routes,
                   wf_rpc_method **out, size_t *n, wf_error *err)
{
    size_t nroutes = 0;
    while (routes[nroutes].method != NULL)
        nroutes++;

    for (size_t r = 0; r < nroutes; r++) {
        int found = 0;
        for (unsigned i = 0; i < svc->n_methods; i++)
            found += strcmp(svc->methods[i].name, routes[r].method) == 0;
        if (found != 1)
            return wf_error_set(err, WF_E_INTERNAL, "route \"%s\" names no method of %s",
                                routes[r].method, svc->name);
        for (size_t s = r + 1; s < nroutes; s++)
            if (strcmp(routes[r].method, routes[s].method) == 0)
                return wf_error_set(err, WF_E_INTERNAL, "route \"%s\" appears twice",
                                    routes[r].method);
        if (routes[r].fn == NULL && routes[r].stream == NULL)
            return wf_error_set(err, WF_E_INTERNAL, "route \"%s\" has no handler",
                                routes[r].method);
    }

    size_t total = svc->n_methods + 4;
    wf_rpc_method *t = calloc(total, sizeof *t);
    if (t == NULL)
        return wf_error_nomem(err);

    for (unsigned i = 0; i < svc->n_methods; i++) {
        const ProtobufCMethodDescriptor *m = &svc->methods[i];
        const wf_route *route = NULL;
        for (size_t r = 0; r < nroutes && route == NULL; r++)
            if (strcmp(routes[r].method, m->name) == 0)
                route = &routes[r];
        if (route == NULL) {
            free(t);
            return wf_error_set(err, WF_E_INTERNAL, "method %s/%s has no handler", svc->name,
                                m->name);
        }
        snprintf(t[i].path, sizeof t[i].path, "/%s/%s", svc->name, m->name);
        t[i].kind = WF_RPC_WORKFLOW;
        t[i].route = route;
        t[i].input = m->input;
        t[i].output = m->output;
    }

    wf_rpc_method *hc = &t[svc->n_methods], *hw = &t[svc->n_methods + 1];
    snprintf(hc->path, sizeof hc->path, "/grpc.health.v1.Health/Check");
    hc->kind = WF_RPC_HEALTH_CHECK;
    hc->input = &grpc__health__v1__health_check_request__descriptor;
    hc->output = &grpc__health__v1__health_check_response__descriptor;
    snprintf(hw->path, sizeof hw->path, "/grpc.health.v1.Health/Watch");
    hw->kind = WF_RPC_HEALTH_WATCH;
    hw->input = &grpc__health__v1__health_check_request__descriptor;
    hw->output = &grpc__health__v1__health_check_response__descriptor;

    /* v1alpha is wire-identical to v1: one set of message types serves both. */
    const char *refl[2] = {"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
                           "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"};
    for (int i = 0; i < 2; i++) {
        wf_rpc_method *r = &t[svc->n_methods + 2 + i];
        snprintf(r->path, sizeof r->path, "%s", refl[i]);
        r->kind = WF_RPC_REFLECTION;
        r->input = &grpc__reflection__v1__server_reflection_request__descriptor;
        r->output = &grpc__reflection__v1__server_reflection_response__descriptor;
    }

    *out = t;
    *n = total;
    return WF_OK;
}
