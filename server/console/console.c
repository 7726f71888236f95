/*
 * console: sessions, the access checks (API key, trusted proxy, CSRF
 * token, Origin, the role of each action), routing, the security headers
 * of every answer, static assets and the live event stream (Server-Sent
 * Events).
 *
 * A session is a signed HttpOnly, SameSite=Strict cookie (console_auth.c)
 * holding the tenant, the person, the role and the expiry, so that any
 * replica with the same WF_CONSOLE_SESSION_KEY reads it; the CSRF token
 * is derived from it. It is made at /login from an API key (the key itself
 * never leaves the login request; removing it from WF_API_KEYS_FILE ends
 * the sessions opened with it), or from the identity headers of the
 * trusted proxy. Refused logins are throttled per source address
 * (console_throttle.c).
 */
#include "console.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "console_auth.h"
#include "console_int.h"
#include "expr.h"
#include "wf_bulkhead.h"
#include "wf_config.h"
#include "wf_id.h"
#include "wf_log.h"
#include "wf_time.h"

extern char **environ;

/* Embedded at build time (cmake/embed.cmake). */
extern const unsigned char wf_console_css[];
extern const size_t wf_console_css_len;
extern const unsigned char wf_console_js[];
extern const size_t wf_console_js_len;

#define COOKIE "wf_console"
#define SESSION_TTL_S (8 * 3600)
#define CALL_DEADLINE_MS 10000
#define MAX_SSE 4
#define SSE_POLL_MS 500
#define SSE_LIFETIME_MS 60000
#define TOKEN_HEX 32

struct wf_console {
    wf_app *app;
    wf_http *http;
    wf_console__throttle *throttle; /* refused logins per address */
    wf_console__sso sso;            /* session key, trusted proxy, roles */
    atomic_int nsse;
    atomic_bool stopping;
};

/* ---- handler calls ---------------------------------------------------------- */

static const wf_route *
route_of(const char *method)
{
    for (const wf_route *r = wf_routes; r->method != NULL; r++)
        if (strcmp(r->method, method) == 0)
            return r;
    return NULL;
}

wf_code
wf_console__call(wf_console__ctx *x, const char *method, const ProtobufCMessage *req,
                 ProtobufCMessage **resp, wf_error *err)
{
    const wf_route *r = route_of(method);
    if (r == NULL || r->fn == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "no unary route %s", method);
    if ((r->flags & WF_ROUTE_ACTOR) && x->actor == NULL)
        return wf_error_set(err, WF_E_ACTOR_MISSING,
                            "this action acts for a person: name an actor at login");
    char rid[WF_UUID_LEN + 1];
    wf_uuid7(rid);
    wf_call call = {
        .app = x->app,
        .arena = x->arena,
        .method = r->method,
        .tenant = x->tenant,
        .actor = x->actor,
        .request_id = wf_arena_strdup(x->arena, rid),
        .deadline_ms = wf_mono_ms() + CALL_DEADLINE_MS,
    };
    wf_expr_set_call_deadline(call.deadline_ms);
    /* A page is a call: it joins bulkheads as an RPC does (its thread is
     * the console's own, with no seat to give). */
    wf_bulkhead_call_begin(NULL, NULL);
    *resp = NULL;
    wf_code rc = r->fn(&call, req, resp, err);
    wf_bulkhead_call_end();
    wf_expr_set_call_deadline(0);
    if (rc == WF_OK && *resp == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "the handler of %s produced no response", method);
    if (rc != WF_OK && err->code != rc)
        wf_error_set(err, rc, "%s", err->msg[0] ? err->msg : wf_code_reason(rc));
    return rc;
}

