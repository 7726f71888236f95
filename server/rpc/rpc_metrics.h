/*
 * rpc_metrics: RED metrics of the gRPC server in Prometheus' text format,
 * with the names grpc-ecosystem exporters use (grpc_server_started_total,
 * grpc_server_handled_total, grpc_server_handling_seconds).
 *
 * Counters are per method and code, updated with relaxed atomics on the
 * workers' hot path; rendering reads them without stopping anyone.
 *
 * Backlog gauges (activatable jobs by type, open tasks, buffered signals)
 * come from the engine's count of the backlog (through the app), cached:
 * see wf_rpc_gauges_new.
 */
#ifndef WF_RPC_METRICS_H
#define WF_RPC_METRICS_H

#include <stddef.h>
#include <stdio.h>

#include <grpc/status.h>

#include "rpc_table.h"
#include "handler.h"

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

/* The pool's queue of waiting calls: enqueue returns the length before
 * the call was added; refused counts a call refused OVERLOADED. */
int wf_rpc_metrics_enqueue(wf_rpc_metrics *m);
void wf_rpc_metrics_dequeue(wf_rpc_metrics *m);
void wf_rpc_metrics_refused(wf_rpc_metrics *m);

/* Writes every family, with HELP and TYPE lines, to out. */
void wf_rpc_metrics_render(const wf_rpc_metrics *m, FILE *out);

typedef struct wf_rpc_gauges wf_rpc_gauges;

/* Backlog gauges of app (borrowed; it must outlive the gauges). The
 * counts are refreshed lazily by a scrape when they are older than
 * max_age_ms, with a deadline of timeout_ms, by one scrape at a time:
 * a scrape waits at most timeout_ms, and only once per max_age_ms, even
 * when the database is down (the last counts are served meanwhile, with
 * their age). NULL when out of memory. */
wf_rpc_gauges *wf_rpc_gauges_new(wf_app *app, int64_t max_age_ms, int64_t timeout_ms);

void wf_rpc_gauges_free(wf_rpc_gauges *g);

/* Refreshes the counts when due, then writes the gauge families to out.
 * Thread-safe. */
void wf_rpc_gauges_render(wf_rpc_gauges *g, FILE *out);

#endif /* WF_RPC_METRICS_H */
