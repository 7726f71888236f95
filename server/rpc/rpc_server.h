/*
 * rpc_server: the gRPC server on grpc core — listener, worker threads with
 * one completion queue each, the call state machine, the health service and
 * the graceful shutdown sequence.
 *
 * Only this layer includes grpc headers. It hands each call to a handler of
 * the method table after the interceptor chain, and answers UNIMPLEMENTED
 * for any method it does not know.
 */
#ifndef WF_RPC_SERVER_H
#define WF_RPC_SERVER_H

#include <stdio.h>

#include "handler.h"
#include "wf_error.h"

typedef struct wf_rpc_server wf_rpc_server;

/* Initialises grpc, builds and checks the method table, binds app->cfg->addr
 * (port 0 picks a free port), starts the worker threads and the health
 * monitor. Returns NULL with err set when the table is inconsistent or the
 * address cannot be bound. The server does not own app. */
wf_rpc_server *wf_rpc_server_start(wf_app *app, wf_error *err);

/* Writes the server's metrics (Prometheus text format) to out. */
void wf_rpc_server_render_metrics(wf_rpc_server *srv, FILE *out);

/* The bound TCP port. */
int wf_rpc_server_port(const wf_rpc_server *srv);

/* First step of shutdown: health answers NOT_SERVING from now on (watchers
 * are told), while calls are still served, so that load balancers move
 * traffic away before connections close. */
void wf_rpc_server_drain(wf_rpc_server *srv);

/* Stops accepting calls, waits up to grace_ms for calls in flight, cancels
 * the rest (clients see UNAVAILABLE), joins every thread and frees the
 * server. Ends with grpc_shutdown(). NULL-safe. */
void wf_rpc_server_stop(wf_rpc_server *srv, int grace_ms);

#endif /* WF_RPC_SERVER_H */