wf_code
wf_console__read_events(wf_app *app, const char *tenant, const char *instance_id, int64_t after_seq,
                        size_t max, wf_console__event_fn fn, void *arg, wf_error *err)
{
    const wf_route *r = route_of("WatchEvents");
    if (r == NULL || r->stream == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "no WatchEvents route");
    wf_arena *arena = wf_arena_new();
    if (arena == NULL)
        return wf_error_nomem(err);
    Workflow__V1__WatchEventsRequest wreq = WORKFLOW__V1__WATCH_EVENTS_REQUEST__INIT;
    wreq.after_sequence = after_seq;
    wreq.instance_id = (char *)(instance_id ? instance_id : "");
    wreq.follow = false;
    wf_call call = {
        .app = app,
        .arena = arena,
        .method = r->method,
        .tenant = tenant,
        .request_id = "console",
        .deadline_ms = wf_mono_ms() + CALL_DEADLINE_MS,
    };
    void *state = NULL;
    wf_code rc = r->stream->open(&call, &wreq.base, &state, err);
    if (rc != WF_OK) {
        wf_arena_free(arena);
        return rc;
    }
    size_t n = 0;
    for (;;) {
        wf_arena *scratch = wf_arena_new();
        if (scratch == NULL) {
            rc = wf_error_nomem(err);
            break;
        }
        ProtobufCMessage *msg = NULL;
        wf_stream_step st = r->stream->next(&call, state, scratch, &msg, err);
        if (st == WF_STREAM_MESSAGE && n < max) {
            const Workflow__V1__WatchEventsResponse *m = (const void *)msg;
            if (m->event != NULL)
                fn(arg, m->event);
            n++;
        }
        wf_arena_free(scratch);
        if (st == WF_STREAM_END) {
            rc = err->code;
            break;
        }
        if (st == WF_STREAM_WAIT || n >= max)
            break;
    }
    if (r->stream->close != NULL)
        r->stream->close(state);
    wf_arena_free(arena);
    return rc;
}

/* ---- sessions ----------------------------------------------------------------- */

/* A session as a request holds it: the cookie's fields and the CSRF token
 * derived from the cookie. */
typedef struct session {
    wf_console__session s;
    char csrf[WF_CONSOLE_CSRF_HEX + 1];
} session;

static int
random_hex(char out[TOKEN_HEX + 1])
{
    unsigned char b[TOKEN_HEX / 2];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b)
        return -1;
    for (size_t i = 0; i < sizeof b; i++)
        sprintf(out + 2 * i, "%02x", b[i]);
    return 0;
}

static int64_t
now_s(void)
{
    return (int64_t)time(NULL);
}

/* The session of the request's cookie when it is signed with this
 * console's key and has not expired. */
static bool
session_find(wf_console *c, const char *cookie, session *out)
{
    const wf_console__sso *o = &c->sso;
    if (!wf_console__session_verify(o->session_key, o->session_key_len, cookie, now_s(), &out->s))
        return false;
    wf_console__csrf_of(o->session_key, o->session_key_len, cookie, out->csrf);
    return true;
}

static void set_cookie(const wf_http_req *req, wf_http_resp *r, const char *value, bool clear);

/* Signs s (a fresh nonce, SESSION_TTL_S from now) into the answer's
 * cookie; *out is the session the rest of the request uses. */
static bool
session_issue(wf_console *c, const wf_http_req *req, wf_http_resp *r, wf_console__session *s,
              session *out)
{
    if (random_hex(s->nonce) != 0)
        return false;
    s->expires_s = now_s() + SESSION_TTL_S;
    char *cookie = wf_console__session_sign(c->sso.session_key, c->sso.session_key_len, s);
    if (cookie == NULL)
        return false;
    set_cookie(req, r, cookie, false);
    out->s = *s;
    wf_console__csrf_of(c->sso.session_key, c->sso.session_key_len, cookie, out->csrf);
    free(cookie);
    return true;
}

/* True while the key the session was opened with is still configured. */
static bool
key_still_valid(wf_console *c, const wf_console__session *s)
{
    wf_keys *keys = c->app->cfg->keys;
    wf_key_match m;
    snprintf(m.key_id, sizeof m.key_id, "%s", s->key_id);
    snprintf(m.tenant, sizeof m.tenant, "%s", s->key_tenant);
    return keys != NULL && wf_keys_holds(keys, &m);
}

/* ---- answers ------------------------------------------------------------------ */

