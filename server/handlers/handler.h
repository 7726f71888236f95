/*
 * handler: the contract between the rpc layer and the request handlers.
 *
 * A handler receives one unpacked request message and fills one response
 * message. It translates protobuf-c messages to engine calls and back, and
 * nothing else: no grpc types, no SQL. All request-scoped memory (the
 * request, the response, scratch) lives in call->arena and is released by
 * the rpc layer when the call ends.
 */
#ifndef WF_HANDLER_H
#define WF_HANDLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "wf_arena.h"
#include "wf_config.h"
#include "wf_error.h"

#include "store.h"

/* The long-lived service: everything a handler may reach, built once by
 * main and shared read-only between threads (each member is thread-safe). */
typedef struct wf_app {
    const wf_config *cfg;
    wf_store *store;
} wf_app;

/* Opens the store the configuration names (Postgres when DATABASE_URL is
 * set, else memory) into app->store. */
wf_code wf_app_open_store(wf_app *app, wf_error *err);

/* Closes app->store. */
void wf_app_close_store(wf_app *app);

/* One field violation for google.rpc.BadRequest (validation errors). */
typedef struct wf_violation {
    const char *field;       /* path of the element, e.g. "transitions[2].assignee" */
    const char *description; /* client-safe message */
} wf_violation;

/* One call as a handler sees it. Strings are borrowed for the call's
 * lifetime; copy what must outlive it. */
typedef struct wf_call {
    wf_app *app;
    wf_arena *arena;
    const char *method;       /* e.g. "StartInstance" */
    const char *tenant;       /* never NULL: x-tenant-id, the key's tenant, or "default" */
    const char *actor;        /* x-actor-id, NULL when absent */
    const char *actor_groups; /* x-actor-groups when trusted (WF_TRUST_ACTOR_GROUPS), else NULL */
    const char *request_id;   /* x-request-id or a generated id; for logs */
    int64_t deadline_ms;      /* monotonic ms (wf_mono_ms), 0 = no deadline */

    /* Filled by a handler that fails with field violations; the rpc layer
     * sends them as google.rpc.BadRequest next to the ErrorInfo. */
    wf_violation *violations;
    size_t nviolations;
} wf_call;

/* Handles one unary call. On WF_OK *resp points to a response message of the
 * method's output type, allocated in call->arena (or static). On error err
 * is set and *resp is ignored. */
typedef wf_code (*wf_handler_fn)(wf_call *call, const ProtobufCMessage *req,
                                 ProtobufCMessage **resp, wf_error *err);

/* Route flags: which interceptors a method needs. */
enum {
    WF_ROUTE_ACTOR = 1 << 0,  /* x-actor-id is required (the call acts for a person) */
    WF_ROUTE_STREAM = 1 << 1, /* server-streaming method */
};

/* One row of the method table: a method name of workflow.v1.WorkflowService,
 * its handler and flags. The rpc layer checks at startup that the table and
 * the protobuf service descriptor name exactly the same methods. */
typedef struct wf_route {
    const char *method;
    wf_handler_fn fn;
    unsigned flags;
} wf_route;

/* The method table (handlers/routes.c), terminated by a NULL method. */
extern const wf_route wf_routes[];

/* True when the service can take traffic (the store answers). */
bool wf_app_ready(wf_app *app);

/* Allocates a violation list entry in the call's arena. */
wf_code wf_call_add_violation(wf_call *call, const char *field, const char *description,
                              wf_error *err);

#endif /* WF_HANDLER_H */
