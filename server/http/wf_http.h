/*
 * wf_http: the plain-HTTP side doors of the server, on libmicrohttpd's own
 * threads, separate from the gRPC port: Prometheus /metrics, and an
 * application server (the web console) that hands each request to a
 * callback. It knows no page and no rule: the callback does.
 */
#ifndef WF_HTTP_H
#define WF_HTTP_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

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

/* ---- application server ------------------------------------------------ */

/* One request, valid during the callback. */
typedef struct wf_http_req wf_http_req;

const char *wf_http_req_method(const wf_http_req *req); /* "GET", "POST", ... */
const char *wf_http_req_path(const wf_http_req *req);   /* "/instances", no query */
/* A request header (case-insensitive name), a cookie, a query argument
 * (percent-decoded) or a field of a POSTed
 * application/x-www-form-urlencoded body (decoded); NULL when absent. */
const char *wf_http_req_header(const wf_http_req *req, const char *name);
const char *wf_http_req_cookie(const wf_http_req *req, const char *name);
const char *wf_http_req_query(const wf_http_req *req, const char *name);
const char *wf_http_req_form(const wf_http_req *req, const char *name);
/* The address the connection comes from, as text ("192.0.2.7", "2001:db8::1"),
 * in buf; "" when it cannot be told. Behind a proxy it is the proxy's. */
void wf_http_req_peer(const wf_http_req *req, char *buf, size_t cap);

#define WF_HTTP_MAX_HEADERS 12

/* What the callback answers. body (malloc'd, or NULL) is freed by wf_http.
 * A streamed answer (stream != NULL) has no body: wf_http calls stream on
 * its thread until it returns -1 (the end), each call writing at most max
 * bytes to buf (it may block a little while, never 0 bytes), then
 * stream_free(stream_arg). */
typedef struct wf_http_resp {
    unsigned status;
    const char *content_type; /* static */
    char *body;
    size_t len;
    char *hname[WF_HTTP_MAX_HEADERS]; /* wf_http_resp_header */
    char *hvalue[WF_HTTP_MAX_HEADERS];
    int nheaders;
    ssize_t (*stream)(void *arg, char *buf, size_t max);
    void (*stream_free)(void *arg);
    void *stream_arg;
} wf_http_resp;

/* Adds a response header (copied); past WF_HTTP_MAX_HEADERS it is dropped
 * and -1 returned. */
int wf_http_resp_header(wf_http_resp *resp, const char *name, const char *value);

/* Answers one request. Runs on one of the server's threads, concurrently
 * with the others. */
typedef void (*wf_http_app_fn)(void *arg, const wf_http_req *req, wf_http_resp *resp);

/* Bounds of an application server. */
typedef struct wf_http_app_options {
    unsigned threads;         /* the thread pool (MHD_OPTION_THREAD_POOL_SIZE) */
    unsigned max_connections; /* connections open at once; more are refused */
    unsigned per_ip;          /* connections open at once from one address */
    unsigned timeout_s;       /* an idle connection is closed after this */
    size_t max_body;          /* a request body above this gets 413 */
    const char *what;         /* the setting named in errors, e.g. "WF_CONSOLE_ADDR" */
} wf_http_app_options;

/* Listens on addr ("host:port") and answers every request with fn. NULL and
 * err on failure. Stopped by wf_http_stop. */
wf_http *wf_http_start_app(const char *addr, const wf_http_app_options *opt, wf_http_app_fn fn,
                           void *arg, wf_error *err);

#endif /* WF_HTTP_H */