static void
security_headers(wf_http_resp *r)
{
    wf_http_resp_header(r, "Content-Security-Policy",
                        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
                        "object-src 'none'; base-uri 'none'; form-action 'self'; "
                        "frame-ancestors 'none'");
    wf_http_resp_header(r, "X-Content-Type-Options", "nosniff");
    wf_http_resp_header(r, "X-Frame-Options", "DENY");
    wf_http_resp_header(r, "Referrer-Policy", "no-referrer");
    wf_http_resp_header(r, "Cache-Control", "no-store");
}

static void
text(wf_http_resp *r, unsigned status, const char *msg)
{
    r->status = status;
    r->content_type = "text/plain; charset=utf-8";
    r->body = strdup(msg);
    r->len = r->body ? strlen(r->body) : 0;
}

static void
redirect(wf_http_resp *r, const char *to)
{
    r->status = 303;
    wf_http_resp_header(r, "Location", to);
    r->content_type = "text/plain; charset=utf-8";
}

/* True when the request came from this console's own pages. Browsers say
 * so in Sec-Fetch-Site, which a page cannot forge; without it, the Origin
 * (or, without one, the Referer) must name the host the request was sent
 * to. With Referrer-Policy no-referrer a browser sends "Origin: null" on a
 * form POST, which never matches: such a browser sends Sec-Fetch-Site. */
static bool
same_origin(const wf_http_req *req)
{
    const char *site = wf_http_req_header(req, "Sec-Fetch-Site");
    if (site != NULL)
        return strcmp(site, "same-origin") == 0;
    const char *host = wf_http_req_header(req, "Host");
    const char *origin = wf_http_req_header(req, "Origin");
    const char *src = origin != NULL ? origin : wf_http_req_header(req, "Referer");
    if (host == NULL || src == NULL)
        return false;
    const char *p = strstr(src, "://");
    if (p == NULL)
        return false;
    p += 3;
    size_t hl = strlen(host);
    return strncmp(p, host, hl) == 0 && (p[hl] == '\0' || p[hl] == '/');
}

static void
set_cookie(const wf_http_req *req, wf_http_resp *r, const char *value, bool clear)
{
    /* Secure when the browser reached us over TLS: a mesh or proxy that
     * terminates TLS says so in X-Forwarded-Proto. */
    const char *proto = wf_http_req_header(req, "X-Forwarded-Proto");
    bool tls = proto != NULL && strcmp(proto, "https") == 0;
    char buf[1280];
    snprintf(buf, sizeof buf, COOKIE "=%s; HttpOnly; SameSite=Strict; Path=/%s%s", value,
             clear ? "; Max-Age=0" : "", tls ? "; Secure" : "");
    wf_http_resp_header(r, "Set-Cookie", buf);
}

static void
login_page(wf_console *c, const wf_http_req *req, wf_http_resp *r, const char *problem)
{
    (void)req;
    bool open = wf_config_open_access(c->app->cfg);
    char *buf = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&buf, &len);
    if (o == NULL) {
        text(r, 500, "out of memory\n");
        return;
    }
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<link rel=\"stylesheet\" href=\"/static/console.css\">"
          "<title>Log in · workflow console</title></head><body><main>"
          "<h1>Workflow console</h1>",
          o);
    if (problem != NULL) {
        fputs("<p class=\"error\">", o);
        wf_console__esc(o, problem);
        fputs("</p>", o);
    }
    fputs("<form method=\"post\" action=\"/login\" class=\"login\">", o);
    if (!open)
        fputs("<label>API key <input type=\"password\" name=\"api_key\" "
              "autocomplete=\"off\" required></label>",
              o);
    fputs("<label>Actor <input type=\"text\" name=\"actor\" required maxlength=\"128\"></label>",
          o);
    if (!open)
        fputs("<label>Tenant (keys of any tenant only) <input type=\"text\" name=\"tenant\" "
              "maxlength=\"64\"></label>",
              o);
    fputs("<button type=\"submit\">Log in</button></form></main></body></html>\n", o);
    fclose(o);
    r->content_type = "text/html; charset=utf-8";
    r->body = buf;
    r->len = len;
}

static bool
printable(const char *s, size_t max)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
            return false;
    return true;
}

/* A login attempt refused for its key: counted against the address, and
 * answered 403, or 429 once the address is barred. */
