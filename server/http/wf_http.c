/*
 * wf_http: GET /metrics over libmicrohttpd (internal polling thread).
 */
#include "wf_http.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

struct wf_http {
    struct MHD_Daemon *d;
    wf_http_metrics_fn fn;
    void *arg;
};

static enum MHD_Result
answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
       const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    (void)version;
    (void)upload;
    (void)upload_size;
    (void)con_cls;
    wf_http *h = cls;
    struct MHD_Response *resp;
    unsigned status;
    if (strcmp(method, "GET") != 0 || strcmp(url, "/metrics") != 0) {
        static const char nf[] = "not found\n";
        resp = MHD_create_response_from_buffer(sizeof nf - 1, (void *)nf, MHD_RESPMEM_PERSISTENT);
        status = MHD_HTTP_NOT_FOUND;
    } else {
        char *buf = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&buf, &len);
        if (out == NULL)
            return MHD_NO;
        h->fn(h->arg, out);
        fclose(out);
        resp = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
        if (resp == NULL) {
            free(buf);
            return MHD_NO;
        }
        MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
        status = MHD_HTTP_OK;
    }
    enum MHD_Result r = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return r;
}

wf_http *
wf_http_start(const char *addr, wf_http_metrics_fn fn, void *arg, wf_error *err)
{
    const char *colon = strrchr(addr, ':');
    if (colon == NULL) {
        wf_error_set(err, WF_E_INVALID_ARGUMENT, "WF_METRICS_ADDR must be host:port");
        return NULL;
    }
    char host[64];
    snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
    char *end;
    long port = strtol(colon + 1, &end, 10);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (*end != '\0' || port < 0 || port > 65535 ||
        inet_pton(AF_INET, host[0] ? host : "0.0.0.0", &sa.sin_addr) != 1) {
        wf_error_set(err, WF_E_INVALID_ARGUMENT,
                     "WF_METRICS_ADDR must be an IPv4 host:port, e.g. 0.0.0.0:9090");
        return NULL;
    }
    wf_http *h = calloc(1, sizeof *h);
    if (h == NULL) {
        wf_error_nomem(err);
        return NULL;
    }
    h->fn = fn;
    h->arg = arg;
    h->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, (uint16_t)port,
                            NULL, NULL, answer, h, MHD_OPTION_SOCK_ADDR, &sa,
                            MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
    if (h->d == NULL) {
        free(h);
        wf_error_set(err, WF_E_INVALID_ARGUMENT, "could not listen on %s for metrics", addr);
        return NULL;
    }
    return h;
}

void
wf_http_stop(wf_http *h)
{
    if (h == NULL)
        return;
    MHD_stop_daemon(h->d);
    free(h);
}
