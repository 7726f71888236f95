/*
 * wf_http: GET /metrics over libmicrohttpd (internal polling thread), and
 * the application server: a bounded thread pool, connection limits,
 * timeouts and a capped request body, each request handed to a callback.
 */
#include "wf_http.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct wf_http {
    struct MHD_Daemon *d;
    wf_http_metrics_fn fn;
    void *arg;
    /* application server */
    wf_http_app_fn app_fn;
    size_t max_body;
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

static int
parse_addr(const char *addr, const char *what, struct sockaddr_in *sa, wf_error *err)
{
    const char *colon = strrchr(addr, ':');
    if (colon == NULL) {
        wf_error_set(err, WF_E_INVALID_ARGUMENT, "%s must be host:port", what);
        return -1;
    }
    char host[64];
    snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
    char *end;
    long port = strtol(colon + 1, &end, 10);
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    if (*end != '\0' || port < 0 || port > 65535 ||
        inet_pton(AF_INET, host[0] ? host : "0.0.0.0", &sa->sin_addr) != 1) {
        wf_error_set(err, WF_E_INVALID_ARGUMENT, "%s must be an IPv4 host:port, e.g. 0.0.0.0:9090",
                     what);
        return -1;
    }
    return (int)port;
}

wf_http *
wf_http_start(const char *addr, wf_http_metrics_fn fn, void *arg, wf_error *err)
{
    struct sockaddr_in sa;
    int port = parse_addr(addr, "WF_METRICS_ADDR", &sa, err);
    if (port < 0)
        return NULL;
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

/* ---- application server ---------------------------------------------------- */

#define MAX_FORM_FIELDS 32

struct wf_http_req {
    struct MHD_Connection *conn;
    const char *method;
    const char *path;
    /* The POSTed form, decoded: nfields pairs pointing into body. */
    char *body;
    const char *fname[MAX_FORM_FIELDS];
    const char *fvalue[MAX_FORM_FIELDS];
    int nfields;
};

/* What a connection's request accumulates between MHD's calls. */
struct upload {
    char *body;
    size_t len;
    int too_large;
};

const char *
wf_http_req_method(const wf_http_req *req)
{
    return req->method;
}

const char *
wf_http_req_path(const wf_http_req *req)
{
    return req->path;
}

const char *
wf_http_req_header(const wf_http_req *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

void
wf_http_req_peer(const wf_http_req *req, char *buf, size_t cap)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci != NULL ? ci->client_addr : NULL;
    const void *addr = NULL;
    if (sa != NULL && sa->sa_family == AF_INET)
        addr = &((const struct sockaddr_in *)(const void *)sa)->sin_addr;
    else if (sa != NULL && sa->sa_family == AF_INET6)
        addr = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
    if (cap > 0 && (addr == NULL || inet_ntop(sa->sa_family, addr, buf, (socklen_t)cap) == NULL))
        buf[0] = '\0';
}

const char *
wf_http_req_cookie(const wf_http_req *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_COOKIE_KIND, name);
}

