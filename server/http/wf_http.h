/*
 * wf_http: the plain-HTTP side door of the server — Prometheus /metrics —
 * on libmicrohttpd's own thread, separate from the gRPC port.
 */
#ifndef WF_HTTP_H
#define WF_HTTP_H

#include <stdio.h>

#include "wf_error.h"

typedef struct wf_http wf_http;

/* Writes the metrics text to out. Runs on the HTTP thread, concurrently
 * with everything else: it must only read thread-safe state. */
typedef void (*wf_http_metrics_fn)(void *arg, FILE *out);

/* Listens on addr ("host:port", host may be 0.0.0.0) and serves GET /metrics
 * with fn's output; other paths get 404. NULL and err on failure. */
wf_http *wf_http_start(const char *addr, wf_http_metrics_fn fn, void *arg, wf_error *err);

/* Stops the listener and joins its thread. NULL-safe. */
void wf_http_stop(wf_http *h);

#endif /* WF_HTTP_H */