static void
login_refused(wf_console *c, const wf_http_req *req, wf_http_resp *r, const char *peer)
{
    int wait_s = wf_console__throttle_failed(c->throttle, peer, wf_mono_ms());
    if (wait_s > 0)
        WF_LOG(WF_LOG_WARN, "console",
               "login refused: API_KEY_INVALID (from %s, now barred from logging in for %d s)",
               peer, wait_s);
    else
        WF_LOG(WF_LOG_WARN, "console", "login refused: API_KEY_INVALID (from %s)", peer);
    r->status = 403;
    login_page(c, req, r, "The API key is not valid.");
}

/* 429 with Retry-After while the address is barred: nothing of the form is
 * looked at, the key least of all. */
static bool
login_barred(wf_console *c, const wf_http_req *req, wf_http_resp *r, const char *peer)
{
    int wait_s = wf_console__throttle_wait(c->throttle, peer, wf_mono_ms());
    if (wait_s == 0)
        return false;
    char retry[16];
    snprintf(retry, sizeof retry, "%d", wait_s);
    wf_http_resp_header(r, "Retry-After", retry);
    r->status = 429;
    char msg[128];
    snprintf(msg, sizeof msg, "Too many refused logins from this address: try again in %d s.",
             wait_s);
    login_page(c, req, r, msg);
    return true;
}

static void
do_login(wf_console *c, const wf_http_req *req, wf_http_resp *r)
{
    const wf_config *cfg = c->app->cfg;
    const char *actor = wf_http_req_form(req, "actor");
    const char *tenant = wf_http_req_form(req, "tenant");
    const char *key = wf_http_req_form(req, "api_key");
    char peer[48];
    wf_http_req_peer(req, peer, sizeof peer);
    bool open = wf_config_open_access(cfg);
    if (!open && login_barred(c, req, r, peer))
        return;
    if (!printable(actor, 128)) {
        r->status = 400;
        login_page(c, req, r, "The actor must be 1 to 128 printable ASCII characters.");
        return;
    }
    if (tenant != NULL && tenant[0] != '\0' && !wf_id_tenant_valid(tenant, strlen(tenant))) {
        r->status = 400;
        login_page(c, req, r, "The tenant must be 1 to 64 letters, digits, \".\", \"_\" or \"-\".");
        return;
    }
    const char *t = tenant != NULL && tenant[0] != '\0' ? tenant : "default";
    wf_key_match k = {"", ""};
    if (!open) {
        if (key == NULL || !wf_config_find_key(cfg, key, strlen(key), &k)) {
            login_refused(c, req, r, peer);
            return;
        }
        wf_console__throttle_passed(c->throttle, peer, wf_mono_ms());
        if (k.tenant[0] != '\0') {
            if (tenant != NULL && tenant[0] != '\0' && strcmp(tenant, k.tenant) != 0) {
                r->status = 403;
                login_page(c, req, r, "This API key may not act in that tenant.");
                return;
            }
            t = k.tenant;
        }
        WF_LOG(WF_LOG_INFO, "console", "login of key %s as %s in tenant %s", k.key_id, actor, t);
    }
    wf_console__session s = {.source = open ? WF_CONSOLE_SOURCE_OPEN : WF_CONSOLE_SOURCE_KEY,
                             .role = open ? WF_CONSOLE_ROLE_ADMIN : c->sso.key_role};
    snprintf(s.tenant, sizeof s.tenant, "%s", t);
    snprintf(s.actor, sizeof s.actor, "%s", actor);
    snprintf(s.key_id, sizeof s.key_id, "%s", k.key_id);
    snprintf(s.key_tenant, sizeof s.key_tenant, "%s", k.tenant);
    session out;
    if (!session_issue(c, req, r, &s, &out)) {
        text(r, 500, "could not create a session\n");
        return;
    }
    redirect(r, "/instances");
}

static void
static_asset(wf_http_resp *r, const unsigned char *data, size_t len, const char *type)
{
    r->body = malloc(len ? len : 1);
    if (r->body == NULL) {
        text(r, 500, "out of memory\n");
        return;
    }
    memcpy(r->body, data, len);
    r->len = len;
    r->content_type = type;
}