const char *
wf_http_req_query(const wf_http_req *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *
wf_http_req_form(const wf_http_req *req, const char *name)
{
    for (int i = 0; i < req->nfields; i++)
        if (strcmp(req->fname[i], name) == 0)
            return req->fvalue[i];
    return NULL;
}

int
wf_http_resp_header(wf_http_resp *resp, const char *name, const char *value)
{
    if (resp->nheaders >= WF_HTTP_MAX_HEADERS)
        return -1;
    char *n = strdup(name), *v = strdup(value);
    if (n == NULL || v == NULL) {
        free(n);
        free(v);
        return -1;
    }
    resp->hname[resp->nheaders] = n;
    resp->hvalue[resp->nheaders++] = v;
    return 0;
}

static int
hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decodes a form component in place ('+' is a space, %XX a byte). */
static void
form_decode(char *s)
{
    char *o = s;
    for (char *p = s; *p != '\0'; p++) {
        if (*p == '+') {
            *o++ = ' ';
        } else if (*p == '%' && hexval((unsigned char)p[1]) >= 0 &&
                   hexval((unsigned char)p[2]) >= 0) {
            *o++ = (char)(hexval((unsigned char)p[1]) * 16 + hexval((unsigned char)p[2]));
            p += 2;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
}

/* Splits body (application/x-www-form-urlencoded) into req's fields, in
 * place; fields past MAX_FORM_FIELDS are ignored. */
static void
form_parse(wf_http_req *req, char *body)
{
    req->body = body;
    char *save = NULL;
    for (char *f = strtok_r(body, "&", &save); f != NULL && req->nfields < MAX_FORM_FIELDS;
         f = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(f, '=');
        const char *v = "";
        if (eq != NULL) {
            *eq = '\0';
            v = eq + 1;
            form_decode(eq + 1);
        }
        form_decode(f);
        req->fname[req->nfields] = f;
        req->fvalue[req->nfields++] = v;
    }
}

static void
resp_clear(wf_http_resp *r)
{
    free(r->body);
    for (int i = 0; i < r->nheaders; i++) {
        free(r->hname[i]);
        free(r->hvalue[i]);
    }
}

static ssize_t
stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    wf_http_resp *r = cls;
    ssize_t n = r->stream(r->stream_arg, buf, max);
    return n < 0 ? MHD_CONTENT_READER_END_OF_STREAM : n;
}

static void
stream_done(void *cls)
{
    wf_http_resp *r = cls;
    if (r->stream_free != NULL)
        r->stream_free(r->stream_arg);
    resp_clear(r);
    free(r);
}

static enum MHD_Result
plain(struct MHD_Connection *conn, unsigned status, const char *text)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
    if (resp == NULL)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", "text/plain; charset=utf-8");
    enum MHD_Result r = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return r;
}

static enum MHD_Result
answer_app(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
           const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    (void)version;
    wf_http *h = cls;
    struct upload *up = *con_cls;
    if (up == NULL) {
        /* First call: headers only. */
        up = calloc(1, sizeof *up);
        if (up == NULL)
            return MHD_NO;
        *con_cls = up;
        return MHD_YES;
    }
    if (*upload_size > 0) {
        if (!up->too_large && up->len + *upload_size <= h->max_body) {
            char *nb = realloc(up->body, up->len + *upload_size + 1);
            if (nb == NULL)
                return MHD_NO;
            memcpy(nb + up->len, upload, *upload_size);
            up->len += *upload_size;
            nb[up->len] = '\0';
            up->body = nb;
        } else {
            up->too_large = 1;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (up->too_large)
        return plain(conn, MHD_HTTP_CONTENT_TOO_LARGE, "request body too large\n");

    wf_http_req req = {.conn = conn, .method = method, .path = url};
    if (up->body != NULL) {
        const char *ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type");
        if (ct != NULL && strncasecmp(ct, "application/x-www-form-urlencoded", 33) == 0)
            form_parse(&req, up->body);
    }
    wf_http_resp *r = calloc(1, sizeof *r);
    if (r == NULL)
        return MHD_NO;
    r->status = MHD_HTTP_OK;
    h->app_fn(h->arg, &req, r);

    struct MHD_Response *resp;
    if (r->stream != NULL) {
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_reader, r,
                                                 stream_done);
        if (resp == NULL) {
            stream_done(r);
            return MHD_NO;
        }
    } else {
        resp = MHD_create_response_from_buffer(r->len, r->body != NULL ? r->body : (void *)"",
                                               MHD_RESPMEM_MUST_COPY);
        if (resp == NULL) {
            resp_clear(r);
            free(r);
            return MHD_NO;
        }
    }
    if (r->content_type != NULL)
        MHD_add_response_header(resp, "Content-Type", r->content_type);
    for (int i = 0; i < r->nheaders; i++)
        MHD_add_response_header(resp, r->hname[i], r->hvalue[i]);
    unsigned status = r->status;
    if (r->stream == NULL) {
        resp_clear(r);
        free(r);
    }
    enum MHD_Result rc = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return rc;
}

static void
request_done(void *cls, struct MHD_Connection *conn, void **con_cls,
             enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    struct upload *up = *con_cls;
    if (up != NULL) {
        free(up->body);
        free(up);
        *con_cls = NULL;
    }
}

wf_http *
wf_http_start_app(const char *addr, const wf_http_app_options *opt, wf_http_app_fn fn, void *arg,
                  wf_error *err)
{
    struct sockaddr_in sa;
    int port = parse_addr(addr, opt->what, &sa, err);
    if (port < 0)
        return NULL;
    wf_http *h = calloc(1, sizeof *h);
    if (h == NULL) {
        wf_error_nomem(err);
        return NULL;
    }
    h->app_fn = fn;
    h->arg = arg;
    h->max_body = opt->max_body;
    h->d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL_LINUX_ONLY | MHD_USE_ERROR_LOG,
        (uint16_t)port, NULL, NULL, answer_app, h, MHD_OPTION_SOCK_ADDR, &sa,
        MHD_OPTION_THREAD_POOL_SIZE, opt->threads, MHD_OPTION_CONNECTION_LIMIT,
        opt->max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT, opt->per_ip,
        MHD_OPTION_CONNECTION_TIMEOUT, opt->timeout_s, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)64 * 1024, MHD_OPTION_NOTIFY_COMPLETED, request_done, NULL, MHD_OPTION_END);
    if (h->d == NULL) {
        free(h);
        wf_error_set(err, WF_E_INVALID_ARGUMENT, "could not listen on %s (%s)", addr, opt->what);
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
