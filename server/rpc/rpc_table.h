/*
 * rpc_table: the static method table, derived from the protobuf-c service
 * descriptor of workflow.v1.WorkflowService and checked against the
 * handlers' route table (handlers/routes.c).
 */
#ifndef WF_RPC_TABLE_H
#define WF_RPC_TABLE_H

#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

#include "handler.h"
#include "wf_error.h"

typedef enum wf_rpc_kind {
    WF_RPC_WORKFLOW = 0, /* a WorkflowService method, served by a handler */
    WF_RPC_HEALTH_CHECK,
    WF_RPC_HEALTH_WATCH,
    WF_RPC_REFLECTION, /* grpc.reflection v1 and v1alpha: bidi streams */
} wf_rpc_kind;

typedef struct wf_rpc_method {
    char path[128]; /* "/workflow.v1.WorkflowService/GetTask" */
    wf_rpc_kind kind;
    const wf_route *route;                    /* WF_RPC_WORKFLOW only */
    const ProtobufCMessageDescriptor *input;  /* request type */
    const ProtobufCMessageDescriptor *output; /* response type */
    void *handle;                             /* grpc_server_register_method result */
} wf_rpc_method;

/* Builds the table: one entry per method of svc (each must have exactly one
 * route, and each route must name a method of svc), then the health and
 * reflection methods.
 * On success *out is a malloc'd array of *n entries (free() it). On a
 * mismatch returns WF_E_INTERNAL naming the method. */
wf_code wf_rpc_table_build(const ProtobufCServiceDescriptor *svc, const wf_route *routes,
                           wf_rpc_method **out, size_t *n, wf_error *err);

#endif /* WF_RPC_TABLE_H */