/* ---- live events (Server-Sent Events) ------------------------------------------- */

typedef struct sse {
    wf_console *c;
    char tenant[65];
    char instance[129];
    int64_t after;
    int64_t until_ms;
    char *pending; /* formatted, not yet sent */
    size_t plen, poff;
} sse;

typedef struct sse_batch {
    FILE *out;
    int64_t last;
} sse_batch;

static void
sse_event(void *arg, const Workflow__V1__Event *ev)
{
    sse_batch *b = arg;
    fprintf(b->out,
            "id: %lld\nevent: wf\ndata: {\"sequence\":%lld,\"type\":", (long long)ev->sequence,
            (long long)ev->sequence);
    char *tn = NULL;
    size_t tl = 0;
    FILE *t = open_memstream(&tn, &tl);
    if (t != NULL) {
        wf_console__enum(t, &workflow__v1__event_type__descriptor, (int)ev->type);
        fclose(t);
    }
    wf_console__json_str(b->out, tn ? tn : "");
    free(tn);
    fputs(",\"time\":\"", b->out);
    wf_console__time(b->out, ev->time);
    fputs("\"", b->out);
    fputs(",\"instanceId\":", b->out);
    wf_console__json_str(b->out, ev->instance_id);
    fputs(",\"actor\":", b->out);
    wf_console__json_str(b->out, ev->actor);
    fputs(",\"data\":", b->out);
    wf_console__json_str(b->out, ev->data_json);
    fputs("}\n\n", b->out);
    b->last = ev->sequence;
}

static ssize_t
sse_read(void *arg, char *buf, size_t max)
{
    sse *s = arg;
    while (s->poff >= s->plen) {
        free(s->pending);
        s->pending = NULL;
        s->plen = s->poff = 0;
        if (atomic_load(&s->c->stopping) || wf_mono_ms() > s->until_ms)
            return -1;
        sse_batch b = {NULL, s->after};
        char *out = NULL;
        size_t len = 0;
        b.out = open_memstream(&out, &len);
        if (b.out == NULL)
            return -1;
        wf_error err = {0};
        wf_code rc = wf_console__read_events(s->c->app, s->tenant, s->instance, s->after, 50,
                                             sse_event, &b, &err);
        if (rc != WF_OK)
            fputs(": the event read failed; retrying\n\n", b.out);
        fclose(b.out);
        s->after = b.last;
        if (len > 0) {
            s->pending = out;
            s->plen = len;
            break;
        }
        free(out);
        /* Nothing new: a comment keeps the connection (and shows a dead
         * client) every poll; the wait is short so that a stop is quick. */
        struct timespec ts = {0, SSE_POLL_MS * 1000000L};
        nanosleep(&ts, NULL);
        static const char ping[] = ": ping\n\n";
        s->pending = strdup(ping);
        s->plen = s->pending ? sizeof ping - 1 : 0;
    }
    size_t n = s->plen - s->poff < max ? s->plen - s->poff : max;
    memcpy(buf, s->pending + s->poff, n);
    s->poff += n;
    return (ssize_t)n;
}

static void
sse_free(void *arg)
{
    sse *s = arg;
    atomic_fetch_sub(&s->c->nsse, 1);
    free(s->pending);
    free(s);
}

static void
events_stream(wf_console *c, const wf_http_req *req, wf_http_resp *r, const session *sess)
{
    const char *inst = wf_http_req_query(req, "instance");
    const char *last = wf_http_req_header(req, "Last-Event-ID");
    const char *after = last != NULL ? last : wf_http_req_query(req, "after");
    if (inst != NULL && strlen(inst) > 128) {
        text(r, 400, "instance id too long\n");
        return;
    }
    if (atomic_fetch_add(&c->nsse, 1) >= MAX_SSE) {
        atomic_fetch_sub(&c->nsse, 1);
        text(r, 503, "too many live event streams; retry later\n");
        wf_http_resp_header(r, "Retry-After", "10");
        return;
    }
    sse *s = calloc(1, sizeof *s);
    if (s == NULL) {
        atomic_fetch_sub(&c->nsse, 1);
        text(r, 500, "out of memory\n");
        return;
    }
    s->c = c;
    snprintf(s->tenant, sizeof s->tenant, "%s", sess->s.tenant);
    snprintf(s->instance, sizeof s->instance, "%s", inst ? inst : "");
    s->after = after != NULL ? strtoll(after, NULL, 10) : 0;
    if (s->after < 0)
        s->after = 0;
    s->until_ms = wf_mono_ms() + SSE_LIFETIME_MS;
    static const char hello[] = "retry: 2000\n\n";
    s->pending = strdup(hello);
    s->plen = s->pending ? sizeof hello - 1 : 0;
    r->content_type = "text/event-stream";
    r->stream = sse_read;
    r->stream_free = sse_free;
    r->stream_arg = s;
}

