/*
 * rpc_metrics: RED metrics of the gRPC server in Prometheus' text format,
 * with the names grpc-ecosystem exporters use (grpc_server_started_total,
 * grpc_server_handled_total, grpc_server_handling_seconds).
 *
 * Counters are per method and code, updated with relaxed atomics on the
 * workers' hot path; rendering reads them without stopping anyone.
 */
#ifndef WF_RPC_METRICS_H
#define WF_RPC_METRICS_H

#include <stddef.h>
#include <stdio.h>

#include <grpc/status.h>

#include "rpc_table.h"

typedef struct wf_rpc_metrics wf_rpc_metrics;

/* Counters for the n methods of the table plus one "unknown" slot (index
 * n) for calls to methods the server does not serve. The table must outlive
 * the metrics. NULL when out of memory. */
wf_rpc_metrics *wf_rpc_metrics_new(const wf_rpc_method *methods, size_t n);

void wf_rpc_metrics_free(wf_rpc_metrics *m);

/* A call of method index i (n = unknown) was accepted. */
void wf_rpc_metrics_started(wf_rpc_metrics *m, size_t i);

/* A call of method index i ended with code after seconds. */
void wf_rpc_metrics_handled(wf_rpc_metrics *m, size_t i, grpc_status_code code, double seconds);

/* Writes every family, with HELP and TYPE lines, to out. */
void wf_rpc_metrics_render(const wf_rpc_metrics *m, FILE *out);

#endif /* WF_RPC_METRICS_H */