/* ---- routing ------------------------------------------------------------------ */

typedef void (*page_fn)(wf_console__ctx *x);

static const struct {
    const char *path;
    page_fn fn;
} pages[] = {
    {"/definitions", wf_console__definitions},
    {"/definition", wf_console__definition},
    {"/instances", wf_console__instances},
    {"/instance", wf_console__instance},
    {"/incidents", wf_console__incidents},
    {"/inbox", wf_console__inbox},
    {"/batches", wf_console__batches},
    {"/batch", wf_console__batch},
    {"/diagram.svg", wf_console__diagram},
    {"/fleet", wf_console__fleet},
    {"/fleet/instances", wf_console__fleet_instances},
};

static void
render(wf_console *c, const wf_http_req *req, wf_http_resp *r, const session *sess, page_fn fn,
       const char *action)
{
    char *buf = NULL;
    size_t len = 0;
    wf_arena *arena = wf_arena_new();
    FILE *o = arena != NULL ? open_memstream(&buf, &len) : NULL;
    if (o == NULL) {
        wf_arena_free(arena);
        text(r, 500, "out of memory\n");
        return;
    }
    wf_console__ctx x = {
        .app = c->app,
        .req = req,
        .arena = arena,
        .tenant = sess->s.tenant,
        .actor = sess->s.actor[0] ? sess->s.actor : NULL,
        .csrf = sess->csrf[0] ? sess->csrf : NULL,
        .role = sess->s.role,
        .out = o,
        .status = 200,
    };
    if (fn != NULL)
        fn(&x);
    else
        wf_console__act(&x, action);
    fclose(o);
    if (x.location != NULL) {
        free(buf);
        redirect(r, x.location);
    } else {
        r->status = x.status;
        r->content_type =
            x.content_type != NULL && x.status == 200 ? x.content_type : "text/html; charset=utf-8";
        r->body = buf;
        r->len = len;
    }
    wf_arena_free(arena);
}

/* A small page of its own (a refusal before any page is rendered). */
static void
notice_page(wf_http_resp *r, unsigned status, const char *title, const char *msg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&buf, &len);
    if (o == NULL) {
        text(r, 500, "out of memory\n");
        return;
    }
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<link rel=\"stylesheet\" href=\"/static/console.css\"><title>",
          o);
    wf_console__esc(o, title);
    fputs(" · workflow console</title></head><body><main><h1>", o);
    wf_console__esc(o, title);
    fputs("</h1><p class=\"error\" id=\"refusal\">", o);
    wf_console__esc(o, msg);
    fputs("</p><p><a href=\"/instances\">Back to the console</a></p></main></body></html>\n", o);
    fclose(o);
    r->status = status;
    r->content_type = "text/html; charset=utf-8";
    r->body = buf;
    r->len = len;
}

/* The person a request names in the proxy's identity headers: the email
 * when there is one, else the user name; NULL when neither is sent. */
static const char *
proxy_person(const wf_console__sso *o, const wf_http_req *req)
{
    const char *email = wf_http_req_header(req, o->email_header);
    const char *user = wf_http_req_header(req, o->user_header);
    if (email != NULL && email[0] != '\0')
        return email;
    return user != NULL && user[0] != '\0' ? user : NULL;
}

/* A request of the trusted proxy that names a person: the session is that
 * person's, with the role and tenant of their groups now (a new cookie
 * when the one sent is not theirs, or their role or tenant changed). From
 * anywhere else the identity headers are ignored, and so is a session the
 * proxy made. False when the answer is written already. */
static bool
proxy_session(wf_console *c, const wf_http_req *req, wf_http_resp *r, session *sess, bool *have)
{
    const wf_console__sso *o = &c->sso;
    const char *person = wf_console__sso_on(o) ? proxy_person(o, req) : NULL;
    char peer[48];
    wf_http_req_peer(req, peer, sizeof peer);
    bool trusted = person != NULL &&
                   wf_console__proxy_trusted(o, peer, wf_http_req_header(req, o->secret_header));
    if (!trusted) {
        if (person != NULL)
            WF_LOG(WF_LOG_WARN, "console",
                   "identity headers ignored: the request (from %s) is not the trusted proxy's",
                   peer);
        if (*have && sess->s.source == WF_CONSOLE_SOURCE_PROXY)
            *have = false;
        return true;
    }
    if (!printable(person, 128)) {
        notice_page(r, 400, "Refused",
                    "The proxy's user name or email must be 1 to 128 "
                    "printable ASCII characters.");
        return false;
    }
    const char *tenant;
    wf_console__role role =
        wf_console__role_of_groups(o, wf_http_req_header(req, o->groups_header), &tenant);
    if (role == WF_CONSOLE_ROLE_NONE) {
        WF_LOG(WF_LOG_WARN, "console", "%s signed in with no group of WF_CONSOLE_ROLE_MAP", person);
        notice_page(r, 403, "No access",
                    "You are signed in, but none of your groups has a role in this console.");
        return false;
    }
    if (*have && sess->s.source == WF_CONSOLE_SOURCE_PROXY && sess->s.role == role &&
        strcmp(sess->s.actor, person) == 0 && strcmp(sess->s.tenant, tenant) == 0)
        return true;
    wf_console__session s = {.source = WF_CONSOLE_SOURCE_PROXY, .role = role};
    snprintf(s.tenant, sizeof s.tenant, "%s", tenant);
    snprintf(s.actor, sizeof s.actor, "%s", person);
    if (!session_issue(c, req, r, &s, sess)) {
        text(r, 500, "could not create a session\n");
        return false;
    }
    *have = true;
    return true;
}

/* Every POST but the login: the CSRF token of the session, then the role
 * the action needs (wf_console__action_role, the one table of them), then
 * the action. */
static void
act(wf_console *c, const wf_http_req *req, wf_http_resp *r, const session *sess, const char *path)
{
    const char *tok = wf_http_req_form(req, "csrf");
    if (tok == NULL || sess->csrf[0] == '\0' || !wf_secret_equal(tok, strlen(tok), sess->csrf)) {
        text(r, 403, "refused: the form's CSRF token is missing or wrong\n");
        return;
    }
    wf_console__role need = wf_console__action_role(path);
    if (sess->s.role < need) {
        WF_LOG(WF_LOG_WARN, "console", "%s (%s) refused %s: it needs %s", sess->s.actor,
               wf_console__role_name(sess->s.role), path, wf_console__role_name(need));
        char msg[256];
        snprintf(msg, sizeof msg, "Your role (%s) may not do this: it needs the role %s.",
                 wf_console__role_name(sess->s.role), wf_console__role_name(need));
        notice_page(r, 403, "Not allowed", msg);
        return;
    }
    if (strcmp(path, "/logout") == 0) {
        set_cookie(req, r, "", true);
        redirect(r, "/login");
        return;
    }
    render(c, req, r, sess, NULL, path);
}

static void
serve(void *arg, const wf_http_req *req, wf_http_resp *r)
{
    wf_console *c = arg;
    const char *method = wf_http_req_method(req);
    const char *path = wf_http_req_path(req);
    bool post = strcmp(method, "POST") == 0;
    security_headers(r);
    if (!post && strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        text(r, 405, "method not allowed\n");
        wf_http_resp_header(r, "Allow", "GET, POST");
        return;
    }
    if (!post && strcmp(path, "/static/console.css") == 0) {
        static_asset(r, wf_console_css, wf_console_css_len, "text/css; charset=utf-8");
        return;
    }
    if (!post && strcmp(path, "/static/console.js") == 0) {
        static_asset(r, wf_console_js, wf_console_js_len, "text/javascript; charset=utf-8");
        return;
    }
    /* Every POST, the login included, must come from our own pages. */
    if (post && !same_origin(req)) {
        text(r, 403, "refused: the request does not come from this console (Origin)\n");
        return;
    }
    if (strcmp(path, "/login") == 0) {
        if (post)
            do_login(c, req, r);
        else
            login_page(c, req, r, NULL);
        return;
    }
    session sess = {0};
    bool have = session_find(c, wf_http_req_cookie(req, COOKIE), &sess);
    if (!proxy_session(c, req, r, &sess, &have))
        return;
    if (have && sess.s.source == WF_CONSOLE_SOURCE_KEY && !key_still_valid(c, &sess.s)) {
        /* Its key was removed (WF_API_KEYS_FILE changed): the session ends. */
        set_cookie(req, r, "", true);
        redirect(r, "/login");
        return;
    }
    if (!have) {
        if (!wf_config_open_access(c->app->cfg) || post) {
            redirect(r, "/login");
            return;
        }
        /* Development without keys: pages need no login (tenant default);
         * acting needs an actor, named at /login. */
        snprintf(sess.s.tenant, sizeof sess.s.tenant, "default");
        sess.s.role = WF_CONSOLE_ROLE_VIEWER;
    }
    if (post) {
        act(c, req, r, &sess, path);
        return;
    }
    if (strcmp(path, "/") == 0) {
        redirect(r, "/instances");
        return;
    }
    if (strcmp(path, "/events") == 0) {
        events_stream(c, req, r, &sess);
        return;
    }
    for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++)
        if (strcmp(path, pages[i].path) == 0) {
            render(c, req, r, &sess, pages[i].fn, NULL);
            return;
        }
    text(r, 404, "not found\n");
}

wf_console *
wf_console_start(wf_app *app, const char *addr, wf_error *err)
{
    wf_console *c = calloc(1, sizeof *c);
    if (c == NULL) {
        wf_error_nomem(err);
        return NULL;
    }
    c->app = app;
    c->throttle = wf_console__throttle_new();
    if (c->throttle == NULL) {
        free(c);
        wf_error_nomem(err);
        return NULL;
    }
    if (!wf_console__sso_load(environ, &c->sso, err)) {
        wf_console__throttle_free(c->throttle);
        free(c);
        return NULL;
    }
    if (!c->sso.session_key_shared && !app->cfg->development)
        WF_LOG(WF_LOG_WARN, "console",
               "WF_CONSOLE_SESSION_KEY is not set: console sessions hold on this replica only "
               "and end with a restart");
    if (wf_console__sso_on(&c->sso))
        WF_LOG(WF_LOG_INFO, "console",
               "sign-in through a trusted proxy (%s%s%s): %zu groups with a role",
               c->sso.proxy_secret != NULL ? "secret" : "",
               c->sso.proxy_secret != NULL && c->sso.nnets > 0 ? " and " : "",
               c->sso.nnets > 0 ? "addresses" : "", c->sso.nrules);
    /* Small and bounded: a live stream holds a thread while it polls, so
     * the pool has room for MAX_SSE of them and still answers pages. */
    wf_http_app_options opt = {
        .threads = MAX_SSE + 2,
        .max_connections = 64,
        .per_ip = 32,
        .timeout_s = 30,
        .max_body = 64 * 1024,
        .what = "WF_CONSOLE_ADDR",
    };
    c->http = wf_http_start_app(addr, &opt, serve, c, err);
    if (c->http == NULL) {
        wf_console__sso_free(&c->sso);
        wf_console__throttle_free(c->throttle);
        free(c);
        return NULL;
    }
    return c;
}

void
wf_console_stop(wf_console *c)
{
    if (c == NULL)
        return;
    atomic_store(&c->stopping, true);
    wf_http_stop(c->http);
    wf_console__sso_free(&c->sso);
    wf_console__throttle_free(c->throttle);
    free(c);
}
